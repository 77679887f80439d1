//! Function libraries and script flags through the engine, answering as
//! Redis 7.0 answers (texts from redis-server 7.0.15 and its test suite).

use alloc::vec::Vec;

use crate::commands::{ClientCtx, Engine, Outcome};
use crate::config::Config;
use crate::resp::Reply;

fn run(e: &mut Engine, args: &[&[u8]]) -> Outcome {
    let args: Vec<Vec<u8>> = args.iter().map(|a| a.to_vec()).collect();
    e.execute(&args, &mut ClientCtx::new(1), 1_000)
}

fn words(e: &mut Engine, line: &str) -> Reply {
    let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
    run(e, &args).reply
}

fn load(e: &mut Engine, code: &str) -> Reply {
    run(e, &[b"FUNCTION", b"LOAD", b"REPLACE", code.as_bytes()]).reply
}

fn error_of(reply: Reply) -> alloc::string::String {
    match reply {
        Reply::Error(text) => text,
        other => panic!("not an error: {other:?}"),
    }
}

const HELLO: &str = "#!lua name=mylib\nredis.register_function('hello', function(keys, args) return 'hi ' .. (args[1] or '') end)";

#[test]
fn a_loaded_function_is_called_with_keys_and_args() {
    let mut e = Engine::new(Config::default(), 0);
    assert_eq!(
        run(&mut e, &[b"FUNCTION", b"LOAD", HELLO.as_bytes()]).reply,
        Reply::bulk(&b"mylib"[..])
    );
    assert_eq!(
        words(&mut e, "FCALL hello 0 you"),
        Reply::bulk(&b"hi you"[..])
    );
    assert_eq!(
        words(&mut e, "FCALL HELLO 0"),
        Reply::bulk(&b"hi "[..]),
        "any case"
    );
    load(
        &mut e,
        "#!lua name=kv\nredis.register_function('setit', function(keys, args) return redis.call('set', keys[1], args[1]) end)",
    );
    let out = run(&mut e, &[b"FCALL", b"setit", b"1", b"k", b"v"]);
    assert_eq!(out.reply, Reply::ok());
    assert_eq!(words(&mut e, "GET k"), Reply::bulk(&b"v"[..]));
    assert_eq!(
        out.effects.commands(),
        [["SET", "k", "v"].map(|w| w.as_bytes().to_vec())]
    );
    assert_eq!(
        words(&mut e, "COMMAND GETKEYS FCALL setit 1 k v"),
        Reply::array(alloc::vec![Reply::bulk(&b"k"[..])])
    );
}

#[test]
fn load_errors_are_worded_as_redis_words_them() {
    let mut e = Engine::new(Config::default(), 0);
    load(&mut e, HELLO);
    let err = |e: &mut Engine, code: &str| {
        error_of(run(e, &[b"FUNCTION", b"LOAD", code.as_bytes()]).reply)
    };
    assert_eq!(err(&mut e, HELLO), "ERR Library 'mylib' already exists");
    assert_eq!(err(&mut e, "return 1"), "ERR Missing library metadata");
    assert_eq!(err(&mut e, "#!js name=x\n"), "ERR Engine 'js' not found");
    assert_eq!(err(&mut e, "#! name=x\n"), "ERR Engine '' not found");
    assert!(err(&mut e, "#!lua name=b-d\n").starts_with("ERR Library names can only contain"));
    assert_eq!(
        err(&mut e, "#!lua name=x\nreturn 1"),
        "ERR No functions registered"
    );
    assert!(err(&mut e, "#!lua name=x\nbad script").starts_with("ERR Error compiling function: "));
    let other = "#!lua name=other\nredis.register_function('hello', function() return 1 end)";
    assert_eq!(err(&mut e, other), "ERR Function hello already exists");
    let twice = "#!lua name=x\nredis.register_function('f', function() end)\nredis.register_function('f', function() end)";
    assert!(err(&mut e, twice).contains("Function already exists in the library"));
    assert!(err(&mut e, "#!lua name=x\nreturn math.random()")
        .contains("attempted to access nonexistent global variable 'math'"));
    assert!(err(&mut e, "#!lua name=x\nreturn redis.call('ping')")
        .contains("attempted to access nonexistent global variable 'call'"));
    assert!(err(&mut e, "#!lua name=x\na = 1").contains("Attempt to modify a readonly table"));
    assert!(
        err(&mut e, "#!lua name=x\nredis.register_function('f', 'no')")
            .contains("second argument to redis.register_function must be a function")
    );
    assert!(err(&mut e, "#!lua name=x\nredis.register_function{function_name='f', callback=function() end, flags={'bad'}}")
        .contains("unknown flag given"));
    assert_eq!(
        error_of(run(&mut e, &[b"FUNCTION", b"LOAD", b"foo", HELLO.as_bytes()]).reply),
        "ERR Unknown option given: foo"
    );
    // A failed load changed nothing.
    assert_eq!(words(&mut e, "FCALL hello 0"), Reply::bulk(&b"hi "[..]));
    assert_eq!(
        error_of(words(&mut e, "FCALL nope 0")),
        "ERR Function not found"
    );
    assert_eq!(
        error_of(words(&mut e, "FCALL hello x")),
        "ERR Bad number of keys provided"
    );
    assert_eq!(
        error_of(words(&mut e, "FCALL hello 2 a")),
        "ERR Number of keys can't be greater than number of args"
    );
    assert_eq!(
        error_of(words(&mut e, "FCALL hello -1")),
        "ERR Number of keys can't be negative"
    );
}

#[test]
fn registering_outside_a_load_fails_and_libraries_are_read_only() {
    let mut e = Engine::new(Config::default(), 0);
    load(
        &mut e,
        "#!lua name=lib1\nlocal lib = redis\nlib.register_function('f1', function() lib.redis = redis end)\nlib.register_function('f2', function() lib.register_function('f3', function() end) end)\nredis.register_function('f4', function() return redis.register_function end)",
    );
    assert!(error_of(words(&mut e, "FCALL f1 0")).contains("Attempt to modify a readonly table"));
    assert!(error_of(words(&mut e, "FCALL f2 0"))
        .contains("can only be called on FUNCTION LOAD command"));
    assert_eq!(
        words(&mut e, "FCALL f4 0"),
        Reply::nil(),
        "the running redis has no register_function"
    );
}

#[test]
fn list_stats_delete_and_flush() {
    let mut e = Engine::new(Config::default(), 0);
    load(&mut e, "#!lua name=lib\nredis.register_function{function_name='f1', callback=function() return 1 end, description='some desc', flags={'no-writes', 'allow-oom'}}\nredis.register_function('f2', function() return 2 end)");
    let bulk = |s: &str| Reply::bulk(s.as_bytes());
    let f1 = Reply::Map(alloc::vec![
        bulk("name"),
        bulk("f1"),
        bulk("description"),
        bulk("some desc"),
        bulk("flags"),
        Reply::Set(alloc::vec![
            Reply::Simple("no-writes".into()),
            Reply::Simple("allow-oom".into())
        ]),
    ]);
    let f2 = Reply::Map(alloc::vec![
        bulk("name"),
        bulk("f2"),
        bulk("description"),
        Reply::nil(),
        bulk("flags"),
        Reply::Set(alloc::vec![]),
    ]);
    let lib = Reply::Map(alloc::vec![
        bulk("library_name"),
        bulk("lib"),
        bulk("engine"),
        bulk("LUA"),
        bulk("functions"),
        Reply::array(alloc::vec![f1, f2]),
    ]);
    assert_eq!(
        words(&mut e, "FUNCTION LIST"),
        Reply::array(alloc::vec![lib.clone()])
    );
    assert_eq!(
        words(&mut e, "FUNCTION LIST LIBRARYNAME l*"),
        Reply::array(alloc::vec![lib])
    );
    assert_eq!(
        words(&mut e, "FUNCTION LIST LIBRARYNAME x*"),
        Reply::array(alloc::vec![])
    );
    match words(&mut e, "FUNCTION LIST WITHCODE") {
        Reply::Array(Some(libs)) => assert!(matches!(&libs[0], Reply::Map(f) if f.len() == 8)),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        error_of(words(&mut e, "FUNCTION LIST bad")),
        "ERR Unknown argument bad"
    );
    assert_eq!(
        error_of(words(&mut e, "FUNCTION LIST LIBRARYNAME")),
        "ERR library name argument was not given"
    );
    let stats = |libs: i64, fns: i64| {
        Reply::Map(alloc::vec![
            bulk("running_script"),
            Reply::nil(),
            bulk("engines"),
            Reply::Map(alloc::vec![
                bulk("LUA"),
                Reply::Map(alloc::vec![
                    bulk("libraries_count"),
                    Reply::Integer(libs),
                    bulk("functions_count"),
                    Reply::Integer(fns),
                ])
            ]),
        ])
    };
    assert_eq!(words(&mut e, "FUNCTION STATS"), stats(1, 2));
    assert_eq!(
        error_of(words(&mut e, "FUNCTION KILL")),
        "NOTBUSY No scripts in execution right now."
    );
    assert_eq!(
        error_of(words(&mut e, "FUNCTION DELETE nope")),
        "ERR Library not found"
    );
    let out = run(&mut e, &[b"FUNCTION", b"DELETE", b"lib"]);
    assert_eq!(out.reply, Reply::ok());
    assert_eq!(
        out.effects.commands(),
        [["FUNCTION", "DELETE", "lib"].map(|w| w.as_bytes().to_vec())]
    );
    assert_eq!(words(&mut e, "FUNCTION STATS"), stats(0, 0));
    load(&mut e, HELLO);
    assert_eq!(words(&mut e, "FUNCTION FLUSH ASYNC"), Reply::ok());
    assert_eq!(words(&mut e, "FUNCTION LIST"), Reply::array(alloc::vec![]));
    assert_eq!(
        error_of(words(&mut e, "FUNCTION FLUSH LATER")),
        "ERR FUNCTION FLUSH only supports SYNC|ASYNC option"
    );
    assert_eq!(
        error_of(words(&mut e, "FUNCTION FLUSH SYNC extra")),
        "ERR unknown subcommand or wrong number of arguments for 'flush'. Try FUNCTION HELP."
    );
    assert!(matches!(words(&mut e, "SCRIPT FLUSH"), Reply::Simple(_)));
}

#[test]
fn flags_are_enforced() {
    let mut e = Engine::new(Config::default(), 0);
    load(&mut e, "#!lua name=w\nredis.register_function('w', function() return redis.call('set', 'x', 1) end)");
    load(&mut e, "#!lua name=ro\nredis.register_function{function_name='ro', callback=function() return redis.call('set', 'x', 1) end, flags={'no-writes'}}\nredis.register_function{function_name='get', callback=function() return redis.call('get', 'x') end, flags={'no-writes'}}");
    assert_eq!(
        error_of(words(&mut e, "FCALL_RO w 0")),
        "ERR Can not execute a script with write flag using *_ro command."
    );
    assert!(error_of(words(&mut e, "FCALL ro 0"))
        .contains("Write commands are not allowed from read-only scripts"));
    assert_eq!(words(&mut e, "FCALL w 0"), Reply::ok());
    assert_eq!(words(&mut e, "FCALL_RO get 0"), Reply::bulk(&b"1"[..]));
    // Past maxmemory: refused unless allow-oom (or no-writes).
    load(&mut e, "#!lua name=oom\nredis.register_function{function_name='oom', callback=function() return redis.call('set', 'y', 1) end, flags={'allow-oom'}}");
    words(&mut e, "CONFIG SET maxmemory 1");
    assert!(error_of(words(&mut e, "FCALL w 0"))
        .starts_with("OOM allow-oom flag is not set on the script"));
    assert_eq!(words(&mut e, "FCALL_RO get 0"), Reply::bulk(&b"1"[..]));
    assert_eq!(words(&mut e, "FCALL oom 0"), Reply::ok());
    assert!(error_of(load(&mut e, HELLO)).starts_with("OOM command not allowed"));
    words(&mut e, "CONFIG SET maxmemory 0");
}

#[test]
fn eval_shebang_flags_are_honoured() {
    let mut e = Engine::new(Config::default(), 0);
    let eval = |e: &mut Engine, script: &str| run(e, &[b"EVAL", script.as_bytes(), b"0"]).reply;
    assert_eq!(
        eval(&mut e, "#!lua\nreturn redis.call('set', 'x', 1)"),
        Reply::ok()
    );
    assert!(error_of(eval(
        &mut e,
        "#!lua flags=no-writes\nreturn redis.call('set', 'x', 1)"
    ))
    .contains("Write commands are not allowed from read-only scripts"));
    assert_eq!(
        eval(
            &mut e,
            "#!lua flags=no-writes,allow-stale\nreturn redis.call('get', 'x')"
        ),
        Reply::bulk(&b"1"[..])
    );
    assert_eq!(
        error_of(run(&mut e, &[b"EVAL_RO", b"#!lua\nreturn 1", b"0"]).reply),
        "ERR Can not execute a script with write flag using *_ro command."
    );
    assert_eq!(
        run(
            &mut e,
            &[b"EVAL_RO", b"#!lua flags=no-writes\nreturn 1", b"0"]
        )
        .reply,
        Reply::Integer(1)
    );
    assert_eq!(
        error_of(eval(&mut e, "#!lua flags=bad\nreturn 1")),
        "ERR Unexpected flag in script shebang: bad"
    );
    assert_eq!(
        error_of(eval(&mut e, "#!lua x=1\nreturn 1")),
        "ERR Unknown lua shebang option: x=1"
    );
    assert_eq!(
        error_of(eval(&mut e, "#!perl\nreturn 1")),
        "ERR Unexpected engine in script shebang: #!perl"
    );
    // Line numbers count the shebang line.
    assert!(error_of(eval(&mut e, "#!lua\n\nerror('x')")).contains("user_script:3"));
    assert_eq!(
        eval(&mut e, "return redis.REDIS_VERSION"),
        Reply::bulk(crate::commands::REDIS_VERSION.as_bytes())
    );
    words(&mut e, "CONFIG SET maxmemory 1");
    assert!(error_of(eval(&mut e, "#!lua\nreturn 1")).starts_with("OOM allow-oom flag is not set"));
    assert_eq!(
        eval(
            &mut e,
            "#!lua flags=allow-oom\nreturn redis.call('set', 'z', 1)"
        ),
        Reply::ok()
    );
    assert_eq!(
        eval(&mut e, "return 1"),
        Reply::Integer(1),
        "no shebang: not checked"
    );
}

#[test]
fn dump_and_restore_move_libraries() {
    let mut e = Engine::new(Config::default(), 0);
    load(&mut e, HELLO);
    let Reply::Bulk(Some(payload)) = words(&mut e, "FUNCTION DUMP") else {
        panic!("no payload");
    };
    let restore = |e: &mut Engine, policy: &[u8]| {
        let mut args: Vec<&[u8]> = alloc::vec![b"FUNCTION", b"RESTORE", &payload];
        if !policy.is_empty() {
            args.push(policy);
        }
        run(e, &args)
    };
    assert_eq!(
        error_of(restore(&mut e, b"").reply),
        "ERR Library mylib already exists"
    );
    assert_eq!(restore(&mut e, b"REPLACE").reply, Reply::ok());
    words(&mut e, "FUNCTION FLUSH");
    let out = restore(&mut e, b"");
    assert_eq!(out.reply, Reply::ok());
    assert_eq!(
        out.effects.commands()[0][..2],
        [b"FUNCTION".to_vec(), b"LOAD".to_vec()]
    );
    assert_eq!(words(&mut e, "FCALL hello 0 x"), Reply::bulk(&b"hi x"[..]));
    load(
        &mut e,
        "#!lua name=other\nredis.register_function('other', function() return 1 end)",
    );
    assert_eq!(restore(&mut e, b"FLUSH").reply, Reply::ok());
    assert_eq!(
        error_of(words(&mut e, "FCALL other 0")),
        "ERR Function not found"
    );
    // A function of another library in the way.
    words(&mut e, "FUNCTION FLUSH");
    load(
        &mut e,
        "#!lua name=lib2\nredis.register_function('hello', function() return 2 end)",
    );
    assert_eq!(
        error_of(restore(&mut e, b"REPLACE").reply),
        "ERR Function hello already exists"
    );
    assert_eq!(words(&mut e, "FCALL hello 0"), Reply::Integer(2));
    assert_eq!(
        error_of(words(&mut e, "FUNCTION RESTORE bad_payload")),
        "ERR DUMP payload version or checksum are wrong"
    );
    assert_eq!(
        error_of(restore(&mut e, b"LATER").reply),
        "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE."
    );
    assert_eq!(
        error_of(words(&mut e, "FUNCTION RESTORE a b c")),
        "ERR unknown subcommand or wrong number of arguments for 'restore'. Try FUNCTION HELP."
    );
}

#[test]
fn the_log_replays_to_the_same_libraries() {
    let mut e = Engine::new(Config::default(), 0);
    let mut log = Vec::new();
    let step = |e: &mut Engine, args: &[&[u8]], log: &mut Vec<Vec<Vec<u8>>>| {
        let out = run(e, args);
        assert!(!out.reply.is_error(), "{:?}", out.reply);
        log.extend(out.effects.commands());
    };
    step(&mut e, &[b"FUNCTION", b"LOAD", HELLO.as_bytes()], &mut log);
    step(&mut e, &[b"SELECT", b"3"], &mut log);
    step(
        &mut e,
        &[
            b"FUNCTION",
            b"LOAD",
            b"#!lua name=b\nredis.register_function('b', function() return 'b' end)",
        ],
        &mut log,
    );
    step(
        &mut e,
        &[
            b"FUNCTION",
            b"LOAD",
            b"#!lua name=c\nredis.register_function('c', function() return 'c' end)",
        ],
        &mut log,
    );
    step(&mut e, &[b"FUNCTION", b"DELETE", b"b"], &mut log);
    let mut replayed = Engine::new(Config::default(), 0);
    for record in log {
        replayed.load(record, 1_000).unwrap();
    }
    let list = |e: &mut Engine| words(e, "FUNCTION LIST WITHCODE");
    assert_eq!(list(&mut replayed), list(&mut e));
    assert_eq!(words(&mut replayed, "FCALL c 0"), Reply::bulk(&b"c"[..]));
    // A rewritten log starts with the libraries.
    e.schedule_aof_rewrite();
    e.aof_rewrite_started(1_000);
    let mut new_log: Vec<u8> = Vec::new();
    while !e.aof_rewrite_step(100, &mut new_log) {}
    let mut rewritten = Engine::new(Config::default(), 0);
    let mut n = 0;
    crate::aof::replay(&new_log, |args| {
        n += 1;
        rewritten.load(args, 1_000).unwrap();
    });
    assert_eq!(n, 2);
    assert_eq!(list(&mut rewritten), list(&mut e));
}

/// A clock that moves 100 ms each time it is read.
fn fast_clock() -> u64 {
    use core::sync::atomic::{AtomicU64, Ordering};
    static NOW: AtomicU64 = AtomicU64::new(0);
    NOW.fetch_add(100_000, Ordering::Relaxed)
}

/// A server stand-in: each poll, one client sends the next request.
struct Requests {
    requests: Vec<&'static str>,
    replies: alloc::rc::Rc<core::cell::RefCell<Vec<Reply>>>,
}

impl crate::busy::BusyPoll for Requests {
    fn poll(&mut self, script: &mut crate::busy::BusyScript) {
        if !self.requests.is_empty() {
            let request = self.requests.remove(0);
            let args: Vec<Vec<u8>> = request.split(' ').map(|w| w.as_bytes().to_vec()).collect();
            let reply = crate::busy::answer(script, &args);
            self.replies.borrow_mut().push(reply);
        }
    }
}

fn busy_engine(
    requests: Vec<&'static str>,
) -> (Engine, alloc::rc::Rc<core::cell::RefCell<Vec<Reply>>>) {
    let mut e = Engine::new(Config::default(), 0);
    e.set_clock_us(fast_clock);
    let replies = alloc::rc::Rc::default();
    e.set_busy_poll(alloc::boxed::Box::new(Requests {
        requests,
        replies: alloc::rc::Rc::clone(&replies),
    }));
    (e, replies)
}

#[test]
fn a_busy_script_lets_others_in_and_is_killed() {
    let (mut e, replies) = busy_engine(alloc::vec!["PING", "FUNCTION KILL", "SCRIPT KILL"]);
    words(&mut e, "CONFIG SET busy-reply-threshold 10");
    let out = run(
        &mut e,
        &[b"EVAL", b"local a = 1 while true do a = a + 1 end", b"0"],
    );
    assert!(error_of(out.reply).starts_with("ERR Script killed by user with SCRIPT KILL..."));
    let replies = replies.borrow();
    assert!(error_of(replies[0].clone())
        .starts_with("BUSY Redis is busy running a script. You can only call SCRIPT KILL"));
    assert!(error_of(replies[1].clone()).starts_with("BUSY"));
    assert_eq!(replies[2], Reply::ok());
    assert_eq!(words(&mut e, "PING"), Reply::Simple("PONG".into()));
}

#[test]
fn a_killed_script_cannot_catch_its_kill_with_pcall() {
    let (mut e, replies) = busy_engine(alloc::vec!["SCRIPT KILL"]);
    words(&mut e, "CONFIG SET busy-reply-threshold 10");
    let catching = b"local f = function() while 1 do redis.call('ping') end end \
        while 1 do pcall(f) xpcall(f, function(e) return e end) end";
    let out = run(&mut e, &[b"EVAL", catching, b"0"]);
    assert!(error_of(out.reply).starts_with("ERR Script killed by user with SCRIPT KILL..."));
    assert_eq!(replies.borrow()[0], Reply::ok());
    // pcall still catches the errors of a script that was not stopped.
    let caught = b"return {pcall(error, 'no')}";
    let expected = Reply::array(alloc::vec![Reply::nil(), Reply::Bulk(Some(b"no".to_vec()))]);
    assert_eq!(run(&mut e, &[b"EVAL", caught, b"0"]).reply, expected);
}

#[test]
fn a_busy_function_is_killed_with_function_kill() {
    let (mut e, replies) = busy_engine(alloc::vec![
        "SCRIPT KILL",
        "FUNCTION STATS",
        "FUNCTION KILL"
    ]);
    load(&mut e, "#!lua name=spin\nredis.register_function('spin', function() local a = 1 while true do a = a + 1 end end)");
    let out = run(&mut e, &[b"FCALL", b"spin", b"0"]);
    assert!(error_of(out.reply).contains("Script killed by user with FUNCTION KILL"));
    let replies = replies.borrow();
    assert!(error_of(replies[0].clone()).contains("You can only call FUNCTION KILL"));
    assert!(matches!(&replies[1], Reply::Map(m) if m[1] != Reply::nil()));
    assert_eq!(replies[2], Reply::ok());
}

#[test]
fn a_script_that_wrote_is_unkillable_until_shutdown_nosave() {
    let (mut e, replies) = busy_engine(alloc::vec!["SCRIPT KILL", "SHUTDOWN NOSAVE"]);
    words(&mut e, "CONFIG SET lua-time-limit 0");
    let out = run(
        &mut e,
        &[
            b"EVAL",
            b"redis.call('set', 'x', 1) while true do end",
            b"0",
        ],
    );
    assert!(out.reply.is_error());
    assert!(out.effects.is_empty(), "stopped half way: nothing logged");
    assert!(error_of(replies.borrow()[0].clone()).starts_with("UNKILLABLE"));
    assert_eq!(e.take_shutdown(), Some(true));
}

#[test]
fn library_code_that_runs_too_long_is_stopped() {
    let mut e = Engine::new(Config::default(), 0);
    e.set_clock_us(fast_clock);
    let reply = load(
        &mut e,
        "#!lua name=slow\nlocal a = 1 while true do a = a + 1 end",
    );
    assert!(error_of(reply).contains("FUNCTION LOAD timeout"));
    assert_eq!(
        load(&mut e, HELLO),
        Reply::bulk(&b"mylib"[..]),
        "the next load runs"
    );
}
