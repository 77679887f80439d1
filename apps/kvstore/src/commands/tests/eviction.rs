//! Eviction: which keys go under each `maxmemory-policy`, in what order,
//! and that what goes is logged, counted and published.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::*;
use crate::aof::HEADER;
use crate::eviction::Policy;
use crate::store::Store;
use faultline_rng::Rng;

/// A server under `policy` whose limit fits `keys` one-byte keys with
/// ten-byte values.
fn evicting(policy: &str, keys: usize) -> Session {
    Session::with_config(Config {
        maxmemory: (keys * Store::cost(1, 10)) as u64,
        maxmemory_policy: Policy::parse(policy.as_bytes()).unwrap(),
        ..Config::default()
    })
}

/// Sets one-byte keys to ten-byte values, a second apart.
fn fill(s: &mut Session, keys: &str) {
    for key in keys.chars() {
        assert_eq!(s.run(&format!("SET {key} 0123456789")), ok());
        s.advance(1_000);
    }
}

/// The keys of the current database, sorted, as one string.
fn keys(s: &mut Session) -> String {
    let mut all = sorted(s.run("KEYS *"));
    all.sort();
    all.concat()
}

fn evicted_keys(s: &mut Session) -> String {
    let Reply::Verbatim(info) = s.run("INFO stats") else {
        panic!("INFO answers verbatim text");
    };
    let info = String::from_utf8(info).unwrap();
    let line = info
        .lines()
        .find(|l| l.starts_with("evicted_keys:"))
        .unwrap();
    String::from(line)
}

#[test]
fn allkeys_lru_evicts_the_least_recently_used_key_first() {
    let mut s = evicting("allkeys-lru", 3);
    fill(&mut s, "abc");
    assert_eq!(s.run("GET a"), bulk("0123456789"), "a is now the newest");
    s.advance(1_000);
    assert_eq!(s.logged("SET d 0123456789"), ["DEL b", "SET d 0123456789"]);
    assert_eq!(keys(&mut s), "acd");
    s.advance(1_000);
    assert_eq!(s.logged("SET e 0123456789"), ["DEL c", "SET e 0123456789"]);
    s.advance(1_000);
    assert_eq!(s.logged("SET f 0123456789"), ["DEL a", "SET f 0123456789"]);
    assert_eq!(evicted_keys(&mut s), "evicted_keys:3");
}

#[test]
fn a_large_write_evicts_several_keys() {
    let mut s = evicting("allkeys-lru", 4);
    fill(&mut s, "abcd");
    let big = "x".repeat(Store::cost(1, 10) * 2);
    assert_eq!(
        s.logged(&format!("SET e {big}")),
        ["DEL a", "DEL b", "DEL c", &format!("SET e {big}")]
    );
    let huge = "x".repeat(Store::cost(1, 10) * 5);
    assert_eq!(
        s.run(&format!("SET f {huge}")),
        err(OOM),
        "more than the whole limit: nothing goes for it"
    );
    assert_eq!(keys(&mut s), "de");
}

#[test]
fn volatile_policies_evict_only_keys_with_an_expiry() {
    for policy in [
        "volatile-lru",
        "volatile-lfu",
        "volatile-random",
        "volatile-ttl",
    ] {
        let mut s = evicting(policy, 3);
        fill(&mut s, "abc");
        s.run("EXPIRE b 100");
        assert_eq!(
            s.logged("SET d 0123456789"),
            ["DEL b", "SET d 0123456789"],
            "{policy}"
        );
        assert_eq!(
            s.run("SET e 0123456789"),
            err(OOM),
            "{policy}: a, c, d persist"
        );
        assert_eq!(keys(&mut s), "acd", "{policy}");
        assert_eq!(evicted_keys(&mut s), "evicted_keys:1");
    }
}

#[test]
fn volatile_ttl_evicts_the_nearest_expiry_first() {
    let mut s = evicting("volatile-ttl", 4);
    fill(&mut s, "abcd");
    s.run("EXPIRE a 300");
    s.run("EXPIRE b 100");
    s.run("EXPIRE c 200");
    let mut gone = Vec::new();
    for key in "xyz".chars() {
        let logged = s.logged(&format!("SET {key} 0123456789"));
        gone.push(logged[0].clone());
    }
    assert_eq!(gone, ["DEL b", "DEL c", "DEL a"]);
    assert_eq!(s.run("SET w 0123456789"), err(OOM));
}

#[test]
fn allkeys_lfu_evicts_the_least_used_key_and_object_freq_tells() {
    let mut s = evicting("allkeys-lfu", 3);
    s.run("CONFIG SET lfu-log-factor 0");
    fill(&mut s, "abc");
    for _ in 0..5 {
        s.run("GET a");
        s.run("GET c");
    }
    s.transcript(
        r#"
        > GET b
        "0123456789"
        > OBJECT FREQ a
        (integer) 10
        > OBJECT FREQ b
        (integer) 6
    "#,
    );
    s.logs(
        r#"
        > SET d 0123456789
        DEL b
        SET d 0123456789
        // the newcomer, at 5, is now the least used
        > SET e 0123456789
        DEL d
        SET e 0123456789
    "#,
    );
    // A minute idle takes one off, per lfu-decay-time.
    s.advance(3 * 60_000);
    assert_eq!(s.run("OBJECT FREQ a"), int(7));
    s.run("CONFIG SET lfu-decay-time 0");
    s.advance(60 * 60_000);
    assert_eq!(
        s.run("OBJECT FREQ a"),
        int(10),
        "no decay: the stored count"
    );
    let idle = s.run("OBJECT IDLETIME a");
    assert!(
        matches!(&idle, Reply::Error(e) if e.starts_with("ERR An LFU maxmemory policy is selected, idle time not tracked.")),
        "one or the other, as in Redis: {idle:?}"
    );
    s.run("CONFIG SET maxmemory-policy allkeys-lru");
    assert!(
        matches!(s.run("OBJECT FREQ a"), Reply::Error(e) if e.starts_with("ERR An LFU maxmemory policy is not selected"))
    );
    assert_eq!(s.run("OBJECT IDLETIME a"), int(3 * 60 + 60 * 60));
}

#[test]
fn allkeys_random_evicts_some_key_until_the_write_fits() {
    let mut s = evicting("allkeys-random", 10);
    fill(&mut s, "abcdefghij");
    let mut seen = String::new();
    for key in "klmnopqrst".chars() {
        let logged = s.logged(&format!("SET {key} 0123456789"));
        assert_eq!(logged.len(), 2, "{logged:?}");
        seen.push_str(logged[0].strip_prefix("DEL ").unwrap());
    }
    assert_eq!(s.engine.store().len(), 10);
    assert_eq!(evicted_keys(&mut s), "evicted_keys:10");
    assert_ne!(seen, "abcdefghij", "not in order of age: {seen}");
}

#[test]
fn noeviction_refuses_and_a_policy_set_at_run_time_evicts_at_once() {
    let mut s = evicting("noeviction", 3);
    fill(&mut s, "abc");
    s.transcript(
        r#"
        > SET d 0123456789
        (error) OOM command not allowed when used memory > 'maxmemory'.
        > CONFIG SET maxmemory-policy allkeys-lru
        OK
        > CONFIG GET maxmemory-policy
        1) "maxmemory-policy"
        2) "allkeys-lru"
    "#,
    );
    assert_eq!(s.logged("SET d 0123456789"), ["DEL a", "SET d 0123456789"]);
    let lower = format!("CONFIG SET maxmemory {}", Store::cost(1, 10));
    assert_eq!(
        s.logged(&lower),
        ["DEL b", "DEL c"],
        "the new limit holds at once"
    );
    assert_eq!(keys(&mut s), "d");
    assert_eq!(
        s.run("CONFIG SET maxmemory-policy lru"),
        err("ERR CONFIG SET failed (possibly related to argument 'maxmemory-policy') - argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction")
    );
}

#[test]
fn eviction_reaches_every_database_and_logs_its_select() {
    let mut s = evicting("allkeys-lru", 3);
    s.run("SELECT 2");
    fill(&mut s, "ab");
    s.run("SELECT 0");
    fill(&mut s, "c");
    assert_eq!(
        s.logged("SET d 0123456789"),
        ["SELECT 2", "DEL a", "SELECT 0", "SET d 0123456789"]
    );
    s.run("SELECT 2");
    assert_eq!(keys(&mut s), "b");
}

#[test]
fn evictions_are_published_as_evicted_events() {
    let mut s = evicting("allkeys-lru", 2);
    let mut sub = ClientCtx::new(99);
    s.exec_as(&mut sub, "PSUBSCRIBE *");
    s.run("CONFIG SET notify-keyspace-events Ee");
    fill(&mut s, "abc");
    let heard: Vec<String> = s
        .engine
        .take_messages()
        .into_iter()
        .map(|(_, bytes)| String::from_utf8_lossy(&bytes).into_owned())
        .filter(|m| m.contains("evicted"))
        .collect();
    assert_eq!(heard.len(), 1, "{heard:?}");
    assert!(
        heard[0].contains("__keyevent@0__:evicted\r\n$1\r\na\r\n"),
        "{heard:?}"
    );
}

#[test]
fn blocked_clients_are_not_woken_by_evictions() {
    let mut s = evicting("allkeys-lru", 2);
    let mut waiter = ClientCtx::new(50);
    s.exec_as(&mut waiter, "BLPOP queue 0");
    assert_eq!(s.engine.blocked_clients(), 1);
    fill(&mut s, "abcd");
    assert_eq!(s.engine.blocked_clients(), 1);
    assert!(s.engine.take_unblocked().is_empty());
}

#[test]
fn sampling_approximates_lru_in_a_large_keyspace() {
    let mut s = Session::with_config(Config {
        maxmemory: (1000 * Store::cost(8, 10)) as u64,
        maxmemory_policy: Policy::AllKeysLru,
        maxmemory_samples: 10,
        ..Config::default()
    });
    for i in 0..1000 {
        s.run(&format!("SET key:{i:04} 0123456789"));
        s.advance(10);
    }
    let mut old = 0;
    for i in 1000..1100 {
        for line in s.logged(&format!("SET key:{i:04} 0123456789")) {
            if let Some(key) = line.strip_prefix("DEL key:") {
                old += usize::from(key.parse::<usize>().unwrap() < 500);
            }
        }
    }
    assert_eq!(evicted_keys(&mut s), "evicted_keys:100");
    assert!(old >= 95, "{old} of 100 from the older half");
}

/// The live keys of every database at `now`.
fn dataset(engine: &Engine, now: u64) -> Vec<(usize, Vec<u8>, Vec<u8>)> {
    let mut all = Vec::new();
    for (db, store) in engine.databases().iter().enumerate() {
        for (key, entry) in store.iter().filter(|(_, e)| !e.is_expired(now)) {
            all.push((db, key.to_vec(), entry.value().to_vec()));
        }
    }
    all.sort();
    all
}

#[test]
fn replaying_the_log_after_evictions_gives_the_live_dataset() {
    let mut rng = Rng::new(11);
    for policy in [
        "allkeys-lru",
        "allkeys-lfu",
        "allkeys-random",
        "volatile-ttl",
        "volatile-lru",
    ] {
        let mut s = evicting(policy, 6);
        let mut log = HEADER.to_vec();
        for _ in 0..400 {
            s.advance(rng.below(2_000));
            let key = rng.below(20);
            let line = match rng.below(6) {
                0 => format!("SELECT {}", rng.below(3)),
                1 => format!("GET k{key}"),
                2 => format!("SET k{key} 0123456789 EX {}", 1 + rng.below(100)),
                3 => format!("APPEND k{key} xy"),
                _ => format!("SET k{key} 0123456789"),
            };
            log.extend(s.exec(&line).effects.to_bytes());
        }
        assert!(s.engine.stats().evicted_keys > 0, "{policy}");
        let loaded = load(&log, s.now);
        assert_eq!(
            dataset(&loaded, s.now),
            dataset(&s.engine, s.now),
            "{policy}"
        );
    }
}

#[test]
fn a_transaction_makes_room_when_queued_and_when_run() {
    let mut s = evicting("allkeys-lru", 3);
    fill(&mut s, "abc");
    assert_eq!(s.run("MULTI"), ok());
    assert_eq!(
        s.logged("SET d 0123456789"),
        ["DEL a"],
        "room for it at once"
    );
    assert_eq!(s.run("SET e 0123456789"), Reply::Simple("QUEUED".into()));
    assert_eq!(
        s.logged("EXEC"),
        ["SET d 0123456789", "DEL b", "SET e 0123456789"],
        "each queued command makes its own room as it runs"
    );
    assert_eq!(keys(&mut s), "cde");
}

#[test]
fn volatile_lru_and_lfu_order_the_expiring_keys_among_themselves() {
    for policy in ["volatile-lru", "volatile-lfu"] {
        let mut s = evicting(policy, 5);
        s.run("CONFIG SET lfu-log-factor 0");
        fill(&mut s, "abcde");
        for key in "bcd".chars() {
            s.run(&format!("EXPIRE {key} 1000"));
        }
        // Used: d most, then b; c least and longest ago.
        for (key, times) in [('b', 2), ('d', 4)] {
            for _ in 0..times {
                s.advance(1_000);
                s.run(&format!("GET {key}"));
            }
        }
        let mut gone = Vec::new();
        for key in "xyz".chars() {
            s.advance(1_000);
            gone.push(s.logged(&format!("SET {key} 0123456789"))[0].clone());
        }
        assert_eq!(gone, ["DEL c", "DEL b", "DEL d"], "{policy}");
        assert_eq!(keys(&mut s), "aexyz", "{policy}: a and e persist");
    }
}
