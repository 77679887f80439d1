//! `BITOP`, `BITPOS`, `BITFIELD` and `BITFIELD_RO`. The replies expected
//! here are what Redis 7.0.15 answered to the same commands.
use super::*;

#[test]
fn bitop_combines_strings_into_the_destination() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > MSET a foobar b abcdef c x
        OK
        > BITOP AND dest a b
        (integer) 6
        > GET dest
        "`bc`ab"
        > BITOP OR dest a b
        (integer) 6
        > GET dest
        "goofev"
        > BITOP XOR dest a b missing
        (integer) 6
        > GET dest
        "\x07\r\x0c\x06\x04\x14"
        > BITOP NOT dest c
        (integer) 1
        // ~'x' is 0x87
        > GETBIT dest 0
        (integer) 1
        // Shorter sources count as zero bytes; the result loses any expiry.
        > BITOP OR c2 a
        (integer) 6
        > EXPIRE c2 100
        (integer) 1
        > BITOP OR c2 c
        (integer) 1
        > TTL c2
        (integer) -1
        > GET c2
        "x"
    "#,
    );
    // An empty result deletes the destination, whatever it held.
    s.run("HSET h f v");
    assert_eq!(s.logged("BITOP AND h missing"), ["DEL h"]);
    assert_eq!(s.run("EXISTS h"), int(0));
    assert_eq!(s.logged("BITOP AND c2 a"), ["SET c2 foobar"]);
}

#[test]
fn bitop_errors() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > SET a x
        OK
        > BITOP NOT dest a a
        (error) ERR BITOP NOT must be called with a single source key.
        > BITOP NAND dest a
        (error) ERR syntax error
    "#,
    );
    s.run("LPUSH l x");
    assert!(matches!(s.run("BITOP OR dest a l"), Reply::Error(e) if e.starts_with("WRONGTYPE")));
    assert_eq!(s.run("EXISTS dest"), int(0));
}

#[test]
fn bitpos_finds_the_first_bit_in_a_range() {
    let mut s = Session::new();
    s.run(r#"SET bp "\xff\xf0\x00""#);
    s.transcript(
        r#"
        > BITPOS bp 0
        (integer) 12
        > BITPOS bp 1 2
        (integer) -1
        > BITPOS bp 0 0 -1
        (integer) 12
        > BITPOS bp 1 -1
        (integer) -1
        > BITPOS bp 0 8 15 BIT
        (integer) 12
        > BITPOS bp 0 0 7 BIT
        (integer) -1
        > BITPOS bp 1 9 22 BIT
        (integer) 9
        > BITPOS bp 1 2 1
        (integer) -1
    "#,
    );
    s.run(r#"SET ones "\xff\xff""#);
    s.transcript(
        r#"
        // past the end
        > BITPOS ones 0
        (integer) 16
        > BITPOS ones 0 1
        (integer) 16
        // an end was given
        > BITPOS ones 0 0 -1
        (integer) -1
        > BITPOS ones 0 3 5 BIT
        (integer) -1
        > BITPOS ones 1 3
        (integer) -1
        > BITPOS nokey 0
        (integer) 0
        > BITPOS nokey 1
        (integer) -1
    "#,
    );
    s.run(r#"SET empty """#);
    assert_eq!(s.run("BITPOS empty 0"), int(-1));
}

#[test]
fn bitpos_errors() {
    let mut s = Session::after("SET bp x");
    assert_eq!(
        s.run("BITPOS bp 2"),
        err("ERR The bit argument must be 1 or 0.")
    );
    s.transcript(
        r#"
        > BITPOS bp x
        (error) ERR value is not an integer or out of range
        > BITPOS bp 1 a
        (error) ERR value is not an integer or out of range
        // BIT needs an end
        > BITPOS bp 0 3 BIT
        (error) ERR value is not an integer or out of range
        > BITPOS bp 1 0 1 WORD
        (error) ERR syntax error
        > BITPOS bp 1 0 1 BIT x
        (error) ERR syntax error
        // a missing key first
        > BITPOS nokey 1 0 1 BIT x
        (integer) -1
    "#,
    );
}

#[test]
fn bitfield_sets_gets_and_increments_with_overflow_control() {
    let mut s = Session::new();
    s.transcript(r#"
        > BITFIELD bf SET i8 0 100 GET u4 0 INCRBY i8 0 100 OVERFLOW SAT INCRBY i8 0 100 OVERFLOW FAIL INCRBY i8 0 100 GET i8 0
        1) (integer) 0
        2) (integer) 6
        3) (integer) -56
        4) (integer) 44
        5) (nil)
        6) (integer) 44
        > GET bf
        ","
        > BITFIELD bf SET u2 #3 7 GET u2 #3 INCRBY u63 8 -1 OVERFLOW WRAP INCRBY i64 0 -9223372036854775808
        1) (integer) 0
        2) (integer) 3
        3) (integer) 9223372036854775807
        4) (integer) -5764607523034234881
        > GET bf
        "\xaf\xff\xff\xff\xff\xff\xff\xff\xfe"
        > BITFIELD bf GET i8 #2 GET u4 #1 GET i64 5
        1) (integer) -1
        2) (integer) 15
        3) (integer) -1
        > BITFIELD_RO bf GET i8 0 GET u4 #1
        1) (integer) -81
        2) (integer) 15
        > BITFIELD bf
        (empty array)
    "#);
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
    s.transcript(
        r#"
        > SET t x EX 100
        OK
        > BITFIELD t SET u8 0 121
        1) (integer) 120
        > GET t
        "y"
        // the expiry stays
        > TTL t
        (integer) 100
    "#,
    );
}

#[test]
fn bitfield_errors() {
    let mut s = Session::new();
    s.transcript(r#"
        > BITFIELD bf GET i65 0
        (error) ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.
        > BITFIELD bf GET u64 0
        (error) ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.
        > BITFIELD bf GET i8 -1
        (error) ERR bit offset is not an integer or out of range
        > BITFIELD bf GET i8 #-1
        (error) ERR bit offset is not an integer or out of range
        > BITFIELD bf GET i8 4294967296
        (error) ERR bit offset is not an integer or out of range
        > BITFIELD bf GET i8 #1152921504606846976
        (error) ERR bit offset is not an integer or out of range
        > BITFIELD bf OVERFLOW BAD
        (error) ERR Invalid OVERFLOW type specified
        > BITFIELD bf GET i8
        (error) ERR syntax error
        > BITFIELD bf FOO
        (error) ERR syntax error
        > BITFIELD bf SET i8 0 x
        (error) ERR value is not an integer or out of range
        > BITFIELD_RO bf SET i8 0 1
        (error) ERR BITFIELD_RO only supports the GET subcommand
        // nothing ran
        > EXISTS bf
        (integer) 0
    "#);
    s.run("HSET h f v");
    assert!(matches!(s.run("BITFIELD h GET i8 0"), Reply::Error(e) if e.starts_with("WRONGTYPE")));
}

#[test]
fn a_logged_bitfield_replays_under_a_lower_proto_max_bulk_len() {
    let mut s = Session::new();
    let log = s.log_lines(
        r#"
        BITFIELD b SET u8 16777216 7
        SETBIT s 16777216 1
    "#,
    );
    let config = Config {
        proto_max_bulk_len: 1 << 20,
        ..Config::default()
    };
    let engine = load_with(config, &log, s.now);
    assert_eq!(engine.store().get(b"b").unwrap().value().len(), 2_097_153);
    assert_eq!(engine.store().get(b"s").unwrap().value().len(), 2_097_153);
}
