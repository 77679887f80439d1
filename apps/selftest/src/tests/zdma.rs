//! The ZynqMP's ZDMA as an engine of the DMA scheduler (zcu102). It moves
//! physical addresses with no SMMU in front of it, so it reaches only
//! pinned memory: these tests copy between pinned regions in both
//! directions, check that memory nobody pinned is refused untouched, and
//! that the policies that would leave pages free to move are refused.

use crate::{check, Outcome};
use alloc::format;
use libos::dma::{self, Direction, Policy, Transfer, TransferError};
use libos::mm::{Region, FRAME_SIZE};

/// 1 MiB and a bit, starting off a page boundary on one side.
const LEN: usize = (1 << 20) + 300;

fn pattern(i: usize) -> u8 {
    (i as u8).wrapping_mul(29) ^ (i >> 9) as u8 ^ 0x5a
}

fn engine() -> Result<dma::EngineId, alloc::string::String> {
    dma::zdma().map_err(|e| format!("zdma: {e:?}"))
}

/// Copies `len` bytes at `memory` to (`ToDevice`) or from (`FromDevice`)
/// `other`, pinning the transfer's own memory (`Policy::Pin`).
fn copy(
    direction: Direction,
    memory: usize,
    other: usize,
    len: usize,
) -> Result<dma::TransferReport, TransferError> {
    let engine = engine().map_err(|_| TransferError::Engine(::dma::EngineError::Device(0)))?;
    let transfer = Transfer::contiguous(direction, memory..memory + len, other as u64, Policy::Pin);
    // Tests the raw form on purpose (apps use `dma::run_on`, `dma::submit_owned`).
    // SAFETY: the test's own regions, alive and untouched until `run`
    // returns.
    unsafe { dma::run(engine, transfer) }
}

/// Source and destination regions, the source filled with the pattern
/// from offset 100 and the destination pinned.
fn regions() -> Result<(Region, Region), alloc::string::String> {
    let mut src = Region::demand_zero(LEN + FRAME_SIZE).map_err(|e| format!("{e:?}"))?;
    for (i, b) in src.as_mut_slice()[100..100 + LEN].iter_mut().enumerate() {
        *b = pattern(i);
    }
    let mut dst = Region::demand_zero(LEN + FRAME_SIZE).map_err(|e| format!("{e:?}"))?;
    dst.pin(0..LEN + FRAME_SIZE)
        .map_err(|e| format!("pin: {e:?}"))?;
    Ok((src, dst))
}

pub fn copies_to_a_pinned_region() -> Outcome {
    let (src, mut dst) = regions()?;
    let report = copy(Direction::ToDevice, src.start() + 100, dst.start() + 7, LEN)
        .map_err(|e| format!("copy: {e:?}"))?;
    let out = &dst.as_slice()[7..7 + LEN];
    let wrong = out
        .iter()
        .enumerate()
        .filter(|&(i, &b)| b != pattern(i))
        .count();
    check!(wrong == 0, "{wrong} bytes wrong after the copy");
    check!(
        report.stats.bytes_moved == LEN as u64,
        "moved {} bytes",
        report.stats.bytes_moved
    );
    dst.unpin(0..LEN + FRAME_SIZE)
        .map_err(|e| format!("unpin: {e:?}"))?;
    Ok(())
}

pub fn copies_from_a_pinned_region() -> Outcome {
    let (mut src, dst) = regions()?;
    src.pin(0..LEN + FRAME_SIZE)
        .map_err(|e| format!("pin: {e:?}"))?;
    // FromDevice: the transfer's memory (`dst`) receives, `src` is read.
    copy(
        Direction::FromDevice,
        dst.start() + 7,
        src.start() + 100,
        LEN,
    )
    .map_err(|e| format!("copy: {e:?}"))?;
    let wrong = dst.as_slice()[7..7 + LEN]
        .iter()
        .enumerate()
        .filter(|&(i, &b)| b != pattern(i))
        .count();
    check!(wrong == 0, "{wrong} bytes wrong after the copy");
    Ok(())
}

pub fn refuses_memory_that_is_not_pinned() -> Outcome {
    let (src, _) = regions()?;
    // A destination nobody pinned: the engine must not touch it.
    let mut loose = Region::demand_zero(LEN).map_err(|e| format!("{e:?}"))?;
    loose.as_mut_slice().fill(0xee);
    let result = copy(Direction::ToDevice, src.start() + 100, loose.start(), 4096);
    let refused = matches!(
        result,
        Err(TransferError::Engine(::dma::EngineError::Device(
            dma::ZDMA_NOT_DMA_MEMORY
        )))
    );
    check!(refused, "expected NOT_DMA_MEMORY, got {result:?}");
    check!(
        loose.as_slice().iter().all(|&b| b == 0xee),
        "the unpinned destination changed"
    );
    Ok(())
}

pub fn policies_other_than_pin_need_an_smmu() -> Outcome {
    let engine = engine()?;
    let (src, dst) = regions()?;
    for policy in [
        Policy::Prefault,
        Policy::FaultAware,
        Policy::FaultAwarePrefetch,
    ] {
        let transfer = Transfer::contiguous(
            Direction::ToDevice,
            src.start()..src.start() + 4096,
            dst.start() as u64,
            policy,
        );
        // Tests the raw form on purpose (apps use `dma::run_on`, `dma::submit_owned`).
        // SAFETY: the test's own regions, alive until `run` returns.
        let result = unsafe { dma::run(engine, transfer) };
        check!(
            result == Err(TransferError::Submit(dma::SubmitError::NeedsSmmu(policy))),
            "{}: expected NeedsSmmu, got {result:?}",
            policy.name()
        );
    }
    Ok(())
}
