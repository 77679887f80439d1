//! The targets that compare policies, measured pair by pair. Two
//! transfers of the same bytes run back to back, in alternating order, for
//! a number of rounds; each round gives one ratio (pin time over the other
//! policy's, i.e. its throughput over pin's), and the median and middle
//! half are reported. Host noise then weighs on both halves of a pair
//! alike, instead of on one table cell (one quick run's cold read cell
//! said 0.79x and the next 4.72x on the same code).
//!
//! ```text
//!  warm:  a pinned ("registered") buffer and a resident fault-aware one,
//!         both reused: (r even) pin → fault-aware, (r odd) the reverse
//!  cold, sparse: a never-touched buffer for every transfer (sparse: ten
//!         times the size, a tenth used): pin (pinning all of it counted)
//!         against fault-aware or fault-aware+prefetch, alternating alike
//!  ratio_r = t_pin / t_other           report median, middle half
//! ```

extern crate alloc;

use crate::cell::Scenario;
use alloc::vec::Vec;
use core::time::Duration;
use libos::dma::{self, Direction, EngineId, Policy, Transfer};
use libos::mm::{self, Region};
use libos::time;

/// Warm rounds per direction.
const ROUNDS: usize = 24;

/// What one direction's pairs gave.
pub struct Pairs {
    /// Median of the per-round ratios.
    pub median: f64,
    /// The middle half of them.
    pub middle: (f64, f64),
    /// How many rounds.
    pub rounds: usize,
}

impl Pairs {
    /// The median and middle half of `ratios`.
    fn of(mut ratios: Vec<f64>) -> Self {
        ratios.sort_by(f64::total_cmp);
        let n = ratios.len();
        let at = |i: usize| ratios.get(i).copied().unwrap_or(0.0);
        Pairs {
            median: at(n / 2),
            middle: (at(n / 4), at(3 * n / 4)),
            rounds: n,
        }
    }
}

/// One round's ratio: `pin` and `other` back to back, `pin` first in
/// even rounds; pin's time over the other's.
fn back_to_back(
    round: usize,
    mut pin: impl FnMut() -> Result<Duration, alloc::string::String>,
    mut other: impl FnMut() -> Result<Duration, alloc::string::String>,
) -> Result<f64, alloc::string::String> {
    let (t_pin, t_other) = if round.is_multiple_of(2) {
        let p = pin()?;
        (p, other()?)
    } else {
        let o = other()?;
        (pin()?, o)
    };
    Ok(t_pin.as_nanos() as f64 / t_other.as_nanos().max(1) as f64)
}

fn err<E: core::fmt::Debug>(what: &'static str) -> impl Fn(E) -> alloc::string::String {
    move |e| alloc::format!("{what}: {e:?}")
}

/// One warm transfer of `region` (already resident or pinned); its time.
fn once(
    engine: EngineId,
    region: &mut Region,
    size: usize,
    direction: Direction,
    disk: u64,
) -> Result<Duration, alloc::string::String> {
    let transfer = Transfer::contiguous(
        direction,
        region.start()..region.start() + size,
        disk,
        Policy::FaultAware,
    );
    let start = time::now();
    dma::run_on(engine, region, transfer).map_err(err("transfer"))?;
    Ok(start.elapsed())
}

/// The warm pairs of `size`-byte transfers in `direction` between memory
/// and the disk at `disk`.
pub fn warm(
    engine: EngineId,
    size: usize,
    direction: Direction,
    disk: u64,
) -> Result<Pairs, alloc::string::String> {
    let mut pinned = Region::demand_zero(size).map_err(err("buffer"))?;
    let mut resident = Region::demand_zero(size).map_err(err("buffer"))?;
    pinned.as_mut_slice().fill(0x5a);
    resident.as_mut_slice().fill(0x5a);
    // Registered once, as an RDMA buffer would be: it never faults.
    mm::pin(pinned.range()).map_err(err("pin"))?;
    // Both granted to the device once, before the rounds.
    let _grants = [
        dma::grant(engine, pinned.range(), dma::Rights::ReadWrite).map_err(err("grant"))?,
        dma::grant(engine, resident.range(), dma::Rights::ReadWrite).map_err(err("grant"))?,
    ];
    let mut ratios = Vec::with_capacity(ROUNDS);
    for round in 0..ROUNDS {
        ratios.push(back_to_back(
            round,
            || once(engine, &mut pinned, size, direction, disk),
            || once(engine, &mut resident, size, direction, disk),
        )?);
    }
    mm::unpin(pinned.range()).map_err(err("unpin"))?;
    Ok(Pairs::of(ratios))
}

/// One transfer of `size` bytes from the start of a fresh buffer under
/// `policy`. The buffer is `size` bytes (cold) or ten times that (sparse,
/// the rest never used); pin pins all of it first and that counts, as
/// registering a buffer would. A sparse write's source is written by the
/// app before the clock starts (it made those bytes); a cold one is
/// never touched. Its time.
fn fresh_once(f: &Fresh, policy: Policy) -> Result<Duration, alloc::string::String> {
    let Fresh {
        engine,
        scenario,
        size,
        direction,
        disk,
    } = *f;
    let sparse = scenario == Scenario::Sparse;
    let registered = if sparse { 10 * size } else { size };
    let mut region = Region::demand_zero(registered).map_err(err("buffer"))?;
    if sparse && direction == Direction::ToDevice {
        region.as_mut_slice()[..size].fill(0x3c);
    }
    let _grant =
        dma::grant(engine, region.range(), dma::Rights::ReadWrite).map_err(err("grant"))?;
    let start = time::now();
    if policy == Policy::Pin {
        mm::pin(region.range()).map_err(err("pin"))?;
    }
    let transfer = Transfer::contiguous(
        direction,
        region.start()..region.start() + size,
        disk,
        policy,
    );
    dma::run_on(engine, &mut region, transfer).map_err(err("transfer"))?;
    let elapsed = start.elapsed();
    if policy == Policy::Pin {
        mm::unpin(region.range()).map_err(err("unpin"))?;
    }
    Ok(elapsed)
}

/// What the transfers of a fresh-memory pair move: `size` bytes in
/// `direction` between fresh memory in `scenario` (cold or sparse) and the
/// disk at `disk`.
#[derive(Clone, Copy)]
pub struct Fresh {
    /// The device that moves them.
    pub engine: EngineId,
    /// Cold (a buffer of `size`) or sparse (ten times that, a tenth used).
    pub scenario: Scenario,
    /// Bytes each transfer moves.
    pub size: usize,
    /// Into memory or out of it.
    pub direction: Direction,
    /// Where on the disk.
    pub disk: u64,
}

/// The pairs of `f`'s transfers: pin against `policy`. Fewer rounds for
/// large transfers, which take long (a sparse fault-aware read without
/// prefetch pays QEMU's event storm on every page).
pub fn fresh(f: Fresh, policy: Policy) -> Result<Pairs, alloc::string::String> {
    let rounds = ((16 << 20) / f.size.max(1)).clamp(6, 16);
    let mut ratios = Vec::with_capacity(rounds);
    for round in 0..rounds {
        ratios.push(back_to_back(
            round,
            || fresh_once(&f, Policy::Pin),
            || fresh_once(&f, policy),
        )?);
    }
    Ok(Pairs::of(ratios))
}
