use super::*;

#[test]
fn get_and_set() {
    let mut s = Session::new();
    assert_eq!(s.run("GET k"), nil());
    assert_eq!(s.run("SET k hello"), ok());
    assert_eq!(s.run("GET k"), bulk("hello"));
    assert_eq!(
        s.run("set k \"new value\""),
        ok(),
        "names are case-insensitive"
    );
    assert_eq!(s.run("GeT k"), bulk("new value"));
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
    assert_eq!(s.run("SET k v XX"), nil(), "XX needs an existing key");
    assert_eq!(s.run("SET k v1 NX"), ok());
    assert_eq!(s.run("SET k v2 NX"), nil(), "NX needs a missing key");
    assert_eq!(s.run("SET k v3 XX"), ok());
    assert_eq!(s.run("GET k"), bulk("v3"));
}

#[test]
fn set_get_returns_the_old_value() {
    let mut s = Session::new();
    assert_eq!(s.run("SET k v1 GET"), nil());
    assert_eq!(s.run("SET k v2 GET"), bulk("v1"));
    assert_eq!(s.run("GET k"), bulk("v2"));
}

#[test]
fn set_nx_get_combinations() {
    let mut s = Session::new();
    // NX GET on a missing key: sets it, returns nil.
    assert_eq!(s.run("SET k v1 NX GET"), nil());
    assert_eq!(s.run("GET k"), bulk("v1"));
    // NX GET on an existing key: does not set, returns the current value.
    assert_eq!(s.run("SET k v2 NX GET"), bulk("v1"));
    assert_eq!(s.run("GET k"), bulk("v1"));
    // XX GET on a missing key: does not set, returns nil.
    assert_eq!(s.run("SET other v XX GET"), nil());
    assert_eq!(s.run("EXISTS other"), int(0));
    // XX GET on an existing key: sets, returns the old value.
    assert_eq!(s.run("SET k v3 XX GET"), bulk("v1"));
    assert_eq!(s.run("GET k"), bulk("v3"));
}

#[test]
fn set_with_expiry_options() {
    let mut s = Session::new();
    assert_eq!(s.run("SET a v EX 10"), ok());
    assert_eq!(s.run("PTTL a"), int(10_000));
    assert_eq!(s.run("SET b v PX 1500"), ok());
    assert_eq!(s.run("PTTL b"), int(1500));
    let at_s = s.now / 1000 + 100;
    assert_eq!(s.run(&format!("SET c v EXAT {at_s}")), ok());
    assert_eq!(s.run("TTL c"), int(100));
    assert_eq!(s.run(&format!("SET d v PXAT {}", s.now + 42)), ok());
    assert_eq!(s.run("PTTL d"), int(42));
    // A plain SET clears the TTL; KEEPTTL keeps it.
    assert_eq!(s.run("SET a w KEEPTTL"), ok());
    assert_eq!(s.run("PTTL a"), int(10_000));
    assert_eq!(s.run("SET a w"), ok());
    assert_eq!(s.run("TTL a"), int(-1));
}

#[test]
fn set_syntax_and_expire_errors() {
    let mut s = Session::new();
    let syntax = err("ERR syntax error");
    assert_eq!(s.run("SET k v NX XX"), syntax);
    assert_eq!(s.run("SET k v EX 10 PX 100"), syntax);
    assert_eq!(s.run("SET k v EX 10 KEEPTTL"), syntax);
    assert_eq!(s.run("SET k v EX"), syntax);
    assert_eq!(s.run("SET k v BOGUS"), syntax);
    assert_eq!(
        s.run("SET k v EX ten"),
        err("ERR value is not an integer or out of range")
    );
    let invalid = err("ERR invalid expire time in 'set' command");
    assert_eq!(s.run("SET k v EX 0"), invalid);
    assert_eq!(s.run("SET k v PX -5"), invalid);
    assert_eq!(
        s.run("SET k v EX 9223372036854776"),
        invalid,
        "overflows in ms"
    );
    assert_eq!(
        s.run("SET k v PX 9223372036854775807"),
        invalid,
        "overflows when added to now"
    );
    assert_eq!(s.run("EXISTS k"), int(0), "nothing was set");
    assert_eq!(
        s.run("SET k"),
        err("ERR wrong number of arguments for 'set' command")
    );
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
    assert_eq!(s.run("GETSET k v1"), nil());
    assert_eq!(s.run("SET k v1 EX 100"), ok());
    assert_eq!(s.run("GETSET k v2"), bulk("v1"));
    assert_eq!(s.run("TTL k"), int(-1), "GETSET clears the TTL");
    assert_eq!(s.run("SETNX k v3"), int(0));
    assert_eq!(s.run("SETNX other v3"), int(1));
    assert_eq!(s.run("GET other"), bulk("v3"));
}

#[test]
fn counters() {
    let mut s = Session::new();
    assert_eq!(s.run("INCR n"), int(1), "missing counts as 0");
    assert_eq!(s.run("INCRBY n 41"), int(42));
    assert_eq!(s.run("DECR n"), int(41));
    assert_eq!(s.run("DECRBY n 50"), int(-9));
    assert_eq!(s.run("GET n"), bulk("-9"));
    assert_eq!(s.run("INCRBY n -1"), int(-10));
}

#[test]
fn counters_keep_the_ttl() {
    let mut s = Session::new();
    s.run("SET n 5 EX 100");
    assert_eq!(s.run("INCR n"), int(6));
    assert_eq!(s.run("TTL n"), int(100));
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
    assert_eq!(s.run("INCR padded"), not_int);
    assert_eq!(s.run("INCRBY n abc"), not_int);
    assert_eq!(s.run("INCRBY n 1.5"), not_int);
    assert_eq!(s.run("INCRBY n 99999999999999999999"), not_int);
    let overflow = err("ERR increment or decrement would overflow");
    s.run("SET max 9223372036854775807");
    assert_eq!(s.run("INCR max"), overflow);
    s.run("SET min -9223372036854775808");
    assert_eq!(s.run("DECR min"), overflow);
    assert_eq!(
        s.run("DECRBY x -9223372036854775808"),
        err("ERR decrement would overflow")
    );
    assert_eq!(s.run("GET max"), bulk("9223372036854775807"), "unchanged");
}

#[test]
fn append_and_strlen() {
    let mut s = Session::new();
    assert_eq!(s.run("STRLEN k"), int(0));
    assert_eq!(s.run("APPEND k Hello"), int(5));
    assert_eq!(s.run("APPEND k \" World\""), int(11));
    assert_eq!(s.run("GET k"), bulk("Hello World"));
    assert_eq!(s.run("STRLEN k"), int(11));
}

#[test]
fn append_respects_proto_max_bulk_len() {
    let mut s = Session::with_config(Config {
        proto_max_bulk_len: 4,
        ..Config::default()
    });
    assert_eq!(s.run("APPEND k abc"), int(3));
    assert_eq!(
        s.run("APPEND k de"),
        err("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
    );
}

#[test]
fn mget_and_mset() {
    let mut s = Session::new();
    assert_eq!(s.run("MSET a 1 b 2"), ok());
    assert_eq!(
        s.run("MGET a missing b"),
        array(&[bulk("1"), nil(), bulk("2")])
    );
    assert_eq!(
        s.run("MSET a 1 b"),
        err("ERR wrong number of arguments for 'mset' command")
    );
    s.run("SET t v EX 10");
    s.run("MSET t w");
    assert_eq!(s.run("TTL t"), int(-1), "MSET clears TTLs");
}

#[test]
fn setex_psetex_and_their_errors() {
    let mut s = Session::new();
    let now = s.now;
    assert_eq!(s.run("SETEX k 10 v"), Reply::ok());
    assert_eq!(s.run("TTL k"), Reply::Integer(10));
    assert_eq!(
        s.logged("PSETEX k 500 w"),
        [format!("SET k w PXAT {}", now + 500)]
    );
    assert_eq!(
        s.run("SETEX k 0 v"),
        Reply::error("ERR invalid expire time in 'setex' command")
    );
    assert_eq!(
        s.run("SETEX k x v"),
        Reply::error("ERR value is not an integer or out of range")
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
    assert_eq!(s.run("TTL k"), Reply::Integer(-1));
    assert_eq!(s.run("GETEX k"), Reply::bulk("v"));
    assert_eq!(s.run("GETEX k EX"), Reply::error("ERR syntax error"));
    assert_eq!(s.logged("GETDEL k"), ["DEL k"]);
    assert_eq!(s.run("GETDEL k"), Reply::Bulk(None));
    assert_eq!(s.run("GETEX missing EX 5"), Reply::Bulk(None));
}

#[test]
fn incrbyfloat_keeps_redis_text() {
    let mut s = Session::new();
    s.run("SET f 10.50");
    assert_eq!(s.run("INCRBYFLOAT f 0.1"), Reply::bulk("10.6"));
    assert_eq!(s.run("INCRBYFLOAT f -5"), Reply::bulk("5.6"));
    assert_eq!(s.run("INCRBYFLOAT g 3"), Reply::bulk("3"));
    assert_eq!(s.run("INCRBYFLOAT g 2.0e2"), Reply::bulk("203"));
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
    assert_eq!(s.run("MSETNX a 1 b 2"), Reply::Integer(1));
    assert_eq!(s.run("MSETNX b 3 c 4"), Reply::Integer(0));
    assert_eq!(s.run("EXISTS c"), Reply::Integer(0));
    assert_eq!(
        s.run("MSETNX a"),
        Reply::error("ERR wrong number of arguments for 'msetnx' command")
    );
}

#[test]
fn getrange_and_setrange_follow_redis_offsets() {
    let mut s = Session::new();
    s.run("SET k \"This is a string\"");
    assert_eq!(s.run("GETRANGE k 0 3"), Reply::bulk("This"));
    assert_eq!(s.run("GETRANGE k -3 -1"), Reply::bulk("ing"));
    assert_eq!(s.run("GETRANGE k 0 -1"), Reply::bulk("This is a string"));
    assert_eq!(s.run("GETRANGE k 10 100"), Reply::bulk("string"));
    assert_eq!(s.run("GETRANGE k 5 3"), Reply::bulk(""));
    assert_eq!(s.run("GETRANGE k -1 -5"), Reply::bulk(""));
    assert_eq!(s.run("SUBSTR k 0 3"), Reply::bulk("This"));
    assert_eq!(s.run("GETRANGE missing 0 -1"), Reply::bulk(""));
    s.run("SET w \"Hello World\"");
    assert_eq!(s.run("SETRANGE w 6 Redis"), Reply::Integer(11));
    assert_eq!(s.run("GET w"), Reply::bulk("Hello Redis"));
    assert_eq!(s.run("SETRANGE z 3 ab"), Reply::Integer(5));
    assert_eq!(s.run("GET z"), Reply::bulk(b"\0\0\0ab".to_vec()));
    assert_eq!(s.logged("SETRANGE z 0 x"), ["SET z x\0\0ab KEEPTTL"]);
    assert_eq!(
        s.run("SETRANGE z -1 x"),
        Reply::error("ERR offset is out of range")
    );
    assert_eq!(
        s.run("SETRANGE z 536870912 x"),
        Reply::error("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
    );
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
    assert_eq!(s.run("INCRBYFLOAT g 0.1"), Reply::bulk("10.05"));
    assert_eq!(s.run("INCRBYFLOAT g -10.05"), Reply::bulk("0"));
    assert_eq!(s.run("INCRBYFLOAT g -0.5"), Reply::bulk("-0.5"));
    assert_eq!(
        s.run("INCRBYFLOAT g 1e1"),
        Reply::bulk("9.5"),
        "exponents: doubles"
    );
}
