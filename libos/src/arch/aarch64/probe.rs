//! Probes: single memory accesses whose fault is an answer, not a crash.
//!
//! `selftest` uses them to check protections (text is not writable, data is
//! not executable, guard pages are unmapped), and `exit` uses the semihosting
//! probe to learn whether QEMU runs with `-semihosting`. The exception
//! handler recognises the probe instructions by address and resumes after them.

use super::exception::Frame;
use crate::arch::esr::Esr;
use core::sync::atomic::{AtomicBool, Ordering};

#[repr(C)]
struct ProbeResult {
    esr: u64,
    value: u64,
}

unsafe extern "C" {
    fn probe_read_u8(addr: usize) -> ProbeResult;
    fn probe_write_u8(addr: usize, value: u8) -> ProbeResult;
    fn probe_exec(addr: usize) -> ProbeResult;
    fn semihost_call(op: u64, param: *const u64) -> i64;
    fn probe_read_insn();
    fn probe_write_insn();
    fn probe_fixup();
    fn probe_exec_return();
    fn semihost_insn();
}

static SEMIHOSTING: AtomicBool = AtomicBool::new(true);

/// Resumes after a faulting probe instruction; false if `frame` was not a probe.
pub(super) fn fix_up(frame: &mut Frame, esr: Esr) -> bool {
    let elr = frame.elr as usize;
    let is_abort = esr.abort_kind().is_some();
    if is_abort
        && (elr == probe_read_insn as *const () as usize
            || elr == probe_write_insn as *const () as usize)
    {
        frame.x[0] = esr.0;
        frame.elr = probe_fixup as *const () as usize as u64;
        true
    } else if esr.is_instruction_abort()
        && frame.x[30] as usize == probe_exec_return as *const () as usize
    {
        frame.x[0] = esr.0;
        frame.elr = probe_exec_return as *const () as usize as u64;
        true
    } else if esr.class() == 0 && elr == semihost_insn as *const () as usize {
        SEMIHOSTING.store(false, Ordering::Relaxed);
        frame.x[0] = u64::MAX;
        frame.elr += 4;
        true
    } else {
        false
    }
}

fn result(r: ProbeResult) -> Result<u8, Esr> {
    if r.esr == 0 {
        Ok(r.value as u8)
    } else {
        Err(Esr(r.esr))
    }
}

/// Reads the byte at `addr`, returning the fault instead of crashing.
///
/// # Safety
/// `addr` must not be a device register whose read has side effects, and no
/// one may be writing the byte concurrently.
pub unsafe fn read_u8(addr: usize) -> Result<u8, Esr> {
    // SAFETY: the caller vouches for the address; faults are caught.
    result(unsafe { probe_read_u8(addr) })
}

/// Writes `value` at `addr`, returning the fault instead of crashing.
///
/// # Safety
/// If the write succeeds it must not break memory safety: `addr` must not be
/// memory that Rust code relies on, unless `value` is what it already holds
/// and nobody accesses it concurrently.
pub unsafe fn write_u8(addr: usize, value: u8) -> Result<(), Esr> {
    // SAFETY: the caller vouches for the address; faults are caught.
    result(unsafe { probe_write_u8(addr, value) }).map(|_| ())
}

/// AArch64 `ret`.
const RET: [u8; 4] = 0xd65f_03c0u32.to_le_bytes();

/// Writes a `ret` instruction into `buffer` and branches to it. `Ok` means
/// the memory was executable (the `ret` ran and returned); `Err` is the
/// instruction abort.
pub fn exec_ret_in(buffer: &mut [u8; 4]) -> Result<(), Esr> {
    *buffer = RET;
    let addr = buffer.as_ptr() as usize;
    // SAFETY: cache maintenance by address on memory we own; it makes the
    // `ret` visible to instruction fetch should the page be executable.
    unsafe {
        core::arch::asm!("dc cvau, {a}", "dsb ish", "ic ivau, {a}", "dsb ish", "isb", a = in(reg) addr);
    }
    // SAFETY: the target holds exactly one `ret`, so executing it (if the
    // mapping allows) only returns; a fetch fault is caught by the probe.
    result(unsafe { probe_exec(addr) }).map(|_| ())
}

/// Semihosting operation SYS_EXIT.
const SYS_EXIT: u64 = 0x18;
/// SYS_EXIT reason: the application exited (with a status).
const ADP_STOPPED_APPLICATION_EXIT: u64 = 0x20026;

/// Ends QEMU with `code` through semihosting; returns if semihosting is off.
pub fn semihosting_exit(code: i32) {
    if !SEMIHOSTING.load(Ordering::Relaxed) {
        return;
    }
    let block = [ADP_STOPPED_APPLICATION_EXIT, code as u32 as u64];
    // SAFETY: `block` is the parameter block SYS_EXIT reads; without
    // semihosting the HLT traps and the handler returns -1.
    unsafe { semihost_call(SYS_EXIT, block.as_ptr()) };
}
