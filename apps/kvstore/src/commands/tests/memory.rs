use alloc::format;

use super::*;
use crate::store::Store;

/// A server whose limit fits `keys` one-byte keys with `value_len`-byte
/// values.
fn limited(keys: usize, value_len: usize) -> Session {
    Session::with_config(Config {
        maxmemory: (keys * Store::cost(1, value_len)) as u64,
        ..Config::default()
    })
}

#[test]
fn writes_past_maxmemory_are_refused() {
    let mut s = limited(3, 10);
    for key in ["a", "b", "c"] {
        assert_eq!(s.run(&format!("SET {key} 0123456789")), ok());
    }
    s.transcript(
        r#"
        > SET d 0123456789
        (error) OOM command not allowed when used memory > 'maxmemory'.
        > APPEND a x
        (error) OOM command not allowed when used memory > 'maxmemory'.
        > MSET d 1
        (error) OOM command not allowed when used memory > 'maxmemory'.
        > SETNX d 1
        (error) OOM command not allowed when used memory > 'maxmemory'.
        > INCR d
        (error) OOM command not allowed when used memory > 'maxmemory'.
        > EXISTS d
        (integer) 0
        // reads still work
        > GET a
        "0123456789"
    "#,
    );
}

#[test]
fn writes_that_do_not_grow_are_allowed() {
    let mut s = limited(3, 10);
    for key in ["a", "b", "c"] {
        s.run(&format!("SET {key} 0123456789"));
    }
    s.transcript(
        r#"
        // same size
        > SET a 9876543210
        OK
        // shrinks
        > SET a short
        OK
        > DEL b
        (integer) 1
        > EXPIRE c 100
        (integer) 1
        // room again after DEL
        > SET d 0123456789
        OK
    "#,
    );
}

#[test]
fn zero_means_unlimited() {
    let mut s = Session::new();
    let big = "x".repeat(100_000);
    for i in 0..50 {
        assert_eq!(s.run(&format!("SET k{i} {big}")), ok());
    }
    assert!(s.engine.store().used_memory() > 5_000_000);
}

#[test]
fn used_memory_tracks_the_data() {
    let mut s = Session::new();
    assert_eq!(s.engine.store().used_memory(), 0);
    s.run("SET key value");
    assert_eq!(s.engine.store().used_memory(), Store::cost(3, 5));
    s.run("DEL key");
    assert_eq!(s.engine.store().used_memory(), 0);
    assert_eq!(s.engine.stats().used_memory_peak, Store::cost(3, 5) as u64);
}

#[test]
fn memory_stats_lays_out_the_estimate_as_redis_names_it() {
    let mut s = limited(3, 10);
    s.run("SET a 0123456789");
    s.run("SET b 0123456789");
    s.run("EXPIRE b 100");
    s.run("SELECT 2");
    s.run("SET c 0123456789");
    let Reply::Map(fields) = s.run("MEMORY STATS") else {
        panic!("MEMORY STATS is a map");
    };
    let field = |name: &str| {
        let at = fields.iter().position(|f| *f == bulk(name));
        at.map(|at| fields[at + 1].clone())
            .unwrap_or_else(|| panic!("no {name}"))
    };
    let per_key = Store::cost(1, 10) as i64;
    assert_eq!(field("total.allocated"), int(3 * per_key));
    assert_eq!(field("keys.count"), int(3));
    assert_eq!(field("keys.bytes-per-key"), int(per_key));
    let overhead = crate::store::ENTRY_OVERHEAD as i64;
    assert_eq!(
        field("db.0"),
        Reply::Map(vec![
            bulk("overhead.hashtable.main"),
            int(2 * overhead),
            bulk("overhead.hashtable.expires"),
            int(0),
        ])
    );
    assert_eq!(field("overhead.total"), int(3 * overhead));
    assert_eq!(field("dataset.bytes"), int(3 * (per_key - overhead)));
    assert_eq!(field("peak.percentage"), Reply::Double(b"100".to_vec()));
    assert!(fields.contains(&bulk("db.2")) && !fields.contains(&bulk("db.1")));
    // Three keys fill the limit: the doctor says so.
    let Reply::Verbatim(report) = s.run("MEMORY DOCTOR") else {
        panic!("MEMORY DOCTOR is text");
    };
    let report = String::from_utf8_lossy(&report);
    assert!(report.contains("at 100% of maxmemory"), "{report}");
    assert_eq!(s.run("MEMORY PURGE"), ok());
    assert_eq!(
        s.run("MEMORY STATS now"),
        err("ERR wrong number of arguments for 'memory|stats' command")
    );
}
