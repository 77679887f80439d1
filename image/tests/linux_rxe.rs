//! A Linux node with soft-RoCE (Debian's kernel, `rdma_rxe`, rdma-core's
//! and perftest's programs, unchanged) on the same link as a Faultline
//! node, which runs `rdmapeer`: the Linux programs talk RoCEv2 to the
//! Faultline engine, and every byte is checked on both sides.

mod common;

use faultline_image::cluster::{run_cluster, ClusterOutcome, FabricOptions};
use faultline_image::linux_peer::LinuxPeer;
use faultline_image::{build_to, workspace_root, Board, RunOptions};
use std::time::Duration;

/// Far above a healthy run (about a minute under TCG), so only a hang
/// trips it.
const TIMEOUT: Duration = Duration::from_secs(400);

fn boot(test: &str, args: &[&str], script: &str) -> ClusterOutcome {
    common::require_qemu();
    let root = workspace_root();
    let out = root.join("target/test-images").join(test);
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let built = build_to(&root, "rdmapeer", Board::QemuVirt, &args, &out).expect("image builds");
    let opts = RunOptions {
        smp: Some(2),
        args,
        ..RunOptions::default()
    };
    let fabric = FabricOptions {
        linux_peers: vec![LinuxPeer {
            script: script.to_string(),
        }],
        ..FabricOptions::default()
    };
    let mut outcome = run_cluster(&root, &built, &opts, 1, &fabric, Some(TIMEOUT), false)
        .expect("the nodes start");
    for node in &mut outcome.nodes {
        node.output = node.output.replace("\r\n", "\n");
    }
    for l in &mut outcome.linux {
        l.output = l.output.replace("\r\n", "\n");
    }
    outcome
}

fn has_line(outcome: &ClusterOutcome, start: &str) {
    let all = outcome.output();
    assert!(
        all.lines().any(|l| l.starts_with(start)),
        "no line starting `{start}`:\n{all}"
    );
}

#[test]
fn linux_verbs_programs_talk_to_a_faultline_node() {
    // rc_pingpong with Linux as the client (Faultline listens), then as the
    // server (Faultline connects), with another size and path MTU; then
    // our own verbs_probe: WRITE and READ into Faultline memory nothing
    // touched (the node faults, answers RNR NAK, and the bytes land),
    // keys used wrongly (refused, bytes unchanged), and the node WRITEing
    // and READing Linux memory; then perftest's ib_write_bw, ib_read_bw,
    // ib_send_bw and ib_write_lat, short, each way.
    let script = "\
connect_retry ibv_rc_pingpong -d rxe0 -g $GID -n 50 -c $PEER; echo \"client exit $?\"
ibv_rc_pingpong -d rxe0 -g $GID -n 50 -m 4096 -s 3000 -c; echo \"server exit $?\"
verbs_probe $PEER $GID; echo \"probe exit $?\"
for t in write read; do connect_retry ib_${t}_bw -d rxe0 -x $GID -n 100 $PEER; echo \"$t client exit $?\"; done
for t in write read; do ib_${t}_bw -d rxe0 -x $GID -n 100; echo \"$t server exit $?\"; done
connect_retry ib_send_bw -d rxe0 -x $GID -n 100 -s 4096 $PEER; echo \"send client exit $?\"
ib_send_bw -d rxe0 -x $GID -n 100 -s 4096; echo \"send server exit $?\"
connect_retry ib_write_lat -d rxe0 -x $GID -n 100 $PEER; echo \"lat client exit $?\"
ib_write_lat -d rxe0 -x $GID -n 100; echo \"lat server exit $?\"
";
    let steps = "pingpong-server -n 50 -c , pingpong-client 10.47.0.100 -n 50 -m 4096 -s 3000 -c , \
                 verbs-target , perftest-server write -n 100 , perftest-server read -n 100 , \
                 perftest-client 10.47.0.100 write -n 100 , perftest-client 10.47.0.100 read -n 100 , \
                 perftest-server send -n 100 -s 4096 , perftest-client 10.47.0.100 send -n 100 -s 4096 , \
                 perftest-server lat -n 100 , perftest-client 10.47.0.100 lat -n 100";
    let args: Vec<&str> = steps.split_ascii_whitespace().collect();
    let outcome = boot("linux-rxe", &args, script);
    assert!(outcome.success(), "a side failed:\n{}", outcome.output());
    has_line(
        &outcome,
        "[n0] ok pingpong-server: 50 exchanges with 10.47.0.100",
    );
    has_line(
        &outcome,
        "[n0] ok pingpong-client: 50 exchanges with 10.47.0.100",
    );
    has_line(&outcome, "[n0] ok verbs-target");
    has_line(&outcome, "[linux0] client exit 0");
    has_line(&outcome, "[linux0] server exit 0");
    has_line(&outcome, "[linux0] probe exit 0");
    for (test, role) in [
        ("write", "server"),
        ("read", "server"),
        ("send", "server"),
        ("lat", "server"),
    ] {
        // Linux as client, then Faultline as client.
        has_line(&outcome, &format!("[n0] ok perftest-{role} {test}: "));
        has_line(&outcome, &format!("[n0] ok perftest-client {test}: "));
        has_line(&outcome, &format!("[linux0] {test} client exit 0"));
        has_line(&outcome, &format!("[linux0] {test} server exit 0"));
    }
    // The Linux ib_write_bw wrote into memory nothing had touched here.
    let faulted = outcome
        .output()
        .lines()
        .find(|l| l.starts_with("[n0] ok perftest-server write: "))
        .map(|l| !l.contains(" 0 pages faulted"));
    assert_eq!(faulted, Some(true), "{}", outcome.output());
    for check in [
        "write-into-untouched-memory-completes",
        "the-untouched-exposure-was-not-resident",
        "the-node-answered-rnr-naks",
        "the-write-landed-byte-for-byte",
        "nothing-around-the-write-changed",
        "the-node-resolved-faults-for-it",
        "read-of-untouched-memory-gives-zeros",
        "write-with-a-wrong-key-is-refused",
        "write-past-the-end-is-refused",
        "write-before-the-start-is-refused",
        "write-without-the-right-is-refused",
        "write-after-revocation-is-refused",
        "the-node-writes-a-linux-region",
        "the-node-reads-a-linux-region",
        "the-node-gets-a-protection-error-for-a-wrong-key",
    ] {
        has_line(&outcome, &format!("[linux0] ok {check}"));
    }
    has_line(&outcome, "[linux0] verbs_probe: 15 passed, 0 failed");
    // rc_pingpong -c checks the buffer it received last, and prints this
    // for each page that is wrong.
    assert!(
        !outcome.output().contains("invalid data"),
        "{}",
        outcome.output()
    );
    // rxe numbers its packets' IPv4 identification, which the ICRC covers:
    // the engine checked each one over the header as it came.
    let engine = &outcome.engines[0];
    assert!(engine.contains(" 0 bad ICRC"), "{engine}");
    assert!(!engine.contains(" 0 RNR NAKs sent"), "{engine}");
}
