//! Sorted sets: `ZADD` and friends, ranges, algebra, pops and blocking
//! pops, the type among the others, and how sorted sets are logged,
//! replayed and rewritten.

use alloc::format;
use alloc::string::String;

use super::*;
use crate::aof::{rewrite, HEADER};
use faultline_rng::Rng;

/// The bulk strings (and scores) of an array reply, or of pairs,
/// space-separated: what RESP2 sends.
fn line(reply: Reply) -> String {
    let (Reply::Array(Some(items)) | Reply::Pairs(items)) = reply else {
        panic!("not an array: {reply:?}");
    };
    let words: Vec<String> = items
        .into_iter()
        .map(|item| match item {
            Reply::Bulk(Some(b)) | Reply::Double(b) => String::from_utf8(b).unwrap(),
            other => panic!("not a bulk string: {other:?}"),
        })
        .collect();
    words.join(" ")
}

fn run_line(s: &mut Session, command: &str) -> String {
    line(s.run(command))
}

#[test]
fn zadd_flags_and_replies() {
    transcript(
        r#"
        > ZADD z 1 a 2 b 3 c
        (integer) 3
        // one new member
        > ZADD z 5 a 2 b 4 d
        (integer) 1
        // a changed, e added
        > ZADD z CH 6 a 2 b 9 e
        (integer) 2
        > ZADD z XX 7 a 1 new
        (integer) 0
        > ZSCORE z new
        (nil)
        > ZADD z NX 100 a 8 f
        (integer) 1
        > ZSCORE z a
        "7"
        // only b grows
        > ZADD z GT CH 3 a 10 b
        (integer) 1
        // only a shrinks
        > ZADD z LT CH 3 a 10 c
        (integer) 1
        > ZADD z INCR 1.5 a
        "4.5"
        // LT stops a rise
        > ZADD z LT INCR 1 a
        (nil)
        > ZINCRBY z -0.5 a
        "4"
        > ZINCRBY z 0.1 zz
        "0.10000000000000001"
        > ZADD z XX 1 a 2
        (error) ERR syntax error
        > ZADD z XX NX 1 a
        (error) ERR XX and NX options at the same time are not compatible
        > ZADD z GT LT 1 a
        (error) ERR GT, LT, and/or NX options at the same time are not compatible
        > ZADD z INCR 1 a 2 b
        (error) ERR INCR option supports a single increment-element pair
        > ZADD z 1 a nan b
        (error) ERR value is not a valid float
        > ZADD z "" b
        (error) ERR value is not a valid float
        > ZADD z 1e400 b
        (error) ERR value is not a valid float
        > ZADD inf +inf x
        (integer) 1
        > ZINCRBY inf -inf x
        (error) ERR resulting score is not a number (NaN)
        > ZSCORE inf x
        "inf"
        > ZADD none XX 1 a
        (integer) 0
        // XX does not create the key
        > EXISTS none
        (integer) 0
        > ZINCRBY z 1 a 2
        (error) ERR wrong number of arguments for 'zincrby' command
    "#,
    );
}

#[test]
fn reads_by_member_and_rank() {
    transcript(
        r#"
        > ZADD z 1 a 2 b 3 c
        (integer) 3
        > ZCARD z
        (integer) 3
        > ZCARD missing
        (integer) 0
        > ZMSCORE z a x c
        1) "1"
        2) (nil)
        3) "3"
        > ZRANK z c
        (integer) 2
        > ZREVRANK z c
        (integer) 0
        > ZRANK z x
        (nil)
        > ZREM z a x
        (integer) 1
        > ZRANK z b
        (integer) 0
        > ZREM z b c
        (integer) 2
        // the last member took the key
        > EXISTS z
        (integer) 0
    "#,
    );
}

#[test]
fn ranges_by_rank_score_and_lex() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > ZADD z 1 a 2 b 3 c 4 d 5 e
        (integer) 5
        > ZRANGE z 0 -1
        1) "a"
        2) "b"
        3) "c"
        4) "d"
        5) "e"
        > ZRANGE z -2 10 WITHSCORES
        1) "d"
        2) "4"
        3) "e"
        4) "5"
        > ZREVRANGE z 0 1
        1) "e"
        2) "d"
        > ZRANGE z 0 1 REV
        1) "e"
        2) "d"
        > ZRANGEBYSCORE z (1 3
        1) "b"
        2) "c"
        > ZRANGEBYSCORE z -inf +inf LIMIT 1 2
        1) "b"
        2) "c"
        > ZREVRANGEBYSCORE z 4 (2 WITHSCORES
        1) "d"
        2) "4"
        3) "c"
        4) "3"
        > ZRANGE z 5 0 BYSCORE REV LIMIT 0 2 WITHSCORES
        1) "e"
        2) "5"
        3) "d"
        4) "4"
        > ZRANGEBYSCORE z 1 5 LIMIT -1 2
        (empty array)
        > ZRANGEBYSCORE z 1 5 LIMIT 3 -1
        1) "d"
        2) "e"
        > ZCOUNT z (1 +inf
        (integer) 4
        > ZCOUNT z 3 2
        (integer) 0
        > ZADD l 0 a 0 b 0 c 0 d
        (integer) 4
        > ZRANGEBYLEX l [b (d
        1) "b"
        2) "c"
        > ZREVRANGEBYLEX l + - LIMIT 1 2
        1) "c"
        2) "b"
        > ZRANGE l - [b BYLEX
        1) "a"
        2) "b"
    "#,
    );
    s.transcript(r#"
        > ZLEXCOUNT l (a +
        (integer) 3
        > ZRANGEBYLEX l a b
        (error) ERR min or max not valid string range item
        > ZRANGEBYSCORE z x 1
        (error) ERR min or max is not a float
        > ZRANGE z 0 -1 LIMIT 0 1
        (error) ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX
        > ZRANGE l - + BYLEX WITHSCORES
        (error) ERR syntax error, WITHSCORES not supported in combination with BYLEX
        > ZREVRANGE z 0 1 BYSCORE
        (error) ERR syntax error
        > ZRANGEBYSCORE z 0 1 REV
        (error) ERR syntax error
    "#);
}

#[test]
fn range_removals_and_range_store() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > ZADD z 1 a 2 b 3 c 4 d 5 e
        (integer) 5
        > ZREMRANGEBYRANK z 0 1
        (integer) 2
        > ZREMRANGEBYSCORE z (4 +inf
        (integer) 1
    "#,
    );
    assert_eq!(run_line(&mut s, "ZRANGE z 0 -1"), "c d");
    s.transcript(
        r#"
        > ZADD l 0 a 0 b 0 c
        (integer) 3
        > ZREMRANGEBYLEX l [a (c
        (integer) 2
        > ZRANGESTORE dst z 0 0
        (integer) 1
    "#,
    );
    assert_eq!(run_line(&mut s, "ZRANGE dst 0 -1 WITHSCORES"), "c 3");
    s.transcript(
        r#"
        > ZRANGESTORE dst z 5 6
        (integer) 0
        // an empty result removes dst
        > EXISTS dst
        (integer) 0
        > SET str x
        OK
        > ZRANGESTORE dst str 0 -1
        (error) WRONGTYPE Operation against a key holding the wrong kind of value
        > ZRANGESTORE dst z 0 -1 WITHSCORES
        (error) ERR syntax error
    "#,
    );
}

#[test]
fn union_intersection_and_difference() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > ZADD a 1 x 2 y 3 z
        (integer) 3
        > ZADD b 1 y 2 z 3 w
        (integer) 3
        > ZUNION 2 a b WITHSCORES
        1) "x"
        2) "1"
        3) "w"
        4) "3"
        5) "y"
        6) "3"
        7) "z"
        8) "5"
        > ZINTER 2 a b WEIGHTS 2 3 WITHSCORES
        1) "y"
        2) "7"
        3) "z"
        4) "12"
        > ZINTER 2 a b AGGREGATE MAX WITHSCORES
        1) "y"
        2) "2"
        3) "z"
        4) "3"
        > ZDIFF 2 a b WITHSCORES
        1) "x"
        2) "1"
        > ZINTERCARD 2 a b LIMIT 1
        (integer) 1
        > ZINTERCARD 2 a b
        (integer) 2
        > ZUNIONSTORE u 2 a b AGGREGATE MIN
        (integer) 4
    "#,
    );
    assert_eq!(
        run_line(&mut s, "ZRANGE u 0 -1 WITHSCORES"),
        "x 1 y 1 z 2 w 3"
    );
    s.transcript(
        r#"
        > ZINTERSTORE u 2 a missing
        (integer) 0
        > EXISTS u
        (integer) 0
        > ZUNION 0 a
        (error) ERR at least 1 input key is needed for 'zunion' command
        > ZUNIONSTORE u 2 a b WEIGHTS nan 1
        (error) ERR weight value is not a float
        > ZDIFFSTORE u 2 a b WITHSCORES
        (error) ERR syntax error
        > ZINTERCARD 1 a LIMIT -1
        (error) ERR LIMIT can't be negative
    "#,
    );
    s.run("ZADD i1 +inf k");
    s.run("ZADD i2 -inf k");
    s.run("ZUNIONSTORE i3 2 i1 i2");
    assert_eq!(s.run("ZSCORE i3 k"), bulk("0"), "inf + -inf counts as 0");
    s.run("SET str x");
    assert_eq!(s.run("ZUNION 2 a str"), err(WRONGTYPE));
}

#[test]
fn plain_sets_take_part_in_the_algebra_with_every_member_scoring_1() {
    let mut s = Session::new();
    s.run("ZADD ranked 2 x 5 y");
    s.run("SADD tags y z"); // a hash-table set
    s.run("SADD ids 7 x"); // not all integers: a hash table too
    s.run("SADD nums 7 8"); // an intset, whose members are written out
    s.transcript(
        r#"
        > ZUNION 2 ranked tags WEIGHTS 1 10 WITHSCORES
        1) "x"
        2) "2"
        3) "z"
        4) "10"
        5) "y"
        6) "15"
        > ZINTER 2 ranked tags WITHSCORES
        1) "y"
        2) "6"
        > ZDIFF 2 ranked ids
        1) "y"
        > ZINTERCARD 2 ids nums
        (integer) 1
        > ZUNIONSTORE out 2 nums ids AGGREGATE MAX
        (integer) 3
    "#,
    );
    assert_eq!(
        run_line(&mut s, "ZRANGE out 0 -1 WITHSCORES"),
        "7 1 8 1 x 1"
    );
    assert_eq!(s.run("TYPE out").to_bytes(), b"+zset\r\n");
    s.transcript(
        r#"
        > ZINTERSTORE out 2 nums tags
        (integer) 0
        > EXISTS out
        (integer) 0
    "#,
    );
}

#[test]
fn pops_and_random_members() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > ZADD z 1 a 2 b 3 c 4 d
        (integer) 4
        > ZPOPMIN z
        1) "a"
        2) "1"
        > ZPOPMAX z 2
        1) "d"
        2) "4"
        3) "c"
        4) "3"
        > ZPOPMIN z 0
        (empty array)
        > ZPOPMIN z -1
        (error) ERR value is out of range, must be positive
        > ZMPOP 2 missing z MAX COUNT 5
        1) "z"
        2) 1) 1) "b"
              2) "2"
        > ZMPOP 1 z MIN
        (nil array)
        > ZMPOP 0 z MIN
        (error) ERR numkeys should be greater than 0
        > ZMPOP 1 z MIN COUNT 0
        (error) ERR count should be greater than 0
    "#,
    );
    s.run("ZADD r 1 a 2 b 3 c");
    assert_eq!(sorted(s.run("ZRANDMEMBER r 5")), ["a", "b", "c"]);
    let Reply::Pairs(repeats) = s.run("ZRANDMEMBER r -7 WITHSCORES") else {
        panic!("an array");
    };
    assert_eq!(repeats.len(), 14);
    for i in 0..40 {
        s.run(&format!("ZADD many {i} m{i}"));
    }
    for count in [3, 30, 40] {
        let picked = sorted(s.run(&format!("ZRANDMEMBER many {count}")));
        let mut distinct = picked.clone();
        distinct.dedup();
        assert_eq!((picked.len(), distinct.len()), (count, count), "distinct");
    }
    s.transcript(r#"
        > ZRANDMEMBER missing 3
        (empty array)
        > ZRANDMEMBER missing
        (nil)
        > ZRANDMEMBER r -9223372036854775808
        (error) ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807
    "#);
}

#[test]
fn a_negative_random_count_is_refused_before_its_reply_is_built() {
    let config = Config {
        proto_max_bulk_len: 1024 * 1024,
        ..Config::default()
    };
    let mut s = Session::with_config(config);
    s.run("ZADD r 1 a");
    let Reply::Error(text) = s.run("ZRANDMEMBER r -100000000") else {
        panic!("refused");
    };
    assert!(text.starts_with("OOM the reply would take"), "{text}");
}

#[test]
fn encodings_follow_the_config_and_never_go_back() {
    let mut s = Session::after("ZADD z 1 a");
    assert_eq!(s.run("OBJECT ENCODING z"), bulk("listpack"));
    s.run("CONFIG SET zset-max-ziplist-entries 2");
    assert_eq!(
        s.run("CONFIG GET zset-max-listpack-entries"),
        bulks(&["zset-max-listpack-entries", "2"])
    );
    s.run("ZADD z 2 b 3 c");
    assert_eq!(s.run("OBJECT ENCODING z"), bulk("skiplist"));
    s.run("ZREM z b c");
    assert_eq!(s.run("OBJECT ENCODING z"), bulk("skiplist"));
    s.run("CONFIG SET zset-max-listpack-value 3");
    s.run("ZADD long 1 abcd");
    assert_eq!(s.run("OBJECT ENCODING long"), bulk("skiplist"));
    s.transcript(
        r#"
        > ZADD src 1 a 2 b
        (integer) 2
        > ZRANGESTORE one src 0 0
        (integer) 1
        > OBJECT ENCODING one
        "listpack"
        > ZUNIONSTORE two 1 src
        (integer) 2
        > OBJECT ENCODING two
        "listpack"
        > ZADD three 1 a 2 b 3 c
        (integer) 3
        > ZUNIONSTORE big 1 three
        (integer) 3
        > OBJECT ENCODING big
        "skiplist"
    "#,
    );
    assert_eq!(s.run("TYPE big").to_bytes(), b"+zset\r\n");
}

#[test]
fn the_zset_type_among_the_others() {
    let mut s = Session::new();
    s.run("ZADD z 1 a 2 b");
    s.run("SET str x");
    s.refuses_wrong_type(&[
        "ZADD str 1 a",
        "ZRANGE str 0 -1",
        "ZSCORE str a",
        "ZPOPMIN str",
        "BZPOPMIN str 0",
        "ZCARD str",
    ]);
    s.transcript(
        r#"
        > GET z
        (error) WRONGTYPE Operation against a key holding the wrong kind of value
        > LPUSH z x
        (error) WRONGTYPE Operation against a key holding the wrong kind of value
        > HSET z f v
        (error) WRONGTYPE Operation against a key holding the wrong kind of value
        > COPY z z2
        (integer) 1
    "#,
    );
    assert_eq!(run_line(&mut s, "ZRANGE z2 0 -1 WITHSCORES"), "a 1 b 2");
    s.transcript(
        r#"
        > RENAME z2 z3
        OK
        > ZCARD z3
        (integer) 2
        > MOVE z3 1
        (integer) 1
    "#,
    );
    let Reply::Array(Some(scan)) = s.run("SCAN 0 TYPE zset COUNT 100") else {
        panic!("an array");
    };
    assert_eq!(scan[1], bulks(&["z"]));
    let Reply::Integer(usage) = s.run("MEMORY USAGE z") else {
        panic!("an integer");
    };
    assert!(usage > 2);
    let Reply::Array(Some(zscan)) = s.run("ZSCAN z 0 MATCH a") else {
        panic!("an array");
    };
    assert_eq!(zscan[1], bulks(&["a", "1"]));
}

#[test]
fn keyspace_events_of_sorted_sets() {
    let mut s = Session::after("CONFIG SET notify-keyspace-events Ez");
    let events = |s: &mut Session, command: &str| -> Vec<String> {
        s.run(command);
        s.engine
            .take_messages()
            .into_iter()
            .map(|(_, bytes)| String::from_utf8_lossy(&bytes).into_owned())
            .collect()
    };
    // Nobody subscribes: what is published is what the pubsub counts.
    s.run("ZADD z 1 a");
    assert!(events(&mut s, "ZINCRBY z 1 a").is_empty());
    let mut subscriber = ClientCtx::new(9);
    s.exec_as(&mut subscriber, "PSUBSCRIBE __keyevent@0__:*");
    s.engine.take_messages();
    let mut seen = Vec::new();
    for command in [
        "ZADD z 2 b",
        "ZINCRBY z 1 a",
        "ZREM z b",
        "ZADD z 5 c 6 d 7 e 8 f",
        "ZREMRANGEBYSCORE z 5 5",
        "ZREMRANGEBYRANK z 0 0",
        "ZREMRANGEBYLEX z - +",
        "ZADD z 1 a 2 b",
        "ZPOPMIN z",
        "ZPOPMAX z",
        "ZADD z 1 a",
        "ZUNIONSTORE u 1 z",
        "ZINTERSTORE u 1 z",
        "ZDIFFSTORE u 1 z",
        "ZRANGESTORE u z 0 -1",
    ] {
        for message in events(&mut s, command) {
            let event = message.split("__:").nth(2).unwrap_or_default();
            let name: String = event
                .chars()
                .take_while(|c| c.is_ascii_alphabetic())
                .collect();
            seen.push(name);
        }
    }
    assert_eq!(
        seen,
        [
            "zadd",
            "zincr",
            "zrem",
            "zadd",
            "zrembyscore",
            "zrembyrank",
            "zrembylex",
            "zadd",
            "zpopmin",
            "zpopmax",
            "zadd",
            "zunionstore",
            "zinterstore",
            "zdiffstore",
            "zrangestore"
        ]
    );
}

#[test]
fn blocking_pops_wait_for_a_zadd() {
    let mut s = Session::new();
    let mut waiter = ClientCtx::new(1);
    let out = s.exec_as(&mut waiter, "BZPOPMIN q other 0");
    assert!(waiter.is_blocked() && out.effects.is_empty());
    let mut second = ClientCtx::new(2);
    s.exec_as(&mut second, "BZMPOP 0 1 q MAX COUNT 5");
    let out = s.exec("ZADD q 1 a 2 b 3 c");
    assert_eq!(
        shown(&out.effects),
        ["ZADD q 1 a 2 b 3 c", "ZREM q a", "ZREM q c b"]
    );
    assert_eq!(
        s.engine.take_unblocked(),
        [
            (1, array(&[bulk("q"), bulk("a"), bulk("1")])),
            (
                2,
                array(&[bulk("q"), array(&[bulks(&["c", "3"]), bulks(&["b", "2"])])])
            ),
        ]
    );
    assert_eq!(s.run("EXISTS q"), int(0));
    // A key of another type does not serve a sorted-set waiter.
    s.exec_as(&mut waiter, "BZPOPMAX k 0.5");
    s.run("LPUSH k x");
    assert!(s.engine.take_unblocked().is_empty());
    s.advance(600);
    s.engine.unblock_timed_out(s.now);
    assert_eq!(s.engine.take_unblocked(), [(1, Reply::Array(None))]);
    assert_eq!(s.run("MULTI"), ok());
    s.run("BZPOPMIN nothing 0");
    assert_eq!(
        s.run("EXEC"),
        array(&[Reply::Array(None)]),
        "no blocking in EXEC"
    );
}

#[test]
fn pops_and_stores_log_their_results() {
    let mut s = Session::new();
    s.logs(
        r#"
        > ZADD z 1 a 2 b 3 c
        ZADD z 1 a 2 b 3 c
        > ZADD z NX 9 a 4 d
        ZADD z 4 d
        // nothing changed
        > ZADD z 4 d
        (nothing)
        > ZINCRBY z 0.5 a
        ZADD z 1.5 a
        > ZPOPMAX z 2
        ZREM z d c
        > ZREM z x
        (nothing)
        > ZRANGESTORE d z 0 -1
        DEL d
        ZADD d 1.5 a 2 b
        > ZREMRANGEBYSCORE z 0 1.5
        ZREMRANGEBYSCORE z 0 1.5
        > ZMPOP 1 z MIN
        ZREM z b
    "#,
    );
}

/// A random sorted-set command over a few keys (and some of other types
/// and expiries, so keys change type and go).
fn random_command(rng: &mut Rng) -> String {
    let k = rng.pick(&["a", "b", "c"]);
    let k2 = rng.pick(&["a", "b", "c"]);
    let m = rng.pick(&["x", "y", "z", "w", "v"]);
    let score = rng.pick(&["1", "-2.5", "0.1", "inf", "-inf", "3", "1e20"]);
    let i = rng.below(7) as i64 - 3;
    match rng.below(26) {
        0..=3 => format!("ZADD {k} {score} {m} {} y", rng.below(5)),
        4 => format!("ZADD {k} GT CH {score} {m}"),
        5 => format!("ZADD {k} INCR {score} {m}"),
        6 => format!("ZINCRBY {k} {score} {m}"),
        7 => format!("ZREM {k} {m} x"),
        8 => format!("ZPOPMIN {k} {}", rng.below(3)),
        9 => format!("ZPOPMAX {k}"),
        10 => format!("ZMPOP 2 {k} {k2} MAX COUNT 2"),
        11 => format!("ZREMRANGEBYRANK {k} {i} {}", i + 1),
        12 => format!("ZREMRANGEBYSCORE {k} (0 {score}"),
        13 => format!("ZREMRANGEBYLEX {k} [w (y"),
        14 => format!("ZRANGESTORE {k2} {k} {i} -1"),
        15 => format!("ZUNIONSTORE {k2} 2 {k} {k2} WEIGHTS 2 {score}"),
        16 => format!("ZINTERSTORE {k2} 2 {k} {k2} AGGREGATE MAX"),
        17 => format!("ZDIFFSTORE {k2} 2 {k} {k2}"),
        18 => format!("BZPOPMIN {k} 0"),
        19 => format!("BZMPOP 0 1 {k} MIN COUNT 2"),
        20 => format!("SET {k} v"),
        21 => format!("PEXPIRE {k} {}", rng.below(30)),
        22 => format!("RENAME {k} {k2}"),
        23 => format!("COPY {k} {k2} REPLACE"),
        24 => format!("CONFIG SET zset-max-listpack-entries {}", rng.below(4)),
        _ => format!("DEL {k}"),
    }
}

#[test]
fn replay_and_rewrite_reproduce_sorted_sets() {
    let mut rng = Rng::new(11);
    for round in 0..20 {
        let mut s = Session::new();
        let mut log = HEADER.to_vec();
        for step in 0..150 {
            s.advance(rng.below(10));
            let command = random_command(&mut rng);
            log.extend(s.exec(&command).effects.to_bytes());
            if step % 30 == 29 {
                let context = format!("round {round} step {step} after {command}");
                s.assert_log_gives(&log, s.now, &context);
                let compact = rewrite(s.engine.store(), s.now);
                s.assert_log_gives(&compact, s.now, &format!("{context}: rewrite"));
            }
        }
    }
}

#[test]
fn sorted_sets_count_toward_maxmemory() {
    use crate::store::Zset;
    let member = Zset::member_cost(1);
    let mut s = Session::full(Config::default(), member, "ZADD z 1 a 2 b");
    s.transcript(
        r#"
        > ZADD z 3 c
        (error) OOM command not allowed when used memory > 'maxmemory'.
        // an estimate: a member
        > ZINCRBY z 1 a
        (error) OOM command not allowed when used memory > 'maxmemory'.
        > ZUNIONSTORE u 1 z
        (error) OOM command not allowed when used memory > 'maxmemory'.
        > ZRANGESTORE u z 0 -1
        (error) OOM command not allowed when used memory > 'maxmemory'.
    "#,
    );
    assert_eq!(run_line(&mut s, "ZPOPMIN z"), "a 1", "pops free memory");
    assert_eq!(s.run("ZADD z 3 c"), int(1), "room again");
}

#[test]
fn while_a_rewrite_runs_sorted_set_changes_are_logged_as_they_are() {
    let mut s = Session::after("ZADD z 1 a 2 b");
    s.engine.aof_rewrite_started(s.now);
    s.logs(
        r#"
        > ZADD z 3 c
        ZADD z 3 c
        > ZPOPMIN z
        ZREM z a
        // Emptied: a DEL after, as the new log's copy may hold other members.
        > ZREMRANGEBYRANK z 0 -1
        ZREMRANGEBYRANK z 0 -1
        DEL z
    "#,
    );
    s.engine.aof_rewrite_finished(Some(0), 0);
    s.run("ZADD z 1 a");
    assert_eq!(s.logged("ZPOPMIN z"), ["ZREM z a"]);
}

#[test]
fn a_large_set_is_logged_in_records_of_bounded_size() {
    use crate::commands::ZSET_MEMBERS_PER_RECORD;
    let mut s = Session::new();
    let members = ZSET_MEMBERS_PER_RECORD + 5;
    for i in 0..members {
        s.run(&format!("ZADD big {i} m{i}"));
    }
    let logged = s.logged("ZRANGESTORE copy big 0 -1");
    assert_eq!(logged.len(), 3, "DEL, then two ZADD records");
    let words: Vec<usize> = logged[1..].iter().map(|r| r.split(' ').count()).collect();
    assert_eq!(words, [2 + 2 * ZSET_MEMBERS_PER_RECORD, 2 + 2 * 5]);
}
