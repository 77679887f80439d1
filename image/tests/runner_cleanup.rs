//! The runner leaves nothing behind: when `faultline-image run` is killed
//! with SIGKILL, as CI timeouts and `timeout -s KILL` kill it, the QEMU it
//! started (in a process group of its own) dies with it and frees its port.

mod common;

use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_faultline-image");

/// The first build of kvstore (release, LTO) takes minutes on a small machine.
const READY_WITHIN: Duration = Duration::from_secs(1200);

/// How long the kernel may take to kill and the system to reap the
/// children once the runner is dead.
const GONE_WITHIN: Duration = Duration::from_secs(15);

/// A process as `/proc/<pid>/stat` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Proc {
    pid: u32,
    ppid: u32,
    /// Its command name.
    comm: String,
    /// Start time in clock ticks after boot: with the pid, names the
    /// process even if the pid is reused.
    start: u64,
    /// One-letter state; `Z` (zombie) and `X` (dead) are not running.
    state: char,
}

/// Reads one process's `/proc/<pid>/stat`; `None` once it is gone.
fn proc_stat(pid: u32) -> Option<Proc> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) state ppid ..."; comm may hold spaces and parentheses.
    let (head, rest) = stat.rsplit_once(')')?;
    let comm = head.split_once('(')?.1.to_string();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(Proc {
        pid,
        ppid: fields.get(1)?.parse().ok()?,
        comm,
        // Field 22 of the line, the 20th after the command name.
        start: fields.get(19)?.parse().ok()?,
        state: fields.first()?.chars().next()?,
    })
}

/// The processes whose parent is `parent`.
fn children_of(parent: u32) -> Vec<Proc> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        if let Some(p) = proc_stat(pid) {
            if p.ppid == parent {
                found.push(p);
            }
        }
    }
    found
}

/// Whether `p` (the same process, not a reuse of its pid) still runs: any
/// of its threads does. A killed QEMU's main thread is a zombie while its
/// other threads still exit, and its sockets close with the last of them.
fn still_running(p: &Proc) -> bool {
    if proc_stat(p.pid).is_none_or(|now| now.start != p.start) {
        return false;
    }
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{}/task", p.pid)) else {
        return false;
    };
    tasks.flatten().any(|task| {
        std::fs::read_to_string(task.path().join("stat")).is_ok_and(|stat| {
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, r)| r.trim_start().chars().next());
            !matches!(state, Some('Z' | 'X') | None)
        })
    })
}

/// The runner in a process group of its own, SIGKILLed as a group when
/// dropped (so a failing test leaves nothing either).
struct Runner {
    child: Child,
    killed: bool,
}

impl Runner {
    /// SIGKILL to the runner's process group (its pid), then reaps the runner.
    fn kill_group(&mut self) {
        if std::mem::replace(&mut self.killed, true) {
            return;
        }
        let pgid = self.child.id();
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{pgid}")])
            .status();
        let _ = self.child.wait();
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        self.kill_group();
    }
}

/// A local TCP port nobody listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts `faultline-image run APP ARGS` (`args`: APP first) in a process group of its own and
/// waits until it has printed a line containing each of `ready`; returns
/// what it printed.
fn start_runner(args: &[&str], ready: &[&str]) -> (Runner, String) {
    common::require_qemu();
    let mut cmd = Command::new(BIN);
    // The timeout goes right after the app: what follows `--` is the app's.
    let (app, rest) = args.split_first().expect("an app");
    cmd.args(["run", app])
        .args(["--timeout", &READY_WITHIN.as_secs().to_string()])
        .args(rest)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut runner = Runner {
        child: cmd.spawn().expect("faultline-image starts"),
        killed: false,
    };
    let (tx, rx) = mpsc::channel();
    let stdout = runner.child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + READY_WITHIN;
    let mut output = String::new();
    let mut waiting: Vec<&str> = ready.to_vec();
    while !waiting.is_empty() {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => {
                waiting.retain(|text| !line.contains(text));
                output += &line;
                output.push('\n');
            }
            Err(e) => panic!("never printed {waiting:?} ({e}); output:\n{output}"),
        }
    }
    (runner, output)
}

/// Waits until none of `children` runs; fails (killing what is left) if
/// that takes longer than [`GONE_WITHIN`].
fn assert_gone(children: &[Proc]) {
    let deadline = Instant::now() + GONE_WITHIN;
    loop {
        let left: Vec<&Proc> = children.iter().filter(|p| still_running(p)).collect();
        if left.is_empty() {
            break;
        }
        if Instant::now() >= deadline {
            // Fail, but leave nothing behind either.
            for p in &left {
                let _ = Command::new("kill")
                    .args(["-KILL", &p.pid.to_string()])
                    .status();
            }
            panic!(
                "still running {} s after the runner was killed: {left:?}",
                GONE_WITHIN.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// How many of `children` have a command name starting with `name`.
fn count(children: &[Proc], name: &str) -> usize {
    children.iter().filter(|p| p.comm.starts_with(name)).count()
}

/// What CI timeouts do: SIGKILL to the whole process group. QEMU is in a
/// group of its own (so that Ctrl-C reaches only the runner) and must still die.
#[test]
fn killing_the_runners_process_group_kills_qemu_and_frees_its_port() {
    let port = free_port();
    let port_arg = port.to_string();
    let (mut runner, output) = start_runner(&["kvstore", "--port", &port_arg], &["ready on port"]);
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_ok(),
        "the guest is ready but port {port} is not forwarded; output:\n{output}"
    );
    let children = children_of(runner.child.id());
    assert_eq!(
        count(&children, "qemu-system"),
        1,
        "the runner's children: {children:?}"
    );
    runner.kill_group();
    assert_gone(&children);
    assert!(
        TcpListener::bind(("127.0.0.1", port)).is_ok(),
        "port {port} is still taken after the runner and its children died"
    );
}

/// A multi-node run killed by SIGKILL to the runner alone (`kill -9 PID`,
/// the OOM killer): its QEMUs and RDMA engines share its process group, so
/// only the death signal ends them. The stencil, given far more iterations
/// than it gets time for, keeps both nodes busy.
#[test]
fn killing_a_multi_node_runner_kills_its_qemus_and_engines() {
    let (mut runner, output) = start_runner(
        &["stencil", "--nodes", "2", "--", "128", "128", "1000000"],
        &["[n0] stencil: ", "[n1] stencil: "],
    );
    let children = children_of(runner.child.id());
    // The kernel keeps 15 bytes of a command name.
    let engine = &faultline_image::cluster::ENGINE[..15];
    assert!(
        count(&children, "qemu-system") == 2 && count(&children, engine) == 2,
        "not two QEMUs and two engines among the runner's children: {children:?}\n{output}"
    );
    runner.child.kill().unwrap();
    let _ = runner.child.wait();
    assert_gone(&children);
}
