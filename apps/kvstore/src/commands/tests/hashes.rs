//! Hashes: `HSET` and friends, the hash type among the others, and how
//! hashes are logged, replayed and rewritten.

use alloc::format;

use super::*;
use crate::aof::{encode_record, replay, rewrite};
use crate::store::{CompactLimits, Hash, Store};

/// The field/value pairs of a flat `HGETALL`-style reply, sorted by field.
fn pairs(reply: Reply) -> Vec<(String, String)> {
    let Some(items) = reply.clone().into_items() else {
        panic!("not an array: {reply:?}");
    };
    let text = |item: &Reply| match item {
        Reply::Bulk(Some(b)) => String::from_utf8(b.clone()).unwrap(),
        other => panic!("not a bulk string: {other:?}"),
    };
    assert!(items.len() % 2 == 0, "fields and values alternate");
    let mut out: Vec<(String, String)> = items
        .chunks(2)
        .map(|pair| (text(&pair[0]), text(&pair[1])))
        .collect();
    out.sort();
    out
}

/// `(field, value)` pairs from literals.
fn expect(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(f, v)| (f.to_string(), v.to_string()))
        .collect()
}

#[test]
fn hset_counts_new_fields_and_hget_reads_them() {
    transcript(
        r#"
        > HSET user name ada lang rust
        (integer) 2
        // one new
        > HSET user name grace year 1906
        (integer) 1
        > HGET user name
        "grace"
        > HGET user missing
        (nil)
        > HGET nokey name
        (nil)
        > HSET user empty ""
        (integer) 1
        > HGET user empty
        ""
        > TYPE user
        hash
        > HSET user name
        (error) ERR wrong number of arguments for 'hset' command
        // pairs only
        > HSET user a 1 b
        (error) ERR wrong number of arguments for 'hset' command
        > HGET user
        (error) ERR wrong number of arguments for 'hget' command
    "#,
    );
}

#[test]
fn hmset_answers_ok_and_hsetnx_sets_only_new_fields() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > HMSET h a 1 b 2
        OK
        > HMSET h a
        (error) ERR wrong number of arguments for 'hmset' command
        // a exists
        > HSETNX h a 100
        (integer) 0
        > HSETNX h c 3
        (integer) 1
        // creates the key
        > HSETNX fresh f v
        (integer) 1
    "#,
    );
    assert_eq!(
        pairs(s.run("HGETALL h")),
        expect(&[("a", "1"), ("b", "2"), ("c", "3")])
    );
    assert_eq!(
        s.run("HSETNX h c"),
        err("ERR wrong number of arguments for 'hsetnx' command")
    );
}

#[test]
fn hmget_answers_nil_for_what_is_missing() {
    transcript(
        r#"
        > HSET h a 1 b 2
        (integer) 2
        > HMGET h a nope b
        1) "1"
        2) (nil)
        3) "2"
        > HMGET nokey a b
        1) (nil)
        2) (nil)
        > HMGET h
        (error) ERR wrong number of arguments for 'hmget' command
    "#,
    );
}

#[test]
fn hdel_removes_fields_and_the_last_one_takes_the_key() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > HSET h a 1 b 2 c 3
        (integer) 3
        // a counted once
        > HDEL h a nope a
        (integer) 1
        > HDEL h nope
        (integer) 0
        > HDEL nokey a
        (integer) 0
        > HLEN h
        (integer) 2
        > HDEL h b c
        (integer) 2
        // an empty hash is no key
        > EXISTS h
        (integer) 0
        > TYPE h
        none
        > DBSIZE
        (integer) 0
    "#,
    );
    assert_eq!(s.engine.store().used_memory(), 0);
}

#[test]
fn hexists_hlen_and_hstrlen() {
    transcript(
        r#"
        > HSET h name grace empty ""
        (integer) 2
        > HEXISTS h name
        (integer) 1
        > HEXISTS h nope
        (integer) 0
        > HEXISTS nokey name
        (integer) 0
        > HLEN h
        (integer) 2
        > HLEN nokey
        (integer) 0
        > HSTRLEN h name
        (integer) 5
        > HSTRLEN h empty
        (integer) 0
        > HSTRLEN h nope
        (integer) 0
        > HSTRLEN nokey name
        (integer) 0
    "#,
    );
}

#[test]
fn hkeys_hvals_and_hgetall_list_the_whole_hash() {
    let mut s = Session::after("HSET h a 1 b 2 c 3");
    assert_eq!(sorted(s.run("HKEYS h")), ["a", "b", "c"]);
    assert_eq!(sorted(s.run("HVALS h")), ["1", "2", "3"]);
    assert_eq!(
        pairs(s.run("HGETALL h")),
        expect(&[("a", "1"), ("b", "2"), ("c", "3")])
    );
    for empty in ["HKEYS nokey", "HVALS nokey", "HGETALL nokey"] {
        assert_eq!(s.run(empty), array(&[]), "{empty}");
    }
    // Fields and values are binary-safe.
    let set = [
        b"HSET".to_vec(),
        b"bin".to_vec(),
        b"f\0\r\n".to_vec(),
        b"\xff".to_vec(),
    ];
    assert_eq!(s.engine.execute(&set, &mut s.client, s.now).reply, int(1));
    let all = [b"HGETALL".to_vec(), b"bin".to_vec()];
    assert_eq!(
        s.engine.execute(&all, &mut s.client, s.now).reply,
        Reply::array(vec![
            Reply::bulk(&b"f\0\r\n"[..]),
            Reply::bulk(&b"\xff"[..])
        ])
    );
}

#[test]
fn hincrby_adds_to_integers() {
    let mut s = Session::new();
    s.transcript(
        r#"
        // a missing field is 0
        > HINCRBY h n 5
        (integer) 5
        > HINCRBY h n -7
        (integer) -2
        > HGET h n
        "-2"
    "#,
    );
    s.run("HSET h text abc big 9223372036854775807 spaced \" 1\"");
    s.transcript(
        r#"
        > HINCRBY h text 1
        (error) ERR hash value is not an integer
        > HINCRBY h spaced 1
        (error) ERR hash value is not an integer
        > HINCRBY h big 1
        (error) ERR increment or decrement would overflow
        > HINCRBY h n x
        (error) ERR value is not an integer or out of range
        > HINCRBY h n 1.5
        (error) ERR value is not an integer or out of range
        // errors change nothing
        > HGET h n
        "-2"
        > HINCRBY h n
        (error) ERR wrong number of arguments for 'hincrby' command
    "#,
    );
}

#[test]
fn hincrbyfloat_adds_like_incrbyfloat() {
    transcript(
        r#"
        > HINCRBYFLOAT h x 10.5
        "10.5"
        > HINCRBYFLOAT h x 0.1
        "10.6"
        > HINCRBYFLOAT h x -0.6
        "10"
        > HINCRBYFLOAT h x 5.0e3
        "5010"
        > HGET h x
        "5010"
        > HSET h text abc inf inf
        (integer) 2
        > HINCRBYFLOAT h text 1
        (error) ERR hash value is not a float
        > HINCRBYFLOAT h x abc
        (error) ERR value is not a valid float
        > HINCRBYFLOAT h x inf
        (error) ERR value is NaN or Infinity
        > HINCRBYFLOAT h inf 1
        (error) ERR increment would produce NaN or Infinity
        // errors change nothing
        > HGET h x
        "5010"
    "#,
    );
}

#[test]
fn wrong_types_are_refused_both_ways() {
    let mut s = Session::new();
    s.run("SET s text");
    s.run("HSET h f v");
    s.refuses_wrong_type(&[
        "HSET s f v",
        "HSETNX s f v",
        "HMSET s f v",
        "HGET s f",
        "HMGET s f",
        "HDEL s f",
        "HEXISTS s f",
        "HLEN s",
        "HSTRLEN s f",
        "HKEYS s",
        "HVALS s",
        "HGETALL s",
        "HINCRBY s f 1",
        "HINCRBYFLOAT s f 1",
        "GET h",
        "GETSET h v",
        "SET h v GET",
        "APPEND h v",
        "INCR h",
        "DECRBY h 2",
        "INCRBYFLOAT h 1",
        "STRLEN h",
        "GETRANGE h 0 1",
        "SETRANGE h 0 v",
        "GETDEL h",
        "GETEX h PERSIST",
    ]);
    s.transcript(
        r#"
        // the string is unchanged
        > GET s
        "text"
        // the hash too
        > HGETALL h
        1) "f"
        2) "v"
        > MGET s h
        1) "text"
        2) (nil)
        // the key exists
        > SETNX h v
        (integer) 0
        // SET and MSET replace whatever the key held.
        > SET h now-a-string
        OK
        > TYPE h
        string
    "#,
    );
    assert_eq!(
        s.engine.store().used_memory(),
        2 * Store::cost(1, 0) + 4 + 12
    );
}

#[test]
fn hash_keys_expire_and_move_like_any_key() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > HSET h f v
        (integer) 1
        > EXPIRE h 10
        (integer) 1
        > HSET h g w
        (integer) 1
        // a change keeps the TTL
        > TTL h
        (integer) 10
        > HDEL h g
        (integer) 1
        > TTL h
        (integer) 10
    "#,
    );
    s.advance(10_001);
    assert_eq!(s.logged("HGET h f"), ["DEL h"], "expired when touched");
    s.transcript(
        r#"
        // a new hash
        > HSET h f v
        (integer) 1
        > TTL h
        (integer) -1
        // RENAME, COPY and MOVE carry the hash, TTL included.
        > PEXPIRE h 5000
        (integer) 1
        > RENAME h r
        OK
        > HGET r f
        "v"
        > PTTL r
        (integer) 5000
        > COPY r c
        (integer) 1
        > HSET c g w
        (integer) 1
        // a copy is a copy
        > HLEN r
        (integer) 1
        > MOVE c 1
        (integer) 1
    "#,
    );
    s.run("SELECT 1");
    assert_eq!(pairs(s.run("HGETALL c")), expect(&[("f", "v"), ("g", "w")]));
    assert_eq!(s.run("PTTL c"), int(5000));
}

#[test]
fn scan_filters_by_type() {
    let mut s = Session::new();
    s.run("SET s 1");
    s.run("HSET h f v");
    let keys_of = |reply: Reply| match reply {
        Reply::Array(Some(mut parts)) => sorted(parts.remove(1)),
        other => panic!("{other:?}"),
    };
    assert_eq!(keys_of(s.run("SCAN 0 TYPE hash")), ["h"]);
    assert_eq!(keys_of(s.run("SCAN 0 TYPE STRING")), ["s"]);
    assert_eq!(keys_of(s.run("SCAN 0")), ["h", "s"]);
    assert!(keys_of(s.run("SCAN 0 TYPE list")).is_empty());
}

#[test]
fn hashes_count_toward_maxmemory() {
    let fields = Hash::field_cost(1, 10);
    let mut s = Session::full(
        Config {
            // Maps from the first field: their costs are the estimates.
            hash_compact: CompactLimits {
                entries: 0,
                value: 0,
            },
            ..Config::default()
        },
        fields,
        "HSET h a 0123456789 b 0123456789",
    );
    s.transcript(
        r#"
        > HSET h c 0123456789
        (error) OOM command not allowed when used memory > 'maxmemory'.
        > HSETNX h c 1
        (error) OOM command not allowed when used memory > 'maxmemory'.
        > HINCRBY h c 1
        (error) OOM command not allowed when used memory > 'maxmemory'.
        // same size is fine
        > HSET h a 9876543210
        (integer) 0
        > HDEL h b
        (integer) 1
        // room again
        > HSET h c 0123456789
        (integer) 1
    "#,
    );
}

#[test]
fn transactions_queue_hash_commands() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > MULTI
        OK
        > HSET h f 1
        QUEUED
        > HINCRBY h f 2
        QUEUED
        > HGET h f
        QUEUED
    "#,
    );
    let out = s.exec("EXEC");
    assert_eq!(out.reply, array(&[int(1), int(3), bulk("3")]));
    assert_eq!(shown(&out.effects), ["HSET h f 1", "HSET h f 3"]);
    // WATCH sees a change to a field.
    s.run("WATCH h");
    s.run("HSET h g 1");
    s.run("MULTI");
    s.run("HDEL h f");
    assert_eq!(s.run("EXEC"), Reply::Array(None));
}

#[test]
fn hash_writes_log_their_effect() {
    let mut s = Session::new();
    s.logs(
        r#"
        > HSET h a 1 b 2
        HSET h a 1 b 2
        > HMSET h a 3
        HSET h a 3
        > HSETNX h a 9
        (nothing)
        > HSETNX h c 4
        HSET h c 4
        > HINCRBY h a 10
        HSET h a 13
        > HINCRBYFLOAT h b 0.5
        HSET h b 2.5
        > HDEL h a nope
        HDEL h a
        > HDEL h nope
        (nothing)
        // errors
        > HINCRBY h c x
        (nothing)
        // reads
        > HGETALL h
        (nothing)
    "#,
    );
    s.run("PEXPIRE h 60000");
    let at = s.now + 60_000;
    assert_eq!(
        s.logged("RENAME h r"),
        [
            "DEL h".to_string(),
            "DEL r".to_string(),
            format!("HSET r {}", hash_fields(&mut s, "r")),
            format!("PEXPIREAT r {at}"),
        ]
    );
}

/// The fields and values of hash `key` as `HSET` lists them, in the
/// store's order.
fn hash_fields(s: &mut Session, key: &str) -> String {
    let hash = s
        .engine
        .store()
        .get(key.as_bytes())
        .unwrap()
        .hash()
        .unwrap();
    let words: Vec<String> = hash
        .iter()
        .flat_map(|(f, v)| [f, v])
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    words.join(" ")
}

#[test]
fn while_a_rewrite_runs_hash_changes_are_logged_as_they_are() {
    let mut s = Session::after("HSET h a 1 b 2");
    s.engine.aof_rewrite_started(s.now);
    // Before the scan reaches `h` and after: the same records.
    assert_eq!(s.logged("HSET h c 3"), ["HSET h c 3"]);
    assert!(!s.engine.aof_rewrite_step(usize::MAX, &mut Vec::new()));
    assert_eq!(s.logged("HINCRBY h a 1"), ["HSET h a 2"]);
    // Emptied before the scan reached it: a DEL follows, since the new
    // log's copy of the key may not be empty (see `Exec::emptied`).
    s.engine.aof_rewrite_finished(None, 0);
    s.engine.aof_rewrite_started(s.now);
    assert_eq!(s.logged("HDEL h a b c"), ["HDEL h a b c", "DEL h"]);
    s.engine.aof_rewrite_finished(None, 0);
    s.run("HSET h a 1");
    assert_eq!(s.logged("HDEL h a"), ["HDEL h a"], "no rewrite, no DEL");
}

#[test]
fn the_log_and_a_rewrite_reproduce_hashes() {
    let mut s = Session::new();
    let log = s.log_lines(
        r#"
        HSET user name ada lang rust
        HMSET user year 1815
        HSETNX user name nobody
        HINCRBY counters visits 41
        HINCRBY counters visits 1
        HINCRBYFLOAT counters ratio 0.25
        HDEL user lang
        HSET temp f v
        HDEL temp f
        HSET volatile f v
        EXPIRE volatile 100
        SET plain string
        RENAME user person
    "#,
    );
    let now = s.now;
    s.assert_reloads(&log);
    // The rewrite: one record per string or hash, plus the hash's expiry.
    let compact = rewrite(s.engine.store(), now);
    let mut records = Vec::new();
    replay(&compact, |args| records.push(show(&args)));
    records.sort();
    assert_eq!(
        records,
        [
            "HSET counters visits 42 ratio 0.25".to_string(),
            "HSET person name ada year 1815".to_string(),
            "HSET volatile f v".to_string(),
            format!("PEXPIREAT volatile {}", now + 100_000),
            "SET plain string".to_string(),
        ]
        .map(|r| canonical(&s, &r))
    );
    s.assert_reloads(&compact);
}

/// `record` with an `HSET`'s pairs in the store's field order (the order
/// a rewrite writes them in).
fn canonical(s: &Session, record: &str) -> String {
    let words: Vec<&str> = record.split(' ').collect();
    if words[0] != "HSET" {
        return record.to_string();
    }
    let hash = s
        .engine
        .store()
        .get(words[1].as_bytes())
        .unwrap()
        .hash()
        .unwrap();
    let mut out = vec!["HSET".to_string(), words[1].to_string()];
    for (field, value) in hash.iter() {
        out.push(String::from_utf8_lossy(field).into_owned());
        out.push(String::from_utf8_lossy(value).into_owned());
    }
    let given: Vec<&[&str]> = words[2..].chunks(2).collect();
    assert_eq!(given.len(), hash.len(), "{record}");
    out.join(" ")
}

#[test]
fn hrandfield_picks_fields_at_random() {
    let mut s = Session::after("HSET h a 1 b 2 c 3");
    assert_one_of(s.run("HRANDFIELD h"), &["a", "b", "c"]);
    assert_eq!(s.run("HRANDFIELD nokey"), nil());
    // A positive count: distinct fields, at most all of them.
    let two = words(s.run("HRANDFIELD h 2"));
    assert_eq!(two.len(), 2);
    assert_ne!(two[0], two[1]);
    assert_eq!(sorted(s.run("HRANDFIELD h 10")), ["a", "b", "c"]);
    assert_eq!(s.run("HRANDFIELD h 0"), array(&[]));
    // A negative count: exactly that many, repeats allowed.
    let many = words(s.run("HRANDFIELD h -50"));
    assert_eq!(many.len(), 50);
    assert!(many.iter().all(|f| ["a", "b", "c"].contains(&f.as_str())));
    assert!(many.iter().any(|f| f != &many[0]), "not always the same");
    // WITHVALUES: each field followed by its own value.
    let with = words(s.run("HRANDFIELD h -7 withvalues"));
    assert_eq!(with.len(), 14);
    for pair in with.chunks(2) {
        let expected = match pair[0].as_str() {
            "a" => "1",
            "b" => "2",
            _ => "3",
        };
        assert_eq!(pair[1], expected);
    }
    assert_eq!(pairs(s.run("HRANDFIELD h 3 WITHVALUES")).len(), 3);
    s.transcript(
        r#"
        > HRANDFIELD nokey 5
        (empty array)
        > HRANDFIELD nokey -5 WITHVALUES
        (empty array)
    "#,
    );
}

#[test]
fn hrandfield_errors() {
    let mut s = Session::new();
    s.run("HSET h a 1");
    s.run("SET s v");
    s.transcript(r#"
        > HRANDFIELD h x
        (error) ERR value is not an integer or out of range
        > HRANDFIELD h 1 WITHSCORES
        (error) ERR syntax error
        > HRANDFIELD h 1 WITHVALUES extra
        (error) ERR syntax error
        > HRANDFIELD h -9223372036854775808
        (error) ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807
        > HRANDFIELD h -4611686018427387904 WITHVALUES
        (error) ERR value is out of range
        // the count is read before the key
        > HRANDFIELD nokey x
        (error) ERR value is not an integer or out of range
        > HRANDFIELD s
        (error) WRONGTYPE Operation against a key holding the wrong kind of value
        > HRANDFIELD s 2
        (error) WRONGTYPE Operation against a key holding the wrong kind of value
    "#);
    // A count no memory could answer fails the command, not the server.
    assert!(matches!(
        s.run("HRANDFIELD h -9223372036854775807"),
        Reply::Error(e) if e.starts_with("OOM")
    ));
    assert_eq!(
        s.run("HRANDFIELD"),
        err("ERR wrong number of arguments for 'hrandfield' command")
    );
}

#[test]
fn hscan_walks_every_field_with_its_value() {
    let mut s = Session::new();
    for i in 0..100 {
        s.run(&format!("HSET big f{i} v{i}"));
    }
    let words = full_scan(&mut s, "HSCAN big", "COUNT 7", |_, _| {});
    let mut seen = pairs(Reply::array(words.iter().map(|w| bulk(w)).collect()));
    seen.dedup();
    assert_eq!(seen.len(), 100);
    assert!(seen.iter().all(|(f, v)| f[1..] == v[1..]));
    // MATCH filters fields; a missing key is an empty, finished scan.
    let Reply::Array(Some(parts)) = s.run("HSCAN big 0 MATCH f1? COUNT 1000") else {
        panic!("HSCAN answers an array");
    };
    assert_eq!(parts[0], bulk("0"));
    assert_eq!(pairs(parts[1].clone()).len(), 10);
    assert_eq!(s.run("HSCAN nokey 0"), array(&[bulk("0"), array(&[])]));
}

#[test]
fn hscan_errors() {
    transcript(
        r#"
        > HSET h a 1
        (integer) 1
        > SET s v
        OK
        > HSCAN h x
        (error) ERR invalid cursor
        > HSCAN h -1
        (error) ERR invalid cursor
        > HSCAN s 0
        (error) WRONGTYPE Operation against a key holding the wrong kind of value
        > HSCAN h 0 COUNT x
        (error) ERR value is not an integer or out of range
        > HSCAN h 0 COUNT 0
        (error) ERR syntax error
        > HSCAN h 0 MATCH
        (error) ERR syntax error
        > HSCAN h 0 TYPE hash
        (error) ERR syntax error
        > HSCAN h
        (error) ERR wrong number of arguments for 'hscan' command
    "#,
    );
}

#[test]
fn hashes_copied_and_moved_between_databases_replay_there() {
    let mut s = Session::new();
    let log = s.log_lines(
        r#"
        HSET h a 1 b 2
        PEXPIRE h 50000
        SELECT 3
        SET h2 old-string
        SELECT 0
        COPY h h2 DB 3 REPLACE
        MOVE h 5
        SELECT 5
        HDEL h a
    "#,
    );
    let now = s.now;
    let every_db = |engine: &Engine| -> Vec<Vec<(Vec<u8>, crate::store::Entry)>> {
        engine
            .databases()
            .iter()
            .map(|db| {
                let mut keys: Vec<_> = db
                    .iter()
                    .filter(|(_, e)| !e.is_expired(now))
                    .map(|(k, e)| (k.to_vec(), e.clone()))
                    .collect();
                keys.sort_by(|a, b| a.0.cmp(&b.0));
                keys
            })
            .collect()
    };
    let expected = every_db(&s.engine);
    assert_eq!(expected[3][0].1.hash().unwrap().len(), 2, "the copy");
    assert_eq!(expected[5][0].1.hash().unwrap().len(), 1, "the moved one");
    assert_eq!(every_db(&load(&log, s.now)), expected);
    // And a rewrite of every database.
    let new_log = s.rewrite(1, |_| Default::default());
    assert_eq!(every_db(&load(&new_log, s.now)), expected);
}

#[test]
fn hrandfield_refuses_a_reply_bigger_than_one_reply_may_take() {
    let mut s = Session::after("CONFIG SET proto-max-bulk-len 1mb");
    let value = "v".repeat(100_000);
    s.run(&format!("HSET h f {value}"));
    assert!(s.run("HRANDFIELD h -5 WITHVALUES").to_bytes().len() > 500_000);
    assert!(matches!(
        s.run("HRANDFIELD h -20 WITHVALUES"),
        Reply::Error(e) if e.starts_with("OOM the reply would take 2000020 bytes")
    ));
    assert!(
        matches!(
            s.run("HRANDFIELD h -1000000000"),
            Reply::Error(e) if e.starts_with("OOM"),
        ),
        "a huge count is refused before anything is drawn"
    );
    s.run("CONFIG SET client-output-buffer-limit \"normal 4mb 0 0\"");
    assert!(
        !s.run("HRANDFIELD h -20 WITHVALUES").is_error(),
        "the output limit rules when set"
    );
}

#[test]
fn small_hashes_are_compact_up_to_the_configured_limits() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > CONFIG GET hash-max-ziplist-value
        1) "hash-max-ziplist-value"
        2) "64"
        > HSET small a 1 b 2
        (integer) 2
        > OBJECT ENCODING small
        "listpack"
        > HGETALL small
        1) "a"
        2) "1"
        3) "b"
        4) "2"
        > CONFIG SET hash-max-ziplist-value 4
        OK
        // one setting under two names
        > CONFIG GET hash-max-listpack-value
        1) "hash-max-listpack-value"
        2) "4"
        // until it next grows
        > OBJECT ENCODING small
        "listpack"
        > HSET small c 12345
        (integer) 1
        > OBJECT ENCODING small
        "hashtable"
        > HGET small c
        "12345"
        > CONFIG SET hash-max-listpack-entries 2
        OK
    "#,
    );
    s.run("HSET other a 1 b 2");
    assert_eq!(s.run("OBJECT ENCODING other"), bulk("listpack"));
    s.run("HINCRBY other c 1");
    assert_eq!(s.run("OBJECT ENCODING other"), bulk("hashtable"));
    assert!(s.run("CONFIG SET hash-max-listpack-entries -1").is_error());
}

#[test]
fn a_compact_hash_replays_the_same_from_the_log_and_a_rewrite() {
    let mut s = Session::new();
    let mut log = Vec::new();
    for cmd in ["HSET h a 1 b 2", "HSET h a 3", "HDEL h b", "HINCRBY h n 5"] {
        log.push(s.exec(cmd).effects);
    }
    let mut replayed = Session::new();
    for effects in &log {
        for cmd in effects.commands() {
            replayed.engine.load(cmd.clone(), 0).unwrap();
        }
    }
    replayed.transcript(
        r#"
        > HGETALL h
        1) "a"
        2) "3"
        3) "n"
        4) "5"
        > OBJECT ENCODING h
        "listpack"
    "#,
    );
}

#[test]
fn memory_usage_is_what_a_key_counts_for() {
    let mut s = Session::new();
    s.run("HSET h a 1 b 2");
    s.run("SET k hello");
    let Reply::Integer(hash) = s.run("MEMORY USAGE h") else {
        panic!("an integer")
    };
    let Reply::Integer(string) = s.run("MEMORY USAGE k SAMPLES 5") else {
        panic!("an integer")
    };
    assert_eq!((hash + string) as usize, s.engine.store().used_memory());
    assert_eq!(string as usize, Store::cost(1, 5));
    s.transcript(
        r#"
        > MEMORY USAGE missing
        (nil)
        > MEMORY USAGE k SAMPLES
        (error) ERR syntax error
    "#,
    );
}

#[test]
fn a_rewrite_hands_a_large_key_over_a_record_at_a_time() {
    let mut s = Session::new();
    let fields: Vec<String> = (0..300).map(|i| format!("f{i} v{i}")).collect();
    s.run(&format!("HSET h {}", fields.join(" ")));
    s.engine.aof_rewrite_started(s.now);
    let mut new_log = Vec::new();
    while !s.engine.aof_rewrite_step(usize::MAX, &mut new_log) {}
    s.engine.aof_rewrite_finished(None, 0);
    // 128 + 128 + 44 fields, never the whole hash in one record.
    let mut sizes = Vec::new();
    replay(&new_log, |args| sizes.push(encode_record(&args).len()));
    assert_eq!(sizes.len(), 3);
    assert!(sizes.iter().all(|&size| size < new_log.len() / 2));
    assert_eq!(live(&load(&new_log, s.now), s.now), live(&s.engine, s.now));
}
