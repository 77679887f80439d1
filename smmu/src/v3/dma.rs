//! Memory the SMMU reads and writes behind the compiler's back.
//!
//! Stream tables, context descriptors and queues live in ordinary RAM that
//! the SMMU accesses by DMA. Every access the driver makes to them is
//! volatile, so the compiler neither drops a store the SMMU is to see nor
//! reuses a load of a word the SMMU may have rewritten. This and
//! [`records`] (which reads runs of event records) hold the driver's only
//! `unsafe`.

use super::records::{self, RecordKey};

/// A zeroed, physically contiguous, identity-mapped buffer of 64-bit words
/// shared with the SMMU.
pub(crate) struct DmaBuf {
    words: &'static mut [u64],
}

impl DmaBuf {
    /// Takes ownership of memory from `QueueMemory::alloc`.
    pub(crate) fn new(words: &'static mut [u64]) -> Self {
        Self { words }
    }

    /// Physical address (equal to the virtual one: identity-mapped).
    pub(crate) fn addr(&self) -> u64 {
        self.words.as_ptr() as u64
    }

    /// Number of words.
    pub(crate) fn len(&self) -> usize {
        self.words.len()
    }

    /// Reads word `i` as the SMMU last left it.
    pub(crate) fn read(&self, i: usize) -> u64 {
        let word: &u64 = &self.words[i];
        // SAFETY: `word` is a live, aligned reference to an initialised u64;
        // the read is volatile only because the SMMU may have written it.
        unsafe { core::ptr::read_volatile(word) }
    }

    /// How many 32-byte records from record `records.start` on (before
    /// `records.end`) are the fault `key` (see [`records`]).
    pub(crate) fn count_records(&self, records: core::ops::Range<usize>, key: &RecordKey) -> usize {
        records::count_matching(&self.words[records.start * 4..records.end * 4], key)
    }

    /// Writes word `i` so that the SMMU can read it (once a barrier orders
    /// it before the register write that tells the SMMU to look).
    pub(crate) fn write(&mut self, i: usize, value: u64) {
        let word: &mut u64 = &mut self.words[i];
        // SAFETY: `word` is a live, aligned, exclusive reference to a u64.
        unsafe { core::ptr::write_volatile(word, value) }
    }
}
