//! Interrupts: the GIC, and one handler per interrupt ID.

use crate::sync::IrqSpinLock;
use hw::gicv2::{GicV2, Trigger};
use hw::mmio::Mmio;

/// Interrupt IDs a handler can be registered for.
const MAX_INTID: usize = 1020;

/// An interrupt handler: runs on the core that took the interrupt, IRQs masked.
pub type Handler = fn();

static GIC: IrqSpinLock<Option<GicV2>> = IrqSpinLock::new(None);
static TAKEN: [core::sync::atomic::AtomicU64; MAX_INTID] =
    [const { core::sync::atomic::AtomicU64::new(0) }; MAX_INTID];

/// How many times interrupt `intid` has been taken since boot.
pub fn taken(intid: u32) -> u64 {
    TAKEN
        .get(intid as usize)
        .map_or(0, |c| c.load(core::sync::atomic::Ordering::Relaxed))
}
static HANDLERS: IrqSpinLock<[Option<Handler>; MAX_INTID]> = IrqSpinLock::new([None; MAX_INTID]);

/// A registration request that cannot be honoured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IrqError {
    /// The ID is not a shared peripheral interrupt this GIC has.
    NoSuchInterrupt(u32),
}

/// Sets up the distributor and the boot core's CPU interface.
pub(crate) fn init(gicd: usize, gicc: usize) {
    // SAFETY: the board names its GIC's register blocks (4 KiB distributor,
    // 8 KiB CPU interface), mapped as device memory by the kernel table.
    let gic = unsafe { GicV2::new(Mmio::new(gicd, 0x1000), Mmio::new(gicc, 0x2000)) };
    gic.init_distributor();
    gic.init_cpu_interface();
    *GIC.lock() = Some(gic);
}

/// Sets up the calling core's CPU interface (secondary cores).
pub(crate) fn init_core() {
    with_gic(|gic| gic.init_cpu_interface());
}

fn with_gic<R>(f: impl FnOnce(&GicV2) -> R) -> R {
    f(GIC.lock().as_ref().expect("GIC is initialized at boot"))
}

/// Installs `handler` for the private interrupt `intid` (a PPI such as the
/// timer) and enables it on the calling core.
pub fn enable_local(intid: u32, handler: Handler) {
    HANDLERS.lock()[intid as usize] = Some(handler);
    with_gic(|gic| gic.enable(intid));
}

/// Installs `handler` for the shared interrupt `intid`, routes it to the
/// boot core with the given trigger, and enables it.
pub fn register(intid: u32, trigger: Trigger, handler: Handler) -> Result<(), IrqError> {
    with_gic(|gic| {
        if intid < 32 || intid >= gic.lines().min(MAX_INTID as u32) {
            return Err(IrqError::NoSuchInterrupt(intid));
        }
        HANDLERS.lock()[intid as usize] = Some(handler);
        gic.set_trigger(intid, trigger);
        gic.set_target(intid, 0);
        gic.enable(intid);
        Ok(())
    })
}

/// The calling core's bit for [`send_wakeup`].
pub(crate) fn cpu_mask() -> u8 {
    with_gic(|gic| gic.cpu_mask())
}

/// The software interrupt that wakes cores idling in WFI.
pub(crate) const WAKEUP_SGI: u32 = 0;

/// Wakes the cores in `cpu_mask` (GIC target-list bits) with [`WAKEUP_SGI`].
pub(crate) fn send_wakeup(cpu_mask: u8) {
    with_gic(|gic| gic.send_sgi(WAKEUP_SGI, cpu_mask));
}

/// Stops delivery of `intid` without forgetting its handler (a level
/// interrupt whose source only the app can quiet masks itself this way).
pub fn mask(intid: u32) {
    with_gic(|gic| gic.disable(intid));
}

/// Resumes delivery of `intid` after [`mask`].
pub fn unmask(intid: u32) {
    with_gic(|gic| gic.enable(intid));
}

/// Disables the shared interrupt `intid` and forgets its handler.
pub fn unregister(intid: u32) {
    with_gic(|gic| gic.disable(intid));
    if let Some(slot) = HANDLERS.lock().get_mut(intid as usize) {
        *slot = None;
    }
}

/// Handles every pending interrupt (called from the IRQ vector).
pub(crate) fn dispatch() {
    while let Some(iar) = with_gic(|gic| gic.acknowledge()) {
        let intid = (iar & 0x3ff) as usize;
        TAKEN[intid].fetch_add(1, core::sync::atomic::Ordering::Relaxed);
        let handler = HANDLERS.lock()[intid];
        match handler {
            Some(handler) => handler(),
            None => log::warn!("interrupt {intid} has no handler; disabling it"),
        }
        with_gic(|gic| {
            if handler.is_none() {
                gic.disable(intid as u32);
            }
            gic.end_of_interrupt(iar);
        });
    }
}
