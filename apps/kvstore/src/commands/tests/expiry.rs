use alloc::format;

use super::*;

#[test]
fn ttl_codes() {
    transcript(
        r#"
        > TTL missing
        (integer) -2
        > PTTL missing
        (integer) -2
        > SET k v
        OK
        > TTL k
        (integer) -1
        > PTTL k
        (integer) -1
    "#,
    );
}

#[test]
fn ttl_rounds_to_the_nearest_second() {
    let mut s = Session::after("SET k v PX 2499");
    assert_eq!(s.run("TTL k"), int(2));
    s.run("SET k v PX 2500");
    assert_eq!(s.run("TTL k"), int(3));
}

#[test]
fn keys_expire_lazily_when_touched() {
    let mut s = Session::after("SET k v PX 100");
    s.advance(100);
    s.transcript(
        r#"
        // alive at exactly its expiry time
        > GET k
        "v"
        > PTTL k
        (integer) 0
    "#,
    );
    s.advance(1);
    s.transcript(
        r#"
        > GET k
        (nil)
        > TTL k
        (integer) -2
    "#,
    );
    assert_eq!(s.engine.stats().expired_keys, 1);
}

#[test]
fn expire_family() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > SET k v
        OK
        > EXPIRE k 10
        (integer) 1
        > PTTL k
        (integer) 10000
        > PEXPIRE k 500
        (integer) 1
        > PTTL k
        (integer) 500
    "#,
    );
    let at = s.now / 1000 + 20;
    assert_eq!(s.run(&format!("EXPIREAT k {at}")), int(1));
    assert_eq!(s.run("TTL k"), int(20));
    assert_eq!(s.run(&format!("PEXPIREAT k {}", s.now + 7)), int(1));
    s.transcript(
        r#"
        > PTTL k
        (integer) 7
        > EXPIRE missing 10
        (integer) 0
    "#,
    );
}

#[test]
fn zero_or_negative_expire_deletes() {
    transcript(
        r#"
        > MSET a 1 b 2 c 3
        OK
        > EXPIRE a 0
        (integer) 1
        > PEXPIRE b -100
        (integer) 1
        > EXPIREAT c 1
        (integer) 1
        > DBSIZE
        (integer) 0
    "#,
    );
}

#[test]
fn expire_errors() {
    transcript(
        r#"
        > SET k v
        OK
        > EXPIRE k soon
        (error) ERR value is not an integer or out of range
        > EXPIRE k 9223372036854775807
        (error) ERR invalid expire time in 'expire' command
        > PEXPIRE k 9223372036854775807
        (error) ERR invalid expire time in 'pexpire' command
        > EXPIRE k 10 YY
        (error) ERR Unsupported option YY
        > EXPIRE k 10 NX XX
        (error) ERR NX and XX, GT or LT options at the same time are not compatible
        > EXPIRE k 10 GT LT
        (error) ERR GT and LT options at the same time are not compatible
        > EXPIRE k
        (error) ERR wrong number of arguments for 'expire' command
        // nothing changed
        > TTL k
        (integer) -1
    "#,
    );
}

#[test]
fn expire_conditions() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > SET k v
        OK
        // XX: no TTL yet
        > EXPIRE k 10 XX
        (integer) 0
        // GT: no TTL counts as infinite
        > EXPIRE k 10 GT
        (integer) 0
        > EXPIRE k 10 NX
        (integer) 1
        // NX: already has a TTL
        > EXPIRE k 20 NX
        (integer) 0
        > EXPIRE k 5 GT
        (integer) 0
        > EXPIRE k 20 GT
        (integer) 1
        > EXPIRE k 30 LT
        (integer) 0
        > EXPIRE k 15 LT
        (integer) 1
        > EXPIRE k 40 XX
        (integer) 1
        > TTL k
        (integer) 40
    "#,
    );
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
    s.transcript(
        r#"
        > EXPIRE k 10
        (integer) 1
        > PERSIST k
        (integer) 1
        > TTL k
        (integer) -1
    "#,
    );
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
    s.transcript(
        r#"
        > INCR n
        (integer) 1
        > APPEND a x
        (integer) 1
        > TTL n
        (integer) -1
        > SETNX a y
        (integer) 0
    "#,
    );
}
