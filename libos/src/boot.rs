//! The boot recipe, from `kernel_entry` (called by boot.S on every core) to
//! the application's `main`.
//!
//! ```text
//!  boot core:  console → DTB → clock → memory (frames, kernel table, heap)
//!              → GIC, timer → other cores → args → main(args) → exit(status)
//!  others:     kernel table → GIC CPU interface, timer → wait for jobs
//! ```

extern crate alloc;

use crate::args::{Args, KernelOptions};
use crate::{arch, dtb, mm, smp, time};
use core::ops::Range;
use core::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use hw::board::{PsciConduit, CURRENT as BOARD};
use hw::layout::{BOOTARGS_SIZE, MAX_CORES};

/// The `.bootargs` section the image tool fills with the app's arguments.
#[unsafe(link_section = ".bootargs")]
#[used]
static BOOTARGS: [u8; BOOTARGS_SIZE] = [0; BOOTARGS_SIZE];

static ENTRY_TICKS: AtomicU64 = AtomicU64::new(0);
static MAIN_TICKS: AtomicU64 = AtomicU64::new(0);

unsafe extern "Rust" {
    /// The application's entry, defined by `libos::main!`.
    fn __faultline_main(args: Args) -> i32;
}

/// Called by boot.S on every core with the MMU on (boot map) and a stack.
pub extern "C" fn kernel_entry(dtb_addr: usize, core: usize, entry_el: u64) -> ! {
    if core == 0 {
        ENTRY_EL.store(entry_el as u8, Ordering::Relaxed);
        boot_core(dtb_addr)
    } else {
        secondary_core(core)
    }
}

/// The DTB passed by the loader (or at the board's fallback address), if valid.
fn find_dtb(addr: usize) -> Option<&'static [u8]> {
    let addr = if addr != 0 { addr } else { BOARD.dtb_fallback? };
    if addr % 8 != 0 || !BOARD.ram_window.contains(&addr) {
        return None;
    }
    // SAFETY: `addr` is 8-aligned RAM that the boot map covers; a DTB header
    // is 40 bytes, and the loader placed nothing Rust owns there.
    let header = unsafe { core::slice::from_raw_parts(addr as *const u8, 40) };
    let size = dtb::total_size(header).filter(|&s| s <= 2 << 20)?;
    if !BOARD.ram_window.contains(&(addr + size - 1)) {
        return None;
    }
    // SAFETY: as above, for the size the header gives (bounded to 2 MiB and
    // inside RAM); the frame allocator reserves this range, so it stays intact.
    Some(unsafe { core::slice::from_raw_parts(addr as *const u8, size) })
}

fn embedded_args() -> &'static str {
    // Volatile: the image tool rewrites this section after compilation, so
    // the compiler must not assume it still holds zeros.
    let section: &'static [u8; BOOTARGS_SIZE] = &BOOTARGS;
    // SAFETY: reads a static through a valid reference.
    let magic = unsafe { core::ptr::read_volatile(section.as_ptr() as *const [u8; 12]) };
    if &magic[..8] != crate::args::EMBEDDED_MAGIC {
        return "";
    }
    // SAFETY: the section is ordinary read-only data; the volatile read of
    // the header above keeps the compiler from folding the contents.
    let bytes = unsafe {
        core::slice::from_raw_parts(core::hint::black_box(section.as_ptr()), BOOTARGS_SIZE)
    };
    crate::args::embedded_command_line(bytes).unwrap_or("")
}

fn boot_core(dtb_addr: usize) -> ! {
    ENTRY_TICKS.store(arch::counter(), Ordering::Relaxed);
    crate::console::init(BOARD.console);
    time::init(BOARD.default_timer_hz);

    let blob = find_dtb(dtb_addr);
    let facts = blob.and_then(|b| dtb::parse(b).ok());
    let image = mm::layout::image();
    let ram: Range<usize> = facts
        .as_ref()
        .and_then(|f| f.ram_containing(image.image.start))
        .unwrap_or(BOARD.default_ram.clone());
    let dtb_range = blob.map(|b| b.as_ptr() as usize..b.as_ptr() as usize + b.len());
    mm::init(ram, dtb_range.as_slice());

    crate::irq::init(BOARD.gicd, BOARD.gicc);
    time::init_core();
    smp::init_core(0);
    arch::irq_enable();

    let mut mpidrs = [0u64; MAX_CORES];
    let mut count = 0;
    match facts.as_ref() {
        Some(f) if f.cpus_listed > 0 => {
            for id in f.cpus.iter().flatten() {
                mpidrs[count] = *id;
                count += 1;
            }
        }
        _ => {
            for (i, slot) in mpidrs.iter_mut().enumerate().take(BOARD.default_cores) {
                *slot = i as u64;
                count += 1;
            }
        }
    }
    if let Some(pcie) = BOARD.pcie.as_ref() {
        crate::pci::init(pcie);
    }
    if let Some(smmu) = BOARD.smmuv3.as_ref() {
        crate::iommu::init(smmu);
    }
    if let Some(base) = BOARD.mmu500 {
        crate::iommu::probe_mmu500(base);
    }
    let psci = facts.as_ref().and_then(|f| f.psci).unwrap_or(BOARD.psci);
    PSCI.store(psci as u8, Ordering::Relaxed);
    smp::start_secondaries(&mpidrs[..count], psci);

    let command_line = facts
        .as_ref()
        .and_then(|f| f.bootargs)
        .unwrap_or_else(embedded_args);
    let (options, args) = Args::parse(command_line).split_kernel_options();
    KERNEL_OPTIONS.call_once(|| options);
    MAIN_TICKS.store(arch::counter(), Ordering::Relaxed);
    log::info!(
        "faultline on {}: {} cores, {} MiB RAM, EL{} entry, booted in {} us",
        BOARD.name,
        smp::cores(),
        (mm::stats().total_frames * mm::FRAME_SIZE) >> 20,
        entry_el(),
        boot_time().as_micros()
    );
    // SAFETY: `libos::main!` defines this symbol with exactly this signature.
    let status = unsafe { __faultline_main(args) };
    crate::exit::exit(status)
}

/// The kernel's options from the command line (`faultline.NAME=VALUE`).
static KERNEL_OPTIONS: spin::Once<KernelOptions> = spin::Once::new();

/// Kernel option `name` from the command line, if it was given: how a
/// driver learns what only the user can tell it (`faultline.mac=...`, the
/// on-chip Ethernet's address).
pub fn kernel_option(name: &str) -> Option<&'static str> {
    KERNEL_OPTIONS.get()?.get(name)
}

fn secondary_core(core: usize) -> ! {
    mm::init_secondary();
    crate::irq::init_core();
    time::init_core();
    smp::init_core(core);
    arch::irq_enable();
    smp::secondary_ready(core)
}

/// Guest time from power-on to the app's `main`.
pub fn boot_time() -> core::time::Duration {
    time::Instant::from_ticks(MAIN_TICKS.load(Ordering::Relaxed)).since_boot()
}

/// Guest time from power-on to the kernel's first instruction in Rust.
pub fn entry_time() -> core::time::Duration {
    time::Instant::from_ticks(ENTRY_TICKS.load(Ordering::Relaxed)).since_boot()
}

/// The exception level the loader entered the image at (2 when firmware
/// hands over at EL2 and the boot code dropped to EL1).
pub fn entry_el() -> u8 {
    ENTRY_EL.load(Ordering::Relaxed)
}

static ENTRY_EL: AtomicU8 = AtomicU8::new(0);
static PSCI: AtomicU8 = AtomicU8::new(u8::MAX);

/// How PSCI is called on this machine (the DTB's word, else the board's).
pub fn psci_conduit() -> PsciConduit {
    match PSCI.load(Ordering::Relaxed) {
        x if x == PsciConduit::Hvc as u8 => PsciConduit::Hvc,
        x if x == PsciConduit::Smc as u8 => PsciConduit::Smc,
        _ => BOARD.psci,
    }
}
