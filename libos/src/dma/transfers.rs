//! What apps call: transfers on their own memory (the safe forms borrow
//! it; [`submit`] and [`run`] take raw addresses), waiting for them, and
//! the grants that let a confined device reach memory.

extern crate alloc;

use super::service::{queue, service, stream_of, take_finished};
use crate::mm;
use alloc::vec::Vec;
use core::ops::Range;
use core::time::Duration;
use dma::{
    Direction, EngineId, Policy, SubmitError, Transfer, TransferError, TransferId, TransferReport,
};

/// Queues a transfer on raw addresses and starts what it can; see [`wait`].
/// Safe code uses [`read`], [`write`], [`read_scatter`] or
/// [`write_gather`], which borrow the memory for the transfer.
///
/// # Safety
///
/// From this call until the transfer's outcome is taken ([`wait`],
/// [`try_take`], [`take_finished`]), the memory of `transfer.pieces`:
/// - must stay allocated (no `Region` or heap block holding it is freed);
/// - for `FromDevice`, must not be read or written by anything else (the
///   device writes it, at any time, in any order);
/// - for `ToDevice`, must not be written by anything else.
///
/// Memory no Rust value owns (an unmapped address, a device window) may be
/// named on purpose, as the isolation tests do: the SMMU then reports the
/// fault and the transfer ends with an error.
pub unsafe fn submit(engine: EngineId, transfer: Transfer) -> Result<TransferId, SubmitError> {
    let id = queue(engine, transfer)?;
    service();
    Ok(id)
}

/// The outcome of transfer `id`, if it has finished.
pub fn try_take(id: TransferId) -> Option<Result<TransferReport, TransferError>> {
    service();
    take_finished(id)
}

/// Waits for transfer `id` to finish (in low power between interrupts).
pub fn wait(id: TransferId) -> Result<TransferReport, TransferError> {
    loop {
        if let Some(result) = try_take(id) {
            return result;
        }
        crate::time::wait_for_interrupt_or(Duration::from_millis(1));
    }
}

/// Runs one transfer on raw addresses to the end.
///
/// # Safety
///
/// As for [`submit`], until this returns.
pub unsafe fn run(engine: EngineId, transfer: Transfer) -> Result<TransferReport, TransferError> {
    // SAFETY: the caller keeps the contract until `wait` returns, which is
    // when the transfer's outcome is taken.
    let id = unsafe { submit(engine, transfer) }.map_err(TransferError::Submit)?;
    wait(id)
}

/// Moves device bytes from `device_addr` on into `buf`, which is borrowed
/// for the whole transfer: no other code can read or write it meanwhile.
pub fn read(
    engine: EngineId,
    buf: &mut [u8],
    device_addr: u64,
    policy: Policy,
) -> Result<TransferReport, TransferError> {
    read_scatter(engine, &mut [buf], device_addr, policy)
}

/// Moves `buf` to the device at `device_addr`; `buf` is borrowed (and so
/// cannot change) for the whole transfer.
pub fn write(
    engine: EngineId,
    buf: &[u8],
    device_addr: u64,
    policy: Policy,
) -> Result<TransferReport, TransferError> {
    write_gather(engine, &[buf], device_addr, policy)
}

/// Moves one run of device bytes from `device_addr` on into `pieces`, in
/// order (a scatter list); each piece is borrowed for the whole transfer.
pub fn read_scatter(
    engine: EngineId,
    pieces: &mut [&mut [u8]],
    device_addr: u64,
    policy: Policy,
) -> Result<TransferReport, TransferError> {
    let ranges: Vec<_> = pieces.iter_mut().map(|p| address_range(p)).collect();
    let _grants = grant_pieces(engine, &ranges, Rights::ReadWrite);
    let transfer = Transfer {
        direction: Direction::FromDevice,
        pieces: ranges,
        device_addr,
        device_key: 0,
        policy,
    };
    // SAFETY: every piece is exclusively borrowed until `run` returns, so
    // it stays allocated and nothing else reads or writes it meanwhile.
    unsafe { run(engine, transfer) }
}

/// Moves `pieces`, in order, to the device as one run of bytes from
/// `device_addr` on (a gather list); each piece is borrowed for the whole
/// transfer.
pub fn write_gather(
    engine: EngineId,
    pieces: &[&[u8]],
    device_addr: u64,
    policy: Policy,
) -> Result<TransferReport, TransferError> {
    let ranges: Vec<_> = pieces.iter().map(|p| address_range(p)).collect();
    let _grants = grant_pieces(engine, &ranges, Rights::Read);
    let transfer = Transfer {
        direction: Direction::ToDevice,
        pieces: ranges,
        device_addr,
        device_key: 0,
        policy,
    };
    // SAFETY: every piece is borrowed until `run` returns, so it stays
    // allocated and nothing writes it meanwhile.
    unsafe { run(engine, transfer) }
}

pub use crate::iommu::{Grant, GrantError, Rights};

/// Lets `engine`'s device reach `memory` (whole pages of one region, not
/// the heap) with `rights`, until the [`Grant`] is dropped. A device the
/// SMMU confines reaches nothing else: a transfer on memory it was not
/// granted fails with `MemError::NotGranted` at the device's first access
/// there, and not one byte of that memory changes. Granting pins and
/// touches nothing. Devices that move physical addresses (ZDMA, SD) and
/// those not confined get a grant that changes nothing.
///
/// ```text
/// let buf = Region::demand_zero(1 << 20)?;
/// let _grant = dma::grant(engine, buf.range(), Rights::ReadWrite)?;
/// unsafe { dma::run(engine, Transfer::contiguous(FromDevice, buf.range(), 0, policy)) }?;
/// ```
pub fn grant(engine: EngineId, memory: Range<usize>, rights: Rights) -> Result<Grant, GrantError> {
    let stream = stream_of(engine);
    match stream {
        Some(stream) => crate::iommu::grant(stream, memory, rights),
        None => Err(GrantError::NotGrantable(mm::NotGrantable::NotInOneRegion)),
    }
}

/// Lets `engine`'s device reach the pages of `memory`, wherever they are
/// (heap buffers too), with `rights`, until the [`Grant`] is dropped: for
/// one transfer on memory that is not a region of its own.
///
/// # Safety
///
/// Until the grant is dropped the device may read (with `ReadWrite`, also
/// write) every byte of the pages touching `memory`: they must be the
/// caller's, the rest of each page around a smaller buffer included.
pub unsafe fn grant_memory(
    engine: EngineId,
    memory: Range<usize>,
    rights: Rights,
) -> Result<Grant, GrantError> {
    let stream = stream_of(engine);
    match stream {
        // SAFETY: the caller's contract.
        Some(stream) => unsafe { crate::iommu::grant_memory(stream, memory, rights) },
        None => Err(GrantError::NotGrantable(mm::NotGrantable::NotInOneRegion)),
    }
}

/// Grants the pages of the pieces for one transfer of the safe forms, as
/// few grants as possible: pieces that share a page share a grant (only
/// those: a page lies in one region, but neighbouring pages may not).
///
/// The borrow covers the pieces' bytes; the rest of their first and last
/// pages is reachable too while the transfer runs (an SMMU maps whole
/// pages). The device is told only the pieces.
fn grant_pieces(engine: EngineId, pieces: &[Range<usize>], rights: Rights) -> Vec<Grant> {
    page_spans(pieces)
        .into_iter()
        // SAFETY: each span holds pieces borrowed by the caller for the
        // transfer, which ends before the grants are dropped.
        .filter_map(|span| unsafe { grant_memory(engine, span, rights) }.ok())
        .collect()
}

/// The pages the pieces touch, spans that share a page merged.
fn page_spans(pieces: &[Range<usize>]) -> Vec<Range<usize>> {
    let page = mm::FRAME_SIZE;
    let mut spans: Vec<Range<usize>> = pieces
        .iter()
        .map(|p| p.start / page * page..p.end.next_multiple_of(page))
        .collect();
    spans.sort_by_key(|r| r.start);
    let mut merged: Vec<Range<usize>> = Vec::with_capacity(spans.len());
    for span in spans {
        match merged.last_mut() {
            Some(last) if span.start < last.end => last.end = last.end.max(span.end),
            _ => merged.push(span),
        }
    }
    merged
}

/// The addresses of `bytes`.
fn address_range(bytes: &[u8]) -> Range<usize> {
    let start = bytes.as_ptr() as usize;
    start..start + bytes.len()
}
