//! `FUNCTION DUMP`/`FUNCTION RESTORE` payloads, in Redis 7.0's format, so
//! a dump moves between kvstore and Redis either way:
//!
//! ```text
//! ( 0xF5  <library code as an RDB string> )*   <RDB version: 10, u16 LE>   <CRC-64 of all before, u64 LE>
//! ```
//!
//! An RDB string is a length (6, 14, 32 or 64 bits, by its first two bits)
//! and the bytes; Redis may also write it LZF-compressed (`0xC3`, the
//! compressed and plain lengths, the LZF data), which is read here too.
//! kvstore writes plain strings. The CRC is Redis's CRC-64 (Jones
//! polynomial, reflected).

use alloc::vec::Vec;

/// The opcode before each library (`RDB_OPCODE_FUNCTION2`).
const FUNCTION2: u8 = 0xF5;
/// The RDB version Redis 7.0 writes.
const RDB_VERSION: u16 = 10;

/// The payload holding the libraries whose code `codes` gives.
pub fn dump<'a>(codes: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    for code in codes {
        out.push(FUNCTION2);
        put_length(&mut out, code.len() as u64);
        out.extend_from_slice(code);
    }
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(0, &out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Why a payload could not be read: Redis's message, without the `ERR`.
pub type Error = &'static str;

/// The libraries' code in `payload`, in order.
pub fn restore(payload: &[u8]) -> Result<Vec<Vec<u8>>, Error> {
    const BAD: Error = "DUMP payload version or checksum are wrong";
    let Some(body_len) = payload.len().checked_sub(10) else {
        return Err(BAD);
    };
    let (body, footer) = payload.split_at(body_len);
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    let mut crc = [0; 8];
    crc.copy_from_slice(&footer[2..]);
    if version > RDB_VERSION || crc64(0, &payload[..body_len + 2]) != u64::from_le_bytes(crc) {
        return Err(BAD);
    }
    let mut rest = body;
    let mut codes = Vec::new();
    while let Some((&kind, after)) = rest.split_first() {
        if kind != FUNCTION2 {
            return Err("given type is not a function");
        }
        rest = after;
        codes.push(read_string(&mut rest).ok_or("failed loading the given functions payload")?);
    }
    Ok(codes)
}

fn put_length(out: &mut Vec<u8>, len: u64) {
    if len < 1 << 6 {
        out.push(len as u8);
    } else if len < 1 << 14 {
        out.extend_from_slice(&((len as u16) | 0x4000).to_be_bytes());
    } else if len <= u64::from(u32::MAX) {
        out.push(0x80);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&len.to_be_bytes());
    }
}

/// A length, or the special encoding's number (`Err`) for `0b11xxxxxx`.
fn read_length(rest: &mut &[u8]) -> Option<Result<usize, u8>> {
    let (&first, after) = rest.split_first()?;
    *rest = after;
    let take = |rest: &mut &[u8], n: usize| -> Option<u64> {
        let (bytes, after) = (rest.get(..n)?, rest.get(n..)?);
        *rest = after;
        Some(bytes.iter().fold(0u64, |acc, &b| acc << 8 | u64::from(b)))
    };
    let len = match first >> 6 {
        0 => u64::from(first & 0x3F),
        1 => u64::from(first & 0x3F) << 8 | take(rest, 1)?,
        3 => return Some(Err(first & 0x3F)),
        _ => match first {
            0x80 => take(rest, 4)?,
            0x81 => take(rest, 8)?,
            _ => return None,
        },
    };
    Some(Ok(usize::try_from(len).ok()?))
}

fn read_string(rest: &mut &[u8]) -> Option<Vec<u8>> {
    match read_length(rest)? {
        Ok(len) => {
            let bytes = rest.get(..len)?.to_vec();
            *rest = &rest[len..];
            Some(bytes)
        }
        // LZF: compressed length, plain length, data.
        Err(3) => {
            let packed = read_length(rest)?.ok()?;
            let plain = read_length(rest)?.ok()?;
            let data = rest.get(..packed)?;
            *rest = &rest[packed..];
            lzf_decompress(data, plain)
        }
        // Integers: 8, 16 or 32 bits, as their decimal text.
        Err(kind @ 0..=2) => {
            let n = 1usize << kind;
            let bytes = rest.get(..n)?;
            *rest = &rest[n..];
            let mut value = [0u8; 4];
            value[..n].copy_from_slice(bytes);
            let v = match kind {
                0 => i64::from(bytes[0] as i8),
                1 => i64::from(i16::from_le_bytes([bytes[0], bytes[1]])),
                _ => i64::from(i32::from_le_bytes(value)),
            };
            Some(crate::num::format_i64(v))
        }
        Err(_) => None,
    }
}

/// LZF's decompression (the format Redis compresses RDB strings in): runs
/// of literals (`000LLLLL`, then L+1 bytes) and back references
/// (`LLLooooo oooooooo`, length L+2 or, for L = 7, 9 plus the next byte,
/// from offset o+1 back).
fn lzf_decompress(data: &[u8], plain: usize) -> Option<Vec<u8>> {
    let mut out: Vec<u8> = Vec::with_capacity(plain.min(data.len().saturating_mul(256)));
    let mut i = 0;
    while i < data.len() {
        let ctrl = usize::from(data[i]);
        i += 1;
        if ctrl < 32 {
            let run = data.get(i..i + ctrl + 1)?;
            out.extend_from_slice(run);
            i += ctrl + 1;
        } else {
            let mut len = ctrl >> 5;
            if len == 7 {
                len += usize::from(*data.get(i)?);
                i += 1;
            }
            let back = ((ctrl & 0x1F) << 8 | usize::from(*data.get(i)?)) + 1;
            i += 1;
            let from = out.len().checked_sub(back)?;
            for k in 0..len + 2 {
                let byte = out[from + k];
                out.push(byte);
            }
        }
        if out.len() > plain {
            return None;
        }
    }
    (out.len() == plain).then_some(out)
}

/// Redis's CRC-64 (Jones polynomial, reflected in and out), continuing
/// from `crc`.
pub fn crc64(crc: u64, data: &[u8]) -> u64 {
    const POLY: u64 = 0x95AC_9329_AC4B_C9B5; // 0xad93d23594c935a9 reflected
    let mut crc = crc;
    for &byte in data {
        crc ^= u64::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                crc >> 1 ^ POLY
            } else {
                crc >> 1
            };
        }
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc64_is_redis_s() {
        // The check value Redis's crc64.c tests itself with.
        assert_eq!(crc64(0, b"123456789"), 0xe9c6_d914_c4b8_d9ca);
    }

    #[test]
    fn a_dump_restores_to_the_same_code() {
        let long = alloc::vec![b'x'; 20_000];
        let codes: [&[u8]; 3] = [b"#!lua name=a\n", &[b'y'; 100], &long];
        let payload = dump(codes);
        assert_eq!(restore(&payload).unwrap(), codes.map(<[u8]>::to_vec));
        assert_eq!(restore(&dump([])).unwrap(), Vec::<Vec<u8>>::new());
    }

    #[test]
    fn a_damaged_payload_is_refused() {
        let mut payload = dump([&b"#!lua name=a\n"[..]]);
        payload[3] ^= 1;
        assert_eq!(
            restore(&payload),
            Err("DUMP payload version or checksum are wrong")
        );
        assert_eq!(
            restore(b"bad_payload"),
            Err("DUMP payload version or checksum are wrong")
        );
        // A valid frame around a body that is not functions.
        let mut other = alloc::vec![0x00, 1, b'k'];
        other.extend_from_slice(&RDB_VERSION.to_le_bytes());
        let crc = crc64(0, &other);
        other.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(restore(&other), Err("given type is not a function"));
    }

    #[test]
    fn lzf_strings_are_read() {
        // "abcabcabc": literals "abc", then a back reference of 6 from 3 back.
        let data = [2, b'a', b'b', b'c', (4 << 5), 2];
        assert_eq!(lzf_decompress(&data, 9).unwrap(), b"abcabcabc");
        let mut rest: &[u8] = &[0xC3, 6, 9, 2, b'a', b'b', b'c', 4 << 5, 2];
        assert_eq!(read_string(&mut rest).unwrap(), b"abcabcabc");
        assert!(
            lzf_decompress(&[7 << 5, 0, 0], 9).is_none(),
            "reference before the start"
        );
    }
}
