//! The warm targets measured pair by pair. A pinned ("registered") buffer
//! and a resident fault-aware one move the same bytes back to back, in
//! alternating order, for [`ROUNDS`] rounds; each round gives one ratio
//! (pin time over fault-aware time, i.e. fault-aware throughput over
//! pin's), and the median and middle half are reported. Host noise then
//! weighs on both halves of a pair alike, instead of on one table cell.
//!
//! ```text
//!  round r:  (r even) pin → fault-aware   (r odd) fault-aware → pin
//!  ratio_r = t_pin / t_fault_aware        report median, middle half
//! ```

extern crate alloc;

use alloc::vec::Vec;
use core::time::Duration;
use libos::dma::{self, Direction, EngineId, Policy, Transfer};
use libos::mm::{self, Region};
use libos::time;

/// Rounds per direction.
pub const ROUNDS: usize = 24;

/// What one direction's pairs gave.
pub struct Pairs {
    /// Median of the per-round ratios.
    pub median: f64,
    /// The middle half of them.
    pub middle: (f64, f64),
}

fn err<E: core::fmt::Debug>(what: &'static str) -> impl Fn(E) -> alloc::string::String {
    move |e| alloc::format!("{what}: {e:?}")
}

/// One warm transfer of `region` (already resident or pinned); its time.
fn once(
    engine: EngineId,
    region: &Region,
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
    // SAFETY: the bench's own region, untouched until `run` returns.
    unsafe { dma::run(engine, transfer) }.map_err(err("transfer"))?;
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
        let (t_pin, t_fa) = if round % 2 == 0 {
            let p = once(engine, &pinned, size, direction, disk)?;
            (p, once(engine, &resident, size, direction, disk)?)
        } else {
            let f = once(engine, &resident, size, direction, disk)?;
            (once(engine, &pinned, size, direction, disk)?, f)
        };
        ratios.push(t_pin.as_nanos() as f64 / t_fa.as_nanos().max(1) as f64);
    }
    mm::unpin(pinned.range()).map_err(err("unpin"))?;
    ratios.sort_by(f64::total_cmp);
    let n = ratios.len();
    Ok(Pairs {
        median: ratios[n / 2],
        middle: (ratios[n / 4], ratios[3 * n / 4]),
    })
}
