//! Scripts run through the engine, answering as Redis 7.0 answers (the
//! expected texts were taken from redis-server 7.0.15).

use alloc::vec::Vec;

use crate::commands::{ClientCtx, Engine, Outcome};
use crate::config::Config;
use crate::resp::Reply;

fn engine() -> (Engine, ClientCtx) {
    (Engine::new(Config::default(), 0), ClientCtx::new(1))
}

fn exec(e: &mut Engine, c: &mut ClientCtx, args: &[&[u8]]) -> Outcome {
    let args: Vec<Vec<u8>> = args.iter().map(|a| a.to_vec()).collect();
    e.execute(&args, c, 1_000)
}

fn eval(e: &mut Engine, c: &mut ClientCtx, script: &str, keys: &[&str], argv: &[&str]) -> Reply {
    let numkeys = alloc::format!("{}", keys.len());
    let mut args: Vec<&[u8]> = vec![b"EVAL", script.as_bytes(), numkeys.as_bytes()];
    args.extend(keys.iter().chain(argv).map(|a| a.as_bytes()));
    exec(e, c, &args).reply
}

fn bulk(s: &str) -> Reply {
    Reply::bulk(s.as_bytes())
}

fn error_of(reply: Reply) -> alloc::string::String {
    match reply {
        Reply::Error(text) => text,
        other => panic!("not an error: {other:?}"),
    }
}

#[test]
fn lua_values_become_replies() {
    let (mut e, mut c) = engine();
    let reply = eval(
        &mut e,
        &mut c,
        "return {1,2,3,'ciao',{1,2},3.99,-3.7,true,false}",
        &[],
        &[],
    );
    let expected = Reply::array(vec![
        Reply::Integer(1),
        Reply::Integer(2),
        Reply::Integer(3),
        bulk("ciao"),
        Reply::array(vec![Reply::Integer(1), Reply::Integer(2)]),
        Reply::Integer(3),
        Reply::Integer(-3),
        Reply::Integer(1),
        Reply::nil(),
    ]);
    assert_eq!(reply, expected);
    assert_eq!(
        eval(&mut e, &mut c, "return {1,nil,3}", &[], &[]),
        Reply::array(vec![Reply::Integer(1)])
    );
    assert_eq!(
        eval(&mut e, &mut c, "return {ok='FINE'}", &[], &[]),
        Reply::Simple("FINE".into())
    );
    assert_eq!(
        eval(
            &mut e,
            &mut c,
            "return redis.error_reply('My Error')",
            &[],
            &[]
        ),
        Reply::error("My Error")
    );
    assert_eq!(
        eval(&mut e, &mut c, "return redis.status_reply('X')", &[], &[]),
        Reply::Simple("X".into())
    );
    assert_eq!(eval(&mut e, &mut c, "return nil", &[], &[]), Reply::nil());
    let cycle = eval(&mut e, &mut c, "local t = {} t[1] = t return t", &[], &[]);
    assert_eq!(cycle, Reply::error("ERR reached lua stack limit"));
}

#[test]
fn numbers_past_64_bits_answer_as_redis_on_x86() {
    let (mut e, mut c) = engine();
    let big = eval(
        &mut e,
        &mut c,
        "return {tonumber(ARGV[1]), -2^63, 0/0, 2.9, -2.9}",
        &[],
        &["9223372036854775806"],
    );
    let expected = [i64::MIN, i64::MIN, i64::MIN, 2, -2];
    assert_eq!(
        big,
        Reply::array(expected.iter().map(|&n| Reply::Integer(n)).collect())
    );
}

#[test]
fn replies_become_lua_values() {
    let (mut e, mut c) = engine();
    exec(&mut e, &mut c, &[b"RPUSH", b"l", b"a", b"b"]);
    let script = "local r = redis.call('LRANGE', KEYS[1], 0, -1) return {#r, r[2], type(redis.call('GET', 'none')), redis.call('PING')['ok'], redis.call('LLEN', KEYS[1])}";
    let expected = Reply::array(vec![
        Reply::Integer(2),
        bulk("b"),
        bulk("boolean"),
        bulk("PONG"),
        Reply::Integer(2),
    ]);
    assert_eq!(eval(&mut e, &mut c, script, &["l"], &[]), expected);
    let pcall = "local r = redis.pcall('INCR', KEYS[1]) return r['err']";
    assert_eq!(
        eval(&mut e, &mut c, pcall, &["l"], &[]),
        bulk("WRONGTYPE Operation against a key holding the wrong kind of value")
    );
}

#[test]
fn keys_argv_and_numbers_as_arguments() {
    let (mut e, mut c) = engine();
    let reply = eval(&mut e, &mut c, "redis.call('SET', KEYS[1], ARGV[1] .. #ARGV) return redis.call('INCRBY', KEYS[1], 0.5 * 4)", &["k"], &["4", "x"]);
    assert_eq!(reply, Reply::Integer(44));
    assert_eq!(exec(&mut e, &mut c, &[b"GET", b"k"]).reply, bulk("44"));
}

#[test]
fn errors_read_as_redis_writes_them() {
    let (mut e, mut c) = engine();
    let sha = "c843e952e50a3cb0d663a5593c03b89bbafb6aeb";
    assert_eq!(
        error_of(eval(&mut e, &mut c, "return nosuch()", &[], &[])),
        alloc::format!("ERR user_script:1: Script attempted to access nonexistent global variable 'nosuch' script: {sha}, on @user_script:1.")
    );
    let reply = eval(&mut e, &mut c, "return redis.call('nosuch')", &[], &[]);
    assert_eq!(
        error_of(reply),
        "ERR Unknown Redis command called from script script: 206396248e12c6e742fd7296250433c8d7343b74, on @user_script:1."
    );
    assert_eq!(
        error_of(eval(&mut e, &mut c, "error('boom')", &[], &[])),
        "ERR user_script:1: boom script: 82903a0434f1503e152f89c03c9acd881a0e8150, on @user_script:1."
    );
    assert_eq!(
        error_of(eval(&mut e, &mut c, "error({err='MY boom'})", &[], &[])),
        "MY boom script: 4c2ee35ef37c857625d6ec6d812eab72377cfa97, on @user_script:1."
    );
    assert_eq!(
        error_of(eval(&mut e, &mut c, "return 'a'..", &[], &[])),
        "ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'"
    );
    assert_eq!(
        error_of(eval(&mut e, &mut c, "return redis.pcall()", &[], &[])),
        "ERR Please specify at least one argument for this redis lib call"
    );
    assert_eq!(
        error_of(eval(&mut e, &mut c, "return redis.call('set', {})", &[], &[])),
        "ERR Lua redis lib command arguments must be strings or integers script: 3f0c48a287b0f27352f41e2d8f1934c462d3bc65, on @user_script:1."
    );
    assert_eq!(
        error_of(eval(&mut e, &mut c, "return redis.pcall('get')", &[], &[])),
        "ERR Wrong number of args calling Redis command from script"
    );
}

#[test]
fn the_sandbox_keeps_redis_globals_only() {
    let (mut e, mut c) = engine();
    for name in [
        "print", "loadfile", "dofile", "os", "io", "debug", "require", "newproxy", "setfenv",
    ] {
        let text = error_of(eval(
            &mut e,
            &mut c,
            &alloc::format!("return type({name})"),
            &[],
            &[],
        ));
        assert!(
            text.contains(&alloc::format!("nonexistent global variable '{name}'")),
            "{name}: {text}"
        );
    }
    for name in [
        "pcall",
        "loadstring",
        "unpack",
        "string",
        "table",
        "math",
        "redis",
    ] {
        let reply = eval(
            &mut e,
            &mut c,
            &alloc::format!("return type({name})"),
            &[],
            &[],
        );
        assert!(!reply.is_error(), "{name}");
    }
    let text = error_of(eval(&mut e, &mut c, "x = 1", &[], &[]));
    assert!(
        text.starts_with("ERR user_script:1: Attempt to modify a readonly table script: "),
        "{text}"
    );
    assert!(eval(&mut e, &mut c, "return setmetatable(_G, nil)", &[], &[]).is_error());
    assert_eq!(
        eval(&mut e, &mut c, "return redis.sha1hex('')", &[], &[]),
        bulk("da39a3ee5e6b4b0d3255bfef95601890afd80709")
    );
}

#[test]
fn scripts_may_not_run_some_commands() {
    let (mut e, mut c) = engine();
    for cmd in [
        "'multi'",
        "'eval','return 1','0'",
        "'blpop','x','0'",
        "'subscribe','x'",
        "'client','id'",
        "'script','flush'",
    ] {
        let reply = eval(
            &mut e,
            &mut c,
            &alloc::format!("return redis.pcall({cmd})"),
            &[],
            &[],
        );
        assert_eq!(
            error_of(reply),
            "ERR This Redis command is not allowed from script",
            "{cmd}"
        );
    }
    let args: [&[u8]; 5] = [
        b"EVAL_RO",
        b"return redis.call('set','a','b')",
        b"1",
        b"a",
        b"x",
    ];
    let text = error_of(exec(&mut e, &mut c, &args).reply);
    assert!(
        text.starts_with("ERR Write commands are not allowed from read-only scripts. script: "),
        "{text}"
    );
    let args: [&[u8]; 4] = [b"EVAL_RO", b"return redis.call('get',KEYS[1])", b"1", b"a"];
    assert_eq!(exec(&mut e, &mut c, &args).reply, Reply::nil());
}

#[test]
fn numkeys_is_checked() {
    let (mut e, mut c) = engine();
    let mut run = |n: &[u8]| error_of(exec(&mut e, &mut c, &[b"EVAL", b"return 1", n]).reply);
    assert_eq!(
        run(b"1"),
        "ERR Number of keys can't be greater than number of args"
    );
    assert_eq!(run(b"-1"), "ERR Number of keys can't be negative");
    assert_eq!(run(b"x"), "ERR value is not an integer or out of range");
}

#[test]
fn script_load_exists_flush_and_evalsha() {
    let (mut e, mut c) = engine();
    let sha = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db";
    assert_eq!(
        exec(&mut e, &mut c, &[b"SCRIPT", b"LOAD", b"return 1"]).reply,
        bulk(sha)
    );
    let exists = exec(
        &mut e,
        &mut c,
        &[b"SCRIPT", b"EXISTS", sha.as_bytes(), b"ffff"],
    )
    .reply;
    assert_eq!(
        exists,
        Reply::array(vec![Reply::Integer(1), Reply::Integer(0)])
    );
    assert_eq!(
        exec(
            &mut e,
            &mut c,
            &[b"EVALSHA", sha.to_uppercase().as_bytes(), b"0"]
        )
        .reply,
        Reply::Integer(1)
    );
    assert_eq!(
        error_of(exec(&mut e, &mut c, &[b"SCRIPT", b"FLUSH", b"x"]).reply),
        "ERR SCRIPT FLUSH only support SYNC|ASYNC option"
    );
    assert_eq!(
        exec(&mut e, &mut c, &[b"SCRIPT", b"FLUSH", b"ASYNC"]).reply,
        Reply::ok()
    );
    assert_eq!(
        error_of(exec(&mut e, &mut c, &[b"EVALSHA", sha.as_bytes(), b"0"]).reply),
        "NOSCRIPT No matching script. Please use EVAL."
    );
    // EVAL caches what it runs.
    assert_eq!(
        eval(&mut e, &mut c, "return 1", &[], &[]),
        Reply::Integer(1)
    );
    assert_eq!(
        exec(&mut e, &mut c, &[b"EVALSHA", sha.as_bytes(), b"0"]).reply,
        Reply::Integer(1)
    );
    assert_eq!(
        error_of(exec(&mut e, &mut c, &[b"SCRIPT", b"LOAD", b"return 1 +"]).reply),
        "ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'"
    );
    assert_eq!(
        error_of(exec(&mut e, &mut c, &[b"SCRIPT", b"KILL"]).reply),
        "NOTBUSY No scripts in execution right now."
    );
}

#[test]
fn effects_are_logged_and_replay_without_the_script() {
    let (mut e, mut c) = engine();
    let script = "redis.call('SET', KEYS[1], ARGV[1]) redis.call('SELECT', 2) redis.call('INCR', 'n') return redis.call('GET', 'n')";
    let args: [&[u8]; 5] = [b"EVAL", script.as_bytes(), b"1", b"k", b"v"];
    let outcome = exec(&mut e, &mut c, &args);
    assert_eq!(outcome.reply, bulk("1"));
    let logged = outcome.effects.commands();
    assert!(
        logged
            .iter()
            .all(|cmd| !cmd[0].eq_ignore_ascii_case(b"EVAL")),
        "{logged:?}"
    );
    // The caller's database is the script's first, and stays its own.
    assert_eq!(exec(&mut e, &mut c, &[b"GET", b"k"]).reply, bulk("v"));
    let (mut replayed, mut c2) = engine();
    for cmd in logged {
        replayed.load(cmd, 1_000).unwrap();
    }
    assert_eq!(
        exec(&mut replayed, &mut c2, &[b"GET", b"k"]).reply,
        bulk("v")
    );
    exec(&mut replayed, &mut c2, &[b"SELECT", b"2"]);
    assert_eq!(
        exec(&mut replayed, &mut c2, &[b"GET", b"n"]).reply,
        bulk("1")
    );
    // A read-only script logs nothing.
    assert!(exec(
        &mut e,
        &mut c,
        &[b"EVAL", b"return redis.call('GET', 'k')", b"0"]
    )
    .effects
    .is_empty());
}

#[test]
fn a_script_that_allocates_without_bound_fails_and_the_server_goes_on() {
    let (mut e, mut c) = engine();
    // Lua gets what maxmemory leaves, at least 1 MiB.
    exec(
        &mut e,
        &mut c,
        &[b"CONFIG", b"SET", b"maxmemory", b"1000000"],
    );
    let script = "local t = {} for i = 1, 1e9 do t[i] = string.rep('x', 1000) .. i end return #t";
    let text = error_of(eval(&mut e, &mut c, script, &[], &[]));
    assert!(text.contains("not enough memory"), "{text}");
    assert!(e.used_memory() > 0);
    let again = "local t = {} for i = 1, 100 do t[i] = string.rep('y', 1000) .. i end return #t";
    assert_eq!(eval(&mut e, &mut c, again, &[], &[]), Reply::Integer(100));
}

#[test]
fn eval_inside_multi_runs_at_exec() {
    let (mut e, mut c) = engine();
    exec(&mut e, &mut c, &[b"MULTI"]);
    let queued = exec(
        &mut e,
        &mut c,
        &[b"EVAL", b"return redis.call('INCR', KEYS[1])", b"1", b"n"],
    )
    .reply;
    assert_eq!(queued, Reply::Simple("QUEUED".into()));
    let outcome = exec(&mut e, &mut c, &[b"EXEC"]);
    assert_eq!(outcome.reply, Reply::array(vec![Reply::Integer(1)]));
    assert_eq!(outcome.effects.len(), 1);
}

#[test]
fn the_bit_library_answers_as_redis_does() {
    let (mut e, mut c) = engine();
    let script = "return {bit.tobit(2^32+5), bit.tobit(-1), bit.tobit(1.5), bit.tobit(2.5), bit.tobit('7'), \
        bit.bnot(0), bit.band(0xff, 0x0f, 0x3), bit.bor(1,2,4), bit.bxor(5,3), bit.lshift(1, 31), \
        bit.lshift(1,33), bit.rshift(-1, 28), bit.arshift(-256, 4), bit.rol(0x12345678, 8), \
        bit.ror(0x12345678, 8), bit.bswap(0x12345678), bit.tobit(2^53+3), bit.tobit(-2^40-1.5)}";
    // What redis-server 7.0.15 answers.
    let expected = [
        5,
        -1,
        2,
        2,
        7,
        -1,
        3,
        7,
        6,
        -2147483648,
        2,
        15,
        -16,
        878082066,
        2014458966,
        2018915346,
        2,
        -2,
    ];
    let reply = eval(&mut e, &mut c, script, &[], &[]);
    assert_eq!(
        reply,
        Reply::array(expected.iter().map(|&n| Reply::Integer(n)).collect())
    );
    let hex = "return {bit.tohex(255), bit.tohex(-1, -4), bit.tohex(0x12345678, 3), bit.tohex(1, 0), bit.tohex(1, 9), bit.tohex(1, -9)}";
    let expected = ["000000ff", "FFFF", "678", "", "00000001", "00000001"];
    assert_eq!(
        eval(&mut e, &mut c, hex, &[], &[]),
        Reply::array(expected.iter().map(|h| bulk(h)).collect())
    );
    assert_eq!(
        error_of(eval(&mut e, &mut c, "return bit.band('x')", &[], &[])),
        "ERR user_script:1: bad argument #1 to 'band' (number expected, got string) script: d35c9a1d4f4825ae2c0656c3cb8c9f397ca6d9b1, on @user_script:1."
    );
    assert_eq!(
        eval(
            &mut e,
            &mut c,
            "local n = 0 for k in pairs(bit) do n = n + 1 end return n",
            &[],
            &[]
        ),
        Reply::Integer(12)
    );
}

#[test]
fn set_repl_checks_its_flags_and_every_change_is_logged() {
    let (mut e, mut c) = engine();
    let script = "redis.call('SET', 'a', '1') redis.set_repl(redis.REPL_NONE) redis.call('SET', 'b', '2') \
        redis.set_repl(redis.REPL_ALL) redis.call('SET', 'c', '3') return redis.replicate_commands()";
    let outcome = exec(&mut e, &mut c, &[b"EVAL", script.as_bytes(), b"0"]);
    assert_eq!(outcome.reply, Reply::Integer(1));
    let keys: Vec<Vec<u8>> = outcome
        .effects
        .commands()
        .into_iter()
        .map(|cmd| cmd[1].clone())
        .collect();
    assert_eq!(keys, [b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
    assert_eq!(exec(&mut e, &mut c, &[b"GET", b"b"]).reply, bulk("2"));
    assert_eq!(
        error_of(eval(&mut e, &mut c, "return redis.set_repl(7)", &[], &[])),
        "ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE. script: cedb2b57227b6373471ce552cec25d44bc1ff54b, on @user_script:1."
    );
    assert_eq!(
        error_of(eval(&mut e, &mut c, "return redis.set_repl()", &[], &[])),
        "ERR redis.set_repl() requires two arguments. script: 9504533b41060c143a92eb2f8878e77d33b6dc33, on @user_script:1."
    );
}

#[test]
fn info_reports_lua_memory_and_cached_scripts() {
    let (mut e, mut c) = engine();
    let info = |e: &mut Engine, c: &mut ClientCtx| match exec(e, c, &[b"INFO", b"memory"]).reply {
        Reply::Bulk(Some(text)) | Reply::Verbatim(text) => {
            alloc::string::String::from_utf8(text).unwrap()
        }
        other => panic!("{other:?}"),
    };
    assert!(info(&mut e, &mut c).contains("number_of_cached_scripts:0\r\n"));
    eval(&mut e, &mut c, "return 1", &[], &[]);
    exec(&mut e, &mut c, &[b"SCRIPT", b"LOAD", b"return 2"]);
    let text = info(&mut e, &mut c);
    assert!(text.contains("number_of_cached_scripts:2\r\n"), "{text}");
    let lua: u64 = text
        .split("used_memory_lua:")
        .nth(1)
        .unwrap()
        .split('\r')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(lua > 10_000, "{text}");
}

#[test]
fn setresp_3_brings_replies_in_resp3_types() {
    let (mut e, mut c) = engine();
    exec(&mut e, &mut c, &[b"HSET", b"h", b"a", b"1", b"b", b"2"]);
    exec(&mut e, &mut c, &[b"SADD", b"s", b"x"]);
    exec(&mut e, &mut c, &[b"ZADD", b"z", b"1.5", b"m"]);
    let bulks = |items: &[&str]| Reply::array(items.iter().map(|i| bulk(i)).collect());
    // What redis-server 7.0.15 answers.
    let cases: [(&str, &[&str]); 5] = [
        ("local r = redis.call('HGETALL', 'h') return {type(r), type(r.map), r.map.a, r.map.b}", &["table", "table", "1", "2"]),
        ("local r = redis.call('SMEMBERS', 's') return {type(r.set), tostring(r.set.x)}", &["table", "true"]),
        ("local r = redis.call('ZSCORE', 'z', 'm') return {type(r), tostring(r.double)}", &["table", "1.5"]),
        ("return {type(redis.call('GET', 'nokey')), type(redis.call('EXISTS', 'h'))}", &["nil", "number"]),
        ("redis.setresp(2) return {type(redis.call('GET', 'nokey')), type(redis.call('HGETALL', 'h').map)}", &["boolean", "nil"]),
    ];
    for (script, expected) in cases {
        let script = alloc::format!("redis.setresp(3) {script}");
        assert_eq!(
            eval(&mut e, &mut c, &script, &[], &[]),
            bulks(expected),
            "{script}"
        );
    }
    assert_eq!(
        error_of(eval(&mut e, &mut c, "return redis.setresp(4)", &[], &[])),
        "ERR RESP version must be 2 or 3. script: 921c0a48021d97dfd5884aeea41875972c7804d9, on @user_script:1."
    );
    assert_eq!(
        error_of(eval(&mut e, &mut c, "return redis.setresp()", &[], &[])),
        "ERR redis.setresp() requires one argument. script: 76da64e28014e7c9ad76db33c3918c53d81a3d7e, on @user_script:1."
    );
}

#[test]
fn scripts_return_resp3_shapes() {
    use crate::resp::Protocol;
    let (mut e, mut c) = engine();
    let mut as_resp = |script: &str, protocol: Protocol| {
        eval(&mut e, &mut c, script, &[], &[]).to_bytes_as(protocol)
    };
    // What redis-server 7.0.15 sends.
    assert_eq!(
        as_resp("return {double=3.14}", Protocol::Resp2),
        b"$18\r\n3.1400000000000001\r\n"
    );
    assert_eq!(
        as_resp("return {double=3.14}", Protocol::Resp3),
        b",3.1400000000000001\r\n"
    );
    assert_eq!(as_resp("return {double=1/0}", Protocol::Resp3), b",inf\r\n");
    assert_eq!(
        as_resp("return {map={a=1}}", Protocol::Resp2),
        b"*2\r\n$1\r\na\r\n:1\r\n"
    );
    assert_eq!(
        as_resp("return {map={a=1}}", Protocol::Resp3),
        b"%1\r\n$1\r\na\r\n:1\r\n"
    );
    assert_eq!(
        as_resp("return {set={a=false}}", Protocol::Resp3),
        b"~1\r\n$1\r\na\r\n"
    );
    assert_eq!(
        as_resp("return {big_number='123'}", Protocol::Resp3),
        b"(123\r\n"
    );
    assert_eq!(
        as_resp(
            "return {verbatim_string={format='txt', string='hi'}}",
            Protocol::Resp3
        ),
        b"=6\r\ntxt:hi\r\n"
    );
    assert_eq!(as_resp("return true", Protocol::Resp3), b":1\r\n");
    assert_eq!(
        as_resp("redis.setresp(3) return true", Protocol::Resp3),
        b"#t\r\n"
    );
    assert_eq!(
        as_resp("redis.setresp(3) return false", Protocol::Resp3),
        b"#f\r\n"
    );
    assert_eq!(
        as_resp("redis.setresp(3) return false", Protocol::Resp2),
        b":0\r\n"
    );
    assert_eq!(as_resp("return false", Protocol::Resp3), b"_\r\n");
    // A map holding itself is as deep as any.
    let cycle = as_resp("local t = {} t.map = {x = t} return t", Protocol::Resp2);
    assert_eq!(cycle, b"-ERR reached lua stack limit\r\n");
}

#[test]
fn the_first_scripts_of_redis_suite_in_order() {
    let (mut e, mut c) = engine();
    let scripts = [
        "return 'hello'",
        "return _G",
        "local a = {}; setmetatable(a,{__index=function() foo() end}) return a",
        "local a = {}; setmetatable(a,{__index=function() redis.call('set', 'x', '1') end}) return a",
        "return 100.5",
        "return {ok='fine'}",
        "return {err='ERR this is an error'}",
        "return {1,2,3,'ciao',{1,2}}",
    ];
    for script in scripts {
        let reply = eval(&mut e, &mut c, script, &[], &[]);
        std::eprintln!("{script} => {reply:?}");
    }
}

#[test]
fn unpack_refuses_ranges_past_the_stack() {
    let (mut e, mut c) = engine();
    for range in ["-2, 2147483647", "0, 2147483647", "-2147483648, -2"] {
        let text = error_of(eval(
            &mut e,
            &mut c,
            &alloc::format!("return {{unpack({{1,2,3}}, {range})}}"),
            &[],
            &[],
        ));
        assert!(
            text.starts_with("ERR user_script:1: too many results to unpack script: "),
            "{range}: {text}"
        );
    }
    assert_eq!(
        eval(&mut e, &mut c, "return {unpack({1,2,3}, -1, -2)}", &[], &[]),
        Reply::array(vec![])
    );
}

#[test]
fn scripts_may_not_block_on_streams() {
    let (mut e, mut c) = engine();
    exec(
        &mut e,
        &mut c,
        &[b"XGROUP", b"CREATE", b"s", b"g", b"$", b"MKSTREAM"],
    );
    let read = "return redis.pcall('xread','STREAMS','s','$')";
    assert_eq!(eval(&mut e, &mut c, read, &["s"], &[]), Reply::nil());
    let blocking = "return redis.pcall('xread','BLOCK',0,'STREAMS','s','$')";
    assert_eq!(
        error_of(eval(&mut e, &mut c, blocking, &["s"], &[])),
        "ERR xread command is not allowed with BLOCK option from scripts"
    );
    let group = "return redis.pcall('xreadgroup','group','g','c','BLOCK',0,'STREAMS','s','>')";
    assert_eq!(
        error_of(eval(&mut e, &mut c, group, &["s"], &[])),
        "ERR xreadgroup command is not allowed with BLOCK option from scripts"
    );
}

#[test]
fn what_scripts_share_is_read_only() {
    let (mut e, mut c) = engine();
    for script in [
        "redis = function() return 1 end",
        "redis.call = function() return 1 end",
        "rawset(_G, 'redis', 1)",
        "rawset(redis, 'call', 1)",
        "string.upper = nil",
        "bit.band = nil",
        "_G.math = 1",
        "local g = getmetatable(_G) g.__index = nil",
        "getmetatable('').__index = {}",
        "setmetatable(_G, {})",
        "getmetatable(redis).__index = {}",
        "_G = {}",
        "getmetatable(redis).__index.call = nil",
        "getmetatable(_G).__index.redis = nil",
        "getmetatable('').__index.upper = nil",
    ] {
        let reply = eval(&mut e, &mut c, script, &[], &[]);
        assert!(reply.is_error(), "{script}: {reply:?}");
    }
    let after = "return {redis.call('PING')['ok'], string.upper('a'), bit.band(3, 1), type(math), ('x'):rep(2)}";
    let expected = vec![
        bulk("PONG"),
        bulk("A"),
        Reply::Integer(1),
        bulk("table"),
        bulk("xx"),
    ];
    assert_eq!(
        eval(&mut e, &mut c, after, &[], &[]),
        Reply::array(expected)
    );
    // What Redis's suite checks ("Try trick global protection").
    for script in [
        "setmetatable(_G, {})",
        "local g = getmetatable(_G) g.__index = {}",
        "getmetatable('').__index = {}",
    ] {
        let text = error_of(eval(&mut e, &mut c, script, &[], &[]));
        assert!(
            text.contains("Attempt to modify a readonly table"),
            "{script}: {text}"
        );
    }
    let text = error_of(eval(&mut e, &mut c, "redis = 1", &[], &[]));
    assert!(
        text.starts_with("ERR user_script:1: Attempt to modify a readonly table script: "),
        "{text}"
    );
    let text = error_of(eval(&mut e, &mut c, "return nosuch", &[], &[]));
    assert!(text.starts_with("ERR user_script:1: Script attempted to access nonexistent global variable 'nosuch' script: "), "{text}");
    let walk = "local n = 0 for k, v in pairs(redis) do n = n + 1 end local k = next(bit) return {n > 5, type(bit[k])}";
    assert_eq!(
        eval(&mut e, &mut c, walk, &[], &[]),
        Reply::array(vec![Reply::Integer(1), bulk("function")])
    );
    // A script's own tables stay its own.
    let own = "local t = {} rawset(t, 'a', 1) t.b = 2 local n = 0 for _ in pairs(t) do n = n + 1 end return n";
    assert_eq!(eval(&mut e, &mut c, own, &[], &[]), Reply::Integer(2));
}

#[test]
fn error_reply_texts_are_a_code_and_a_message() {
    let (mut e, mut c) = engine();
    // What redis-server 7.0.15 answers.
    let cases = [
        (
            "return redis.error_reply('My Error')",
            Reply::error("My Error"),
        ),
        (
            "return redis.error_reply('-My Error')",
            Reply::error("My Error"),
        ),
        ("return redis.error_reply('My').err", bulk("ERR My")),
        ("return redis.error_reply('').err", bulk("ERR ")),
        ("return redis.status_reply('').ok", bulk("")),
    ];
    for (script, expected) in cases {
        assert_eq!(eval(&mut e, &mut c, script, &[], &[]), expected, "{script}");
    }
    let empty = eval(&mut e, &mut c, "return {err=''}", &[], &[]);
    assert_eq!(empty.to_bytes(), b"-\r\n");
}

#[test]
fn numbers_as_arguments_keep_all_their_digits() {
    let (mut e, mut c) = engine();
    let script = "redis.call('SET', 'f', 0.1) redis.call('SET', 'g', 9007199254740991) redis.call('SET', 'h', 1e20) \
        redis.call('SET', 'i', -0.0) return {redis.call('GET','f'), redis.call('GET','g'), redis.call('GET','h'), redis.call('GET','i')}";
    // What redis-server 7.0.15 answers.
    let expected = ["0.10000000000000001", "9007199254740991", "1e+20", "-0"];
    assert_eq!(
        eval(&mut e, &mut c, script, &[], &[]),
        Reply::array(expected.iter().map(|s| bulk(s)).collect())
    );
}

#[test]
fn sort_by_a_constant_is_ordered_for_scripts() {
    let (mut e, mut c) = engine();
    let members: Vec<&[u8]> = vec![b"SADD", b"myset", b"z", b"aa", b"b", b"a", b"azz", b"c"];
    exec(&mut e, &mut c, &members);
    // Redis's suite: "SORT BY <constant> output gets ordered for scripting".
    let reply = eval(
        &mut e,
        &mut c,
        "return redis.call('sort',KEYS[1],'by','_')",
        &["myset"],
        &[],
    );
    let expected = ["a", "aa", "azz", "b", "c", "z"];
    assert_eq!(
        reply,
        Reply::array(expected.iter().map(|s| bulk(s)).collect())
    );
}

#[test]
fn sort_by_nosort_keeps_a_sorted_sets_order_for_scripts() {
    let (mut e, mut c) = engine();
    for (score, member) in [("1", "a"), ("5", "b"), ("2", "c"), ("10", "d"), ("3", "e")] {
        exec(
            &mut e,
            &mut c,
            &[b"ZADD", b"zset", score.as_bytes(), member.as_bytes()],
        );
    }
    // Redis's suite (unit/sort): "SORT sorted set BY nosort works as
    // expected from scripts".
    let script = "return {redis.call('sort',KEYS[1],'by','nosort','asc'), redis.call('sort',KEYS[1],'by','nosort','desc')}";
    let list = |items: [&str; 5]| Reply::array(items.iter().map(|s| bulk(s)).collect());
    let expected = Reply::array(vec![
        list(["a", "c", "e", "b", "d"]),
        list(["d", "b", "e", "c", "a"]),
    ]);
    assert_eq!(eval(&mut e, &mut c, script, &["zset"], &[]), expected);
}

#[test]
fn a_command_may_take_as_many_arguments_as_lua_s_stack_holds() {
    let (mut e, mut c) = engine();
    let script =
        "local a = {} for i=1,7999 do a[i] = 1 end return redis.call('lpush', 'l', unpack(a))";
    assert_eq!(eval(&mut e, &mut c, script, &[], &[]), Reply::Integer(7999));
}

#[test]
fn precompiled_lua_is_refused_wherever_code_is_loaded() {
    let (mut e, mut c) = engine();
    let dumped = "return loadstring(string.dump(function() return 1 end))()";
    assert!(
        error_of(eval(&mut e, &mut c, dumped, &[], &[])).contains("attempt to call a nil value")
    );
    let by_reader = "local s = string.dump(function() return 1 end) \
        local done = false \
        local f, msg = load(function() if done then return nil end done = true return s end) \
        return {tostring(f), msg}";
    assert_eq!(
        eval(&mut e, &mut c, by_reader, &[], &[]),
        Reply::Array(Some(alloc::vec![
            bulk("nil"),
            bulk("(load):1: unexpected symbol near '<\\27>'")
        ]))
    );
    let body = "\x1bLuaQ";
    assert!(error_of(eval(&mut e, &mut c, body, &[], &[])).starts_with(
        "ERR Error compiling script (new function): user_script:1: unexpected symbol near '<\\27>'"
    ));
    assert_eq!(
        eval(&mut e, &mut c, "return loadstring('return 7')()", &[], &[]),
        Reply::Integer(7)
    );
}

#[test]
fn cluster_answers_that_it_is_off_and_cluster_reset_is_refused_to_scripts() {
    let (mut e, mut c) = engine();
    let info = exec(&mut e, &mut c, &[b"CLUSTER", b"INFO"]).reply;
    assert_eq!(
        error_of(info),
        "ERR This instance has cluster support disabled"
    );
    let keyslot = "return redis.call('cluster', 'keyslot', 'k')";
    assert!(error_of(eval(&mut e, &mut c, keyslot, &[], &[])).contains("cluster support disabled"));
    let reset = "return redis.pcall('cluster', 'reset', 'hard')";
    assert!(error_of(eval(&mut e, &mut c, reset, &[], &[]))
        .contains("This Redis command is not allowed from script"));
}

/// `INFO errorstats`'s line for `code`, if any.
fn errorstat(e: &mut Engine, c: &mut ClientCtx, code: &str) -> Option<alloc::string::String> {
    let Reply::Verbatim(info) = exec(e, c, &[b"INFO", b"errorstats"]).reply else {
        panic!("INFO is not text");
    };
    let text = alloc::string::String::from_utf8_lossy(info.as_ref()).into_owned();
    let prefix = alloc::format!("errorstat_{code}:");
    text.lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()).map(Into::into))
}

#[test]
fn an_error_a_script_met_is_counted_once_whether_caught_raised_or_returned() {
    let (mut e, mut c) = engine();
    let scripts = [
        "return redis.call('select', 99)",
        "local t = redis.pcall('select', 99) return 1",
        "return redis.pcall('select', 99)",
    ];
    for script in scripts {
        exec(&mut e, &mut c, &[b"CONFIG", b"RESETSTAT"]);
        eval(&mut e, &mut c, script, &[], &[]);
        assert_eq!(
            errorstat(&mut e, &mut c, "ERR").as_deref(),
            Some("count=1"),
            "{script}"
        );
    }
    exec(&mut e, &mut c, &[b"CONFIG", b"RESETSTAT"]);
    let custom = eval(
        &mut e,
        &mut c,
        "return redis.error_reply('MY_ERR_CODE custom msg')",
        &[],
        &[],
    );
    assert_eq!(error_of(custom), "MY_ERR_CODE custom msg");
    assert_eq!(
        errorstat(&mut e, &mut c, "MY_ERR_CODE").as_deref(),
        Some("count=1")
    );
    assert_eq!(errorstat(&mut e, &mut c, "ERR"), None);
}

#[test]
fn many_small_scripts_leave_little_garbage_in_lua() {
    let (mut e, mut c) = engine();
    exec(&mut e, &mut c, &[b"SCRIPT", b"FLUSH"]);
    for _ in 0..10_000 {
        exec(
            &mut e,
            &mut c,
            &[b"EVAL", b"return redis.call('incr',KEYS[1])", b"1", b"x"],
        );
    }
    let Reply::Verbatim(info) = exec(&mut e, &mut c, &[b"INFO", b"memory"]).reply else {
        panic!("INFO is not text");
    };
    let text = alloc::string::String::from_utf8_lossy(&info).into_owned();
    let lua: usize = text
        .lines()
        .find_map(|l| l.strip_prefix("used_memory_lua:"))
        .and_then(|n| n.parse().ok())
        .expect("used_memory_lua");
    // Redis's own suite asks for less than 100 KiB after the same run.
    assert!(lua < 100 * 1024, "{lua} bytes");
    assert_eq!(exec(&mut e, &mut c, &[b"GET", b"x"]).reply, bulk("10000"));
}

#[test]
fn writes_wait_for_replicas_kvstore_never_has_when_min_replicas_is_set() {
    let (mut e, mut c) = engine();
    exec(&mut e, &mut c, &[b"SET", b"x", b"some value"]);
    exec(
        &mut e,
        &mut c,
        &[b"CONFIG", b"SET", b"min-replicas-to-write", b"1"],
    );
    let noreplicas = "NOREPLICAS Not enough good replicas to write.";
    assert_eq!(
        error_of(exec(&mut e, &mut c, &[b"SET", b"x", b"1"]).reply),
        noreplicas
    );
    let read = "#!lua flags=no-writes\nreturn redis.call('get','x')";
    assert_eq!(eval(&mut e, &mut c, read, &["x"], &[]), bulk("some value"));
    let unflagged = "return redis.call('get','x')";
    assert_eq!(
        eval(&mut e, &mut c, unflagged, &["x"], &[]),
        bulk("some value")
    );
    let may_write = "#!lua\nreturn redis.call('get','x')";
    assert_eq!(
        error_of(eval(&mut e, &mut c, may_write, &["x"], &[])),
        noreplicas
    );
    let writes = "return redis.call('set','x', 1)";
    assert!(error_of(eval(&mut e, &mut c, writes, &["x"], &[])).starts_with(noreplicas));
    exec(
        &mut e,
        &mut c,
        &[b"CONFIG", b"SET", b"min-slaves-max-lag", b"0"],
    );
    assert_eq!(
        exec(&mut e, &mut c, &[b"SET", b"x", b"1"]).reply,
        Reply::ok()
    );
}
