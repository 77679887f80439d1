//! Exception dispatch and crash reports.
//!
//! ```text
//!  vector (vectors.S) ── saves Frame on SP_EL1 ──► handle_exception(frame, kind)
//!     IRQ ─────────────────────────────────────► irq::dispatch()
//!     data/instruction abort, translation fault ► mm::resolve(FAR, access) ─ Ok ─► return
//!     expected fault of a probe / semihosting ──► probe::fix_up(frame) ──────────► return
//!     anything else ────────────────────────────► crash report, exit(CRASH)
//! ```

use crate::arch::esr::{AbortKind, Access, Esr};
use aarch64_cpu::registers::{Readable, ESR_EL1, FAR_EL1};
use core::fmt::Write;

/// Registers of the interrupted context, as vectors.S saves them.
#[repr(C)]
pub struct Frame {
    /// x0..x30.
    pub x: [u64; 31],
    /// The thread stack pointer.
    pub sp_el0: u64,
    /// Where execution resumes.
    pub elr: u64,
    /// Saved processor state.
    pub spsr: u64,
    /// FP/SIMD registers.
    pub q: [u128; 32],
    /// FP control register.
    pub fpcr: u64,
    /// FP status register.
    pub fpsr: u64,
}

/// Exit status after an unexpected exception.
pub const EXIT_CRASH: i32 = 102;

const KIND_SYNC: u64 = 0;
const KIND_IRQ: u64 = 1;

/// Called by vectors.S for every exception.
pub extern "C" fn handle_exception(frame: &mut Frame, kind: u64) {
    match kind & 3 {
        KIND_IRQ => crate::irq::dispatch(),
        KIND_SYNC => handle_sync(frame, kind),
        _ => crash(frame, kind, Esr(ESR_EL1.get()), FAR_EL1.get(), None),
    }
}

fn handle_sync(frame: &mut Frame, kind: u64) {
    let esr = Esr(ESR_EL1.get());
    let far = FAR_EL1.get();
    let mut why = None;
    // A translation fault is a page not present; a write's permission fault
    // may be a page of the shared zero block, which gets its own frame.
    let resolvable = match (esr.abort_kind(), esr.access()) {
        (Some(AbortKind::Translation(_)), Some(access)) => Some(access),
        (Some(AbortKind::Permission(_)), Some(Access::Write)) => Some(Access::Write),
        _ => None,
    };
    if let Some(access) = resolvable {
        match crate::mm::resolve(far as usize, access) {
            Ok(_) => {
                grow_tlb_with_working_set();
                return;
            }
            Err(e) => why = Some(e),
        }
    }
    if super::probe::fix_up(frame, esr) {
        return;
    }
    crash(frame, kind, esr, far, why);
}

/// Demand faults a core resolves between two flushes of its own TLB.
const FAULTS_PER_TLB_FLUSH: u32 = 256;

/// Flushes this core's TLB after every [`FAULTS_PER_TLB_FLUSH`] demand
/// faults it resolved.
///
/// Mapping a new page needs no TLB invalidation, so a core that builds up a
/// large working set by demand faults would otherwise never flush its TLB.
/// Under QEMU's TCG that matters: a vCPU's software TLB starts small (256
/// entries) and is resized only when it is flushed, so a core that never
/// flushes keeps missing on a working set of thousands of pages. With this,
/// one core sweeps the 1024x1024 stencil in 45-47 ms per iteration instead
/// of 92. On real hardware one local flush per 256 faults costs nothing
/// against the faults themselves.
fn grow_tlb_with_working_set() {
    use core::sync::atomic::{AtomicU32, Ordering};
    static FAULTS: [AtomicU32; hw::layout::MAX_CORES] =
        [const { AtomicU32::new(0) }; hw::layout::MAX_CORES];
    let Some(count) = FAULTS.get(super::core_id()) else {
        return;
    };
    if count.fetch_add(1, Ordering::Relaxed) % FAULTS_PER_TLB_FLUSH == FAULTS_PER_TLB_FLUSH - 1 {
        super::invalidate_local_tlb();
    }
}

fn crash(frame: &Frame, kind: u64, esr: Esr, far: u64, why: Option<crate::mm::FaultError>) -> ! {
    let mut report = CrashReport;
    let origin = [
        "current EL, thread stack",
        "current EL, exception stack",
        "lower EL",
        "lower EL (AArch32)",
    ][(kind >> 2) as usize & 3];
    let what = ["synchronous exception", "IRQ", "FIQ", "SError"][kind as usize & 3];
    writeln!(
        report,
        "\n!!! CRASH on core {}: unexpected {what} ({origin})",
        super::core_id()
    )
    .ok();
    writeln!(report, "    {esr}").ok();
    writeln!(
        report,
        "    FAR {far:#018x}  ELR {:#018x}  SPSR {:#010x}",
        frame.elr, frame.spsr
    )
    .ok();
    if let Some(why) = why {
        writeln!(report, "    memory manager: {why}").ok();
    }
    if crate::mm::layout::is_stack_guard(far as usize) {
        writeln!(report, "    FAR is in a stack guard page: stack overflow").ok();
    }
    for (i, pair) in frame.x.chunks(4).enumerate() {
        write!(report, "   ").ok();
        for (j, value) in pair.iter().enumerate() {
            write!(report, " x{:<2} {value:#018x}", i * 4 + j).ok();
        }
        writeln!(report).ok();
    }
    writeln!(report, "    sp_el0 {:#018x}", frame.sp_el0).ok();
    write_backtrace(&mut report, frame.elr as usize, frame.x[29] as usize);
    crate::exit::exit(EXIT_CRASH);
}

/// Prints `#0 pc` and then the return addresses found by following the
/// frame-pointer chain from `fp` (bounded, and only through stack memory).
pub fn write_backtrace(out: &mut dyn Write, pc: usize, mut fp: usize) {
    writeln!(out, "    backtrace:").ok();
    writeln!(out, "      #0 {pc:#018x}").ok();
    for depth in 1..32 {
        if !fp.is_multiple_of(16)
            || !crate::mm::layout::is_stack(fp)
            || !crate::mm::layout::is_stack(fp + 15)
        {
            break;
        }
        // SAFETY: `fp` is 16-byte aligned and the 16-byte frame record lies
        // in mapped stack memory (checked above); reading it cannot fault.
        let (next, lr) = unsafe { (*(fp as *const usize), *((fp + 8) as *const usize)) };
        if lr == 0 {
            break;
        }
        writeln!(out, "      #{depth} {lr:#018x}").ok();
        if next <= fp {
            break;
        }
        fp = next;
    }
}

/// Writer for crash reports (ignores the console lock if it must).
pub struct CrashReport;

impl Write for CrashReport {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        crate::console::print_emergency(format_args!("{s}"));
        Ok(())
    }
}
