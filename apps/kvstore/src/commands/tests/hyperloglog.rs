//! `PFADD`, `PFCOUNT` and `PFMERGE`. The bytes and counts expected here
//! are what Redis 7.0.15 answered to the same commands.
use super::*;

/// The bytes of the string at `key`.
fn value(s: &mut Session, key: &str) -> Vec<u8> {
    match s.run(&format!("GET {key}")) {
        Reply::Bulk(Some(bytes)) => bytes,
        Reply::Shared(bytes) => bytes.to_vec(),
        other => panic!("GET {key} answered {other:?}"),
    }
}

/// The length and FNV-1a hash of the value at `key`: a short
/// fingerprint of a long value.
fn fingerprint(s: &mut Session, key: &str) -> (usize, u64) {
    let bytes = value(s, key);
    let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    (bytes.len(), hash)
}

/// `PFADD key` of `rounds` commands of 100 elements each,
/// `<prefix><n>-<round>`.
fn fill(s: &mut Session, key: &str, prefix: &str, rounds: usize) {
    for round in 0..rounds {
        let elements: Vec<String> = (0..100).map(|n| format!("{prefix}{n}-{round}")).collect();
        s.run(&format!("PFADD {key} {}", elements.join(" ")));
    }
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn pfadd_makes_redis_sparse_bytes_and_pfcount_caches_the_count() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > PFADD h a b c
        (integer) 1
        // no register changed
        > PFADD h a
        (integer) 0
    "#,
    );
    let stale = hex("48594c4c01000000000000000000008060f38050b1844bfb80425a");
    assert_eq!(value(&mut s, "h"), stale);
    assert_eq!(
        s.logged("PFCOUNT h"),
        ["PFCOUNT h"],
        "it refreshed the cache"
    );
    let cached = hex("48594c4c01000000030000000000000060f38050b1844bfb80425a");
    assert_eq!(value(&mut s, "h"), cached);
    assert!(s.logged("PFCOUNT h").is_empty(), "the cache answered");
    s.transcript(
        r#"
        > PFCOUNT h
        (integer) 3
        // created
        > PFADD empty
        (integer) 1
        > PFADD empty
        (integer) 0
        > PFCOUNT empty missing
        (integer) 0
    "#,
    );
}

#[test]
fn counts_and_encodings_are_redis_s() {
    let mut s = Session::new();
    fill(&mut s, "mid", "m", 10);
    assert_eq!(s.run("PFCOUNT mid"), int(984));
    assert_eq!(
        fingerprint(&mut s, "mid"),
        (1876, 0x879d_2099_d9b1_12e4),
        "still sparse"
    );
    fill(&mut s, "big", "e", 100);
    assert_eq!(s.run("PFCOUNT big"), int(10010));
    assert_eq!(
        fingerprint(&mut s, "big"),
        (12304, 0xdee2_74a2_6e81_02a0),
        "dense"
    );
    s.transcript(
        r#"
        > PFADD h a b c
        (integer) 1
        > PFCOUNT mid big h
        (integer) 10982
        > PFMERGE dst h mid
        OK
        > PFCOUNT dst
        (integer) 986
    "#,
    );
    assert_eq!(
        fingerprint(&mut s, "dst"),
        (1878, 0x3155_5cf9_cd2a_9c26),
        "sparse stays sparse"
    );
    assert_eq!(s.run("PFMERGE d2 big h"), ok());
    assert_eq!(
        fingerprint(&mut s, "d2"),
        (12304, 0x1e27_463d_59fb_7304),
        "dense if any was"
    );
}

#[test]
fn a_small_sparse_limit_turns_the_value_dense_sooner() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > CONFIG SET hll-sparse-max-bytes 100
        OK
        > CONFIG GET hll-sparse-max-bytes
        1) "hll-sparse-max-bytes"
        2) "100"
    "#,
    );
    fill(&mut s, "h", "x", 1);
    assert_eq!(s.run("STRLEN h"), int(12304));
    let count = s.run("PFCOUNT h");
    assert!(matches!(count, Reply::Integer(95..=105)), "{count:?}");
}

#[test]
fn foreign_and_corrupt_values_get_redis_s_errors() {
    let mut s = Session::new();
    let not_hll = err("WRONGTYPE Key is not a valid HyperLogLog string value.");
    s.transcript(
        r#"
        > SET str hello
        OK
        > PFADD str a
        (error) WRONGTYPE Key is not a valid HyperLogLog string value.
        > PFCOUNT str
        (error) WRONGTYPE Key is not a valid HyperLogLog string value.
        > PFCOUNT missing str
        (error) WRONGTYPE Key is not a valid HyperLogLog string value.
        > PFMERGE dst str
        (error) WRONGTYPE Key is not a valid HyperLogLog string value.
        > EXISTS dst
        (integer) 0
    "#,
    );
    s.run("LPUSH list a");
    assert!(matches!(s.run("PFADD list a"), Reply::Error(e) if e.contains("wrong kind")));
    s.transcript(
        r#"
        // Bytes past the last register.
        > PFADD h a b c
        (integer) 1
        > APPEND h hello
        (integer) 32
        > PFCOUNT h
        (error) INVALIDOBJ Corrupted HLL object detected
        > PFCOUNT h h
        (error) INVALIDOBJ Corrupted HLL object detected
        > PFMERGE h2 h
        (error) INVALIDOBJ Corrupted HLL object detected
    "#,
    );
    // A body that stops short of the registers being set.
    s.run(r#"SET short "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x01""#);
    s.transcript(
        r#"
        > PFADD short a b c d e f g
        (error) INVALIDOBJ Corrupted HLL object detected
        // left as it was
        > STRLEN short
        (integer) 17
    "#,
    );
    // Dense of the wrong length, and a bad encoding byte.
    s.run("PFADD d x");
    s.run("CONFIG SET hll-sparse-max-bytes 0");
    s.run("PFADD d y");
    assert_eq!(s.run("STRLEN d"), int(12304));
    s.run("APPEND d z");
    assert_eq!(s.run("PFCOUNT d"), not_hll);
    s.run(r#"SET bad "HYLL\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00""#);
    assert_eq!(s.run("PFADD bad a"), not_hll);
}

#[test]
fn writes_are_logged_to_replay_the_same_bytes() {
    let mut s = Session::new();
    let mut log = crate::aof::HEADER.to_vec();
    let mut logged = |s: &mut Session, line: &str| -> Vec<String> {
        let effects = s.exec(line).effects;
        log.extend(effects.to_bytes());
        shown(&effects)
    };
    for line in ["PFADD h a b", "PFADD h c", "PFMERGE m h", "SET s x EX 100"] {
        logged(&mut s, line);
    }
    assert_eq!(logged(&mut s, "PFCOUNT h"), ["PFCOUNT h"]);
    s.run("CONFIG SET hll-sparse-max-bytes 0");
    let promoted = logged(&mut s, "PFADD h d");
    assert!(promoted[0].starts_with("SET h HYLL"), "promoted: the bytes");
    assert_eq!(
        logged(&mut s, "PFADD h e"),
        ["PFADD h e"],
        "dense: the command"
    );
    assert!(
        logged(&mut s, "PFADD h e").is_empty(),
        "no change, no record"
    );
    let restarted = load(&log, s.now);
    let mut restarted = Session {
        engine: restarted,
        client: ClientCtx::new(1),
        now: s.now,
    };
    for key in ["h", "m"] {
        assert_eq!(value(&mut restarted, key), value(&mut s, key), "{key}");
    }
}

#[test]
fn pfadd_that_changes_nothing_leaves_a_watch_alone() {
    let mut s = Session::new();
    s.run("PFADD h a b c");
    s.run("WATCH h");
    assert_eq!(s.run("PFADD h a b"), int(0));
    s.run("MULTI");
    s.run("PFCOUNT h");
    assert_eq!(s.run("EXEC"), array(&[int(3)]));
    s.run("SET short \"HYLL\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x80\\x01\"");
    assert_eq!(
        s.run("PFADD short a"),
        err("INVALIDOBJ Corrupted HLL object detected")
    );
}

#[test]
fn pfdebug_shows_the_encoding_registers_and_opcodes() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > PFADD h a b c
        (integer) 1
        > PFDEBUG DECODE h
        "Z:8436 v:1,1 Z:4274 v:2,1 Z:3068 v:1,1 Z:603"
        > PFDEBUG ENCODING h
        sparse
    "#,
    );
    let Reply::Array(Some(registers)) = s.run("PFDEBUG GETREG h") else {
        panic!("GETREG answers an array");
    };
    assert_eq!(registers.len(), 16384);
    assert_eq!(registers.iter().filter(|r| **r != int(0)).count(), 3);
    s.transcript(
        r#"
        // GETREG made it dense
        > PFDEBUG ENCODING h
        dense
        > PFDEBUG TODENSE h
        (integer) 0
        > PFCOUNT h
        (integer) 3
    "#,
    );
    s.run("PFADD h2 x");
    assert!(s.logged("PFDEBUG TODENSE h2")[0].starts_with("SET h2 HYLL"));
    s.transcript(
        r#"
        > STRLEN h2
        (integer) 12304
        > PFDEBUG DECODE h
        (error) ERR HLL encoding is not sparse
        > PFDEBUG GETREG nokey
        (error) ERR The specified key does not exist
        > PFDEBUG bogus h
        (error) ERR Unknown PFDEBUG subcommand 'bogus'
    "#,
    );
    s.run("SET str x");
    assert_eq!(
        s.run("PFDEBUG GETREG str"),
        err("WRONGTYPE Key is not a valid HyperLogLog string value.")
    );
    s.run("PFADD bad a");
    s.run("APPEND bad x");
    assert_eq!(
        s.run("PFDEBUG GETREG bad"),
        err("INVALIDOBJ Corrupted HLL object detected")
    );
}
