//! Sets: `SADD` and friends, their encodings, the set type among the
//! others, and how sets are logged, replayed and rewritten.

use alloc::format;

use super::*;
use crate::aof::{replay, rewrite};
use crate::store::{Set, Store, INT_MEMBER_SIZE};

#[test]
fn sadd_scard_sismember_smismember_smembers() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > SADD myset foo
        (integer) 1
        > SADD myset bar
        (integer) 1
        > SADD myset bar
        (integer) 0
        // a counted once
        > SADD myset a b a c
        (integer) 3
        > SCARD myset
        (integer) 5
        > SISMEMBER myset foo
        (integer) 1
        > SISMEMBER myset bla
        (integer) 0
    "#,
    );
    assert_eq!(ints(s.run("SMISMEMBER myset foo bla bar")), [1, 0, 1]);
    assert_eq!(
        sorted(s.run("SMEMBERS myset")),
        ["a", "b", "bar", "c", "foo"]
    );
    s.transcript(
        r#"
        > TYPE myset
        set
        // A missing key is an empty set.
        > SCARD nokey
        (integer) 0
        > SISMEMBER nokey a
        (integer) 0
    "#,
    );
    assert_eq!(ints(s.run("SMISMEMBER nokey a b")), [0, 0]);
    assert_eq!(s.run("SMEMBERS nokey"), array(&[]));
    for (line, name) in [
        ("SADD myset", "sadd"),
        ("SMISMEMBER myset", "smismember"),
        ("SISMEMBER myset", "sismember"),
        ("SCARD", "scard"),
    ] {
        assert_eq!(
            s.run(line),
            err(&format!(
                "ERR wrong number of arguments for '{name}' command"
            )),
        );
    }
}

#[test]
fn srem_removes_members_and_the_last_one_takes_the_key() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > SADD myset a b c d
        (integer) 4
        > SREM myset k k k
        (integer) 0
        > SREM myset b d x y b
        (integer) 2
    "#,
    );
    assert_eq!(sorted(s.run("SMEMBERS myset")), ["a", "c"]);
    assert_eq!(s.run("SREM nokey a"), int(0));
    s.transcript(
        r#"
        > SADD nums 1 2 3
        (integer) 3
        > SREM nums 1 2 3 4 5 6 7 8
        (integer) 3
        // an empty set is no key
        > EXISTS nums
        (integer) 0
        > SREM myset a c
        (integer) 2
        > DBSIZE
        (integer) 0
    "#,
    );
    assert_eq!(s.engine.store().used_memory(), 0);
}

#[test]
fn integer_sets_are_intsets_up_to_the_configured_size() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > CONFIG GET set-max-intset-entries
        1) "set-max-intset-entries"
        2) "512"
        > SADD nums 17 16 -3
        (integer) 3
        > OBJECT ENCODING nums
        "intset"
        // sorted
        > SMEMBERS nums
        1) "-3"
        2) "16"
        3) "17"
        // not the integer 16
        > SISMEMBER nums 016
        (integer) 0
    "#,
    );
    s.run("SADD nums a");
    assert_eq!(s.run("OBJECT ENCODING nums"), bulk("hashtable"));
    s.run("SREM nums a");
    assert_eq!(
        s.run("OBJECT ENCODING nums"),
        bulk("hashtable"),
        "no way back"
    );
    s.transcript(
        r#"
        > SADD big 213244124402402314402033402
        (integer) 1
        // past 64 bits
        > OBJECT ENCODING big
        "hashtable"
        > SISMEMBER big 213244124402402314402033402
        (integer) 1
        // Small sets of strings are hash tables too (Redis 7.0 has no
        // listpack sets).
        > SADD words foo
        (integer) 1
        > OBJECT ENCODING words
        "hashtable"
        // One integer past the limit converts.
        > CONFIG SET set-max-intset-entries 4
        OK
        > SADD four 1 2 3 4
        (integer) 4
        > OBJECT ENCODING four
        "intset"
        > SADD four 5
        (integer) 1
        > OBJECT ENCODING four
        "hashtable"
        > SCARD four
        (integer) 5
    "#,
    );
    s.run("SADD many 1 2 3 4 5 6");
    assert_eq!(s.run("OBJECT ENCODING many"), bulk("hashtable"), "at once");
    assert!(s.run("CONFIG SET set-max-intset-entries -1").is_error());
}

#[test]
fn wrong_types_are_refused_both_ways() {
    let mut s = Session::new();
    s.run("SET str text");
    s.run("RPUSH list a");
    s.run("SADD set a");
    s.refuses_wrong_type(&[
        "SADD str a",
        "SREM list a",
        "SCARD str",
        "SISMEMBER list a",
        "SMISMEMBER str a",
        "SMEMBERS list",
        "SRANDMEMBER str",
        "SRANDMEMBER str 2",
        "SPOP list",
        "SPOP list 2",
        "SMOVE str set a",
        "SMOVE set str a",
        "SINTER set str",
        "SINTER nokey str",
        "SINTERCARD 2 set list",
        "SINTERSTORE dst str",
        "SUNION list nokey",
        "SUNIONSTORE dst set str",
        "SDIFF str set",
        "SDIFF set str",
        "SDIFFSTORE dst set list",
        "SSCAN str 0",
        "GET set",
        "APPEND set x",
        "INCR set",
        "HSET set f v",
        "HGET set f",
        "LPUSH set x",
        "LRANGE set 0 -1",
    ]);
    s.transcript(
        r#"
        // a failed store stores nothing
        > EXISTS dst
        (integer) 0
        > MGET str set
        1) "text"
        2) (nil)
        // unchanged
        > SMEMBERS set
        1) "a"
        // no source: 0 first
        > SMOVE nokey str a
        (integer) 0
    "#,
    );
}

#[test]
fn srandmember_picks_members_at_random() {
    let mut s = Session::after("SADD myset a b c");
    assert_one_of(s.run("SRANDMEMBER myset"), &["a", "b", "c"]);
    s.transcript(
        r#"
        > SRANDMEMBER nokey
        (nil)
        > SRANDMEMBER nokey 5
        (empty array)
        > SRANDMEMBER myset 0
        (empty array)
    "#,
    );
    let two = words(s.run("SRANDMEMBER myset 2"));
    assert_eq!(two.len(), 2);
    assert_ne!(two[0], two[1], "distinct");
    assert_eq!(sorted(s.run("SRANDMEMBER myset 100")), ["a", "b", "c"]);
    let many = words(s.run("SRANDMEMBER myset -100"));
    assert_eq!(many.len(), 100);
    for member in ["a", "b", "c"] {
        assert!(many.iter().any(|m| m == member), "{member} comes up");
    }
    // Intsets too, every member in time.
    s.run("SADD nums 1 2 3 4 5");
    let mut seen = Vec::new();
    for _ in 0..200 {
        let Reply::Bulk(Some(m)) = s.run("SRANDMEMBER nums") else {
            panic!("a member");
        };
        seen.push(m);
    }
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 5);
    assert_eq!(
        s.logged("SRANDMEMBER nums 3"),
        Vec::<String>::new(),
        "a read"
    );
}

#[test]
fn srandmember_errors_and_limits() {
    let mut s = Session::after("SADD myset a");
    s.transcript(r#"
        > SRANDMEMBER myset -9223372036854775808
        (error) ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807
        > SRANDMEMBER myset x
        (error) ERR value is not an integer or out of range
        > SRANDMEMBER myset 1 2
        (error) ERR syntax error
    "#);
    assert!(
        matches!(s.run("SRANDMEMBER myset -9223372036854775807"), Reply::Error(e) if e.starts_with("OOM")),
        "a count no memory could answer fails the command, not the server"
    );
    s.run("CONFIG SET proto-max-bulk-len 1mb");
    s.run(&format!("SADD big {}", "v".repeat(100_000)));
    assert!(matches!(
        s.run("SRANDMEMBER big -20"),
        Reply::Error(e) if e.starts_with("OOM the reply would take 2000000 bytes")
    ));
    assert_eq!(words(s.run("SRANDMEMBER big -5")).len(), 5);
}

#[test]
fn spop_removes_what_it_returns_and_logs_it() {
    let mut s = Session::after("SADD myset a b c");
    let out = s.exec("SPOP myset");
    let Reply::Bulk(Some(popped)) = out.reply else {
        panic!("a member");
    };
    let popped = String::from_utf8(popped).unwrap();
    assert_eq!(shown(&out.effects), [format!("SREM myset {popped}")]);
    assert_eq!(s.run("SCARD myset"), int(2));
    assert_eq!(
        s.run(&format!("SISMEMBER myset {popped}")),
        int(0),
        "gone from the set"
    );
    // With a count: distinct members, logged as their SREM.
    s.run("SADD nums 1 2 3 4 5 6 7 8 9 10");
    let out = s.exec("SPOP nums 3");
    let taken = words(out.reply);
    assert_eq!(taken.len(), 3);
    assert_eq!(
        shown(&out.effects),
        [format!("SREM nums {}", taken.join(" "))]
    );
    s.transcript(
        r#"
        > SCARD nums
        (integer) 7
        > SPOP nums 0
        (empty array)
    "#,
    );
    // All of it: the key goes, logged as DEL.
    let out = s.exec("SPOP nums 100");
    assert_eq!(words(out.reply).len(), 7);
    assert_eq!(shown(&out.effects), ["DEL nums"]);
    s.transcript(
        r#"
        > EXISTS nums
        (integer) 0
        > SPOP nokey
        (nil)
        > SPOP nokey 100
        (empty array)
        > SPOP myset -1
        (error) ERR value is out of range, must be positive
        // Redis 7.0 answers a count that is not a number as one below 0
        // (found by the differential test against redis-server, on RPOP).
        > SPOP myset x
        (error) ERR value is out of range, must be positive
        > SPOP myset 1 2
        (error) ERR syntax error
        // The last member takes the key.
        > DEL one
        (integer) 0
        > SADD one x
        (integer) 1
        > SPOP one
        "x"
        > EXISTS one
        (integer) 0
    "#,
    );
}

#[test]
fn smove_moves_a_member_between_sets() {
    let mut s = Session::new();
    s.run("SADD src 1 a b");
    s.run("SADD dst 2 3 4");
    assert_eq!(s.logged("SMOVE src dst a"), ["SMOVE src dst a"]);
    assert_eq!(sorted(s.run("SMEMBERS src")), ["1", "b"]);
    assert_eq!(sorted(s.run("SMEMBERS dst")), ["2", "3", "4", "a"]);
    s.transcript(
        r#"
        > OBJECT ENCODING dst
        "hashtable"
        > SMOVE src dst nope
        (integer) 0
        > SMOVE nokey dst 2
        (integer) 0
        > SMOVE src new 1
        (integer) 1
        > OBJECT ENCODING new
        "intset"
        // same key: a no-op
        > SMOVE src src b
        (integer) 1
        > SMOVE src src zz
        (integer) 0
        > SMOVE src dst b
        (integer) 1
        // the last member took the key
        > EXISTS src
        (integer) 0
    "#,
    );
    // A member the destination has already leaves the destination as it
    // was: a WATCH on it sees nothing.
    s.run("SADD from x y");
    s.run("SADD to x");
    s.run("WATCH to");
    assert_eq!(s.run("SMOVE from to x"), int(1));
    s.transcript(
        r#"
        > MULTI
        OK
        > SCARD to
        QUEUED
        > EXEC
        1) (integer) 1
        > SMEMBERS from
        1) "y"
    "#,
    );
}

/// Sets `set1`..`set5` as Redis's test suite builds them: 1, 2 and 4
/// big, 3 and 5 small, all integers but for `extra`.
fn suite_sets(s: &mut Session, extra: &str) {
    let list = |range: core::ops::Range<i64>, add: i64| -> String {
        let words: Vec<String> = range.map(|i| format!("{}", i + add)).collect();
        words.join(" ")
    };
    s.run(&format!("SADD set1 {} {extra}", list(0..200, 0)));
    s.run(&format!("SADD set2 {} {extra}", list(0..200, 195)));
    s.run(&format!("SADD set3 199 195 1000 2000 {extra}"));
    s.run(&format!("SADD set4 {} {extra}", list(5..200, 0)));
    s.run(&format!("SADD set5 0 {extra}"));
}

#[test]
fn sinter_sunion_sdiff_and_their_stores() {
    for (extra, encoding) in [("foo", "hashtable"), ("200", "intset")] {
        let mut s = Session::new();
        suite_sets(&mut s, extra);
        for i in 1..=5 {
            assert_eq!(s.run(&format!("OBJECT ENCODING set{i}")), bulk(encoding));
        }
        let mut expected: Vec<String> = ["195", "196", "197", "198", "199", extra]
            .map(String::from)
            .to_vec();
        expected.sort();
        assert_eq!(sorted(s.run("SINTER set1 set2")), expected);
        s.expect(&[
            ("SINTERCARD 2 set1 set2", int(6)),
            ("SINTERCARD 2 set1 set2 LIMIT 0", int(6)),
            ("SINTERCARD 2 set1 set2 limit 3", int(3)),
            ("SINTERSTORE res set1 set2", int(6)),
            ("OBJECT ENCODING res", bulk(encoding)),
        ]);
        assert_eq!(sorted(s.run("SMEMBERS res")), expected);
        let mut three = vec![String::from("195"), String::from("199"), extra.into()];
        three.sort();
        assert_eq!(sorted(s.run("SINTER set1 set2 set3")), three);
        assert_eq!(s.run("SINTERCARD 3 set1 set2 set3 LIMIT 2"), int(2));
        // 0..=394, and `extra` if it is not one of them.
        let union = if extra == "foo" { 396 } else { 395 };
        s.expect(&[
            ("SUNIONSTORE res set1 set2", int(union)),
            ("OBJECT ENCODING res", bulk(encoding)),
        ]);
        assert_eq!(
            sorted(s.run("SUNION nokey1 set1 set2 nokey2")).len(),
            union as usize
        );
        assert_eq!(sorted(s.run("SDIFF set1 set4")), ["0", "1", "2", "3", "4"]);
        assert_eq!(sorted(s.run("SDIFF set1 set4 set5")), ["1", "2", "3", "4"]);
        s.transcript(
            r#"
            > SDIFFSTORE res set1 set4 set5
            (integer) 4
            > OBJECT ENCODING res
            "intset"
            > SDIFF set1 set1 set1
            (empty array)
        "#,
        );
        assert_eq!(
            sorted(s.run("SINTER set1 set1 set1")),
            sorted(s.run("SMEMBERS set1"))
        );
    }
}

#[test]
fn a_union_past_the_intset_limit_is_a_hash_table() {
    transcript(
        r#"
        > CONFIG SET set-max-intset-entries 3
        OK
        > SADD a 1 2
        (integer) 2
        > SADD b 3 4
        (integer) 2
        > SUNIONSTORE u a b
        (integer) 4
        > OBJECT ENCODING u
        "hashtable"
        > SINTERSTORE i a u
        (integer) 2
        > OBJECT ENCODING i
        "intset"
    "#,
    );
}

#[test]
fn stores_replace_or_delete_the_destination() {
    let mut s = Session::new();
    s.run("SET res xxx");
    s.run("EXPIRE res 100");
    assert_eq!(s.logged("SINTERSTORE res nokey1 nokey2"), ["DEL res"]);
    assert_eq!(s.run("EXISTS res"), int(0));
    assert_eq!(s.logged("SUNIONSTORE res nokey1"), Vec::<String>::new());
    s.transcript(
        r#"
        > SADD a x y
        (integer) 2
        > SADD b y z
        (integer) 2
        > SET res string
        OK
        > EXPIRE res 100
        (integer) 1
        > SDIFFSTORE res a b
        (integer) 1
        // the old key's expiry went with it
        > TTL res
        (integer) -1
        > SMEMBERS res
        1) "x"
    "#,
    );
    assert_eq!(
        s.logged("SUNIONSTORE res a b"),
        [
            "DEL res".to_string(),
            format!("SADD res {}", members(&s, "res"))
        ]
    );
    s.transcript(
        r#"
        > SCARD res
        (integer) 3
        // A source may be the destination.
        > SINTERSTORE a a b
        (integer) 1
        > SMEMBERS a
        1) "y"
        > SDIFFSTORE a a b
        (integer) 0
        > EXISTS a
        (integer) 0
    "#,
    );
}

/// The members of set `key` as `SADD` lists them, in the store's order.
fn members(s: &Session, key: &str) -> String {
    let set = s.engine.store().get(key.as_bytes()).unwrap().set().unwrap();
    let words: Vec<String> = set
        .iter()
        .map(|m| String::from_utf8_lossy(&m).into_owned())
        .collect();
    words.join(" ")
}

#[test]
fn sintercard_argument_errors() {
    let mut s = Session::new();
    for (line, error) in [
        (
            "SINTERCARD 1",
            "ERR wrong number of arguments for 'sintercard' command",
        ),
        ("SINTERCARD 0 myset", "ERR numkeys should be greater than 0"),
        ("SINTERCARD a myset", "ERR numkeys should be greater than 0"),
        (
            "SINTERCARD 2 myset",
            "ERR Number of keys can't be greater than number of args",
        ),
        ("SINTERCARD 1 myset myset2", "ERR syntax error"),
        ("SINTERCARD 1 myset LIMIT", "ERR syntax error"),
        ("SINTERCARD 1 myset LIMIT -1", "ERR LIMIT can't be negative"),
        ("SINTERCARD 1 myset LIMIT a", "ERR LIMIT can't be negative"),
    ] {
        assert_eq!(s.run(line), err(error), "{line}");
    }
    assert_eq!(s.run("SINTERCARD 1 nokey LIMIT 10"), int(0));
}

#[test]
fn sscan_walks_every_member() {
    let mut s = Session::new();
    for i in 0..100 {
        s.run(&format!("SADD big m{i}"));
    }
    let mut seen = full_scan(&mut s, "SSCAN big", "COUNT 7", |_, _| {});
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 100);
    let Reply::Array(Some(parts)) = s.run("SSCAN big 0 MATCH m1? COUNT 1000") else {
        panic!("SSCAN answers an array");
    };
    assert_eq!(parts[0], bulk("0"));
    assert_eq!(words(parts[1].clone()).len(), 10);
    s.transcript(
        r#"
        // An intset comes whole.
        > SADD nums 3 1 2
        (integer) 3
        > SSCAN nums 0 COUNT 1
        1) "0"
        2) 1) "1"
           2) "2"
           3) "3"
        > SSCAN nokey 0
        1) "0"
        2) (empty array)
        > SSCAN big x
        (error) ERR invalid cursor
        > SSCAN big 0 COUNT 0
        (error) ERR syntax error
        > SSCAN big 0 TYPE set
        (error) ERR syntax error
    "#,
    );
}

#[test]
fn set_keys_expire_copy_rename_and_move_like_any_key() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > SADD s a b
        (integer) 2
        > PEXPIRE s 5000
        (integer) 1
        > SADD s c
        (integer) 1
        // a change keeps the TTL
        > PTTL s
        (integer) 5000
        > RENAME s r
        OK
        > SCARD r
        (integer) 3
        > COPY r c
        (integer) 1
        > SADD c d
        (integer) 1
        // a copy is a copy
        > SCARD r
        (integer) 3
        > MOVE c 1
        (integer) 1
    "#,
    );
    let keys_of = |reply: Reply| match reply {
        Reply::Array(Some(mut parts)) => sorted(parts.remove(1)),
        other => panic!("{other:?}"),
    };
    s.run("SET str v");
    assert_eq!(keys_of(s.run("SCAN 0 TYPE set")), ["r"]);
    s.run("SELECT 1");
    assert_eq!(sorted(s.run("SMEMBERS c")), ["a", "b", "c", "d"]);
    assert_eq!(s.run("PTTL c"), int(5000));
    s.advance(5001);
    assert_eq!(
        s.logged("SCARD c"),
        ["SELECT 1", "DEL c"],
        "expired when touched"
    );
    assert_eq!(s.run("SCARD c"), int(0));
}

#[test]
fn sets_count_toward_maxmemory() {
    let member = Set::map_member_cost(10);
    let mut s = Session::full(Config::default(), member, "SADD s aaaaaaaaaa bbbbbbbbbb");
    s.transcript(
        r#"
        > SADD s cccccccccc
        (error) OOM command not allowed when used memory > 'maxmemory'.
        // nothing new is fine
        > SADD s aaaaaaaaaa
        (integer) 0
        > SUNIONSTORE t s
        (error) OOM command not allowed when used memory > 'maxmemory'.
        > SMOVE s t aaaaaaaaaa
        (error) OOM command not allowed when used memory > 'maxmemory'.
        > SREM s bbbbbbbbbb
        (integer) 1
        // room again
        > SADD s cccccccccc
        (integer) 1
    "#,
    );
    // Intsets cost eight bytes a member.
    let mut s = Session::after("SADD n 1 2 3");
    assert_eq!(
        s.engine.store().used_memory(),
        Store::cost(1, 3 * INT_MEMBER_SIZE)
    );
    let Reply::Integer(usage) = s.run("MEMORY USAGE n") else {
        panic!("an integer");
    };
    assert_eq!(usage as usize, s.engine.store().used_memory());
}

#[test]
fn transactions_queue_set_commands() {
    let mut s = Session::new();
    s.run("SADD myset a");
    s.run("MULTI");
    assert_eq!(s.run("SPOP myset"), Reply::Simple("QUEUED".into()));
    let out = s.exec("EXEC");
    assert_eq!(out.reply, array(&[bulk("a")]));
    assert_eq!(shown(&out.effects), ["SREM myset a"]);
    assert_eq!(s.run("EXISTS myset"), int(0));
}

#[test]
fn set_writes_log_their_effect() {
    let mut s = Session::new();
    s.logs(
        r#"
        > SADD s a b a
        SADD s a b a
        // nothing new
        > SADD s a
        (nothing)
        > SREM s a nope
        SREM s a
        > SREM s nope
        (nothing)
        > SMOVE s t nope
        (nothing)
        // reads
        > SINTER s t
        (nothing)
    "#,
    );
}

#[test]
fn while_a_rewrite_runs_set_changes_are_logged_as_they_are() {
    let mut s = Session::after("SADD s a b");
    s.engine.aof_rewrite_started(s.now);
    s.logs(
        r#"
        > SADD s c
        SADD s c
        // A move out of a set the new log does not hold yet would move
        // nothing there: a removal and an add.
        > SMOVE s t a
        SREM s a
        SADD t a
        // Emptied: a DEL after, as the new log's copy may hold other members.
        > SREM s b c
        SREM s b c
        DEL s
    "#,
    );
    while !s.engine.aof_rewrite_step(1, &mut Vec::new()) {}
    s.logs(
        r#"
        > SMOVE t s a
        SMOVE t s a
        > SREM s a
        SREM s a
    "#,
    );
    s.engine.aof_rewrite_finished(Some(0), 0);
}

#[test]
fn a_rewrite_writes_a_large_set_in_records_of_128() {
    let mut s = Session::new();
    let members: Vec<String> = (0..300).map(|i| format!("m{i}")).collect();
    s.run(&format!("SADD big {}", members.join(" ")));
    s.run("SADD nums 1 2 3");
    s.run("EXPIRE nums 100");
    let compact = rewrite(s.engine.store(), s.now);
    let mut records = Vec::new();
    replay(&compact, |args| records.push(args));
    let sizes: Vec<usize> = records
        .iter()
        .filter(|r| r[1] == b"big")
        .map(|r| r.len() - 2)
        .collect();
    assert_eq!(sizes, [128, 128, 44]);
    s.assert_reloads(&compact);
}

#[test]
fn the_log_reproduces_sets() {
    let mut s = Session::new();
    let log = s.log_lines(
        r#"
        SADD s a b c d e f
        SADD n 1 2 3 4 5
        SPOP s
        SPOP n 2
        SREM s a
        SMOVE s n b
        SMOVE n fresh 1
        SINTERSTORE i s n
        SUNIONSTORE u s n fresh
        SDIFFSTORE d u s
        SPOP fresh 10
    "#,
    );
    s.assert_reloads(&log);
}

/// What a `PSUBSCRIBE *` client hears (`channel message`) while `lines`
/// run with `notify-keyspace-events` set to `setting`.
fn heard(setting: &str, lines: &[&str]) -> Vec<String> {
    let mut s = super::notify::listening(setting);
    for line in lines {
        s.run(line);
    }
    super::notify::heard(&mut s)
}

#[test]
fn set_commands_notify_as_redis_does() {
    assert_eq!(
        heard(
            "Ks",
            &[
                "SADD s a b c d",
                "SREM s x",
                "SADD s x y z",
                "SADD s x",
                "SREM s x"
            ]
        ),
        [
            "__keyspace@0__:s sadd",
            "__keyspace@0__:s sadd",
            "__keyspace@0__:s srem"
        ],
        "only changes are heard"
    );
    assert_eq!(
        heard("Ksg", &["SADD s a", "SADD t b", "SMOVE s t a", "SPOP t 5"]),
        [
            "__keyspace@0__:s sadd",
            "__keyspace@0__:t sadd",
            "__keyspace@0__:s srem",
            "__keyspace@0__:s del",
            "__keyspace@0__:t sadd",
            "__keyspace@0__:t spop",
            "__keyspace@0__:t del",
        ]
    );
    assert_eq!(
        heard(
            "Eg$s",
            &[
                "SADD a 1",
                "SINTERSTORE d a",
                "SUNIONSTORE d a",
                "SDIFFSTORE d a a",
                "SPOP a"
            ]
        ),
        [
            "__keyevent@0__:sadd a",
            "__keyevent@0__:sinterstore d",
            "__keyevent@0__:sunionstore d",
            "__keyevent@0__:del d",
            "__keyevent@0__:spop a",
            "__keyevent@0__:del a",
        ]
    );
}

#[test]
fn random_pops_and_moves_keep_every_set_whole() {
    let mut s = Session::new();
    let mut rng = faultline_rng::Rng::new(99);
    for step in 0..3000 {
        let k = rng.pick(&["a", "b", "c"]);
        let k2 = rng.pick(&["a", "b", "c"]);
        let m = format!("m{}", rng.below(300));
        let line = match rng.below(8) {
            0..=2 => format!("SADD {k} {m} x{m}"),
            3 => format!("SREM {k} {m}"),
            4 => format!("SPOP {k}"),
            5 => format!("SPOP {k} {}", rng.below(20)),
            6 => format!("SMOVE {k} {k2} {m}"),
            _ => format!("SRANDMEMBER {k} -{}", 1 + rng.below(5)),
        };
        assert!(!s.run(&line).is_error(), "{line}");
        for (key, entry) in s.engine.store().iter() {
            let set = entry.set().unwrap();
            assert!(set.slots_consistent(), "step {step}: {line} on {key:?}");
        }
    }
    assert_eq!(
        s.engine.used_memory(),
        s.engine
            .store()
            .iter()
            .map(|(k, e)| {
                let set = e.set().unwrap();
                let members = set.iter().map(|m| set.member_cost(m.len())).sum();
                Store::cost(k.len(), members)
            })
            .sum::<usize>()
    );
}
