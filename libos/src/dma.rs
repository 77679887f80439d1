//! DMA service: the kernel side of the fault path (temporary: resolves only).

/// Called from the SMMU's interrupts.
pub(crate) fn service_from_irq() {
    let drained = crate::iommu::drain();
    for f in &drained.faults {
        let access = match f.access {
            smmu::Access::Read => crate::mm::Access::Read,
            smmu::Access::Write => crate::mm::Access::Write,
            smmu::Access::Execute => crate::mm::Access::Execute,
        };
        let r = crate::mm::resolve(f.iova as usize, access);
        log::info!("device fault {:?} -> {:?}", f, r);
    }
}
