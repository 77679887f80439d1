//! Device isolation: a confined device (here the NVMe controller, through
//! the unsafe raw-address API) aimed at memory it was not granted gets an
//! isolation fault from the SMMU, and not one byte there changes.
//!
//! Each test reads a disk block into the target with the raw API, no grant
//! held: a device that reached the memory would overwrite it with the
//! block's contents (written first as a pattern that differs from it).

use crate::{check, Outcome};
use alloc::format;
use alloc::vec::Vec;
use libos::dma::{self, Direction, EngineId, Policy, Transfer, TransferError};
use libos::mm::{Region, FRAME_SIZE};

/// Disk byte offset of the block the tests read (clear of other tests').
const DISK: u64 = 48 << 20;

fn nvme() -> Result<EngineId, alloc::string::String> {
    dma::nvme()
        .map(|(e, _)| e)
        .map_err(|e| format!("nvme: {e:?}"))
}

/// Writes a page of `0xa5` to the disk block the attempts read, from a
/// region granted for the purpose: whatever reached a target would differ
/// from it.
fn prepare_block(engine: EngineId) -> Outcome {
    let mut src = Region::eager(FRAME_SIZE).map_err(|e| format!("{e}"))?;
    src.as_mut_slice().fill(0xa5);
    let _grant =
        dma::grant(engine, src.range(), dma::Rights::Read).map_err(|e| format!("grant: {e:?}"))?;
    let write = Transfer::contiguous(Direction::ToDevice, src.range(), DISK, Policy::FaultAware);
    // Tests the raw form on purpose (apps use `dma::run_on`, `dma::submit_owned`).
    // SAFETY: the test's own region, untouched until `run` returns.
    unsafe { dma::run(engine, write) }.map_err(|e| format!("preparing the block: {e:?}"))?;
    Ok(())
}

/// Aims a device read of one page at `target` (page-aligned) and checks
/// the isolation fault and that the page did not change.
fn aim_at(target: usize) -> Outcome {
    let engine = nvme()?;
    prepare_block(engine)?;
    let before = isolation_faults_and_copy(target);
    let read = Transfer::contiguous(
        Direction::FromDevice,
        target..target + FRAME_SIZE,
        DISK,
        Policy::FaultAware,
    );
    // Tests the raw form on purpose (apps use `dma::run_on`, `dma::submit_owned`).
    // SAFETY: on purpose, memory Rust code owns: the SMMU must stop the
    // device before it writes a byte (what this test checks).
    let outcome = unsafe { dma::run(engine, read) };
    match outcome {
        Err(TransferError::Unresolvable {
            error: ::dma::MemError::NotGranted,
            va,
        }) => check!(va == target, "the error names {va:#x}, not {target:#x}"),
        other => return Err(format!("expected an isolation fault, got {other:?}")),
    }
    let after = isolation_faults_and_copy(target);
    check!(after.0 > before.0, "the isolation fault was not counted");
    let changed = before
        .1
        .iter()
        .zip(&after.1)
        .filter(|(a, b)| a != b)
        .count();
    check!(changed == 0, "{changed} byte(s) of the target changed");
    Ok(())
}

/// The isolation-fault count and a copy of the page at `page`.
fn isolation_faults_and_copy(page: usize) -> (u64, Vec<u8>) {
    // SAFETY: `page` is a mapped, readable page (text, a page table, the
    // heap, a region), read as bytes with no reference kept.
    let bytes = unsafe { core::slice::from_raw_parts(page as *const u8, FRAME_SIZE) };
    (libos::iommu::isolation_faults(), bytes.to_vec())
}

/// DMA aimed at the kernel's own code.
pub fn dma_into_kernel_text() -> Outcome {
    let text = (aim_at as fn(usize) -> Outcome) as usize & !(FRAME_SIZE - 1);
    aim_at(text)
}

/// DMA aimed at the kernel page table's root.
pub fn dma_into_a_page_table() -> Outcome {
    aim_at(libos::mm::kernel_root())
}

/// DMA aimed at a heap page holding a live object.
pub fn dma_into_the_heap() -> Outcome {
    let boxed = alloc::vec![0x5au8; 3 * FRAME_SIZE];
    let page = (boxed.as_ptr() as usize).next_multiple_of(FRAME_SIZE);
    aim_at(page)?;
    check!(boxed.iter().all(|&b| b == 0x5a), "the heap object changed");
    Ok(())
}

/// DMA aimed at a region that was granted to no device, and at one
/// granted read-only (a device write there is refused too).
pub fn dma_into_an_ungranted_region() -> Outcome {
    let mut region = Region::eager(FRAME_SIZE).map_err(|e| format!("{e}"))?;
    region.as_mut_slice().fill(0x3c);
    aim_at(region.start())?;
    let _read_only = dma::grant(nvme()?, region.range(), dma::Rights::Read)
        .map_err(|e| format!("grant: {e:?}"))?;
    aim_at(region.start())?;
    check!(
        region.as_slice().iter().all(|&b| b == 0x3c),
        "the region changed"
    );
    Ok(())
}

/// A grant is undone by dropping it: the same transfer lands while it is
/// held and is refused once it is dropped.
pub fn a_dropped_grant_is_revoked() -> Outcome {
    let engine = nvme()?;
    prepare_block(engine)?;
    let region = Region::eager(FRAME_SIZE).map_err(|e| format!("{e}"))?;
    let read = || {
        Transfer::contiguous(
            Direction::FromDevice,
            region.range(),
            DISK,
            Policy::FaultAware,
        )
    };
    let grant = dma::grant(engine, region.range(), dma::Rights::ReadWrite)
        .map_err(|e| format!("grant: {e:?}"))?;
    // Tests the raw form on purpose (apps use `dma::run_on`, `dma::submit_owned`).
    // SAFETY: the test's own region, not touched until `run` returns.
    unsafe { dma::run(engine, read()) }.map_err(|e| format!("granted read: {e:?}"))?;
    check!(
        region.as_slice().iter().all(|&b| b == 0xa5),
        "the granted read did not land"
    );
    drop(grant);
    // Tests the raw form on purpose (apps use `dma::run_on`, `dma::submit_owned`).
    // SAFETY: as above.
    match unsafe { dma::run(engine, read()) } {
        Err(TransferError::Unresolvable {
            error: ::dma::MemError::NotGranted,
            ..
        }) => Ok(()),
        other => Err(format!(
            "expected an isolation fault after the drop, got {other:?}"
        )),
    }
}
