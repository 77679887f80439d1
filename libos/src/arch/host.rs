//! Host stand-ins for the AArch64 primitives, so lock and bookkeeping code can
//! be unit-tested with `cargo test`.

/// The calling core's index (always 0 on the host).
pub fn core_id() -> usize {
    0
}

/// Masks IRQs, returning whether they were enabled before (never on the host).
pub fn irq_save_disable() -> bool {
    false
}

/// Re-enables IRQs if `was_enabled`.
pub fn irq_restore(_was_enabled: bool) {}
