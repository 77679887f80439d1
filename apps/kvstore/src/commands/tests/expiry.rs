use alloc::format;

use super::*;

#[test]
fn ttl_codes() {
    let mut s = Session::new();
    s.expect(&[("TTL missing", int(-2)), ("PTTL missing", int(-2))]);
    s.run("SET k v");
    s.expect(&[("TTL k", int(-1)), ("PTTL k", int(-1))]);
}

#[test]
fn ttl_rounds_to_the_nearest_second() {
    let mut s = Session::new();
    s.run("SET k v PX 2499");
    assert_eq!(s.run("TTL k"), int(2));
    s.run("SET k v PX 2500");
    assert_eq!(s.run("TTL k"), int(3));
}

#[test]
fn keys_expire_lazily_when_touched() {
    let mut s = Session::new();
    s.run("SET k v PX 100");
    s.advance(100);
    s.expect(&[
        ("GET k", bulk("v")), // alive at exactly its expiry time
        ("PTTL k", int(0)),
    ]);
    s.advance(1);
    s.expect(&[("GET k", nil()), ("TTL k", int(-2))]);
    assert_eq!(s.engine.stats().expired_keys, 1);
}

#[test]
fn expire_family() {
    let mut s = Session::new();
    s.run("SET k v");
    s.expect(&[
        ("EXPIRE k 10", int(1)),
        ("PTTL k", int(10_000)),
        ("PEXPIRE k 500", int(1)),
        ("PTTL k", int(500)),
    ]);
    let at = s.now / 1000 + 20;
    assert_eq!(s.run(&format!("EXPIREAT k {at}")), int(1));
    assert_eq!(s.run("TTL k"), int(20));
    assert_eq!(s.run(&format!("PEXPIREAT k {}", s.now + 7)), int(1));
    s.expect(&[("PTTL k", int(7)), ("EXPIRE missing 10", int(0))]);
}

#[test]
fn zero_or_negative_expire_deletes() {
    let mut s = Session::new();
    s.run("MSET a 1 b 2 c 3");
    s.expect(&[
        ("EXPIRE a 0", int(1)),
        ("PEXPIRE b -100", int(1)),
        ("EXPIREAT c 1", int(1)),
        ("DBSIZE", int(0)),
    ]);
}

#[test]
fn expire_errors() {
    let mut s = Session::new();
    s.run("SET k v");
    s.expect(&[
        (
            "EXPIRE k soon",
            err("ERR value is not an integer or out of range"),
        ),
        (
            "EXPIRE k 9223372036854775807",
            err("ERR invalid expire time in 'expire' command"),
        ),
        (
            "PEXPIRE k 9223372036854775807",
            err("ERR invalid expire time in 'pexpire' command"),
        ),
        ("EXPIRE k 10 YY", err("ERR Unsupported option YY")),
        (
            "EXPIRE k 10 NX XX",
            err("ERR NX and XX, GT or LT options at the same time are not compatible"),
        ),
        (
            "EXPIRE k 10 GT LT",
            err("ERR GT and LT options at the same time are not compatible"),
        ),
        (
            "EXPIRE k",
            err("ERR wrong number of arguments for 'expire' command"),
        ),
        ("TTL k", int(-1)), // nothing changed
    ]);
}

#[test]
fn expire_conditions() {
    let mut s = Session::new();
    s.run("SET k v");
    s.expect(&[
        ("EXPIRE k 10 XX", int(0)), // XX: no TTL yet
        ("EXPIRE k 10 GT", int(0)), // GT: no TTL counts as infinite
        ("EXPIRE k 10 NX", int(1)),
        ("EXPIRE k 20 NX", int(0)), // NX: already has a TTL
        ("EXPIRE k 5 GT", int(0)),
        ("EXPIRE k 20 GT", int(1)),
        ("EXPIRE k 30 LT", int(0)),
        ("EXPIRE k 15 LT", int(1)),
        ("EXPIRE k 40 XX", int(1)),
        ("TTL k", int(40)),
    ]);
    s.run("SET p v");
    assert_eq!(
        s.run("EXPIRE p 10 LT"),
        int(1),
        "LT: anything beats infinite"
    );
}

#[test]
fn persist() {
    let mut s = Session::new();
    assert_eq!(s.run("PERSIST missing"), int(0));
    s.run("SET k v");
    assert_eq!(s.run("PERSIST k"), int(0), "no TTL to remove");
    s.run("EXPIRE k 10");
    s.expect(&[("PERSIST k", int(1)), ("TTL k", int(-1))]);
    s.advance(20_000);
    assert_eq!(s.run("GET k"), bulk("v"), "no longer expires");
}

#[test]
fn active_expiry_reclaims_untouched_keys() {
    let mut s = Session::new();
    for i in 0..100 {
        s.run(&format!("SET temp:{i} v PX 10"));
        s.run(&format!("SET keep:{i} v"));
    }
    s.advance(11);
    let mut deleted = Vec::new();
    for _ in 0..10 {
        deleted.extend(s.engine.active_expire(s.now, 20).commands());
    }
    assert_eq!(deleted.len(), 100);
    assert!(deleted.iter().all(|cmd| show(cmd).starts_with("DEL temp:")));
    assert_eq!(s.run("DBSIZE"), int(100));
    assert_eq!(s.engine.stats().expired_keys, 100);
}

#[test]
fn writes_to_expired_keys_start_fresh() {
    let mut s = Session::new();
    s.run("SET n 10 PX 5");
    s.run("SET a abc PX 5");
    s.advance(6);
    s.expect(&[
        ("INCR n", int(1)),
        ("APPEND a x", int(1)),
        ("TTL n", int(-1)),
        ("SETNX a y", int(0)),
    ]);
}
