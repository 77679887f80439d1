//! `BITOP`, `BITPOS`, `BITFIELD` and `BITFIELD_RO`. The replies expected
//! here are what Redis 7.0.15 answered to the same commands.
use super::*;

fn ints(items: &[Option<i64>]) -> Reply {
    Reply::array(
        items
            .iter()
            .map(|item| item.map_or_else(nil, int))
            .collect(),
    )
}

#[test]
fn bitop_combines_strings_into_the_destination() {
    let mut s = Session::new();
    s.run("MSET a foobar b abcdef c x");
    s.expect(&[
        ("BITOP AND dest a b", int(6)),
        ("GET dest", bulk("`bc`ab")),
        ("BITOP OR dest a b", int(6)),
        ("GET dest", bulk("goofev")),
        ("BITOP XOR dest a b missing", int(6)),
        ("GET dest", bulk("\x07\x0d\x0c\x06\x04\x14")),
        ("BITOP NOT dest c", int(1)),
        ("GETBIT dest 0", int(1)), // ~'x' is 0x87
    ]);
    // Shorter sources count as zero bytes; the result loses any expiry.
    s.run("BITOP OR c2 a");
    s.run("EXPIRE c2 100");
    s.expect(&[
        ("BITOP OR c2 c", int(1)),
        ("TTL c2", int(-1)),
        ("GET c2", bulk("x")),
    ]);
    // An empty result deletes the destination, whatever it held.
    s.run("HSET h f v");
    assert_eq!(s.logged("BITOP AND h missing"), ["DEL h"]);
    assert_eq!(s.run("EXISTS h"), int(0));
    assert_eq!(s.logged("BITOP AND c2 a"), ["SET c2 foobar"]);
}

#[test]
fn bitop_errors() {
    let mut s = Session::new();
    s.run("SET a x");
    s.expect(&[
        (
            "BITOP NOT dest a a",
            err("ERR BITOP NOT must be called with a single source key."),
        ),
        ("BITOP NAND dest a", err("ERR syntax error")),
    ]);
    s.run("LPUSH l x");
    assert!(matches!(s.run("BITOP OR dest a l"), Reply::Error(e) if e.starts_with("WRONGTYPE")));
    assert_eq!(s.run("EXISTS dest"), int(0));
}

#[test]
fn bitpos_finds_the_first_bit_in_a_range() {
    let mut s = Session::new();
    s.run(r#"SET bp "\xff\xf0\x00""#);
    s.expect(&[
        ("BITPOS bp 0", int(12)),
        ("BITPOS bp 1 2", int(-1)),
        ("BITPOS bp 0 0 -1", int(12)),
        ("BITPOS bp 1 -1", int(-1)),
        ("BITPOS bp 0 8 15 BIT", int(12)),
        ("BITPOS bp 0 0 7 BIT", int(-1)),
        ("BITPOS bp 1 9 22 BIT", int(9)),
        ("BITPOS bp 1 2 1", int(-1)),
    ]);
    s.run(r#"SET ones "\xff\xff""#);
    s.expect(&[
        ("BITPOS ones 0", int(16)), // past the end
        ("BITPOS ones 0 1", int(16)),
        ("BITPOS ones 0 0 -1", int(-1)), // an end was given
        ("BITPOS ones 0 3 5 BIT", int(-1)),
        ("BITPOS ones 1 3", int(-1)),
        ("BITPOS nokey 0", int(0)),
        ("BITPOS nokey 1", int(-1)),
    ]);
    s.run(r#"SET empty """#);
    assert_eq!(s.run("BITPOS empty 0"), int(-1));
}

#[test]
fn bitpos_errors() {
    let mut s = Session::new();
    s.run("SET bp x");
    assert_eq!(
        s.run("BITPOS bp 2"),
        err("ERR The bit argument must be 1 or 0.")
    );
    let not_integer = err("ERR value is not an integer or out of range");
    s.expect(&[
        ("BITPOS bp x", not_integer.clone()),
        ("BITPOS bp 1 a", not_integer.clone()),
        ("BITPOS bp 0 3 BIT", not_integer.clone()), // BIT needs an end
        ("BITPOS bp 1 0 1 WORD", err("ERR syntax error")),
        ("BITPOS bp 1 0 1 BIT x", err("ERR syntax error")),
        ("BITPOS nokey 1 0 1 BIT x", int(-1)), // a missing key first
    ]);
}

#[test]
fn bitfield_sets_gets_and_increments_with_overflow_control() {
    let mut s = Session::new();
    s.expect(&[
        ("BITFIELD bf SET i8 0 100 GET u4 0 INCRBY i8 0 100 OVERFLOW SAT INCRBY i8 0 100 OVERFLOW FAIL INCRBY i8 0 100 GET i8 0", ints(&[Some(0), Some(6), Some(-56), Some(44), None, Some(44)])),
        ("GET bf", bulk(",")),
        ("BITFIELD bf SET u2 #3 7 GET u2 #3 INCRBY u63 8 -1 OVERFLOW WRAP INCRBY i64 0 -9223372036854775808", ints(&[Some(0), Some(3), Some(9223372036854775807), Some(-5764607523034234881)])),
        ("GET bf", Reply::bulk(&b"\xaf\xff\xff\xff\xff\xff\xff\xff\xfe"[..])),
        ("BITFIELD bf GET i8 #2 GET u4 #1 GET i64 5", ints(&[Some(-1), Some(15), Some(-1)])),
        ("BITFIELD_RO bf GET i8 0 GET u4 #1", ints(&[Some(-81), Some(15)])),
        ("BITFIELD bf", array(&[])),
    ]);
}

#[test]
fn a_failed_write_still_makes_the_string_and_is_logged() {
    let mut s = Session::new();
    assert_eq!(
        s.logged("BITFIELD nf OVERFLOW FAIL INCRBY u2 100 7"),
        ["BITFIELD nf OVERFLOW FAIL INCRBY u2 100 7"]
    );
    assert_eq!(s.run("STRLEN nf"), int(13));
    assert!(
        s.logged("BITFIELD nf SET u8 0 0").is_empty(),
        "nothing changed"
    );
    assert_eq!(
        s.logged("BITFIELD nf SET u8 0 1"),
        ["BITFIELD nf SET u8 0 1"]
    );
    s.run("SET t x EX 100");
    s.run("BITFIELD t SET u8 0 121");
    s.expect(&[
        ("GET t", bulk("y")),
        ("TTL t", int(100)), // the expiry stays
    ]);
}

#[test]
fn bitfield_errors() {
    let mut s = Session::new();
    let bad_type = err("ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.");
    s.expect(&[
        ("BITFIELD bf GET i65 0", bad_type.clone()),
        ("BITFIELD bf GET u64 0", bad_type.clone()),
    ]);
    let bad_offset = err("ERR bit offset is not an integer or out of range");
    s.expect(&[
        ("BITFIELD bf GET i8 -1", bad_offset.clone()),
        ("BITFIELD bf GET i8 #-1", bad_offset.clone()),
        ("BITFIELD bf GET i8 4294967296", bad_offset.clone()),
        (
            "BITFIELD bf GET i8 #1152921504606846976",
            bad_offset.clone(),
        ),
        (
            "BITFIELD bf OVERFLOW BAD",
            err("ERR Invalid OVERFLOW type specified"),
        ),
        ("BITFIELD bf GET i8", err("ERR syntax error")),
        ("BITFIELD bf FOO", err("ERR syntax error")),
        (
            "BITFIELD bf SET i8 0 x",
            err("ERR value is not an integer or out of range"),
        ),
        (
            "BITFIELD_RO bf SET i8 0 1",
            err("ERR BITFIELD_RO only supports the GET subcommand"),
        ),
        ("EXISTS bf", int(0)), // nothing ran
    ]);
    s.run("HSET h f v");
    assert!(matches!(s.run("BITFIELD h GET i8 0"), Reply::Error(e) if e.starts_with("WRONGTYPE")));
}

#[test]
fn a_logged_bitfield_replays_under_a_lower_proto_max_bulk_len() {
    let mut s = Session::new();
    let log = s.log_lines(&["BITFIELD b SET u8 16777216 7", "SETBIT s 16777216 1"]);
    let config = Config {
        proto_max_bulk_len: 1 << 20,
        ..Config::default()
    };
    let engine = load_with(config, &log, s.now);
    assert_eq!(engine.store().get(b"b").unwrap().value().len(), 2_097_153);
    assert_eq!(engine.store().get(b"s").unwrap().value().len(), 2_097_153);
}
