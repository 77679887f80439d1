//! `MULTI`, `EXEC`, `DISCARD`, `WATCH`, `UNWATCH`.

use super::*;

#[test]
fn a_transaction_queues_then_runs_in_order() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > MULTI
        OK
        > SET a 1
        QUEUED
        > INCR a
        QUEUED
        > GET a
        QUEUED
        > GET b
        QUEUED
    "#,
    );
    let out = s.exec("EXEC");
    assert_eq!(
        out.reply,
        Reply::array(vec![
            Reply::ok(),
            Reply::Integer(2),
            Reply::bulk("2"),
            Reply::Bulk(None)
        ])
    );
    assert_eq!(
        shown(&out.effects),
        ["SET a 1", "SET a 2 KEEPTTL"],
        "one batch for the log"
    );
    assert_eq!(s.run("EXEC"), Reply::error("ERR EXEC without MULTI"));
}

#[test]
fn errors_while_queuing_abort_and_runtime_errors_do_not() {
    let mut s = Session::after("MULTI");
    assert!(matches!(s.run("NOPE"), Reply::Error(e) if e.starts_with("ERR unknown command")));
    assert_eq!(
        s.run("GET"),
        Reply::error("ERR wrong number of arguments for 'get' command")
    );
    s.transcript(
        r#"
        > SET a 1
        QUEUED
        > EXEC
        (error) EXECABORT Transaction discarded because of previous errors.
        // nothing ran
        > GET a
        (nil)
    "#,
    );
    // A command that fails when it runs fails alone.
    s.run("SET t text");
    s.run("MULTI");
    s.run("INCR t");
    s.run("SET u 1");
    assert_eq!(
        s.run("EXEC"),
        Reply::array(vec![
            Reply::error("ERR value is not an integer or out of range"),
            Reply::ok()
        ])
    );
}

#[test]
fn discard_nesting_and_watch_inside() {
    let mut s = Session::new();
    assert_eq!(s.run("DISCARD"), Reply::error("ERR DISCARD without MULTI"));
    s.transcript(
        r#"
        > MULTI
        OK
        > MULTI
        (error) ERR MULTI calls can not be nested
        > WATCH a
        (error) ERR WATCH inside MULTI is not allowed
        > SET a 1
        QUEUED
        > DISCARD
        OK
        > GET a
        (nil)
    "#,
    );
}

#[test]
fn a_watched_key_changed_by_another_client_aborts_exec() {
    let mut s = Session::new();
    let mut other = ClientCtx::new(9);
    let args = |line: &str| {
        line.split(' ')
            .map(|a| a.as_bytes().to_vec())
            .collect::<Vec<_>>()
    };
    s.run("SET balance 10");
    assert_eq!(s.run("WATCH balance missing"), Reply::ok());
    s.run("MULTI");
    s.run("INCRBY balance 5");
    s.engine
        .execute(&args("SET balance 100"), &mut other, s.now);
    s.transcript(
        r#"
        // aborted
        > EXEC
        (nil array)
        > GET balance
        "100"
    "#,
    );
    // Unchanged keys let it run; EXEC forgets the watches.
    s.run("WATCH balance");
    s.run("MULTI");
    s.run("INCRBY balance 5");
    assert_eq!(s.run("EXEC"), Reply::array(vec![Reply::Integer(105)]));
    // Creating a watched missing key counts as a change, as does expiry.
    s.run("WATCH fresh");
    s.engine.execute(&args("SET fresh 1"), &mut other, s.now);
    s.run("MULTI");
    assert_eq!(s.run("EXEC"), Reply::Array(None));
    s.run("SET short 1 PX 10");
    s.run("WATCH short");
    s.advance(20);
    s.run("MULTI");
    assert_eq!(s.run("EXEC"), Reply::Array(None), "it expired");
    // UNWATCH drops them.
    s.run("WATCH balance");
    s.engine.execute(&args("SET balance 1"), &mut other, s.now);
    s.run("UNWATCH");
    s.run("MULTI");
    assert_eq!(s.run("EXEC"), Reply::array(vec![]));
}

#[test]
fn a_malformed_exec_aborts_whether_or_not_a_transaction_is_open() {
    let mut s = Session::new();
    let abort = Reply::error(
        "EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command",
    );
    assert_eq!(s.run("EXEC extra"), abort);
    s.run("MULTI");
    s.run("SET a 1");
    s.transcript(r#"
        > EXEC extra
        (error) EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command
        // it was discarded
        > EXEC
        (error) ERR EXEC without MULTI
        > GET a
        (nil)
    "#);
    s.transcript(
        r#"
        // UNWATCH inside MULTI is queued, as in Redis.
        > MULTI
        OK
        > UNWATCH
        QUEUED
        > EXEC
        1) OK
    "#,
    );
    // An unknown subcommand is refused when queued.
    s.run("MULTI");
    assert!(matches!(s.run("CONFIG NOSUCH"), Reply::Error(_)));
    assert!(matches!(s.run("EXEC"), Reply::Error(e) if e.starts_with("EXECABORT")));
}
