//! The rest of the string commands: `SETEX`, `PSETEX`, `GETDEL`, `GETEX`,
//! `INCRBYFLOAT`, `MSETNX`, `GETRANGE` (and its old name `SUBSTR`) and
//! `SETRANGE`.
//!
//! Every change is logged in an absolute form (`SET ... KEEPTTL`,
//! `PEXPIREAT`, `DEL`), which replays to the same state whatever a log
//! rewrite captured before it (see `kvstore::aof::RewriteScan`).

use alloc::format;
use alloc::string::ToString;
use alloc::vec::Vec;

use super::errors;
use super::exec::Exec;
use super::expiry_arg::{set_expire_at, Unit};
use super::strings;
use crate::aof::Piece;
use crate::notify;
use crate::num::{format_i64, parse_i64};
use crate::resp::Reply;
use crate::store::Value;

/// `SETEX key seconds value`: `SET key value EX seconds`.
pub(crate) fn setex(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    set_with_expiry(x, args, b"EX")
}

/// `PSETEX key milliseconds value`: `SET key value PX milliseconds`.
pub(crate) fn psetex(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    set_with_expiry(x, args, b"PX")
}

fn set_with_expiry(x: &mut Exec<'_>, args: &mut [Vec<u8>], unit: &[u8]) -> Reply {
    let value = core::mem::take(&mut args[3]);
    let mut set = alloc::vec![
        b"SET".to_vec(),
        core::mem::take(&mut args[1]),
        value,
        unit.to_vec(),
        core::mem::take(&mut args[2]),
    ];
    strings::set(x, &mut set)
}

/// `GETDEL key`: the value, and the key is gone.
pub(crate) fn getdel(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let key = &args[1];
    let value = match x.read_string(key) {
        Ok(Some(value)) => value.to_vec(),
        Ok(None) => return Reply::Bulk(None),
        Err(reply) => return reply,
    };
    x.store.remove(key);
    x.log([&b"DEL"[..], key]);
    x.notify(notify::GENERIC, "del", key);
    Reply::Bulk(Some(value))
}

/// `GETEX key [EX s | PX ms | EXAT s | PXAT ms | PERSIST]`: the value, and
/// its expiry changed as asked.
pub(crate) fn getex(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    enum Change {
        Keep,
        Persist,
        At(Unit, usize),
    }
    let change = match args.len() {
        2 => Change::Keep,
        3 if args[2].eq_ignore_ascii_case(b"PERSIST") => Change::Persist,
        4 => match args[2].to_ascii_uppercase().as_slice() {
            b"EX" => Change::At(Unit::Seconds, 3),
            b"PX" => Change::At(Unit::Millis, 3),
            b"EXAT" => Change::At(Unit::UnixSeconds, 3),
            b"PXAT" => Change::At(Unit::UnixMillis, 3),
            _ => return errors::syntax(),
        },
        _ => return errors::syntax(),
    };
    // As Redis: the options' syntax, then the key (nil if missing), then
    // the expiry's value.
    let key = &args[1];
    let value = match x.read_string(key) {
        Ok(Some(value)) => value.to_vec(),
        Ok(None) => return Reply::Bulk(None),
        Err(reply) => return reply,
    };
    let at = match change {
        Change::At(unit, i) => match set_expire_at(x, unit, &args[i]) {
            Ok(at) => Some(at),
            Err(reply) => return reply,
        },
        _ => None,
    };
    match (change, at) {
        (Change::At(..), Some(at)) if x.already_expired(at) => {
            x.store.remove(key);
            x.log([&b"DEL"[..], key]);
            x.notify(notify::GENERIC, "del", key);
        }
        (Change::At(..), Some(at)) => {
            x.store.set_expire(key, Some(at));
            x.log([&b"PEXPIREAT"[..], key, &format_i64(at as i64)]);
            x.notify(notify::GENERIC, "expire", key);
        }
        (Change::Persist, _) if x.store.get(key).is_some_and(|e| e.expire_at().is_some()) => {
            x.store.set_expire(key, None);
            x.log([&b"PERSIST"[..], key]);
            x.notify(notify::GENERIC, "persist", key);
        }
        _ => {}
    }
    Reply::Bulk(Some(value))
}

/// `INCRBYFLOAT key increment`: the new value as text. Redis adds in the
/// x86 long double and prints 17 decimals, trailing zeros cut; here two
/// plain decimals of at most 17 decimals add exactly (`10.05`, where
/// doubles would give `10.049999999999999`), which is what that printing
/// shows in all but extreme cases; anything else (exponents, huge or very
/// precise numbers) adds as doubles, printed as the shortest decimal that
/// reads back the same.
pub(crate) fn incrbyfloat(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let not_float = || Reply::error("ERR value is not a valid float");
    let key = &args[1];
    // As Redis: the key's type, then its value, then the increment.
    let current_text = match x.live_string(key) {
        Ok(Some(value)) => match parse_float(value) {
            Some(_) => Some(value.to_vec()),
            None => return not_float(),
        },
        Ok(None) => None,
        Err(reply) => return reply,
    };
    if parse_float(&args[2]).is_none() {
        return not_float();
    }
    let Some(text) = float_sum(current_text.as_deref(), &args[2]) else {
        return Reply::error("ERR increment would produce NaN or Infinity");
    };
    x.store.set_keep_ttl(key, text.as_bytes().to_vec());
    x.log([&b"SET"[..], key, text.as_bytes(), b"KEEPTTL"]);
    x.notify(notify::STRING, "incrbyfloat", key);
    Reply::bulk(text.into_bytes())
}

/// `current + delta` (a missing `current` counting as 0) as
/// `INCRBYFLOAT` stores and answers it (see there), or `None` if the sum
/// is NaN or infinite. Both must be floats [`parse_float`] accepts.
pub(super) fn float_sum(current: Option<&[u8]>, delta: &[u8]) -> Option<alloc::string::String> {
    let exact = match current {
        Some(text) => decimal::parse(text),
        None => Some(0),
    }
    .zip(decimal::parse(delta))
    .and_then(|(a, b)| a.checked_add(b))
    .filter(|&sum| decimal::fits(sum));
    if let Some(sum) = exact {
        return Some(decimal::format(sum));
    }
    let current = current.and_then(parse_float).unwrap_or(0.0);
    let new = current + parse_float(delta).unwrap_or(0.0);
    new.is_finite().then(|| format_float(new))
}

/// Plain decimals with up to 17 digits after the point, as integers of
/// 10^-17 units: what `INCRBYFLOAT` adds exactly.
mod decimal {
    use alloc::string::String;

    const SCALE: i128 = 100_000_000_000_000_000; // 10^17
    /// Whole parts from here on are left to doubles (Redis prints them with
    /// all their digits, where long double and double differ anyway).
    const LIMIT: i128 = 100_000_000_000_000_000_000; // 10^20

    /// `[-+]digits[.digits]` with at most 17 decimals, below the limit.
    pub fn parse(text: &[u8]) -> Option<i128> {
        let (negative, text) = match text.first()? {
            b'-' => (true, &text[1..]),
            b'+' => (false, &text[1..]),
            _ => (false, text),
        };
        let (whole, frac) = match text.iter().position(|&b| b == b'.') {
            Some(dot) => (&text[..dot], &text[dot + 1..]),
            None => (text, &text[..0]),
        };
        let digits = |s: &[u8]| s.iter().all(u8::is_ascii_digit);
        if whole.is_empty() && frac.is_empty() || !digits(whole) || !digits(frac) || frac.len() > 17
        {
            return None;
        }
        let mut n: i128 = 0;
        for &d in whole {
            n = n.checked_mul(10)?.checked_add(i128::from(d - b'0'))?;
            if n >= LIMIT {
                return None;
            }
        }
        let mut f: i128 = 0;
        for &d in frac {
            f = f * 10 + i128::from(d - b'0');
        }
        f *= 10i128.pow(17 - frac.len() as u32);
        let value = n.checked_mul(SCALE)?.checked_add(f)?;
        Some(if negative { -value } else { value })
    }

    /// Whether `n`'s whole part is below the limit.
    pub fn fits(n: i128) -> bool {
        n.abs() / SCALE < LIMIT
    }

    /// `n` as Redis prints it: no exponent, trailing zeros (and a bare
    /// point) cut, no `-0`.
    pub fn format(n: i128) -> String {
        let sign = if n < 0 { "-" } else { "" };
        let (whole, frac) = (n.abs() / SCALE, n.abs() % SCALE);
        if frac == 0 {
            return alloc::format!("{sign}{whole}");
        }
        let digits = alloc::format!("{frac:017}");
        alloc::format!("{sign}{whole}.{}", digits.trim_end_matches('0'))
    }
}

/// A float as Redis accepts it: decimal or exponent notation, or an
/// infinity (`inf`, `-Infinity`, any case), never NaN, no spaces around it.
pub(super) fn parse_float(bytes: &[u8]) -> Option<f64> {
    let text = core::str::from_utf8(bytes).ok()?;
    if text.is_empty() || text.trim() != text {
        return None;
    }
    let n: f64 = text.parse().ok()?;
    // An infinity's sum is refused as infinite, not as malformed.
    (!n.is_nan()).then_some(n)
}

/// `n` in plain decimal notation (no exponent), as short as round-trips.
fn format_float(n: f64) -> alloc::string::String {
    if n.abs() < 1e17 && (n as i64) as f64 == n {
        return (n as i64).to_string();
    }
    format!("{n}")
}

/// `MSETNX key value [key value ...]`: sets all, only if none exists.
pub(crate) fn msetnx(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    if args.len().is_multiple_of(2) {
        return errors::wrong_args(x.fullname);
    }
    let keys: Vec<Vec<u8>> = args[1..].iter().step_by(2).cloned().collect();
    if keys.iter().any(|key| x.exists(key)) {
        return Reply::Integer(0);
    }
    let mut mset: Vec<Vec<u8>> = Vec::with_capacity(args.len());
    mset.push(b"MSET".to_vec());
    mset.extend(args[1..].iter_mut().map(core::mem::take));
    strings::mset(x, &mut mset);
    Reply::Integer(1)
}

/// `GETRANGE key start end` (and `SUBSTR`): the bytes from `start` to
/// `end` inclusive, negative offsets counting from the end.
pub(crate) fn getrange(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let (Some(start), Some(end)) = (parse_i64(&args[2]), parse_i64(&args[3])) else {
        return errors::not_integer();
    };
    let value = match x.read_string(&args[1]) {
        Ok(value) => value.map_or(&[][..], |v| v.as_slice()),
        Err(reply) => return reply,
    };
    let len = value.len() as i64;
    if len == 0 || (start < 0 && end < 0 && start > end) {
        return Reply::bulk(Vec::new());
    }
    let clamp = |i: i64| if i < 0 { (len + i).max(0) } else { i };
    let (start, end) = (clamp(start), clamp(end).min(len - 1));
    if start > end || start >= len {
        return Reply::bulk(Vec::new());
    }
    Reply::bulk(value[start as usize..=end as usize].to_vec())
}

/// `SETRANGE key offset value`: overwrites from `offset` (padding a
/// shorter value with zero bytes); the new length.
pub(crate) fn setrange(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let Some(offset) = parse_i64(&args[2]) else {
        return errors::not_integer();
    };
    if offset < 0 {
        return Reply::error("ERR offset is out of range");
    }
    let (key, patch) = (&args[1], &args[3]);
    let current = match x.live_string(key) {
        Ok(value) => value.map(|v| v.to_vec()),
        Err(reply) => return reply,
    };
    if patch.is_empty() {
        return Reply::Integer(current.map_or(0, |v| v.len()) as i64);
    }
    let end = offset as u64 + patch.len() as u64;
    if end > x.config.proto_max_bulk_len {
        return Reply::error("ERR string exceeds maximum allowed size (proto-max-bulk-len)");
    }
    let mut value = current.unwrap_or_default();
    let end = end as usize;
    if value.len() < end {
        if value.try_reserve(end - value.len()).is_err() {
            return errors::oom();
        }
        value.resize(end, 0);
    }
    value[offset as usize..end].copy_from_slice(patch);
    let len = value.len();
    let value = Value::new(value);
    x.store.set_keep_ttl(key, value.clone());
    x.log_args(&[
        Piece::Bytes(b"SET"),
        Piece::Bytes(key),
        Piece::Value(&value),
        Piece::Bytes(b"KEEPTTL"),
    ]);
    x.notify(notify::STRING, "setrange", key);
    Reply::Integer(len as i64)
}
