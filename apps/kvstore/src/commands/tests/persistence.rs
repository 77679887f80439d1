//! What commands log, and that the log replays to the same dataset.

use alloc::format;

use super::*;
use crate::aof::{encode_record_into, replay, rewrite, Piece, HEADER};
use crate::commands::{Effects, SHARE_FROM};
use crate::store::Data;
use faultline_rng::Rng;

#[test]
fn relative_expiry_is_logged_as_absolute() {
    let mut s = Session::new();
    let now = s.now;
    assert_eq!(
        s.logged("SET k v EX 10"),
        [format!("SET k v PXAT {}", now + 10_000)]
    );
    assert_eq!(
        s.logged("SET k v PX 5"),
        [format!("SET k v PXAT {}", now + 5)]
    );
    assert_eq!(s.logged("SET k v EXAT 2000"), ["SET k v PXAT 2000000"]);
    assert_eq!(
        s.logged("EXPIRE k 3"),
        [format!("PEXPIREAT k {}", now + 3000)]
    );
    assert_eq!(
        s.logged("PEXPIRE k 3"),
        [format!("PEXPIREAT k {}", now + 3)]
    );
    s.logs(
        r#"
        > EXPIREAT k 5000
        PEXPIREAT k 5000000
        > PERSIST k
        PERSIST k
        // nothing to remove
        > PERSIST k
        (nothing)
    "#,
    );
}

#[test]
fn conditional_writes_are_logged_unconditionally() {
    let mut s = Session::new();
    s.logs(
        r#"
        > SET k v NX GET
        SET k v
        // did not write
        > SET k w NX
        (nothing)
        > SET k w XX GET
        SET k w
        > SET k x KEEPTTL
        SET k x KEEPTTL
        > SETNX k y
        (nothing)
        > SETNX j y
        SET j y
        > GETSET j z
        SET j z
    "#,
    );
}

#[test]
fn counters_log_their_result() {
    let mut s = Session::new();
    s.logs(
        r#"
        > INCR n
        SET n 1 KEEPTTL
        > INCRBY n 10
        SET n 11 KEEPTTL
        > DECRBY n 20
        SET n -9 KEEPTTL
        > DECR n
        SET n -10 KEEPTTL
    "#,
    );
    s.run("SET text abc");
    assert_eq!(
        s.logged("INCR text"),
        Vec::<String>::new(),
        "errors log nothing"
    );
}

#[test]
fn deletes_log_only_what_existed() {
    let mut s = Session::after("MSET a 1 b 2");
    s.logs(
        r#"
        > DEL a missing b
        DEL a b
        > DEL a
        (nothing)
        > FLUSHDB
        FLUSHDB
        > FLUSHALL
        FLUSHALL
    "#,
    );
}

#[test]
fn other_writes_log_as_given() {
    let mut s = Session::new();
    s.logs(
        r#"
        > APPEND k abc
        APPEND k abc
        > mset a 1 b 2
        MSET a 1 b 2
    "#,
    );
}

#[test]
fn reads_log_nothing_unless_they_expire_a_key() {
    let mut s = Session::after("SET k v PX 10");
    assert_eq!(s.logged("GET k"), Vec::<String>::new());
    s.advance(11);
    s.logs(
        r#"
        // lazy expiry is logged
        > GET k
        DEL k
        > GET k
        (nothing)
    "#,
    );
    s.run("SET n 5 PX 10");
    s.advance(11);
    assert_eq!(
        s.logged("INCR n"),
        ["DEL n", "SET n 1 KEEPTTL"],
        "the expiry comes first, so replay starts from a missing key too"
    );
}

/// A random command over a handful of keys, heavy on expiry, with hash
/// and list commands on the same keys (so keys change type, through `DEL`,
/// `SET` or a hash's last field or a list's last element going).
fn random_command(rng: &mut Rng, now: u64) -> String {
    let k = rng.pick(&["a", "b", "c", "d", "e"]);
    let k2 = rng.pick(&["a", "b", "c", "d", "e"]);
    let v = rng.pick(&["1", "22", "-5", "abc", "\"x y\""]);
    let n = rng.below(60);
    let f = rng.pick(&["f", "g", "h"]);
    match rng.below(70) {
        0 => format!("SET {k} {v}"),
        1 => format!("SET {k} {v} PX {}", n + 1),
        2 => format!("SET {k} {v} NX PX {}", n + 1),
        3 => format!("SET {k} {v} XX GET"),
        4 => format!("SET {k} {v} KEEPTTL"),
        5 => format!("SET {k} {v} PXAT {}", now + n - 20),
        6 => format!("GETSET {k} {v}"),
        7 => format!("SETNX {k} {v}"),
        8 => format!("INCR {k}"),
        9 => format!("INCRBY {k} {n}"),
        10 => format!("DECRBY {k} {n}"),
        11 => format!("APPEND {k} {v}"),
        12 => format!("DEL {k} {k2}"),
        13 => format!("MSET {k} {v} {k2} 7"),
        14 => format!("PEXPIRE {k} {}", n as i64 - 10),
        15 => format!("EXPIRE {k} {} GT", n % 2),
        16 => format!("PEXPIREAT {k} {} NX", now + n),
        17 => format!("PERSIST {k}"),
        18 => format!("GET {k}"),
        19 => format!("MGET {k} {k2}"),
        20 => format!("TTL {k}"),
        21 if n < 3 => String::from("FLUSHALL"),
        22 => format!("EXISTS {k}"),
        23 => format!("SETEX {k} {} {v}", n + 1),
        24 => format!("PSETEX {k} {} {v}", n + 1),
        25 => format!("GETDEL {k}"),
        26 => format!("GETEX {k} PX {}", n + 1),
        27 => format!("GETEX {k} PERSIST"),
        28 => format!("INCRBYFLOAT {k} 1.5"),
        29 => format!("MSETNX {k} {v} {k2} 8"),
        30 => format!("SETRANGE {k} {} {v}", n % 7),
        31 => format!("RENAME {k} {k2}"),
        32 => format!("RENAMENX {k} {k2}"),
        33 => format!("COPY {k} {k2}"),
        34 => format!("COPY {k} {k2} REPLACE"),
        35 => format!("UNLINK {k}"),
        36 => format!("GETEX {k} PXAT {}", now + n - 20),
        37 => match rng.below(6) {
            0 => format!("ZADD {k} {n} {v}"),
            1 => format!("ZINCRBY {k} 2 {v}"),
            2 => format!("ZPOPMIN {k}"),
            3 => format!("ZREMRANGEBYRANK {k} {} -1", n % 3),
            4 => format!("ZREM {k} {v} 1"),
            _ => format!("ZADD {k} GT INCR 1 {v}"),
        },
        38 => format!("HSET {k} {f} {v}"),
        39 => format!("HMSET {k} {f} {v} g 2"),
        40 => format!("HDEL {k} {f}"),
        41 => format!("HDEL {k} f g h"),
        42 => format!("HINCRBY {k} {f} {n}"),
        43 => format!("HINCRBYFLOAT {k} {f} 0.5"),
        44 => format!("HSETNX {k} {f} {v}"),
        45 => format!("HGETALL {k}"),
        46..=57 => random_list_command(rng, k, k2, v),
        58..=69 => random_set_command(rng, k, k2, v),
        _ => format!("STRLEN {k}"),
    }
}

/// A random list command on `k` (and `k2`): pushes, pops, edits, moves,
/// and blocking pops that wait (the session's client blocks, and is
/// served, and logged, when a later command pushes to the key).
fn random_list_command(rng: &mut Rng, k: &str, k2: &str, v: &str) -> String {
    let i = rng.below(7) as i64 - 3;
    let end = |rng: &mut Rng| rng.pick(&["LEFT", "RIGHT"]);
    match rng.below(20) {
        0 => format!("RPUSH {k} {v} x"),
        1 => format!("LPUSH {k} {v}"),
        2 => format!("LPUSHX {k} {v}"),
        3 => format!("RPUSHX {k} y"),
        4 => format!("LPOP {k}"),
        5 => format!("RPOP {k} {}", rng.below(3)),
        6 => format!("LSET {k} {i} {v}"),
        7 => format!("LINSERT {k} {} x {v}", rng.pick(&["BEFORE", "AFTER"])),
        8 => format!("LREM {k} {i} x"),
        9 => format!("LTRIM {k} {i} {}", rng.below(4) as i64 - 1),
        10 => format!("RPOPLPUSH {k} {k2}"),
        11 => format!("LMOVE {k} {k2} {} {}", end(rng), end(rng)),
        12 => format!("LMPOP 2 {k} {k2} {} COUNT {}", end(rng), i.abs() + 1),
        13 => format!("BLPOP {k} {k2} 0"),
        14 => format!("BLMOVE {k} {k2} {} {} 0", end(rng), end(rng)),
        15 => format!("BLMPOP 0 1 {k} RIGHT COUNT 2"),
        16 => format!("LRANGE {k} 0 -1"),
        17 => format!("LPOS {k} x RANK -1"),
        18 => format!("RPUSH {k} {v} {v} x {v}"),
        _ => format!("LLEN {k}"),
    }
}

/// A random set command on `k` (and `k2`): adds, removes, random pops
/// (logged as what they took), moves and stores.
fn random_set_command(rng: &mut Rng, k: &str, k2: &str, v: &str) -> String {
    match rng.below(12) {
        0 => format!("SADD {k} {v} x"),
        1 => format!("SADD {k} 1 2 3"),
        2 => format!("SREM {k} {v} 2"),
        3 => format!("SPOP {k}"),
        4 => format!("SPOP {k} {}", rng.below(4)),
        5 => format!("SMOVE {k} {k2} {v}"),
        6 => format!("SINTERSTORE {k2} {k} {k2}"),
        7 => format!("SUNIONSTORE {k2} {k} {k2}"),
        8 => format!("SDIFFSTORE {k} {k} {k2}"),
        9 => format!("SMEMBERS {k}"),
        10 => format!("SADD {k} {v}"),
        _ => format!("SCARD {k}"),
    }
}

/// Runs `n` random commands, each up to 9 ms after the one before.
fn run_random(s: &mut Session, rng: &mut Rng, n: usize) {
    for _ in 0..n {
        s.advance(rng.below(10));
        let line = random_command(rng, s.now);
        s.run(&line);
    }
}

#[test]
fn replaying_the_log_reproduces_the_dataset() {
    let mut rng = Rng::new(42);
    for round in 0..20 {
        let mut s = Session::new();
        let mut log = HEADER.to_vec();
        for step in 0..150 {
            s.advance(rng.below(15));
            let line = random_command(&mut rng, s.now);
            log.extend(s.exec(&line).effects.to_bytes());
            if rng.below(10) == 0 {
                log.extend(s.engine.active_expire(s.now, 3).to_bytes());
            }
            if step % 25 == 24 {
                // Reloading now, or later, gives what the server has now.
                for later in [0, 7, 40] {
                    let context = format!("round {round} step {step} (+{later} ms) after {line}");
                    s.assert_log_gives(&log, s.now + later, &context);
                }
            }
        }
    }
}

#[test]
fn rewrite_reproduces_the_dataset_with_expiries() {
    let mut rng = Rng::new(7);
    for _ in 0..20 {
        let mut s = Session::new();
        run_random(&mut s, &mut rng, 100);
        let compact = rewrite(s.engine.store(), s.now);
        for later in [0, 5, 30, 100] {
            let at = s.now + later;
            assert_eq!(live(&load(&compact, s.now), at), live(&s.engine, at));
        }
    }
}

#[test]
fn a_rewrite_in_steps_with_writes_in_between_replays_to_the_end_state() {
    let mut rng = Rng::new(11);
    for round in 0..1000 {
        let mut s = Session::new();
        run_random(&mut s, &mut rng, 60);
        // The server's loop: a step of the scan, then clients, whose
        // records follow it in the new log, until the scan is complete.
        let keys = 1 + rng.below(3) as usize;
        let log = s.rewrite(keys, |s| {
            let mut records = Effects::default();
            for _ in 0..rng.below(12) {
                s.advance(rng.below(10));
                let line = random_command(&mut rng, s.now);
                records.append(s.exec(&line).effects);
            }
            records.append(s.engine.active_expire(s.now, 2));
            records
        });
        for later in [0, 7, 40] {
            s.assert_log_gives(&log, s.now + later, &format!("round {round} (+{later} ms)"));
        }
    }
}

#[test]
fn appends_are_logged_as_they_are_while_a_rewrite_runs() {
    let mut s = Session::after("SET k abc EX 60");
    s.engine.aof_rewrite_started(s.now);
    assert_eq!(s.logged("APPEND k de"), ["APPEND k de"]);
    let new_log = s.rewrite(1, |_| Effects::default());
    assert_eq!(
        load(&new_log, s.now).store().get(b"k").unwrap().value(),
        b"abcde"
    );
}

#[test]
fn rewrite_is_minimal() {
    let mut s = Session::new();
    for _ in 0..100 {
        s.run("INCR counter");
    }
    s.run("SET gone v PX 1");
    s.run("SET ttl v EX 60");
    s.advance(2);
    let mut commands = Vec::new();
    replay(&rewrite(s.engine.store(), s.now), |args| {
        commands.push(show(&args))
    });
    commands.sort();
    assert_eq!(
        commands,
        [
            "SET counter 100".into(),
            format!("SET ttl v PXAT {}", s.now - 2 + 60_000)
        ]
    );
}

#[test]
fn loading_keeps_keys_that_expire_later_in_the_log() {
    // Logged at t=1000: SET with a TTL, then an APPEND before it expired.
    let mut log = HEADER.to_vec();
    encode_record_into(&[&b"SET"[..], b"k", b"v", b"PXAT", b"1500"], &mut log);
    encode_record_into(&[&b"APPEND"[..], b"k", b"x"], &mut log);
    // Loaded long after the key expired: the APPEND must not resurrect it.
    let engine = load(&log, 10_000);
    assert!(live(&engine, 10_000).is_empty());
    assert_eq!(
        live(&engine, 1_200)[&b"k".to_vec()],
        (Data::from(b"vx".to_vec()), Some(1500))
    );
}

#[test]
fn a_log_loads_whatever_the_bulk_limit_is_now() {
    // An APPEND grew a value past 1 MiB under the default limit (512 MiB);
    // the server restarts with proto-max-bulk-len 1mb: the log still loads.
    let mut s = Session::new();
    let mut log = HEADER.to_vec();
    log.extend(
        s.exec(&format!("SET k {}", big_value(1 << 20, b'a')))
            .effects
            .to_bytes(),
    );
    log.extend(s.exec("APPEND k b").effects.to_bytes());
    let mut config = Config::default();
    config.set("proto-max-bulk-len", b"1mb").unwrap();
    let mut engine = load_with(config, &log, s.now);
    let value = engine.store().get(b"k").unwrap().value();
    assert_eq!(value.len(), (1 << 20) + 1);
    // A client is still held to the limit.
    let mut client = ClientCtx::new(1);
    let append = [b"APPEND".to_vec(), b"k".to_vec(), b"c".to_vec()];
    assert_eq!(
        engine.execute(&append, &mut client, s.now).reply,
        err("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
    );
}

#[test]
fn bgrewriteaof_schedules_a_rewrite_the_server_performs() {
    let config = Config {
        appendonly: true,
        ..Config::default()
    };
    let mut s = Session::with_config(config);
    assert!(!s.engine.aof_rewrite_wanted());
    assert_eq!(
        s.run("BGREWRITEAOF"),
        Reply::Simple("Background append only file rewriting started".into())
    );
    assert!(s.engine.aof_rewrite_wanted());
    let Reply::Verbatim(info) = s.run("INFO persistence") else {
        panic!("INFO is verbatim text");
    };
    let info = String::from_utf8(info).unwrap();
    assert!(info.contains("aof_rewrite_scheduled:1\r\n"), "{info}");
    s.engine.aof_rewrite_started(s.now);
    assert!(!s.engine.aof_rewrite_wanted());
    assert_eq!(
        s.run("BGREWRITEAOF"),
        Reply::Error("ERR Background append only file rewriting already in progress".into())
    );
    s.engine.aof_rewrite_finished(Some(1234), 2500);
    let Reply::Verbatim(info) = s.run("INFO persistence") else {
        panic!("INFO is verbatim text");
    };
    let info = String::from_utf8(info).unwrap();
    for needle in [
        "aof_enabled:1\r\n",
        "aof_rewrite_in_progress:0\r\n",
        "aof_rewrite_scheduled:0\r\n",
        "aof_rewrites:1\r\n",
        "aof_last_rewrite_time_sec:2\r\n",
        "aof_last_bgrewrite_status:ok\r\n",
        "aof_current_size:1234\r\n",
        "aof_base_size:1234\r\n",
    ] {
        assert!(info.contains(needle), "missing {needle:?} in\n{info}");
    }
}

#[test]
fn automatic_rewrite_follows_the_growth_rule() {
    let mut config = Config {
        appendonly: true,
        ..Config::default()
    };
    config.aof_rewrite.min_size = 1000;
    let mut s = Session::with_config(config);
    let stats = s.engine.stats_mut();
    stats.aof_base_size = 600;
    stats.aof_current_size = 1100;
    assert!(!s.engine.aof_rewrite_wanted(), "not yet doubled");
    s.engine.stats_mut().aof_current_size = 1200;
    assert!(s.engine.aof_rewrite_wanted());
    // A failed rewrite waits for the log to double again.
    s.engine.aof_rewrite_started(s.now);
    s.engine.aof_rewrite_finished(None, 1);
    assert!(!s.engine.aof_rewrite_wanted());
    assert!(!s.engine.stats().aof_last_rewrite_ok);
    assert_eq!(s.engine.stats().aof_rewrites, 0);
    // Without the log, only an explicit request counts.
    s.engine.config_mut().appendonly = false;
    s.engine.stats_mut().aof_current_size = 1 << 30;
    assert!(!s.engine.aof_rewrite_wanted());
}

/// A value of `len` bytes, as a command-line word.
fn big_value(len: usize, byte: u8) -> String {
    String::from_utf8(vec![byte; len]).unwrap()
}

#[test]
fn large_values_are_logged_by_reference() {
    let mut s = Session::new();
    let value = big_value(SHARE_FROM, b'a');
    let set = s.exec(&format!("SET k {value}")).effects;
    let shared: Vec<_> = set
        .pieces()
        .filter(|p| matches!(p, Piece::Value(_)))
        .collect();
    assert_eq!(shared.len(), 1, "one value, not copied");
    assert_eq!(
        shared[0].bytes().as_ptr(),
        s.engine.store().get(b"k").unwrap().value().as_ptr()
    );
    let small = s.exec("SET k2 small").effects;
    assert!(small.pieces().all(|p| matches!(p, Piece::Bytes(_))));
}

#[test]
fn a_logged_value_stays_as_logged_until_the_log_lets_it_go() {
    let mut s = Session::new();
    let value = big_value(SHARE_FROM + 10, b'v');
    // The records wait for a flush (appendfsync everysec) while the key
    // is appended to, overwritten and deleted.
    let pending = [
        s.exec(&format!("SET k {value}")).effects,
        s.exec(&format!("MSET k {value} k2 {value}")).effects,
    ];
    let logged: Vec<Vec<u8>> = pending.iter().map(Effects::to_bytes).collect();
    s.run("APPEND k more");
    s.run("APPEND k2 more");
    assert_eq!(s.run("STRLEN k"), Reply::Integer(value.len() as i64 + 4));
    s.run("SET k2 other");
    s.run("DEL k");
    for (effects, bytes) in pending.iter().zip(&logged) {
        assert_eq!(
            &effects.to_bytes(),
            bytes,
            "the pending record is unchanged"
        );
    }
    let sets = pending[1].commands();
    assert_eq!(sets[0][2], value.as_bytes(), "MSET's values as set");
    assert_eq!(sets[0][4], value.as_bytes());
}

#[test]
fn while_the_log_cannot_be_written_writes_are_refused_and_reads_served() {
    let mut s = Session::after("SET k v");
    s.engine
        .log_write_failed("log full: 2000 bytes needed, its extent holds 1024");
    for write in ["SET k w", "DEL k", "FLUSHALL", "INCR n", "EXPIRE k 10"] {
        match s.run(write) {
            Reply::Error(e) => assert!(
                e.starts_with("MISCONF Errors writing to the AOF file: log full"),
                "{write}: {e}"
            ),
            other => panic!("{write} was answered {other:?}"),
        }
    }
    assert_eq!(s.run("GET k"), Reply::bulk("v"));
    let info = match s.run("INFO persistence") {
        Reply::Verbatim(b) => String::from_utf8(b).unwrap(),
        other => panic!("{other:?}"),
    };
    assert!(info.contains("aof_last_write_status:err\r\n"), "{info}");
    assert!(info.contains("aof_last_write_error:log full"), "{info}");
    s.engine.log_write_recovered();
    assert_eq!(s.run("SET k w"), Reply::ok());
    let info = match s.run("INFO persistence") {
        Reply::Verbatim(b) => String::from_utf8(b).unwrap(),
        other => panic!("{other:?}"),
    };
    assert!(info.contains("aof_last_write_status:ok\r\n"), "{info}");
}

#[test]
fn shutdown_asks_the_server_and_parses_redis_options() {
    let mut s = Session::new();
    assert_eq!(s.engine.take_shutdown(), None);
    // The queued reply is the one a failed shutdown sends.
    assert_eq!(
        s.run("SHUTDOWN"),
        Reply::error("ERR Errors trying to SHUTDOWN. Check logs.")
    );
    assert_eq!(s.engine.take_shutdown(), Some(false));
    assert_eq!(s.engine.take_shutdown(), None, "taken once");
    s.run("shutdown nosave now force");
    assert_eq!(s.engine.take_shutdown(), Some(true));
    s.transcript(
        r#"
        > SHUTDOWN SAVE NOSAVE
        (error) ERR syntax error
        > SHUTDOWN LATER
        (error) ERR syntax error
        > SHUTDOWN ABORT
        (error) ERR No shutdown in progress.
    "#,
    );
    assert_eq!(s.engine.take_shutdown(), None, "refused ones ask nothing");
}
