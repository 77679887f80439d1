//! Bits of string values: `SETBIT`, `GETBIT` and `BITCOUNT`.
//!
//! Bit 0 is the most significant bit of the first byte, as in Redis. A
//! `SETBIT` past the end grows the string with zero bytes; it is logged as
//! itself, which is safe to replay over any state that already holds it
//! (setting a bit twice is setting it once); one that changes nothing
//! (the bit was so already) is not logged, as Redis counts no change.

use alloc::vec::Vec;

use super::errors;
use super::exec::Exec;
use crate::config::Config;
use crate::num::{format_i64, parse_i64};
use crate::resp::Reply;
use crate::store::Store;

/// A bit offset argument: non-negative, and its byte below
/// `proto-max-bulk-len` (the longest string a client could send; a
/// record replayed from the log is taken whatever the setting is now).
fn bit_offset(x: &Exec<'_>, arg: &[u8]) -> Result<u64, Reply> {
    super::bitfield::offset(arg, None, super::bitfield::offset_limit(x))
}

/// The mask of bit `offset` within its byte.
fn mask(offset: u64) -> u8 {
    0x80 >> (offset & 7)
}

/// `SETBIT key offset 0|1`: the bit's old value.
pub(crate) fn setbit(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let offset = match bit_offset(x, &args[2]) {
        Ok(offset) => offset,
        Err(reply) => return reply,
    };
    let on = match parse_i64(&args[3]) {
        Some(bit @ (0 | 1)) => bit == 1,
        _ => return Reply::error("ERR bit is not an integer or out of range"),
    };
    let key = &args[1];
    let byte = (offset >> 3) as usize;
    match x.live_string(key) {
        // The bit is already so: nothing changes, nothing is logged (as
        // Redis 7.0 counts no change).
        Ok(Some(value))
            if value
                .get(byte)
                .is_some_and(|b| (b & mask(offset) != 0) == on) =>
        {
            return Reply::Integer(i64::from(on));
        }
        Ok(_) => {}
        Err(reply) => return reply,
    }
    let old = x.store.update_string(key, |value| {
        if value.len() <= byte {
            value.try_reserve(byte + 1 - value.len()).ok()?;
            value.resize(byte + 1, 0);
        }
        let old = value[byte] & mask(offset) != 0;
        if on {
            value[byte] |= mask(offset);
        } else {
            value[byte] &= !mask(offset);
        }
        Some(old)
    });
    match old {
        Some(Some(old)) => {
            x.log([
                &b"SETBIT"[..],
                key,
                &format_i64(offset as i64),
                if on { b"1" } else { b"0" },
            ]);
            x.notify(crate::notify::STRING, "setbit", key);
            Reply::Integer(i64::from(old))
        }
        Some(None) => {
            // Out of memory before anything changed; an empty string made
            // for a missing key goes again.
            if x.store.get(key).is_some_and(|e| e.value().is_empty()) {
                x.store.remove(key);
            }
            errors::oom()
        }
        None => errors::wrong_type(),
    }
}

/// Growth of `SETBIT key offset bit`: the bytes up to the offset's.
pub(crate) fn setbit_growth(store: &Store, limits: &Config, args: &[Vec<u8>]) -> usize {
    let bytes = parse_i64(&args[2]).map_or(0, |o| (o.max(0) as u64 >> 3) + 1);
    if bytes > limits.proto_max_bulk_len {
        return 0;
    }
    let bytes = bytes as usize;
    match store.get(&args[1]) {
        Some(entry) => bytes.saturating_sub(entry.value().len()),
        None => Store::cost(args[1].len(), bytes),
    }
}

/// `GETBIT key offset`: 0 past the end or for a missing key.
pub(crate) fn getbit(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let offset = match bit_offset(x, &args[2]) {
        Ok(offset) => offset,
        Err(reply) => return reply,
    };
    match x.read_string(&args[1]) {
        Ok(value) => {
            let byte = value.and_then(|v| v.get((offset >> 3) as usize)).copied();
            Reply::Integer(i64::from(byte.unwrap_or(0) & mask(offset) != 0))
        }
        Err(reply) => reply,
    }
}

/// `BITCOUNT key [start end [BYTE|BIT]]`: set bits in the whole string or
/// in a range of bytes (or bits), negative indexes counting from the end.
pub(crate) fn bitcount(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    // As Redis 7.0: the key first (missing: 0 whatever the rest says),
    // then the range, then the unit.
    let value = match x.read_string(&args[1]) {
        Ok(Some(value)) => value,
        Ok(None) => return Reply::Integer(0),
        Err(reply) => return reply,
    };
    let range = match args.len() {
        2 => None,
        4 | 5 => {
            let (Some(start), Some(end)) = (parse_i64(&args[2]), parse_i64(&args[3])) else {
                return errors::not_integer();
            };
            if start < 0 && end < 0 && start > end {
                return Reply::Integer(0);
            }
            let bits = match args.get(4) {
                None => false,
                Some(unit) if unit.eq_ignore_ascii_case(b"BYTE") => false,
                Some(unit) if unit.eq_ignore_ascii_case(b"BIT") => true,
                Some(_) => return errors::syntax(),
            };
            Some((start, end, bits))
        }
        _ => return errors::syntax(),
    };
    let Some((start, end, bits)) = range else {
        return Reply::Integer(value.iter().map(|b| b.count_ones() as i64).sum());
    };
    let len = if bits {
        value.len() as i64 * 8
    } else {
        value.len() as i64
    };
    let from_end = |i: i64| if i < 0 { (len + i).max(0) } else { i };
    let (start, end) = (from_end(start), from_end(end).min(len - 1));
    if len == 0 || start > end {
        return Reply::Integer(0);
    }
    let count = if bits {
        (start..=end)
            .filter(|&bit| value[(bit >> 3) as usize] & mask(bit as u64) != 0)
            .count() as i64
    } else {
        value[start as usize..=end as usize]
            .iter()
            .map(|b| b.count_ones() as i64)
            .sum()
    };
    Reply::Integer(count)
}
