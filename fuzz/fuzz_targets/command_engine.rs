//! Random command sequences through `Engine::execute`, with the clock
//! moving, background expiry and log compactions in between. Invariants:
//!
//! - nothing panics;
//! - every reply encodes to well-formed RESP2 that reads back the same;
//! - the memory estimate, key count and expiring-key count (what `INFO
//!   memory` and `INFO keyspace` report) match a recount of every
//!   database, and so do `INFO`'s and `DBSIZE`'s replies when asked;
//! - each command's effects decode to as many commands as it reports;
//! - the log of all effects, replayed into a fresh engine with
//!   `Engine::load` (with the strictest limits a restart could bring),
//!   loads without an error and gives the same databases;
//! - a compaction's log (the scanned keys, then what was logged while it
//!   ran) replays to the same live data;
//! - a whole `SCAN` (any `COUNT`) and `KEYS *` name exactly the live keys
//!   of the client's database.
#![no_main]

use std::collections::BTreeSet;

use kvstore::aof::{replay, HEADER};
use kvstore::commands::{ClientCtx, Effects, Engine};
use kvstore::config::Config;
use kvstore::resp::Reply;
use kvstore_fuzz::commands::{next_op, Op};
use kvstore_fuzz::reply::check_roundtrip;
use kvstore_fuzz::{dataset, datasets, live, recount};
use kvstore_gen::choices::Input;
use libfuzzer_sys::fuzz_target;

/// Unix time in milliseconds when every session starts (November 2023).
const START_MS: u64 = 1_700_000_000_000;

fuzz_target!(|data: &[u8]| {
    let mut inp = Input::new(data);
    // Small limits keep one input from holding gigabytes, which libFuzzer
    // reports as out of memory: each SETRANGE near a large offset logs the
    // whole value again, and 200 steps of them add up. The server runs
    // with limits too (maxmemory is a share of the guest's RAM).
    let config = Config {
        maxmemory: 4 << 20,
        proto_max_bulk_len: 1 << 20,
        ..Config::default()
    };
    let mut engine = Engine::new(config, START_MS);
    let mut clients = [ClientCtx::new(1), ClientCtx::new(2), ClientCtx::new(3)];
    let mut now = START_MS;
    let mut log = HEADER.to_vec();
    // A compaction under way: its new log so far (the engine's scan steps,
    // and between them what was logged meanwhile).
    let mut rewrite: Option<Vec<u8>> = None;
    let mut steps = 0;
    while !inp.is_empty() && steps < 200 {
        steps += 1;
        let effects = match next_op(&mut inp, now) {
            Op::Run { client, args } => {
                let out = engine.execute(&args, &mut clients[client], now);
                if let Err(e) = check_roundtrip(&out.reply) {
                    panic!("reply to {}: {e}", show(&args));
                }
                check_counters(&engine, &clients[client], &args, &out.reply);
                assert_eq!(out.effects.commands().len(), out.effects.len());
                deliver_unblocked(&mut engine, &mut clients);
                out.effects.to_bytes()
            }
            Op::Advance(ms) => {
                now += ms;
                engine.unblock_timed_out(now);
                deliver_unblocked(&mut engine, &mut clients);
                continue;
            }
            Op::ActiveExpire(budget) => engine.active_expire(now, budget).to_bytes(),
            Op::RewriteStart => {
                if rewrite.is_none() {
                    // The server takes the first step (the new log's
                    // header) as it starts.
                    engine.aof_rewrite_started(now);
                    let mut new_log = Vec::new();
                    engine.aof_rewrite_step(1, &mut new_log);
                    rewrite = Some(new_log);
                }
                continue;
            }
            Op::RewriteStep(keys) => {
                if let Some(new_log) = &mut rewrite {
                    engine.aof_rewrite_step(keys, new_log);
                }
                continue;
            }
            Op::FullScan(count) => {
                full_scan(&mut engine, &mut clients[0], count, now);
                continue;
            }
            Op::RewriteFinish => {
                if let Some(new_log) = rewrite.take() {
                    finish_rewrite(&mut engine, new_log, now);
                }
                continue;
            }
        };
        check_store(&engine);
        log.extend_from_slice(&effects);
        if let Some(new_log) = &mut rewrite {
            new_log.extend_from_slice(&effects);
        }
    }
    if let Some(new_log) = rewrite.take() {
        finish_rewrite(&mut engine, new_log, now);
    }
    check_store(&engine);
    let loaded = load(&log, engine.config());
    assert!(
        datasets(&loaded) == datasets(&engine),
        "the log replays to different databases"
    );
    // The memory figures may differ: a hash kept compact in one engine may
    // be a map in the other (it outgrew the compact form once, and the
    // rewrite wrote it whole without what made it grow). Each must match
    // its own recount.
    for store in loaded.databases() {
        assert_eq!(
            store.used_memory(),
            recount(store).0,
            "replayed used_memory"
        );
    }
});

/// `SCAN` from cursor 0 until it returns 0 (with `COUNT count`) and `KEYS
/// *` each name every live key, once for `KEYS`; nothing changes between
/// the steps, so nothing may be missed.
fn full_scan(engine: &mut Engine, client: &mut ClientCtx, count: usize, now: u64) {
    let store = &engine.databases()[client.db()];
    let live: BTreeSet<Vec<u8>> = live(&dataset(store), now).into_keys().collect();
    let mut cursor = b"0".to_vec();
    let mut seen = BTreeSet::new();
    // Each step returns at least one stored key, expired ones included.
    for _ in 0..=store.len() + 1 {
        let args = [
            b"SCAN".to_vec(),
            cursor.clone(),
            b"COUNT".to_vec(),
            count.to_string().into_bytes(),
        ];
        let out = engine.execute(&args, client, now);
        assert!(out.effects.is_empty(), "SCAN changed the dataset");
        let reply = out.reply;
        if matches!(&reply, Reply::Simple(s) if s == "QUEUED") {
            return; // the client is inside MULTI
        }
        if refused(&reply) {
            return;
        }
        let Reply::Array(Some(parts)) = &reply else {
            panic!("SCAN replied {reply:?}");
        };
        let [Reply::Bulk(Some(next)), Reply::Array(Some(keys))] = parts.as_slice() else {
            panic!("SCAN replied {reply:?}");
        };
        for key in keys {
            let Reply::Bulk(Some(key)) = key else {
                panic!("SCAN listed {key:?}");
            };
            seen.insert(key.clone());
        }
        if next == b"0" {
            assert_eq!(seen, live, "a whole SCAN, {count} a step");
            let keys = engine.execute(&[b"KEYS".to_vec(), b"*".to_vec()], client, now);
            assert!(keys.effects.is_empty(), "KEYS changed the dataset");
            if refused(&keys.reply) {
                return;
            }
            let Reply::Array(Some(keys)) = keys.reply else {
                panic!("KEYS replied {:?}", keys.reply);
            };
            let listed: Vec<Vec<u8>> = keys
                .into_iter()
                .map(|k| match k {
                    Reply::Bulk(Some(k)) => k,
                    other => panic!("KEYS listed {other:?}"),
                })
                .collect();
            assert_eq!(listed.len(), live.len(), "KEYS * lists a key twice");
            assert_eq!(listed.into_iter().collect::<BTreeSet<_>>(), live, "KEYS *");
            return;
        }
        cursor = next.clone();
    }
    panic!("SCAN {count} a step took more steps than there are keys");
}

/// Whether the ACL turned the command away: the fuzzed commands may have
/// taken `SCAN` or `KEYS` from the client's user, logged it in as another
/// user, or required a password. Nothing can be checked then.
fn refused(reply: &Reply) -> bool {
    matches!(reply, Reply::Error(e) if e.starts_with("NOPERM") || e.starts_with("NOAUTH"))
}

/// What the server does with the answers to blocked clients: each is
/// well-formed RESP, goes to a client that was blocked (ids 1 to 3), and
/// lets it run commands again. A client still blocked runs its next
/// fuzzed command anyway (the engine must cope; a real session would not
/// send it).
fn deliver_unblocked(engine: &mut Engine, clients: &mut [ClientCtx]) {
    for (id, reply) in engine.take_unblocked() {
        if let Err(e) = check_roundtrip(&reply) {
            panic!("answer to blocked client {id}: {e}");
        }
        let client = clients.iter_mut().find(|c| c.id() == id);
        client.expect("answers go to clients").unblocked();
    }
}

/// Each store's own counters agree with a recount of its entries.
fn check_store(engine: &Engine) {
    let mut total = 0;
    for store in engine.databases() {
        let (used, keys, volatile) = recount(store);
        assert_eq!(store.used_memory(), used, "used_memory");
        assert_eq!(store.len(), keys, "keys");
        assert_eq!(store.volatile_len(), volatile, "expires");
        total += used;
    }
    assert!(
        engine.stats().used_memory_peak >= total as u64,
        "peak below used"
    );
}

/// What `INFO` and `DBSIZE` replied agrees with a recount of the stores
/// (`DBSIZE`: the client's database).
fn check_counters(engine: &Engine, client: &ClientCtx, args: &[Vec<u8>], reply: &Reply) {
    let name = args[0].to_ascii_uppercase();
    let (_, keys, _) = recount(&engine.databases()[client.db()]);
    let used: usize = engine.databases().iter().map(|s| recount(s).0).sum();
    match (name.as_slice(), reply) {
        (b"DBSIZE", Reply::Integer(n)) => assert_eq!(*n, keys as i64, "DBSIZE"),
        (b"INFO", Reply::Bulk(Some(text))) => {
            let text = String::from_utf8(text.clone()).expect("INFO is text");
            let field = |name: &str| {
                text.lines()
                    .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
                    .map(str::to_owned)
            };
            if let Some(reported) = field("used_memory") {
                assert_eq!(reported, used.to_string(), "INFO used_memory");
                let peak: u64 = field("used_memory_peak").unwrap().parse().unwrap();
                assert!(peak >= used as u64, "INFO used_memory_peak");
            }
            if text.contains("# Keyspace") {
                for (db, store) in engine.databases().iter().enumerate() {
                    let (_, keys, volatile) = recount(store);
                    let expected =
                        (keys > 0).then(|| format!("keys={keys},expires={volatile},avg_ttl=0"));
                    assert_eq!(field(&format!("db{db}")), expected, "INFO keyspace db{db}");
                }
            }
        }
        _ => {}
    }
}

/// Ends a compaction: its remaining steps, and the whole new log replays
/// to the live data of the engine.
fn finish_rewrite(engine: &mut Engine, mut new_log: Vec<u8>, now: u64) {
    let mut records = Effects::default();
    // The last steps through an `Effects`, as commands log (large values
    // by reference), the others straight into the bytes.
    while !engine.aof_rewrite_step(7, &mut records) {}
    new_log.extend(records.to_bytes());
    let loaded = load(&new_log, engine.config());
    let live_all = |e: &Engine| -> Vec<_> { datasets(e).iter().map(|d| live(d, now)).collect() };
    assert!(
        live_all(&loaded) == live_all(engine),
        "the compacted log replays to different live data"
    );
    engine.aof_rewrite_finished(Some(new_log.len() as u64), 0);
}

/// A fresh engine that loaded `log`, every record of which must load
/// without an error. A restart may come with other settings than the
/// ones `config` holds now: the engine gets the strictest limits there are
/// (the smallest `proto-max-bulk-len`, a `maxmemory` of one byte), which
/// loading must not apply to what the log holds.
fn load(log: &[u8], config: &Config) -> Engine {
    let mut strictest = config.clone();
    strictest.proto_max_bulk_len = 1 << 20;
    strictest.maxmemory = 1;
    let mut engine = Engine::new(strictest, START_MS);
    let report = replay(log, |args| {
        if let Err(e) = engine.load(args.clone(), START_MS) {
            panic!("log record {} does not load: {e:?}", show(&args));
        }
    });
    assert_eq!(report.torn_tail, None, "the engine's log is whole");
    engine
}

/// A command as text for messages, long arguments shortened.
fn show(args: &[Vec<u8>]) -> String {
    let words: Vec<String> = args
        .iter()
        .map(|a| {
            let text = String::from_utf8_lossy(&a[..a.len().min(40)]).into_owned();
            if a.len() > 40 {
                format!("{text:?}...({} bytes)", a.len())
            } else {
                format!("{text:?}")
            }
        })
        .collect();
    words.join(" ")
}
