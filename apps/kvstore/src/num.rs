//! Number syntax exactly as Redis accepts it.
//!
//! Redis is strict about integers (no sign `+`, no leading zeros, no spaces),
//! and clients rely on that: `INCR` on `"01"` is an error, not `2`. Every
//! place that reads a number from a request or a stored value goes through
//! here so the rules cannot drift apart.

use alloc::vec::Vec;

/// Parses a signed 64-bit integer with Redis's `string2ll` rules: optional
/// `-`, then digits without leading zeros (`"0"` itself is fine, `"-0"` is
/// not), nothing else, and no overflow.
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    let (negative, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some(_) => (false, s),
        None => return None,
    };
    if digits == b"0" {
        return if negative { None } else { Some(0) };
    }
    match digits.first() {
        Some(b'1'..=b'9') => {}
        _ => return None,
    }
    // Accumulate as a negative number so that i64::MIN is representable.
    let mut value: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        value = value.checked_mul(10)?.checked_sub(i64::from(d - b'0'))?;
    }
    if negative {
        Some(value)
    } else {
        value.checked_neg()
    }
}

/// Parses an unsigned 64-bit integer: plain decimal digits, no sign, at most
/// `u64::MAX`. Used for `SCAN` cursors, which clients treat as unsigned.
pub fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    let mut value: u64 = 0;
    for &d in s {
        if !d.is_ascii_digit() {
            return None;
        }
        value = value.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    Some(value)
}

/// Formats an integer the way it is stored and returned (`INCR` results).
pub fn format_i64(value: i64) -> Vec<u8> {
    let mut out = Vec::new();
    push_i64(&mut out, value);
    out
}

/// Appends the decimal text of `value` to `out`: what [`format_i64`]
/// returns, without an allocation of its own (every RESP length header
/// goes through here).
///
/// ```
/// let mut out = b"$".to_vec();
/// kvstore::num::push_i64(&mut out, -120);
/// assert_eq!(out, b"$-120");
/// ```
pub fn push_i64(out: &mut Vec<u8>, value: i64) {
    let mut digits = [0u8; 20];
    let at = digits_into(value.unsigned_abs(), &mut digits);
    if value < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&digits[at..]);
}

/// The decimal text of `value`, written in `buf`: [`format_i64`] on the
/// stack, for a result that is copied where it goes (`INCR`'s).
pub(crate) fn i64_text(value: i64, buf: &mut [u8; 21]) -> &[u8] {
    let mut at = digits_into(value.unsigned_abs(), &mut buf[1..]) + 1;
    if value < 0 {
        at -= 1;
        buf[at] = b'-';
    }
    &buf[at..]
}

/// Appends the decimal text of `n` to `out` (stream IDs' halves).
pub(crate) fn push_u64(out: &mut Vec<u8>, n: u64) {
    let mut digits = [0u8; 20];
    let at = digits_into(n, &mut digits);
    out.extend_from_slice(&digits[at..]);
}

/// How many decimal digits `n` has: the room [`push_u64`] takes.
pub(crate) fn decimal_len(n: u64) -> usize {
    n.checked_ilog10().unwrap_or(0) as usize + 1
}

/// Writes the decimal digits of `n` at the end of `buf` and returns where
/// they start: text on the stack, for encoders that do not write into a
/// `Vec` (20 digits hold any `u64`).
pub(crate) fn digits_into(mut n: u64, buf: &mut [u8]) -> usize {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return at;
        }
    }
}

/// Parses a memory size as Redis config files write it: a plain number of
/// bytes, or a number with a unit (`k`=1000, `kb`=1024, `m`, `mb`, `g`,
/// `gb`, case-insensitive). Used for `maxmemory` and friends.
pub fn parse_memory(s: &[u8]) -> Option<u64> {
    let split = s
        .iter()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    let value = parse_u64(digits)?;
    let mut lower = [0u8; 2];
    if unit.len() > lower.len() {
        return None;
    }
    for (dst, src) in lower.iter_mut().zip(unit) {
        *dst = src.to_ascii_lowercase();
    }
    let multiplier: u64 = match &lower[..unit.len()] {
        b"" | b"b" => 1,
        b"k" => 1000,
        b"kb" => 1024,
        b"m" => 1000 * 1000,
        b"mb" => 1024 * 1024,
        b"g" => 1000 * 1000 * 1000,
        b"gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    value.checked_mul(multiplier)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_on_the_stack_is_what_format_writes() {
        for n in [0, 7, -7, 10, -100, 123_456_789, i64::MAX, i64::MIN] {
            let mut buf = [0; 21];
            assert_eq!(i64_text(n, &mut buf), format_i64(n).as_slice());
        }
    }

    #[test]
    fn integers_follow_redis_strictness() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"42"), Some(42));
        assert_eq!(parse_i64(b"-42"), Some(-42));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-",
            b"-0",
            b"01",
            b"+1",
            b" 1",
            b"1 ",
            b"1.5",
            b"9223372036854775808",
            b"-9223372036854775809",
            b"abc",
        ] {
            assert_eq!(parse_i64(bad), None, "{:?}", bad);
        }
    }

    #[test]
    fn cursors_are_unsigned() {
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_u64(b"-1"), None);
        assert_eq!(parse_u64(b""), None);
    }

    #[test]
    fn memory_units() {
        assert_eq!(parse_memory(b"100"), Some(100));
        assert_eq!(parse_memory(b"1k"), Some(1000));
        assert_eq!(parse_memory(b"1KB"), Some(1024));
        assert_eq!(parse_memory(b"64mb"), Some(64 << 20));
        assert_eq!(parse_memory(b"2gb"), Some(2 << 30));
        assert_eq!(parse_memory(b"1tb"), None);
        assert_eq!(parse_memory(b"mb"), None);
    }

    #[test]
    fn formatting_roundtrips() {
        for v in [0, 1, -1, 9, 10, -99, 12345, i64::MAX, i64::MIN] {
            assert_eq!(parse_i64(&format_i64(v)), Some(v));
            assert_eq!(format_i64(v), alloc::format!("{v}").into_bytes());
        }
    }
}
