use super::*;

#[test]
fn get_and_set() {
    let mut s = Session::new();
    s.expect(&[
        ("GET k", nil()),
        ("SET k hello", ok()),
        ("GET k", bulk("hello")),
        ("set k \"new value\"", ok()), // names are case-insensitive
        ("GeT k", bulk("new value")),
    ]);
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
    let mut s = Session::new();
    s.expect(&[
        ("SET k v XX", nil()), // XX needs an existing key
        ("SET k v1 NX", ok()),
        ("SET k v2 NX", nil()), // NX needs a missing key
        ("SET k v3 XX", ok()),
        ("GET k", bulk("v3")),
    ]);
}

#[test]
fn set_get_returns_the_old_value() {
    let mut s = Session::new();
    s.expect(&[
        ("SET k v1 GET", nil()),
        ("SET k v2 GET", bulk("v1")),
        ("GET k", bulk("v2")),
    ]);
}

#[test]
fn set_nx_get_combinations() {
    let mut s = Session::new();
    // NX GET on a missing key: sets it, returns nil.
    s.expect(&[
        ("SET k v1 NX GET", nil()),
        ("GET k", bulk("v1")),
        // NX GET on an existing key: does not set, returns the current value.
        ("SET k v2 NX GET", bulk("v1")),
        ("GET k", bulk("v1")),
        // XX GET on a missing key: does not set, returns nil.
        ("SET other v XX GET", nil()),
        ("EXISTS other", int(0)),
        // XX GET on an existing key: sets, returns the old value.
        ("SET k v3 XX GET", bulk("v1")),
        ("GET k", bulk("v3")),
    ]);
}

#[test]
fn set_with_expiry_options() {
    let mut s = Session::new();
    s.expect(&[
        ("SET a v EX 10", ok()),
        ("PTTL a", int(10_000)),
        ("SET b v PX 1500", ok()),
        ("PTTL b", int(1500)),
    ]);
    let at_s = s.now / 1000 + 100;
    assert_eq!(s.run(&format!("SET c v EXAT {at_s}")), ok());
    assert_eq!(s.run("TTL c"), int(100));
    assert_eq!(s.run(&format!("SET d v PXAT {}", s.now + 42)), ok());
    s.expect(&[
        ("PTTL d", int(42)),
        // A plain SET clears the TTL; KEEPTTL keeps it.
        ("SET a w KEEPTTL", ok()),
        ("PTTL a", int(10_000)),
        ("SET a w", ok()),
        ("TTL a", int(-1)),
    ]);
}

#[test]
fn set_syntax_and_expire_errors() {
    let mut s = Session::new();
    let syntax = err("ERR syntax error");
    s.expect(&[
        ("SET k v NX XX", syntax.clone()),
        ("SET k v EX 10 PX 100", syntax.clone()),
        ("SET k v EX 10 KEEPTTL", syntax.clone()),
        ("SET k v EX", syntax.clone()),
        ("SET k v BOGUS", syntax.clone()),
        (
            "SET k v EX ten",
            err("ERR value is not an integer or out of range"),
        ),
    ]);
    let invalid = err("ERR invalid expire time in 'set' command");
    s.expect(&[
        ("SET k v EX 0", invalid.clone()),
        ("SET k v PX -5", invalid.clone()),
        ("SET k v EX 9223372036854776", invalid.clone()), // overflows in ms
        ("SET k v PX 9223372036854775807", invalid.clone()), // overflows when added to now
        ("EXISTS k", int(0)),                             // nothing was set
        (
            "SET k",
            err("ERR wrong number of arguments for 'set' command"),
        ),
    ]);
}

#[test]
fn set_with_expiry_in_the_past_deletes() {
    let mut s = Session::new();
    s.run("SET k v");
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
    let mut s = Session::new();
    s.expect(&[
        ("GETSET k v1", nil()),
        ("SET k v1 EX 100", ok()),
        ("GETSET k v2", bulk("v1")),
        ("TTL k", int(-1)), // GETSET clears the TTL
        ("SETNX k v3", int(0)),
        ("SETNX other v3", int(1)),
        ("GET other", bulk("v3")),
    ]);
}

#[test]
fn counters() {
    let mut s = Session::new();
    s.expect(&[
        ("INCR n", int(1)), // missing counts as 0
        ("INCRBY n 41", int(42)),
        ("DECR n", int(41)),
        ("DECRBY n 50", int(-9)),
        ("GET n", bulk("-9")),
        ("INCRBY n -1", int(-10)),
    ]);
}

#[test]
fn counters_keep_the_ttl() {
    let mut s = Session::new();
    s.run("SET n 5 EX 100");
    s.expect(&[("INCR n", int(6)), ("TTL n", int(100))]);
}

#[test]
fn counter_errors() {
    let mut s = Session::new();
    let not_int = err("ERR value is not an integer or out of range");
    s.run("SET text hello");
    assert_eq!(s.run("INCR text"), not_int);
    s.run("SET spaced \" 1\"");
    assert_eq!(s.run("INCR spaced"), not_int);
    s.run("SET padded 01");
    s.expect(&[
        ("INCR padded", not_int.clone()),
        ("INCRBY n abc", not_int.clone()),
        ("INCRBY n 1.5", not_int.clone()),
        ("INCRBY n 99999999999999999999", not_int.clone()),
    ]);
    let overflow = err("ERR increment or decrement would overflow");
    s.run("SET max 9223372036854775807");
    assert_eq!(s.run("INCR max"), overflow);
    s.run("SET min -9223372036854775808");
    s.expect(&[
        ("DECR min", overflow.clone()),
        (
            "DECRBY x -9223372036854775808",
            err("ERR decrement would overflow"),
        ),
        ("GET max", bulk("9223372036854775807")), // unchanged
    ]);
}

#[test]
fn append_and_strlen() {
    let mut s = Session::new();
    s.expect(&[
        ("STRLEN k", int(0)),
        ("APPEND k Hello", int(5)),
        ("APPEND k \" World\"", int(11)),
        ("GET k", bulk("Hello World")),
        ("STRLEN k", int(11)),
    ]);
}

#[test]
fn append_respects_proto_max_bulk_len() {
    let mut s = Session::with_config(Config {
        proto_max_bulk_len: 4,
        ..Config::default()
    });
    s.expect(&[
        ("APPEND k abc", int(3)),
        (
            "APPEND k de",
            err("ERR string exceeds maximum allowed size (proto-max-bulk-len)"),
        ),
    ]);
}

#[test]
fn mget_and_mset() {
    let mut s = Session::new();
    s.expect(&[
        ("MSET a 1 b 2", ok()),
        ("MGET a missing b", array(&[bulk("1"), nil(), bulk("2")])),
        (
            "MSET a 1 b",
            err("ERR wrong number of arguments for 'mset' command"),
        ),
    ]);
    s.run("SET t v EX 10");
    s.run("MSET t w");
    assert_eq!(s.run("TTL t"), int(-1), "MSET clears TTLs");
}

#[test]
fn setex_psetex_and_their_errors() {
    let mut s = Session::new();
    let now = s.now;
    s.expect(&[("SETEX k 10 v", Reply::ok()), ("TTL k", Reply::Integer(10))]);
    assert_eq!(
        s.logged("PSETEX k 500 w"),
        [format!("SET k w PXAT {}", now + 500)]
    );
    s.expect(&[
        (
            "SETEX k 0 v",
            Reply::error("ERR invalid expire time in 'setex' command"),
        ),
        (
            "SETEX k x v",
            Reply::error("ERR value is not an integer or out of range"),
        ),
    ]);
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
    s.expect(&[
        ("TTL k", Reply::Integer(-1)),
        ("GETEX k", Reply::bulk("v")),
        ("GETEX k EX", Reply::error("ERR syntax error")),
    ]);
    assert_eq!(s.logged("GETDEL k"), ["DEL k"]);
    s.expect(&[
        ("GETDEL k", Reply::Bulk(None)),
        ("GETEX missing EX 5", Reply::Bulk(None)),
    ]);
}

#[test]
fn incrbyfloat_keeps_redis_text() {
    let mut s = Session::new();
    s.run("SET f 10.50");
    s.expect(&[
        ("INCRBYFLOAT f 0.1", Reply::bulk("10.6")),
        ("INCRBYFLOAT f -5", Reply::bulk("5.6")),
        ("INCRBYFLOAT g 3", Reply::bulk("3")),
        ("INCRBYFLOAT g 2.0e2", Reply::bulk("203")),
    ]);
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
    let mut s = Session::new();
    s.expect(&[
        ("MSETNX a 1 b 2", Reply::Integer(1)),
        ("MSETNX b 3 c 4", Reply::Integer(0)),
        ("EXISTS c", Reply::Integer(0)),
        (
            "MSETNX a",
            Reply::error("ERR wrong number of arguments for 'msetnx' command"),
        ),
    ]);
}

#[test]
fn getrange_and_setrange_follow_redis_offsets() {
    let mut s = Session::new();
    s.run("SET k \"This is a string\"");
    s.expect(&[
        ("GETRANGE k 0 3", Reply::bulk("This")),
        ("GETRANGE k -3 -1", Reply::bulk("ing")),
        ("GETRANGE k 0 -1", Reply::bulk("This is a string")),
        ("GETRANGE k 10 100", Reply::bulk("string")),
        ("GETRANGE k 5 3", Reply::bulk("")),
        ("GETRANGE k -1 -5", Reply::bulk("")),
        ("SUBSTR k 0 3", Reply::bulk("This")),
        ("GETRANGE missing 0 -1", Reply::bulk("")),
    ]);
    s.run("SET w \"Hello World\"");
    s.expect(&[
        ("SETRANGE w 6 Redis", Reply::Integer(11)),
        ("GET w", Reply::bulk("Hello Redis")),
        ("SETRANGE z 3 ab", Reply::Integer(5)),
        ("GET z", Reply::bulk(b"\0\0\0ab".to_vec())),
    ]);
    assert_eq!(s.logged("SETRANGE z 0 x"), ["SET z x\0\0ab KEEPTTL"]);
    s.expect(&[
        (
            "SETRANGE z -1 x",
            Reply::error("ERR offset is out of range"),
        ),
        (
            "SETRANGE z 536870912 x",
            Reply::error("ERR string exceeds maximum allowed size (proto-max-bulk-len)"),
        ),
    ]);
}

#[test]
fn an_offset_past_the_size_limit_is_a_size_error_under_maxmemory_too() {
    let mut s = Session::new();
    s.run("CONFIG SET maxmemory 1000000");
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
    s.run("SET g 9.95");
    s.expect(&[
        ("INCRBYFLOAT g 0.1", Reply::bulk("10.05")),
        ("INCRBYFLOAT g -10.05", Reply::bulk("0")),
        ("INCRBYFLOAT g -0.5", Reply::bulk("-0.5")),
        ("INCRBYFLOAT g 1e1", Reply::bulk("9.5")), // exponents: doubles
    ]);
}
