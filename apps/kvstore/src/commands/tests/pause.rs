//! `CLIENT PAUSE` and `CLIENT UNPAUSE`: sessions keep the commands a pause
//! holds and run them once it ends; replies and errors as redis-server
//! 7.0.15 gives them.

use super::Engine;
use crate::config::Config;
use crate::session::{Logged, Session};

fn run(s: &mut Session, engine: &mut Engine, now: u64, request: &str) -> Vec<u8> {
    s.feed(request.as_bytes());
    s.run(engine, now, |_| Logged::Answer);
    let out = s.output();
    s.consume(out.len());
    out
}

fn session(id: u64) -> Session {
    Session::new(id, &Config::default(), 1 << 20)
}

#[test]
fn a_write_pause_holds_writes_until_it_ends() {
    let mut engine = Engine::new(Config::default(), 0);
    let (mut admin, mut c) = (session(1), session(2));
    assert_eq!(
        run(&mut admin, &mut engine, 0, "CLIENT PAUSE 1000 WRITE\r\n"),
        b"+OK\r\n"
    );
    let out = run(&mut c, &mut engine, 10, "GET a\r\nSET a 1\r\nGET a\r\n");
    assert_eq!(out, b"$-1\r\n", "the read runs, the write waits");
    assert!(c.is_paused() && !c.wants_input());
    assert_eq!(engine.pause_deadline(10), Some(1000));
    for held in [
        "PUBLISH ch m",
        "EVAL \"return 1\" 0",
        "MULTI\r\nSET b 1\r\nEXEC",
    ] {
        let mut other = session(3);
        let out = run(&mut other, &mut engine, 20, &format!("{held}\r\n"));
        assert!(other.is_paused(), "{held} waits");
        assert!(!out.ends_with(b"*1\r\n+OK\r\n"), "{held}");
    }
    assert_eq!(run(&mut c, &mut engine, 999, ""), b"", "still paused");
    assert_eq!(run(&mut c, &mut engine, 1000, ""), b"+OK\r\n$1\r\n1\r\n");
    assert!(!c.is_paused());
}

#[test]
fn an_all_pause_holds_everything_and_unpause_ends_a_pause() {
    let mut engine = Engine::new(Config::default(), 0);
    let (mut admin, mut c, mut d) = (session(1), session(2), session(3));
    run(&mut c, &mut engine, 0, "SET k v PX 5\r\n");
    assert_eq!(
        run(&mut admin, &mut engine, 0, "CLIENT PAUSE 1000\r\n"),
        b"+OK\r\n"
    );
    assert_eq!(run(&mut c, &mut engine, 10, "PING\r\nGET k\r\n"), b"");
    // Nothing expires during a pause: the sweep leaves the key.
    assert!(engine.active_expire(10, 20).is_empty());
    assert_eq!(engine.key_count(), 1);
    // An unknown command gets its error; UNPAUSE waits too under ALL.
    assert_eq!(
        run(&mut d, &mut engine, 10, "NOPE\r\n"),
        b"-ERR unknown command 'NOPE', with args beginning with: \r\n"
    );
    assert_eq!(run(&mut d, &mut engine, 10, "CLIENT UNPAUSE\r\n"), b"");
    assert_eq!(run(&mut c, &mut engine, 1000, ""), b"+PONG\r\n$-1\r\n");
    assert_eq!(run(&mut d, &mut engine, 1000, ""), b"+OK\r\n");
    // A WRITE pause lets UNPAUSE through, which ends it at once.
    run(
        &mut admin,
        &mut engine,
        1000,
        "CLIENT PAUSE 100000 WRITE\r\n",
    );
    assert_eq!(run(&mut c, &mut engine, 1001, "SET x 1\r\n"), b"");
    assert_eq!(
        run(&mut d, &mut engine, 1002, "CLIENT UNPAUSE\r\n"),
        b"+OK\r\n"
    );
    assert_eq!(run(&mut c, &mut engine, 1003, ""), b"+OK\r\n");
}

#[test]
fn errors_are_worded_as_redis_words_them() {
    let mut engine = Engine::new(Config::default(), 0);
    let mut s = session(1);
    for (request, reply) in [
        ("CLIENT PAUSE abc", "-ERR timeout is not an integer or out of range\r\n"),
        ("CLIENT PAUSE 10 FOO", "-ERR CLIENT PAUSE mode must be WRITE or ALL\r\n"),
        ("CLIENT PAUSE -1", "-ERR timeout is negative\r\n"),
        (
            "CLIENT PAUSE 10 write x",
            "-ERR unknown subcommand or wrong number of arguments for 'pause'. Try CLIENT HELP.\r\n",
        ),
        ("CLIENT UNPAUSE", "+OK\r\n"),
        (
            "CLIENT NO-TOUCH on",
            "-ERR unknown subcommand 'NO-TOUCH'. Try CLIENT HELP.\r\n",
        ),
    ] {
        let got = run(&mut s, &mut engine, 0, &format!("{request}\r\n"));
        assert_eq!(String::from_utf8_lossy(&got), reply, "{request}");
    }
}
