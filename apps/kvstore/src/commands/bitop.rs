//! `BITOP` and `BITPOS`: bitwise operations between strings, and the
//! first bit set or clear in a range.

use alloc::vec::Vec;

use super::errors;
use super::exec::Exec;
use crate::aof::Piece;
use crate::config::Config;
use crate::notify;
use crate::num::parse_i64;
use crate::resp::Reply;
use crate::store::{Store, Value};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    And,
    Or,
    Xor,
    Not,
}

/// `BITOP AND|OR|XOR|NOT destkey key [key ...]`: the destination becomes
/// the result, as long as the longest source (shorter ones count as zero
/// bytes), without expiry; an empty result deletes it. Answers its length.
/// Logged as `SET` of the result, or `DEL`.
pub(crate) fn bitop(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let op = match args[1].to_ascii_lowercase().as_slice() {
        b"and" => Op::And,
        b"or" => Op::Or,
        b"xor" => Op::Xor,
        b"not" => Op::Not,
        _ => return errors::syntax(),
    };
    if op == Op::Not && args.len() != 4 {
        return Reply::error("ERR BITOP NOT must be called with a single source key.");
    }
    let mut sources: Vec<Option<Value>> = Vec::with_capacity(args.len() - 3);
    for key in &args[3..] {
        match x.read_string(key) {
            Ok(value) => sources.push(value.cloned()),
            Err(reply) => return reply,
        }
    }
    let longest = sources.iter().flatten().map(|v| v.len()).max().unwrap_or(0);
    let mut result = Vec::new();
    if result.try_reserve_exact(longest).is_err() {
        return errors::oom();
    }
    let byte = |source: &Option<Value>, i: usize| {
        source.as_ref().and_then(|v| v.get(i)).copied().unwrap_or(0)
    };
    for i in 0..longest {
        let first = byte(&sources[0], i);
        let rest = sources[1..].iter().map(|s| byte(s, i));
        result.push(match op {
            Op::And => rest.fold(first, |a, b| a & b),
            Op::Or => rest.fold(first, |a, b| a | b),
            Op::Xor => rest.fold(first, |a, b| a ^ b),
            Op::Not => !first,
        });
    }
    drop(sources);
    let dest = &args[2];
    if result.is_empty() {
        if x.store.remove(dest).is_some() {
            x.log([&b"DEL"[..], dest]);
            x.notify(notify::GENERIC, "del", dest);
        }
        return Reply::Integer(0);
    }
    let value = Value::new(result);
    x.store.set(dest, value.clone(), None);
    x.log_args(&[
        Piece::Bytes(b"SET"),
        Piece::Bytes(dest),
        Piece::Value(&value),
    ]);
    x.notify(notify::STRING, "set", dest);
    Reply::Integer(longest as i64)
}

/// Growth of `BITOP op destkey key ...`: the longest source, at the
/// destination.
pub(crate) fn bitop_growth(store: &Store, _limits: &Config, args: &[Vec<u8>]) -> usize {
    let longest = args[3..]
        .iter()
        .filter_map(|key| store.get(key))
        .map(|e| e.value().len())
        .max()
        .unwrap_or(0);
    store.growth_if_set(&args[2], longest)
}

/// `BITPOS key bit [start [end [BYTE|BIT]]]`: the offset of the first bit
/// equal to `bit` in the range (bytes, or bits with `BIT`; negative
/// indexes count from the end), or -1. Looking for a 0 without an end,
/// the string counts as followed by zero bits: a string of ones answers
/// its length in bits. A missing key answers -1 for 1 and 0 for 0.
pub(crate) fn bitpos(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let bit = match parse_i64(&args[2]) {
        Some(bit @ (0 | 1)) => bit == 1,
        Some(_) => return Reply::error("ERR The bit argument must be 1 or 0."),
        None => return errors::not_integer(),
    };
    let value = match x.read_string(&args[1]) {
        Ok(Some(value)) => value.clone(),
        Ok(None) => return Reply::Integer(if bit { -1 } else { 0 }),
        Err(reply) => return reply,
    };
    let range = match range(args, value.len() as i64) {
        Ok(range) => range,
        Err(reply) => return reply,
    };
    let Some((first, last, end_given)) = range else {
        return Reply::Integer(-1);
    };
    match find_bit(&value, first, last, bit) {
        Some(at) => Reply::Integer(at),
        None if bit || end_given => Reply::Integer(-1),
        // Past the last byte of the range.
        None => Reply::Integer(((last >> 3) + 1) * 8),
    }
}

/// The first bit from `first` to `last` (bit offsets within `bytes`)
/// that is `bit`: whole bytes without one are skipped at once.
fn find_bit(bytes: &[u8], first: i64, last: i64, bit: bool) -> Option<i64> {
    let skip = if bit { 0x00 } else { 0xff };
    let mut at = first;
    while at <= last {
        let byte = bytes[(at >> 3) as usize];
        if at & 7 == 0 && at + 7 <= last && byte == skip {
            at += 8;
            continue;
        }
        if (byte & (0x80 >> (at & 7)) != 0) == bit {
            return Some(at);
        }
        at += 1;
    }
    None
}

/// The bits `BITPOS`'s arguments cover in a string of `len` bytes, and
/// whether an end was given; `None` for an empty range.
fn range(args: &[Vec<u8>], len: i64) -> Result<Option<(i64, i64, bool)>, Reply> {
    if args.len() == 3 {
        return Ok((len > 0).then(|| (0, len * 8 - 1, false)));
    }
    if args.len() > 6 {
        return Err(errors::syntax());
    }
    let start = parse_i64(&args[3]).ok_or_else(errors::not_integer)?;
    let bits = match args.get(5) {
        None => false,
        Some(unit) if unit.eq_ignore_ascii_case(b"bit") => true,
        Some(unit) if unit.eq_ignore_ascii_case(b"byte") => false,
        Some(_) => return Err(errors::syntax()),
    };
    let end = match args.get(4) {
        Some(end) => Some(parse_i64(end).ok_or_else(errors::not_integer)?),
        None => None,
    };
    let total = if bits { len * 8 } else { len };
    let from_end = |i: i64| if i < 0 { (total + i).max(0) } else { i };
    let start = from_end(start);
    let end = from_end(end.unwrap_or(total - 1)).min(total - 1);
    if start > end {
        return Ok(None);
    }
    Ok(Some(match bits {
        true => (start, end, args.len() > 4),
        false => (start * 8, end * 8 + 7, args.len() > 4),
    }))
}
