//! Rust panics: a report with the message and a backtrace, then exit.

use crate::arch::exception::{write_backtrace, CrashReport};
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, Ordering};

/// Exit status after a panic.
pub const EXIT_PANIC: i32 = 101;

static PANICKING: AtomicBool = AtomicBool::new(false);

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    let mut out = CrashReport;
    if PANICKING.swap(true, Ordering::SeqCst) {
        // A panic while reporting one (or two cores at once): just stop.
        writeln!(
            out,
            "\n!!! PANIC on core {} while handling a panic",
            crate::arch::core_id()
        )
        .ok();
        crate::exit::exit(EXIT_PANIC);
    }
    writeln!(
        out,
        "\n!!! PANIC on core {}: {}",
        crate::arch::core_id(),
        info
    )
    .ok();
    let fp = crate::arch::frame_pointer();
    write_backtrace(&mut out, panic as *const () as usize, fp);
    crate::exit::exit(EXIT_PANIC);
}
