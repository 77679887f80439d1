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
    s.expect(&[
        ("SET d 0123456789", err(OOM)),
        ("APPEND a x", err(OOM)),
        ("MSET d 1", err(OOM)),
        ("SETNX d 1", err(OOM)),
        ("INCR d", err(OOM)),
        ("EXISTS d", int(0)),
        ("GET a", bulk("0123456789")), // reads still work
    ]);
}

#[test]
fn writes_that_do_not_grow_are_allowed() {
    let mut s = limited(3, 10);
    for key in ["a", "b", "c"] {
        s.run(&format!("SET {key} 0123456789"));
    }
    s.expect(&[
        ("SET a 9876543210", ok()), // same size
        ("SET a short", ok()),      // shrinks
        ("DEL b", int(1)),
        ("EXPIRE c 100", int(1)),
        ("SET d 0123456789", ok()), // room again after DEL
    ]);
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
