//! Printing: the table with ratios against `pin`, the first-byte times, the
//! targets of the issue checked against the numbers, and CSV.

use crate::cell::{Row, Scenario};
use crate::paired::Pairs;
use alloc::string::String;
use alloc::vec::Vec;
use core::time::Duration;
use libos::dma::{Direction, Policy};
use libos::mm::FRAME_SIZE;
use libos::println;

fn dir(d: Direction) -> &'static str {
    match d {
        Direction::FromDevice => "read",
        Direction::ToDevice => "write",
    }
}

fn size(bytes: usize) -> String {
    if bytes >= 1 << 20 {
        alloc::format!("{}M", bytes >> 20)
    } else {
        alloc::format!("{}K", bytes >> 10)
    }
}

fn pin_of<'a>(rows: &'a [Row], row: &Row) -> Option<&'a Row> {
    rows.iter().find(|r| {
        r.spec.policy == Policy::Pin
            && r.spec.scenario == row.spec.scenario
            && r.spec.direction == row.spec.direction
            && r.spec.size == row.spec.size
    })
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The main table.
pub fn table(rows: &[Row]) {
    println!();
    println!(
        "{:<8} {:<5} {:>4} {:<20} {:>9} {:>6} {:>8} {:>8} {:>9} {:>7} {:>9} {:>8} {:>8}",
        "scenario",
        "dir",
        "size",
        "policy",
        "MB/s",
        "x pin",
        "p50 ms",
        "p99 ms",
        "setup us",
        "faults",
        "retx KiB",
        "kern ms",
        "peak KiB"
    );
    for row in rows {
        let ratio = pin_of(rows, row)
            .map(|p| row.throughput() / p.throughput())
            .unwrap_or(f64::NAN);
        println!(
            "{:<8} {:<5} {:>4} {:<20} {:>9.1} {:>6.2} {:>8.3} {:>8.3} {:>9.0} {:>7.1} {:>9.1} {:>8.3} {:>8}",
            row.spec.scenario.name(),
            dir(row.spec.direction),
            size(row.spec.size),
            row.spec.policy.name(),
            row.throughput(),
            ratio,
            ms(row.quantile(0.5)),
            ms(row.quantile(0.99)),
            row.setup.as_secs_f64() * 1e6,
            row.faults,
            row.retransmitted / 1024.0,
            ms(row.kernel),
            row.peak_resident_pages * FRAME_SIZE / 1024
        );
    }
}

/// Time before the first byte moves, per policy, for a large cold buffer.
pub fn first_byte(results: &[(Policy, Result<Duration, String>)]) {
    println!();
    println!("time before the first byte moves, 1 GiB never-touched buffer:");
    let pin = results
        .iter()
        .find(|(p, _)| *p == Policy::Pin)
        .and_then(|(_, r)| r.as_ref().ok())
        .copied();
    for (policy, result) in results {
        match (result, pin) {
            (Ok(d), Some(pin)) => println!(
                "  {:<20} {:>12.1} us   pin is {:.0}x longer",
                policy.name(),
                d.as_secs_f64() * 1e6,
                pin.as_secs_f64() / d.as_secs_f64().max(1e-9)
            ),
            (Ok(d), None) => println!("  {:<20} {:>12.1} us", policy.name(), d.as_secs_f64() * 1e6),
            (Err(e), _) => println!("  {:<20} failed: {e}", policy.name()),
        }
    }
}

/// The guest time one fault resolution costs, per policy.
pub fn fault_cost(rows: &[Row]) {
    println!();
    println!("cost of one device fault (SMMU event read to resubmission), guest time:");
    for policy in crate::POLICIES {
        let costs: alloc::vec::Vec<Duration> = rows
            .iter()
            .filter(|r| r.spec.policy == policy)
            .filter_map(|r| r.fault_cost)
            .collect();
        if costs.is_empty() {
            println!("  {:<20} no faults", policy.name());
        } else {
            let mean = costs.iter().sum::<Duration>() / costs.len() as u32;
            println!(
                "  {:<20} {:>8.1} us mean over {} cells",
                policy.name(),
                mean.as_secs_f64() * 1e6,
                costs.len()
            );
        }
    }
}

fn find(
    rows: &[Row],
    scenario: Scenario,
    direction: Direction,
    size: usize,
    policy: Policy,
) -> Option<&Row> {
    rows.iter().find(|r| {
        r.spec.scenario == scenario
            && r.spec.direction == direction
            && r.spec.size == size
            && r.spec.policy == policy
    })
}

/// The targets measured pair by pair (see [`crate::paired`]).
#[derive(Default)]
pub struct PairedTargets {
    /// Per direction: pin against fault-aware, both reused and resident.
    pub warm: Vec<(Direction, Pairs)>,
    /// Per scenario, direction and policy: pin against that policy, on
    /// fresh memory.
    pub fresh: Vec<(Scenario, Direction, Policy, Pairs)>,
}

impl PairedTargets {
    fn fresh(&self, scenario: Scenario, direction: Direction, policy: Policy) -> Option<&Pairs> {
        self.fresh
            .iter()
            .find(|(s, d, p, _)| (*s, *d, *p) == (scenario, direction, policy))
            .map(|(_, _, _, pairs)| pairs)
    }
}

/// How a paired figure was measured, for the target lines.
fn paired(p: &Pairs) -> String {
    alloc::format!(
        "median of {} back-to-back pairs, middle half {:.2}..{:.2}",
        p.rounds,
        p.middle.0,
        p.middle.1
    )
}

/// The targets, each with the measured value and met / not met.
/// The ratios come from `pairs`; retransmissions and peak residency from
/// the table's cells.
pub fn targets(
    rows: &[Row],
    first_byte: &[(Policy, Result<Duration, String>)],
    pairs: &PairedTargets,
) {
    println!();
    println!("targets (largest size measured, reads and writes):");
    let largest = rows.iter().map(|r| r.spec.size).max().unwrap_or(0);
    let verdict = |ok: bool| if ok { "met" } else { "NOT met" };
    for direction in [Direction::FromDevice, Direction::ToDevice] {
        let cell = |s, p| find(rows, s, direction, largest, p);
        if let Some((_, warm)) = pairs.warm.iter().find(|(d, _)| *d == direction) {
            println!(
                "  warm {}: fault-aware {:.2}x pin (>= 0.98): {}; {}",
                dir(direction),
                warm.median,
                verdict(warm.median >= 0.98),
                paired(warm)
            );
        }
        let prefetch = Policy::FaultAwarePrefetch;
        if let (Some(cold), Some(pf)) = (
            pairs.fresh(Scenario::Cold, direction, prefetch),
            cell(Scenario::Cold, prefetch),
        ) {
            let retx = pf.retransmitted / largest as f64 * 100.0;
            println!(
                "  cold {}: prefetch {:.2}x pin incl. setup (>= 1.0): {}; {}; retransmitted {:.1}% (< 5%): {}",
                dir(direction),
                cold.median,
                verdict(cold.median >= 1.0),
                paired(cold),
                retx,
                verdict(retx < 5.0)
            );
        }
        for policy in [Policy::FaultAware, prefetch] {
            if let (Some(sparse), Some(fa)) = (
                pairs.fresh(Scenario::Sparse, direction, policy),
                cell(Scenario::Sparse, policy),
            ) {
                let used = largest / FRAME_SIZE;
                let resident = fa.peak_resident_pages as f64 / used as f64;
                println!(
                    "  sparse {}: {} {:.2}x pin incl. setup (>= 1.5): {}; {}; peak resident {:.2}x used (<= 1.1): {}",
                    dir(direction),
                    policy.name(),
                    sparse.median,
                    verdict(sparse.median >= 1.5),
                    paired(sparse),
                    resident,
                    verdict(resident <= 1.1)
                );
            }
        }
    }
    let get = |p| {
        first_byte
            .iter()
            .find(|(q, _)| *q == p)
            .and_then(|(_, r)| r.as_ref().ok())
            .copied()
    };
    if let (Some(pin), Some(fa)) = (get(Policy::Pin), get(Policy::FaultAware)) {
        let r = pin.as_secs_f64() / fa.as_secs_f64().max(1e-9);
        println!(
            "  first byte, 1 GiB: fault-aware {:.0}x sooner than pin (>= 100): {}",
            r,
            verdict(r >= 100.0)
        );
    }
}

/// The rows as CSV between markers.
pub fn csv(rows: &[Row]) {
    println!();
    println!("---- csv ----");
    println!("scenario,direction,size_bytes,policy,throughput_mbs,ratio_vs_pin,p50_us,p99_us,setup_us,faults,retransmitted_bytes,kernel_us,peak_resident_kib,fault_cost_us");
    for row in rows {
        let ratio = pin_of(rows, row)
            .map(|p| row.throughput() / p.throughput())
            .unwrap_or(f64::NAN);
        println!(
            "{},{},{},{},{:.2},{:.3},{:.1},{:.1},{:.1},{:.2},{:.0},{:.1},{},{}",
            row.spec.scenario.name(),
            dir(row.spec.direction),
            row.spec.size,
            row.spec.policy.name(),
            row.throughput(),
            ratio,
            row.quantile(0.5).as_secs_f64() * 1e6,
            row.quantile(0.99).as_secs_f64() * 1e6,
            row.setup.as_secs_f64() * 1e6,
            row.faults,
            row.retransmitted,
            row.kernel.as_secs_f64() * 1e6,
            row.peak_resident_pages * FRAME_SIZE / 1024,
            row.fault_cost
                .map(|d| alloc::format!("{:.1}", d.as_secs_f64() * 1e6))
                .unwrap_or_default()
        );
    }
    println!("---- end csv ----");
}
