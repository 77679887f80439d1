//! A window of device registers. The one `unsafe` step is creating it (the
//! caller vouches that the address is a device of that size, mapped as device
//! memory); reads and writes are then bounds-checked volatile accesses.

/// A block of 32-bit device registers at a fixed address.
#[derive(Debug)]
pub struct Mmio {
    base: usize,
    len: usize,
}

impl Mmio {
    /// Describes the registers at `base..base + len`.
    ///
    /// # Safety
    /// `base..base + len` must be a device's register block, mapped as device
    /// memory for as long as this value is used, and accessing its registers
    /// must not violate memory safety (it is not RAM that Rust owns).
    pub const unsafe fn new(base: usize, len: usize) -> Self {
        Self { base, len }
    }

    /// Physical (and, with the identity map, virtual) base address.
    pub fn base(&self) -> usize {
        self.base
    }

    /// The register of type `T` (`u32` or `u64`) at `offset`, which must
    /// be aligned to its size and lie inside the block.
    fn reg<T>(&self, offset: usize) -> *mut T {
        let size = core::mem::size_of::<T>();
        assert!(
            offset.is_multiple_of(size) && offset + size <= self.len,
            "register {offset:#x} out of range"
        );
        (self.base + offset) as *mut T
    }

    /// Reads the 32-bit register at `offset`.
    pub fn read(&self, offset: usize) -> u32 {
        // SAFETY: `new`'s contract makes the block valid device memory; the
        // offset is checked to lie inside it and to be aligned.
        unsafe { self.reg::<u32>(offset).read_volatile() }
    }

    /// Writes the 32-bit register at `offset`.
    pub fn write(&self, offset: usize, value: u32) {
        // SAFETY: as in `read`.
        unsafe { self.reg::<u32>(offset).write_volatile(value) }
    }

    /// Reads the 64-bit register at `offset` with one 64-bit access (devices
    /// such as the SMMUv3 have registers that must not be split in two).
    pub fn read64(&self, offset: usize) -> u64 {
        // SAFETY: `new`'s contract makes the block valid device memory; the
        // offset is checked to lie inside it and to be 8-byte aligned.
        unsafe { self.reg::<u64>(offset).read_volatile() }
    }

    /// Writes the 64-bit register at `offset` with one 64-bit access.
    pub fn write64(&self, offset: usize, value: u64) {
        // SAFETY: as in `read64`.
        unsafe { self.reg::<u64>(offset).write_volatile(value) }
    }
}
