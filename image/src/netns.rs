//! A private Ethernet link for a cluster's RDMA engines: every node gets a
//! network namespace of its own with one interface and its own IPv4
//! address, and the interfaces meet at a bridge in a namespace of its own.
//! The engines share nothing but this link.
//!
//! ```text
//!  namespace "bridge"            namespace of node r
//!   br0 ── v<r> ═══ veth ═══════ eth0  10.47.0.<r+1>/24, MTU 9000
//!       └─ v<r+1> ═════════════  (the next node)
//!       └─ vx ══════════════════ eth0  10.47.0.250 (an intruder, on request)
//! ```
//!
//! A namespace lives as long as a process in it: each is held by a
//! `sleep` started under `unshare --net`, and the engines join theirs with
//! `nsenter`. When the holders die (dropped here, or killed with the image
//! tool), the namespaces, the veth pairs and the bridge go with them: no
//! name is left in `/run/netns`, nothing to clean up by hand.
//!
//! Needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN), `unshare` and `nsenter`
//! (util-linux) and `ip` (iproute2). Without them a cluster does not start,
//! with a message saying which step failed: there is no fallback.

use crate::error::{Error, Result};
use std::net::Ipv4Addr;
use std::process::{Child, Command, Stdio};

/// The link's subnet: node `r` is 10.47.0.(r+1).
pub fn node_addr(rank: u16) -> Ipv4Addr {
    Ipv4Addr::new(10, 47, 0, (rank + 1) as u8)
}

/// The address of the intruder namespace ([`Link::new`] with `intruder`).
pub const INTRUDER_ADDR: Ipv4Addr = Ipv4Addr::new(10, 47, 0, 250);

/// MTU of every interface: a RoCE packet of the largest path MTU (4096)
/// with its headers fits.
pub const LINK_MTU: u32 = 9000;

/// A process that keeps one network namespace alive.
struct Holder {
    child: Child,
}

impl Holder {
    fn start() -> Result<Self> {
        let mut cmd = Command::new("unshare");
        cmd.args(["--net", "--", "sleep", "infinity"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        // The namespace goes when the image tool goes, however it dies.
        let child = crate::child::dies_with_parent(&mut cmd)
            .spawn()
            .map_err(|e| {
                Error::Options(format!(
                    "cannot start `unshare --net` for the cluster's network namespaces ({e}); \
                 multi-node runs need util-linux's unshare and nsenter and root"
                ))
            })?;
        let h = Self { child };
        // The namespace exists once unshare has exec'd sleep.
        let ns = format!("/proc/{}/ns/net", h.pid());
        let mine = std::fs::read_link("/proc/self/ns/net").ok();
        for _ in 0..200 {
            let theirs = std::fs::read_link(&ns).ok();
            let exe = std::fs::read_link(format!("/proc/{}/exe", h.pid())).ok();
            if theirs.is_some() && theirs != mine && exe.is_some_and(|e| e.ends_with("sleep")) {
                return Ok(h);
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        Err(Error::Options(
            "`unshare --net` did not make a network namespace (multi-node runs need root)".into(),
        ))
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `ip ARGS` inside the namespace of `pid`.
fn ip_in(pid: u32, args: &[&str]) -> Result<()> {
    let pid = pid.to_string();
    let out = Command::new("nsenter")
        .args(["-t", &pid, "-n", "--", "ip"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::Options(format!("cannot run `nsenter ... ip` ({e})")))?;
    if !out.status.success() {
        return Err(Error::Options(format!(
            "setting up the cluster's link: `ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// What [`Link::measure`] found.
#[derive(Clone, Copy, Debug)]
pub struct LinkFigures {
    /// Bytes of each throughput datagram (a full RoCE WRITE packet).
    pub packet: usize,
    /// One-way UDP throughput, bytes per second, as received.
    pub udp_bytes_per_s: f64,
    /// Bytes of each round-trip datagram (a 64-byte WRITE Only).
    pub small: usize,
    /// Median UDP round trip, microseconds.
    pub rtt_us: f64,
}

impl LinkFigures {
    /// The `[link]` lines (bench/rdmabench.sh reads them).
    pub fn lines(&self) -> String {
        format!(
            "raw UDP one way, {}-byte datagrams: {:.1} MB/s\nUDP round trip, {}-byte datagrams: median {:.1} us\n",
            self.packet,
            self.udp_bytes_per_s / 1e6,
            self.small,
            self.rtt_us
        )
    }
}

/// Runs `f` on a thread of its own that has joined the network namespace
/// of process `pid` (setns moves only the calling thread): sockets it makes
/// live on that namespace's link.
pub fn in_namespace<T: Send>(pid: u32, f: impl FnOnce() -> T + Send) -> std::io::Result<T> {
    let ns = std::fs::File::open(format!("/proc/{pid}/ns/net"))?;
    std::thread::scope(|s| {
        s.spawn(move || {
            use std::os::fd::AsRawFd;
            // SAFETY: setns takes a namespace fd we own and a constant; it
            // changes only this thread's network namespace, and the thread
            // ends with the scope.
            let r = unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) };
            if r != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(f())
        })
        .join()
        .map_err(|_| std::io::Error::other("the namespace thread panicked"))?
    })
}

/// The TAP port Linux guest `i`'s QEMU opens on the bridge.
pub fn linux_tap(i: usize) -> String {
    format!("tapl{i}")
}

/// The address Linux guest `i` takes (its init sets it): 10.47.0.100, .101, …
pub fn linux_addr(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 47, 0, 100 + i as u8)
}

/// The most Linux guests a link takes.
pub const MAX_LINUX: usize = 8;

/// `cmd` (program, arguments, environment, directory) run by nsenter in
/// the network namespace of process `pid`.
fn nsenter(pid: u32, cmd: &Command) -> Command {
    let mut out = Command::new("nsenter");
    out.args(["-t", &pid.to_string(), "-n", "--"])
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => out.env(k, v),
            None => out.env_remove(k),
        };
    }
    if let Some(d) = cmd.get_current_dir() {
        out.current_dir(d);
    }
    out
}

/// The link of one cluster; dropping it removes everything it made.
pub struct Link {
    nodes: Vec<Holder>,
    /// TAP ports on the bridge for Linux guests ([`linux_tap`]).
    linux_taps: usize,
    intruder: Option<Holder>,
    // Dropped last: the bridge outlives the ports that go with the nodes.
    _bridge: Holder,
}

impl Link {
    /// Makes the namespaces of `nodes` nodes (and of an intruder, for
    /// tests that attack the link) joined by a bridge.
    pub fn new(nodes: u16, intruder: bool) -> Result<Self> {
        Self::with_linux_taps(nodes, intruder, 0)
    }

    /// [`Link::new`], and `linux_taps` TAP ports ([`linux_tap`]) on the
    /// bridge, for QEMUs that run in the bridge's namespace
    /// ([`Link::in_bridge`]).
    pub fn with_linux_taps(nodes: u16, intruder: bool, linux_taps: usize) -> Result<Self> {
        if linux_taps > MAX_LINUX {
            return Err(Error::Options(format!("at most {MAX_LINUX} Linux guests")));
        }
        let bridge = Holder::start()?;
        let b = bridge.pid();
        ip_in(b, &["link", "set", "lo", "up"])?;
        ip_in(b, &["link", "add", "br0", "type", "bridge"])?;
        ip_in(b, &["link", "set", "br0", "up"])?;
        let join = |name: &str, addr: Ipv4Addr| -> Result<Holder> {
            let h = Holder::start()?;
            let mtu = LINK_MTU.to_string();
            let pid = h.pid().to_string();
            ip_in(
                b,
                &[
                    "link", "add", name, "mtu", &mtu, "type", "veth", "peer", "name", "eth0",
                    "netns", &pid,
                ],
            )?;
            ip_in(b, &["link", "set", name, "master", "br0", "up"])?;
            let cidr = format!("{addr}/24");
            ip_in(h.pid(), &["addr", "add", &cidr, "dev", "eth0"])?;
            ip_in(h.pid(), &["link", "set", "eth0", "mtu", &mtu, "up"])?;
            ip_in(h.pid(), &["link", "set", "lo", "up"])?;
            Ok(h)
        };
        let mut holders = Vec::new();
        for rank in 0..nodes {
            holders.push(join(&format!("v{rank}"), node_addr(rank))?);
        }
        let intruder = if intruder {
            Some(join("vx", INTRUDER_ADDR)?)
        } else {
            None
        };
        for i in 0..linux_taps {
            let mtu = LINK_MTU.to_string();
            let tap = linux_tap(i);
            ip_in(b, &["tuntap", "add", &tap, "mode", "tap"])?;
            ip_in(
                b,
                &["link", "set", &tap, "mtu", &mtu, "master", "br0", "up"],
            )?;
        }
        Ok(Self {
            nodes: holders,
            linux_taps,
            intruder,
            _bridge: bridge,
        })
    }

    /// The addresses of the nodes, by rank.
    pub fn addrs(&self) -> Vec<Ipv4Addr> {
        (0..self.nodes.len() as u16).map(node_addr).collect()
    }

    /// `program` as a command that runs in node `rank`'s namespace.
    pub fn command_in(&self, rank: u16, program: &std::path::Path) -> Command {
        let mut cmd = Command::new("nsenter");
        cmd.args([
            "-t",
            &self.nodes[usize::from(rank)].pid().to_string(),
            "-n",
            "--",
        ])
        .arg(program);
        cmd
    }

    /// `cmd` as it would run, but in node `rank`'s namespace.
    pub fn wrap_in(&self, rank: u16, cmd: &Command) -> Command {
        nsenter(self.nodes[usize::from(rank)].pid(), cmd)
    }

    /// `cmd` as it would run, but in the bridge's namespace (where the
    /// Linux guests' TAP ports are, if the link has them).
    pub fn in_bridge(&self, cmd: &Command) -> Result<Command> {
        if self.linux_taps == 0 {
            return Err(Error::Options(
                "this link has no TAP port for a Linux guest".into(),
            ));
        }
        Ok(nsenter(self._bridge.pid(), cmd))
    }

    /// What the link between nodes 0 and 1 gives by itself, for `mtu`-byte
    /// RoCE payloads: one-way UDP throughput with datagrams the size of a
    /// full RoCE WRITE packet (BTH, payload, ICRC) for one second, and the
    /// median round trip of a datagram the size of a 64-byte WRITE Only.
    /// The benchmark's ratios are taken against these, measured in the same
    /// run between the same namespaces as the engines.
    pub fn measure(&self, mtu: usize) -> Result<LinkFigures> {
        let (p0, p1) = (self.nodes[0].pid(), self.nodes[1].pid());
        let err = |e: std::io::Error| Error::Options(format!("measuring the link: {e}"));
        let packet = 12 + mtu + 4;
        let small = 12 + 16 + 64 + 4;
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let bytes = std::thread::scope(|s| {
            let rx = s.spawn(|| {
                in_namespace(p1, || -> std::io::Result<u64> {
                    let sock = std::net::UdpSocket::bind((node_addr(1), 4792))?;
                    sock.set_read_timeout(Some(std::time::Duration::from_millis(300)))?;
                    let _ = ready_tx.send(());
                    let mut buf = vec![0u8; 65536];
                    let mut n = 0u64;
                    // Echo small datagrams (the round trip), count the rest.
                    while let Ok((k, from)) = sock.recv_from(&mut buf) {
                        if k == small {
                            sock.send_to(&buf[..k], from)?;
                        } else {
                            n += k as u64;
                        }
                    }
                    Ok(n)
                })
            });
            let _ = ready_rx.recv();
            let tx = in_namespace(p0, || -> std::io::Result<(f64, Vec<f64>)> {
                let sock = std::net::UdpSocket::bind((node_addr(0), 4792))?;
                sock.set_read_timeout(Some(std::time::Duration::from_millis(100)))?;
                let to = (node_addr(1), 4792);
                let mut rtts = Vec::new();
                let mut buf = [0u8; 256];
                let msg = vec![0x5au8; small];
                for _ in 0..2000 {
                    let t = std::time::Instant::now();
                    sock.send_to(&msg, to)?;
                    if sock.recv(&mut buf).is_ok() {
                        rtts.push(t.elapsed().as_secs_f64() * 1e6);
                    }
                }
                let msg = vec![0x5au8; packet];
                let start = std::time::Instant::now();
                while start.elapsed() < std::time::Duration::from_secs(1) {
                    let _ = sock.send_to(&msg, to);
                }
                Ok((start.elapsed().as_secs_f64(), rtts))
            });
            (tx, rx.join())
        });
        let (secs, mut rtts) = bytes.0.map_err(err)?.map_err(err)?;
        let got = bytes
            .1
            .map_err(|_| Error::Options("the link measurement's receiver panicked".into()))?
            .map_err(err)?
            .map_err(err)?;
        rtts.sort_by(|a, b| a.total_cmp(b));
        Ok(LinkFigures {
            packet,
            udp_bytes_per_s: got as f64 / secs,
            small,
            rtt_us: rtts.get(rtts.len() / 2).copied().unwrap_or(f64::NAN),
        })
    }

    /// The pid of a process in the intruder's namespace, if there is one
    /// (`/proc/<pid>/ns/net` is its namespace).
    pub fn intruder_pid(&self) -> Option<u32> {
        self.intruder.as_ref().map(Holder::pid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_link_is_measured_between_nodes_0_and_1() {
        let link = Link::new(2, false).expect("namespaces");
        let f = link.measure(1024).expect("a measurement");
        assert_eq!((f.packet, f.small), (1040, 96));
        assert!(f.udp_bytes_per_s > 1e6, "{f:?}");
        assert!(f.rtt_us > 0.0 && f.rtt_us < 100_000.0, "{f:?}");
        assert!(f.lines().contains("raw UDP one way, 1040-byte datagrams"));
    }

    #[test]
    fn nodes_get_their_own_addresses_and_reach_each_other_only_on_the_link() {
        let link = Link::new(2, false).expect("namespaces (the tests run as root)");
        assert_eq!(
            link.addrs(),
            vec![Ipv4Addr::new(10, 47, 0, 1), Ipv4Addr::new(10, 47, 0, 2)]
        );
        // Node 1 listens on its address; node 0 sends from its own.
        let (tx, rx) = std::sync::mpsc::channel();
        let (p0, p1) = (link.nodes[0].pid(), link.nodes[1].pid());
        let got = std::thread::scope(|s| {
            let listener = s.spawn(|| {
                in_namespace(p1, || {
                    let sock = std::net::UdpSocket::bind("10.47.0.2:4791").unwrap();
                    sock.set_read_timeout(Some(std::time::Duration::from_secs(5)))
                        .unwrap();
                    tx.send(()).unwrap();
                    let mut buf = [0u8; 16];
                    let (n, from) = sock.recv_from(&mut buf).unwrap();
                    (buf[..n].to_vec(), from.ip())
                })
                .unwrap()
            });
            rx.recv().unwrap();
            in_namespace(p0, || {
                let sock = std::net::UdpSocket::bind("10.47.0.1:0").unwrap();
                sock.send_to(b"hi", "10.47.0.2:4791").unwrap();
            })
            .unwrap();
            listener.join().unwrap()
        });
        let from = std::net::IpAddr::V4(Ipv4Addr::new(10, 47, 0, 1));
        assert_eq!(got, (b"hi".to_vec(), from));
        assert!(
            std::net::UdpSocket::bind("10.47.0.1:0").is_err(),
            "the node addresses exist only in their namespaces"
        );
        let ns = |pid: u32| std::fs::read_link(format!("/proc/{pid}/ns/net")).ok();
        let n0 = ns(link.nodes[0].pid());
        assert!(n0.is_some());
        assert_ne!(n0, std::fs::read_link("/proc/self/ns/net").ok(), "not ours");
        assert_ne!(n0, ns(link.nodes[1].pid()));
        let pids: Vec<u32> = link.nodes.iter().map(Holder::pid).collect();
        drop(link);
        for pid in pids {
            assert!(
                !std::path::Path::new(&format!("/proc/{pid}")).exists()
                    || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                        .is_ok_and(|s| s.contains(") Z ")),
                "holder {pid} is gone"
            );
        }
    }
}
