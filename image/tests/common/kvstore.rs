//! kvstore under QEMU, for the tests that talk to it over TCP (QEMU user
//! networking forwards a local port to the guest's 6379). Each test crate
//! uses part of it.
#![allow(dead_code)]

use faultline_image::{build_to, qemu_command, workspace_root, Board, Built, RunOptions};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// QEMU with kvstore, killed when dropped.
pub struct Guest {
    /// The QEMU process.
    pub child: Child,
    /// The host port forwarded to the guest's 6379.
    pub port: u16,
    log: std::path::PathBuf,
}

impl Drop for Guest {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Installs a client's host tools when missing (`need` is a function of
/// `image/host-tools.sh`, such as `need_bullmq`; `./run-tests.sh` has run
/// it already), failing the test with `what` when that fails.
pub fn need_host_tools(need: &str, what: &str) {
    let setup = Command::new("bash")
        .args(["-c", &format!(". image/host-tools.sh && {need}")])
        .current_dir(workspace_root())
        .status()
        .expect("bash runs");
    assert!(setup.success(), "{what}; see above");
}

/// Runs `client`, a program talking to `guest`, and returns what it wrote
/// to its standard output (shown, as its errors are, as the test runs).
/// The test fails when the client does, with its output and `guest`'s
/// console; `what` names the client in that message.
pub fn client_output(guest: &Guest, client: &mut Command, what: &str) -> String {
    let output = client
        .output()
        .unwrap_or_else(|e| panic!("{what} does not start: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    print!("{stdout}");
    eprint!("{stderr}");
    assert!(
        output.status.success(),
        "{what} failed against kvstore:\n{stdout}\n{stderr}\nkvstore's console:\n{}",
        guest.serial()
    );
    stdout
}

/// Starts the log's first rewrite (`BGREWRITEAOF`) and waits until
/// `INFO persistence` counts it done: what is written after this goes to
/// the new log.
pub fn first_rewrite(s: &mut TcpStream) {
    assert_eq!(
        ask(s, &["BGREWRITEAOF"]),
        "+Background append only file rewriting started"
    );
    while !ask(s, &["INFO", "persistence"]).contains("aof_rewrites:1") {
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A free local port, for a forward to the guest.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// kvstore built with `args` for `board` into the test's own folder under
/// target/test-images: the image and that folder.
pub fn build(test: &str, board: Board, args: &[&str]) -> (Built, PathBuf) {
    let root = workspace_root();
    let out = root.join("target/test-images").join(test);
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let built = build_to(&root, "kvstore", board, &args, &out).expect("image builds");
    (built, out)
}

impl Guest {
    /// Boots kvstore with its default settings (see [`Guest::start_with`]).
    pub fn start(test: &str) -> Guest {
        Self::start_with(test, &[])
    }

    /// Boots kvstore with `args`; the NVMe disk in the test's directory is
    /// kept between boots of the same test.
    pub fn start_with(test: &str, args: &[&str]) -> Guest {
        Self::start_on(test, args, None)
    }

    /// Like [`Guest::start_with`], on a disk of `disk_size` bytes when the
    /// disk is new.
    pub fn start_on(test: &str, args: &[&str], disk_size: Option<u64>) -> Guest {
        Self::start_opts(
            test,
            args,
            RunOptions {
                disk_size,
                ..RunOptions::default()
            },
        )
    }

    /// Boots kvstore with `args` and `options` (the network is added here).
    pub fn start_opts(test: &str, args: &[&str], options: RunOptions) -> Guest {
        super::require_qemu();
        let (built, out) = build(test, Board::QemuVirt, args);
        faultline_image::qemu::ensure_disk(&built, options.disk_size).unwrap();
        let port = free_port();
        let net = format!("user,id=n0,hostfwd=tcp:127.0.0.1:{port}-:6379");
        let extra = ["-netdev", &net, "-device", "virtio-net-pci,netdev=n0"]
            .map(String::from)
            .to_vec();
        let options = RunOptions { extra, ..options };
        Self::spawn(&built, &options, &out, port, Stdio::inherit())
    }

    /// Boots kvstore on `board` with the runner's own port forward (the
    /// board's NIC: virtio-net, or the ZynqMP's GEM0 on zcu102).
    pub fn start_on_board(test: &str, board: Board, args: &[&str]) -> Guest {
        super::require_qemu();
        let (built, out) = build(test, board, args);
        faultline_image::qemu::ensure_disk(&built, None).unwrap();
        let port = free_port();
        let options = RunOptions {
            port: Some(port),
            ..RunOptions::default()
        };
        Self::spawn(&built, &options, &out, port, Stdio::null())
    }

    /// QEMU running `built` with `options`, the serial console written to
    /// `out/serial.log`, its own errors to `stderr`; `port` reaches 6379.
    fn spawn(built: &Built, options: &RunOptions, out: &Path, port: u16, stderr: Stdio) -> Guest {
        let log = out.join("serial.log");
        let mut cmd = qemu_command(built, options).unwrap();
        cmd.stdin(Stdio::null())
            .stdout(std::fs::File::create(&log).unwrap())
            .stderr(stderr);
        Guest {
            child: cmd.spawn().expect("QEMU starts"),
            port,
            log,
        }
    }

    /// Kills QEMU at once, as a power cut would.
    pub fn kill(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.serial()
    }

    /// Waits (up to a minute) for the guest to end; its exit status and
    /// what it printed.
    pub fn exit_status(mut self) -> (Option<i32>, String) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return (status.code(), self.serial());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("the guest did not exit; serial log:\n{}", self.serial());
    }

    /// What the guest printed so far.
    pub fn serial(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Connects once the guest says it is ready (within a minute).
    pub fn connect(&self) -> TcpStream {
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

/// Removes the NVMe disk of `test`'s guest, so that it boots with an empty
/// log.
pub fn fresh_disk(test: &str) {
    let disk = workspace_root()
        .join("target/test-images")
        .join(test)
        .join("kvstore.disk");
    let _ = std::fs::remove_file(disk);
}

/// A request in RESP: `args` as an array of bulk strings.
pub fn command(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend(format!("${}\r\n{a}\r\n", a.len()).into_bytes());
    }
    out
}

/// Sends `args` and reads one reply of a simple type (status, error,
/// integer) or a bulk string, as its text (`(nil)` for the null bulk).
pub fn ask(s: &mut TcpStream, args: &[&str]) -> String {
    s.write_all(&command(args)).unwrap();
    let line = read_line(s);
    match line.strip_prefix('$') {
        Some("-1") => "(nil)".into(),
        Some(len) => {
            let mut body = vec![0; len.parse::<usize>().unwrap() + 2];
            s.read_exact(&mut body).unwrap();
            String::from_utf8_lossy(&body[..body.len() - 2]).into_owned()
        }
        None => line,
    }
}

/// One reply line, without its CRLF.
pub fn read_line(s: &mut TcpStream) -> String {
    let mut line = Vec::new();
    let mut byte = [0u8];
    while !line.ends_with(b"\r\n") {
        s.read_exact(&mut byte).expect("a reply line");
        line.push(byte[0]);
    }
    String::from_utf8_lossy(&line[..line.len() - 2]).into_owned()
}
