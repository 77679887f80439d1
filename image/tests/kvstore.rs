//! The key-value store under QEMU, driven from the host over TCP (QEMU user
//! networking forwards a local port to the guest's 6379).

mod common;

use common::kvstore::{build, free_port, fresh_disk, Guest};
use faultline_image::{workspace_root, Board, RunOptions};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Sends `request` and reads until `expected.len()` bytes arrived.
fn exchange(s: &mut TcpStream, request: &[u8], expected: &[u8]) {
    s.write_all(request).unwrap();
    let mut got = vec![0; expected.len()];
    s.read_exact(&mut got).unwrap_or_else(|e| {
        panic!(
            "reading a reply to {:?}: {e}",
            String::from_utf8_lossy(request)
        )
    });
    assert_eq!(
        String::from_utf8_lossy(&got),
        String::from_utf8_lossy(expected),
        "reply to {:?}",
        String::from_utf8_lossy(request)
    );
}

#[test]
fn redis_protocol_commands_pipelining_and_protocol_errors() {
    fresh_disk("kvstore-basic");
    let guest = Guest::start("kvstore-basic");
    let mut s = guest.connect();
    exchange(&mut s, b"*1\r\n$4\r\nPING\r\n", b"+PONG\r\n");
    exchange(
        &mut s,
        b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nva\r\nl\r\n",
        b"+OK\r\n",
    );
    exchange(
        &mut s,
        b"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n",
        b"$5\r\nva\r\nl\r\n",
    );
    // Inline commands and a pipeline of several in one write.
    exchange(
        &mut s,
        b"INCR n\r\nINCR n\r\nINCRBY n 40\r\nGET missing\r\n",
        b":1\r\n:2\r\n:42\r\n$-1\r\n",
    );
    exchange(
        &mut s,
        b"*1\r\n$3\r\nGET\r\n",
        b"-ERR wrong number of arguments for 'get' command\r\n",
    );
    exchange(&mut s, b"SET k v EX 100\r\nTTL k\r\n", b"+OK\r\n:100\r\n");
    // A second client sees the first one's data.
    let mut t = guest.connect();
    exchange(&mut t, b"GET n\r\n", b"$2\r\n42\r\n");
    // A protocol error is answered, then the connection is closed.
    exchange(
        &mut t,
        b"*1\r\nx\r\n",
        b"-ERR Protocol error: expected '$', got 'x'\r\n",
    );
    let mut rest = Vec::new();
    let closed = t.read_to_end(&mut rest).is_ok();
    assert!(
        closed && rest.is_empty(),
        "connection not closed after a protocol error: {rest:?}"
    );
    // The first client is unaffected.
    exchange(&mut s, b"PING\r\n", b"+PONG\r\n");
}

/// The value the crash test writes for key `i`: lengths vary, and every
/// seventh is large enough to be written to the log from its own memory
/// (kvstore's `SHARE_FROM`, 16 KiB).
fn crash_value(i: u32) -> String {
    let len = if i % 7 == 3 {
        16_384 + i % 5000
    } else {
        i % 300
    };
    format!("value-{i}-{}", "v".repeat(len as usize))
}

#[test]
fn acknowledged_writes_survive_sigkill_under_appendfsync_always() {
    sigkill_loses_no_acknowledged_write("kvstore-crash", Board::QemuVirt);
}

#[test]
fn acknowledged_writes_survive_sigkill_on_the_zcu102s_sd_card() {
    // The same on the QFDB's SoC: the log on the SD card, written by the
    // controller's ADMA2 engine from pinned buffers.
    sigkill_loses_no_acknowledged_write("kvstore-crash-zcu102", Board::Zcu102);
}

/// Writes under `appendfsync always` until QEMU is killed (SIGKILL) from
/// another thread, then checks every acknowledged write after a restart.
fn sigkill_loses_no_acknowledged_write(test: &str, board: Board) {
    fresh_disk(test);
    let guest = Guest::start_on_board(test, board, &["appendfsync", "always"]);
    let mut s = guest.connect();
    let mut acknowledged = Vec::new();
    // Write until the guest is killed from another thread mid-stream.
    let killer = {
        let pid = guest.child.id();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(1500));
            let _ = std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status();
        })
    };
    for i in 0..100_000u32 {
        let (key, value) = (format!("crash{i}"), crash_value(i));
        let request = format!(
            "*3\r\n$3\r\nSET\r\n${}\r\n{key}\r\n${}\r\n{value}\r\n",
            key.len(),
            value.len()
        );
        if s.write_all(request.as_bytes()).is_err() {
            break;
        }
        let mut reply = [0u8; 5];
        match s.read_exact(&mut reply) {
            Ok(()) if &reply == b"+OK\r\n" => acknowledged.push(i),
            _ => break,
        }
    }
    killer.join().unwrap();
    let log = guest.kill();
    assert!(
        acknowledged.len() > 10,
        "too few writes before the kill ({}); serial log:\n{log}",
        acknowledged.len()
    );

    let guest = Guest::start_on_board(test, board, &["appendfsync", "always"]);
    let mut s = guest.connect();
    for &i in &acknowledged {
        let value = crash_value(i);
        let expected = format!("${}\r\n{value}\r\n", value.len());
        exchange(
            &mut s,
            format!("GET crash{i}\r\n").as_bytes(),
            expected.as_bytes(),
        );
    }
    assert!(
        guest.serial().contains("kvstore: log replayed: "),
        "{}",
        guest.serial()
    );
    eprintln!(
        "{} acknowledged writes, all present after SIGKILL and restart",
        acknowledged.len()
    );
}

#[test]
fn a_stalled_or_flooding_client_does_not_stall_the_others() {
    let guest = Guest::start("kvstore-misbehave");
    let mut stalled = guest.connect();
    // Half a command, then silence.
    stalled.write_all(b"*3\r\n$3\r\nSET\r\n$1\r\nk").unwrap();
    // A client that pipelines without ever reading its replies.
    let mut flood = guest.connect();
    flood
        .set_write_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let burst = b"SET flood 0123456789012345678901234567890123456789\r\n".repeat(200);
    for _ in 0..50 {
        if flood.write_all(&burst).is_err() {
            break; // its buffers are full: the server stopped reading it
        }
    }
    let mut fine = guest.connect();
    for i in 0..20 {
        exchange(
            &mut fine,
            format!("SET ok{i} {i}\r\n").as_bytes(),
            b"+OK\r\n",
        );
    }
    exchange(&mut fine, b"GET ok19\r\n", b"$2\r\n19\r\n");
    // A client that disconnects mid-request is forgotten: its connection
    // no longer counts (stalled, flood and fine remain).
    let mut quitter = guest.connect();
    quitter.write_all(b"*2\r\n$3\r\nGET\r\n$5\r\nab").unwrap();
    drop(quitter);
    eventually(Duration::from_secs(20), "the quitter's close", || {
        info_field(&mut fine, "clients", "connected_clients") == 3
    });
    // The stalled client finishes its command later and is answered.
    stalled.write_all(b"\r\n$1\r\nv\r\n").unwrap();
    let mut reply = [0u8; 5];
    stalled.read_exact(&mut reply).unwrap();
    assert_eq!(&reply, b"+OK\r\n");
}

/// Reads one line (through `\r\n`) byte by byte, so nothing after it is
/// consumed.
fn read_line(s: &mut TcpStream) -> String {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while !line.ends_with(b"\r\n") {
        s.read_exact(&mut byte).expect("reading a reply line");
        line.push(byte[0]);
    }
    String::from_utf8_lossy(&line).into_owned()
}

/// Sends a command and returns its bulk-string reply's bytes.
fn bulk(s: &mut TcpStream, request: &[u8]) -> Vec<u8> {
    s.write_all(request).unwrap();
    let header = read_line(s);
    let len: usize = header
        .strip_prefix('$')
        .and_then(|n| n.trim_end().parse().ok())
        .unwrap_or_else(|| panic!("expected a bulk string, got {header:?}"));
    let mut body = vec![0; len + 2];
    s.read_exact(&mut body).unwrap();
    body.truncate(len);
    body
}

/// One numeric field of `INFO section`.
fn info_field(s: &mut TcpStream, section: &str, name: &str) -> u64 {
    let text = String::from_utf8(bulk(s, format!("INFO {section}\r\n").as_bytes())).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no numeric {name} in INFO {section}:\n{text}"))
}

/// Polls `condition` every 100 ms until it holds, failing after `limit`
/// (a deadline for something that must happen, not a timing assertion).
fn eventually(limit: Duration, what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !condition() {
        assert!(
            Instant::now() < deadline,
            "{what} did not happen within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_thousand_concurrent_connections_and_maxclients() {
    a_thousand_connections_on("kvstore-many", Board::QemuVirt);
}

#[test]
fn a_thousand_concurrent_connections_on_the_zcu102s_gem() {
    a_thousand_connections_on("kvstore-many-zcu102", Board::Zcu102);
}

/// A thousand clients connected at once (`maxclients 1000`), each served;
/// one more refused as Redis refuses it; a closed one makes room.
fn a_thousand_connections_on(test: &str, board: Board) {
    const N: usize = 1000;
    fresh_disk(test);
    let guest = Guest::start_on_board(test, board, &["maxclients", "1000"]);
    let first = guest.connect();
    drop(first);
    let started = Instant::now();
    // Connect one at a time, each answered before the next: QEMU's user
    // networking accepts host connections through a tiny backlog, so a
    // burst of simultaneous connects stalls in the host's SYN retries.
    let mut clients: Vec<TcpStream> = Vec::with_capacity(N);
    eventually(Duration::from_secs(10), "no client left over", || {
        let mut probe = guest.connect();
        info_field(&mut probe, "clients", "connected_clients") == 1
    });
    for i in 0..N {
        let mut s = TcpStream::connect(("127.0.0.1", guest.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        exchange(&mut s, b"PING\r\n", b"+PONG\r\n");
        clients.push(s);
        if i % 250 == 249 {
            eprintln!("{} connections after {:?}", i + 1, started.elapsed());
        }
    }
    let connected = started.elapsed();
    // Every connection writes, then every one reads, all still open.
    for (i, s) in clients.iter_mut().enumerate() {
        s.write_all(format!("SET key{i} value{i}\r\n").as_bytes())
            .unwrap();
    }
    for s in clients.iter_mut() {
        let mut reply = [0u8; 5];
        s.read_exact(&mut reply).unwrap();
        assert_eq!(&reply, b"+OK\r\n");
    }
    for (i, s) in clients.iter_mut().enumerate() {
        s.write_all(format!("GET key{}\r\n", (i + 1) % N).as_bytes())
            .unwrap();
    }
    for (i, s) in clients.iter_mut().enumerate() {
        let value = format!("value{}", (i + 1) % N);
        let mut reply = vec![0u8; format!("${}\r\n{value}\r\n", value.len()).len()];
        s.read_exact(&mut reply).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&reply),
            format!("${}\r\n{value}\r\n", value.len())
        );
    }
    let served = started.elapsed();
    assert_eq!(
        info_field(&mut clients[0], "clients", "connected_clients"),
        N as u64
    );
    // One more is told why and disconnected, as Redis does.
    let mut extra = TcpStream::connect(("127.0.0.1", guest.port)).unwrap();
    extra
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut refused = Vec::new();
    extra.read_to_end(&mut refused).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&refused),
        "-ERR max number of clients reached\r\n"
    );
    assert_eq!(
        info_field(&mut clients[1], "stats", "rejected_connections"),
        1
    );
    // Closing one makes room for a new client; the others are unaffected.
    clients.pop();
    eventually(Duration::from_secs(20), "a slot freed", || {
        info_field(&mut clients[2], "clients", "connected_clients") == N as u64 - 1
    });
    let mut late = TcpStream::connect(("127.0.0.1", guest.port)).unwrap();
    late.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    exchange(&mut late, b"GET key7\r\n", b"$6\r\nvalue7\r\n");
    for s in clients.iter_mut().step_by(97) {
        exchange(s, b"PING\r\n", b"+PONG\r\n");
    }
    eprintln!(
        "{N} connections: all connected after {connected:?}, SET+GET on each done after {served:?}"
    );
}

#[test]
fn a_16_mib_value_round_trips_byte_exact() {
    fresh_disk("kvstore-large");
    let guest = Guest::start("kvstore-large");
    let mut s = guest.connect();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let len = 16 << 20;
    // Not a repeating pattern: a misplaced chunk would show.
    let value: Vec<u8> = (0..len as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    let started = Instant::now();
    let mut request = format!("*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n${len}\r\n").into_bytes();
    request.extend_from_slice(&value);
    request.extend_from_slice(b"\r\n");
    exchange(&mut s, &request, b"+OK\r\n");
    let set = started.elapsed();
    let got = bulk(&mut s, b"GET big\r\n");
    assert!(got == value, "GET big returned different bytes");
    exchange(&mut s, b"STRLEN big\r\n", format!(":{len}\r\n").as_bytes());
    eprintln!("16 MiB: SET {set:?}, GET {:?}", started.elapsed() - set);
    // A second client was never blocked for good meanwhile.
    let mut t = guest.connect();
    exchange(&mut t, b"PING\r\n", b"+PONG\r\n");
}

/// `len` bytes that do not repeat with a short period, different per `seed`.
fn pattern(len: usize, seed: u32) -> Vec<u8> {
    (0..len as u32)
        .map(|i| (i.wrapping_add(seed).wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect()
}

/// A `SET`-like command with binary arguments, as RESP.
fn command(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend(format!("${}\r\n", arg.len()).into_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}

#[test]
fn large_values_written_from_their_own_memory_survive_a_restart() {
    let test = "kvstore-zerocopy";
    fresh_disk(test);
    let args = ["appendfsync", "everysec"];
    let guest = Guest::start_with(test, &args);
    let mut s = guest.connect();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    // Odd sizes around and far above the sharing threshold, changed and
    // deleted while their records wait for the next flush (everysec).
    let (a, b, c, d) = (
        pattern(16_384, 1),
        pattern(20_003, 2),
        pattern(70_001, 3),
        pattern(16_385, 4),
    );
    let mut batch = Vec::new();
    batch.extend(command(&[b"SET", b"a", &a]));
    batch.extend(command(&[b"SET", b"b", &b]));
    batch.extend(command(&[b"APPEND", b"b", b"-tail"]));
    batch.extend(command(&[b"MSET", b"c", &c, b"d", &d, b"small", b"s"]));
    batch.extend(command(&[b"SET", b"gone", &c]));
    batch.extend(command(&[b"DEL", b"gone"]));
    batch.extend(command(&[b"SET", b"d", b"overwritten"]));
    let mut replies = b"+OK\r\n+OK\r\n".to_vec();
    replies.extend(format!(":{}\r\n", b.len() + 5).into_bytes());
    replies.extend_from_slice(b"+OK\r\n+OK\r\n:1\r\n+OK\r\n");
    exchange(&mut s, &batch, &replies);
    // Past the next everysec flush.
    std::thread::sleep(Duration::from_millis(2500));
    let serial = guest.kill();
    assert!(
        serial.contains("from their own memory"),
        "values are copied: {serial}"
    );

    let guest = Guest::start_with(test, &args);
    let mut s = guest.connect();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut b_appended = b.clone();
    b_appended.extend_from_slice(b"-tail");
    assert!(bulk(&mut s, b"GET a\r\n") == a, "a");
    assert!(bulk(&mut s, b"GET b\r\n") == b_appended, "b");
    assert!(bulk(&mut s, b"GET c\r\n") == c, "c");
    assert_eq!(bulk(&mut s, b"GET d\r\n"), b"overwritten");
    exchange(&mut s, b"EXISTS gone\r\n", b":0\r\n");
    exchange(&mut s, b"DBSIZE\r\n", b":5\r\n");
}

/// The keys and final values the compaction test writes.
fn compaction_value(key: usize, round: usize) -> String {
    format!("round-{round}-of-key-{key}-{}", "x".repeat(60))
}

#[test]
fn log_compaction_shrinks_the_log_and_the_data_survives_a_restart() {
    let test = "kvstore-compact";
    fresh_disk(test);
    let args = ["appendfsync", "always", "auto-aof-rewrite-min-size", "64kb"];
    const KEYS: usize = 10;
    const ROUNDS: usize = 300;
    let guest = Guest::start_with(test, &args);
    let mut s = guest.connect();
    // 3,000 overwrites of ten keys: ~330 KiB of log for ~1 KiB of data.
    for round in 0..ROUNDS {
        let mut batch = String::new();
        for key in 0..KEYS {
            let value = compaction_value(key, round);
            batch.push_str(&format!("SET key{key} {value}\r\n"));
        }
        exchange(&mut s, batch.as_bytes(), &b"+OK\r\n".repeat(KEYS));
    }
    // The automatic rule (64 KiB, doubled) has rewritten the log.
    let rewrites = info_field(&mut s, "persistence", "aof_rewrites");
    let current = info_field(&mut s, "persistence", "aof_current_size");
    let base = info_field(&mut s, "persistence", "aof_base_size");
    assert!(rewrites >= 1, "no automatic rewrite");
    assert!(
        current < 2 * 64 * 1024 && base <= current,
        "log not compacted: current {current}, base {base}"
    );
    // BGREWRITEAOF brings it down to the live data alone.
    exchange(
        &mut s,
        b"BGREWRITEAOF\r\n",
        b"+Background append only file rewriting started\r\n",
    );
    eventually(Duration::from_secs(20), "BGREWRITEAOF", || {
        info_field(&mut s, "persistence", "aof_rewrites") > rewrites
    });
    let compact = info_field(&mut s, "persistence", "aof_current_size");
    assert_eq!(compact, info_field(&mut s, "persistence", "aof_base_size"));
    assert_eq!(
        info_field(&mut s, "persistence", "aof_rewrite_in_progress"),
        0
    );
    let live: usize = (0..KEYS)
        .map(|k| compaction_value(k, ROUNDS - 1).len() + 40)
        .sum();
    assert!(
        compact as usize <= live + 64,
        "compacted log of {compact} bytes for ~{live} bytes of data"
    );
    // A write after the rewrite lands in the new log.
    exchange(&mut s, b"SET after rewrite\r\n", b"+OK\r\n");
    let serial = guest.kill();
    assert!(serial.contains("kvstore: log rewritten: "), "{serial}");

    let guest = Guest::start_with(test, &args);
    let mut s = guest.connect();
    for key in 0..KEYS {
        let value = compaction_value(key, ROUNDS - 1);
        exchange(
            &mut s,
            format!("GET key{key}\r\n").as_bytes(),
            format!("${}\r\n{value}\r\n", value.len()).as_bytes(),
        );
    }
    exchange(&mut s, b"GET after\r\n", b"$7\r\nrewrite\r\n");
    exchange(
        &mut s,
        b"DBSIZE\r\n",
        format!(":{}\r\n", KEYS + 1).as_bytes(),
    );
    assert!(
        guest
            .serial()
            .contains(&format!("log replayed: {} records", KEYS + 1)),
        "{}",
        guest.serial()
    );
    eprintln!("log: {current} bytes after the automatic rewrite, {compact} after BGREWRITEAOF");
}

#[test]
fn redis_benchmark_runs_without_errors() {
    redis_benchmark_on("kvstore-bench", Board::QemuVirt);
}

#[test]
fn redis_benchmark_runs_without_errors_on_the_zcu102() {
    redis_benchmark_on("kvstore-bench-zcu102", Board::Zcu102);
}

/// redis-benchmark's SET/GET/INCR at several client counts and
/// pipelines, then its whole default test set: no error anywhere.
fn redis_benchmark_on(test: &str, board: Board) {
    let found = std::process::Command::new("redis-benchmark")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "redis-benchmark is not installed: run ./run-tests.sh, which installs redis-tools"
    );
    fresh_disk(test);
    let guest = Guest::start_on_board(test, board, &[]);
    let mut s = guest.connect();
    for (clients, pipeline) in [("1", "1"), ("10", "1"), ("10", "16")] {
        let out = std::process::Command::new("redis-benchmark")
            .args(["-p", &guest.port.to_string(), "-q", "-n", "2000"])
            .args([
                "-t",
                "ping_mbulk,set,get,incr",
                "-c",
                clients,
                "-P",
                pipeline,
            ])
            .output()
            .expect("redis-benchmark runs");
        let text = String::from_utf8_lossy(&out.stdout).replace('\r', "\n")
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "redis-benchmark failed:\n{text}");
        let results: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("requests per second"))
            .collect();
        assert_eq!(results.len(), 4, "one result per test:\n{text}");
        assert!(
            !text.contains("Error") && !text.contains("ERR"),
            "errors during the benchmark:\n{text}"
        );
        for line in results {
            eprintln!("-c {clients} -P {pipeline}: {line}");
        }
    }
    assert_eq!(info_field(&mut s, "stats", "total_error_replies"), 0);
    // 2000 INCRs per run on one counter.
    exchange(&mut s, b"GET counter:__rand_int__\r\n", b"$4\r\n6000\r\n");
    // redis-benchmark's default test set, as a new user runs it: every one
    // of its 20 tests (lists, sets, hashes, sorted sets, LRANGE_100..600)
    // runs to the end, with no error reply.
    let out = std::process::Command::new("redis-benchmark")
        .args(["-p", &guest.port.to_string(), "-q", "-n", "500"])
        .output()
        .expect("redis-benchmark runs");
    let text = String::from_utf8_lossy(&out.stdout).replace('\r', "\n")
        + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "redis-benchmark failed:\n{text}");
    let results: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("requests per second"))
        .collect();
    assert_eq!(results.len(), 20, "one result per default test:\n{text}");
    for test in ["LPUSH", "SPOP", "ZPOPMIN", "LRANGE_600", "MSET"] {
        assert!(
            results.iter().any(|l| l.starts_with(test)),
            "{test}:\n{text}"
        );
    }
    assert_eq!(info_field(&mut s, "stats", "total_error_replies"), 0);
}

/// The disk image of a test's guest.
fn disk_of(test: &str) -> std::path::PathBuf {
    workspace_root()
        .join("target/test-images")
        .join(test)
        .join("kvstore.disk")
}

/// Reads one reply line of a simple command (status, error or integer).
fn ask(s: &mut TcpStream, request: &str) -> String {
    s.write_all(request.as_bytes()).unwrap();
    read_line(s).trim_end().to_string()
}

/// A `SET key <len bytes>` request.
fn set_request(key: &str, len: usize, seed: u32) -> Vec<u8> {
    command(&[b"SET", key.as_bytes(), &pattern(len, seed)])
}

/// A small disk: two log halves of 1.5 MiB.
const SMALL_DISK: u64 = 4 << 20;

#[test]
fn a_full_log_acknowledges_nothing_it_did_not_store_and_a_rewrite_makes_room() {
    let test = "kvstore-full-rewrite";
    fresh_disk(test);
    let args = ["appendfsync", "always"];
    let guest = Guest::start_on(test, &args, Some(SMALL_DISK));
    let mut s = guest.connect();
    // One key overwritten with 50 KB values: the log fills, the rewrite
    // that the full log asks for shrinks it to one value, writes resume.
    let (mut refused, mut last_ok, mut ok_after_refusal) = (0, None, false);
    for i in 0..80u32 {
        s.write_all(&set_request("hot", 50_000, i)).unwrap();
        match read_line(&mut s).trim_end() {
            "+OK" => {
                last_ok = Some(i);
                ok_after_refusal |= refused > 0;
            }
            e if e.starts_with("-MISCONF Errors writing to the AOF file: log full") => refused += 1,
            other => panic!("SET {i}: {other}\n{}", guest.serial()),
        }
    }
    let serial = guest.serial();
    assert!(refused > 0, "the log never filled:\n{serial}");
    assert!(ok_after_refusal, "writes never resumed:\n{serial}");
    assert!(
        serial.contains("write commands are accepted again"),
        "{serial}"
    );
    let last_ok = last_ok.unwrap();
    guest.kill();
    let guest = Guest::start_on(test, &args, None);
    let mut s = guest.connect();
    assert_eq!(
        bulk(&mut s, b"GET hot\r\n"),
        pattern(50_000, last_ok),
        "the last acknowledged value"
    );
}

#[test]
fn when_the_live_data_does_not_fit_writes_stay_refused_reads_go_on_and_nothing_acknowledged_is_lost(
) {
    let test = "kvstore-full-stuck";
    fresh_disk(test);
    let guest = Guest::start_on(test, &[], Some(SMALL_DISK));
    let mut s = guest.connect();
    let mut acknowledged = Vec::new();
    let mut refused = 0;
    for i in 0..60u32 {
        s.write_all(&set_request(&format!("k{i}"), 50_000, i))
            .unwrap();
        match read_line(&mut s).trim_end() {
            "+OK" if refused == 0 => acknowledged.push(i),
            e if e.starts_with("-MISCONF") => refused += 1,
            other => panic!("SET k{i} after {refused} refusals: {other}"),
        }
    }
    assert!(refused >= 20, "only {refused} writes refused");
    // Reads are served; INFO says why writes are not.
    assert_eq!(bulk(&mut s, b"GET k0\r\n"), pattern(50_000, 0));
    assert!(ask(&mut s, "DEL k0\r\n").starts_with("-MISCONF"));
    s.write_all(b"INFO persistence\r\n").unwrap();
    let len: usize = read_line(&mut s)[1..].trim_end().parse().unwrap();
    let mut info = vec![0; len + 2];
    s.read_exact(&mut info).unwrap();
    let info = String::from_utf8_lossy(&info);
    assert!(info.contains("aof_last_write_status:err"), "{info}");
    assert!(info.contains("aof_last_write_error:log full"), "{info}");
    let serial = guest.serial();
    assert!(
        serial.contains("--disk-size"),
        "the console says how to recover:\n{serial}"
    );
    // everysec: what was acknowledged is flushed within a second.
    std::thread::sleep(Duration::from_secs(2));
    guest.kill();
    let guest = Guest::start_on(test, &[], None);
    let mut s = guest.connect();
    for &i in &acknowledged {
        assert_eq!(
            bulk(&mut s, format!("GET k{i}\r\n").as_bytes()),
            pattern(50_000, i)
        );
    }
}

/// Writes `n` keys under appendfsync always and cuts the power.
fn disk_with_keys(test: &str, n: u32) {
    fresh_disk(test);
    let guest = Guest::start_with(test, &["appendfsync", "always"]);
    let mut s = guest.connect();
    for i in 0..n {
        exchange(
            &mut s,
            &set_request(&format!("key{i}"), 1000, i),
            b"+OK\r\n",
        );
    }
    guest.kill();
}

#[test]
fn a_damaged_log_stops_the_server_and_kv_check_cuts_it_where_it_said() {
    let test = "kvstore-damage";
    disk_with_keys(test, 40);
    let disk = disk_of(test);
    let mut bytes = std::fs::read(&disk).unwrap();
    let found = kvstore::aof::check::inspect(&bytes, |_| {});
    let sb = found.superblock.expect("a log");
    let middle = sb.extent.start + sb.length / 2;
    bytes[middle as usize] ^= 0x20;
    std::fs::write(&disk, &bytes).unwrap();

    let (status, serial) = Guest::start_with(test, &[]).exit_status();
    assert_eq!(status, Some(1), "{serial}");
    assert!(
        serial.contains("refusing to start: the log is damaged at byte"),
        "{serial}"
    );
    assert!(serial.contains("kv-check"), "{serial}");
    assert_eq!(
        std::fs::read(&disk).unwrap(),
        bytes,
        "the server changed nothing"
    );

    let report = faultline_image::kvcheck::kv_check(&disk, false).unwrap();
    assert!(!report.clean, "{}", report.text);
    let kept = report.keys;
    assert!(kept > 5 && kept < 40, "{}", report.text);
    let fixed = faultline_image::kvcheck::kv_check(&disk, true).unwrap();
    assert!(fixed.clean && fixed.keys == kept, "{}", fixed.text);

    let guest = Guest::start_with(test, &[]);
    let mut s = guest.connect();
    assert_eq!(ask(&mut s, "DBSIZE\r\n"), format!(":{kept}"));
    for i in 0..kept as u32 {
        assert_eq!(
            bulk(&mut s, format!("GET key{i}\r\n").as_bytes()),
            pattern(1000, i)
        );
    }
}

#[test]
fn unreadable_superblocks_stop_the_server_instead_of_starting_empty() {
    let test = "kvstore-superblocks";
    disk_with_keys(test, 10);
    let disk = disk_of(test);
    let mut bytes = std::fs::read(&disk).unwrap();
    bytes[3] ^= 0xff;
    bytes[4096 + 3] ^= 0xff;
    std::fs::write(&disk, &bytes).unwrap();
    let (status, serial) = Guest::start_with(test, &[]).exit_status();
    assert_eq!(status, Some(1), "{serial}");
    assert!(serial.contains("both superblocks"), "{serial}");
    let fixed = faultline_image::kvcheck::kv_check(&disk, true).unwrap();
    assert_eq!(fixed.keys, 10, "{}", fixed.text);
    let guest = Guest::start_with(test, &[]);
    let mut s = guest.connect();
    assert_eq!(ask(&mut s, "DBSIZE\r\n"), ":10");
}

#[test]
fn config_set_appendfsync_always_takes_effect_at_once() {
    let test = "kvstore-config-fsync";
    fresh_disk(test);
    let guest = Guest::start_with(test, &[]); // everysec
    let mut s = guest.connect();
    exchange(&mut s, b"CONFIG SET appendfsync always\r\n", b"+OK\r\n");
    exchange(&mut s, b"SET now durable\r\n", b"+OK\r\n");
    // A power cut right after the reply: under everysec the record would
    // still be waiting for its flush.
    guest.kill();
    let guest = Guest::start_with(test, &[]);
    let mut s = guest.connect();
    exchange(&mut s, b"GET now\r\n", b"$7\r\ndurable\r\n");
}

#[test]
fn a_500_mib_set_and_oversized_requests_leave_the_server_up() {
    let test = "kvstore-huge";
    fresh_disk(test);
    let guest = Guest::start_on(test, &[], Some(2 << 30));
    let mut pinger = guest.connect();
    // The server writes the 500 MiB to the disk in one flush; on a loaded
    // 2-core host that takes seconds, during which the PING waits.
    pinger
        .set_read_timeout(Some(Duration::from_secs(90)))
        .unwrap();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Another client is answered throughout.
    let pings = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut answered = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                exchange(&mut pinger, b"PING\r\n", b"+PONG\r\n");
                answered += 1;
                std::thread::sleep(Duration::from_millis(100));
            }
            answered
        })
    };
    let mut s = guest.connect();
    s.set_read_timeout(Some(Duration::from_secs(180))).unwrap();
    let len = 500 << 20;
    let started = Instant::now();
    s.write_all(format!("*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n${len}\r\n").as_bytes())
        .unwrap();
    let chunk = pattern(1 << 20, 7);
    for _ in 0..500 {
        s.write_all(&chunk).unwrap();
    }
    s.write_all(b"\r\n").unwrap();
    assert_eq!(read_line(&mut s), "+OK\r\n", "{}", guest.serial());
    eprintln!("500 MiB SET answered after {:?}", started.elapsed());
    assert_eq!(ask(&mut s, "STRLEN big\r\n"), format!(":{len}"));
    // Requests over the limits: refused, that client closed, server up.
    let mut t = guest.connect();
    t.write_all(b"*2\r\n$3\r\nGET\r\n$1073741824\r\n").unwrap();
    assert_eq!(
        read_line(&mut t),
        "-ERR Protocol error: invalid bulk length\r\n"
    );
    let mut u = guest.connect();
    exchange(
        &mut u,
        b"CONFIG SET client-query-buffer-limit 1mb\r\n",
        b"+OK\r\n",
    );
    let mut v = guest.connect();
    v.write_all(&command(&[
        b"MSET",
        b"a",
        &pattern(600_000, 1),
        b"b",
        &pattern(600_000, 2),
    ]))
    .unwrap_or_default();
    let line = read_line(&mut v);
    assert!(line.contains("client-query-buffer-limit"), "{line}");
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let answered = pings.join().expect("every PING answered in time");
    assert!(answered > 5, "{answered} PINGs");
    exchange(&mut u, b"PING\r\n", b"+PONG\r\n");
}

#[test]
fn a_failing_disk_turns_held_replies_into_errors_and_reads_go_on() {
    let test = "kvstore-disk-error";
    disk_with_keys(test, 5);
    let args = ["appendfsync", "always"];
    let read_only = RunOptions {
        disk_read_only: true,
        ..RunOptions::default()
    };
    let guest = Guest::start_opts(test, &args, read_only);
    let mut s = guest.connect();
    let reply = ask(&mut s, "SET lost value\r\n");
    assert!(
        reply.starts_with("-MISCONF Errors writing to the AOF file: disk transfer"),
        "{reply}\n{}",
        guest.serial()
    );
    assert!(ask(&mut s, "SET next value\r\n").starts_with("-MISCONF"));
    assert_eq!(bulk(&mut s, b"GET key3\r\n"), pattern(1000, 3));
    assert_eq!(info_field(&mut s, "persistence", "aof_enabled"), 1);
    let serial = guest.serial();
    assert!(serial.contains("log write failed"), "{serial}");
    guest.kill();
    // Nothing was acknowledged that the disk does not have.
    let guest = Guest::start_with(test, &args);
    let mut s = guest.connect();
    assert_eq!(ask(&mut s, "DBSIZE\r\n"), ":5");
}

/// Sets `keys` keys `base<i>` to 100-byte patterns, 500 a request, then
/// asks for a log rewrite.
fn fill_then_rewrite(s: &mut TcpStream, keys: u32) {
    for batch in 0..keys.div_ceil(500) {
        let mut mset: Vec<Vec<u8>> = vec![b"MSET".to_vec()];
        for i in batch * 500..((batch + 1) * 500).min(keys) {
            mset.push(format!("base{i}").into_bytes());
            mset.push(pattern(100, i));
        }
        let args: Vec<&[u8]> = mset.iter().map(Vec::as_slice).collect();
        exchange(s, &command(&args), b"+OK\r\n");
    }
    exchange(
        s,
        b"BGREWRITEAOF\r\n",
        b"+Background append only file rewriting started\r\n",
    );
}

#[test]
fn sigkill_during_a_rewrite_keeps_every_acknowledged_write() {
    let test = "kvstore-kill-rewrite";
    fresh_disk(test);
    let args = ["appendfsync", "always"];
    let guest = Guest::start_with(test, &args);
    let mut s = guest.connect();
    // Enough keys for the rewrite to take many steps (64 keys each, with
    // clients served between them).
    fill_then_rewrite(&mut s, 200_000);
    // About a second of rewriting (250 ms per 50,000 keys measured): the
    // kill below comes 100 ms after it is seen running.
    let mut watcher = guest.connect();
    eventually(Duration::from_secs(10), "the rewrite to start", || {
        info_field(&mut watcher, "persistence", "aof_rewrite_in_progress") == 1
    });
    let mut acknowledged = Vec::new();
    let started = Instant::now();
    let pid = guest.child.id();
    let mut killed = false;
    for i in 0..100_000u32 {
        if !killed && started.elapsed() > Duration::from_millis(100) {
            let _ = std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status();
            killed = true;
        }
        if s.write_all(&set_request(&format!("during{i}"), 3000, i))
            .is_err()
        {
            break;
        }
        let mut reply = [0u8; 5];
        match s.read_exact(&mut reply) {
            Ok(()) if &reply == b"+OK\r\n" => acknowledged.push(i),
            _ => break,
        }
    }
    let serial = guest.kill();
    assert!(acknowledged.len() > 3, "{serial}");
    assert!(
        !serial.contains("log rewritten"),
        "the kill came after the rewrite ended, not during it:\n{serial}"
    );
    let guest = Guest::start_with(test, &args);
    let mut s = guest.connect();
    for &i in &acknowledged {
        assert_eq!(
            bulk(&mut s, format!("GET during{i}\r\n").as_bytes()),
            pattern(3000, i)
        );
    }
    assert_eq!(bulk(&mut s, b"GET base199999\r\n"), pattern(100, 199_999));
    eprintln!(
        "{} writes acknowledged during the rewrite, all present",
        acknowledged.len()
    );
}

#[test]
fn a_rewrite_larger_than_its_buffer_is_written_in_parts_and_replays_whole() {
    // ~10 MiB of live data: the new log goes to the disk in parts of
    // 4 MiB while the rewrite runs, with a list pushed to between its
    // steps; after a restart every key and every push is there, once.
    let test = "kvstore-rewrite-parts";
    fresh_disk(test);
    let args = ["appendfsync", "everysec"];
    let guest = Guest::start_with(test, &args);
    let mut s = guest.connect();
    fill_then_rewrite(&mut s, 80_000);
    let mut pushes = 0u32;
    while info_field(&mut s, "persistence", "aof_rewrite_in_progress") == 1 || pushes == 0 {
        pushes += 1;
        exchange(
            &mut s,
            format!("RPUSH during {pushes}\r\n").as_bytes(),
            format!(":{pushes}\r\n").as_bytes(),
        );
    }
    assert_eq!(info_field(&mut s, "persistence", "aof_rewrites"), 1);
    // Shut down cleanly: the log is flushed, then the restart replays it.
    exchange(&mut s, b"SET last one\r\n", b"+OK\r\n");
    s.write_all(b"SHUTDOWN\r\n").unwrap();
    let (status, serial) = guest.exit_status();
    assert_eq!(status, Some(0), "{serial}");
    assert!(serial.contains("kvstore: log rewritten: "), "{serial}");
    let guest = Guest::start_with(test, &args);
    let mut s = guest.connect();
    assert_eq!(ask(&mut s, "DBSIZE\r\n"), ":80002");
    assert_eq!(ask(&mut s, "LLEN during\r\n"), format!(":{pushes}"));
    assert_eq!(
        bulk(&mut s, b"LINDEX during -1\r\n"),
        pushes.to_string().into_bytes()
    );
    for i in [0, 41_999, 79_999] {
        assert_eq!(
            bulk(&mut s, format!("GET base{i}\r\n").as_bytes()),
            pattern(100, i)
        );
    }
    eprintln!("{pushes} pushes while the rewrite ran, all present once");
}

#[test]
fn kvstore_serves_and_persists_on_the_zcu102_through_gem_and_sd() {
    // The QFDB's SoC: no PCI, no NVMe; the network is the on-chip GEM3,
    // the disk an SD card on SD0.
    let test = "kvstore-zcu102";
    fresh_disk(test);
    // The station address is the user's to choose, as on a real board
    // whose address is on a label: a kernel option the app never sees.
    let guest = Guest::start_on_board(test, Board::Zcu102, &["faultline.mac=02:00:5e:10:00:01"]);
    let mut s = guest.connect();
    exchange(&mut s, b"PING\r\n", b"+PONG\r\n");
    exchange(&mut s, b"SET board zcu102\r\n", b"+OK\r\n");
    // A value of many frames each way, and of many SD blocks.
    let value = pattern(200_000, 7);
    s.write_all(&command(&[b"SET", b"big", &value])).unwrap();
    assert_eq!(read_line(&mut s), "+OK\r\n");
    assert_eq!(bulk(&mut s, b"GET big\r\n"), value);
    s.write_all(b"SHUTDOWN\r\n").unwrap();
    let (status, serial) = guest.exit_status();
    assert_eq!(status, Some(0), "{serial}");
    assert!(
        serial.contains("net: Cadence GEM at 0xff0e0000, mac 02-00-5e-10-00-01"),
        "{serial}"
    );
    // The PHY QEMU models behind each GEM (Marvell's ID, at the address
    // the zcu102 machine straps, 23), found by scanning the management
    // bus, negotiated a gigabit link with the far end QEMU pretends.
    assert!(
        serial.contains("PHY 0x01410cc2 at MDIO address 23, link up at 1000 Mb/s full duplex"),
        "{serial}"
    );
    assert!(serial.contains("sd: card of 1024 MiB, ADMA2"), "{serial}");
    // Both keys come back from the SD card; without the option, the
    // address is the one firmware (here QEMU) left in the MAC.
    let guest = Guest::start_on_board(test, Board::Zcu102, &[]);
    let mut s = guest.connect();
    exchange(&mut s, b"GET board\r\n", b"$6\r\nzcu102\r\n");
    assert_eq!(bulk(&mut s, b"GET big\r\n"), value);
    let serial = guest.serial();
    assert!(serial.contains("log replayed: 2 records"), "{serial}");
    assert!(serial.contains("mac 52-54-00-12-34-59"), "{serial}");
}

#[test]
fn a_published_message_reaches_a_subscriber_on_another_connection() {
    let test = "kvstore-pubsub";
    let guest = Guest::start(test);
    let mut sub = guest.connect();
    let mut publisher = guest.connect();
    exchange(
        &mut sub,
        b"SUBSCRIBE news\r\n",
        b"*3\r\n$9\r\nsubscribe\r\n$4\r\nnews\r\n:1\r\n",
    );
    exchange(&mut publisher, b"PUBLISH news hello\r\n", b":1\r\n");
    let mut got = vec![0; b"*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$5\r\nhello\r\n".len()];
    sub.read_exact(&mut got).expect("the message");
    assert_eq!(got, b"*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$5\r\nhello\r\n");
    // Gone subscribers are forgotten.
    drop(sub);
    eventually(
        Duration::from_secs(10),
        "the subscriber to be forgotten",
        || ask(&mut publisher, "PUBLISH news again\r\n") == ":0",
    );
}

/// Reads from a connection the server closed: it must see the end of the
/// stream (or a reset), not wait until the read times out.
fn expect_closed(s: &mut TcpStream, within: Duration) {
    s.set_read_timeout(Some(within)).unwrap();
    let mut rest = [0u8; 256];
    match s.read(&mut rest) {
        Ok(0) => {}
        Ok(n) => panic!(
            "the closed connection got {:?}",
            String::from_utf8_lossy(&rest[..n])
        ),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        Err(e) => panic!("the connection was not closed within {within:?}: {e}"),
    }
}

#[test]
fn client_list_shows_every_connection_and_client_kill_closes_one() {
    let guest = Guest::start("kvstore-clients");
    let mut admin = guest.connect();
    let mut victim = guest.connect();
    exchange(&mut victim, b"CLIENT SETNAME victim\r\n", b"+OK\r\n");
    let id = ask(&mut victim, "CLIENT ID\r\n");
    // A subscriber that only waits: it sends nothing that would find out.
    exchange(
        &mut victim,
        b"SUBSCRIBE jobs\r\n",
        b"*3\r\n$9\r\nsubscribe\r\n$4\r\njobs\r\n:1\r\n",
    );
    std::thread::sleep(Duration::from_millis(200));
    let list = String::from_utf8(bulk(&mut admin, b"CLIENT LIST\r\n")).unwrap();
    assert_eq!(list.lines().count(), 2, "{list}");
    assert!(
        list.lines().any(
            |l| l.starts_with(&format!("id={} addr=10.0.2.2:", &id[1..]))
                && l.contains("name=victim")
        ),
        "{list}"
    );
    let kill = format!("CLIENT KILL ID {}\r\n", &id[1..]);
    exchange(&mut admin, kill.as_bytes(), b":1\r\n");
    expect_closed(&mut victim, Duration::from_secs(5));
    exchange(&mut admin, b"PUBLISH jobs x\r\n", b":0\r\n");
    let list = String::from_utf8(bulk(&mut admin, b"CLIENT LIST\r\n")).unwrap();
    assert_eq!(list.lines().count(), 1, "{list}");
}

#[test]
fn config_set_timeout_closes_idle_clients_but_not_subscribers_or_blocked_ones() {
    let guest = Guest::start("kvstore-timeout");
    let mut admin = guest.connect();
    exchange(&mut admin, b"CONFIG SET timeout 1\r\n", b"+OK\r\n");
    exchange(
        &mut admin,
        b"CONFIG GET timeout\r\n",
        b"*2\r\n$7\r\ntimeout\r\n$1\r\n1\r\n",
    );
    let mut subscriber = guest.connect();
    exchange(
        &mut subscriber,
        b"SUBSCRIBE news\r\n",
        b"*3\r\n$9\r\nsubscribe\r\n$4\r\nnews\r\n:1\r\n",
    );
    let mut blocked = guest.connect();
    blocked.write_all(b"BLPOP jobs 0\r\n").unwrap();
    // Idle for more than a second: closed (the admin connection too).
    expect_closed(&mut admin, Duration::from_secs(5));
    std::thread::sleep(Duration::from_millis(1500));
    let mut other = guest.connect();
    exchange(&mut other, b"PUBLISH news hi\r\n", b":1\r\n");
    let message = b"*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$2\r\nhi\r\n";
    let mut got = vec![0; message.len()];
    subscriber
        .read_exact(&mut got)
        .expect("the subscriber is still there");
    assert_eq!(got, message);
    exchange(&mut other, b"RPUSH jobs a\r\n", b":1\r\n");
    let served = b"*2\r\n$4\r\njobs\r\n$1\r\na\r\n";
    let mut got = vec![0; served.len()];
    blocked
        .read_exact(&mut got)
        .expect("the blocked client is still there");
    assert_eq!(got, served);
    // 0: never again.
    exchange(&mut other, b"CONFIG SET timeout 0\r\n", b"+OK\r\n");
    std::thread::sleep(Duration::from_millis(1500));
    exchange(&mut other, b"PING\r\n", b"+PONG\r\n");
}

#[test]
fn shutdown_makes_the_last_writes_durable_and_stops_cleanly() {
    let test = "kvstore-shutdown";
    fresh_disk(test);
    let guest = Guest::start_with(test, &[]); // everysec: not yet flushed
    let mut s = guest.connect();
    exchange(&mut s, b"SET last words\r\n", b"+OK\r\n");
    s.write_all(b"SHUTDOWN\r\n").unwrap();
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    assert!(
        rest.is_empty(),
        "no reply to a shutdown that happened: {rest:?}"
    );
    let (status, serial) = guest.exit_status();
    assert_eq!(status, Some(0), "{serial}");
    assert!(
        serial.contains("kvstore: shutting down: the log is durable"),
        "{serial}"
    );
    let guest = Guest::start_with(test, &[]);
    let mut s = guest.connect();
    exchange(&mut s, b"GET last\r\n", b"$5\r\nwords\r\n");
}

#[test]
fn a_stop_request_from_the_host_flushes_the_log_first() {
    // What SIGINT or SIGTERM to run-qemu.sh does: the tool asks the guest
    // to stop on its console and gives it a grace period.
    let test = "kvstore-stop";
    fresh_disk(test);
    let (built, _) = build(test, Board::QemuVirt, &[]);
    let port = free_port();
    let options = RunOptions {
        port: Some(port),
        ..RunOptions::default()
    };
    let asked = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let run = {
        let asked = asked.clone();
        std::thread::spawn(move || {
            let limit = Some(Duration::from_secs(120));
            faultline_image::run::run_stoppable(&built, &options, limit, false, &asked)
                .expect("QEMU runs")
        })
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut s = loop {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(s) => {
                s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                let mut s = s;
                if s.write_all(b"PING\r\n").is_ok() && read_line(&mut s) == "+PONG\r\n" {
                    break s;
                }
            }
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(200)),
            Err(e) => panic!("kvstore never answered: {e}"),
        }
    };
    exchange(&mut s, b"SET before stop\r\n", b"+OK\r\n"); // everysec: not flushed yet
    asked.store(true, std::sync::atomic::Ordering::Relaxed);
    let outcome = run.join().unwrap();
    assert_eq!(outcome.status, Some(0), "{}", outcome.output);
    assert!(
        outcome.output.contains("kvstore: the host asks to stop")
            && outcome.output.contains("the log is durable"),
        "{}",
        outcome.output
    );
    let guest = Guest::start_with(test, &[]);
    let mut s = guest.connect();
    exchange(&mut s, b"GET before\r\n", b"$4\r\nstop\r\n");
}

#[test]
fn a_flood_of_ten_thousand_connections_leaves_the_server_answering() {
    let test = "kvstore-flood";
    fresh_disk(test);
    let guest = Guest::start_with(test, &[]); // maxclients 10000
    let mut pinger = guest.connect();
    pinger
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let port = guest.port;
    // 10,000 connection attempts from 100 threads at once, each kept open
    // if it succeeds; attempts QEMU's user networking cannot take in time
    // count as not accepted (the host's side of the flood, not the guest's).
    let flood: Vec<_> = (0..100)
        .map(|_| {
            std::thread::spawn(move || {
                let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
                let mut open = Vec::new();
                for _ in 0..100 {
                    if let Ok(s) = TcpStream::connect_timeout(&addr, Duration::from_millis(500)) {
                        open.push(s);
                    }
                }
                open
            })
        })
        .collect();
    let started = Instant::now();
    let mut pings = 0;
    while flood.iter().any(|t| !t.is_finished()) {
        exchange(&mut pinger, b"PING\r\n", b"+PONG\r\n");
        pings += 1;
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut open: Vec<TcpStream> = flood.into_iter().flat_map(|t| t.join().unwrap()).collect();
    eprintln!(
        "{} of 10000 connections open, {pings} PINGs answered during the flood ({:?})",
        open.len(),
        started.elapsed()
    );
    assert!(pings > 0);
    // The server still serves, the flood's connections included.
    exchange(&mut pinger, b"SET after flood\r\n", b"+OK\r\n");
    if let Some(s) = open.last_mut() {
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        exchange(s, b"GET after\r\n", b"$5\r\nflood\r\n");
    }
    let clients = info_field(&mut pinger, "clients", "connected_clients");
    assert!(clients <= 10_000, "{clients} clients past maxclients");
    drop(open);
    exchange(&mut pinger, b"PING\r\n", b"+PONG\r\n");
}
