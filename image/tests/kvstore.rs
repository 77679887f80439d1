//! The key-value store under QEMU, driven from the host over TCP (QEMU user
//! networking forwards a local port to the guest's 6379).

mod common;

use faultline_image::{build_to, qemu_command, workspace_root, Board, RunOptions};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// QEMU with kvstore, killed when dropped.
struct Guest {
    child: Child,
    port: u16,
    log: std::path::PathBuf,
}

impl Drop for Guest {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Guest {
    fn start(test: &str) -> Guest {
        Self::start_with(test, &[])
    }

    /// Boots kvstore with `args`; the NVMe disk in the test's directory is
    /// kept between boots of the same test.
    fn start_with(test: &str, args: &[&str]) -> Guest {
        common::require_qemu();
        let root = workspace_root();
        let out = root.join("target/test-images").join(test);
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let built = build_to(&root, "kvstore", Board::QemuVirt, &args, &out).expect("image builds");
        faultline_image::qemu::ensure_disk(&built).unwrap();
        // A free local port for the forward.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let net = format!("user,id=n0,hostfwd=tcp:127.0.0.1:{port}-:6379");
        let extra = ["-netdev", &net, "-device", "virtio-net-pci,netdev=n0"]
            .map(String::from)
            .to_vec();
        let options = RunOptions {
            extra,
            ..RunOptions::default()
        };
        let log = out.join("serial.log");
        let mut cmd = qemu_command(&built, &options).unwrap();
        cmd.stdin(Stdio::null())
            .stdout(std::fs::File::create(&log).unwrap())
            .stderr(Stdio::inherit());
        Guest {
            child: cmd.spawn().expect("QEMU starts"),
            port,
            log,
        }
    }

    /// Kills QEMU at once, as a power cut would.
    fn kill(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.serial()
    }

    fn serial(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Connects once the guest says it is ready (within a minute).
    fn connect(&self) -> TcpStream {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if self.serial().contains("kvstore: ready") {
                if let Ok(s) = TcpStream::connect(("127.0.0.1", self.port)) {
                    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                    return s;
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!(
            "kvstore never became reachable; serial log:\n{}",
            self.serial()
        );
    }
}

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

/// The value the crash test writes for key `i` (lengths vary).
fn crash_value(i: u32) -> String {
    format!("value-{i}-{}", "v".repeat((i % 300) as usize))
}

fn fresh_disk(test: &str) {
    let disk = workspace_root()
        .join("target/test-images")
        .join(test)
        .join("kvstore.disk");
    let _ = std::fs::remove_file(disk);
}

#[test]
fn acknowledged_writes_survive_sigkill_under_appendfsync_always() {
    let test = "kvstore-crash";
    fresh_disk(test);
    let guest = Guest::start_with(test, &["appendfsync", "always"]);
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
        let request = format!("SET crash{i} {}\r\n", crash_value(i));
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

    let guest = Guest::start_with(test, &["appendfsync", "always"]);
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
    // The stalled client finishes its command later and is answered.
    stalled.write_all(b"\r\n$1\r\nv\r\n").unwrap();
    let mut reply = [0u8; 5];
    stalled.read_exact(&mut reply).unwrap();
    assert_eq!(&reply, b"+OK\r\n");
}
