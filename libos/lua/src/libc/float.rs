//! Numbers as text and back, for C's `strtod` and printf's `%e %f %g`: the
//! logic, host-tested; `exports.rs` gives the guest its C symbols.

use core::fmt::Write;

/// Writes `v`'s magnitude (no sign: printf adds it) as printf's conversion
/// `conv` (`e E f F g G`) with `prec` digits of precision; `alt` is the `#`
/// flag (keep the point and, for `g`, trailing zeros).
pub fn format_double(out: &mut impl Write, v: f64, conv: u8, prec: usize, alt: bool) {
    let upper = conv.is_ascii_uppercase();
    let v = v.abs();
    if v.is_nan() || v.is_infinite() {
        let word = match (v.is_nan(), upper) {
            (true, false) => "nan",
            (true, true) => "NAN",
            (false, false) => "inf",
            (false, true) => "INF",
        };
        let _ = out.write_str(word);
        return;
    }
    let mut text = Small::new();
    match conv.to_ascii_lowercase() {
        b'f' => fixed(&mut text, v, prec, alt),
        b'e' => scientific(&mut text, v, prec, alt, upper),
        _ => general(&mut text, v, prec, alt, upper),
    }
    let _ = out.write_str(text.as_str());
}

/// `%f`: `prec` digits after the point.
fn fixed(out: &mut Small, v: f64, prec: usize, alt: bool) {
    let _ = write!(out, "{v:.prec$}");
    if alt && prec == 0 {
        out.push(b'.');
    }
}

/// `%e`: one digit, the point, `prec` digits, and an exponent of at least two
/// digits with its sign.
fn scientific(out: &mut Small, v: f64, prec: usize, alt: bool, upper: bool) {
    let mut rust = Small::new();
    let _ = write!(rust, "{v:.prec$e}");
    let (mantissa, exp) = rust
        .as_str()
        .split_once('e')
        .unwrap_or((rust.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let _ = out.write_str(mantissa);
    if alt && prec == 0 {
        out.push(b'.');
    }
    let sign = if exp < 0 { '-' } else { '+' };
    let _ = write!(
        out,
        "{}{sign}{:02}",
        if upper { 'E' } else { 'e' },
        exp.unsigned_abs()
    );
}

/// `%g`: `%e` or `%f` by the exponent, with `prec` significant digits and,
/// without `#`, no trailing zeros.
fn general(out: &mut Small, v: f64, prec: usize, alt: bool, upper: bool) {
    let p = prec.max(1);
    let mut probe = Small::new();
    let _ = write!(probe, "{v:.0$e}", p - 1);
    let exp: i64 = probe
        .as_str()
        .split_once('e')
        .map_or(0, |(_, e)| e.parse().unwrap_or(0));
    if exp >= -4 && exp < p as i64 {
        fixed(out, v, (p as i64 - 1 - exp) as usize, alt);
        if !alt {
            strip_zeros(out, out.len());
        }
    } else {
        scientific(out, v, p - 1, alt, upper);
        if !alt {
            let e = out.as_str().find(['e', 'E']).unwrap_or(out.len());
            strip_zeros(out, e);
        }
    }
}

/// Removes the trailing zeros of the fraction that ends at `end`, and the
/// point if no digit is left after it.
fn strip_zeros(out: &mut Small, end: usize) {
    let text = out.as_str();
    if !text[..end].contains('.') {
        return;
    }
    let kept = text[..end]
        .trim_end_matches('0')
        .trim_end_matches('.')
        .len();
    out.remove(kept..end);
}

/// A fixed buffer for one number's text (at most 309 integer digits, the
/// point and the 120 fraction digits printf.c allows).
struct Small {
    buf: [u8; 512],
    len: usize,
}

impl Small {
    fn new() -> Self {
        Small {
            buf: [0; 512],
            len: 0,
        }
    }

    fn len(&self) -> usize {
        self.len
    }

    fn push(&mut self, b: u8) {
        if self.len < self.buf.len() {
            self.buf[self.len] = b;
            self.len += 1;
        }
    }

    fn remove(&mut self, range: core::ops::Range<usize>) {
        self.buf.copy_within(range.end..self.len, range.start);
        self.len -= range.end - range.start;
    }

    fn as_str(&self) -> &str {
        // Only ASCII from Rust's number formatting and our pushes is written.
        core::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

impl Write for Small {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        for &b in s.as_bytes() {
            self.push(b);
        }
        Ok(())
    }
}

/// C's `strtod` over `s`: the number at its start (after white space), and
/// how many bytes it took (0 when there is none). Takes what glibc takes:
/// decimals with an exponent, hexadecimals (`0x1.8p3`), `inf`, `infinity`
/// and `nan`.
pub fn parse_double(s: &[u8]) -> (f64, usize) {
    let mut i = s.iter().take_while(|c| is_space(**c)).count();
    let negative = s.get(i) == Some(&b'-');
    if matches!(s.get(i), Some(b'+' | b'-')) {
        i += 1;
    }
    let (v, used) = unsigned_double(&s[i..]);
    if used == 0 {
        return (0.0, 0);
    }
    (if negative { -v } else { v }, i + used)
}

fn is_space(c: u8) -> bool {
    c == b' ' || (b'\t'..=b'\r').contains(&c)
}

fn unsigned_double(s: &[u8]) -> (f64, usize) {
    let starts = |word: &[u8]| s.len() >= word.len() && s[..word.len()].eq_ignore_ascii_case(word);
    if starts(b"infinity") {
        return (f64::INFINITY, 8);
    }
    if starts(b"inf") {
        return (f64::INFINITY, 3);
    }
    if starts(b"nan") {
        return (f64::NAN, 3);
    }
    if s.len() > 2 && s[0] == b'0' && (s[1] | 0x20) == b'x' {
        let (v, used) = hex_double(&s[2..]);
        if used > 0 {
            return (v, 2 + used);
        }
        return (0.0, 1);
    }
    let digits = |from: usize| s[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let int = digits(0);
    let mut end = int;
    let mut frac = 0;
    if s.get(end) == Some(&b'.') {
        frac = digits(end + 1);
        if int + frac > 0 {
            end += 1 + frac;
        }
    }
    if int + frac == 0 {
        return (0.0, 0);
    }
    if matches!(s.get(end), Some(b'e' | b'E')) {
        let mut j = end + 1;
        if matches!(s.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        let exp = digits(j);
        if exp > 0 {
            end = j + exp;
        }
    }
    let text = core::str::from_utf8(&s[..end]).unwrap_or("0");
    (text.parse().unwrap_or(0.0), end)
}

/// The digits after `0x`: a hexadecimal mantissa with an optional binary
/// exponent (`p`).
fn hex_double(s: &[u8]) -> (f64, usize) {
    let mut v = 0.0f64;
    let mut scale = 0i32;
    let mut i = 0;
    let mut seen = false;
    let mut point = false;
    while let Some(&c) = s.get(i) {
        if c == b'.' && !point {
            point = true;
        } else if let Some(d) = (c as char).to_digit(16) {
            v = v * 16.0 + f64::from(d);
            if point {
                scale -= 4;
            }
            seen = true;
        } else {
            break;
        }
        i += 1;
    }
    if !seen {
        return (0.0, 0);
    }
    if matches!(s.get(i), Some(b'p' | b'P')) {
        let mut j = i + 1;
        let negative = s.get(j) == Some(&b'-');
        if matches!(s.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        let n = s[j..].iter().take_while(|c| c.is_ascii_digit()).count();
        if n > 0 {
            let exp = s[j..j + n].iter().fold(0i32, |e, d| {
                e.saturating_mul(10)
                    .saturating_add(i32::from(d - b'0'))
                    .min(100_000)
            });
            scale += if negative { -exp } else { exp };
            i = j + n;
        }
    }
    (v * pow2(scale), i)
}

/// 2 to the power `e`, in steps that stay finite until the result is not.
fn pow2(mut e: i32) -> f64 {
    let mut r = 1.0;
    while e > 0 {
        let step = e.min(1000);
        r *= f64::from_bits(((1023 + step) as u64) << 52);
        e -= step;
    }
    while e < 0 {
        let step = e.max(-1000);
        r *= f64::from_bits(((1023 + step) as u64) << 52);
        e -= step;
    }
    r
}

/// C's `strtoul` over `s` in `base` (0 for C's prefixes): the value
/// (`u64::MAX` on overflow, as C says; a `-` negates modulo 2^64) and how
/// many bytes it took (0 when there is no number).
pub fn parse_unsigned(s: &[u8], base: u32) -> (u64, usize, bool) {
    let mut i = s.iter().take_while(|c| is_space(**c)).count();
    let negative = s.get(i) == Some(&b'-');
    if matches!(s.get(i), Some(b'+' | b'-')) {
        i += 1;
    }
    let mut base = base;
    let hex_prefix = s.get(i) == Some(&b'0')
        && matches!(s.get(i + 1), Some(b'x' | b'X'))
        && s.get(i + 2).is_some_and(|c| c.is_ascii_hexdigit());
    if (base == 0 || base == 16) && hex_prefix {
        base = 16;
        i += 2;
    } else if base == 0 {
        base = if s.get(i) == Some(&b'0') { 8 } else { 10 };
    }
    if !(2..=36).contains(&base) {
        return (0, 0, false);
    }
    let start = i;
    let mut v: u64 = 0;
    let mut overflow = false;
    while let Some(d) = s.get(i).and_then(|&c| (c as char).to_digit(base)) {
        match v
            .checked_mul(u64::from(base))
            .and_then(|v| v.checked_add(u64::from(d)))
        {
            Some(n) => v = n,
            None => overflow = true,
        }
        i += 1;
    }
    if i == start {
        return (0, 0, false);
    }
    if overflow {
        return (u64::MAX, i, true);
    }
    (if negative { v.wrapping_neg() } else { v }, i, false)
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::string::String;

    fn fmt(v: f64, conv: u8, prec: usize, alt: bool) -> String {
        let mut s = String::new();
        format_double(&mut s, v, conv, prec, alt);
        s
    }

    #[test]
    fn formats_as_glibc_does() {
        assert_eq!(fmt(0.1, b'g', 14, false), "0.1");
        assert_eq!(fmt(100.0, b'g', 14, false), "100");
        assert_eq!(fmt(1e15, b'g', 14, false), "1e+15");
        assert_eq!(
            fmt(123456789012345.0, b'g', 14, false),
            "1.2345678901234e+14"
        );
        assert_eq!(fmt(0.0001, b'g', 14, false), "0.0001");
        assert_eq!(fmt(0.00001, b'g', 14, false), "1e-05");
        assert_eq!(fmt(1.23456, b'f', 2, false), "1.23");
        assert_eq!(fmt(2.5, b'f', 0, false), "2");
        assert_eq!(fmt(2.5, b'f', 0, true), "2.");
        assert_eq!(fmt(1234.5, b'e', 3, false), "1.234e+03");
        assert_eq!(fmt(1234.5, b'E', 3, false), "1.234E+03");
        assert_eq!(fmt(1e-300, b'e', 1, false), "1.0e-300");
        assert_eq!(fmt(f64::INFINITY, b'g', 6, false), "inf");
        assert_eq!(fmt(f64::NAN, b'G', 6, false), "NAN");
        assert_eq!(fmt(0.5, b'g', 6, true), "0.500000");
        assert_eq!(fmt(0.0, b'g', 14, false), "0");
        assert_eq!(fmt(1e308, b'f', 99, false).len(), 309 + 1 + 99);
    }

    #[test]
    fn parses_as_strtod_does() {
        assert_eq!(parse_double(b"  12.5xyz"), (12.5, 6));
        assert_eq!(parse_double(b"-1e3"), (-1000.0, 4));
        assert_eq!(parse_double(b"1e"), (1.0, 1));
        assert_eq!(parse_double(b".5"), (0.5, 2));
        assert_eq!(parse_double(b"5."), (5.0, 2));
        assert_eq!(parse_double(b"0x10"), (16.0, 4));
        assert_eq!(parse_double(b"0x1.8p1"), (3.0, 7));
        assert_eq!(parse_double(b"0x"), (0.0, 1));
        assert_eq!(parse_double(b"inf"), (f64::INFINITY, 3));
        assert!(parse_double(b"nan").0.is_nan());
        assert_eq!(parse_double(b"abc"), (0.0, 0));
        assert_eq!(parse_double(b"."), (0.0, 0));
        assert_eq!(parse_double(b"1e400").0, f64::INFINITY);
    }

    #[test]
    fn parses_as_strtoul_does() {
        assert_eq!(parse_unsigned(b"ff", 16), (255, 2, false));
        assert_eq!(parse_unsigned(b"0x1A", 0), (26, 4, false));
        assert_eq!(parse_unsigned(b"017", 0), (15, 3, false));
        assert_eq!(parse_unsigned(b" -1", 10), (u64::MAX, 3, false));
        assert_eq!(parse_unsigned(b"zz", 36), (1295, 2, false));
        assert!(parse_unsigned(b"99999999999999999999999", 10).2);
        assert_eq!(parse_unsigned(b"g", 16), (0, 0, false));
    }
}
