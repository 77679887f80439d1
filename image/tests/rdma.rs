//! Two-node boot tests of RDMA on virtual addresses: two QEMU instances,
//! each with its RDMA engine process, run `rdmatest`, which checks its data
//! byte for byte on both nodes (see apps/rdmatest).

mod common;

use faultline_image::cluster::{run_cluster, ClusterOutcome, FabricOptions};
use faultline_image::{build_to, workspace_root, Board, RunOptions};
use std::process::Command;
use std::time::Duration;

/// Far above a healthy run (tens of seconds), so only a hang trips it.
const TIMEOUT: Duration = Duration::from_secs(240);

fn rdmatest(test: &str, args: &[&str], fabric: FabricOptions) -> ClusterOutcome {
    boot("rdmatest", test, args, 2, fabric)
}

fn boot(app: &str, test: &str, args: &[&str], nodes: u16, fabric: FabricOptions) -> ClusterOutcome {
    common::require_qemu();
    let root = workspace_root();
    let out = root.join("target/test-images").join(test);
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let built = build_to(&root, app, Board::QemuVirt, &args, &out).expect("image builds");
    let opts = RunOptions {
        smp: Some(2),
        args,
        ..RunOptions::default()
    };
    let mut outcome = run_cluster(&root, &built, &opts, nodes, &fabric, Some(TIMEOUT), false)
        .expect("nodes start");
    for node in &mut outcome.nodes {
        node.output = node.output.replace("\r\n", "\n");
    }
    outcome
}

fn expect_ok(outcome: &ClusterOutcome, node: usize, check: &str) {
    let prefix = format!("ok {check}");
    assert!(
        outcome.nodes[node]
            .output
            .lines()
            .any(|l| l.starts_with(&prefix)),
        "node {node} did not pass `{check}`; output:\n{}",
        outcome.output()
    );
}

#[test]
fn two_nodes_write_read_and_copy_through_faults_on_both_sides() {
    let outcome = rdmatest("rdma-two-nodes", &[], FabricOptions::default());
    assert!(outcome.success(), "a node failed:\n{}", outcome.output());
    expect_ok(&outcome, 0, "local-copy-cold");
    expect_ok(&outcome, 0, "remote-write-faults");
    expect_ok(&outcome, 0, "remote-read-evicted");
    expect_ok(&outcome, 0, "engine-writes-over-zero-block");
    expect_ok(&outcome, 0, "remote-access-error");
    expect_ok(&outcome, 1, "remote-write-landed");
    expect_ok(&outcome, 1, "nothing-corrupted");
}

#[test]
fn a_peer_reaches_only_what_was_exposed_with_the_rights_given() {
    // Node 1 exposes some regions and revokes one; node 0 tries every way
    // around the keys. Each refused request must end with the protection
    // status at node 0, and node 1 checks its bytes (and a `.data` word at
    // the same address on both nodes) are unchanged.
    let outcome = rdmatest("rdma-protection", &[], FabricOptions::default());
    assert!(outcome.success(), "a node failed:\n{}", outcome.output());
    for check in [
        "write-before-revocation",
        "write-after-revocation-is-refused",
        "write-past-the-exposed-end-is-refused",
        "write-before-the-exposed-start-is-refused",
        "write-to-kernel-data-is-refused",
        "write-with-a-wrong-key-is-refused",
        "write-to-read-only-memory-is-refused",
        "read-of-write-only-memory-is-refused",
        "read-past-the-exposed-end-is-refused",
        "read-with-a-wrong-key-is-refused",
        "remote-write-faults",
    ] {
        expect_ok(&outcome, 0, check);
    }
    expect_ok(&outcome, 1, "revoke");
    expect_ok(&outcome, 1, "nothing-corrupted");
    assert!(
        !outcome.output().contains("FAIL"),
        "a check failed:\n{}",
        outcome.output()
    );
}

#[test]
fn the_local_engine_reaches_only_what_it_was_granted() {
    // The engine is confined too: a WRITE from a region never granted to
    // it, and a READ into a kernel static, fail with an isolation fault at
    // the initiator, and the static keeps its value.
    let outcome = rdmatest("rdma-isolation", &[], FabricOptions::default());
    assert!(outcome.success(), "a node failed:\n{}", outcome.output());
    expect_ok(&outcome, 0, "local-write-from-ungranted-memory-is-isolated");
    expect_ok(&outcome, 0, "local-read-into-kernel-data-is-isolated");
    expect_ok(&outcome, 1, "nothing-corrupted");
}

#[test]
fn loss_reordering_and_duplication_together_still_deliver_every_byte() {
    let fabric = FabricOptions {
        loss: Some(0.01),
        reorder: Some(0.05),
        duplicate: Some(0.01),
        ..FabricOptions::default()
    };
    let outcome = rdmatest("rdma-loss", &[], fabric);
    assert!(outcome.success(), "a node failed:\n{}", outcome.output());
    expect_ok(&outcome, 0, "remote-write-faults");
    expect_ok(&outcome, 0, "remote-read-evicted");
    expect_ok(&outcome, 0, "engine-writes-over-zero-block");
    expect_ok(&outcome, 1, "remote-write-landed");
}

#[test]
fn a_dead_engine_is_a_clear_error_not_a_hang() {
    // Kill node 1's engine a few seconds in; node 0 writes to it later.
    let dir = workspace_root().join("target/test-images/rdma-peer-dies/sockets");
    let socket = dir.join("n1.sock");
    let killer = std::thread::spawn(move || {
        let pattern = format!("faultline-rdma-engine --socket {}", socket.display());
        let running = || {
            Command::new("pgrep")
                .args(["-f", &pattern])
                .output()
                .is_ok_and(|o| o.status.success())
        };
        // The image is built first: wait for the engine, then for the nodes to boot.
        let start = std::time::Instant::now();
        while !running() && start.elapsed() < TIMEOUT {
            std::thread::sleep(Duration::from_millis(200));
        }
        std::thread::sleep(Duration::from_secs(3));
        Command::new("pkill")
            .args(["-KILL", "-f", &pattern])
            .status()
            .map(|s| s.success())
    });
    let fabric = FabricOptions {
        socket_dir: Some(dir),
        ..FabricOptions::default()
    };
    let outcome = rdmatest("rdma-peer-dies", &["peer-dies"], fabric);
    assert_eq!(killer.join().ok().and_then(|r| r.ok()), Some(true));
    expect_ok(&outcome, 0, "peer-unreachable");
    assert_eq!(outcome.nodes[0].status, Some(0), "{}", outcome.output());
    // Node 1 lost its own engine: its wait gave up, the engine's stream was
    // cut off in the SMMU, and later verbs fail at once.
    expect_ok(&outcome, 1, "own-engine-silent-is-cut-off");
    assert_eq!(outcome.nodes[1].status, Some(0), "{}", outcome.output());
}

/// The pid that holds the intruder's namespace of the cluster whose
/// sockets are in `dir`, once it runs.
fn intruder_pid(dir: &std::path::Path) -> Option<u32> {
    let start = std::time::Instant::now();
    while start.elapsed() < TIMEOUT {
        if let Some(pid) = std::fs::read_to_string(dir.join("intruder.pid"))
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return Some(pid);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    None
}

/// Packets an attacker on the link might send: garbage, truncated and
/// oversized ones, and RoCEv2 headers of every opcode for both nodes' queue
/// pairs with random PSNs, keys, addresses and lengths (their ICRCs are
/// right only by chance: the engines check them first).
fn hostile_packet(i: u64) -> Vec<u8> {
    let mut x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0xdead_beef;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    match i % 4 {
        0 => (0..next() % 200).map(|_| next() as u8).collect(),
        1 => vec![0xff; 1000 + (next() % 7000) as usize],
        _ => {
            let mut d = Vec::with_capacity(12 + 64);
            d.push((next() % 0x14) as u8);
            d.push(0);
            d.extend_from_slice(&[0xff, 0xff, 0]);
            d.extend_from_slice(&(0x100u32 + (next() % 2) as u32).to_be_bytes()[1..]);
            d.extend_from_slice(&((next() as u32) & 0x80ff_ffff).to_be_bytes());
            for _ in 0..4 {
                d.extend_from_slice(&next().to_be_bytes());
            }
            d.extend((0..next() % 64).map(|_| next() as u8));
            d
        }
    }
}

#[test]
fn forged_and_malformed_packets_on_the_link_change_nothing() {
    let dir = workspace_root().join("target/test-images/rdma-hostile/sockets");
    let _ = std::fs::remove_file(dir.join("intruder.pid"));
    let flood_dir = dir.clone();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stopped = stop.clone();
    let flood = std::thread::spawn(move || {
        let Some(pid) = intruder_pid(&flood_dir) else {
            return 0u64;
        };
        faultline_image::netns::in_namespace(pid, || {
            let sock = std::net::UdpSocket::bind("10.47.0.250:0").expect("a UDP socket");
            let (mut sent, mut i) = (0u64, 0u64);
            while !stopped.load(std::sync::atomic::Ordering::Relaxed) {
                i += 1;
                let d = hostile_packet(i);
                let to = if i % 2 == 0 {
                    "10.47.0.1:4791"
                } else {
                    "10.47.0.2:4791"
                };
                if sock.send_to(&d, to).is_ok() {
                    sent += 1;
                }
                if i % 256 == 0 {
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
            sent
        })
        .unwrap_or(0)
    });
    let fabric = FabricOptions {
        socket_dir: Some(dir),
        intruder: true,
        ..FabricOptions::default()
    };
    let outcome = rdmatest("rdma-hostile", &[], fabric);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let sent = flood.join().expect("flood thread");
    assert!(sent > 1000, "only {sent} hostile packets were sent");
    println!("{sent} hostile packets sent during the run");
    assert!(outcome.success(), "a node failed:\n{}", outcome.output());
    assert!(
        !outcome.output().contains("FAIL"),
        "a check failed under the flood:\n{}",
        outcome.output()
    );
    expect_ok(&outcome, 0, "remote-write-faults");
    expect_ok(&outcome, 0, "write-with-a-wrong-key-is-refused");
    expect_ok(&outcome, 1, "nothing-corrupted");
    // Each engine counted the strangers it dropped.
    for (rank, log) in outcome.engines.iter().enumerate() {
        let dropped = log
            .split("dropped: ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse::<u64>().ok());
        assert!(
            dropped.is_some_and(|n| n > 0),
            "engine {rank} reports no dropped strangers ({sent} sent):\n{log}"
        );
        println!("engine {rank}: {} strangers dropped", dropped.unwrap_or(0));
    }
}

/// The checksum line a stencil run prints.
fn stencil_hash(output: &str) -> Option<u64> {
    let line = output.lines().find(|l| l.starts_with("checksum:"))?;
    u64::from_str_radix(line.rsplit(' ').next()?, 16).ok()
}

#[test]
fn stencil_across_nodes_matches_the_single_node_reference_bit_for_bit() {
    // 61 rows do not split evenly over 2 or 3 nodes.
    let d = stencil::dims(45, 61, None).unwrap();
    let want = stencil::reference(&d, 12).hash;
    for nodes in [2, 3] {
        let outcome = boot(
            "stencil",
            &format!("stencil-{nodes}-nodes"),
            &["45", "61", "12"],
            nodes,
            FabricOptions::default(),
        );
        assert!(outcome.success(), "a node failed:\n{}", outcome.output());
        for rank in [0, nodes as usize - 1] {
            assert_eq!(
                stencil_hash(&outcome.nodes[rank].output),
                Some(want),
                "node {rank} of {nodes}:\n{}",
                outcome.output()
            );
        }
        // The first exchange lands on never-touched ghost pages.
        assert!(
            outcome.nodes[0]
                .output
                .lines()
                .any(|l| l.starts_with("node 0 iter 0:")
                    && !l.ends_with("remote faults 0, faults resolved here 0")),
            "no fault in the first exchange:\n{}",
            outcome.output()
        );
    }
}

#[test]
fn stencil_halo_bench_interleaves_fault_aware_and_pinned_ghosts_with_the_same_result() {
    let d = stencil::dims(45, 61, None).unwrap();
    let want = stencil::reference(&d, 14).hash;
    let outcome = boot(
        "stencil",
        "stencil-halo-bench",
        &["45", "61", "14", "halo-bench"],
        2,
        FabricOptions::default(),
    );
    // Every mode's checksum is compared inside the guest (a mismatch exits
    // 1); the interleaved run alternates the two kinds of ghost rows.
    assert!(outcome.success(), "a node failed:\n{}", outcome.output());
    for rank in 0..2 {
        let out = &outcome.nodes[rank].output;
        assert_eq!(stencil_hash(out), Some(want), "node {rank}:\n{out}");
        for mode in [
            "FaultAware:",
            "Pinned:",
            "Interleaved:",
            "halo-bench: first iteration",
        ] {
            assert!(
                out.contains(mode),
                "node {rank} printed no {mode:?}:\n{out}"
            );
        }
    }
}

/// Runs `tshark` over `pcap` and returns each packet's protocol chain.
fn tshark_frames(pcap: &std::path::Path) -> Vec<String> {
    // Payload bytes are the apps' own: Wireshark's guess that a SEND carries
    // RPC-over-RDMA is switched off, the RoCE headers are what is judged.
    let out = Command::new("tshark")
        .args(["--disable-protocol", "rpcordma", "-r"])
        .arg(pcap)
        .args([
            "-T",
            "fields",
            "-e",
            "frame.protocols",
            "-e",
            "_ws.malformed",
            "-e",
            "_ws.expert.severity",
        ])
        .output()
        .expect("tshark runs (run-tests.sh installs it)");
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn wireshark_decodes_every_packet_as_roce_and_scapy_agrees_with_every_icrc() {
    let dir = workspace_root().join("target/test-images/rdma-wire");
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("rdmatest.pcap");
    let _ = std::fs::remove_file(&pcap);
    let fabric = FabricOptions {
        capture: Some(pcap.clone()),
        ..FabricOptions::default()
    };
    let outcome = rdmatest("rdma-wire", &[], fabric);
    assert!(outcome.success(), "a node failed:\n{}", outcome.output());
    let frames = tshark_frames(&pcap);
    assert!(
        frames.len() > 1000,
        "only {} packets captured",
        frames.len()
    );
    for (i, f) in frames.iter().enumerate() {
        let mut cols = f.split('\t');
        let protocols = cols.next().unwrap_or("");
        let malformed = cols.next().unwrap_or("");
        assert!(
            protocols.ends_with("ip:udp:infiniband") || protocols.contains(":udp:infiniband:"),
            "frame {} is not RoCEv2 to Wireshark: {protocols}",
            i + 1
        );
        assert!(
            malformed.is_empty(),
            "frame {} is malformed to Wireshark: {f}",
            i + 1
        );
    }
    let out = Command::new("/usr/bin/python3")
        .arg(workspace_root().join("image/tests/roce_wire.py"))
        .arg(&pcap)
        .output()
        .expect("python3 with scapy (run-tests.sh installs python3-scapy)");
    let said = String::from_utf8_lossy(&out.stdout);
    println!("{} frames decoded by tshark; scapy: {said}", frames.len());
    assert!(
        out.status.success(),
        "scapy's ICRC disagrees: {said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
