//! DMA on a region the transfer holds, so that apps need no `unsafe`: the
//! region is borrowed for a transfer run to its end ([`run_on`]), or moves
//! into one in flight and comes back with its report ([`submit_owned`]),
//! as the RDMA verbs' owning forms do (`rdma::owned`).
//!
//! ```text
//!  let t = Transfer::contiguous(FromDevice, buf.range(), disk, policy);
//!  let report = dma::run_on(engine, &mut buf, t)?;     // buf borrowed until the end
//!  let pending = dma::submit_owned(engine, buf, t)?;   // buf moves in
//!  let (buf, report) = pending.wait();                 // and comes back
//! ```
//!
//! The transfer's pieces are addresses inside the region (a piece outside
//! it is refused with `SubmitError::NotInBuffer`). Granting stays the
//! caller's ([`super::grant`]), as for the raw forms: a confined device
//! reaches only what it was granted, and a transfer on memory it was not
//! fails; the grant decides what the device may reach, the region what the
//! transfer may name.

use super::transfers::{submit, wait};
use crate::mm::Region;
use core::ops::Range;
use dma::{EngineId, SubmitError, Transfer, TransferError, TransferId, TransferReport};

/// Whether every piece of `transfer` lies inside `memory`.
fn inside(memory: &Range<usize>, transfer: &Transfer) -> bool {
    transfer
        .pieces
        .iter()
        .all(|p| p.start >= memory.start && p.end <= memory.end)
}

/// Runs `transfer` on `region` to its end; its pieces must lie inside the
/// region, which is borrowed (nothing else reads or writes it) until the
/// transfer is over.
pub fn run_on(
    engine: EngineId,
    region: &mut Region,
    transfer: Transfer,
) -> Result<TransferReport, TransferError> {
    if !inside(&region.range(), &transfer) {
        return Err(TransferError::Submit(SubmitError::NotInBuffer));
    }
    // SAFETY: every piece lies inside `region`, exclusively borrowed until
    // `wait` below has taken the outcome: it stays allocated and nothing
    // else reads or writes it meanwhile.
    let id = unsafe { submit(engine, transfer) }.map_err(TransferError::Submit)?;
    wait(id)
}

/// A transfer in flight on a region it holds; [`InFlight::wait`] gives the
/// region back with the report.
pub struct InFlight {
    id: Option<TransferId>,
    region: Option<Region>,
}

/// Queues `transfer` on `region`, which moves in until the transfer is
/// over; its pieces must lie inside the region. On refusal the region
/// comes back with the reason.
pub fn submit_owned(
    engine: EngineId,
    region: Region,
    transfer: Transfer,
) -> Result<InFlight, (SubmitError, Region)> {
    if !inside(&region.range(), &transfer) {
        return Err((SubmitError::NotInBuffer, region));
    }
    // SAFETY: every piece lies inside `region`, which the InFlight owns
    // and hands out no reference to until the outcome is taken (`wait`,
    // or its Drop): it stays allocated and untouched meanwhile.
    match unsafe { submit(engine, transfer) } {
        Ok(id) => Ok(InFlight {
            id: Some(id),
            region: Some(region),
        }),
        Err(e) => Err((e, region)),
    }
}

impl InFlight {
    /// Waits for the end of the transfer; the region comes back with its
    /// outcome.
    pub fn wait(mut self) -> (Region, Result<TransferReport, TransferError>) {
        let id = self.id.take().expect("a transfer in flight has its id");
        let result = wait(id);
        let region = self
            .region
            .take()
            .expect("a transfer in flight has its region");
        (region, result)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        // Not waited for: the region may not go while the device can
        // still reach it.
        if let Some(id) = self.id.take() {
            let _ = wait(id);
        }
    }
}
