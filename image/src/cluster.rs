//! Running one app on several nodes: N QEMU instances, each with its own RDMA
//! engine process, the engines wired into one fabric.
//!
//! ```text
//!  faultline-image run APP --nodes 2
//!   ├─ netns::Link: a namespace per node, joined by a bridge (netns.rs)
//!   ├─ [ns of node 0] faultline-rdma-engine --rank 0 --nodes 10.47.0.1,10.47.0.2 ─┐ RoCEv2,
//!   ├─ [ns of node 1] faultline-rdma-engine --rank 1 --nodes 10.47.0.1,10.47.0.2 ─┘ UDP 4791
//!   ├─ qemu (node 0) ── vhost-user d/n0.sock      output prefixed "[n0] "
//!   └─ qemu (node 1) ── vhost-user d/n1.sock      output prefixed "[n1] "
//! ```
//!
//! Each node learns its rank and the node count from its engine (the
//! engine's MAC ends with the rank, and its HELLO answer carries both). The
//! run succeeds only if every node exits with status 0; when one node fails,
//! the others get [`FAILURE_GRACE`] to finish, then are stopped.
//!
//! The engines share nothing but the link: each reaches only its own
//! node's memory (through that node's SMMU), and every byte between nodes
//! travels in RoCEv2 packets.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use crate::build::{describe, Built};
use crate::error::{Error, Result};
use crate::qemu::{qemu_command, RdmaAttach, RunOptions};
use crate::run::{run_watched, RunOutcome};

/// Most nodes a run may have (ranks are one byte of the MAC; this machine
/// class runs 2–4 comfortably).
pub const MAX_NODES: u16 = 16;
/// How long the other nodes may go on after one node failed.
pub const FAILURE_GRACE: Duration = Duration::from_secs(10);
/// How long an engine may take to start listening.
const ENGINE_START: Duration = Duration::from_secs(20);
/// The engine's package and binary name.
pub const ENGINE: &str = "faultline-rdma-engine";

/// Options of the fabric itself.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FabricOptions {
    /// Fraction of packets each engine drops on purpose (loss injection).
    pub loss: Option<f64>,
    /// Fraction of packets each engine holds back behind the next one.
    pub reorder: Option<f64>,
    /// Fraction of packets each engine sends twice.
    pub duplicate: Option<f64>,
    /// Path MTU of the engines (1024 when `None`).
    pub mtu: Option<u32>,
    /// An extra namespace on the link that is no node (tests attack the
    /// engines from it): its holder's pid is written to `intruder.pid` in
    /// the socket directory.
    pub intruder: bool,
    /// Capture node 0's RoCE packets (tcpdump in its namespace) to this file.
    pub capture: Option<PathBuf>,
    /// Measure the link between nodes 0 and 1 before booting (printed as
    /// `[link]` lines, see [`crate::netns::Link::measure`]).
    pub link_bench: bool,
    /// Linux nodes with soft-RoCE on the link, each running its script
    /// (`crate::linux_peer`); with any, the Faultline nodes boot in their
    /// namespaces, each with TCP port [`OOB_PORT`] of its address
    /// forwarded to its guest.
    pub linux_peers: Vec<crate::linux_peer::LinuxPeer>,
    /// Directory for the engines' sockets (`n<rank>.sock`); a fresh one in
    /// the system's temporary directory when `None`. A test that needs to
    /// find one engine (to kill it) names its own.
    pub socket_dir: Option<PathBuf>,
}

/// The TCP port Linux's RDMA programs exchange their numbers on
/// (rdma-core's examples and perftest both default to it).
pub const OOB_PORT: u16 = 18515;

/// How a multi-node run ended.
#[derive(Clone, Debug)]
pub struct ClusterOutcome {
    /// Each node's QEMU run, by rank.
    pub nodes: Vec<RunOutcome>,
    /// What each engine printed, by rank.
    pub engines: Vec<String>,
    /// The Linux peers' runs.
    pub linux: Vec<RunOutcome>,
}

impl ClusterOutcome {
    /// Whether every node exited with status 0 in time (and every Linux
    /// peer's script too).
    pub fn success(&self) -> bool {
        self.nodes.iter().all(RunOutcome::success)
            && self
                .linux
                .iter()
                .all(|l| l.success() && l.output.contains("rxe-guest: script exit 0"))
    }

    /// All output, node by node, each line prefixed with its node.
    pub fn output(&self) -> String {
        let mut all = String::new();
        for (rank, node) in self.nodes.iter().enumerate() {
            for line in node.output.lines() {
                all += &format!("[n{rank}] {line}\n");
            }
        }
        for (i, linux) in self.linux.iter().enumerate() {
            for line in linux.output.lines() {
                all += &format!("[linux{i}] {line}\n");
            }
        }
        for (rank, engine) in self.engines.iter().enumerate() {
            for line in engine.lines() {
                all += &format!("[e{rank}] {line}\n");
            }
        }
        all
    }
}

/// Builds the engine (host release build) and returns its path.
pub fn build_engine(root: &Path) -> Result<PathBuf> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root)
        .args(["build", "--locked", "--release", "-q", "-p", ENGINE]);
    let status = cmd
        .status()
        .map_err(|e| Error::io(format!("starting `{}`", describe(&cmd)), e))?;
    if !status.success() {
        return Err(Error::Options(format!(
            "building the RDMA engine failed: `{}`",
            describe(&cmd)
        )));
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    Ok(target.join("release").join(ENGINE))
}

/// Spawns `cmd` (dying with the image tool) with its standard error sent
/// line by line to the returned channel.
fn spawn_with_stderr(cmd: &mut Command) -> Result<(Child, mpsc::Receiver<String>)> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = crate::child::dies_with_parent(cmd)
        .spawn()
        .map_err(|e| Error::io(format!("starting `{}`", describe(cmd)), e))?;
    let stderr = child.stderr.take().expect("piped");
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(|l| l.ok()) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    Ok((child, rx))
}

/// A running engine: the process and its collected stderr.
struct EngineProcess {
    child: Child,
    output: mpsc::Receiver<String>,
}

impl EngineProcess {
    fn start(mut cmd: Command, args: &[String], rank: u16, echo: bool) -> Result<Self> {
        let (mut child, lines) = spawn_with_stderr(cmd.args(args))?;
        let (tx, rx) = mpsc::channel();
        let (ready_tx, ready_rx) = mpsc::channel();
        thread::spawn(move || {
            let mut ready = Some(ready_tx);
            for line in lines {
                if echo {
                    println!("[e{rank}] {line}");
                }
                if line.contains("listening on") {
                    if let Some(r) = ready.take() {
                        let _ = r.send(());
                    }
                }
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        match ready_rx.recv_timeout(ENGINE_START) {
            Ok(()) => Ok(Self { child, output: rx }),
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                let said: Vec<String> = rx.try_iter().collect();
                Err(Error::Options(format!(
                    "RDMA engine {rank} did not start listening: {}",
                    said.join(" / ")
                )))
            }
        }
    }

    /// Stops the engine (if QEMU's exit did not end it) and returns its output.
    fn finish(mut self) -> String {
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        thread::sleep(Duration::from_millis(50));
        self.output.try_iter().collect::<Vec<_>>().join("\n")
    }
}

/// How one QEMU of a cluster is watched: its time limit, whether its
/// lines are echoed, the cluster's stop flag, and where it reports whether
/// it ended well.
struct Watch {
    timeout: Option<Duration>,
    echo: bool,
    stop: Arc<AtomicBool>,
    done: mpsc::Sender<bool>,
}

impl Watch {
    /// Runs `cmd` on a thread of its own, its lines prefixed with `prefix`
    /// when echoed; `ok` says whether its outcome counts as a success.
    fn spawn(
        self,
        cmd: Command,
        prefix: String,
        ok: fn(&RunOutcome) -> bool,
    ) -> thread::JoinHandle<Result<RunOutcome>> {
        thread::spawn(move || {
            let out = run_watched(
                cmd,
                self.timeout,
                self.echo.then_some(prefix.as_str()),
                Some(&self.stop),
                None,
            );
            let _ = self.done.send(out.as_ref().is_ok_and(ok));
            out
        })
    }
}

/// Boots `built` on `nodes` nodes joined by RDMA engines.
pub fn run_cluster(
    root: &Path,
    built: &Built,
    opts: &RunOptions,
    nodes: u16,
    fabric: &FabricOptions,
    timeout: Option<Duration>,
    echo: bool,
) -> Result<ClusterOutcome> {
    if !(1..=MAX_NODES).contains(&nodes) {
        return Err(Error::Options(format!(
            "--nodes must be 1 to {MAX_NODES}, got {nodes}"
        )));
    }
    if built.board != crate::Board::QemuVirt {
        return Err(Error::Options(
            "multi-node runs need qemu-virt (the engine sits behind its SMMUv3)".into(),
        ));
    }
    for rank in 0..nodes {
        crate::qemu::ensure_node_disk(built, rank as u8, opts.disk_size)?;
    }
    let engine = build_engine(root)?;
    let (dir, own_dir) = match &fabric.socket_dir {
        Some(d) => {
            std::fs::create_dir_all(d).map_err(|e| Error::io(d.display().to_string(), e))?;
            (d.clone(), false)
        }
        None => (tempdir()?, true),
    };
    let linux_count = fabric.linux_peers.len();
    let mut linux_files = Vec::new();
    if linux_count > 0 {
        let (kernel, base) = crate::linux_peer::guest_files(root)?;
        for (i, peer) in fabric.linux_peers.iter().enumerate() {
            let initrd = dir.join(format!("linux{i}-initrd"));
            let script = crate::linux_peer::environment(nodes, linux_count, i) + &peer.script;
            crate::linux_peer::initrd_with_script(&base, &script, &initrd)?;
            linux_files.push((kernel.clone(), initrd));
        }
    }
    let link = crate::netns::Link::with_linux_taps(nodes, fabric.intruder, linux_count)?;
    if let Some(pid) = link.intruder_pid() {
        let f = dir.join("intruder.pid");
        std::fs::write(&f, pid.to_string()).map_err(|e| Error::io(f.display().to_string(), e))?;
    }
    let addrs: Vec<String> = link.addrs().iter().map(|a| a.to_string()).collect();
    if fabric.link_bench {
        let mtu = fabric.mtu.unwrap_or(1024) as usize;
        for line in link.measure(mtu)?.lines().lines() {
            println!("[link] {line}");
        }
    }
    let capture = match &fabric.capture {
        Some(file) => Some(start_capture(&link, file)?),
        None => None,
    };
    let mut engines = Vec::new();
    for rank in 0..nodes {
        let socket = dir.join(format!("n{rank}.sock"));
        let mut args = vec![
            "--socket".to_string(),
            socket.display().to_string(),
            "--rank".into(),
            rank.to_string(),
            "--nodes".into(),
            addrs.join(","),
        ];
        for (flag, v) in [
            ("--loss", fabric.loss),
            ("--reorder", fabric.reorder),
            ("--duplicate", fabric.duplicate),
        ] {
            if let Some(v) = v {
                args.extend([flag.into(), v.to_string()]);
            }
        }
        if let Some(mtu) = fabric.mtu {
            args.extend(["--mtu".into(), mtu.to_string()]);
        }
        // A different impairment sequence per engine.
        args.extend(["--seed".into(), (rank + 1).to_string()]);
        engines.push(EngineProcess::start(
            link.command_in(rank, &engine),
            &args,
            rank,
            echo,
        )?);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let (done_tx, done_rx) = mpsc::channel();
    let mut handles = Vec::new();
    for rank in 0..nodes {
        let mut node_opts = opts.clone();
        node_opts.rdma = Some(RdmaAttach {
            socket: dir.join(format!("n{rank}.sock")),
            rank: rank as u8,
        });
        // Every node but the first boots without the host port forward.
        if rank > 0 {
            node_opts.port = None;
        }
        let cmd = if linux_count > 0 {
            // In the node's namespace, where the Linux peer reaches it.
            node_opts.port = None;
            let at = std::net::SocketAddrV4::new(crate::netns::node_addr(rank), OOB_PORT);
            node_opts.forward.push((at, OOB_PORT));
            link.wrap_in(rank, &qemu_command(built, &node_opts)?)
        } else {
            qemu_command(built, &node_opts)?
        };
        let watch = Watch {
            timeout,
            echo,
            stop: Arc::clone(&stop),
            done: done_tx.clone(),
        };
        handles.push(watch.spawn(cmd, format!("[n{rank}] "), RunOutcome::success));
    }
    let mut linux_handles = Vec::new();
    for (i, (kernel, initrd)) in linux_files.iter().enumerate() {
        let cmd = link.in_bridge(&crate::linux_peer::qemu_command(
            kernel,
            initrd,
            i,
            crate::netns::node_addr(0),
        ))?;
        let watch = Watch {
            timeout,
            echo,
            stop: Arc::clone(&stop),
            done: done_tx.clone(),
        };
        linux_handles.push(watch.spawn(cmd, format!("[linux{i}] "), |o| {
            o.success() && o.output.contains("rxe-guest: script exit 0")
        }));
    }
    let waiting = nodes + linux_handles.len() as u16;
    drop(done_tx);
    // The first failure starts the grace period for the others.
    let mut grace_end: Option<Instant> = None;
    let mut finished = 0;
    while finished < waiting {
        let wait = grace_end.map_or(Duration::from_secs(3600), |g| {
            g.saturating_duration_since(Instant::now())
        });
        match done_rx.recv_timeout(wait) {
            Ok(ok) => {
                finished += 1;
                if !ok && grace_end.is_none() {
                    grace_end = Some(Instant::now() + FAILURE_GRACE);
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if grace_end.is_some() {
                    stop.store(true, Ordering::Relaxed);
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let mut outcomes = Vec::new();
    for h in handles {
        outcomes.push(
            h.join()
                .map_err(|_| Error::Options("a node's runner thread panicked".into()))??,
        );
    }
    let mut linux = Vec::new();
    for h in linux_handles {
        linux.push(
            h.join()
                .map_err(|_| Error::Options("a Linux peer's runner thread panicked".into()))??,
        );
    }
    let engines = engines.into_iter().map(EngineProcess::finish).collect();
    if let Some(mut c) = capture {
        // tcpdump writes each packet as it comes (-U): a kill loses none.
        thread::sleep(Duration::from_millis(300));
        let _ = c.kill();
        let _ = c.wait();
    }
    drop(link);
    if own_dir {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(ClusterOutcome {
        nodes: outcomes,
        engines,
        linux,
    })
}

/// Starts tcpdump in node 0's namespace, writing its RoCEv2 packets to
/// `file`; returns once it listens.
fn start_capture(link: &crate::netns::Link, file: &Path) -> Result<Child> {
    let mut cmd = link.command_in(0, Path::new("tcpdump"));
    cmd.args(["-i", "eth0", "-U", "-s", "0", "-w"])
        .arg(file)
        .args(["udp", "port", "4791"]);
    let (mut child, rx) = spawn_with_stderr(&mut cmd)?;
    match rx.recv_timeout(ENGINE_START) {
        Ok(line) if line.contains("listening on") => Ok(child),
        other => {
            let _ = child.kill();
            let _ = child.wait();
            Err(Error::Options(format!(
                "tcpdump did not start in node 0's namespace: {other:?}"
            )))
        }
    }
}

/// A fresh private directory for the engines' sockets.
fn tempdir() -> Result<PathBuf> {
    let base = std::env::temp_dir();
    for i in 0..1000u32 {
        let dir = base.join(format!("faultline-{}-{i}", std::process::id()));
        if std::fs::create_dir(&dir).is_ok() {
            return Ok(dir);
        }
    }
    Err(Error::Options(format!(
        "cannot create a directory in {}",
        base.display()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_is_prefixed_by_node() {
        let node = |s: &str| RunOutcome {
            status: Some(0),
            output: s.into(),
            timed_out: false,
            wall: Duration::ZERO,
        };
        let mut out = ClusterOutcome {
            nodes: vec![node("a\nb\n"), node("c\n")],
            engines: vec!["e".into()],
            linux: Vec::new(),
        };
        assert!(out.success());
        assert_eq!(out.output(), "[n0] a\n[n0] b\n[n1] c\n[e0] e\n");
        // A Linux peer's lines come after the nodes'; its script must end
        // with status 0 for the run to succeed.
        out.linux = vec![node("rxe-guest: script exit 1\n")];
        assert!(!out.success());
        out.linux = vec![node("rxe-guest: script exit 0\n")];
        assert!(out.success());
        assert!(out
            .output()
            .contains("[n1] c\n[linux0] rxe-guest: script exit 0\n[e0] e\n"));
    }
}
