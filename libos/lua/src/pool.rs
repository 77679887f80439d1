//! Lua's small blocks, kept by size class.
//!
//! A script call makes and frees a few dozen small blocks (its KEYS and
//! ARGV tables, their strings, the replies it reads); each went to the
//! kernel's heap, whose every allocation takes its lock with interrupts
//! masked and searches its bins. Lua tells its allocator a block's size
//! when it frees or resizes one, so blocks of up to [`SMALL_MAX`] bytes
//! can come from free lists of [`CLASS`]-byte size classes instead, carved
//! from [`CHUNK`]-byte chunks of the heap, with no header and no lock.
//! A freed block waits for the next block of its class; the chunks go back
//! to the heap when the pool is dropped (the Lua state closed, e.g. by
//! `SCRIPT FLUSH`). Past [`MOST_HELD`] bytes of chunks, small blocks come
//! from the heap one by one and go back to it when freed. What Lua holds is counted by the state, in the sizes
//! Lua asked for, as before: the pool changes where blocks come from, not
//! what a script may hold.

use alloc::vec::Vec;
use core::alloc::Layout;
use core::ptr::NonNull;

/// Granularity of the size classes, and the alignment of every block (the
/// alignment Lua's blocks have from the heap).
pub const CLASS: usize = 16;
/// The largest block the pool serves; larger ones go to the heap.
pub const SMALL_MAX: usize = 512;
/// Bytes the pool takes from the heap at a time.
pub const CHUNK: usize = 16 << 10;
/// How many size classes there are.
const CLASSES: usize = SMALL_MAX / CLASS;
/// The most bytes of chunks a pool holds. Freed blocks wait in their
/// class's list, so without a bound a script that fills its memory with
/// blocks of one size, frees them, and does the same with the next size,
/// would make the pool hold many times its limit; past this, small blocks
/// come from the heap, one by one, and go back to it when freed.
pub const MOST_HELD: usize = 8 << 20;

/// The size class of a block of `size` bytes: `None` for none (0) or a
/// block too large for the pool.
pub fn class_of(size: usize) -> Option<usize> {
    (1..=SMALL_MAX).contains(&size).then(|| (size - 1) / CLASS)
}

/// The bytes a block of class `class` spans.
pub fn class_size(class: usize) -> usize {
    (class + 1) * CLASS
}

/// The layout of a chunk.
fn chunk_layout() -> Layout {
    // CHUNK is a non-zero multiple of CLASS, a power of two.
    Layout::from_size_align(CHUNK, CLASS).unwrap_or(Layout::new::<u8>())
}

/// The layout of a loose block of class `class`.
fn block_layout(class: usize) -> Layout {
    // A non-zero multiple of CLASS, a power of two.
    Layout::from_size_align(class_size(class), CLASS).unwrap_or(Layout::new::<u8>())
}

/// Free blocks by size class, and the chunks they are carved from.
pub struct Pool {
    /// For each class, blocks free for reuse (a stack: the last freed is
    /// reused first, while it is warm in the cache).
    free: [Vec<NonNull<u8>>; CLASSES],
    /// Every chunk taken from the heap; the last one is being carved.
    chunks: Vec<NonNull<u8>>,
    /// Bytes of the last chunk carved so far.
    carved: usize,
    /// Where each chunk starts, in ascending order: what tells a chunk's
    /// block from a loose one.
    starts: Vec<usize>,
    /// Blocks taken from the heap one by one (past [`Pool::most_held`])
    /// and not given back yet.
    loose: usize,
    /// The most bytes of chunks this pool holds ([`MOST_HELD`]).
    most_held: usize,
}

impl Default for Pool {
    fn default() -> Self {
        Self::new()
    }
}

impl Pool {
    /// An empty pool: it takes its first chunk when it is first asked.
    pub const fn new() -> Self {
        Self::holding_at_most(MOST_HELD)
    }

    /// An empty pool that holds at most `bytes` of chunks.
    const fn holding_at_most(bytes: usize) -> Self {
        Pool {
            free: [const { Vec::new() }; CLASSES],
            chunks: Vec::new(),
            carved: CHUNK,
            starts: Vec::new(),
            loose: 0,
            most_held: bytes,
        }
    }

    /// A block for `size` bytes (1 to [`SMALL_MAX`]), aligned to
    /// [`CLASS`]; `None` when the size is not the pool's, or the heap has
    /// no room for another chunk.
    pub fn take(&mut self, size: usize) -> Option<NonNull<u8>> {
        let class = class_of(size)?;
        if let Some(block) = self.free[class].pop() {
            return Some(block);
        }
        let bytes = class_size(class);
        if self.carved + bytes > CHUNK {
            if self.held() + CHUNK > self.most_held {
                // SAFETY: the layout's size is not zero.
                let block = NonNull::new(unsafe { alloc::alloc::alloc(block_layout(class)) })?;
                self.loose += 1;
                return Some(block);
            }
            self.add_chunk()?;
        }
        let chunk = *self.chunks.last()?;
        let block = NonNull::new(chunk.as_ptr().wrapping_add(self.carved))?;
        self.carved += bytes;
        Some(block)
    }

    /// Takes `block`, of `size` bytes (1 to [`SMALL_MAX`]), back for
    /// reuse. It must be a block [`Pool::take`] gave for that size and not
    /// given back since.
    pub fn give(&mut self, block: NonNull<u8>, size: usize) {
        let Some(class) = class_of(size) else {
            return;
        };
        if self.loose > 0 && !self.owns(block) {
            // SAFETY: a block outside every chunk is a loose one, which
            // came from the heap with its class's layout (the caller gives
            // the size it was taken for), given back once.
            unsafe { alloc::alloc::dealloc(block.as_ptr(), block_layout(class)) };
            self.loose -= 1;
            return;
        }
        // A block that finds no room in its list is not reused; its chunk
        // still goes back to the heap with the pool.
        if self.free[class].try_reserve(1).is_ok() {
            self.free[class].push(block);
        }
    }

    /// Bytes the pool holds from the heap.
    pub fn held(&self) -> usize {
        self.chunks.len() * CHUNK
    }

    /// Whether `block` lies in one of the chunks.
    fn owns(&self, block: NonNull<u8>) -> bool {
        let at = block.as_ptr() as usize;
        let after = self.starts.partition_point(|&start| start <= at);
        after > 0 && at < self.starts[after - 1] + CHUNK
    }

    /// Starts carving a new chunk; what is left of the last one becomes a
    /// free block of the largest class it holds.
    fn add_chunk(&mut self) -> Option<()> {
        self.chunks.try_reserve(1).ok()?;
        self.starts.try_reserve(1).ok()?;
        // SAFETY: the layout's size is not zero.
        let chunk = NonNull::new(unsafe { alloc::alloc::alloc(chunk_layout()) })?;
        let rest = CHUNK - self.carved;
        if let (Some(last), Some(class)) = (self.chunks.last(), (rest / CLASS).checked_sub(1)) {
            if let Some(tail) = NonNull::new(last.as_ptr().wrapping_add(self.carved)) {
                self.give(tail, class_size(class));
            }
        }
        self.chunks.push(chunk);
        let start = chunk.as_ptr() as usize;
        let at = self.starts.partition_point(|&s| s < start);
        self.starts.insert(at, start);
        self.carved = 0;
        Some(())
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        for chunk in self.chunks.drain(..) {
            // SAFETY: every chunk came from the heap with this layout and
            // goes back once; no block of it is used after the pool (the
            // state that used them is closed first, which also gives every
            // loose block back).
            unsafe { alloc::alloc::dealloc(chunk.as_ptr(), chunk_layout()) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_fall_in_sixteen_byte_classes_up_to_512() {
        assert_eq!(class_of(0), None);
        assert_eq!(class_of(1), Some(0));
        assert_eq!(class_of(16), Some(0));
        assert_eq!(class_of(17), Some(1));
        assert_eq!(class_of(512), Some(31));
        assert_eq!(class_of(513), None);
        for size in 1..=SMALL_MAX {
            let class = class_of(size).unwrap();
            assert!(class_size(class) >= size && class_size(class) < size + CLASS);
        }
    }

    #[test]
    fn blocks_are_aligned_apart_and_reused_by_class() {
        let mut pool = Pool::new();
        assert_eq!(pool.held(), 0);
        let a = pool.take(24).unwrap();
        let b = pool.take(24).unwrap();
        let c = pool.take(100).unwrap();
        for p in [a, b, c] {
            assert_eq!(p.as_ptr() as usize % CLASS, 0);
        }
        assert_eq!(b.as_ptr() as usize - a.as_ptr() as usize, 32);
        assert_eq!(c.as_ptr() as usize - b.as_ptr() as usize, 32);
        pool.give(a, 30);
        // Another class does not get it; its own does, last freed first.
        let d = pool.take(40).unwrap();
        assert_ne!(d, a);
        pool.give(b, 17);
        assert_eq!(pool.take(32), Some(b));
        assert_eq!(pool.take(20), Some(a));
        assert_eq!(pool.take(0), None);
        assert_eq!(pool.take(SMALL_MAX + 1), None);
        assert_eq!(pool.held(), CHUNK);
    }

    #[test]
    fn a_full_chunk_leaves_its_tail_free_and_a_new_one_is_carved() {
        let mut pool = Pool::new();
        // 40 blocks of 400 bytes carve 16,000 of 16,384: 384 left.
        let blocks: Vec<_> = (0..40).map(|_| pool.take(400).unwrap()).collect();
        assert_eq!(pool.held(), CHUNK);
        let next = pool.take(400).unwrap();
        assert_eq!(pool.held(), 2 * CHUNK);
        assert!(!blocks.contains(&next));
        // The tail is a free 384-byte block, right after the last block.
        let tail = pool.take(384).unwrap();
        assert_eq!(tail.as_ptr() as usize, blocks[39].as_ptr() as usize + 400);
        // Blocks never overlap: every one is distinct and CLASS-aligned.
        let mut all: Vec<usize> = blocks.iter().map(|p| p.as_ptr() as usize).collect();
        all.extend([next.as_ptr() as usize, tail.as_ptr() as usize]);
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 42);
    }

    #[test]
    fn past_its_bound_the_pool_lends_heap_blocks_and_takes_them_back() {
        let mut pool = Pool::holding_at_most(2 * CHUNK);
        // 16 KiB of 512-byte blocks fill a chunk exactly: 32 a chunk.
        let held: Vec<_> = (0..64).map(|_| pool.take(512).unwrap()).collect();
        assert_eq!((pool.held(), pool.loose), (2 * CHUNK, 0));
        let loose: Vec<_> = (0..3).map(|_| pool.take(512).unwrap()).collect();
        assert_eq!((pool.held(), pool.loose), (2 * CHUNK, 3));
        assert!(held.iter().all(|&b| pool.owns(b)));
        assert!(loose.iter().all(|&b| !pool.owns(b)));
        // A loose block goes back to the heap, a chunk's to its list.
        pool.give(loose[0], 500);
        assert_eq!(pool.loose, 2);
        pool.give(held[5], 512);
        assert_eq!(pool.take(497), Some(held[5]));
        for &b in &loose[1..] {
            pool.give(b, 512);
        }
        assert_eq!(pool.loose, 0);
        // Other classes get loose blocks too, once the chunks are full.
        let small = pool.take(16).unwrap();
        assert!(!pool.owns(small));
        pool.give(small, 16);
        assert_eq!((pool.held(), pool.loose), (2 * CHUNK, 0));
    }

    #[test]
    fn blocks_hold_what_is_written_to_them() {
        let mut pool = Pool::new();
        let blocks: Vec<_> = (1..=SMALL_MAX)
            .map(|size| (size, pool.take(size).unwrap()))
            .collect();
        for &(size, p) in &blocks {
            // SAFETY: p is a live block of at least size bytes.
            unsafe { core::ptr::write_bytes(p.as_ptr(), size as u8, size) };
        }
        for &(size, p) in &blocks {
            // SAFETY: as above; written just before.
            let bytes = unsafe { core::slice::from_raw_parts(p.as_ptr(), size) };
            assert!(bytes.iter().all(|&b| b == size as u8));
        }
    }
}
