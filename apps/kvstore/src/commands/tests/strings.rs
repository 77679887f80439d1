use super::*;

#[test]
fn get_and_set() {
    transcript(
        r#"
        > GET k
        (nil)
        > SET k hello
        OK
        > GET k
        "hello"
        // names are case-insensitive
        > set k "new value"
        OK
        > GeT k
        "new value"
    "#,
    );
}

#[test]
fn values_and_keys_are_binary_safe() {
    let mut s = Session::new();
    let key = b"k\r\n\0\xff".to_vec();
    let value = b"\r\n$3\r\n\0".to_vec();
    let set = [b"SET".to_vec(), key.clone(), value.clone()];
    assert_eq!(s.engine.execute(&set, &mut s.client, s.now).reply, ok());
    let get = [b"GET".to_vec(), key];
    assert_eq!(
        s.engine.execute(&get, &mut s.client, s.now).reply,
        Reply::bulk(value)
    );
}

#[test]
fn set_nx_and_xx() {
    transcript(
        r#"
        // XX needs an existing key
        > SET k v XX
        (nil)
        > SET k v1 NX
        OK
        // NX needs a missing key
        > SET k v2 NX
        (nil)
        > SET k v3 XX
        OK
        > GET k
        "v3"
    "#,
    );
}

#[test]
fn set_get_returns_the_old_value() {
    transcript(
        r#"
        > SET k v1 GET
        (nil)
        > SET k v2 GET
        "v1"
        > GET k
        "v2"
    "#,
    );
}

#[test]
fn set_nx_get_combinations() {
    transcript(
        r#"
        // NX GET on a missing key: sets it, returns nil.
        > SET k v1 NX GET
        (nil)
        > GET k
        "v1"
        // NX GET on an existing key: does not set, returns the current value.
        > SET k v2 NX GET
        "v1"
        > GET k
        "v1"
        // XX GET on a missing key: does not set, returns nil.
        > SET other v XX GET
        (nil)
        > EXISTS other
        (integer) 0
        // XX GET on an existing key: sets, returns the old value.
        > SET k v3 XX GET
        "v1"
        > GET k
        "v3"
    "#,
    );
}

#[test]
fn set_with_expiry_options() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > SET a v EX 10
        OK
        > PTTL a
        (integer) 10000
        > SET b v PX 1500
        OK
        > PTTL b
        (integer) 1500
    "#,
    );
    let at_s = s.now / 1000 + 100;
    assert_eq!(s.run(&format!("SET c v EXAT {at_s}")), ok());
    assert_eq!(s.run("TTL c"), int(100));
    assert_eq!(s.run(&format!("SET d v PXAT {}", s.now + 42)), ok());
    s.transcript(
        r#"
        > PTTL d
        (integer) 42
        // A plain SET clears the TTL; KEEPTTL keeps it.
        > SET a w KEEPTTL
        OK
        > PTTL a
        (integer) 10000
        > SET a w
        OK
        > TTL a
        (integer) -1
    "#,
    );
}

#[test]
fn set_syntax_and_expire_errors() {
    transcript(
        r#"
        > SET k v NX XX
        (error) ERR syntax error
        > SET k v EX 10 PX 100
        (error) ERR syntax error
        > SET k v EX 10 KEEPTTL
        (error) ERR syntax error
        > SET k v EX
        (error) ERR syntax error
        > SET k v BOGUS
        (error) ERR syntax error
        > SET k v EX ten
        (error) ERR value is not an integer or out of range
        > SET k v EX 0
        (error) ERR invalid expire time in 'set' command
        > SET k v PX -5
        (error) ERR invalid expire time in 'set' command
        // overflows in ms
        > SET k v EX 9223372036854776
        (error) ERR invalid expire time in 'set' command
        // overflows when added to now
        > SET k v PX 9223372036854775807
        (error) ERR invalid expire time in 'set' command
        // nothing was set
        > EXISTS k
        (integer) 0
        > SET k
        (error) ERR wrong number of arguments for 'set' command
    "#,
    );
}

#[test]
fn set_with_expiry_in_the_past_deletes() {
    let mut s = Session::after("SET k v");
    assert_eq!(s.logged("SET k v2 PXAT 5"), ["DEL k"]);
    assert_eq!(s.run("EXISTS k"), int(0));
    assert_eq!(
        s.logged("SET k v2 EXAT 1"),
        Vec::<String>::new(),
        "nothing to delete"
    );
}

#[test]
fn getset_and_setnx() {
    transcript(
        r#"
        > GETSET k v1
        (nil)
        > SET k v1 EX 100
        OK
        > GETSET k v2
        "v1"
        // GETSET clears the TTL
        > TTL k
        (integer) -1
        > SETNX k v3
        (integer) 0
        > SETNX other v3
        (integer) 1
        > GET other
        "v3"
    "#,
    );
}

#[test]
fn counters() {
    transcript(
        r#"
        // missing counts as 0
        > INCR n
        (integer) 1
        > INCRBY n 41
        (integer) 42
        > DECR n
        (integer) 41
        > DECRBY n 50
        (integer) -9
        > GET n
        "-9"
        > INCRBY n -1
        (integer) -10
    "#,
    );
}

#[test]
fn counters_keep_the_ttl() {
    transcript(
        r#"
        > SET n 5 EX 100
        OK
        > INCR n
        (integer) 6
        > TTL n
        (integer) 100
    "#,
    );
}

#[test]
fn counter_errors() {
    let mut s = Session::new();
    let not_int = err("ERR value is not an integer or out of range");
    s.run("SET text hello");
    assert_eq!(s.run("INCR text"), not_int);
    s.run("SET spaced \" 1\"");
    assert_eq!(s.run("INCR spaced"), not_int);
    s.transcript(
        r#"
        > SET padded 01
        OK
        > INCR padded
        (error) ERR value is not an integer or out of range
        > INCRBY n abc
        (error) ERR value is not an integer or out of range
        > INCRBY n 1.5
        (error) ERR value is not an integer or out of range
        > INCRBY n 99999999999999999999
        (error) ERR value is not an integer or out of range
    "#,
    );
    let overflow = err("ERR increment or decrement would overflow");
    s.run("SET max 9223372036854775807");
    assert_eq!(s.run("INCR max"), overflow);
    s.transcript(
        r#"
        > SET min -9223372036854775808
        OK
        > DECR min
        (error) ERR increment or decrement would overflow
        > DECRBY x -9223372036854775808
        (error) ERR decrement would overflow
        // unchanged
        > GET max
        "9223372036854775807"
    "#,
    );
}

#[test]
fn append_and_strlen() {
    transcript(
        r#"
        > STRLEN k
        (integer) 0
        > APPEND k Hello
        (integer) 5
        > APPEND k " World"
        (integer) 11
        > GET k
        "Hello World"
        > STRLEN k
        (integer) 11
    "#,
    );
}

#[test]
fn append_respects_proto_max_bulk_len() {
    let mut s = Session::with_config(Config {
        proto_max_bulk_len: 4,
        ..Config::default()
    });
    s.transcript(
        r#"
        > APPEND k abc
        (integer) 3
        > APPEND k de
        (error) ERR string exceeds maximum allowed size (proto-max-bulk-len)
    "#,
    );
}

#[test]
fn mget_and_mset() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > MSET a 1 b 2
        OK
        > MGET a missing b
        1) "1"
        2) (nil)
        3) "2"
        > MSET a 1 b
        (error) ERR wrong number of arguments for 'mset' command
    "#,
    );
    s.run("SET t v EX 10");
    s.run("MSET t w");
    assert_eq!(s.run("TTL t"), int(-1), "MSET clears TTLs");
}

#[test]
fn setex_psetex_and_their_errors() {
    let mut s = Session::new();
    let now = s.now;
    s.transcript(
        r#"
        > SETEX k 10 v
        OK
        > TTL k
        (integer) 10
    "#,
    );
    assert_eq!(
        s.logged("PSETEX k 500 w"),
        [format!("SET k w PXAT {}", now + 500)]
    );
    s.transcript(
        r#"
        > SETEX k 0 v
        (error) ERR invalid expire time in 'setex' command
        > SETEX k x v
        (error) ERR value is not an integer or out of range
    "#,
    );
}

#[test]
fn getdel_and_getex() {
    let mut s = Session::new();
    let now = s.now;
    s.run("SET k v");
    assert_eq!(
        s.logged("GETEX k PX 100"),
        [format!("PEXPIREAT k {}", now + 100)]
    );
    assert_eq!(s.run("PTTL k"), Reply::Integer(100));
    assert_eq!(s.logged("GETEX k PERSIST"), ["PERSIST k"]);
    s.transcript(
        r#"
        > TTL k
        (integer) -1
        > GETEX k
        "v"
        > GETEX k EX
        (error) ERR syntax error
    "#,
    );
    assert_eq!(s.logged("GETDEL k"), ["DEL k"]);
    s.transcript(
        r#"
        > GETDEL k
        (nil)
        > GETEX missing EX 5
        (nil)
    "#,
    );
}

#[test]
fn incrbyfloat_keeps_redis_text() {
    let mut s = Session::new();
    s.transcript(
        r#"
        > SET f 10.50
        OK
        > INCRBYFLOAT f 0.1
        "10.6"
        > INCRBYFLOAT f -5
        "5.6"
        > INCRBYFLOAT g 3
        "3"
        > INCRBYFLOAT g 2.0e2
        "203"
    "#,
    );
    assert_eq!(s.logged("INCRBYFLOAT g 1"), ["SET g 204 KEEPTTL"]);
    assert_eq!(
        s.run("INCRBYFLOAT g abc"),
        Reply::error("ERR value is not a valid float")
    );
    s.run("SET t text");
    assert_eq!(
        s.run("INCRBYFLOAT t 1"),
        Reply::error("ERR value is not a valid float")
    );
    // Found by the differential test: an infinite increment is a valid
    // float whose sum is refused; NaN is not a float.
    for inf in ["inf", "-Infinity", "INF"] {
        assert_eq!(
            s.run(&format!("INCRBYFLOAT g {inf}")),
            Reply::error("ERR increment would produce NaN or Infinity")
        );
    }
    assert_eq!(
        s.run("INCRBYFLOAT g nan"),
        Reply::error("ERR value is not a valid float")
    );
    assert!(matches!(s.run("INCRBYFLOAT g 1e308"), Reply::Bulk(Some(_))));
    assert_eq!(
        s.run("INCRBYFLOAT g 1e308"),
        Reply::error("ERR increment would produce NaN or Infinity")
    );
}

#[test]
fn msetnx_sets_all_or_nothing() {
    transcript(
        r#"
        > MSETNX a 1 b 2
        (integer) 1
        > MSETNX b 3 c 4
        (integer) 0
        > EXISTS c
        (integer) 0
        > MSETNX a
        (error) ERR wrong number of arguments for 'msetnx' command
    "#,
    );
}

#[test]
fn getrange_and_setrange_follow_redis_offsets() {
    let mut s = Session::new();
    s.run("SET k \"This is a string\"");
    s.transcript(
        r#"
        > GETRANGE k 0 3
        "This"
        > GETRANGE k -3 -1
        "ing"
        > GETRANGE k 0 -1
        "This is a string"
        > GETRANGE k 10 100
        "string"
        > GETRANGE k 5 3
        ""
        > GETRANGE k -1 -5
        ""
        > SUBSTR k 0 3
        "This"
        > GETRANGE missing 0 -1
        ""
    "#,
    );
    s.run("SET w \"Hello World\"");
    s.transcript(
        r#"
        > SETRANGE w 6 Redis
        (integer) 11
        > GET w
        "Hello Redis"
        > SETRANGE z 3 ab
        (integer) 5
        > GET z
        "\x00\x00\x00ab"
    "#,
    );
    assert_eq!(s.logged("SETRANGE z 0 x"), ["SET z x\0\0ab KEEPTTL"]);
    s.transcript(
        r#"
        > SETRANGE z -1 x
        (error) ERR offset is out of range
        > SETRANGE z 536870912 x
        (error) ERR string exceeds maximum allowed size (proto-max-bulk-len)
    "#,
    );
}

#[test]
fn an_offset_past_the_size_limit_is_a_size_error_under_maxmemory_too() {
    let mut s = Session::after("CONFIG SET maxmemory 1000000");
    let too_big = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
    for offset in ["9223372036854775807", "2147483647"] {
        assert_eq!(
            s.run(&format!("SETRANGE K {offset} A")),
            Reply::error(too_big)
        );
    }
    assert!(
        matches!(s.run("SETRANGE K 2000000 A"), Reply::Error(e) if e.starts_with("OOM")),
        "a valid offset past maxmemory is refused for memory"
    );
    assert_eq!(
        s.run("SETBIT K 9223372036854775807 1"),
        Reply::error("ERR bit offset is not an integer or out of range")
    );
}

#[test]
fn incrbyfloat_adds_plain_decimals_exactly() {
    let mut s = Session::new();
    for _ in 0..3 {
        s.run("INCRBYFLOAT f 0.1");
    }
    assert_eq!(
        s.run("GET f"),
        Reply::bulk("0.3"),
        "doubles would say 0.30000000000000004"
    );
    s.transcript(
        r#"
        > SET g 9.95
        OK
        > INCRBYFLOAT g 0.1
        "10.05"
        > INCRBYFLOAT g -10.05
        "0"
        > INCRBYFLOAT g -0.5
        "-0.5"
        // exponents: doubles
        > INCRBYFLOAT g 1e1
        "9.5"
    "#,
    );
}
