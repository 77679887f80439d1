//! Lua scripts in the guest's kvstore (`EVAL`): Lua 5.1 on the guest's own
//! C library pieces (printf, strtod, setjmp/longjmp, the allocator), its
//! memory limit, and scripts' effects surviving a restart; function
//! libraries (`FUNCTION LOAD`, `FCALL`) surviving one, through the log and
//! its rewrite; busy scripts (`-BUSY` to the others, `SCRIPT KILL`,
//! `FUNCTION KILL`, `-UNKILLABLE`).

mod common;

use common::kvstore::{ask, command, first_rewrite, fresh_disk, read_line, Guest};
use std::io::Write;
use std::time::Duration;

#[test]
fn scripts_run_in_the_guest_and_their_effects_survive_a_restart() {
    let test = "kvstore-scripts";
    fresh_disk(test);
    let args = ["appendfsync", "always"];
    let guest = Guest::start_with(test, &args);
    let mut s = guest.connect();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();

    let set = "return redis.call('SET',KEYS[1],ARGV[1])";
    assert_eq!(ask(&mut s, &["EVAL", set, "1", "k", "v"]), "+OK");
    assert_eq!(ask(&mut s, &["GET", "k"]), "v");
    // Numbers to text (the guest's printf) and back (its strtod).
    let format = "return string.format('%5.2f|%d|%x|%g|%-3s|', 3.14159, 42, 255, 1e20, 'a') .. tostring(0.1) .. ' ' .. tostring(1e15)";
    assert_eq!(
        ask(&mut s, &["EVAL", format, "0"]),
        " 3.14|42|ff|1e+20|a  |0.1 1e+15"
    );
    let parse = "return tonumber('0x1A') + tonumber(' 2.5e1 ')";
    assert_eq!(ask(&mut s, &["EVAL", parse, "0"]), ":51");
    // Errors unwind with the guest's longjmp.
    assert_eq!(
        ask(&mut s, &["EVAL", "error('boom')", "0"]),
        "-ERR user_script:1: boom script: 82903a0434f1503e152f89c03c9acd881a0e8150, on @user_script:1."
    );
    assert_eq!(
        ask(
            &mut s,
            &[
                "EVAL",
                "return redis.pcall('INCR', KEYS[1])['err']",
                "1",
                "k"
            ]
        ),
        "ERR value is not an integer or out of range"
    );
    // Lua 5.1's unpack checks its count by letting an int overflow:
    // compiled with -fwrapv, the check holds in the optimized guest.
    let unpack = "return {unpack({1,2,3}, -2, 2147483647)}";
    let answer = ask(&mut s, &["EVAL", unpack, "0"]);
    assert!(
        answer.starts_with("-ERR user_script:1: too many results to unpack"),
        "{answer}"
    );
    // Deep recursion stays within the kernel's stack: a result that holds
    // itself, and Lua's own C calls at their limit.
    let recursive = "local a = {} local b = {a} a[1] = b return a";
    assert_eq!(
        ask(&mut s, &["EVAL", recursive, "0"]),
        "-ERR reached lua stack limit"
    );
    let calls = "local function f() return pcall(f) end return tostring(f())";
    assert_eq!(ask(&mut s, &["EVAL", calls, "0"]), "true");
    let gsub = "local function f(x) return (string.gsub('a', 'a', f)) end return f('a')";
    let answer = ask(&mut s, &["EVAL", gsub, "0"]);
    assert!(answer.contains("stack overflow"), "{answer}");
    let nested = format!("return {}1{}", "{".repeat(60), "}".repeat(60));
    assert_eq!(ask(&mut s, &["EVAL", &nested, "0"]), "*1");
    for _ in 1..60 {
        assert_eq!(read_line(&mut s), "*1");
    }
    assert_eq!(read_line(&mut s), ":1");
    let parse = format!("return {}1{}", "(".repeat(190), ")".repeat(190));
    assert_eq!(ask(&mut s, &["EVAL", &parse, "0"]), ":1");
    // The libraries at their deepest nesting fit the guest's stack: a
    // table that holds itself stops at cjson's encoding limit, JSON at
    // its decoding limit, MessagePack at its unpacking limit.
    let own = "local t = {} t[1] = t t.x = t return cjson.encode(t)";
    let answer = ask(&mut s, &["EVAL", own, "0"]);
    assert!(answer.contains("excessive nesting (129)"), "{answer}");
    let deep = "local u = {} for i = 1, 127 do u = {a = u} end \
        local back = cjson.decode(cjson.encode(u)) return #cjson.encode(back)";
    assert_eq!(ask(&mut s, &["EVAL", deep, "0"]), ":764");
    let json = "return #cjson.decode(string.rep('[', 1000) .. string.rep(']', 1000))";
    assert_eq!(ask(&mut s, &["EVAL", json, "0"]), ":1");
    let msgpack = "return cmsgpack.unpack(string.rep('\\145', 100000))";
    let answer = ask(&mut s, &["EVAL", msgpack, "0"]);
    assert!(answer.contains("Too deeply nested"), "{answer}");
    let packed = "local t = {} t[1] = t return #cmsgpack.pack(t, struct.pack('>i', 7))";
    assert_eq!(ask(&mut s, &["EVAL", packed, "0"]), ":22");
    // A script that allocates without bound gets an error, and the server
    // and the next scripts go on.
    // (Lua gets what maxmemory leaves, at least 1 MiB: a small limit keeps
    // the test short under QEMU. Tables, not strings: Lua 5.1 hashes long
    // strings from a few of their bytes, and near-equal ones collide.)
    assert_eq!(
        ask(&mut s, &["CONFIG", "SET", "maxmemory", "2000000"]),
        "+OK"
    );
    let hog = "local t = {} for i = 1, 1e9 do t[i] = {i, i + 1} end return #t";
    let answer = ask(&mut s, &["EVAL", hog, "0"]);
    assert!(
        answer.starts_with("-ERR Error running script") && answer.contains("not enough memory"),
        "{answer}"
    );
    assert_eq!(ask(&mut s, &["PING"]), "+PONG");
    let modest = "local t = {} for i = 1, 1000 do t[i] = string.rep('y', 100) .. i end return #t";
    assert_eq!(ask(&mut s, &["EVAL", modest, "0"]), ":1000");
    assert_eq!(ask(&mut s, &["CONFIG", "SET", "maxmemory", "0"]), "+OK");
    // Effects in two databases, logged as the commands they ran.
    let counter = "redis.call('SELECT', 3) redis.call('INCRBY', KEYS[1], ARGV[1]) return redis.call('INCR', KEYS[1])";
    assert_eq!(ask(&mut s, &["EVAL", counter, "1", "n", "41"]), ":42");
    let sha = ask(
        &mut s,
        &[
            "SCRIPT",
            "LOAD",
            "return redis.call('RPUSH', KEYS[1], ARGV[1])",
        ],
    );
    assert_eq!(ask(&mut s, &["EVALSHA", &sha, "1", "l", "x"]), ":1");
    // Function libraries: loaded, called, and logged (a rewrite of the log
    // starts with them); one is deleted, one loaded after the rewrite.
    let lib = "#!lua name=counters\nredis.register_function('bump', function(keys, args) return redis.call('INCRBY', keys[1], args[1]) end)\nredis.register_function{function_name='peek', callback=function(keys) return redis.call('GET', keys[1]) end, flags={'no-writes'}}";
    assert_eq!(ask(&mut s, &["FUNCTION", "LOAD", lib]), "counters");
    let gone = "#!lua name=gone\nredis.register_function('gone', function() return 1 end)";
    assert_eq!(ask(&mut s, &["FUNCTION", "LOAD", gone]), "gone");
    assert_eq!(ask(&mut s, &["FCALL", "bump", "1", "c", "5"]), ":5");
    assert_eq!(ask(&mut s, &["FCALL_RO", "peek", "1", "c"]), "5");
    assert!(ask(&mut s, &["FCALL_RO", "bump", "1", "c", "1"]).starts_with("-ERR Can not execute"));
    first_rewrite(&mut s);
    assert_eq!(ask(&mut s, &["FUNCTION", "DELETE", "gone"]), "+OK");
    let late = "#!lua name=late\nredis.register_function('late', function() return 'late' end)";
    assert_eq!(ask(&mut s, &["FUNCTION", "LOAD", late]), "late");
    guest.kill();

    let guest = Guest::start_with(test, &args);
    let mut s = guest.connect();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    assert_eq!(ask(&mut s, &["GET", "k"]), "v");
    assert_eq!(ask(&mut s, &["LLEN", "l"]), ":1");
    assert_eq!(ask(&mut s, &["FCALL", "bump", "1", "c", "2"]), ":7");
    assert_eq!(ask(&mut s, &["FCALL", "late", "0"]), "late");
    assert_eq!(
        ask(&mut s, &["FCALL", "gone", "0"]),
        "-ERR Function not found"
    );
    assert_eq!(ask(&mut s, &["EXISTS", "n"]), ":0");
    assert_eq!(ask(&mut s, &["SELECT", "3"]), "+OK");
    assert_eq!(ask(&mut s, &["GET", "n"]), "42");
    // The script cache is not kept across restarts, as in Redis.
    assert!(ask(&mut s, &["EVALSHA", &sha, "1", "l", "x"]).starts_with("-NOSCRIPT"));

    // A script past busy-reply-threshold: the others are answered -BUSY
    // meanwhile, and may kill it.
    assert_eq!(
        ask(&mut s, &["CONFIG", "SET", "busy-reply-threshold", "50"]),
        "+OK"
    );
    let mut runner = guest.connect();
    runner
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let spin = "local a = 1 while true do a = a + 1 end";
    runner.write_all(&command(&["EVAL", spin, "0"])).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(ask(&mut s, &["PING"]).starts_with("-BUSY Redis is busy running a script"));
    assert!(ask(&mut s, &["FUNCTION", "KILL"]).starts_with("-BUSY"));
    assert_eq!(ask(&mut s, &["SCRIPT", "KILL"]), "+OK");
    let killed = read_line(&mut runner);
    assert!(
        killed.starts_with("-ERR Script killed by user with SCRIPT KILL"),
        "{killed}"
    );
    assert_eq!(ask(&mut s, &["PING"]), "+PONG");
    // A function, killed with FUNCTION KILL; one that wrote cannot be.
    let lib = "#!lua name=spin\nredis.register_function('spin', function() local a = 1 while true do a = a + 1 end end)";
    assert_eq!(ask(&mut s, &["FUNCTION", "LOAD", lib]), "spin");
    runner.write_all(&command(&["FCALL", "spin", "0"])).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(ask(&mut s, &["SCRIPT", "KILL"]).starts_with("-BUSY"));
    assert_eq!(ask(&mut s, &["FUNCTION", "KILL"]), "+OK");
    assert!(read_line(&mut runner).contains("Script killed by user with FUNCTION KILL"));
    let writer = "redis.call('SET', 'w', 1) local a = 1 for i = 1, 3e7 do a = a + 1 end return a";
    runner.write_all(&command(&["EVAL", writer, "0"])).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(ask(&mut s, &["SCRIPT", "KILL"]).starts_with("-UNKILLABLE"));
    assert_eq!(read_line(&mut runner), ":30000001");
    assert_eq!(ask(&mut runner, &["GET", "w"]), "1");
}
