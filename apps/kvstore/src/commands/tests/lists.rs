//! Lists: `LPUSH` and friends, the blocking pops, the list type among the
//! others, and how lists are logged, replayed and rewritten.

use alloc::format;

use super::*;
use crate::aof::{replay, rewrite};
use crate::store::{List, Store};

/// The list at `key`, as `LRANGE key 0 -1` answers it, space-separated.
fn range(s: &mut Session, key: &str) -> String {
    words(s.run(&format!("LRANGE {key} 0 -1"))).join(" ")
}

#[test]
fn pushes_and_pops_at_both_ends() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > RPUSH l a b c
        (integer) 3
        > LPUSH l x y
        (integer) 5
    "#,
    );
    assert_eq!(range(&mut s, "l"), "y x a b c", "the last LPUSHed first");
    s.transcript(
        r#"
        > LPOP l
        "y"
        > RPOP l
        "c"
        > LPOP l 2
        1) "x"
        2) "a"
        > RPOP l 10
        1) "b"
        // the last element took the key
        > EXISTS l
        (integer) 0
        > LPOP l
        (nil)
        > LPOP l 1
        (nil array)
        > LPOP l 0
        (nil array)
        > RPUSH l z
        (integer) 1
        > LPOP l 0
        (empty array)
        > LPOP l -1
        (error) ERR value is out of range, must be positive
        > LPOP l 1 1
        (error) ERR wrong number of arguments for 'lpop' command
        > LPUSHX nothing a
        (integer) 0
        > EXISTS nothing
        (integer) 0
        > RPUSHX l a b
        (integer) 3
        > LPUSHX l 0
        (integer) 4
    "#,
    );
    assert_eq!(range(&mut s, "l"), "0 z a b");
    s.transcript(
        r#"
        > LLEN l
        (integer) 4
        > LLEN nothing
        (integer) 0
    "#,
    );
}

#[test]
fn reading_by_index_and_range() {
    transcript(
        r#"
        > RPUSH l a b c d e
        (integer) 5
        > LINDEX l 0
        "a"
        > LINDEX l -1
        "e"
        > LINDEX l 5
        (nil)
        > LINDEX l x
        (error) ERR value is not an integer or out of range
        // the key first, as Redis
        > LINDEX nothing x
        (nil)
        > LRANGE l 1 -2
        1) "b"
        2) "c"
        3) "d"
        > LRANGE l -100 100
        1) "a"
        2) "b"
        3) "c"
        4) "d"
        5) "e"
        > LRANGE l 3 1
        (empty array)
        > LRANGE l 0 -10
        (empty array)
        > LRANGE nothing 0 -1
        (empty array)
        > LRANGE l a 1
        (error) ERR value is not an integer or out of range
    "#,
    );
}

#[test]
fn changing_elements_in_place() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > RPUSH l a b c b
        (integer) 4
        > LSET l 1 B
        OK
        > LSET l -1 end
        OK
    "#,
    );
    assert_eq!(range(&mut s, "l"), "a B c end");
    s.transcript(
        r#"
        > LSET l 4 x
        (error) ERR index out of range
        > LSET nothing 0 x
        (error) ERR no such key
        > LINSERT l BEFORE c x
        (integer) 5
        > LINSERT l after end last
        (integer) 6
        > LINSERT l AFTER missing x
        (integer) -1
        > LINSERT nothing AFTER a x
        (integer) 0
        > LINSERT l aft3r a x
        (error) ERR syntax error
    "#,
    );
    assert_eq!(range(&mut s, "l"), "a B x c end last");
    s.run("DEL l");
    s.run("RPUSH l x a x b x c x");
    assert_eq!(s.run("LREM l 2 x"), int(2));
    assert_eq!(range(&mut s, "l"), "a b x c x");
    assert_eq!(s.run("LREM l -1 x"), int(1));
    assert_eq!(range(&mut s, "l"), "a b x c");
    s.transcript(
        r#"
        > LREM l 0 x
        (integer) 1
        > LREM l 0 nope
        (integer) 0
        > LTRIM l 1 -1
        OK
    "#,
    );
    assert_eq!(range(&mut s, "l"), "b c");
    s.transcript(
        r#"
        > LTRIM l 5 10
        OK
        // an empty range takes the key
        > EXISTS l
        (integer) 0
        > LTRIM nothing 0 1
        OK
    "#,
    );
}

#[test]
fn lpos_finds_matches_by_rank_count_and_maxlen() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > RPUSH l a b c 1 2 3 c c
        (integer) 8
        > LPOS l c
        (integer) 2
        > LPOS l c RANK 2
        (integer) 6
        > LPOS l c RANK -1
        (integer) 7
        > LPOS l c RANK 4
        (nil)
        > LPOS l c COUNT 0
        1) (integer) 2
        2) (integer) 6
        3) (integer) 7
        > LPOS l c COUNT 2 RANK -1
        1) (integer) 7
        2) (integer) 6
        > LPOS l c COUNT 0 MAXLEN 3
        1) (integer) 2
        > LPOS l c COUNT 0 MAXLEN 3 RANK -1
        1) (integer) 7
        2) (integer) 6
        > LPOS l c COUNT 0 MAXLEN 7 RANK 2
        1) (integer) 6
        > LPOS nothing c COUNT 0
        (empty array)
        > LPOS nothing c
        (nil)
    "#,
    );
    assert!(
        matches!(s.run("LPOS l c RANK 0"), Reply::Error(e) if e.starts_with("ERR RANK can't be zero"))
    );
    s.transcript(
        r#"
        > LPOS l c COUNT -1
        (error) ERR COUNT can't be negative
        > LPOS l c MAXLEN -1
        (error) ERR MAXLEN can't be negative
        > LPOS l c COUNT
        (error) ERR syntax error
        > LPOS l c FOO 1
        (error) ERR syntax error
    "#,
    );
}

#[test]
fn moves_between_lists() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > RPUSH src a b c
        (integer) 3
        > RPOPLPUSH src dst
        "c"
        > LMOVE src dst LEFT RIGHT
        "a"
    "#,
    );
    assert_eq!(range(&mut s, "dst"), "c a");
    s.transcript(
        r#"
        // one element rotates
        > LMOVE src src right left
        "b"
        > LMOVE src dst RIGHT LEFT
        "b"
        > EXISTS src
        (integer) 0
        > LMOVE src dst LEFT LEFT
        (nil)
        > LMOVE src dst UP LEFT
        (error) ERR syntax error
    "#,
    );
    s.run("SET str x");
    assert_eq!(s.run("LMOVE dst str LEFT LEFT"), err(WRONGTYPE));
    assert_eq!(range(&mut s, "dst"), "b c a", "nothing moved");
    s.transcript(
        r#"
        > LMOVE str dst LEFT LEFT
        (error) WRONGTYPE Operation against a key holding the wrong kind of value
        // nothing to move: no type check
        > RPOPLPUSH nothing str
        (nil)
    "#,
    );
    // The rotation keeps a key's expiry.
    s.run("PEXPIRE dst 5000");
    s.run("RPOPLPUSH dst dst");
    assert_eq!(s.run("PTTL dst"), int(5000));
}

#[test]
fn lmpop_pops_from_the_first_list() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > RPUSH b 1 2 3
        (integer) 3
        > LMPOP 2 a b LEFT
        1) "b"
        2) 1) "1"
        > LMPOP 2 a b right COUNT 5
        1) "b"
        2) 1) "3"
           2) "2"
        > LMPOP 2 a b LEFT
        (nil array)
    "#,
    );
    s.run("SET a x");
    assert_eq!(s.run("LMPOP 2 a b LEFT"), err(WRONGTYPE));
    for (line, error) in [
        ("LMPOP 0 a LEFT", "ERR numkeys should be greater than 0"),
        ("LMPOP x a LEFT", "ERR numkeys should be greater than 0"),
        ("LMPOP 1 a bad", "ERR syntax error"),
        ("LMPOP 1 a LEFT bar", "ERR syntax error"),
        ("LMPOP 1 a RIGHT LEFT", "ERR syntax error"),
        ("LMPOP 1 a LEFT COUNT 1 COUNT 2", "ERR syntax error"),
        ("LMPOP 2 a b bad", "ERR syntax error"),
        ("LMPOP 5 a LEFT", "ERR syntax error"),
        (
            "LMPOP 1 a LEFT COUNT 0",
            "ERR count should be greater than 0",
        ),
        (
            "LMPOP 1 a LEFT COUNT x",
            "ERR count should be greater than 0",
        ),
        (
            "LMPOP 1 a",
            "ERR wrong number of arguments for 'lmpop' command",
        ),
    ] {
        assert_eq!(s.run(line), err(error), "{line}");
    }
}

#[test]
fn wrong_types_are_refused_both_ways() {
    let mut s = Session::new();
    s.run("SET str x");
    s.run("RPUSH l a");
    s.refuses_wrong_type(&[
        "LPUSH str a",
        "RPUSHX str a",
        "LPOP str",
        "LLEN str",
        "LRANGE str 0 -1",
        "LINDEX str 0",
        "LSET str 0 a",
        "LINSERT str BEFORE a b",
        "LREM str 0 a",
        "LTRIM str 0 1",
        "LPOS str a",
        "BLPOP str 0",
        "BLMPOP 0 1 str LEFT",
        "BRPOPLPUSH str l 0",
    ]);
    s.refuses_wrong_type(&["GET l", "APPEND l x", "HSET l f v", "INCR l"]);
    s.transcript(
        r#"
        > TYPE l
        list
        > OBJECT ENCODING l
        "quicklist"
        > SCAN 0 TYPE list
        1) "0"
        2) 1) "l"
    "#,
    );
}

#[test]
fn list_keys_expire_rename_copy_and_move_like_any_key() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > RPUSH l a b
        (integer) 2
        > PEXPIRE l 100
        (integer) 1
        > COPY l c
        (integer) 1
        > RENAME l r
        OK
        > PTTL r
        (integer) 100
        > MOVE c 1
        (integer) 1
    "#,
    );
    s.run("SELECT 1");
    assert_eq!(range(&mut s, "c"), "a b");
    s.run("SELECT 0");
    s.advance(101);
    assert_eq!(s.run("LLEN r"), int(0), "expired");
    assert_eq!(s.engine.store().used_memory(), 0);
}

#[test]
fn lists_count_toward_maxmemory() {
    let element = List::element_cost(10);
    let mut s = Session::full(Config::default(), element, "RPUSH l 0123456789 0123456789");
    s.transcript(
        r#"
        > RPUSH l x
        (error) OOM command not allowed when used memory > 'maxmemory'.
        > LINSERT l BEFORE x y
        (error) OOM command not allowed when used memory > 'maxmemory'.
        // an estimate: any new bytes
        > LSET l 0 9876543210
        (error) OOM command not allowed when used memory > 'maxmemory'.
        > LPOP l
        "0123456789"
        // room again
        > RPUSH l 0123456789
        (integer) 2
    "#,
    );
    s.run("LTRIM l 0 0");
    assert_eq!(s.engine.store().used_memory(), Store::cost(1, element));
}

#[test]
fn list_writes_log_their_effect() {
    let mut s = Session::new();
    s.logs(
        r#"
        > RPUSH l a b
        RPUSH l a b
        > LPUSH l x y
        LPUSH l x y
        > LPUSHX l z
        LPUSH l z
        > RPUSHX nothing z
        (nothing)
        > LPOP l
        LPOP l
        > RPOP l 1
        RPOP l 1
        > RPOP nothing 3
        (nothing)
        > LSET l 0 q
        LSET l 0 q
        > LINSERT l AFTER q r
        LINSERT l AFTER q r
        > LINSERT l AFTER none r
        (nothing)
        > LREM l 0 none
        (nothing)
        > LREM l 0 r
        LREM l 0 r
        // nothing trimmed
        > LTRIM l 0 -1
        (nothing)
        > RPOPLPUSH l m
        LMOVE l m RIGHT LEFT
        > LMPOP 2 none l LEFT COUNT 9
        LPOP l 2
        > BLPOP m 1
        LPOP m
        // reads
        > LRANGE l 0 -1
        (nothing)
    "#,
    );
}

#[test]
fn while_a_rewrite_runs_list_changes_are_logged_as_they_are() {
    let mut s = Session::new();
    s.run("RPUSH l a b");
    s.run("EXPIRE l 60");
    let at = s.now + 60_000;
    s.engine.aof_rewrite_started(s.now);
    // The new log does not hold `l` yet: a push is logged as it is (it
    // replays there onto a missing key, and the scan's record of `l`
    // replaces what it built).
    s.logs(
        r#"
        > RPUSH l c
        RPUSH l c
        // kept all
        > LTRIM l 0 5
        (nothing)
    "#,
    );
    // But an LSET would fail there: it logs the whole list.
    assert_eq!(
        s.logged("LSET l 0 z"),
        [
            "DEL l".to_string(),
            "RPUSH l z b c".into(),
            format!("PEXPIREAT l {at}")
        ]
    );
    // And a move out of it would move nothing there: a pop and a push.
    s.logs(
        r#"
        > LMOVE l m LEFT RIGHT
        LPOP l
        RPUSH m z
        > LMOVE l l LEFT RIGHT
        LMOVE l l LEFT RIGHT
        // Emptied: a DEL after, as the new log's copy may hold other elements.
        > LPOP l 5
        LPOP l 2
        DEL l
    "#,
    );
    // Once the scan is past the keys, every change is logged as usual.
    while !s.engine.aof_rewrite_step(1, &mut Vec::new()) {}
    s.run("RPUSH l a b");
    s.logs(
        r#"
        > LSET l 0 z
        LSET l 0 z
        > LMOVE l m LEFT LEFT
        LMOVE l m LEFT LEFT
        > LPOP l 5
        LPOP l 1
    "#,
    );
    s.engine.aof_rewrite_finished(Some(0), 0);
    s.run("RPUSH l a");
    assert_eq!(s.logged("LSET l 0 z"), ["LSET l 0 z"]);
}

#[test]
fn a_list_emptied_before_the_scan_reaches_it_goes_from_the_new_log_too() {
    // While the scan has not reached `k`, the new log holds only what was
    // pushed since the rewrite began: `[x]`, not `[x b1 .. b5]`. This
    // LTRIM empties the real list but would keep `x` there; the DEL logged
    // after it keeps the key's type free for the HSET that follows.
    let mut s = Session::new();
    // In database 1, which the scan begins after a first step.
    s.run("SELECT 1");
    s.run("RPUSH k b1 b2 b3 b4 b5");
    let mut first = true;
    let new_log = s.rewrite(1, |s| {
        let mut records = Effects::default();
        if core::mem::take(&mut first) {
            for line in ["LPUSH k x", "LTRIM k -5 0", "HSET k f v"] {
                records.append(s.exec(line).effects);
            }
        }
        records
    });
    let hash = |e: &Engine| e.databases()[1].get(b"k").and_then(|k| k.hash().cloned());
    assert!(hash(&s.engine).is_some());
    assert_eq!(hash(&load(&new_log, s.now)), hash(&s.engine));
}

#[test]
fn a_rewrite_replays_a_list_pushed_to_while_it_runs() {
    // A list far longer than a step, pushed to from both ends before and
    // after the scan reaches it: the new log replays to the list as it
    // ended, and holds each push once (a push is never logged whole).
    let mut s = Session::new();
    for i in 0..40 {
        s.run(&format!("RPUSH k{i} x"));
    }
    let items: Vec<String> = (0..1000).map(|i| format!("e{i}")).collect();
    s.run(&format!("RPUSH big {}", items.join(" ")));
    let mut pushes = 0;
    let new_log = s.rewrite(2, |s| {
        pushes += 1;
        let mut effects = s.exec(&format!("LPUSH big l{pushes}")).effects;
        effects.append(s.exec(&format!("RPUSH big r{pushes}")).effects);
        effects
    });
    assert!(pushes >= 10);
    assert_eq!(live(&load(&new_log, s.now), s.now), live(&s.engine, s.now));
    let mut records = 0;
    replay(&new_log, |_| records += 1);
    // 41 keys' records (the big list in 8 of them), 2 per step between,
    // and at most one DEL for the big list.
    assert!(records <= 40 + 8 + 2 * pushes + 1, "{records} records");
}

#[test]
fn the_log_and_a_rewrite_reproduce_lists() {
    let mut s = Session::new();
    let mut long = String::from("RPUSH long");
    for i in 0..300 {
        long.push_str(&format!(" e{i}"));
    }
    let log = s.log_lines(&format!(
        r#"
        RPUSH q a b c d
        LPUSH q z
        LPOP q
        RPOP q 2
        LINSERT q BEFORE b x
        LSET q -1 y
        LREM q 1 x
        RPUSH t 1 2 3 4 5
        LTRIM t 1 3
        RPOPLPUSH t q
        LMOVE t q LEFT RIGHT
        LMPOP 1 t LEFT COUNT 9
        RPUSH v only
        EXPIRE v 100
        {long}
    "#
    ));
    let now = s.now;
    s.assert_reloads(&log);
    let compact = rewrite(s.engine.store(), now);
    let mut records = Vec::new();
    replay(&compact, |args| records.push(args.len()));
    // q, v and its expiry, and the long list in chunks of 128.
    assert_eq!(records.len(), 1 + 2 + 3);
    s.assert_reloads(&compact);
}

#[test]
fn keyspace_events_of_list_commands() {
    let mut s = Session::new();
    let mut sub = ClientCtx::new(99);
    s.exec_as(&mut sub, "PSUBSCRIBE __keyevent@0__:*");
    s.run("CONFIG SET notify-keyspace-events El$g");
    s.run("RPUSH l a b");
    s.run("LPUSH l c");
    s.run("LMOVE l m LEFT RIGHT");
    s.run("LSET l 0 z");
    s.run("LINSERT l BEFORE z y");
    s.run("LREM l 0 y");
    s.run("LTRIM l 0 0");
    s.run("RPOP l");
    let events: Vec<String> = s
        .engine
        .take_messages()
        .into_iter()
        .map(|(_, bytes)| {
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let parts: Vec<&str> = text.split("\r\n").collect();
            format!("{} {}", &parts[6]["__keyevent@0__:".len()..], parts[8])
        })
        .collect();
    assert_eq!(
        events,
        [
            "rpush l",
            "lpush l",
            "rpush m",
            "lpop l",
            "lset l",
            "linsert l",
            "lrem l",
            "ltrim l",
            "rpop l",
            "del l"
        ]
    );
}

#[test]
fn blocked_clients_are_served_in_order_of_arrival() {
    let mut s = Session::new();
    let mut first = ClientCtx::new(1);
    let mut second = ClientCtx::new(2);
    let out = s.exec_as(&mut first, "BLPOP q 0");
    assert!(first.is_blocked() && out.effects.is_empty());
    s.exec_as(&mut second, "BRPOP other q 0");
    assert!(second.is_blocked());
    assert_eq!(s.engine.blocked_clients(), 2);
    assert_eq!(
        s.run("INFO clients")
            .to_bytes()
            .windows(17)
            .filter(|w| w == b"blocked_clients:2")
            .count(),
        1
    );
    // One push of three: both are served, the first one first; the pusher
    // logs its push, then what each served command did.
    let out = s.exec("RPUSH q a b c");
    assert_eq!(out.reply, int(3));
    assert_eq!(shown(&out.effects), ["RPUSH q a b c", "LPOP q", "RPOP q"]);
    assert_eq!(
        s.engine.take_unblocked(),
        [
            (1, array(&[bulk("q"), bulk("a")])),
            (2, array(&[bulk("q"), bulk("c")])),
        ]
    );
    assert_eq!(range(&mut s, "q"), "b");
    assert_eq!(s.engine.blocked_clients(), 0);
}

#[test]
fn a_blocking_command_with_data_answers_at_once() {
    let mut s = Session::after("RPUSH a 1");
    assert_eq!(s.run("BLPOP nothing a 0"), array(&[bulk("a"), bulk("1")]));
    s.transcript(
        r#"
        > RPUSH a 1 2
        (integer) 2
        > BLMOVE a b RIGHT LEFT 0
        "2"
        > BRPOPLPUSH a b 0
        "1"
        > BLMPOP 0 2 nothing b LEFT COUNT 5
        1) "b"
        2) 1) "1"
           2) "2"
    "#,
    );
    assert!(!s.client.is_blocked());
}

#[test]
fn timeouts_are_seconds_as_decimals() {
    let mut s = Session::new();
    let mut c = ClientCtx::new(1);
    for (line, error) in [
        ("BLPOP l -1", "ERR timeout is negative"),
        ("BLPOP l x", "ERR timeout is not a float or out of range"),
        ("BLPOP l 1e300", "ERR timeout is out of range"),
        ("BLMOVE a b LEFT UP 0", "ERR syntax error"),
        (
            "BLMPOP x 1 l LEFT",
            "ERR timeout is not a float or out of range",
        ),
        ("BLMPOP 0 0 l LEFT", "ERR numkeys should be greater than 0"),
    ] {
        assert_eq!(s.exec_as(&mut c, line).reply, err(error), "{line}");
        assert!(!c.is_blocked());
    }
    s.exec_as(&mut c, "BLPOP l 0.25");
    assert_eq!(s.engine.next_block_deadline(), Some(s.now + 250));
    s.engine.unblock_timed_out(s.now + 249);
    assert!(s.engine.take_unblocked().is_empty());
    s.engine.unblock_timed_out(s.now + 250);
    assert_eq!(s.engine.take_unblocked(), [(1, Reply::Array(None))]);
    c.unblocked();
    s.exec_as(&mut c, "BLMOVE a b LEFT LEFT 0.001");
    s.engine.unblock_timed_out(s.now + 1);
    assert_eq!(
        s.engine.take_unblocked(),
        [(1, nil())],
        "a null bulk string"
    );
}

#[test]
fn inside_exec_blocking_commands_do_not_block() {
    let mut s = Session::new();
    s.run("RPUSH l a");
    s.run("MULTI");
    s.run("BLPOP l 0");
    s.run("BLPOP l 0");
    s.run("BRPOPLPUSH l m 0");
    s.run("BLMPOP 0 1 l LEFT");
    assert_eq!(
        s.run("EXEC"),
        array(&[
            array(&[bulk("l"), bulk("a")]),
            Reply::Array(None),
            nil(),
            Reply::Array(None)
        ])
    );
    assert!(!s.client.is_blocked());
    assert_eq!(s.engine.blocked_clients(), 0);
}

#[test]
fn a_transaction_serves_once_it_is_done() {
    let mut s = Session::new();
    let mut c = ClientCtx::new(1);
    s.exec_as(&mut c, "BLPOP l 0");
    s.run("MULTI");
    s.run("LPUSH l a");
    s.run("DEL l");
    s.run("SET l x");
    s.run("EXEC");
    assert!(
        s.engine.take_unblocked().is_empty(),
        "no list when it ended"
    );
    s.run("DEL l");
    s.run("MULTI");
    s.run("LPUSH l a");
    s.run("LPUSH l b");
    let out = s.exec("EXEC");
    assert_eq!(
        s.engine.take_unblocked(),
        [(1, array(&[bulk("l"), bulk("b")]))]
    );
    assert_eq!(shown(&out.effects), ["LPUSH l a", "LPUSH l b", "LPOP l"]);
}

#[test]
fn served_moves_chain_and_wrong_types_answer_errors() {
    let mut s = Session::new();
    let (mut a, mut b, mut c) = (ClientCtx::new(1), ClientCtx::new(2), ClientCtx::new(3));
    // a moves list1 -> list2, b waits on list2 and moves it on to list3.
    s.exec_as(&mut a, "BLMOVE list1 list2 RIGHT LEFT 0");
    s.exec_as(&mut b, "BLMOVE list2 list3 LEFT RIGHT 0");
    let out = s.exec("RPUSH list1 foo");
    assert_eq!(
        shown(&out.effects),
        [
            "RPUSH list1 foo",
            "LMOVE list1 list2 RIGHT LEFT",
            "LMOVE list2 list3 LEFT RIGHT"
        ]
    );
    assert_eq!(
        s.engine.take_unblocked(),
        [(1, bulk("foo")), (2, bulk("foo"))]
    );
    assert_eq!(range(&mut s, "list3"), "foo");
    // A wrong destination type is found when served: an error for that
    // client, the element stays, the next waiter is served.
    s.run("SET bad x");
    a.unblocked();
    b.unblocked();
    s.exec_as(&mut a, "BRPOPLPUSH src bad 0");
    s.exec_as(&mut c, "BRPOPLPUSH src good 0");
    s.run("RPUSH src a b c");
    assert_eq!(
        s.engine.take_unblocked(),
        [(1, err(WRONGTYPE)), (3, bulk("c"))]
    );
    assert_eq!(range(&mut s, "src"), "a b");
}

#[test]
fn keys_moved_into_place_and_swapped_databases_serve() {
    let mut s = Session::new();
    let mut c = ClientCtx::new(1);
    s.exec_as(&mut c, "BLPOP foo 0");
    s.run("RPUSH bob abc def");
    s.run("RENAME bob foo");
    assert_eq!(
        s.engine.take_unblocked(),
        [(1, array(&[bulk("foo"), bulk("abc")]))]
    );
    c.unblocked();
    s.exec_as(&mut c, "SELECT 9");
    s.exec_as(&mut c, "BRPOP k 5");
    s.run("SELECT 1");
    s.run("RPUSH k hello");
    let out = s.exec("SWAPDB 1 9");
    assert_eq!(
        s.engine.take_unblocked(),
        [(1, array(&[bulk("k"), bulk("hello")]))]
    );
    assert_eq!(shown(&out.effects), ["SWAPDB 1 9", "SELECT 9", "RPOP k"]);
}

#[test]
fn client_unblock_and_closed_connections() {
    let mut s = Session::new();
    let mut c = ClientCtx::new(5);
    s.exec_as(&mut c, "BLPOP l 0");
    s.transcript(
        r#"
        > CLIENT UNBLOCK 5
        (integer) 1
        > CLIENT UNBLOCK 5
        (integer) 0
    "#,
    );
    assert_eq!(s.engine.take_unblocked(), [(5, Reply::Array(None))]);
    c.unblocked();
    s.exec_as(&mut c, "BLPOP l 0");
    s.run("CONFIG RESETSTAT");
    assert_eq!(s.run("CLIENT UNBLOCK 5 ERROR"), int(1));
    assert_eq!(
        s.engine.take_unblocked(),
        [(5, err("UNBLOCKED client unblocked via CLIENT UNBLOCK"))]
    );
    // The error is the BLPOP's failure, as Redis counts it.
    let Reply::Verbatim(info) = s.run("INFO errorstats commandstats") else {
        panic!("INFO is not text");
    };
    let info = String::from_utf8_lossy(&info);
    assert!(info.contains("errorstat_UNBLOCKED:count=1\r\n"), "{info}");
    assert!(
        info.contains("rejected_calls=0,failed_calls=1\r\n"),
        "{info}"
    );
    s.transcript(
        r#"
        > CLIENT UNBLOCK x
        (error) ERR value is not an integer or out of range
        > CLIENT UNBLOCK 5 LATER
        (error) ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR
    "#,
    );
    c.unblocked();
    s.exec_as(&mut c, "BLPOP l 0");
    s.engine.client_gone(5);
    assert_eq!(s.engine.blocked_clients(), 0);
    s.run("RPUSH l a");
    assert!(s.engine.take_unblocked().is_empty());
    assert_eq!(s.run("LLEN l"), int(1), "nobody took it");
}
