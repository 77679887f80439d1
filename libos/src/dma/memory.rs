//! The memory manager as the DMA scheduler sees it ([`KernelMemory`]), and
//! as one device stream sees it through the SMMU ([`StreamMemory`]).

use crate::mm::{self, FaultError, MmError};
use core::ops::Range;

/// The memory manager as the scheduler sees it.
pub(super) struct KernelMemory;

fn mem_error(e: MmError) -> dma::MemError {
    match e {
        MmError::OutOfFrames | MmError::TooManyPins | MmError::Fault(FaultError::OutOfFrames) => {
            dma::MemError::OutOfMemory
        }
        MmError::Fault(FaultError::PermissionDenied(_)) => dma::MemError::PermissionDenied,
        _ => dma::MemError::NoRegion,
    }
}

impl dma::Memory for KernelMemory {
    fn page_size(&self) -> usize {
        mm::FRAME_SIZE
    }

    fn is_resident(&self, va: usize, access: dma::Access) -> bool {
        mm::accessible(va, access == dma::Access::Write)
    }

    fn make_resident(&mut self, va: usize, access: dma::Access) -> Result<(), dma::MemError> {
        let access = match access {
            dma::Access::Read => mm::Access::Read,
            dma::Access::Write => mm::Access::Write,
        };
        mm::resolve(va, access)
            .map(|_| ())
            .map_err(|e| mem_error(e.into()))
    }

    fn pin(&mut self, range: Range<usize>) -> Result<(), dma::MemError> {
        mm::pin(range).map_err(mem_error)
    }

    fn unpin(&mut self, range: Range<usize>) {
        let _ = mm::unpin(range);
    }

    fn now(&self) -> u64 {
        crate::time::now().since_boot().as_nanos() as u64
    }
}

/// The memory manager as one device stream sees it: a page is resident
/// only if the device's view maps it, and a fault is resolved only where
/// the device was granted the memory (else `NotGranted`: an isolation
/// fault); a resolved page is copied into the view before the segment
/// is retried.
pub(super) struct StreamMemory<'a> {
    stream: u32,
    kernel: &'a mut KernelMemory,
}

impl<'a> StreamMemory<'a> {
    pub(super) fn new(stream: dma::StreamId, kernel: &'a mut KernelMemory) -> Self {
        StreamMemory {
            stream: stream.0,
            kernel,
        }
    }
}

fn device_access(access: dma::Access) -> crate::iommu::DeviceAccess {
    match access {
        dma::Access::Read => crate::iommu::DeviceAccess::Read,
        dma::Access::Write => crate::iommu::DeviceAccess::Write,
    }
}

impl dma::Memory for StreamMemory<'_> {
    fn page_size(&self) -> usize {
        self.kernel.page_size()
    }

    fn is_resident(&self, va: usize, access: dma::Access) -> bool {
        self.kernel.is_resident(va, access)
            && crate::iommu::reaches(self.stream, va, access == dma::Access::Write)
    }

    fn make_resident(&mut self, va: usize, access: dma::Access) -> Result<(), dma::MemError> {
        if !crate::iommu::allows(self.stream, va, device_access(access)) {
            // Reported by the service for the faulting page; a prefetch
            // that runs past the grant just stops there.
            return Err(dma::MemError::NotGranted);
        }
        self.kernel.make_resident(va, access)?;
        // Mapping a granted page copies it into the views (the memory
        // manager's hook); only a page the kernel had mapped already is
        // copied here.
        let write = access == dma::Access::Write;
        if crate::iommu::reaches(self.stream, va, write) || crate::iommu::mirror(self.stream, va) {
            Ok(())
        } else {
            Err(dma::MemError::OutOfMemory)
        }
    }

    fn pin(&mut self, range: Range<usize>) -> Result<(), dma::MemError> {
        self.kernel.pin(range)
    }

    fn unpin(&mut self, range: Range<usize>) {
        self.kernel.unpin(range)
    }

    fn now(&self) -> u64 {
        self.kernel.now()
    }
}
