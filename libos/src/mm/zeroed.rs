//! Pre-zeroed frames, a small pool per core, so that a demand fault does
//! not zero its page: it takes a frame that was zeroed while its core had
//! nothing else to do, and holds the address-space lock only to write the
//! page-table entry.
//!
//! ```text
//!  idle core (before WFI) ── refill(): frame from FRAMES, zeroed with no
//!                            lock held, pushed on this core's pool
//!  demand fault ── take(): this core's pool, else a frame zeroed now
//!                  (still outside SPACE) ── SPACE: install the entry
//!                  (page mapped meanwhile by another core: give_back())
//!  frames short ── drain(): every pool back to FRAMES
//! ```
//!
//! Lock order: a pool's lock is a leaf (nothing is taken under it); it may
//! be taken under `SPACE`.

use super::frame::TABLE_RESERVE;
use super::{with_frames, zero_frames};
use crate::sync::IrqSpinLock;
use hw::layout::MAX_CORES;

/// Frames each core keeps zeroed (256 KiB per core).
pub const PER_CORE: usize = 64;
/// Frames one idle pass zeroes at most, so a wait is never held up long.
const REFILL_BATCH: usize = 16;
/// Free frames (16 MiB) the pools never take: they fill only while
/// memory is plentiful.
const SPARE: usize = 4096;

/// One core's zeroed frames.
struct Pool {
    frames: [usize; PER_CORE],
    len: usize,
}

static POOLS: [IrqSpinLock<Pool>; MAX_CORES] = [const {
    IrqSpinLock::new(Pool {
        frames: [0; PER_CORE],
        len: 0,
    })
}; MAX_CORES];

fn this_core() -> &'static IrqSpinLock<Pool> {
    &POOLS[crate::smp::current() % MAX_CORES]
}

/// A zeroed frame: from this core's pool, else allocated and zeroed now
/// (the caller holds no memory-manager lock either way).
pub(super) fn take() -> Option<usize> {
    if let Some(frame) = pop() {
        return Some(frame);
    }
    let frame = with_frames(|f| f.alloc()).ok()?;
    zero_frames(frame, 1);
    Some(frame)
}

/// A frame from this core's pool, if it has one.
pub(super) fn pop() -> Option<usize> {
    let mut pool = this_core().lock();
    pool.len = pool.len.checked_sub(1)?;
    Some(pool.frames[pool.len])
}

/// Returns a zeroed frame that was not used (still all zeros) to this
/// core's pool, or to the allocator if the pool is full.
pub(super) fn give_back(frame: usize) {
    {
        let mut pool = this_core().lock();
        if pool.len < PER_CORE {
            let n = pool.len;
            pool.frames[n] = frame;
            pool.len += 1;
            return;
        }
    }
    with_frames(|f| f.free(frame));
}

/// Tops this core's pool up by at most a batch of frames, zeroing them
/// with no lock held. Called when the core is about to wait.
pub fn refill() {
    for _ in 0..REFILL_BATCH {
        if this_core().lock().len >= PER_CORE {
            return;
        }
        let plenty = |f: &mut super::frame::FrameAllocator<'static>| {
            if f.free_count() > TABLE_RESERVE + SPARE {
                f.alloc().ok()
            } else {
                None
            }
        };
        let Some(frame) = with_frames(plenty) else {
            return;
        };
        zero_frames(frame, 1);
        give_back(frame);
    }
}

/// Gives every pool's frames back to the allocator (memory is short).
pub(super) fn drain() {
    for pool in &POOLS {
        let mut taken = [0usize; PER_CORE];
        let n = {
            let mut p = pool.lock();
            let n = p.len;
            taken[..n].copy_from_slice(&p.frames[..n]);
            p.len = 0;
            n
        };
        with_frames(|f| taken[..n].iter().for_each(|&frame| f.free(frame)));
    }
}

/// Frames held zeroed in all pools (free memory, for the statistics).
pub(super) fn pooled() -> usize {
    POOLS.iter().map(|p| p.lock().len).sum()
}
