//! AArch64 mechanism: boot assembly, vectors, registers, barriers.

use aarch64_cpu::registers::{
    CurrentEL, Readable, Writeable, CNTFRQ_EL0, CNTVCT_EL0, CNTV_CTL_EL0, CNTV_CVAL_EL0, DAIF,
    MPIDR_EL1, TPIDR_EL1,
};
use core::arch::{asm, global_asm};
use hw::layout::{CORE_STACKS_SIZE, EXCEPTION_STACK_SIZE, MAIN_STACK_SIZE, PAGE_SIZE};

pub mod exception;
pub mod probe;

/// MAIR_EL1: attribute 0 = Device-nGnRE, attribute 1 = Normal write-back.
pub const MAIR: u64 = 0xff04;
/// MAIR index of device memory.
pub const ATTR_DEVICE: u64 = 0;
/// MAIR index of normal memory.
pub const ATTR_NORMAL: u64 = 1;
/// Virtual address bits translated by TTBR0 (T0SZ = 64 - 39): the walk starts at level 1.
pub const VA_BITS: u32 = 39;
/// TCR_EL1: 39-bit VA, 4 KiB granule, inner-shareable write-back walks,
/// TTBR1 walks disabled, 40-bit physical addresses, 8-bit ASIDs.
pub const TCR: u64 = (64 - VA_BITS as u64)
    | (0b01 << 8)
    | (0b01 << 10)
    | (0b11 << 12)
    | (25 << 16)
    | (1 << 23)
    | (0b010 << 32);
const SCTLR_RESET: u64 = 0x30d0_0800;
/// SCTLR_EL1 bits set at boot: MMU, data cache, SP alignment check, I-cache.
const SCTLR_SET: u64 = (1 << 0) | (1 << 2) | (1 << 3) | (1 << 12);
/// SCTLR_EL1 bits cleared at boot: alignment check, WXN, big-endian.
const SCTLR_CLEAR: u64 = (1 << 1) | (1 << 19) | (1 << 24) | (1 << 25);

global_asm!(
    include_str!("boot.S"),
    sctlr_reset = const SCTLR_RESET,
    mair = const MAIR,
    tcr = const TCR,
    boot_map = sym crate::mm::boot_map::BOOT_MAP,
    sctlr_set = const SCTLR_SET,
    sctlr_clear = const SCTLR_CLEAR,
    core_stacks_size = const CORE_STACKS_SIZE,
    thread_stack_top = const PAGE_SIZE + MAIN_STACK_SIZE,
    exception_stack_top = const PAGE_SIZE + MAIN_STACK_SIZE + PAGE_SIZE + EXCEPTION_STACK_SIZE,
    kernel_entry = sym crate::boot::kernel_entry,
);

global_asm!(
    include_str!("vectors.S"),
    frame_size = const core::mem::size_of::<exception::Frame>(),
    handle_exception = sym exception::handle_exception,
);

global_asm!(include_str!("probe.S"));

/// The calling core's index (0 is the boot core), kept in TPIDR_EL1.
#[inline]
pub fn core_id() -> usize {
    TPIDR_EL1.get() as usize
}

/// This core's MPIDR affinity fields (what PSCI calls the core).
pub fn mpidr() -> u64 {
    MPIDR_EL1.get() & 0xff_00ff_ffff
}

/// Exception level the kernel runs at.
pub fn current_el() -> u8 {
    CurrentEL.read(CurrentEL::EL) as u8
}

/// Masks IRQs and returns whether they were unmasked before.
#[inline]
pub fn irq_save_disable() -> bool {
    let was_enabled = !DAIF.is_set(DAIF::I);
    // SAFETY: masking IRQs on this core has no memory-safety effect.
    unsafe { asm!("msr daifset, #2", options(nomem, nostack, preserves_flags)) };
    was_enabled
}

/// Unmasks IRQs if `was_enabled` (the value `irq_save_disable` returned).
#[inline]
pub fn irq_restore(was_enabled: bool) {
    if was_enabled {
        irq_enable();
    }
}

/// Unmasks IRQs on this core.
#[inline]
pub fn irq_enable() {
    // SAFETY: handlers are installed before any interrupt is enabled at the GIC.
    unsafe { asm!("msr daifclr, #2", options(nomem, nostack, preserves_flags)) };
}

/// Waits for an interrupt.
#[inline]
pub fn wait_for_interrupt() {
    aarch64_cpu::asm::wfi();
}

/// The virtual counter (ticks since the machine started).
#[inline]
pub fn counter() -> u64 {
    // ISB so the read is not hoisted above earlier instructions.
    aarch64_cpu::asm::barrier::isb(aarch64_cpu::asm::barrier::SY);
    CNTVCT_EL0.get()
}

/// Instructions this core has retired, as the PMU counts them (event
/// INST_RETIRED in event counter 0, started on first use), or `None`
/// where the PMU does not count them: QEMU counts instructions only under
/// `-icount`, and exactly then. Benchmarks take differences of it (a
/// 32-bit counter: `wrapping_sub`), so that a cost reads in instructions,
/// independent of host load and of time spent idle.
pub fn instructions_retired() -> Option<u32> {
    const INST_RETIRED: u64 = 0x08;
    let events: u64;
    // SAFETY: reads an identification register of this core's PMU.
    unsafe { core::arch::asm!("mrs {}, pmceid0_el0", out(reg) events) };
    if events & (1 << INST_RETIRED) == 0 {
        return None;
    }
    let enabled: u64;
    // SAFETY: reads this core's PMU counter-enable set.
    unsafe { core::arch::asm!("mrs {}, pmcntenset_el0", out(reg) enabled) };
    if enabled & 1 == 0 {
        // SAFETY: programs this core's event counter 0 to count retired
        // instructions at every level, enables it and the PMU; nothing
        // else in the kernel uses the PMU.
        unsafe {
            core::arch::asm!(
                "msr pmevtyper0_el0, {event}",
                "msr pmcntenset_el0, {one}",
                "mrs {tmp}, pmcr_el0",
                "orr {tmp}, {tmp}, #1",
                "msr pmcr_el0, {tmp}",
                "isb",
                event = in(reg) INST_RETIRED,
                one = in(reg) 1u64,
                tmp = out(reg) _,
            )
        };
    }
    let count: u64;
    // SAFETY: reads this core's event counter 0.
    unsafe { core::arch::asm!("isb", "mrs {}, pmevcntr0_el0", out(reg) count) };
    Some(count as u32)
}

/// Counter frequency in Hz as firmware programmed it (0 if it did not).
pub fn counter_frequency() -> u64 {
    CNTFRQ_EL0.get()
}

/// Arms this core's virtual timer to fire at counter value `deadline`.
pub fn timer_arm(deadline: u64) {
    CNTV_CVAL_EL0.set(deadline);
    CNTV_CTL_EL0.write(CNTV_CTL_EL0::ENABLE::SET + CNTV_CTL_EL0::IMASK::CLEAR);
}

/// Stops this core's virtual timer.
pub fn timer_disarm() {
    CNTV_CTL_EL0.write(CNTV_CTL_EL0::ENABLE::CLEAR);
}

/// Switches this core from the boot identity map to the kernel page table
/// `root` (ASID `asid`), and drops the boot map's TLB entries.
///
/// # Safety
/// `root` must be a complete page table that maps the running code, its
/// stacks and all memory in use identically to the boot map.
pub unsafe fn switch_page_table(root: usize, asid: u16) {
    // SAFETY: the caller guarantees the new table maps everything in use the
    // same way. The boot map's entries are non-global with ASID 0, so they
    // cannot conflict with the kernel's entries under `asid` before the TLBI.
    unsafe {
        asm!(
            "dsb ishst",
            "msr ttbr0_el1, {ttbr}",
            "isb",
            "tlbi aside1, xzr",
            "dsb nsh",
            "isb",
            ttbr = in(reg) root as u64 | (asid as u64) << 48,
            options(nostack, preserves_flags),
        );
    }
}

/// Drops this core's own TLB entries (no broadcast to other cores).
pub fn invalidate_local_tlb() {
    // SAFETY: TLB maintenance and barriers only affect translation caching.
    unsafe {
        asm!(
            "tlbi vmalle1",
            "dsb nsh",
            "isb",
            options(nostack, preserves_flags)
        );
    }
}

/// Drops every TLB entry tagged with `asid`, on all cores.
pub fn invalidate_asid(asid: u16) {
    // SAFETY: TLB maintenance and barriers only affect translation caching.
    unsafe {
        asm!(
            "dsb ishst",
            "tlbi aside1is, {asid}",
            "dsb ish",
            "isb",
            asid = in(reg) (asid as u64) << 48,
            options(nostack, preserves_flags),
        );
    }
}

/// Fills `len` bytes at `addr` with zeros using `DC ZVA`, which clears one
/// whole block (64 bytes on the A53) per instruction: a fresh page costs 64
/// instructions instead of 512 stores, which under QEMU's TCG is most of
/// what a demand fault costs. Falls back to plain stores where `DCZID_EL0`
/// prohibits it or the range is not block-aligned.
///
/// # Safety
///
/// `addr..addr + len` must be writable normal memory that nothing else
/// accesses meanwhile.
pub unsafe fn zero(addr: usize, len: usize) {
    let dczid: u64;
    // SAFETY: reads an ID register.
    unsafe { asm!("mrs {}, dczid_el0", out(reg) dczid, options(nomem, nostack, preserves_flags)) };
    let block = 4usize << (dczid & 0xf);
    let prohibited = dczid & 0x10 != 0;
    if prohibited || !addr.is_multiple_of(block) || !len.is_multiple_of(block) {
        // SAFETY: the caller's contract.
        unsafe { core::ptr::write_bytes(addr as *mut u8, 0, len) };
        return;
    }
    for at in (addr..addr + len).step_by(block) {
        // SAFETY: `at` is a block of the range the caller gave us.
        unsafe { asm!("dc zva, {}", in(reg) at, options(nostack, preserves_flags)) };
    }
}

/// Makes page-table stores visible to the table walkers of all cores (and
/// SMMUs) before the caller relies on the new entry.
#[inline]
pub fn publish_page_table_update() {
    // SAFETY: barriers have no effect on memory safety.
    unsafe { asm!("dsb ishst", "isb", options(nostack, preserves_flags)) };
}

/// The frame pointer of the caller (for backtraces).
#[inline(always)]
pub fn frame_pointer() -> usize {
    let fp: usize;
    // SAFETY: reads a register.
    unsafe { asm!("mov {}, x29", out(reg) fp, options(nomem, nostack, preserves_flags)) };
    fp
}
