//! `rdmapeer`: the Faultline end of Linux's RDMA test programs, so that a
//! Linux host with soft-RoCE (`rdma_rxe`) or a RoCE NIC runs them unchanged
//! against a Faultline node.
//!
//! ```text
//!  ./run-qemu.sh rdmapeer --nodes 1 --linux-peer -- pingpong-server -n 100 -c
//!  rdmapeer STEP [OPTIONS] [, STEP [OPTIONS]]...
//!    pingpong-server          wait for `ibv_rc_pingpong -g <idx> <this node>`
//!    pingpong-client ADDR     be the client of `ibv_rc_pingpong -g <idx>` on ADDR
//!    verbs-target             serve `verbs_probe` (image/linux-rxe/verbs_probe.c)
//!    perftest-server TEST       wait for perftest's ib_TEST (write: ib_write_bw, read:
//!                               ib_read_bw, send: ib_send_bw, lat: ib_write_lat) -x <idx> <this node>
//!    perftest-client ADDR TEST  be its client, against a server on ADDR
//!    options: -s SIZE  -n ITERS  -m MTU (as given to the Linux program; -c: rc_pingpong's)
//!    on R STEP                  the step runs on node R only (a cluster's nodes share arguments)
//! ```
//!
//! The out-of-band exchange goes over TCP on the node's NIC (QEMU user
//! networking; the runner forwards the node's address to it); the RoCEv2
//! packets go through the node's RDMA engine. Each step prints one line,
//! `ok …` or `FAIL …`; the app exits 1 if any step failed.
#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

mod perftest;
mod pingpong;
mod steps;
mod target;
mod tcp;

use alloc::vec::Vec;
use libos::println;
use steps::Step;

libos::main!(main);

fn main(args: libos::Args) -> i32 {
    let words: Vec<&str> = args.iter().collect();
    let steps = match steps::parse(&words) {
        Ok(s) => s,
        Err(e) => {
            println!("rdmapeer: {e}");
            return 2;
        }
    };
    let rdma = match libos::rdma::open() {
        Ok(r) => r,
        Err(e) => {
            println!("rdmapeer: no RDMA engine: {e:?}");
            return 1;
        }
    };
    let mut oob = match libos::net::init() {
        // Listening from the start: a Linux client may come before the
        // step that serves it begins.
        Ok(n) => tcp::Oob::new(n, tcp::PORT),
        Err(e) => {
            println!("rdmapeer: no network for the out-of-band exchange: {e:?}");
            return 1;
        }
    };
    let a = rdma.address();
    println!(
        "rdmapeer: RoCEv2 GID ::ffff:{}.{}.{}.{}",
        a[0], a[1], a[2], a[3]
    );
    let mut failed = 0;
    for (node, step) in steps {
        if node.is_some_and(|n| n != rdma.rank()) {
            continue;
        }
        let (what, result) = match step {
            Step::PingpongServer(o) => ("pingpong-server", pingpong::serve(&rdma, &mut oob, &o)),
            Step::PingpongClient(addr, o) => (
                "pingpong-client",
                pingpong::client(&rdma, &mut oob, addr, &o),
            ),
            Step::PerftestServer(o) => {
                report_perftest(
                    "perftest-server",
                    o,
                    perftest::serve(&rdma, &mut oob, &o),
                    &mut failed,
                );
                continue;
            }
            Step::PerftestClient(addr, o) => {
                report_perftest(
                    "perftest-client",
                    o,
                    perftest::client(&rdma, &mut oob, addr, &o),
                    &mut failed,
                );
                continue;
            }
            Step::VerbsTarget => {
                match target::serve(&rdma, &mut oob) {
                    Ok(n) => println!("ok verbs-target: {n} commands served"),
                    Err(e) => {
                        failed += 1;
                        println!("FAIL verbs-target: {e}");
                    }
                }
                continue;
            }
        };
        match result {
            Ok(r) => println!(
                "ok {what}: {} exchanges with {}.{}.{}.{}, every byte checked, {} us per round trip",
                r.iters, r.peer[0], r.peer[1], r.peer[2], r.peer[3], r.us_per_iter
            ),
            Err(e) => {
                failed += 1;
                println!("FAIL {what}: {e}");
            }
        }
    }
    println!("rdmapeer: {} failed", failed);
    i32::from(failed > 0)
}

/// Prints one perftest step's outcome.
fn report_perftest(
    what: &str,
    o: perftest::Options,
    result: Result<perftest::Outcome, perftest::PerfError>,
    failed: &mut u32,
) {
    let test = o.test.name();
    match result {
        Ok(r) => {
            let p = r.peer;
            let measured = match o.test {
                perftest::Test::WriteLat => {
                    alloc::format!("{:.1} us one way (median)", r.report.bw_avg)
                }
                _ => alloc::format!(
                    "{:.2} MiB/s ({:.4} Mpps)",
                    r.report.bw_avg,
                    r.report.msg_rate
                ),
            };
            println!(
                "ok {what} {test}: {} x {} B with {}.{}.{}.{}, measured {measured}, {} pages faulted in here",
                r.report.iters, r.report.size, p[0], p[1], p[2], p[3], r.faults
            )
        }
        Err(e) => {
            *failed += 1;
            println!("FAIL {what} {test}: {e}");
        }
    }
}
