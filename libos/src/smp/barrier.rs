//! A barrier for the cores of one [`on_each_core`](super::on_each_core) job,
//! which also lets an emulator size each core's TLB to the phase's working
//! set.
//!
//! ```text
//!  core 0 ─ phase ─┐ wait ─ (pass 1..8, 16, 32 ...: local TLB flush) ─ phase ─┐ wait ...
//!  core 1 ─ phase ───────┘ wait ─ (...)                              ─ phase ─┘
//! ```
//!
//! Why the flushes: QEMU's TCG gives each vCPU a software TLB that starts
//! with 256 entries and is resized only when that vCPU flushes it, by how
//! many entries were filled since the previous flush. A core that sweeps a
//! working set of thousands of pages but never flushes keeps a small TLB
//! and runs up to twice slower than one that did (measured on the stencil).
//! A barrier ends a phase that touched the core's working set, which is the
//! moment to flush: at each of the first 8 passes, then at passes 16, 32,
//! 64, ..., the TLB doubles until it covers the phase, and a long job pays
//! a logarithmic number of flushes.
//! On hardware a local flush costs a few hundred refills, once in a while.

use crate::arch;
use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use hw::layout::MAX_CORES;

/// Passes that all flush: enough doublings (256 entries x 2^8) for a
/// working set of 64K pages within the first phases of a job.
const EVERY_PASS_UNTIL: u32 = 8;

/// A sense-reversing barrier for `parties` cores.
pub struct Barrier {
    waiting: AtomicUsize,
    generation: AtomicUsize,
    parties: usize,
    /// Passes each core has made, for the TLB flush schedule.
    passes: [AtomicU32; MAX_CORES],
}

impl Barrier {
    /// A barrier for `parties` cores (each calls [`wait`](Barrier::wait)).
    pub fn new(parties: usize) -> Self {
        Barrier {
            waiting: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
            parties,
            passes: [const { AtomicU32::new(0) }; MAX_CORES],
        }
    }

    /// Returns once all parties have called it.
    pub fn wait(&self) {
        let generation = self.generation.load(Ordering::Acquire);
        if self.waiting.fetch_add(1, Ordering::AcqRel) + 1 == self.parties {
            self.waiting.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::Release);
        } else {
            while self.generation.load(Ordering::Acquire) == generation {
                core::hint::spin_loop();
            }
        }
        if let Some(passes) = self.passes.get(super::current()) {
            let pass = passes.fetch_add(1, Ordering::Relaxed) + 1;
            if pass <= EVERY_PASS_UNTIL || pass.is_power_of_two() {
                arch::invalidate_local_tlb();
            }
        }
    }
}
