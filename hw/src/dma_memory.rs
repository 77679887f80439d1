//! Memory shared with a device: the one type every driver uses for what a
//! device reads and writes by address on its own (NVMe queues and PRP
//! lists, the GEM's and the SD controller's descriptor rings, the SMMU's
//! tables and queues, virtio's rings).
//!
//! ```text
//!  kernel allocator ──DmaAllocator::alloc──► DmaMemory (zeroed, contiguous,
//!                                             identity-mapped, owned for good)
//!  driver: set_u32/set_u64 ──► fence ──► doorbell ──► device reads it
//!          u32_at/u64_at   ◄── device wrote it (volatile: never cached)
//! ```
//!
//! A device changes this memory behind the compiler's back, so every access
//! is volatile and bounds-checked; the type is the only place in `hw` (with
//! [`mmio`](crate::mmio)) that holds `unsafe` for it. Ordering against the
//! device (a barrier before a doorbell, after reading a completion's phase)
//! stays the driver's job, as the device's protocol says where it goes.

/// A zeroed, physically contiguous, identity-mapped block of memory that a
/// device reaches by its address, owned by one driver for good (it is never
/// freed while the device could still use it).
pub struct DmaMemory {
    words: &'static mut [u64],
}

impl DmaMemory {
    /// Takes `words` for a device. The address of the slice is the address
    /// the device is given, so the memory must be identity-mapped (it is on
    /// every Faultline board; host tests use leaked heap memory and a model
    /// of the device).
    pub fn new(words: &'static mut [u64]) -> Self {
        Self { words }
    }

    /// The bus address of byte 0 (equal to its virtual address).
    pub fn addr(&self) -> u64 {
        self.words.as_ptr() as u64
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.words.len() * 8
    }

    /// Whether it holds no byte at all.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// The bus address of byte `offset` (checked to lie inside).
    pub fn addr_of(&self, offset: usize) -> u64 {
        assert!(
            offset <= self.len(),
            "offset {offset:#x} outside DMA memory"
        );
        self.addr() + offset as u64
    }

    /// 64-bit word `i`, as the device last left it.
    pub fn u64_at(&self, i: usize) -> u64 {
        let word: &u64 = &self.words[i];
        // SAFETY: `word` is a live, aligned reference to an initialised u64;
        // the read is volatile only because the device may have written it.
        unsafe { core::ptr::read_volatile(word) }
    }

    /// Sets 64-bit word `i` for the device to read.
    pub fn set_u64(&mut self, i: usize, value: u64) {
        let word: &mut u64 = &mut self.words[i];
        // SAFETY: `word` is a live, aligned, exclusive reference to a u64.
        unsafe { core::ptr::write_volatile(word, value) }
    }

    /// 32-bit word `i` (byte offset `4 * i`), as the device last left it.
    pub fn u32_at(&self, i: usize) -> u32 {
        let p = self.ptr(i * 4, 4) as *const u32;
        // SAFETY: `ptr` checked that the four bytes lie inside the block,
        // which is 8-aligned, so `p` is aligned; the memory is initialised.
        unsafe { p.read_volatile() }
    }

    /// Sets 32-bit word `i` (byte offset `4 * i`) for the device to read.
    pub fn set_u32(&mut self, i: usize, value: u32) {
        let p = self.ptr_mut(i * 4, 4) as *mut u32;
        // SAFETY: as in `u32_at`, through the exclusive borrow of the block.
        unsafe { p.write_volatile(value) }
    }

    /// Byte `offset`, as the device last left it.
    pub fn u8_at(&self, offset: usize) -> u8 {
        let p = self.ptr(offset, 1);
        // SAFETY: `ptr` checked that the byte lies inside the block.
        unsafe { p.read_volatile() }
    }

    /// Bytes `range` as plain memory, for a buffer the device has handed
    /// back (its ownership bit or completion seen, then a fence): the device
    /// does not write it while the view lives.
    pub fn bytes(&self, range: core::ops::Range<usize>) -> &[u8] {
        &self.as_bytes()[range]
    }

    /// Bytes `range` to fill, for a buffer the device does not own until the
    /// driver hands it over (after the view is gone, and a fence).
    pub fn bytes_mut(&mut self, range: core::ops::Range<usize>) -> &mut [u8] {
        let len = self.len();
        // SAFETY: the u64 words are initialised, any byte pattern is a valid
        // u8, u8 needs no alignment, and the view borrows the words
        // exclusively for its lifetime.
        let all =
            unsafe { core::slice::from_raw_parts_mut(self.words.as_mut_ptr().cast::<u8>(), len) };
        &mut all[range]
    }

    fn as_bytes(&self) -> &[u8] {
        // SAFETY: as in `bytes_mut`, shared.
        unsafe { core::slice::from_raw_parts(self.words.as_ptr().cast::<u8>(), self.len()) }
    }

    /// All 64-bit words, for a bulk scan that makes its own reads opaque to
    /// the compiler (the SMMU's event records, read with vector loads).
    pub fn words(&self) -> &[u64] {
        self.words
    }

    fn ptr(&self, offset: usize, size: usize) -> *const u8 {
        assert!(
            offset.is_multiple_of(size) && offset + size <= self.len(),
            "access of {size} bytes at {offset:#x} outside DMA memory"
        );
        // The pointer stays inside the block (checked above).
        self.words.as_ptr().cast::<u8>().wrapping_add(offset)
    }

    fn ptr_mut(&mut self, offset: usize, size: usize) -> *mut u8 {
        let p = self.ptr(offset, size);
        let base = self.words.as_mut_ptr().cast::<u8>();
        base.wrapping_add(p as usize - base as usize)
    }
}

impl core::fmt::Debug for DmaMemory {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "DmaMemory({:#x}, {} bytes)", self.addr(), self.len())
    }
}

/// Where drivers get [`DmaMemory`]: the kernel's frame allocator (which may
/// also grant it to the device's stream), or plain heap memory in host
/// tests.
pub trait DmaAllocator {
    /// `bytes` (rounded up as the allocator likes) of zeroed, physically
    /// contiguous, identity-mapped memory aligned to `align` (a power of
    /// two), given for good; `None` if there is none.
    fn alloc(&mut self, bytes: usize, align: usize) -> Option<DmaMemory>;
}

/// Leaked heap memory as [`DmaMemory`], for host tests of drivers.
#[cfg(test)]
pub fn test_memory(bytes: usize) -> DmaMemory {
    DmaMemory::new(alloc::vec![0u64; bytes.div_ceil(8)].leak())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_of_each_width_share_the_bytes() {
        let mut m = test_memory(16);
        m.set_u64(0, 0x1122_3344_5566_7788);
        assert_eq!(m.u32_at(0), 0x5566_7788);
        assert_eq!(m.u32_at(1), 0x1122_3344);
        assert_eq!(m.u8_at(0), 0x88);
        m.set_u32(3, 0xdead_beef);
        assert_eq!(m.u64_at(1), 0xdead_beef_0000_0000);
        assert_eq!(m.len(), 16);
        assert_eq!(m.addr_of(8), m.addr() + 8);
    }

    #[test]
    #[should_panic(expected = "outside DMA memory")]
    fn an_access_past_the_end_is_refused() {
        let m = test_memory(8);
        m.u32_at(2);
    }
}
