//! Multi-core: starting the other cores with PSCI, and running a closure on
//! every core at once.
//!
//! ```text
//!  boot core: on_each_core(f) ─ publish f, bump GENERATION, SGI ─┐
//!  other cores (idle in WFI) ─ see new generation, run f(core) ──┼─ FINISHED += 1, SGI to core 0
//!  boot core: runs f(0) too, waits until FINISHED == cores - 1 ──┘  returns
//! ```

mod barrier;

pub use barrier::Barrier;

use crate::arch;
use crate::sync::IrqSpinLock;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use core::time::Duration;
use hw::board::PsciConduit;
use hw::layout::MAX_CORES;

/// Cores that have come up (the boot core counts).
static ONLINE: AtomicUsize = AtomicUsize::new(1);
static MPIDRS: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(u64::MAX) }; MAX_CORES];
/// Each core's GIC target-list bit, for waking it with a software interrupt.
static GIC_MASKS: [core::sync::atomic::AtomicU8; MAX_CORES] =
    [const { core::sync::atomic::AtomicU8::new(0) }; MAX_CORES];

/// A job for all cores, its lifetime erased (see `on_each_core`).
#[derive(Clone, Copy)]
struct Job(*const (dyn Fn(usize) + Sync + 'static));
// SAFETY: the pointee is `Sync`, and `on_each_core` keeps it alive until
// every core that read the pointer has finished with it.
unsafe impl Send for Job {}

static JOB: IrqSpinLock<Option<Job>> = IrqSpinLock::new(None);
static GENERATION: AtomicU64 = AtomicU64::new(0);
static FINISHED: AtomicUsize = AtomicUsize::new(0);

/// Number of cores running.
pub fn cores() -> usize {
    ONLINE.load(Ordering::Acquire)
}

/// Index of the calling core (0 is the boot core).
pub fn current() -> usize {
    arch::core_id()
}

/// MPIDR affinity of core `index`, if it is up.
pub fn mpidr(index: usize) -> Option<u64> {
    MPIDRS
        .get(index)
        .map(|m| m.load(Ordering::Relaxed))
        .filter(|&m| m != u64::MAX)
}

fn cpu_on(
    conduit: PsciConduit,
    mpidr: u64,
    entry: u64,
    context: u64,
) -> Result<(), smccc::psci::Error> {
    match conduit {
        PsciConduit::Hvc => smccc::psci::cpu_on::<smccc::Hvc>(mpidr, entry, context),
        PsciConduit::Smc => smccc::psci::cpu_on::<smccc::Smc>(mpidr, entry, context),
    }
}

unsafe extern "C" {
    fn _secondary_start();
}

/// Starts every core in `mpidrs` other than the calling one and waits (up to
/// a second each) for them to come online.
/// Does nothing: the wake-up interrupt only ends a WFI.
fn on_wakeup() {}

/// Enables the wake-up interrupt on the calling core and records its bit.
pub(crate) fn init_core(index: usize) {
    crate::irq::enable_local(crate::irq::WAKEUP_SGI, on_wakeup);
    GIC_MASKS[index].store(crate::irq::cpu_mask(), Ordering::Relaxed);
}

/// Waits in WFI until `done()` holds. IRQs are masked around the check so a
/// wake-up between the check and the WFI is not lost (WFI still wakes on a
/// pending interrupt); QEMU halts a vCPU in WFI, while WFE would spin.
fn idle_until(mut done: impl FnMut() -> bool) {
    let irqs_were_enabled = arch::irq_save_disable();
    while !done() {
        arch::wait_for_interrupt();
        arch::irq_enable();
        arch::irq_save_disable();
    }
    arch::irq_restore(irqs_were_enabled);
}

fn wake(core: usize) {
    crate::irq::send_wakeup(GIC_MASKS[core].load(Ordering::Relaxed));
}

pub(crate) fn start_secondaries(mpidrs: &[u64], conduit: PsciConduit) {
    let me = arch::mpidr();
    MPIDRS[0].store(me, Ordering::Relaxed);
    let mut index = 1;
    for &mpidr in mpidrs.iter().filter(|&&m| m != me) {
        if index == MAX_CORES {
            log::warn!("only {MAX_CORES} cores are supported; core {mpidr:#x} stays off");
            continue;
        }
        let entry = _secondary_start as *const () as usize as u64;
        if let Err(e) = cpu_on(conduit, mpidr, entry, index as u64) {
            log::error!("PSCI CPU_ON for core {mpidr:#x} failed: {e:?}");
            continue;
        }
        let deadline = crate::time::now().after(Duration::from_secs(1));
        while cores() <= index && crate::time::now() < deadline {
            core::hint::spin_loop();
        }
        if cores() <= index {
            log::error!("core {mpidr:#x} did not come online");
            break;
        }
        index += 1;
    }
}

/// Called by each secondary core once it is set up: announces itself and
/// waits for jobs forever.
pub(crate) fn secondary_ready(index: usize) -> ! {
    MPIDRS[index].store(arch::mpidr(), Ordering::Relaxed);
    ONLINE.fetch_add(1, Ordering::AcqRel);
    let mut seen = GENERATION.load(Ordering::Acquire);
    loop {
        idle_until(|| GENERATION.load(Ordering::Acquire) != seen);
        seen = GENERATION.load(Ordering::Acquire);
        let job = *JOB.lock();
        if let Some(Job(f)) = job {
            // SAFETY: `on_each_core` keeps the closure alive until FINISHED
            // counts this core, which happens only after the call returns.
            unsafe { (*f)(index) };
            FINISHED.fetch_add(1, Ordering::AcqRel);
            wake(0);
        }
    }
}

/// Runs `f(core)` on every running core at once, the caller included, and
/// returns when all have finished. Call it from the boot core (the app's
/// `main`); the other cores run only what it hands them.
pub fn on_each_core<F: Fn(usize) + Sync>(f: F) {
    assert_eq!(current(), 0, "on_each_core is called from the boot core");
    let others = cores() - 1;
    let job: &(dyn Fn(usize) + Sync) = &f;
    // SAFETY: only the lifetime is erased; this function does not return
    // (and `f` is not dropped) before every other core has finished the call.
    let job: *const (dyn Fn(usize) + Sync + 'static) =
        unsafe { core::mem::transmute(job as *const (dyn Fn(usize) + Sync)) };
    FINISHED.store(0, Ordering::Release);
    *JOB.lock() = Some(Job(job));
    GENERATION.fetch_add(1, Ordering::AcqRel);
    for core in 1..=others {
        wake(core);
    }
    f(0);
    idle_until(|| FINISHED.load(Ordering::Acquire) >= others);
    *JOB.lock() = None;
}
