//! The kernel console: the board's UART behind an IRQ-safe lock, and the
//! `log` facade printing `[seconds core] LEVEL message` lines.

use crate::sync::IrqSpinLock;
use core::fmt::{self, Write};
use hw::board::ConsoleUart;
use hw::mmio::Mmio;
use hw::uart::{Cadence, Pl011, Uart};

/// The console UART of the running board.
enum Device {
    Pl011(Pl011),
    Cadence(Cadence),
}

impl Device {
    fn uart(&mut self) -> &mut dyn Uart {
        match self {
            Device::Pl011(u) => u,
            Device::Cadence(u) => u,
        }
    }
}

/// Writes text to a UART, turning `\n` into `\r\n`.
struct Writer<'a>(&'a mut dyn Uart);

impl Write for Writer<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for byte in s.bytes() {
            if byte == b'\n' {
                self.0.put(b'\r');
            }
            self.0.put(byte);
        }
        Ok(())
    }
}

static CONSOLE: IrqSpinLock<Option<Device>> = IrqSpinLock::new(None);

fn device_for(uart: ConsoleUart) -> Device {
    match uart {
        ConsoleUart::Pl011 { base } => {
            // SAFETY: the board description names the console UART's register
            // block, which the boot and kernel maps cover as device memory.
            let regs = unsafe { Mmio::new(base, 0x1000) };
            Device::Pl011(Pl011::new(regs))
        }
        ConsoleUart::Cadence { base } => {
            // SAFETY: as for the PL011 above.
            let regs = unsafe { Mmio::new(base, 0x1000) };
            Device::Cadence(Cadence::new(regs))
        }
    }
}

/// Brings up the board's console UART. Called once, first thing at boot.
pub fn init(uart: ConsoleUart) {
    let mut device = device_for(uart);
    device.uart().init();
    *CONSOLE.lock() = Some(device);
    log::set_logger(&LOGGER).ok();
    log::set_max_level(log::LevelFilter::Info);
}

/// Prints formatted text to the console (used by `print!`/`println!`).
pub fn print(args: fmt::Arguments) {
    if let Some(device) = CONSOLE.lock().as_mut() {
        Writer(device.uart()).write_fmt(args).ok();
    }
}

/// Prints even if the console lock is held (by a core that crashed while
/// printing): for crash reports only. Output may interleave with another core's.
pub fn print_emergency(args: fmt::Arguments) {
    for _ in 0..1_000_000 {
        if let Some(mut console) = CONSOLE.try_lock() {
            if let Some(device) = console.as_mut() {
                Writer(device.uart()).write_fmt(args).ok();
            }
            return;
        }
        core::hint::spin_loop();
    }
    let mut device = device_for(hw::board::CURRENT.console);
    Writer(device.uart()).write_fmt(args).ok();
}

/// Waits until everything printed has left the UART (before power-off).
pub fn flush() {
    if let Some(mut console) = CONSOLE.try_lock() {
        if let Some(device) = console.as_mut() {
            device.uart().flush();
        }
    }
}

struct Logger;
static LOGGER: Logger = Logger;

impl log::Log for Logger {
    fn enabled(&self, metadata: &log::Metadata) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &log::Record) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let micros = crate::time::uptime().as_micros();
        print(format_args!(
            "[{:5}.{:06} c{}] {:5} {}\n",
            micros / 1_000_000,
            micros % 1_000_000,
            crate::arch::core_id(),
            record.level(),
            record.args()
        ));
    }

    fn flush(&self) {}
}

/// Prints to the console.
#[macro_export]
macro_rules! print {
    ($($arg:tt)*) => { $crate::console::print(format_args!($($arg)*)) };
}

/// Prints a line to the console.
#[macro_export]
macro_rules! println {
    () => { $crate::print!("\n") };
    ($($arg:tt)*) => { $crate::console::print(format_args!("{}\n", format_args!($($arg)*))) };
}

/// The byte the host sends on the console to ask the guest to stop: the
/// image tool writes it when `run-qemu.sh` gets SIGINT or SIGTERM, then
/// gives the guest a few seconds before it kills QEMU.
pub const STOP_BYTE: u8 = 0x04;

/// Whether the host asked the guest to stop (see [`STOP_BYTE`]): reads
/// whatever waits in the console UART's receiver (other input is dropped:
/// the console is output only) and remembers a request once seen. Apps
/// that hold state worth saving (kvstore's log) look now and then and
/// stop cleanly; the others are killed after the host's grace period.
pub fn stop_requested() -> bool {
    use core::sync::atomic::{AtomicBool, Ordering};
    static REQUESTED: AtomicBool = AtomicBool::new(false);
    if !REQUESTED.load(Ordering::Relaxed) {
        if let Some(device) = CONSOLE.lock().as_mut() {
            while let Some(byte) = device.uart().get() {
                if byte == STOP_BYTE {
                    REQUESTED.store(true, Ordering::Relaxed);
                }
            }
        }
    }
    REQUESTED.load(Ordering::Relaxed)
}
