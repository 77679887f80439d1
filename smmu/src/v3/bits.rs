//! Bit-field helpers shared by the encoders and decoders.

/// A mask of the low `width` bits.
pub(crate) const fn mask(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1 << width) - 1
    }
}

/// Field `[lo + width - 1 : lo]` of `value`.
pub(crate) const fn get(value: u64, lo: u32, width: u32) -> u64 {
    (value >> lo) & mask(width)
}

/// `field` placed at bit `lo`, `width` bits wide (excess bits are dropped).
pub(crate) const fn put(field: u64, lo: u32, width: u32) -> u64 {
    (field & mask(width)) << lo
}

/// Bit `bit` of `value`.
pub(crate) const fn bit(value: u64, bit: u32) -> bool {
    (value >> bit) & 1 == 1
}

/// Bits `[hi:lo]` of an address kept in place (the rest cleared), as tables
/// and commands store addresses.
pub(crate) const fn addr_bits(addr: u64, hi: u32, lo: u32) -> u64 {
    addr & (mask(hi + 1) & !mask(lo))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields() {
        assert_eq!(mask(0), 0);
        assert_eq!(mask(6), 0x3f);
        assert_eq!(mask(64), u64::MAX);
        assert_eq!(get(0xabcd, 4, 8), 0xbc);
        assert_eq!(put(0x1ff, 4, 8), 0xff0);
        assert!(bit(1 << 45, 45));
        assert_eq!(addr_bits(u64::MAX, 51, 6), 0x000f_ffff_ffff_ffc0);
    }
}
