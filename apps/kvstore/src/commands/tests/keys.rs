use alloc::collections::BTreeSet;
use alloc::format;

use super::*;

#[test]
fn del_counts_only_existing_keys() {
    transcript(
        r#"
        > MSET a 1 b 2
        OK
        > DEL a b c a
        (integer) 2
        > DEL a
        (integer) 0
        > DBSIZE
        (integer) 0
    "#,
    );
}

#[test]
fn exists_counts_repeats() {
    transcript(
        r#"
        > SET a 1
        OK
        > EXISTS a
        (integer) 1
        > EXISTS a a missing
        (integer) 2
    "#,
    );
}

#[test]
fn type_of_keys() {
    transcript(
        r#"
        > SET a 1
        OK
        > TYPE a
        string
        > TYPE b
        none
    "#,
    );
}

#[test]
fn keys_with_glob_patterns() {
    let mut s = Session::after("MSET hello 1 hallo 2 hxllo 3 hllo 4 heeeello 5 h*llo 6 other 7");
    assert_eq!(
        sorted(s.run("KEYS h?llo")),
        ["h*llo", "hallo", "hello", "hxllo"]
    );
    assert_eq!(
        sorted(s.run("KEYS h*llo")),
        ["h*llo", "hallo", "heeeello", "hello", "hllo", "hxllo"]
    );
    assert_eq!(sorted(s.run("KEYS h[ae]llo")), ["hallo", "hello"]);
    assert_eq!(sorted(s.run("KEYS h[^e]llo")), ["h*llo", "hallo", "hxllo"]);
    assert_eq!(sorted(s.run("KEYS h[a-e]llo")), ["hallo", "hello"]);
    assert_eq!(sorted(s.run("KEYS h\\*llo")), ["h*llo"]);
    assert_eq!(sorted(s.run("KEYS *")).len(), 7);
    assert_eq!(sorted(s.run("KEYS nothing*")), Vec::<String>::new());
}

#[test]
fn keys_skips_expired_keys() {
    let mut s = Session::new();
    s.run("SET short v PX 10");
    s.run("SET long v");
    s.advance(11);
    assert_eq!(sorted(s.run("KEYS *")), ["long"]);
}

#[test]
fn scan_returns_every_key() {
    let mut s = Session::new();
    for i in 0..300 {
        s.run(&format!("SET key:{i:06} v"));
    }
    let seen = full_scan(&mut s, "SCAN", "COUNT 7", |_, _| {});
    assert_eq!(seen.len(), 300, "no duplicates without mutation");
    assert_eq!(seen.iter().collect::<BTreeSet<_>>().len(), 300);
}

#[test]
fn scan_is_complete_under_mutation() {
    let mut s = Session::new();
    for i in 0..400 {
        s.run(&format!("SET stable:{i} v"));
    }
    for i in 0..200 {
        s.run(&format!("SET churn:{i} v"));
    }
    let mut next_new = 0;
    let seen = full_scan(&mut s, "SCAN", "COUNT 5", |s, call| {
        // Between calls: delete some churn keys, add new ones.
        s.run(&format!("DEL churn:{} churn:{}", call * 2, call * 2 + 1));
        for _ in 0..3 {
            s.run(&format!("SET new:{next_new} v"));
            next_new += 1;
        }
    });
    let seen: BTreeSet<String> = seen.into_iter().collect();
    for i in 0..400 {
        assert!(
            seen.contains(&format!("stable:{i}")),
            "stable:{i} was never returned"
        );
    }
}

#[test]
fn scan_match_count_and_type() {
    let mut s = Session::new();
    for i in 0..50 {
        s.run(&format!("SET user:{i} v"));
        s.run(&format!("SET item:{i} v"));
    }
    let users = full_scan(&mut s, "SCAN", "MATCH user:* COUNT 3", |_, _| {});
    assert_eq!(users.len(), 50);
    assert!(users.iter().all(|k| k.starts_with("user:")));
    assert_eq!(
        full_scan(&mut s, "SCAN", "TYPE string COUNT 1000", |_, _| {}).len(),
        100
    );
    assert!(full_scan(&mut s, "SCAN", "TYPE list", |_, _| {}).is_empty());
    let Reply::Array(Some(one_call)) = s.run("SCAN 0 COUNT 1000") else {
        panic!()
    };
    assert_eq!(one_call[0], bulk("0"), "a large COUNT finishes in one call");
}

#[test]
fn scan_errors() {
    transcript(
        r#"
        > SCAN abc
        (error) ERR invalid cursor
        > SCAN -1
        (error) ERR invalid cursor
        > SET k v
        OK
        // a cursor past the end finishes the scan
        > SCAN 18446744073709551615
        1) "0"
        2) (empty array)
        > SCAN 0 COUNT 0
        (error) ERR syntax error
        > SCAN 0 COUNT x
        (error) ERR value is not an integer or out of range
        > SCAN 0 MATCH
        (error) ERR syntax error
        > SCAN 0 FOO bar
        (error) ERR syntax error
    "#,
    );
}

#[test]
fn dbsize_and_flush() {
    transcript(
        r#"
        > MSET a 1 b 2 c 3
        OK
        > DBSIZE
        (integer) 3
        > FLUSHDB
        OK
        > DBSIZE
        (integer) 0
        > SET a 1
        OK
        > FLUSHALL ASYNC
        OK
        > DBSIZE
        (integer) 0
        > FLUSHALL NOW
        (error) ERR syntax error
    "#,
    );
}

#[test]
fn rename_moves_value_and_expiry_and_logs_absolutely() {
    let mut s = Session::new();
    let now = s.now;
    s.run("SET a 1 PX 500");
    assert_eq!(
        s.logged("RENAME a b"),
        ["DEL a".to_string(), format!("SET b 1 PXAT {}", now + 500)]
    );
    s.transcript(
        r#"
        > PTTL b
        (integer) 500
        > RENAME a c
        (error) ERR no such key
        > SET c 3
        OK
        > RENAMENX b c
        (integer) 0
        > RENAMENX b d
        (integer) 1
        > RENAME d d
        OK
        > GET d
        "1"
    "#,
    );
}

#[test]
fn copy_touch_unlink_randomkey_and_expiretime() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > SET a hello
        OK
        > COPY a b
        (integer) 1
        > COPY a b
        (integer) 0
        > APPEND a !
        (integer) 6
        // copies do not share changes
        > GET b
        "hello"
        > COPY a b REPLACE
        (integer) 1
    "#,
    );
    // Into another database (found by the differential test: it was
    // refused as out of range), logged under a SELECT of it.
    assert_eq!(
        s.logged("COPY a b DB 1"),
        ["SELECT 1", "SET b hello!", "SELECT 0"]
    );
    s.transcript(
        r#"
        > COPY a b DB 1
        (integer) 0
        > COPY a a DB 1 REPLACE
        (integer) 1
        > COPY a a
        (error) ERR source and destination objects are the same
    "#,
    );
    s.run("SELECT 1");
    assert_eq!(s.run("MGET a b"), bulks(&["hello!", "hello!"]));
    s.transcript(
        r#"
        > SELECT 0
        OK
        > COPY a b DB 16
        (error) ERR DB index is out of range
        > COPY a b DB 99999999999
        (error) ERR value is out of range, value must between -2147483648 and 2147483647
        > COPY missing b
        (integer) 0
        > TOUCH a b missing
        (integer) 2
    "#,
    );
    assert!(matches!(s.run("RANDOMKEY"), Reply::Bulk(Some(k)) if k == b"a" || k == b"b"));
    s.transcript(
        r#"
        > UNLINK a b missing
        (integer) 2
        > RANDOMKEY
        (nil)
        > SET e v PXAT 2000500
        OK
        > EXPIRETIME e
        (integer) 2000
        > PEXPIRETIME e
        (integer) 2000500
        > SET p v
        OK
        > EXPIRETIME p
        (integer) -1
        > PEXPIRETIME nothing
        (integer) -2
    "#,
    );
}

#[test]
fn randomkey_draws_live_keys_from_all_over_the_keyspace() {
    let mut s = Session::new();
    for i in 0..200 {
        s.run(&format!("SET k{i} v"));
    }
    let mut seen = BTreeSet::new();
    for _ in 0..2_000 {
        let Reply::Bulk(Some(key)) = s.run("RANDOMKEY") else {
            panic!("a key");
        };
        seen.insert(key);
    }
    assert!(seen.len() > 180, "{} of 200 keys drawn", seen.len());
    // Every key but one expired: the draws miss, the scan finds it.
    for i in 1..200 {
        s.run(&format!("PEXPIRE k{i} 1"));
    }
    s.advance(10);
    for _ in 0..20 {
        assert_eq!(s.run("RANDOMKEY"), Reply::bulk("k0"));
    }
}
