//! Streams: entries, trimming, reading and blocking, consumer groups,
//! and their records in the log.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::*;
use crate::aof::{rewrite, HEADER};
use faultline_rng::Rng;

/// An entry reply: `[id, [field, value, ...]]`.
fn entry(id: &str, fields: &[&str]) -> Reply {
    array(&[bulk(id), bulks(fields)])
}

#[test]
fn xadd_picks_ids_and_xrange_reads_them() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > XADD s * a 1
        "1000000-0"
        > XADD s * b 2
        "1000000-1"
        > XADD s 1000000-* c 3
        "1000000-2"
        > XADD s 2000000 d 4
        "2000000-0"
        > XADD s 2000001-5 e 5
        "2000001-5"
        > TYPE s
        stream
        > XLEN s
        (integer) 5
        > XLEN none
        (integer) 0
        > XRANGE s - + COUNT 2
        1) 1) "1000000-0"
           2) 1) "a"
              2) "1"
        2) 1) "1000000-1"
           2) 1) "b"
              2) "2"
        > XRANGE s (1000000-2 2000001
        1) 1) "2000000-0"
           2) 1) "d"
              2) "4"
        2) 1) "2000001-5"
           2) 1) "e"
              2) "5"
        > XREVRANGE s + (1000000-1 COUNT 1
        1) 1) "2000001-5"
           2) 1) "e"
              2) "5"
        // Redis 7.0: a null array for COUNT 0 on a stream.
        > XRANGE s - + COUNT 0
        (nil array)
        > XRANGE s + -
        (empty array)
        > XRANGE none - +
        (empty array)
        > XADD s NOMKSTREAM 3000000 f 6
        "3000000-0"
        > XADD t NOMKSTREAM * f 6
        (nil)
        > EXISTS t
        (integer) 0
    "#,
    );
    s.run("SET str x");
    for line in [
        "XADD str * a b",
        "XLEN str",
        "XRANGE str - +",
        "XDEL str 1",
        "XREAD STREAMS str 0",
    ] {
        assert_eq!(s.run(line), crate::commands::errors::wrong_type(), "{line}");
    }
    assert_eq!(s.run("LPUSH s x"), crate::commands::errors::wrong_type());
}

#[test]
fn errors_are_worded_as_redis_words_them() {
    let mut s = Session::after("XADD s 5-5 a b");
    for (line, error) in [
        ("XADD s 0-0 a b", "ERR The ID specified in XADD must be greater than 0-0"),
        ("XADD s 5-5 a b", "ERR The ID specified in XADD is equal or smaller than the target stream top item"),
        ("XADD s 4-* a b", "ERR The ID specified in XADD is equal or smaller than the target stream top item"),
        ("XADD s abc a b", "ERR Invalid stream ID specified as stream command argument"),
        ("XADD s 6-1 a", "ERR wrong number of arguments for 'xadd' command"),
        ("XADD s MAXLEN -1 * a b", "ERR The MAXLEN argument must be >= 0."),
        ("XADD s MAXLEN abc * a b", "ERR value is not an integer or out of range"),
        ("XADD s MAXLEN = 1 LIMIT 5 * a b", "ERR syntax error, LIMIT cannot be used without the special ~ option"),
        ("XADD s MAXLEN 1 MINID 5 * a b", "ERR syntax error, MAXLEN and MINID options at the same time are not compatible"),
        ("XADD s LIMIT -1 * a b", "ERR The LIMIT argument must be >= 0."),
        ("XRANGE s (- +", "ERR Invalid stream ID specified as stream command argument"),
        ("XRANGE s (18446744073709551615-18446744073709551615 +", "ERR invalid start ID for the interval"),
        ("XRANGE s - (0-0", "ERR invalid end ID for the interval"),
        ("XRANGE s - + COUNT", "ERR syntax error"),
        ("XTRIM s foo 1", "ERR syntax error"),
        ("XTRIM s MAXLEN 1 LIMIT 1", "ERR syntax error, LIMIT cannot be used without the special ~ option"),
        ("XDEL s 1-0 abc", "ERR Invalid stream ID specified as stream command argument"),
        ("XSETID s 0-1", "ERR The ID specified in XSETID is smaller than the target stream top item"),
        ("XSETID s 99-0 ENTRIESADDED 0", "ERR The entries_added specified in XSETID is smaller than the target stream length"),
        ("XSETID s 99-0 ENTRIESADDED -1", "ERR entries_added must be positive"),
        ("XSETID none 1-1", "ERR no such key"),
        ("XSETID s 99-0 MAXDELETEDID 100-0", "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id"),
        ("XREAD STREAMS s1 s2 0", "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified."),
        ("XREAD BLOCK -1 STREAMS s 0", "ERR timeout is negative"),
        ("XREAD BLOCK x STREAMS s 0", "ERR timeout is not an integer or out of range"),
        ("XREAD STREAMS s >", "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option."),
    ] {
        assert_eq!(s.run(line), err(error), "{line}");
    }
    s.run("XSETID s 18446744073709551615-18446744073709551615");
    assert_eq!(
        s.run("XADD s * a b"),
        err("ERR The stream has exhausted the last possible ID, unable to add more items")
    );
}

#[test]
fn trims_exactly_or_by_whole_nodes() {
    let mut s = Session::after("CONFIG SET stream-node-max-entries 10");
    for i in 1..=100 {
        s.run(&format!("XADD s {i} f v"));
    }
    assert_eq!(
        s.logged("XADD s MAXLEN ~ 55 LIMIT 30 101 f v"),
        ["XADD s 101-0 f v", "XTRIM s MAXLEN = 71"]
    );
    s.transcript(
        r#"
        > XLEN s
        (integer) 71
        > XTRIM s MAXLEN ~ 55
        (integer) 10
        > XTRIM s MAXLEN 55
        (integer) 6
        > XTRIM s MINID 50
        (integer) 3
    "#,
    );
    assert_eq!(s.logged("XTRIM s MINID 50"), Vec::<String>::new());
    s.expect(&[
        ("XRANGE s - - ", array(&[])),
        ("XTRIM s MAXLEN 0", int(52)),
        ("EXISTS s", int(1)), // an empty stream stays
        (
            "XADD s 5 f v",
            err("ERR The ID specified in XADD is equal or smaller than the target stream top item"),
        ),
    ]);
    s.run("CONFIG SET stream-node-max-entries 2");
    s.run("DEL s");
    for i in 1..=3 {
        s.run(&format!("XADD s {i} f v"));
    }
    s.transcript(
        r#"
        > XTRIM s MAXLEN ~ 0 LIMIT 1
        (integer) 0
        > XTRIM s MAXLEN ~ 0 LIMIT 2
        (integer) 2
    "#,
    );
}

#[test]
fn xdel_logs_what_it_removed() {
    let mut s = Session::new();
    s.run("XADD s 1 a b");
    s.run("XADD s 2 a b");
    assert_eq!(s.logged("XDEL s 1 3 1"), ["XDEL s 1-0"]);
    assert_eq!(s.run("XDEL s 1 3"), int(0));
    assert_eq!(s.logged("XDEL none 1"), Vec::<String>::new());
    assert_eq!(s.run("XRANGE s - +"), array(&[entry("2-0", &["a", "b"])]));
}

#[test]
fn xread_reads_after_ids_and_blocks_until_xadd() {
    let mut s = Session::new();
    s.run("XADD a 1 f 1");
    s.run("XADD a 2 f 2");
    assert_eq!(
        s.run("XREAD COUNT 1 STREAMS a none 0 0"),
        Reply::Keyed(alloc::vec![bulk("a"), array(&[entry("1-0", &["f", "1"])])])
    );
    assert_eq!(
        s.wire("XREAD STREAMS a 1"),
        "*1\r\n*2\r\n$1\r\na\r\n*1\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\nf\r\n$1\r\n2\r\n"
    );
    assert_eq!(s.run("XREAD STREAMS a $"), Reply::Array(None));
    s.run("HELLO 3");
    assert_eq!(
        s.wire("XREAD STREAMS a 1"),
        "%1\r\n$1\r\na\r\n*1\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\nf\r\n$1\r\n2\r\n"
    );
    assert_eq!(s.wire("XREAD STREAMS a $"), "_\r\n");
    // Blocking: `$` is the last ID when the client blocked.
    let mut c = ClientCtx::new(1);
    let out = s.exec_as(&mut c, "XREAD BLOCK 0 STREAMS b a $ $");
    assert!(c.is_blocked() && out.effects.is_empty());
    let mut d = ClientCtx::new(2);
    s.exec_as(&mut d, "XREAD BLOCK 100 STREAMS a $");
    s.run("XADD b 5 g 5");
    assert_eq!(
        s.engine.take_unblocked(),
        [(
            1,
            Reply::Keyed(alloc::vec![bulk("b"), array(&[entry("5-0", &["g", "5"])])])
        )]
    );
    s.engine.unblock_timed_out(s.now + 99);
    assert!(s.engine.take_unblocked().is_empty());
    s.engine.unblock_timed_out(s.now + 100);
    assert_eq!(s.engine.take_unblocked(), [(2, Reply::Array(None))]);
}

/// A random stream command over two keys.
pub(super) fn random_stream_command(rng: &mut Rng) -> String {
    let k = ["s1", "s2"][rng.below(2) as usize];
    let id = || -> String { String::new() };
    let _ = id;
    let ms = rng.below(40);
    let g = ["g1", "g2"][rng.below(2) as usize];
    let c = ["c1", "c2", "c3"][rng.below(3) as usize];
    let approx = ["", "= ", "~ "][rng.below(3) as usize];
    match rng.below(22) {
        0..=3 => format!("XADD {k} * f{} v", rng.below(3)),
        4 => format!("XADD {k} {ms}-* f v"),
        5 => format!("XADD {k} MAXLEN {approx}{} * f v", rng.below(6)),
        6 => format!("XADD {k} MINID {approx}{ms} * f v"),
        7 => format!("XDEL {k} {ms}-0 {}-1", rng.below(40)),
        8 => format!("XTRIM {k} MAXLEN {approx}{}", rng.below(8)),
        9 => format!(
            "XGROUP CREATE {k} {g} {} MKSTREAM",
            ["$", "0", "5"][rng.below(3) as usize]
        ),
        10 => format!("XGROUP SETID {k} {g} {}", ["$", "0"][rng.below(2) as usize]),
        11 => format!("XGROUP CREATECONSUMER {k} {g} {c}"),
        12 => format!("XGROUP DELCONSUMER {k} {g} {c}"),
        13 | 14 => format!(
            "XREADGROUP GROUP {g} {c} COUNT {} STREAMS {k} >",
            rng.below(4)
        ),
        15 => format!("XREADGROUP GROUP {g} {c} NOACK STREAMS {k} >"),
        16 => format!("XREADGROUP GROUP {g} {c} STREAMS {k} 0"),
        17 => format!("XACK {k} {g} {ms}-0 {}-1", rng.below(40)),
        18 => format!("XCLAIM {k} {g} {c} 0 {ms}-0 {}-1", rng.below(40)),
        19 => format!("XAUTOCLAIM {k} {g} {c} 0 0 COUNT {}", 1 + rng.below(3)),
        20 => format!("XGROUP DESTROY {k} {g}"),
        _ => format!("XSETID {k} {}-5", 1_000_000 + rng.below(100)),
    }
}

#[test]
fn replay_and_rewrite_reproduce_streams() {
    let mut rng = Rng::new(99);
    for round in 0..60 {
        let mut s = Session::new();
        let mut log = HEADER.to_vec();
        for _ in 0..120 {
            if rng.below(3) == 0 {
                s.advance(rng.below(3));
            }
            let line = random_stream_command(&mut rng);
            log.extend(s.exec(&line).effects.to_bytes());
        }
        assert_eq!(
            entries(&load(&log, s.now)),
            entries(&s.engine),
            "round {round}: replay"
        );
        let compact = rewrite(s.engine.store(), s.now);
        assert_eq!(
            entries(&load(&compact, s.now)),
            entries(&s.engine),
            "round {round}: rewrite"
        );
    }
}

#[test]
fn groups_deliver_track_pending_and_claim() {
    let mut s = Session::new();
    for (line, error) in [
        ("XGROUP CREATE g1 grp $", "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically."),
        ("XGROUP CREATE g1 grp 0 ENTRIESREAD -2", "ERR value for ENTRIESREAD must be positive or -1"),
        ("XGROUP CREATE g1 grp 0 FOO", "ERR unknown subcommand or wrong number of arguments for 'CREATE'. Try XGROUP HELP."),
        // SETID takes `-` and `+`, CREATE does not (redis-server 7.0.15).
        ("XGROUP CREATE g1 grp + MKSTREAM", "ERR Invalid stream ID specified as stream command argument"),
        ("XGROUP CREATE g1 grp - MKSTREAM", "ERR Invalid stream ID specified as stream command argument"),
    ] {
        assert_eq!(s.run(line), err(error), "{line}");
    }
    assert_eq!(
        s.logged("XGROUP CREATE g1 grp $ MKSTREAM"),
        ["XGROUP CREATE g1 grp 0-0 MKSTREAM ENTRIESREAD -1"]
    );
    s.transcript(
        r#"
        > XGROUP CREATE g1 grp $ MKSTREAM
        (error) BUSYGROUP Consumer Group name already exists
        > XGROUP CREATECONSUMER g1 nogrp c
        (error) NOGROUP No such consumer group 'nogrp' for key name 'g1'
        > XGROUP CREATECONSUMER g1 grp c
        (integer) 1
        > XGROUP CREATECONSUMER g1 grp c
        (integer) 0
        > XGROUP DELCONSUMER g1 grp c
        (integer) 0
        > XGROUP DESTROY g1 grp
        (integer) 1
        > XGROUP DESTROY g1 grp
        (integer) 0
    "#,
    );
    for i in 1..=3 {
        s.run(&format!("XADD g1 {i} k {i}"));
    }
    s.run("XGROUP CREATE g1 grp 0");
    assert_eq!(
        s.logged("XREADGROUP GROUP grp alice COUNT 1 STREAMS g1 >"),
        [
            "XGROUP CREATECONSUMER g1 grp alice",
            "XCLAIM g1 grp alice 0 1-0 TIME 1000000 RETRYCOUNT 1 FORCE JUSTID",
            "XGROUP SETID g1 grp 1-0 ENTRIESREAD 1"
        ]
    );
    s.advance(10);
    s.transcript(
        r#"
        > XREADGROUP GROUP grp alice STREAMS g1 0
        1) 1) "g1"
           2) 1) 1) "1-0"
                 2) 1) "k"
                    2) "1"
        > XREADGROUP GROUP nogrp alice STREAMS g1 >
        (error) NOGROUP No such key 'g1' or consumer group 'nogrp' in XREADGROUP with GROUP option
        > XDEL g1 1
        (integer) 1
        > XREADGROUP GROUP grp alice STREAMS g1 0
        1) 1) "g1"
           2) 1) 1) "1-0"
                 2) (nil array)
        > XPENDING g1 grp
        1) (integer) 1
        2) "1-0"
        3) "1-0"
        4) 1) 1) "alice"
              2) "1"
    "#,
    );
    s.advance(5);
    s.transcript(
        r#"
        // the read of the history redelivered it at +10, not after it was deleted
        > XPENDING g1 grp - + 10
        1) 1) "1-0"
           2) "alice"
           3) (integer) 5
           4) (integer) 2
        > XPENDING g1 grp IDLE 20 - + 10
        (empty array)
        > XACK g1 grp 1-0 9-0
        (integer) 1
        > XPENDING g1 grp
        1) (integer) 0
        2) (nil)
        3) (nil)
        4) (nil array)
        > XREADGROUP GROUP grp bob STREAMS g1 >
        1) 1) "g1"
           2) 1) 1) "2-0"
                 2) 1) "k"
                    2) "2"
              2) 1) "3-0"
                 2) 1) "k"
                    2) "3"
    "#,
    );
    s.advance(100);
    s.transcript(
        r#"
        > XCLAIM g1 grp carl 200 2-0
        (empty array)
        > XCLAIM g1 grp carl 50 2-0
        1) 1) "2-0"
           2) 1) "k"
              2) "2"
        > XCLAIM g1 grp carl 0 3-0 JUSTID
        1) "3-0"
        > XPENDING g1 grp - + 10
        1) 1) "2-0"
           2) "carl"
           3) (integer) 0
           4) (integer) 2
        2) 1) "3-0"
           2) "carl"
           3) (integer) 0
           4) (integer) 1
        > XDEL g1 3
        (integer) 1
        > XAUTOCLAIM g1 grp dan 0 0 COUNT 10
        1) "0-0"
        2) 1) 1) "2-0"
              2) 1) "k"
                 2) "2"
        3) 1) "3-0"
        > XGROUP DELCONSUMER g1 grp dan
        (integer) 1
        > XCLAIM g1 grp c x 1
        (error) ERR Invalid min-idle-time argument for XCLAIM
        > XCLAIM g1 grp c 0 1 FOO
        (error) ERR Unrecognized XCLAIM option 'FOO'
        > XAUTOCLAIM g1 grp c 0 0 COUNT 0
        (error) ERR COUNT must be > 0
    "#,
    );
}

#[test]
fn xreadgroup_blocks_until_xadd_and_destroy_answers_nogroup() {
    let mut s = Session::after("XGROUP CREATE q g $ MKSTREAM");
    let mut c = ClientCtx::new(1);
    s.exec_as(&mut c, "XREADGROUP GROUP g c BLOCK 0 STREAMS q >");
    assert!(c.is_blocked());
    let out = s.exec("XADD q 1 f v");
    assert_eq!(
        out.effects.commands().iter().map(show).collect::<Vec<_>>(),
        [
            "XADD q 1-0 f v",
            "XCLAIM q g c 0 1-0 TIME 1000000 RETRYCOUNT 1 FORCE JUSTID",
            "XGROUP SETID q g 1-0 ENTRIESREAD 1"
        ]
    );
    assert_eq!(
        s.engine.take_unblocked(),
        [(
            1,
            Reply::Keyed(alloc::vec![bulk("q"), array(&[entry("1-0", &["f", "v"])])])
        )]
    );
    c.unblocked();
    s.exec_as(&mut c, "XREADGROUP GROUP g c BLOCK 0 STREAMS q >");
    s.run("XGROUP DESTROY q g");
    assert_eq!(
        s.engine.take_unblocked(),
        [(
            1,
            err("NOGROUP the consumer group this client was blocked on no longer exists")
        )]
    );
}

#[test]
fn xinfo_reports_counters_lag_and_consumers() {
    let mut s = Session::new();
    assert_eq!(s.run("XINFO STREAM s"), err("ERR no such key"));
    s.run("XADD s 1 a 1");
    s.run("XADD s 2 a 2");
    s.run("XGROUP CREATE s g0 0");
    s.run("XGROUP CREATE s g1 $");
    s.run("XGROUP CREATE s g2 1");
    s.run("HELLO 3");
    let group = |name: &str, last: &str, lag: i64| {
        Reply::Map(alloc::vec![
            bulk("name"),
            bulk(name),
            bulk("consumers"),
            int(0),
            bulk("pending"),
            int(0),
            bulk("last-delivered-id"),
            bulk(last),
            bulk("entries-read"),
            nil(),
            bulk("lag"),
            int(lag),
        ])
    };
    assert_eq!(
        s.run("XINFO GROUPS s"),
        array(&[
            group("g0", "0-0", 2),
            group("g1", "2-0", 0),
            group("g2", "1-0", 1)
        ])
    );
    s.run("XREADGROUP GROUP g0 c STREAMS s >");
    s.advance(50);
    assert_eq!(
        s.wire("XINFO CONSUMERS s g0"),
        "*1\r\n%3\r\n$4\r\nname\r\n$1\r\nc\r\n$7\r\npending\r\n:2\r\n$4\r\nidle\r\n:50\r\n"
    );
    assert_eq!(
        s.run("XINFO CONSUMERS s nog"),
        err("NOGROUP No such consumer group 'nog' for key name 's'")
    );
    s.run("XDEL s 1");
    let info = s.run("XINFO STREAM s").into_items().unwrap();
    assert_eq!(
        info[..14],
        [
            bulk("length"),
            int(1),
            bulk("radix-tree-keys"),
            int(1),
            bulk("radix-tree-nodes"),
            int(2),
            bulk("last-generated-id"),
            bulk("2-0"),
            bulk("max-deleted-entry-id"),
            bulk("1-0"),
            bulk("entries-added"),
            int(2),
            bulk("recorded-first-entry-id"),
            bulk("2-0"),
        ]
    );
    assert_eq!(info[14..16], [bulk("groups"), int(3)]);
    assert_eq!(info[17], entry("2-0", &["a", "2"]));
    let full = s.run("XINFO STREAM s FULL").into_items().unwrap();
    assert_eq!(
        full[14..16],
        [bulk("entries"), array(&[entry("2-0", &["a", "2"])])]
    );
}

#[test]
fn xadd_reads_the_id_before_counting_fields_as_redis_does() {
    transcript(
        r#"
        > XADD s - 1 v 1
        (error) ERR Invalid stream ID specified as stream command argument
        > XADD s MAXLEN 1 LIMIT 5 x 1
        (error) ERR Invalid stream ID specified as stream command argument
        > XADD s 1-x a b
        (error) ERR Invalid stream ID specified as stream command argument
        > XADD s 0-0 a
        (error) ERR wrong number of arguments for 'xadd' command
        > XADD s 0-0 a b
        (error) ERR The ID specified in XADD must be greater than 0-0
        > XADD s 1-* a
        (error) ERR wrong number of arguments for 'xadd' command
        > EXISTS s
        (integer) 0
    "#,
    );
}

#[test]
fn nogroup_errors_show_names_up_to_a_nul_byte_as_redis_does() {
    let mut s = Session::new();
    assert_eq!(
        s.run(r#"XPENDING "bin\x00\r\n" h"#),
        err("NOGROUP No such key 'bin' or consumer group 'h'")
    );
}

#[test]
fn a_bad_xgroup_option_names_the_subcommand_as_typed() {
    transcript(
        r#"
        > XGROUP CREATE s g $ MKSTREAM ENTRIESREAD
        (error) ERR unknown subcommand or wrong number of arguments for 'CREATE'. Try XGROUP HELP.
        > xgroup setid s g $ bogus
        (error) ERR unknown subcommand or wrong number of arguments for 'setid'. Try XGROUP HELP.
    "#,
    );
}

/// Found by fuzzing (`command_engine`): an `XSETID` logged while a log
/// rewrite had not reached its stream replayed in the new log onto a
/// missing key ("ERR no such key"). Such changes log the whole stream.
#[test]
fn while_a_rewrite_lags_a_stream_its_id_and_group_changes_log_it_whole() {
    let mut s = Session::after("XADD x 5-1 f v");
    s.engine.aof_rewrite_started(s.now);
    let logged = s.logged("XSETID x 9-0");
    assert_eq!(
        logged.first().map(String::as_str),
        Some("DEL x"),
        "{logged:?}"
    );
    assert!(
        logged.iter().any(|l| l.starts_with("XADD x 5-1")),
        "{logged:?}"
    );
    let logged = s.logged("XGROUP CREATE x g 0");
    assert_eq!(
        logged.first().map(String::as_str),
        Some("DEL x"),
        "{logged:?}"
    );
    // Once the scan is past the key, each change is logged as it is.
    while !s.engine.aof_rewrite_step(100, &mut Vec::new()) {}
    assert_eq!(s.logged("XSETID x 10-0"), ["XSETID x 10-0"]);
}

/// How many entries an `XREADGROUP` of one stream answered (the reply
/// keyed by stream name).
fn entries_read(reply: Reply) -> usize {
    match reply {
        Reply::Keyed(pairs) => match &pairs[1] {
            Reply::Bulks(entries) => entries.count(),
            other => panic!("not entries: {other:?}"),
        },
        other => panic!("not streams: {other:?}"),
    }
}

#[test]
fn xgroup_setid_to_minus_rereads_the_whole_stream() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > XADD events 1-0 f v
        "1-0"
        > XADD events 2-0 f v
        "2-0"
        > XGROUP CREATE events g1 $
        OK
        > XADD events 3-0 f v
        "3-0"
    "#,
    );
    assert_eq!(
        entries_read(s.run("XREADGROUP GROUP g1 c1 STREAMS events >")),
        1
    );
    s.transcript(
        r#"
        > XGROUP SETID events g1 -
        OK
    "#,
    );
    assert_eq!(
        entries_read(s.run("XREADGROUP GROUP g1 c2 STREAMS events >")),
        3
    );
    s.transcript(
        r#"
        > XGROUP SETID events g1 +
        OK
    "#,
    );
}

/// A stream `s` (entry 1-0) with the group `g` at its end, and client 1
/// blocked reading from it in `g`: where the tests of a blocked
/// `XREADGROUP` start.
fn blocked_in_group() -> (Session, ClientCtx) {
    let mut s = Session::new();
    s.run("XADD s 1 f v");
    s.run("XGROUP CREATE s g $");
    let mut c = ClientCtx::new(1);
    s.exec_as(&mut c, "XREADGROUP GROUP g c BLOCK 0 STREAMS s >");
    assert!(c.is_blocked());
    (s, c)
}

#[test]
fn xreadgroup_waiters_are_answered_when_their_stream_goes() {
    // Each way the stream can go, and what Redis 7.0 answers the client.
    let gone = err("UNBLOCKED the stream key no longer exists");
    let nogroup = err("NOGROUP the consumer group this client was blocked on no longer exists");
    let cases: &[(&[&str], &Reply)] = &[
        (&["DEL s"], &gone),
        (&["UNLINK s"], &gone),
        (&["SET s x"], &gone),
        (&["MULTI", "DEL s", "SADD s e1", "EXEC"], &gone),
        (&["FLUSHDB"], &gone),
        (&["FLUSHALL"], &gone),
        (&["SELECT 4", "LPUSH s e", "SWAPDB 0 4"], &gone),
        (&["SWAPDB 0 4"], &gone),
        (&["MOVE s 3"], &gone),
        (&["XADD s2 100 f1 v1", "RENAME s2 s"], &nogroup),
        (&["XGROUP DESTROY s g"], &nogroup),
    ];
    for (lines, reply) in cases {
        let (mut s, _) = blocked_in_group();
        for line in *lines {
            s.run(line);
        }
        assert_eq!(
            s.engine.take_unblocked(),
            [(1, (*reply).clone())],
            "{lines:?}"
        );
        assert_eq!(s.engine.blocked_clients(), 0, "{lines:?}");
    }
    // Flushing another database, or adding to the stream, answers nobody
    // with an error.
    let (mut s, _) = blocked_in_group();
    s.run("SELECT 4");
    s.run("FLUSHDB");
    assert!(s.engine.take_unblocked().is_empty());
    assert_eq!(s.engine.blocked_clients(), 1);
}

#[test]
fn an_expired_stream_answers_its_group_waiters() {
    let (mut s, _) = blocked_in_group();
    s.run("PEXPIRE s 100");
    s.advance(101);
    let logged = s.engine.active_expire(s.now, 20);
    assert_eq!(shown(&logged), ["DEL s"]);
    assert_eq!(
        s.engine.take_unblocked(),
        [(1, err("UNBLOCKED the stream key no longer exists"))]
    );
}

#[test]
fn an_answered_group_waiter_logs_nothing_and_counts_as_a_failed_call() {
    let mut s = Session::new();
    s.run("XGROUP CREATE s g $ MKSTREAM");
    s.run("CONFIG RESETSTAT");
    for id in [1, 2] {
        let mut c = ClientCtx::new(id);
        s.exec_as(&mut c, "XREADGROUP GROUP g c BLOCK 0 STREAMS s >");
    }
    // Only the deletion is logged: the answered clients wrote nothing.
    assert_eq!(s.logged("DEL s"), ["DEL s"]);
    let gone = err("UNBLOCKED the stream key no longer exists");
    assert_eq!(s.engine.take_unblocked(), [(1, gone.clone()), (2, gone)]);
    let info = |s: &mut Session, section: &str| match s.run(&format!("INFO {section}")) {
        Reply::Verbatim(text) => String::from_utf8(text).unwrap(),
        other => panic!("INFO {section}: {other:?}"),
    };
    // As Redis: the call counted when it blocked, the failure when it
    // was answered.
    assert!(info(&mut s, "errorstats").contains("errorstat_UNBLOCKED:count=2\r\n"));
    let commands = info(&mut s, "commandstats");
    let line = commands
        .lines()
        .find(|l| l.starts_with("cmdstat_xreadgroup:"))
        .unwrap();
    assert!(line.starts_with("cmdstat_xreadgroup:calls=2,"), "{line}");
    assert!(line.ends_with(",rejected_calls=0,failed_calls=2"), "{line}");
    assert!(info(&mut s, "stats").contains("total_error_replies:2\r\n"));
}

#[test]
fn xread_waiters_outlive_their_stream_and_wait_after_their_own_ids() {
    let mut s = Session::after("XADD s 1 f v");
    let (mut a, mut b, mut c) = (ClientCtx::new(1), ClientCtx::new(2), ClientCtx::new(3));
    s.exec_as(&mut a, "XREAD BLOCK 0 STREAMS s $");
    s.exec_as(&mut b, "XREAD BLOCK 0 STREAMS s 99");
    s.exec_as(&mut c, "XREAD BLOCK 0 STREAMS s $");
    s.run("DEL s");
    s.run("SET s x");
    s.run("DEL s");
    assert!(s.engine.take_unblocked().is_empty(), "XREAD waits on");
    s.run("XADD s 2 f v");
    // The client waiting after 99-0 keeps its place; the one after it is
    // served.
    let served = Reply::Keyed(alloc::vec![bulk("s"), array(&[entry("2-0", &["f", "v"])])]);
    assert_eq!(
        s.engine.take_unblocked(),
        [(1, served.clone()), (3, served)]
    );
    assert_eq!(s.engine.blocked_clients(), 1);
}

#[test]
fn a_stream_that_comes_back_with_the_group_serves_its_waiters() {
    let served = |id: &str| Reply::Keyed(alloc::vec![bulk("s"), array(&[entry(id, &["f", "v"])])]);
    // RENAME of a stream that has the group, with an entry after its
    // last ID.
    let (mut s, _) = blocked_in_group();
    s.run("XGROUP CREATE s2 g $ MKSTREAM");
    s.run("XADD s2 100 f v");
    s.run("RENAME s2 s");
    assert_eq!(s.engine.take_unblocked(), [(1, served("100-0"))]);
    // The group destroyed and made again before the entries, in one
    // transaction.
    let (mut s, _) = blocked_in_group();
    for line in ["MULTI", "XGROUP DESTROY s g", "XGROUP CREATE s g 0", "EXEC"] {
        s.run(line);
    }
    assert_eq!(s.engine.take_unblocked(), [(1, served("1-0"))]);
    // SWAPDB bringing in a stream with the group.
    let (mut s, _) = blocked_in_group();
    for line in [
        "SELECT 4",
        "XADD s 5 f v",
        "XGROUP CREATE s g 0",
        "SWAPDB 0 4",
    ] {
        s.run(line);
    }
    assert_eq!(s.engine.take_unblocked(), [(1, served("5-0"))]);
}

#[test]
fn xautoclaim_counts_dropped_deleted_entries_toward_count() {
    let mut s = Session::new();
    for id in 1..=4 {
        s.run(&format!("XADD x {id}-0 f v"));
    }
    s.transcript(
        r#"
        > XGROUP CREATE x grp 0
        OK
        > XREADGROUP GROUP grp Alice STREAMS x >
        1) 1) "x"
           2) 1) 1) "1-0"
                 2) 1) "f"
                    2) "v"
              2) 1) "2-0"
                 2) 1) "f"
                    2) "v"
              3) 1) "3-0"
                 2) 1) "f"
                    2) "v"
              4) 1) "4-0"
                 2) 1) "f"
                    2) "v"
        > XDEL x 1-0
        (integer) 1
        > XDEL x 2-0
        (integer) 1
        // Replies of redis-server 7.0.15.
        > XAUTOCLAIM x grp Bob 0 0-0 COUNT 1
        1) "2-0"
        2) (empty array)
        3) 1) "1-0"
        > XAUTOCLAIM x grp Bob 0 0-0 COUNT 2
        1) "4-0"
        2) 1) 1) "3-0"
              2) 1) "f"
                 2) "v"
        3) 1) "2-0"
        > XAUTOCLAIM x grp Bob 0 0-0 COUNT 1
        1) "4-0"
        2) 1) 1) "3-0"
              2) 1) "f"
                 2) "v"
        3) (empty array)
        > XAUTOCLAIM x grp Bob 0 4-0 COUNT 1
        1) "0-0"
        2) 1) 1) "4-0"
              2) 1) "f"
                 2) "v"
        3) (empty array)
        > XAUTOCLAIM x grp Bob 0 0-0 JUSTID
        1) "0-0"
        2) 1) "3-0"
           2) "4-0"
        3) (empty array)
        // Too recent to claim: the attempts (ten per COUNT) go through
        // the list.
        > XAUTOCLAIM x grp Bob 10000 0-0 COUNT 1
        1) "0-0"
        2) (empty array)
        3) (empty array)
    "#,
    );
}
