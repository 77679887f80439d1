//! The stack Lua runs on in the guest.
//!
//! Lua recurses on the C stack: up to 200 nested C calls (`string.gsub`
//! calling a function that calls `string.gsub`...) and 200 levels of
//! nested syntax when parsing, some frames holding a 512-byte buffer. The
//! kernel's thread stack (256 KiB) does not hold that, so in the guest the
//! state parses and runs scripts on a stack of its own, [`SIZE`] bytes on
//! the heap, on which `image/tests/kvstore_scripts.rs` runs those deepest
//! recursions (they crashed the kernel on its own stack). Lua's
//! errors (`longjmp`) never cross the switch: each protected call sets its
//! jump point on the new stack. On the host, code runs where it is.

/// Bytes of the stack scripts run on.
pub const SIZE: usize = 1 << 20;

/// A stack to run closures on.
pub struct ScriptStack {
    #[cfg(target_os = "none")]
    memory: alloc::vec::Vec<u128>,
}

#[cfg(target_os = "none")]
core::arch::global_asm!(
    // x0: the new stack's top (16-byte aligned), x1: the function, x2: its
    // argument. The old sp is kept on the new stack, below the call.
    ".global faultline_lua_on_stack",
    ".type faultline_lua_on_stack, %function",
    "faultline_lua_on_stack:",
    "stp x29, x30, [sp, #-16]!",
    "mov x29, sp",
    "mov x9, sp",
    "mov sp, x0",
    "sub sp, sp, #16",
    "str x9, [sp]",
    "mov x0, x2",
    "blr x1",
    "ldr x9, [sp]",
    "mov sp, x9",
    "ldp x29, x30, [sp], #16",
    "ret",
    ".size faultline_lua_on_stack, . - faultline_lua_on_stack",
);

#[cfg(target_os = "none")]
extern "C" {
    fn faultline_lua_on_stack(
        top: *mut u8,
        f: unsafe extern "C" fn(*mut core::ffi::c_void),
        arg: *mut core::ffi::c_void,
    );
}

impl ScriptStack {
    /// A new stack (in the guest, [`SIZE`] bytes of the heap).
    pub fn new() -> Self {
        ScriptStack {
            #[cfg(target_os = "none")]
            memory: alloc::vec![0u128; SIZE / 16],
        }
    }

    /// Runs `f` on this stack and returns what it returns.
    #[cfg(target_os = "none")]
    pub fn run<R, F: FnOnce() -> R>(&mut self, f: F) -> R {
        let mut job: (Option<F>, Option<R>) = (Some(f), None);
        let top = self.memory.as_mut_ptr_range().end.cast::<u8>();
        // SAFETY: top is the 16-byte aligned end of SIZE bytes nothing else
        // uses; the trampoline gets a pointer to `job`, which outlives the
        // call, and runs it once on that stack, then comes back.
        unsafe { faultline_lua_on_stack(top, enter::<F, R>, (&raw mut job).cast()) };
        match job.1 {
            Some(r) => r,
            None => unreachable!("the job ran"),
        }
    }

    /// Runs `f` (on the host, on the current stack).
    #[cfg(not(target_os = "none"))]
    pub fn run<R>(&mut self, f: impl FnOnce() -> R) -> R {
        f()
    }
}

impl Default for ScriptStack {
    fn default() -> Self {
        Self::new()
    }
}

/// Runs the job `arg` points to: takes its closure, stores its result.
///
/// # Safety
/// `arg` points to a live `(Option<F>, Option<R>)`.
#[cfg(target_os = "none")]
unsafe extern "C" fn enter<F: FnOnce() -> R, R>(arg: *mut core::ffi::c_void) {
    // SAFETY: the caller's promise; nothing else touches the job meanwhile.
    let job = unsafe { &mut *arg.cast::<(Option<F>, Option<R>)>() };
    if let Some(f) = job.0.take() {
        job.1 = Some(f());
    }
}
