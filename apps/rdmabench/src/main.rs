//! `rdmabench`: the paper's table, measured in one run on two nodes
//! (`./run-qemu.sh rdmabench --nodes 2`, or `bench/rdmabench.sh` for CSV,
//! plot and the host memcpy comparison).
//!
//! Node 0 posts RDMA WRITEs (and READs) into node 1's memory under the four
//! policies side by side; node 1 serves a small command protocol over
//! SEND/RECV so that the pinned baseline can register (pin) its side, and
//! so that every cold cell gets never-touched memory on both sides.
//!
//! ```text
//!  node 0 (initiator)                          node 1 (target)
//!  arena: local buffers                        arena: remote buffers (1 GiB VA)
//!  SEND "pin off len" ───────────────────────► pin, reply setup ns
//!  WRITE/READ under policy P  ══════════════►  faults resolved here (pin: none)
//!  SEND "free off len" ──────────────────────► unpin + discard (frames back)
//! ```
//!
//! Buffers: warm (resident on both sides, transfer repeated), cold
//! (never touched on either side, setup counted: pin = both sides pinned
//! first), sparse (10% used of a 10x buffer; pin registers all of it).
//! Prints one row per cell with throughput, ratio to pin, faults and
//! retransmitted bytes, then small-write latency, the cost of one remote
//! fault, libOS CPU use, the targets, and a CSV block. Arguments: `quick`
//! (4 KiB .. 4 MiB), `full` (.. 64 MiB), `targets` (no table: only the
//! targets, each measured side by side).
//!
//! Both arenas are huge-page regions, as large RDMA buffers should be: the
//! SMMU then translates a 2 MiB block per IOTLB miss, for every policy.
#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

mod cell;
mod cold;
mod paired;
mod protocol;

use alloc::vec::Vec;
use libos::println;
use libos::rdma::{self, Rdma};

libos::main!(main);

fn sizes(args: &libos::Args) -> Vec<usize> {
    let kib: &[usize] = if args.contains("targets") {
        &[]
    } else if args.contains("quick") {
        &[4, 64, 1024, 4096]
    } else if args.contains("full") {
        &[4, 64, 1024, 4096, 16384, 65536]
    } else {
        &[4, 64, 1024, 4096, 16384]
    };
    kib.iter().map(|k| k << 10).collect()
}

fn main(args: libos::Args) -> i32 {
    let rdma: Rdma = match rdma::open() {
        Ok(r) if r.nodes() >= 2 => r,
        Ok(_) => {
            println!("rdmabench: needs two nodes (./run-qemu.sh rdmabench --nodes 2)");
            return 2;
        }
        Err(e) => {
            println!("rdmabench: no RDMA engine: {e:?} (run with --nodes 2)");
            return 2;
        }
    };
    match rdma.rank() {
        0 => cell::initiator(&rdma, &sizes(&args)),
        1 => protocol::serve(&rdma),
        _ => 0,
    }
}
