use alloc::collections::BTreeSet;
use alloc::format;

use super::*;

#[test]
fn del_counts_only_existing_keys() {
    let mut s = Session::new();
    s.run("MSET a 1 b 2");
    s.expect(&[
        ("DEL a b c a", int(2)),
        ("DEL a", int(0)),
        ("DBSIZE", int(0)),
    ]);
}

#[test]
fn exists_counts_repeats() {
    let mut s = Session::new();
    s.run("SET a 1");
    s.expect(&[("EXISTS a", int(1)), ("EXISTS a a missing", int(2))]);
}

#[test]
fn type_of_keys() {
    let mut s = Session::new();
    s.run("SET a 1");
    s.expect(&[
        ("TYPE a", Reply::Simple("string".into())),
        ("TYPE b", Reply::Simple("none".into())),
    ]);
}

#[test]
fn keys_with_glob_patterns() {
    let mut s = Session::new();
    s.run("MSET hello 1 hallo 2 hxllo 3 hllo 4 heeeello 5 h*llo 6 other 7");
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
    let mut s = Session::new();
    s.expect(&[
        ("SCAN abc", err("ERR invalid cursor")),
        ("SCAN -1", err("ERR invalid cursor")),
    ]);
    s.run("SET k v");
    s.expect(&[
        ("SCAN 18446744073709551615", array(&[bulk("0"), array(&[])])), // a cursor past the end finishes the scan
        ("SCAN 0 COUNT 0", err("ERR syntax error")),
        (
            "SCAN 0 COUNT x",
            err("ERR value is not an integer or out of range"),
        ),
        ("SCAN 0 MATCH", err("ERR syntax error")),
        ("SCAN 0 FOO bar", err("ERR syntax error")),
    ]);
}

#[test]
fn dbsize_and_flush() {
    let mut s = Session::new();
    s.run("MSET a 1 b 2 c 3");
    s.expect(&[("DBSIZE", int(3)), ("FLUSHDB", ok()), ("DBSIZE", int(0))]);
    s.run("SET a 1");
    s.expect(&[
        ("FLUSHALL ASYNC", ok()),
        ("DBSIZE", int(0)),
        ("FLUSHALL NOW", err("ERR syntax error")),
    ]);
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
    s.expect(&[
        ("PTTL b", Reply::Integer(500)),
        ("RENAME a c", Reply::error("ERR no such key")),
    ]);
    s.run("SET c 3");
    s.expect(&[
        ("RENAMENX b c", Reply::Integer(0)),
        ("RENAMENX b d", Reply::Integer(1)),
        ("RENAME d d", Reply::ok()),
        ("GET d", Reply::bulk("1")),
    ]);
}

#[test]
fn copy_touch_unlink_randomkey_and_expiretime() {
    let mut s = Session::new();
    s.run("SET a hello");
    s.expect(&[
        ("COPY a b", Reply::Integer(1)),
        ("COPY a b", Reply::Integer(0)),
    ]);
    s.run("APPEND a !");
    s.expect(&[
        ("GET b", Reply::bulk("hello")), // copies do not share changes
        ("COPY a b REPLACE", Reply::Integer(1)),
    ]);
    // Into another database (found by the differential test: it was
    // refused as out of range), logged under a SELECT of it.
    assert_eq!(
        s.logged("COPY a b DB 1"),
        ["SELECT 1", "SET b hello!", "SELECT 0"]
    );
    s.expect(&[
        ("COPY a b DB 1", Reply::Integer(0)),
        ("COPY a a DB 1 REPLACE", Reply::Integer(1)),
        (
            "COPY a a",
            Reply::error("ERR source and destination objects are the same"),
        ),
    ]);
    s.run("SELECT 1");
    assert_eq!(s.run("MGET a b"), bulks(&["hello!", "hello!"]));
    s.run("SELECT 0");
    s.expect(&[
        (
            "COPY a b DB 16",
            Reply::error("ERR DB index is out of range"),
        ),
        (
            "COPY a b DB 99999999999",
            Reply::error(
                "ERR value is out of range, value must between -2147483648 and 2147483647",
            ),
        ),
        ("COPY missing b", Reply::Integer(0)),
        ("TOUCH a b missing", Reply::Integer(2)),
    ]);
    assert!(matches!(s.run("RANDOMKEY"), Reply::Bulk(Some(k)) if k == b"a" || k == b"b"));
    s.expect(&[
        ("UNLINK a b missing", Reply::Integer(2)),
        ("RANDOMKEY", Reply::Bulk(None)),
    ]);
    s.run("SET e v PXAT 2000500");
    s.expect(&[
        ("EXPIRETIME e", Reply::Integer(2000)),
        ("PEXPIRETIME e", Reply::Integer(2000500)),
    ]);
    s.run("SET p v");
    s.expect(&[
        ("EXPIRETIME p", Reply::Integer(-1)),
        ("PEXPIRETIME nothing", Reply::Integer(-2)),
    ]);
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
