//! The cold 4 MiB WRITE target, and where its time goes.
//!
//! ```text
//!  round r (order rotating): pin ─ fault-aware ─ fault-aware+prefetch
//!    pin:          pin here ─ pin there (ask, target zeroes, reply) ─ WRITE
//!    fault-aware:  WRITE (source: zero block mapped here; target: RNR NAK,
//!                  its blocks zeroed while the requester waits or sends)
//!  ratio per round = time(pin) / time(other), setup included; median
//! ```
//!
//! Beside the ratio it prints the parts of each policy's time (medians over
//! the rounds) and the best ratio any fault-aware scheme could reach with
//! them: pin pays its setup and then the transfer; fault-aware cannot beat
//! the transfer itself nor the zeroing the target must do before the data
//! lands, so its time is at least the larger of the two.

extern crate alloc;

use crate::cell::{policy_name, Bench, Registration};
use crate::paired::{median, rotated, show, SIZE};
use alloc::vec::Vec;
use core::time::Duration;
use libos::dma::Policy;
use libos::println;
use libos::rdma::EngineCounters;
use libos::time::now;

/// Rounds of the cold target (each round allocates and frees 12 MiB on
/// both sides, about 15 ms). A cold transfer overlaps the zeroing of both
/// nodes, and on a 2-core host one round in four loses that overlap to the
/// host's scheduling (the engines wait behind two zeroing vCPUs): many
/// rounds. With 15, the median of the same code read 1.42x to 1.70x from
/// run to run (middle halves about 1.2..1.7); with 63, 1.61x to 1.71x
/// (both when memory was shared between nodes).
pub(crate) const ROUNDS: usize = 63;

const POLICIES: [Policy; 3] = [Policy::Pin, Policy::FaultAware, Policy::FaultAwarePrefetch];

/// One policy's transfer in one round.
#[derive(Clone, Copy, Default)]
struct Sample {
    /// Setup and transfer.
    total: Duration,
    /// The transfer alone.
    transfer: Duration,
    /// Pin only: the registration of both sides.
    setup: Registration,
    /// The engine's counters for the transfer.
    engine: EngineCounters,
    /// This node's libOS resolving the engine's faults.
    fault_service: Duration,
}

/// Medians of one policy's samples.
struct Parts {
    total: f64,
    transfer: f64,
    here: f64,
    there: f64,
    round_trip: f64,
    remote_wait: f64,
    rnr: f64,
    resent: f64,
    fault_service: f64,
}

fn parts(samples: &[Sample]) -> Parts {
    let m = |f: &dyn Fn(&Sample) -> f64| median(samples.iter().map(f).collect()).0;
    Parts {
        total: m(&|s| s.total.as_secs_f64()),
        transfer: m(&|s| s.transfer.as_secs_f64()),
        here: m(&|s| s.setup.here.as_secs_f64()),
        there: m(&|s| s.setup.there.as_secs_f64()),
        round_trip: m(&|s| s.setup.round_trip.as_secs_f64()),
        remote_wait: m(&|s| s.engine.remote_wait_us as f64 / 1e6),
        rnr: m(&|s| s.engine.remote_faults as f64),
        resent: m(&|s| s.engine.retransmitted_bytes as f64),
        fault_service: m(&|s| s.fault_service.as_secs_f64()),
    }
}

/// The best ratio to pin any fault-aware scheme could reach, from pin's
/// `setup`, the `transfer` alone and the target's `zeroing` (seconds):
/// (when the zeroing costs the transfer its time, when it hides under it).
fn bounds(setup: f64, transfer: f64, zeroing: f64) -> (f64, f64) {
    let pin = setup + transfer;
    (
        pin / (transfer + zeroing).max(1e-9),
        pin / transfer.max(zeroing).max(1e-9),
    )
}

fn ms(s: f64) -> f64 {
    s * 1e3
}

/// Runs the cold rounds (the first `warmup` not counted), prints the
/// ratios and their parts; returns the transfers that failed.
pub(crate) fn targets(b: &mut Bench, warmup: usize) -> usize {
    let mut failed = 0;
    let mut samples: [Vec<Sample>; 3] = Default::default();
    for round in 0..warmup + ROUNDS {
        for policy in rotated(&POLICIES, round) {
            let i = POLICIES.iter().position(|&p| p == policy).unwrap_or(0);
            let off = b.fresh(SIZE);
            let service0 = libos::dma::fault_counters().fault_service;
            let start = now();
            let mut s = Sample::default();
            if policy == Policy::Pin {
                s.setup = b.register_parts(off, SIZE);
            }
            let transfer = now();
            match b.transfer("write", off, SIZE, policy) {
                Ok(wc) => s.engine = wc.engine,
                Err(e) => {
                    println!("  write {SIZE} {}: {e}", policy_name(policy));
                    failed += 1;
                }
            }
            s.total = start.elapsed();
            s.transfer = transfer.elapsed();
            s.fault_service = libos::dma::fault_counters().fault_service - service0;
            b.free(off, SIZE);
            if round >= warmup {
                samples[i].push(s);
            }
        }
    }
    let ratio = |k: usize| -> Vec<f64> {
        samples[0]
            .iter()
            .zip(&samples[k])
            .map(|(p, o)| p.total.as_secs_f64() / o.total.as_secs_f64().max(1e-9))
            .collect()
    };
    for (k, &policy) in POLICIES.iter().enumerate().skip(1) {
        show(
            &alloc::format!(
                "cold 4 MiB WRITE incl. setup, {} vs pin",
                policy_name(policy)
            ),
            median(ratio(k)),
            1.46,
        );
    }
    let pin = parts(&samples[0]);
    // Pin's transfer runs with both sides resident: the transfer itself.
    let transfer = pin.transfer;
    let setup = pin.here + pin.there + pin.round_trip;
    let blocks = SIZE.div_ceil(2 << 20);
    println!(
        "  cold 4 MiB WRITE, where the time goes (medians of {ROUNDS} rounds; {blocks} blocks of 2 MiB to zero on each side):"
    );
    println!(
        "    pin: {:.2} ms = setup {:.2} ms (pin here {:.2}, pin there {:.2}, asking {:.2}) + transfer {:.2} ms",
        ms(pin.total),
        ms(setup),
        ms(pin.here),
        ms(pin.there),
        ms(pin.round_trip),
        ms(transfer)
    );
    for (k, samples) in samples.iter().enumerate().skip(1) {
        let p = parts(samples);
        println!(
            "    {}: {:.2} ms = transfer {:.2} + {:.2} ms more; waiting on the target's faults {:.2} ms ({} RNR NAKs, {:.0} KiB sent again), resolving ours {:.2} ms",
            policy_name(POLICIES[k]),
            ms(p.total),
            ms(transfer),
            ms(p.total - transfer),
            ms(p.remote_wait),
            p.rnr,
            p.resent / 1024.0,
            ms(p.fault_service)
        );
    }
    // What fault-aware cannot avoid: the transfer, and the target zeroing
    // its blocks (pinning there is little more than that zeroing). At best
    // the zeroing hides under the transfer; on a host whose cores are all
    // busy moving the packets (two engines) it takes its time from them.
    let (bound, ideal) = bounds(setup, transfer, pin.there);
    println!(
        "    bound for any fault-aware scheme: (setup + transfer) / max(transfer, zeroing there) = {:.2} / {:.2} = {ideal:.2}x; \
         with the zeroing taking its CPU from the transfer, / (transfer + zeroing there) = {bound:.2}x",
        ms(setup + transfer),
        ms(transfer.max(pin.there)),
    );
    failed
}
