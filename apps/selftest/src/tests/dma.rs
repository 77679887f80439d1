//! DMA through the SMMU on the devices' views: faults resolved by the
//! memory manager, spoiled segments retransmitted by the scheduler.
//! (QEMU virt only: edu and NVMe sit behind its SMMUv3.)

use crate::{check, Outcome};
use alloc::format;
use alloc::string::String;
use libos::dma::{self, Direction, Policy, Transfer, TransferError};
use libos::mm::{Region, FRAME_SIZE};

use libos::dma::EDU_BUFFER;
/// Bytes per edu test transfer: a page less the byte QEMU 7.2's edu refuses.
const EDU_LEN: usize = FRAME_SIZE - 1;

fn pattern(i: usize, seed: u8) -> u8 {
    (i as u8).wrapping_mul(31) ^ seed ^ (i >> 8) as u8
}

/// Writes `seed`'s pattern over `buf`.
fn fill(buf: &mut [u8], seed: u8) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = pattern(i, seed);
    }
}

/// How many bytes of `data` differ from `seed`'s pattern.
fn wrong_bytes(data: &[u8], seed: u8) -> usize {
    data.iter()
        .enumerate()
        .filter(|&(i, &b)| b != pattern(i, seed))
        .count()
}

fn edu() -> Result<dma::EngineId, String> {
    dma::edu().map_err(|e| format!("edu: {e:?}"))
}

/// Grants the device the transfer's memory for the transfer (the
/// tests' own buffers), then runs it.
///
/// The raw forms, tested on purpose (apps use `dma::run_on`).
///
/// # Safety
///
/// As for `libos::dma::run`, and the pages touching the pieces are the
/// test's own.
unsafe fn run_granted(
    engine: dma::EngineId,
    transfer: Transfer,
) -> Result<dma::TransferReport, TransferError> {
    let rights = match transfer.direction {
        Direction::ToDevice => dma::Rights::Read,
        Direction::FromDevice => dma::Rights::ReadWrite,
    };
    let mut grants = alloc::vec::Vec::new();
    for piece in &transfer.pieces {
        // Tests the raw form on purpose (apps use `dma::run_on`, `dma::submit_owned`).
        // SAFETY: the caller's pages, for as long as the transfer runs.
        match unsafe { dma::grant_memory(engine, piece.clone(), rights) } {
            Ok(g) => grants.push(g),
            Err(_) => {
                return Err(TransferError::Unresolvable {
                    va: piece.start,
                    error: ::dma::MemError::NotGranted,
                })
            }
        }
    }
    // Tests the raw form on purpose (apps use `dma::run_on`, `dma::submit_owned`).
    // SAFETY: the caller's contract.
    unsafe { dma::run(engine, transfer) }
}

fn edu_transfer(
    direction: Direction,
    region: &Region,
    len: usize,
) -> Result<dma::TransferReport, TransferError> {
    let transfer = Transfer {
        direction,
        pieces: alloc::vec![region.start()..region.start() + len],
        device_addr: EDU_BUFFER,
        device_key: 0,
        policy: Policy::FaultAware,
    };
    // Tests the raw form on purpose (apps use `dma::run_on`, `dma::submit_owned`).
    // SAFETY: the test's own memory, untouched until `run` returns.
    unsafe {
        run_granted(
            edu().map_err(|_| TransferError::Engine(dma_engine_error()))?,
            transfer,
        )
    }
}

fn dma_engine_error() -> ::dma::EngineError {
    ::dma::EngineError::Device(0)
}

/// Loads the edu buffer with `seed`'s pattern from a resident buffer.
fn load_edu(seed: u8) -> Outcome {
    let mut src = Region::demand_zero_low(FRAME_SIZE).map_err(|e| format!("{e}"))?;
    fill(src.as_mut_slice(), seed);
    let report = edu_transfer(Direction::ToDevice, &src, EDU_LEN).map_err(|e| format!("{e:?}"))?;
    check!(
        report.stats.faults == 0,
        "a resident source faulted {} times",
        report.stats.faults
    );
    Ok(())
}

pub fn dma_into_untouched_buffer() -> Outcome {
    load_edu(0x5a)?;
    let dst = Region::demand_zero_low(FRAME_SIZE).map_err(|e| format!("{e}"))?;
    check!(
        dst.resident_pages() == 0,
        "destination resident before the DMA"
    );
    let before = dma::fault_counters();
    let report =
        edu_transfer(Direction::FromDevice, &dst, EDU_LEN).map_err(|e| format!("{e:?}"))?;
    let bad = wrong_bytes(&dst.as_slice()[..EDU_LEN], 0x5a);
    check!(bad == 0, "{bad} bytes wrong after the faulting DMA");
    check!(
        report.stats.faults >= 1,
        "no fault counted for an untouched page"
    );
    check!(
        report.stats.retransmitted_bytes > 0,
        "the spoiled segment was not retransmitted"
    );
    check!(
        dma::fault_counters().device_faults > before.device_faults,
        "the SMMU reported no fault"
    );
    libos::println!(
        "selftest: untouched 4 KiB DMA: {} fault(s), {} bytes retransmitted",
        report.stats.faults,
        report.stats.retransmitted_bytes
    );
    Ok(())
}

pub fn dma_from_evicted_buffer() -> Outcome {
    let mut src = Region::demand_zero_low(FRAME_SIZE).map_err(|e| format!("{e}"))?;
    fill(src.as_mut_slice(), 0xc3);
    src.evict(0..FRAME_SIZE).map_err(|e| format!("{e}"))?;
    check!(src.resident_pages() == 0, "the source is still resident");
    let report = edu_transfer(Direction::ToDevice, &src, EDU_LEN).map_err(|e| format!("{e:?}"))?;
    check!(
        report.stats.faults >= 1,
        "reading an evicted page did not fault"
    );
    let mut dst = Region::demand_zero_low(FRAME_SIZE).map_err(|e| format!("{e}"))?;
    dst.populate(0..FRAME_SIZE).map_err(|e| format!("{e}"))?;
    edu_transfer(Direction::FromDevice, &dst, EDU_LEN).map_err(|e| format!("{e:?}"))?;
    let bad = wrong_bytes(&dst.as_slice()[..EDU_LEN], 0xc3);
    check!(
        bad == 0,
        "{bad} bytes wrong: the device read the evicted page as zeros"
    );
    Ok(())
}

pub fn device_write_to_read_only_page() -> Outcome {
    load_edu(0x11)?;
    let mut dst = Region::demand_zero_low(FRAME_SIZE).map_err(|e| format!("{e}"))?;
    dst.populate(0..FRAME_SIZE).map_err(|e| format!("{e}"))?;
    dst.set_writable(false);
    match edu_transfer(Direction::FromDevice, &dst, EDU_LEN) {
        Err(TransferError::Unresolvable {
            error: ::dma::MemError::PermissionDenied,
            ..
        }) => {}
        other => return Err(format!("expected a permission error, got {other:?}")),
    }
    check!(
        dst.as_slice().iter().all(|&b| b == 0),
        "the device wrote to a read-only page"
    );
    Ok(())
}

pub fn dma_outside_every_region() -> Outcome {
    load_edu(0x22)?;
    let canary = Region::demand_zero_low(2 * FRAME_SIZE).map_err(|e| format!("{e}"))?;
    let nowhere = canary.start() + canary.len() + FRAME_SIZE / 2;
    let transfer = Transfer {
        direction: Direction::FromDevice,
        pieces: alloc::vec![nowhere..nowhere + 512],
        device_addr: EDU_BUFFER,
        device_key: 0,
        policy: Policy::FaultAware,
    };
    // Tests the raw form on purpose (apps use `dma::run_on`, `dma::submit_owned`).
    // SAFETY: the address is in no region on purpose: no Rust value can
    // be written; the SMMU stops the device, which was granted nothing.
    match unsafe { dma::run(edu()?, transfer) } {
        Err(TransferError::Unresolvable {
            error: ::dma::MemError::NotGranted,
            va,
        }) => {
            check!(va == nowhere & !(FRAME_SIZE - 1), "error names {va:#x}");
        }
        other => return Err(format!("expected an isolation fault, got {other:?}")),
    }
    check!(
        canary.resident_pages() == 0,
        "a neighbouring region was touched"
    );
    Ok(())
}

pub fn event_queue_overflow_is_recovered() -> Outcome {
    load_edu(0x77)?;
    libos::iommu::set_event_queue_size(3).map_err(|e| format!("{e:?}"))?;
    let dst = Region::demand_zero_low(FRAME_SIZE).map_err(|e| format!("{e}"))?;
    let before = dma::fault_counters();
    let result = edu_transfer(Direction::FromDevice, &dst, EDU_LEN);
    let lost = dma::fault_counters().lost_event_reports - before.lost_event_reports;
    libos::iommu::set_event_queue_size(15).map_err(|e| format!("{e:?}"))?;
    result.map_err(|e| format!("{e:?}"))?;
    check!(
        lost >= 1,
        "an 8-entry event queue did not overflow on a 4 KiB fault"
    );
    let bad = wrong_bytes(&dst.as_slice()[..EDU_LEN], 0x77);
    check!(
        bad == 0,
        "{bad} bytes wrong after recovering from lost events"
    );
    Ok(())
}

pub fn nvme_round_trips_under_every_policy() -> Outcome {
    let (engine, info) = dma::nvme().map_err(|e| format!("nvme: {e:?}"))?;
    const LEN: usize = 256 * 1024;
    for (k, policy) in [
        Policy::Pin,
        Policy::Prefault,
        Policy::FaultAware,
        Policy::FaultAwarePrefetch,
    ]
    .into_iter()
    .enumerate()
    {
        let seed = 0x30 + k as u8;
        let mut src = Region::demand_zero(LEN).map_err(|e| format!("{e}"))?;
        fill(src.as_mut_slice(), seed);
        // Half the source is evicted: the device must not read zeros there.
        src.evict(LEN / 2..LEN).map_err(|e| format!("{e}"))?;
        let disk = (k * LEN) as u64;
        check!(disk + LEN as u64 <= info.capacity, "disk too small");
        // The safe calls: each slice is borrowed for its whole transfer.
        let w = dma::write(engine, src.as_slice(), disk, policy)
            .map_err(|e| format!("{policy:?} write: {e:?}"))?;
        let mut dst = Region::demand_zero(LEN).map_err(|e| format!("{e}"))?;
        let r = dma::read(engine, dst.as_mut_slice(), disk, policy)
            .map_err(|e| format!("{policy:?} read: {e:?}"))?;
        let bad = wrong_bytes(dst.as_slice(), seed);
        check!(
            bad == 0,
            "{policy:?}: {bad} bytes wrong after the disk round trip"
        );
        if policy == Policy::Pin {
            check!(
                w.stats.faults + r.stats.faults == 0,
                "pinned buffers faulted"
            );
        }
        if policy == Policy::FaultAware {
            // At least one fault; not one per page, because 64 faulting pages
            // log more records than the event queue holds, and after lost
            // events whole segments are retransmitted without a fault each.
            check!(
                r.stats.faults + r.stats.lost_event_segments > 0,
                "reading into untouched pages did not fault"
            );
        }
        libos::println!(
            "selftest: nvme {policy:?}: write {} faults, read {} faults, {} bytes retransmitted",
            w.stats.faults,
            r.stats.faults,
            w.stats.retransmitted_bytes + r.stats.retransmitted_bytes
        );
    }
    Ok(())
}

/// Every core opens edu and NVMe at once, before any other test has: each
/// device must be brought up exactly once (one engine, the same for all;
/// a second bring-up would reset the controller under the first).
pub fn devices_opened_on_every_core_at_once_are_opened_once() -> Outcome {
    let cores = libos::smp::cores();
    let opened = libos::sync::IrqSpinLock::new(alloc::vec::Vec::new());
    libos::smp::on_each_core(|core| {
        let edu = dma::edu().map(|id| id.0);
        let nvme = dma::nvme().map(|(id, _)| id.0);
        opened.lock().push((core, edu, nvme));
    });
    let opened = core::mem::take(&mut *opened.lock());
    check!(
        opened.len() == cores,
        "{} of {cores} cores ran",
        opened.len()
    );
    let (_, edu, nvme) = opened[0];
    check!(
        edu.is_ok() && nvme.is_ok(),
        "core {}: {:?} {:?}",
        opened[0].0,
        edu,
        nvme
    );
    for &(core, e, n) in &opened {
        check!(
            (e, n) == (edu, nvme),
            "core {core} got edu {e:?} and nvme {n:?}, another core edu {edu:?} and nvme {nvme:?}"
        );
    }
    Ok(())
}

/// Every core writes a half-evicted buffer to NVMe and reads it back into
/// an untouched one, all at once, under `FaultAware`: the cores wait on
/// DMA together, so each runs the DMA service and resolves the faults it
/// drained, outside the service's lock, while the others believe
/// completions and retransmit. Every byte is compared.
pub fn nvme_round_trips_on_every_core_at_once() -> Outcome {
    let (engine, info) = dma::nvme().map_err(|e| format!("nvme: {e:?}"))?;
    const LEN: usize = 256 * 1024;
    const DISK: u64 = 64 << 20;
    let cores = libos::smp::cores();
    check!(
        DISK + (cores * LEN) as u64 <= info.capacity,
        "disk too small"
    );
    let seed = |core: usize| 0x60 + core as u8;
    let mut sources = alloc::vec::Vec::new();
    let mut destinations = alloc::vec::Vec::new();
    for core in 0..cores {
        let mut src = Region::demand_zero(LEN).map_err(|e| format!("{e}"))?;
        fill(src.as_mut_slice(), seed(core));
        src.evict(LEN / 2..LEN).map_err(|e| format!("{e}"))?;
        sources.push(src);
        destinations.push(Region::demand_zero(LEN).map_err(|e| format!("{e}"))?);
    }
    let ranges: alloc::vec::Vec<_> = (sources.iter().zip(&destinations))
        .map(|(s, d)| (s.range(), d.range()))
        .collect();
    let failures = libos::sync::IrqSpinLock::new(alloc::vec::Vec::new());
    let before = dma::fault_counters().resolved_by_core;
    libos::smp::on_each_core(|core| {
        let (src, dst) = ranges[core].clone();
        let disk = DISK + (core * LEN) as u64;
        let leg = |direction, memory| Transfer {
            direction,
            pieces: alloc::vec![memory],
            device_addr: disk,
            device_key: 0,
            policy: Policy::FaultAware,
        };
        // Tests the raw form on purpose (apps use `dma::run_on`, `dma::submit_owned`).
        // SAFETY: this core's own regions, which outlive `on_each_core`;
        // nothing else touches them until it returns.
        let result = unsafe { run_granted(engine, leg(Direction::ToDevice, src)) }
            // Tests the raw form on purpose (apps use `dma::run_on`, `dma::submit_owned`).
            .and_then(|_| unsafe { run_granted(engine, leg(Direction::FromDevice, dst)) });
        if let Err(e) = result {
            failures.lock().push(format!("core {core}: {e:?}"));
        }
    });
    let after = dma::fault_counters().resolved_by_core;
    let failures = failures.lock().clone();
    check!(failures.is_empty(), "{failures:?}");
    for (core, dst) in destinations.iter().enumerate() {
        let bad = wrong_bytes(dst.as_slice(), seed(core));
        check!(
            bad == 0,
            "core {core}: {bad} bytes wrong after the round trip"
        );
    }
    let by_core: alloc::vec::Vec<u64> = after.iter().zip(before).map(|(a, b)| a - b).collect();
    check!(
        by_core.iter().sum::<u64>() > 0,
        "reading into untouched pages resolved no fault"
    );
    libos::println!("selftest: nvme on {cores} cores at once: faults resolved by core {by_core:?}");
    Ok(())
}

/// A gather write on NVMe (one command, an SGL) whose pieces sit at odd
/// byte offsets, the largest over an evicted page: the device reads zeros
/// there, the scheduler resolves the fault and retransmits the spoiled
/// blocks. Then a plain read back and a scatter read into odd offsets,
/// both compared byte for byte.
pub fn nvme_gathers_odd_pieces_through_a_fault() -> Outcome {
    let (engine, info) = dma::nvme().map_err(|e| format!("nvme: {e:?}"))?;
    check!(
        info.max_pieces > 1,
        "the controller takes no byte-granular SGLs (Identify SGLS)"
    );
    let block = info.block_size;
    let mut small = Region::eager(FRAME_SIZE).map_err(|e| format!("{e}"))?;
    let mut value = Region::demand_zero(4 * FRAME_SIZE).map_err(|e| format!("{e}"))?;
    fill(small.as_mut_slice(), 0x51);
    fill(value.as_mut_slice(), 0x52);
    let (s, v) = (small.start(), value.start());
    let mut pieces = alloc::vec![
        s + 3..s + 40,
        v + 5..v + 5 + 2 * FRAME_SIZE + 777,
        s + 101..s + 103
    ];
    let used: usize = pieces.iter().map(|p| p.len()).sum();
    let pad = used.next_multiple_of(block) - used;
    pieces.push(s + 1000..s + 1000 + pad);
    let total = used + pad;
    let mut expected = alloc::vec::Vec::with_capacity(total);
    for p in &pieces {
        let (region, base) = if p.start >= v {
            (&value, v)
        } else {
            (&small, s)
        };
        expected.extend_from_slice(&region.as_slice()[p.start - base..p.end - base]);
    }
    // The value's middle page goes to the backing store: the device reads
    // zeros there and faults. (One faulting page per command: QEMU 7.2's
    // DMA helpers bounce a faulting page through a single buffer and stall
    // for good when a second one is needed at a non-block-aligned offset.)
    value
        .evict(FRAME_SIZE..2 * FRAME_SIZE)
        .map_err(|e| format!("{e}"))?;
    let disk = 2 << 20;
    check!(disk + total as u64 <= info.capacity, "disk too small");
    let write = Transfer {
        direction: Direction::ToDevice,
        pieces: pieces.clone(),
        device_addr: disk,
        device_key: 0,
        policy: Policy::FaultAware,
    };
    // Tests the raw form on purpose (apps use `dma::run_on`, `dma::submit_owned`).
    // SAFETY: the test's own memory, untouched until `run` returns.
    let w = unsafe { run_granted(engine, write) }.map_err(|e| format!("gather write: {e:?}"))?;
    check!(
        w.stats.segments == 1,
        "{} commands for one gather list",
        w.stats.segments
    );
    check!(
        w.stats.faults > 0 && w.stats.retransmissions > 0,
        "the evicted value did not fault (faults {}, retransmissions {})",
        w.stats.faults,
        w.stats.retransmissions
    );
    let back =
        Region::demand_zero(total.next_multiple_of(FRAME_SIZE)).map_err(|e| format!("{e}"))?;
    let read = Transfer::contiguous(
        Direction::FromDevice,
        back.start()..back.start() + total,
        disk,
        Policy::FaultAwarePrefetch,
    );
    // Tests the raw form on purpose (apps use `dma::run_on`, `dma::submit_owned`).
    // SAFETY: the test's own memory, untouched until `run` returns.
    unsafe { run_granted(engine, read) }.map_err(|e| format!("read back: {e:?}"))?;
    let bad = (back.as_slice()[..total].iter())
        .zip(&expected)
        .filter(|(a, b)| a != b)
        .count();
    check!(bad == 0, "{bad} bytes wrong after the gather write");
    // Scatter: the same bytes into odd offsets of another buffer.
    let into = Region::eager(6 * FRAME_SIZE).map_err(|e| format!("{e}"))?;
    let t = into.start();
    let split = 1234;
    let scatter = alloc::vec![
        t + 7..t + 7 + split,
        t + 3 * FRAME_SIZE + 1..t + 3 * FRAME_SIZE + 1 + (total - split)
    ];
    let read = Transfer {
        direction: Direction::FromDevice,
        pieces: scatter.clone(),
        device_addr: disk,
        device_key: 0,
        policy: Policy::FaultAwarePrefetch,
    };
    // Tests the raw form on purpose (apps use `dma::run_on`, `dma::submit_owned`).
    // SAFETY: the test's own memory, untouched until `run` returns.
    unsafe { run_granted(engine, read) }.map_err(|e| format!("scatter read: {e:?}"))?;
    let mut landed = alloc::vec::Vec::with_capacity(total);
    for p in &scatter {
        landed.extend_from_slice(&into.as_slice()[p.start - t..p.end - t]);
    }
    check!(landed == expected, "scatter read differs");
    libos::println!(
        "selftest: nvme gather: {} pieces, {} bytes, write {} faults, {} bytes retransmitted",
        pieces.len(),
        total,
        w.stats.faults,
        w.stats.retransmitted_bytes
    );
    Ok(())
}

/// A device reads a huge-page buffer never written (the SMMU faults, the
/// shared zero block is mapped read-only, the disk gets zeros and no frame
/// is used), then writes into the same buffer: the SMMU reports a
/// permission fault, the buffer gets a block of its own, the spoiled
/// command is retransmitted and the data lands there, not in the zero block.
pub fn device_write_after_read_of_the_zero_block() -> Outcome {
    let (engine, info) = dma::nvme().map_err(|e| format!("nvme: {e:?}"))?;
    const LEN: usize = 256 * 1024;
    let (zeros_at, data_at) = (8u64 << 20, 9u64 << 20);
    check!(data_at + LEN as u64 <= info.capacity, "disk too small");
    let run = |direction, range: core::ops::Range<usize>, disk| {
        let transfer = Transfer {
            direction,
            pieces: alloc::vec![range],
            device_addr: disk,
            device_key: 0,
            policy: Policy::FaultAware,
        };
        // Tests the raw form on purpose (apps use `dma::run_on`, `dma::submit_owned`).
        // SAFETY: the test's own memory, untouched until `run` returns.
        unsafe { run_granted(engine, transfer) }
            .map_err(|e| format!("{direction:?} at {disk:#x}: {e:?}"))
    };
    let mut src = Region::demand_zero(LEN).map_err(|e| format!("{e}"))?;
    fill(src.as_mut_slice(), 0x61);
    run(Direction::ToDevice, src.range(), data_at)?;

    let buf = Region::demand_zero_huge(libos::mm::BLOCK_SIZE).map_err(|e| format!("{e}"))?;
    let head = buf.start()..buf.start() + LEN;
    let w = run(Direction::ToDevice, head.clone(), zeros_at)?;
    check!(
        w.stats.faults > 0,
        "reading an untouched buffer did not fault"
    );
    check!(
        buf.is_resident(0) && buf.resident_pages() == 0,
        "a device read took frames ({} resident)",
        buf.resident_pages()
    );
    let r = run(Direction::FromDevice, head, data_at)?;
    check!(
        r.stats.faults > 0,
        "writing into the zero block did not fault"
    );
    let bad = wrong_bytes(&buf.as_slice()[..LEN], 0x61);
    check!(bad == 0, "{bad} bytes wrong after the device wrote");
    check!(
        buf.resident_pages() == 512,
        "{} pages of its own after the write",
        buf.resident_pages()
    );
    let fresh = Region::demand_zero_huge(libos::mm::BLOCK_SIZE).map_err(|e| format!("{e}"))?;
    check!(
        fresh.as_slice().iter().all(|&b| b == 0),
        "the device wrote into the shared zero block"
    );
    let back = Region::demand_zero(LEN).map_err(|e| format!("{e}"))?;
    run(Direction::FromDevice, back.range(), zeros_at)?;
    check!(
        back.as_slice().iter().all(|&b| b == 0),
        "the disk did not get zeros from the untouched buffer"
    );
    Ok(())
}

/// QEMU 7.2's NVMe stalls for good on a gather command whose pieces fault
/// on two pages at offsets that are not block-aligned (its DMA helpers
/// bounce one faulting page through a single buffer). The device never
/// completes: the DMA watchdog must stop the controller and end the
/// transfer with a timeout, and later transfers must fail at once instead
/// of hanging. It disables the controller, so it runs alone (`selftest
/// nvme-stall`).
/// Pages of the stalling command's odd piece.
const STALL_PAGES: usize = 16;

pub fn a_stalled_nvme_command_times_out() -> Outcome {
    let (engine, info) = dma::nvme().map_err(|e| format!("nvme: {e:?}"))?;
    check!(
        info.max_pieces > 1,
        "the controller takes no byte-granular SGLs"
    );
    // Whether QEMU stalls depends on its own timing (a bounce buffer still
    // in use): a command it does complete is correct too, and the next one,
    // on fresh evicted pages, tries again.
    let mut completed = 0;
    let waited = loop {
        let start = libos::time::now();
        match stalling_gather_write(engine, info.block_size)? {
            Ok(_) if completed < STALL_TRIES => completed += 1,
            Ok(report) => {
                return Err(format!(
                    "QEMU completed all {} commands (last: {report:?}): nothing stalled",
                    STALL_TRIES + 1
                ))
            }
            Err(TransferError::Engine(::dma::EngineError::TimedOut)) => break start.elapsed(),
            Err(e) => return Err(format!("expected a timeout, got {e:?}")),
        }
    };
    check!(
        waited >= core::time::Duration::from_secs(9),
        "timed out after only {} ms",
        waited.as_millis()
    );
    // The stopped engine refuses new work at once.
    let mut again = [0u8; 512];
    let t = libos::time::now();
    let later = dma::read(engine, &mut again, 0, Policy::Pin);
    check!(
        later.is_err() && t.elapsed() < core::time::Duration::from_secs(2),
        "a transfer after the stop: {later:?} after {} ms",
        t.elapsed().as_millis()
    );
    libos::println!(
        "nvme-stall: the stalled command ended TimedOut after {} ms ({completed} completed before it); later transfers fail at once",
        waited.as_millis()
    );
    Ok(())
}

/// Commands that may complete before one stalls.
const STALL_TRIES: usize = 2;

/// A gather write of a small piece and a large odd one whose pages were
/// evicted: many faulting pages in one command, at unaligned offsets.
fn stalling_gather_write(
    engine: dma::EngineId,
    block: usize,
) -> Result<Result<dma::TransferReport, TransferError>, String> {
    let mut head = Region::eager(FRAME_SIZE).map_err(|e| format!("{e}"))?;
    let mut value = Region::demand_zero(STALL_PAGES * FRAME_SIZE).map_err(|e| format!("{e}"))?;
    fill(head.as_mut_slice(), 0x61);
    fill(value.as_mut_slice(), 0x62);
    let (h, v) = (head.start(), value.start());
    value
        .evict(FRAME_SIZE..(STALL_PAGES - 1) * FRAME_SIZE)
        .map_err(|e| format!("{e}"))?;
    let mut pieces = alloc::vec![h + 3..h + 40, v + 5..v + 5 + (STALL_PAGES - 1) * FRAME_SIZE];
    let used: usize = pieces.iter().map(|p| p.len()).sum();
    let pad = used.next_multiple_of(block) - used;
    pieces.push(h + 1000..h + 1000 + pad);
    let write = Transfer {
        direction: Direction::ToDevice,
        pieces,
        device_addr: 4 << 20,
        device_key: 0,
        policy: Policy::FaultAware,
    };
    // Tests the raw form on purpose (apps use `dma::run_on`, `dma::submit_owned`).
    // SAFETY: the test's own memory; `run` returns only once the device
    // can no longer touch it (done, or stopped by the watchdog), and the
    // regions outlive it.
    Ok(unsafe { run_granted(engine, write) })
}
