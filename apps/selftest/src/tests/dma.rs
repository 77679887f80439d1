//! DMA through the SMMU on the CPU's page table: faults resolved by the
//! memory manager, spoiled segments retransmitted by the scheduler.
//! (QEMU virt only: edu and NVMe sit behind its SMMUv3.)

use crate::{check, Outcome};
use alloc::format;
use alloc::string::String;
use libos::dma::{self, Direction, Policy, Transfer, TransferError};
use libos::mm::{Region, FRAME_SIZE};

const EDU_BUFFER: u64 = 0x40000;
/// Bytes per edu test transfer: a page less the byte QEMU 7.2's edu refuses.
const EDU_LEN: usize = FRAME_SIZE - 1;

fn pattern(i: usize, seed: u8) -> u8 {
    (i as u8).wrapping_mul(31) ^ seed ^ (i >> 8) as u8
}

fn edu() -> Result<dma::EngineId, String> {
    dma::edu().map_err(|e| format!("edu: {e:?}"))
}

fn edu_transfer(
    direction: Direction,
    region: &Region,
    len: usize,
) -> Result<dma::TransferReport, TransferError> {
    let transfer = Transfer {
        direction,
        va: region.start()..region.start() + len,
        device_addr: EDU_BUFFER,
        policy: Policy::FaultAware,
    };
    dma::run(
        edu().map_err(|_| TransferError::Engine(dma_engine_error()))?,
        transfer,
    )
}

fn dma_engine_error() -> ::dma::EngineError {
    ::dma::EngineError::Device(0)
}

/// Loads the edu buffer with `seed`'s pattern from a resident buffer.
fn load_edu(seed: u8) -> Outcome {
    let mut src = Region::demand_zero_low(FRAME_SIZE).map_err(|e| format!("{e}"))?;
    for (i, b) in src.as_mut_slice().iter_mut().enumerate() {
        *b = pattern(i, seed);
    }
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
    let bad = dst.as_slice()[..EDU_LEN]
        .iter()
        .enumerate()
        .filter(|&(i, &b)| b != pattern(i, 0x5a))
        .count();
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
    for (i, b) in src.as_mut_slice().iter_mut().enumerate() {
        *b = pattern(i, 0xc3);
    }
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
    let bad = dst.as_slice()[..EDU_LEN]
        .iter()
        .enumerate()
        .filter(|&(i, &b)| b != pattern(i, 0xc3))
        .count();
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
        va: nowhere..nowhere + 512,
        device_addr: EDU_BUFFER,
        policy: Policy::FaultAware,
    };
    match dma::run(edu()?, transfer) {
        Err(TransferError::Unresolvable {
            error: ::dma::MemError::NoRegion,
            va,
        }) => {
            check!(va == nowhere & !(FRAME_SIZE - 1), "error names {va:#x}");
        }
        other => return Err(format!("expected a no-region error, got {other:?}")),
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
    let bad = dst.as_slice()[..EDU_LEN]
        .iter()
        .enumerate()
        .filter(|&(i, &b)| b != pattern(i, 0x77))
        .count();
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
        for (i, b) in src.as_mut_slice().iter_mut().enumerate() {
            *b = pattern(i, seed);
        }
        // Half the source is evicted: the device must not read zeros there.
        src.evict(LEN / 2..LEN).map_err(|e| format!("{e}"))?;
        let disk = (k * LEN) as u64;
        check!(disk + LEN as u64 <= info.capacity, "disk too small");
        let write = Transfer {
            direction: Direction::ToDevice,
            va: src.range(),
            device_addr: disk,
            policy,
        };
        let w = dma::run(engine, write).map_err(|e| format!("{policy:?} write: {e:?}"))?;
        let dst = Region::demand_zero(LEN).map_err(|e| format!("{e}"))?;
        let read = Transfer {
            direction: Direction::FromDevice,
            va: dst.range(),
            device_addr: disk,
            policy,
        };
        let r = dma::run(engine, read).map_err(|e| format!("{policy:?} read: {e:?}"))?;
        let bad = dst
            .as_slice()
            .iter()
            .enumerate()
            .filter(|&(i, &b)| b != pattern(i, seed))
            .count();
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
