//! What the DMA service needs of a device beyond the scheduler's view
//! ([`DeviceEngine`]), and how each of the kernel's device engines gives it.

extern crate alloc;

use alloc::vec::Vec;
use hw::edu::EduEngine;
use hw::nvme::NvmeEngine;
use hw::zdma::ZdmaEngine;

/// What became of a page that faulted outside any transfer, as the
/// service tells the engine waiting on it ([`DeviceEngine::page_ready`]).
/// (A named outcome, not a `bool`: the RDMA engine's wire flag says the
/// opposite, "failed".)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageReadiness {
    /// The page is resident now, as the device sees it: retry the access.
    Resolved,
    /// The page can never be made resident (not granted, no such region,
    /// no memory): give up the access.
    Failed,
}

/// A device engine the kernel drives: the scheduler's view plus a way to
/// collect finished segments.
pub trait DeviceEngine: dma::Engine + Send {
    /// Collects segments the device has finished since the last call.
    fn poll_completions(&mut self, out: &mut Vec<(dma::SegmentId, dma::Completion)>);
    /// The SMMU StreamID of the device.
    fn stream(&self) -> u32 {
        self.caps().stream.0
    }
    /// Whether faults of this device that match no transfer are still its
    /// own to wait on (an RDMA engine's incoming WRITEs and READs): the
    /// service then resolves the page and calls [`page_ready`](Self::page_ready).
    fn resolves_unclaimed_faults(&self) -> bool {
        false
    }
    /// The page at `va` that faulted outside any transfer is present now,
    /// or can never be (`readiness`).
    fn page_ready(&mut self, va: u64, readiness: PageReadiness) {
        let _ = (va, readiness);
    }
    /// Stops a device that stopped completing (see [`dma::watchdog`]) so
    /// that it no longer touches memory, and returns the segments it held;
    /// `None` for devices that cannot be stopped, which the watchdog then
    /// leaves alone.
    fn stop(&mut self) -> Option<Vec<dma::SegmentId>> {
        None
    }
}

impl DeviceEngine for EduEngine {
    fn poll_completions(&mut self, out: &mut Vec<(dma::SegmentId, dma::Completion)>) {
        EduEngine::poll_completions(self, |id, c| out.push((id, c)));
    }
}

impl DeviceEngine for NvmeEngine {
    fn poll_completions(&mut self, out: &mut Vec<(dma::SegmentId, dma::Completion)>) {
        NvmeEngine::poll_completions(self, |id, c| out.push((id, c)));
    }
    fn stop(&mut self) -> Option<Vec<dma::SegmentId>> {
        let mut held = Vec::new();
        if !NvmeEngine::stop(self, |id| held.push(id)) {
            log::error!("nvme: the controller did not confirm it stopped");
        }
        Some(held)
    }
}

impl DeviceEngine for ZdmaEngine {
    fn poll_completions(&mut self, out: &mut Vec<(dma::SegmentId, dma::Completion)>) {
        ZdmaEngine::poll_completions(self, |id, c| out.push((id, c)));
    }
}

impl DeviceEngine for hw::sdhci::SdEngine {
    fn poll_completions(&mut self, out: &mut Vec<(dma::SegmentId, dma::Completion)>) {
        hw::sdhci::SdEngine::poll_completions(self, |id, c| out.push((id, c)));
    }
}
