//! Reading a serialized value: every read is bounds-checked, and every
//! length is checked against the bytes left before anything is
//! allocated, so a truncated or hostile payload ends in [`Bad`], never in
//! a panic or a huge allocation.

use alloc::vec::Vec;

use super::lzf;

/// The payload is not a well-formed value ("Bad data format", as Redis
/// answers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bad;

/// Lengths: the top two bits of the first byte say how the rest is kept.
const LEN_6BIT: u8 = 0;
const LEN_14BIT: u8 = 1;
const LEN_32BIT: u8 = 0x80;
const LEN_64BIT: u8 = 0x81;
const ENCODED: u8 = 3;

/// String encodings (after an [`ENCODED`] length byte).
const ENC_INT8: u8 = 0;
const ENC_INT16: u8 = 1;
const ENC_INT32: u8 = 2;
const ENC_LZF: u8 = 3;

/// A position in bytes being read.
pub struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

/// A length as the format writes it: a count, or the encoding of a
/// string kept in another form.
enum Length {
    Plain(u64),
    Encoded(u8),
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Cursor { bytes, at: 0 }
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }

    /// The next `n` bytes.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], Bad> {
        let end = self.at.checked_add(n).ok_or(Bad)?;
        let taken = self.bytes.get(self.at..end).ok_or(Bad)?;
        self.at = end;
        Ok(taken)
    }

    /// The next byte.
    pub fn byte(&mut self) -> Result<u8, Bad> {
        Ok(self.take(1)?[0])
    }

    /// The next `N` bytes as an array.
    fn array<const N: usize>(&mut self) -> Result<[u8; N], Bad> {
        self.take(N)?.try_into().map_err(|_| Bad)
    }

    fn length(&mut self) -> Result<Length, Bad> {
        let first = self.byte()?;
        Ok(match (first >> 6, first) {
            (LEN_6BIT, _) => Length::Plain(u64::from(first & 0x3f)),
            (LEN_14BIT, _) => Length::Plain(u64::from(first & 0x3f) << 8 | u64::from(self.byte()?)),
            (_, LEN_32BIT) => Length::Plain(u64::from(u32::from_be_bytes(self.array()?))),
            (_, LEN_64BIT) => Length::Plain(u64::from_be_bytes(self.array()?)),
            (ENCODED, _) => Length::Encoded(first & 0x3f),
            _ => return Err(Bad),
        })
    }

    /// A number written as a length, any 64-bit value (stream IDs and
    /// counters).
    pub fn number(&mut self) -> Result<u64, Bad> {
        match self.length()? {
            Length::Plain(n) => Ok(n),
            Length::Encoded(_) => Err(Bad),
        }
    }

    /// A little-endian u64 (a time in milliseconds in streams).
    pub fn u64_le(&mut self) -> Result<u64, Bad> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    /// A length (a count of elements, bytes, ...) that cannot exceed the
    /// bytes left, as each thing it counts takes at least one byte.
    pub fn count(&mut self) -> Result<usize, Bad> {
        match self.length()? {
            Length::Plain(n) if n <= self.remaining() as u64 => Ok(n as usize),
            _ => Err(Bad),
        }
    }

    /// A string: plain bytes, an integer kept in binary (written out as
    /// decimal text), or LZF-compressed bytes.
    pub fn string(&mut self) -> Result<Vec<u8>, Bad> {
        let n = match self.length()? {
            Length::Plain(n) => n,
            Length::Encoded(ENC_INT8) => return Ok(text(i64::from(self.byte()? as i8))),
            Length::Encoded(ENC_INT16) => {
                return Ok(text(i64::from(i16::from_le_bytes(self.array()?))))
            }
            Length::Encoded(ENC_INT32) => {
                return Ok(text(i64::from(i32::from_le_bytes(self.array()?))))
            }
            Length::Encoded(ENC_LZF) => {
                let packed = self.count()?;
                let Length::Plain(len) = self.length()? else {
                    return Err(Bad);
                };
                let len = usize::try_from(len).map_err(|_| Bad)?;
                let input = self.take(packed)?;
                return lzf::decompress(input, len).map_err(|_| Bad);
            }
            Length::Encoded(_) => return Err(Bad),
        };
        let n = usize::try_from(n).map_err(|_| Bad)?;
        Ok(self.take(n)?.to_vec())
    }

    /// A double kept in binary, little-endian (`ZSET_2` scores).
    pub fn binary_double(&mut self) -> Result<f64, Bad> {
        Ok(f64::from_le_bytes(self.array()?))
    }

    /// A double kept as text behind a length byte, as the oldest sorted
    /// sets (`ZSET`) keep scores: 253 is NaN, 254 +inf, 255 -inf.
    pub fn text_double(&mut self) -> Result<f64, Bad> {
        match self.byte()? {
            253 => Ok(f64::NAN),
            254 => Ok(f64::INFINITY),
            255 => Ok(f64::NEG_INFINITY),
            n => parse_double(self.take(usize::from(n))?),
        }
    }

    /// Fails unless every byte has been read (what a packed encoding
    /// read with a cursor must end on).
    pub fn end(&self) -> Result<(), Bad> {
        if self.remaining() == 0 {
            Ok(())
        } else {
            Err(Bad)
        }
    }
}

/// `n` as decimal text.
pub fn text(n: i64) -> Vec<u8> {
    crate::num::format_i64(n)
}

/// A double written as text (`1.5`, `1e+100`, `inf`, `-inf`).
pub fn parse_double(bytes: &[u8]) -> Result<f64, Bad> {
    core::str::from_utf8(bytes)
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .ok_or(Bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_and_strings() {
        let mut c = Cursor::new(&[0x03, b'a', b'b', b'c', 0x40, 0x02, b'x', b'y']);
        assert_eq!(c.string().unwrap(), b"abc");
        assert_eq!(c.string().unwrap(), b"xy");
        assert!(c.end().is_ok());
        let mut c = Cursor::new(&[0xc0, 0xf6, 0xc1, 0x39, 0x30, 0xc2, 0x90, 0xee, 0xfe, 0xff]);
        assert_eq!(c.string().unwrap(), b"-10");
        assert_eq!(c.string().unwrap(), b"12345");
        assert_eq!(c.string().unwrap(), b"-70000");
    }

    #[test]
    fn hostile_lengths_are_refused() {
        // A 64-bit length far beyond the bytes there.
        let mut c = Cursor::new(&[0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xf7]);
        assert_eq!(c.string(), Err(Bad));
        let mut c = Cursor::new(&[0x05, b'a']);
        assert_eq!(c.string(), Err(Bad), "cut short");
        let mut c = Cursor::new(&[0x82]);
        assert_eq!(c.string(), Err(Bad), "no such length kind");
        let mut c = Cursor::new(&[0xc4]);
        assert_eq!(c.string(), Err(Bad), "no such encoding");
        let mut c = Cursor::new(&[0x05, 0, 0]);
        assert_eq!(c.count(), Err(Bad), "more elements than bytes");
        let mut c = Cursor::new(&[]);
        assert_eq!(c.byte(), Err(Bad));
    }
}
