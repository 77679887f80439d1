//! The integer arithmetic of `BITFIELD`: reading and writing integers of
//! 1 to 64 bits at any bit offset (most significant bit first, as
//! `SETBIT` counts), and what `INCRBY` and `SET` do when a value does not
//! fit its width under `OVERFLOW WRAP`, `SAT` or `FAIL`, as Redis does.

/// What to do with a value that does not fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Overflow {
    /// Keep the low bits (two's complement for signed).
    Wrap,
    /// Clamp to the smallest or largest value.
    Sat,
    /// Change nothing and answer nil.
    Fail,
}

/// An integer type: `i1`..`i64` or `u1`..`u63`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Width {
    /// Signed (`i`) or unsigned (`u`).
    pub signed: bool,
    /// 1 to 64 bits (63 at most unsigned).
    pub bits: u32,
}

impl Width {
    /// A type argument: `i` or `u`, then the width in Redis's integer
    /// syntax (read up to a NUL byte, as Redis does).
    pub fn parse(arg: &[u8]) -> Option<Width> {
        let (&kind, rest) = arg.split_first()?;
        let signed = match kind {
            b'i' => true,
            b'u' => false,
            _ => return None,
        };
        let digits = rest.split(|&b| b == 0).next().unwrap_or(rest);
        let bits = crate::num::parse_i64(digits)?;
        let most = if signed { 64 } else { 63 };
        (1..=most).contains(&bits).then_some(Width {
            signed,
            bits: bits as u32,
        })
    }
}

/// The `bits`-bit unsigned integer at bit `offset` of `byte_at`'s bytes.
pub(crate) fn get_unsigned(byte_at: impl Fn(u64) -> u8, offset: u64, bits: u32) -> u64 {
    (0..u64::from(bits)).fold(0u64, |value, j| {
        let at = offset + j;
        let bit = (byte_at(at >> 3) >> (7 - (at & 7))) & 1;
        (value << 1) | u64::from(bit)
    })
}

/// The integer of type `width` at bit `offset` (sign-extended if signed),
/// as an `i64` (unsigned ones fit: at most 63 bits).
pub(crate) fn get(byte_at: impl Fn(u64) -> u8, offset: u64, width: Width) -> i64 {
    let raw = get_unsigned(byte_at, offset, width.bits);
    if width.signed && width.bits < 64 && raw & (1 << (width.bits - 1)) != 0 {
        (raw | (u64::MAX << width.bits)) as i64
    } else {
        raw as i64
    }
}

/// Writes the low `bits` bits of `value` at bit `offset` through
/// `set_bit(bit_offset, on)`.
pub(crate) fn set(mut set_bit: impl FnMut(u64, bool), offset: u64, bits: u32, value: u64) {
    for j in 0..bits {
        let on = value & (1u64 << (bits - 1 - j)) != 0;
        set_bit(offset + u64::from(j), on);
    }
}

/// `value + incr` in type `width` under `overflow`: `Some(new value)`, or
/// `None` when it overflows under `FAIL`. `SET` is an increment of 0 from
/// the value to set.
pub(crate) fn add(value: i64, incr: i64, width: Width, overflow: Overflow) -> Option<i64> {
    match width.signed {
        true => add_signed(value, incr, width.bits, overflow),
        false => add_unsigned(value as u64, incr, width.bits, overflow).map(|v| v as i64),
    }
}

fn add_signed(value: i64, incr: i64, bits: u32, overflow: Overflow) -> Option<i64> {
    let max = if bits == 64 {
        i64::MAX
    } else {
        (1i64 << (bits - 1)) - 1
    };
    let min = -max - 1;
    let max_incr = (max as u64).wrapping_sub(value as u64) as i64;
    let min_incr = min.wrapping_sub(value);
    let wide = bits != 64;
    let above =
        value > max || (wide && incr > max_incr) || (value >= 0 && incr > 0 && incr > max_incr);
    let below =
        value < min || (wide && incr < min_incr) || (value < 0 && incr < 0 && incr < min_incr);
    if !above && !below {
        return Some(value.wrapping_add(incr));
    }
    match overflow {
        Overflow::Fail => None,
        Overflow::Sat => Some(if above { max } else { min }),
        Overflow::Wrap => {
            let sum = (value as u64).wrapping_add(incr as u64);
            if bits == 64 {
                return Some(sum as i64);
            }
            let high = u64::MAX << bits;
            Some(match sum & (1u64 << (bits - 1)) != 0 {
                true => (sum | high) as i64,
                false => (sum & !high) as i64,
            })
        }
    }
}

fn add_unsigned(value: u64, incr: i64, bits: u32, overflow: Overflow) -> Option<u64> {
    let max = (1u64 << bits) - 1;
    let max_incr = max.wrapping_sub(value) as i64;
    let min_incr = 0u64.wrapping_sub(value) as i64;
    let above = value > max || (incr > 0 && incr > max_incr);
    let below = !above && incr < 0 && incr < min_incr;
    if !above && !below {
        return Some(value.wrapping_add(incr as u64));
    }
    match overflow {
        Overflow::Fail => None,
        Overflow::Sat => Some(if above { max } else { 0 }),
        Overflow::Wrap => Some(value.wrapping_add(incr as u64) & max),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const I8: Width = Width {
        signed: true,
        bits: 8,
    };
    const U2: Width = Width {
        signed: false,
        bits: 2,
    };
    const I64: Width = Width {
        signed: true,
        bits: 64,
    };

    #[test]
    fn types_parse_as_redis_reads_them() {
        assert_eq!(Width::parse(b"i8"), Some(I8));
        assert_eq!(Width::parse(b"u2"), Some(U2));
        assert_eq!(Width::parse(b"i64"), Some(I64));
        assert_eq!(Width::parse(b"i8\0junk"), Some(I8), "up to a NUL");
        for bad in [&b"u64"[..], b"i65", b"i0", b"x8", b"", b"i", b"i08", b"u-1"] {
            assert_eq!(Width::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn integers_read_back_as_written_across_bytes() {
        let mut bytes = [0u8; 4];
        set(
            |at, on| {
                let mask = 0x80 >> (at & 7);
                let byte = &mut bytes[(at >> 3) as usize];
                *byte = if on { *byte | mask } else { *byte & !mask };
            },
            5,
            8,
            0xa5,
        );
        assert_eq!(bytes, [0b0000_0101, 0b0010_1000, 0, 0]);
        assert_eq!(get(|i| bytes[i as usize], 5, I8), 0xa5u8 as i8 as i64);
        assert_eq!(get_unsigned(|i| bytes[i as usize], 5, 8), 0xa5);
    }

    #[test]
    fn overflow_wraps_saturates_or_fails() {
        assert_eq!(add(127, 1, I8, Overflow::Wrap), Some(-128));
        assert_eq!(add(127, 1, I8, Overflow::Sat), Some(127));
        assert_eq!(add(127, 1, I8, Overflow::Fail), None);
        assert_eq!(add(-128, -1, I8, Overflow::Sat), Some(-128));
        assert_eq!(add(3, 1, U2, Overflow::Wrap), Some(0));
        assert_eq!(add(0, -1, U2, Overflow::Wrap), Some(3));
        assert_eq!(add(0, -1, U2, Overflow::Sat), Some(0));
        assert_eq!(add(1, 1, U2, Overflow::Fail), Some(2));
        // SET of a value out of range is an increment of 0 from it.
        assert_eq!(add(300, 0, I8, Overflow::Wrap), Some(44));
        assert_eq!(add(300, 0, I8, Overflow::Sat), Some(127));
        assert_eq!(add(-5, 0, U2, Overflow::Wrap), Some(3));
        assert_eq!(add(i64::MAX, 1, I64, Overflow::Wrap), Some(i64::MIN));
        assert_eq!(add(i64::MAX, 1, I64, Overflow::Sat), Some(i64::MAX));
        assert_eq!(add(i64::MIN, -1, I64, Overflow::Fail), None);
    }
}
