//! Deliberate deaths, for the host's crash-report tests.

use libos::mm::layout;

/// Stores to the kernel's code: a permission fault and a crash report.
pub fn write_to_text() -> ! {
    let text = layout::image().text.start as *mut u8;
    libos::println!("selftest: writing to text at {text:p}");
    // SAFETY: none — this store is meant to fault (text is mapped read-only),
    // and the kernel reports the crash and exits instead of returning.
    unsafe { text.write_volatile(0) };
    unreachable!("text was writable");
}

/// Panics with a known message.
pub fn panic() -> ! {
    panic!("deliberate panic from selftest");
}

/// Recurses until the thread stack runs into its guard page.
pub fn overflow_stack() -> ! {
    #[inline(never)]
    #[allow(unconditional_recursion)]
    fn recurse(depth: u64) -> u64 {
        let buffer = core::hint::black_box([depth; 64]);
        recurse(depth + 1) + buffer[(depth % 64) as usize]
    }
    libos::println!("selftest: overflowing the stack");
    let n = recurse(0);
    unreachable!("recursion ended at {n}");
}
