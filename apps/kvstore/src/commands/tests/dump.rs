//! `DUMP` and `RESTORE`: round trips of every type, Redis 7.0's options
//! and errors, what is logged, keyspace events, `maxmemory`, and the
//! access time and frequency `IDLETIME` and `FREQ` set.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::notify::{heard, listening};
use super::{bulk, bulks, err, int, ok, Session, OOM};
use crate::config::Config;
use crate::resp::Reply;
use crate::store::List;

/// The payload `DUMP key` answers.
fn dump(s: &mut Session, key: &str) -> Vec<u8> {
    match s.run(&format!("DUMP {key}")) {
        Reply::Bulk(Some(payload)) => payload,
        other => panic!("DUMP {key}: {other:?}"),
    }
}

/// `RESTORE key` with the payload and the other words of `rest`.
fn restore(s: &mut Session, key: &str, ttl: &str, payload: &[u8], rest: &str) -> Reply {
    let mut args: Vec<Vec<u8>> = alloc::vec![b"RESTORE".to_vec(), key.into(), ttl.into()];
    args.push(payload.to_vec());
    args.extend(rest.split_whitespace().map(|w| w.as_bytes().to_vec()));
    s.engine.execute(&args, &mut s.client, s.now).reply
}

#[test]
fn every_type_round_trips_and_the_log_rebuilds_it() {
    let mut s = Session::new();
    let setup = [
        "SET str hello",
        "RPUSH list a b 3",
        "SADD ints 1 2 3",
        "SADD set a b",
        "HSET hash f v g 12",
        "ZADD zset 1.5 a -inf b",
        "XADD stream 1-1 f v",
        "XADD stream 2-1 g w h x",
        "XGROUP CREATE stream g 0",
        "XREADGROUP GROUP g c STREAMS stream >",
    ];
    for line in setup {
        s.run(line);
    }
    let mut log = crate::aof::HEADER.to_vec();
    for key in ["str", "list", "ints", "set", "hash", "zset", "stream"] {
        let before = s.engine.store().get(key.as_bytes()).unwrap().clone();
        let payload = dump(&mut s, key);
        let copy = format!("{key}2");
        let outcome = {
            let mut args: Vec<Vec<u8>> =
                alloc::vec![b"RESTORE".to_vec(), copy.clone().into(), b"0".to_vec()];
            args.push(payload.clone());
            s.engine.execute(&args, &mut s.client, s.now)
        };
        assert_eq!(outcome.reply, ok(), "{key}");
        log.extend(outcome.effects.to_bytes());
        let after = s.engine.store().get(copy.as_bytes()).unwrap();
        assert_eq!(after.data(), before.data(), "{key}");
        assert_eq!(after.data().encoding(), before.data().encoding(), "{key}");
    }
    // The log holds only the restored copies: load it and compare those.
    let loaded = super::load(&log, s.now);
    for key in [
        "str2", "list2", "ints2", "set2", "hash2", "zset2", "stream2",
    ] {
        let ours = s.engine.store().get(key.as_bytes()).unwrap();
        assert_eq!(loaded.store().get(key.as_bytes()), Some(ours), "{key}");
    }
}

#[test]
fn options_and_errors_as_redis_7_0() {
    let mut s = Session::after("SET foo bar");
    let payload = dump(&mut s, "foo");
    assert_eq!(s.run("DUMP missing"), Reply::Bulk(None));
    s.transcript(
        r#"
        > RESTORE foo 0 x
        (error) BUSYKEY Target key name already exists.
    "#,
    );
    let cases: [(&str, &str, Reply); 9] = [
        ("-1", "REPLACE", err("ERR Invalid TTL value, must be >= 0")),
        (
            "x",
            "REPLACE",
            err("ERR value is not an integer or out of range"),
        ),
        (
            "0",
            "REPLACE IDLETIME -1",
            err("ERR Invalid IDLETIME value, must be >= 0"),
        ),
        (
            "0",
            "REPLACE FREQ 256",
            err("ERR Invalid FREQ value, must be >= 0 and <= 255"),
        ),
        (
            "0",
            "REPLACE FREQ x",
            err("ERR value is not an integer or out of range"),
        ),
        ("0", "REPLACE FREQ 1 IDLETIME 1", err("ERR syntax error")),
        ("0", "REPLACE IDLETIME", err("ERR syntax error")),
        ("0", "REPLACE bogus", err("ERR syntax error")),
        ("0", "REPLACE", ok()),
    ];
    for (ttl, rest, reply) in cases {
        assert_eq!(
            restore(&mut s, "foo", ttl, &payload, rest),
            reply,
            "{ttl} {rest}"
        );
    }
    let mut bad = payload.clone();
    bad[2] ^= 1;
    let wrong = err("ERR DUMP payload version or checksum are wrong");
    assert_eq!(restore(&mut s, "new", "0", &bad, ""), wrong);
    assert_eq!(restore(&mut s, "new", "0", b"short", ""), wrong);
    // A sound footer around a bad value.
    let mut body = alloc::vec![0u8, 0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xf7, 10, 0];
    let crc = crate::rdb::crc64(&body);
    body.extend_from_slice(&crc.to_le_bytes());
    assert_eq!(
        restore(&mut s, "new", "0", &body, ""),
        err("ERR Bad data format")
    );
    assert_eq!(s.run("EXISTS new"), int(0));
    // Arity: RESTORE needs key, ttl and payload.
    assert!(s.run("RESTORE a 0").is_error());
    assert!(s.run("DUMP a b").is_error());
}

#[test]
fn ttl_absttl_and_a_ttl_already_past() {
    let mut s = Session::after("SET foo bar");
    let payload = dump(&mut s, "foo");
    assert_eq!(restore(&mut s, "a", "5000", &payload, ""), ok());
    assert_eq!(s.run("PTTL a"), int(5000));
    let at = format!("{}", s.now + 3000);
    assert_eq!(restore(&mut s, "b", &at, &payload, "ABSTTL"), ok());
    assert_eq!(s.run("PTTL b"), int(3000));
    assert_eq!(restore(&mut s, "c", "2569591501", &payload, ""), ok());
    assert_eq!(s.run("PTTL c"), int(2569591501));
    // Past: nothing is made; with REPLACE the old key goes, logged as DEL.
    let past = format!("{}", s.now - 3000);
    let mut args: Vec<Vec<u8>> = ["RESTORE", "a", &past]
        .iter()
        .map(|w| w.as_bytes().to_vec())
        .collect();
    args.push(payload.clone());
    args.extend([b"ABSTTL".to_vec(), b"REPLACE".to_vec()]);
    let outcome = s.engine.execute(&args, &mut s.client, s.now);
    assert_eq!(outcome.reply, ok());
    assert_eq!(super::show(&outcome.effects.commands()[0]), "DEL a");
    assert_eq!(s.run("EXISTS a"), int(0));
    assert_eq!(restore(&mut s, "d", &past, &payload, "ABSTTL"), ok());
    assert_eq!(s.run("EXISTS d"), int(0));
    // A TTL whose sum with the clock wraps, as in Redis, is past.
    assert_eq!(
        restore(&mut s, "w", "9223372036854775807", &payload, ""),
        ok()
    );
    assert_eq!(s.run("EXISTS w"), int(0));
    // The log gives the same keys and expiries.
    let payload = dump(&mut s, "c");
    let mut args: Vec<Vec<u8>> = ["RESTORE", "e", "7000"]
        .iter()
        .map(|w| w.as_bytes().to_vec())
        .collect();
    args.push(payload);
    let logged: Vec<String> = s
        .engine
        .execute(&args, &mut s.client, s.now)
        .effects
        .commands()
        .iter()
        .map(super::show)
        .collect();
    assert_eq!(logged, [format!("SET e bar PXAT {}", s.now + 7000)]);
}

#[test]
fn idletime_and_freq_follow_the_eviction_policy() {
    let mut s = Session::after("SET foo bar");
    let payload = dump(&mut s, "foo");
    s.run("CONFIG SET maxmemory-policy allkeys-lru");
    assert_eq!(restore(&mut s, "lru", "0", &payload, "IDLETIME 1000"), ok());
    assert_eq!(s.run("OBJECT IDLETIME lru"), int(1000));
    s.advance(2000);
    assert_eq!(s.run("OBJECT IDLETIME lru"), int(1002));
    assert_eq!(s.run("GET lru"), bulk("bar"));
    assert_eq!(s.run("OBJECT IDLETIME lru"), int(0));
    // FREQ under an LRU policy sets nothing (as in Redis).
    assert_eq!(restore(&mut s, "f", "0", &payload, "FREQ 100"), ok());
    s.run("CONFIG SET maxmemory-policy allkeys-lfu");
    assert_eq!(restore(&mut s, "lfu", "0", &payload, "FREQ 100"), ok());
    assert_eq!(s.run("OBJECT FREQ lfu"), int(100));
    assert_eq!(
        restore(&mut s, "lfu", "0", &payload, "REPLACE FREQ 0"),
        ok()
    );
    assert_eq!(s.run("OBJECT FREQ lfu"), int(0));
}

#[test]
fn restore_is_heard_and_counted_by_maxmemory() {
    let mut s = listening("KEA");
    s.run("RPUSH l a b");
    let payload = dump(&mut s, "l");
    heard(&mut s);
    assert_eq!(restore(&mut s, "m", "0", &payload, ""), ok());
    assert_eq!(
        heard(&mut s),
        ["__keyspace@0__:m restore", "__keyevent@0__:restore m"]
    );
    let past = format!("{}", s.now - 1);
    assert_eq!(
        restore(&mut s, "m", &past, &payload, "REPLACE ABSTTL"),
        ok()
    );
    assert_eq!(
        heard(&mut s),
        ["__keyspace@0__:m del", "__keyevent@0__:del m"]
    );

    let mut s = Session::full(
        Config::default(),
        List::element_cost(10),
        "RPUSH k 0123456789 0123456789",
    );
    let payload = dump(&mut s, "k");
    assert_eq!(restore(&mut s, "k2", "0", &payload, ""), err(OOM));
}

#[test]
fn streams_and_payloads_of_redis() {
    let mut s = Session::new();
    s.run("XADD st 1-1 f v");
    s.run("XADD st 2-0 f w");
    s.run("XGROUP CREATE st g 0");
    s.run("XREADGROUP GROUP g alice COUNT 1 STREAMS st >");
    let payload = dump(&mut s, "st");
    assert_eq!(payload[0], 19, "STREAM_LISTPACKS_2");
    assert_eq!(restore(&mut s, "st2", "0", &payload, ""), ok());
    let original = s.engine.store().get(b"st").unwrap().data().clone();
    assert_eq!(s.engine.store().get(b"st2").unwrap().data(), &original);
    assert_eq!(s.run("XPENDING st2 g"), s.run("XPENDING st g"));
    // Redis 7.0.15's DUMP of XADD st 1-1 f v.
    let hex = "130110000000000000000100000000000000011d1d0000000a0001010001010181660200010201000100018176020401ff0101010101000001000a00ff55ab626ac035db";
    let unhex = |hex: &str| -> Vec<u8> {
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect()
    };
    assert_eq!(restore(&mut s, "st3", "0", &unhex(hex), ""), ok());
    assert_eq!(s.run("XLEN st3"), int(1));
    // A listpack hash of Redis 7.0.15.
    let hex = "10242400000006008266310382763103826632037b01836e756d04f4011889b7e8ffffff09ff0a00aa612c7331a4855f";
    assert_eq!(restore(&mut s, "h", "0", &unhex(hex), ""), ok());
    assert_eq!(s.run("HGET h num"), bulk("-99999999999"));
    assert_eq!(s.run("HMGET h f1 f2"), bulks(&["v1", "123"]));
}

#[test]
fn command_info_as_redis_7_0() {
    let mut s = Session::new();
    let Reply::Array(Some(specs)) = s.run("COMMAND INFO dump restore") else {
        panic!("COMMAND INFO answers an array");
    };
    let flags =
        |names: &[&str]| Reply::Set(names.iter().map(|n| Reply::Simple((*n).into())).collect());
    for (spec, (name, arity, names)) in specs.iter().zip([
        ("dump", 2, &["readonly"][..]),
        ("restore", -4, &["write", "denyoom"][..]),
    ]) {
        let Reply::Array(Some(fields)) = spec else {
            panic!("{spec:?}");
        };
        assert_eq!(
            fields[..6],
            [bulk(name), int(arity), flags(names), int(1), int(1), int(1)]
        );
    }
}
