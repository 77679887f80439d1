//! `dmabench costs`: what one fault and one submission cost the kernel,
//! measured on guest time. Under QEMU's `-icount shift=0` guest time counts
//! guest instructions (one per nanosecond), whatever the host is doing, so
//! these figures are instruction counts that repeat from run to run
//! (`bench/faultcost.sh` runs it that way).
//!
//! ```text
//!  cpu demand fault 4 KiB   first write to each of 48 fresh pages whose
//!    (pool hit)             level-3 table exists, a pre-zeroed frame each
//!                           (the pools just refilled), minus the same writes
//!                           once they are mapped
//!  cpu demand fault 4 KiB   the same for 256 pages once this core's pool is
//!    (zeroed on fault)      empty: each fault zeroes its frame (no lock held)
//!  cpu demand fault 2 MiB   first write to each of 8 fresh huge-page blocks
//!                           (zeroing the block included), minus the same
//!  device fault             SMMU event read to resubmission, per fault, in a
//!                           fault-aware NVMe read into a fresh buffer (the
//!                           pool of zeroed frames refilled first); then
//!                           split: reading the event queue (per record,
//!                           repeats included) and the resolution itself
//!  submitting a segment     `dma::submit` of a warm 4 KiB read, to its return
//!  device fault, one record the same for 16 faults of QEMU's edu device,
//!                           which writes one word into each of 16 fresh
//!                           pages: one event record per fault, as a real
//!                           SMMU reports a faulting transaction
//! ```

use core::time::Duration;
use libos::dma::{self, Direction, EngineId, Policy, Transfer};
use libos::mm::{Region, BLOCK_SIZE, FRAME_SIZE};
use libos::println;
use libos::time;

fn err<E: core::fmt::Debug>(what: &'static str) -> impl Fn(E) -> alloc::string::String {
    move |e| alloc::format!("{what}: {e:?}")
}

/// The kernel side of device faults that arrive as one event record each,
/// as a real SMMU reports a faulting transaction: QEMU's edu device writes
/// one 4-byte word into each of `count` fresh pages (QEMU logs one record
/// per word it fails to write). The service time, the faults and the
/// records read.
fn one_record_faults(count: usize) -> Result<(Duration, u64, u64), alloc::string::String> {
    let engine = dma::edu().map_err(err("edu"))?;
    // Below the edu's 28-bit DMA limit.
    let mut pages = Region::demand_zero_low(count * FRAME_SIZE).map_err(err("pages"))?;
    let _grant = dma::grant(engine, pages.range(), dma::Rights::ReadWrite).map_err(err("grant"))?;
    let before = dma::fault_counters();
    for i in 0..count {
        let word = pages.start() + i * FRAME_SIZE;
        let transfer = Transfer::contiguous(
            Direction::FromDevice,
            word..word + 4,
            dma::EDU_BUFFER,
            Policy::FaultAware,
        );
        dma::run_on(engine, &mut pages, transfer).map_err(err("edu write"))?;
    }
    let after = dma::fault_counters();
    let faults = after.faults_serviced - before.faults_serviced;
    if faults == 0 {
        return Err("the edu writes took no device fault".into());
    }
    Ok((
        after.fault_service - before.fault_service,
        faults,
        after.fault_records - before.fault_records,
    ))
}

/// Writes one byte at the start of each `stride` of `region`, `count`
/// times over; the guest time it took.
fn touch(region: &mut Region, stride: usize, count: usize) -> Duration {
    let start = time::now();
    for i in 0..count {
        // `i * stride` is inside the region (count * stride is its length).
        region.touch(i * stride, 1);
    }
    start.elapsed()
}

/// Mean cost of a first write per `stride` (a demand fault), the writes
/// themselves subtracted.
fn demand_fault(mut region: Region, stride: usize, count: usize) -> Duration {
    let cold = touch(&mut region, stride, count);
    let warm = touch(&mut region, stride, count);
    cold.saturating_sub(warm) / count as u32
}

/// Mean cost of a 4 KiB demand fault on pages `skip..skip + count` of a
/// fresh region whose first `skip` pages were touched just before (that
/// made the level-3 table, and used up pool frames).
fn small_faults(skip: usize, count: usize) -> Result<Duration, alloc::string::String> {
    let mut region = Region::demand_zero((skip + count) * FRAME_SIZE).map_err(err("pages"))?;
    for i in 0..skip {
        region.touch(i * FRAME_SIZE, 1);
    }
    let mut timed = |v: u8| {
        let start = time::now();
        for i in 0..count {
            // `skip + i` is below the region's page count.
            region.touch((skip + i) * FRAME_SIZE, v);
        }
        start.elapsed()
    };
    let cold = timed(1);
    let warm = timed(2);
    Ok(cold.saturating_sub(warm) / count as u32)
}

fn line(what: &str, cost: Duration, detail: &str) {
    println!("costs: {what:<28} {:>9} ns ({detail})", cost.as_nanos());
}

/// Runs the four measurements on `engine` (the NVMe namespace) and prints
/// one `costs:` line each.
pub fn run(engine: EngineId) -> Result<(), alloc::string::String> {
    println!("costs: guest time; under -icount shift=0, 1 ns = 1 guest instruction");
    // Fill this core's pool of zeroed frames, as idle time does.
    for _ in 0..libos::mm::ZEROED_FRAMES_PER_CORE {
        libos::mm::refill_zeroed_frames();
    }
    line(
        "cpu demand fault 4 KiB",
        small_faults(1, 48)?,
        "pool hit, mean of 48 pages",
    );
    line(
        "cpu demand fault 4 KiB",
        small_faults(libos::mm::ZEROED_FRAMES_PER_CORE, 256)?,
        "pool empty: zeroed on fault, mean of 256 pages",
    );
    let blocks = Region::demand_zero_huge(8 * BLOCK_SIZE).map_err(err("blocks"))?;
    line(
        "cpu demand fault 2 MiB",
        demand_fault(blocks, BLOCK_SIZE, 8),
        "mean of 8 blocks, zeroing included",
    );

    // The device faults take pre-zeroed frames too (idle time refilled
    // the pool the faults above emptied): what is left is the fault itself.
    for _ in 0..libos::mm::ZEROED_FRAMES_PER_CORE {
        libos::mm::refill_zeroed_frames();
    }
    let mut fresh = Region::demand_zero(256 << 10).map_err(err("buffer"))?;
    let before = dma::fault_counters();
    dma::read(engine, fresh.as_mut_slice(), 0, Policy::FaultAware).map_err(err("cold read"))?;
    let after = dma::fault_counters();
    let faults = after.faults_serviced - before.faults_serviced;
    if faults == 0 {
        return Err("the cold read took no device fault".into());
    }
    let records = after.fault_records - before.fault_records;
    let service = after.fault_service - before.fault_service;
    line(
        "device fault, kernel side",
        service / faults as u32,
        &alloc::format!(
            "event read to resubmission, mean of {faults}; {} event records per fault",
            records / faults
        ),
    );
    line(
        "per event record",
        service / records.max(1) as u32,
        "the service time above over every record read, repeats included",
    );
    let repeats = after.fault_repeats - before.fault_repeats;
    let drains = after.fault_drains - before.fault_drains;
    let drain_time = after.fault_drain_time - before.fault_drain_time;
    line(
        "reading the event queue",
        drain_time / records.max(1) as u32,
        &alloc::format!(
            "per record read; {repeats} of {records} records were repeats, in {drains} drains"
        ),
    );
    line(
        "device fault, resolution",
        service.saturating_sub(drain_time) / faults as u32,
        "per fault: resolved, scheduled, resubmitted (the queue reading above left out)",
    );
    let by_core: alloc::vec::Vec<u64> = (after.resolved_by_core.iter())
        .zip(before.resolved_by_core)
        .map(|(a, b)| a - b)
        .collect();
    println!("costs: device faults resolved by core {by_core:?} (the cold read above)");

    let mut warm = Region::demand_zero(FRAME_SIZE).map_err(err("warm buffer"))?;
    warm.populate(0..FRAME_SIZE).map_err(err("populate"))?;
    let _grant = dma::grant(engine, warm.range(), dma::Rights::ReadWrite).map_err(err("grant"))?;
    let mut total = Duration::ZERO;
    const SUBMITS: u32 = 64;
    for _ in 0..SUBMITS {
        let transfer =
            Transfer::contiguous(Direction::FromDevice, warm.range(), 0, Policy::FaultAware);
        let start = time::now();
        let pending =
            dma::submit_owned(engine, warm, transfer).map_err(|(e, _)| err("submit")(e))?;
        total += start.elapsed();
        let (back, result) = pending.wait();
        result.map_err(err("warm read"))?;
        warm = back;
    }
    line(
        "submitting one DMA segment",
        total / SUBMITS,
        "dma::submit of a warm 4 KiB read, mean of 64",
    );
    // Last: once the edu engine is open, every service pass polls it too.
    // The first faults of a device grow its view's tables and the fault
    // path's buffers: not counted.
    one_record_faults(4)?;
    let (service, faults, records) = one_record_faults(16)?;
    line(
        "device fault, one record",
        service / faults as u32,
        &alloc::format!(
            "event read to resubmission, mean of {faults}; edu writing one word: {records} event records in all"
        ),
    );
    Ok(())
}
