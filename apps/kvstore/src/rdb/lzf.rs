//! LZF decompression: how Redis compresses long strings in its
//! serialization format (`RDB_ENC_LZF`). Only decompression: kvstore
//! writes strings uncompressed.
//!
//! The format is a sequence of runs, each opened by a control byte `c`:
//! below 32, a literal run of `c + 1` bytes copied as they are; otherwise
//! a back-reference of length `(c >> 5) + 2` (an extra length byte added
//! when the top three bits are all set) to an offset `((c & 0x1f) << 8 |
//! next) + 1` bytes back in the output.

use alloc::vec::Vec;

/// Why decompression failed: the input is not LZF data of the claimed
/// length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Corrupt;

/// The most one compressed byte can stand for: a back-reference of 3
/// bytes copies at most 264 (7 + 255 + 2). A claimed length beyond
/// `input.len() * MAX_RATIO` cannot be true, so nothing that large is
/// ever allocated.
pub const MAX_RATIO: usize = 88;

/// Decompresses `input` into exactly `len` bytes.
///
/// ```
/// // "aaaaaaaaaa": a literal 'a', then a back-reference of 9 bytes, 1 back.
/// let out = kvstore::rdb::lzf::decompress(&[0x00, b'a', 0xe0, 0x00, 0x00], 10).unwrap();
/// assert_eq!(out, b"aaaaaaaaaa");
/// ```
pub fn decompress(input: &[u8], len: usize) -> Result<Vec<u8>, Corrupt> {
    if len > input.len().saturating_mul(MAX_RATIO) {
        return Err(Corrupt);
    }
    let mut out = Vec::new();
    out.try_reserve_exact(len).map_err(|_| Corrupt)?;
    let mut at = 0;
    while at < input.len() {
        let control = usize::from(input[at]);
        at += 1;
        if control < 32 {
            let run = control + 1;
            let literal = input.get(at..at + run).ok_or(Corrupt)?;
            if out.len() + run > len {
                return Err(Corrupt);
            }
            out.extend_from_slice(literal);
            at += run;
            continue;
        }
        let mut run = control >> 5;
        if run == 7 {
            run += usize::from(*input.get(at).ok_or(Corrupt)?);
            at += 1;
        }
        run += 2;
        let low = usize::from(*input.get(at).ok_or(Corrupt)?);
        at += 1;
        let back = ((control & 0x1f) << 8 | low) + 1;
        if back > out.len() || out.len() + run > len {
            return Err(Corrupt);
        }
        // Byte by byte: a reference may overlap what it produces.
        let from = out.len() - back;
        for i in 0..run {
            let byte = out[from + i];
            out.push(byte);
        }
    }
    if out.len() != len {
        return Err(Corrupt);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corrupt_input_is_refused() {
        assert_eq!(
            decompress(&[0x05, b'a'], 6),
            Err(Corrupt),
            "literal past the end"
        );
        assert_eq!(
            decompress(&[0xe0, 0x00, 0x00], 9),
            Err(Corrupt),
            "reference before the start"
        );
        assert_eq!(
            decompress(&[0x00, b'a'], 2),
            Err(Corrupt),
            "shorter than claimed"
        );
        assert_eq!(
            decompress(&[0x00, b'a', 0x20, 0x00], 2),
            Err(Corrupt),
            "longer than claimed"
        );
        assert_eq!(
            decompress(&[0x00], usize::MAX),
            Err(Corrupt),
            "an absurd length"
        );
        assert_eq!(
            decompress(&[0x00, b'a', 0xe0], 10),
            Err(Corrupt),
            "cut short"
        );
    }
}
