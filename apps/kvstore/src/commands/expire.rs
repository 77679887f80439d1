//! Expiry commands: `EXPIRE`, `PEXPIRE`, `EXPIREAT`, `PEXPIREAT` (with
//! `NX`/`XX`/`GT`/`LT`), `TTL`, `PTTL`, `PERSIST`.

use alloc::format;
use alloc::vec::Vec;

use super::exec::Exec;
use super::expiry_arg::{expire_at, Unit};
use crate::num::format_i64;
use crate::resp::Reply;

/// `EXPIRE key seconds [NX|XX|GT|LT]`.
pub(crate) fn expire(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    set_expiry(x, args, Unit::Seconds)
}

/// `PEXPIRE key milliseconds [NX|XX|GT|LT]`.
pub(crate) fn pexpire(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    set_expiry(x, args, Unit::Millis)
}

/// `EXPIREAT key unix-seconds [NX|XX|GT|LT]`.
pub(crate) fn expireat(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    set_expiry(x, args, Unit::UnixSeconds)
}

/// `PEXPIREAT key unix-milliseconds [NX|XX|GT|LT]`.
pub(crate) fn pexpireat(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    set_expiry(x, args, Unit::UnixMillis)
}

/// The conditions `EXPIRE` may carry.
#[derive(Default)]
struct Conditions {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
}

impl Conditions {
    fn parse(options: &[Vec<u8>]) -> Result<Self, Reply> {
        let mut c = Conditions::default();
        for option in options {
            match option.to_ascii_uppercase().as_slice() {
                b"NX" => c.nx = true,
                b"XX" => c.xx = true,
                b"GT" => c.gt = true,
                b"LT" => c.lt = true,
                _ => {
                    return Err(Reply::Error(format!(
                        "ERR Unsupported option {}",
                        super::errors::lossy(option)
                    )))
                }
            }
        }
        if c.nx && (c.xx || c.gt || c.lt) {
            return Err(Reply::error(
                "ERR NX and XX, GT or LT options at the same time are not compatible",
            ));
        }
        if c.gt && c.lt {
            return Err(Reply::error(
                "ERR GT and LT options at the same time are not compatible",
            ));
        }
        Ok(c)
    }

    /// Whether the new time `at` may replace `current` (`None`: no TTL,
    /// which counts as an infinite TTL for `GT`/`LT`).
    fn allow(&self, current: Option<u64>, at: i64) -> bool {
        match current {
            None => !(self.xx || self.gt),
            Some(current) => {
                let current = i64::try_from(current).unwrap_or(i64::MAX);
                !(self.nx || (self.gt && at <= current) || (self.lt && at >= current))
            }
        }
    }
}

fn set_expiry(x: &mut Exec<'_>, args: &[Vec<u8>], unit: Unit) -> Reply {
    let conditions = match Conditions::parse(&args[3..]) {
        Ok(c) => c,
        Err(reply) => return reply,
    };
    let at = match expire_at(x, unit, &args[2]) {
        Ok(at) => at,
        Err(reply) => return reply,
    };
    let key = &args[1];
    let Some(current) = x.live(key).map(|e| e.expire_at()) else {
        return Reply::Integer(0);
    };
    if !conditions.allow(current, at) {
        return Reply::Integer(0);
    }
    // A negative absolute time is simply long past.
    let at_ms = u64::try_from(at).unwrap_or(0);
    if x.already_expired(at_ms) {
        x.store.remove(key);
        x.log([&b"DEL"[..], key]);
        x.notify(crate::notify::GENERIC, "del", key);
        return Reply::Integer(1);
    }
    x.store.set_expire(key, Some(at_ms));
    x.log([&b"PEXPIREAT"[..], key, &format_i64(at)]);
    x.notify(crate::notify::GENERIC, "expire", key);
    Reply::Integer(1)
}

/// `TTL key`: seconds left (rounded), -1 without expiry, -2 if missing.
pub(crate) fn ttl(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    Reply::Integer(match remaining(x, &args[1]) {
        Ok(ms) => ((ms + 500) / 1000) as i64,
        Err(code) => code,
    })
}

/// `PTTL key`: milliseconds left, -1 without expiry, -2 if missing.
pub(crate) fn pttl(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    Reply::Integer(match remaining(x, &args[1]) {
        Ok(ms) => i64::try_from(ms).unwrap_or(i64::MAX),
        Err(code) => code,
    })
}

/// Milliseconds until `key` expires, or the -2/-1 code.
fn remaining(x: &mut Exec<'_>, key: &[u8]) -> Result<u64, i64> {
    let now = x.now;
    match x.read_untouched(key) {
        None => Err(-2),
        Some(entry) => match entry.expire_at() {
            None => Err(-1),
            Some(at) => Ok(at.saturating_sub(now)),
        },
    }
}

/// `PERSIST key`: 1 if it removed a TTL, else 0.
pub(crate) fn persist(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let key = &args[1];
    match x.live(key).map(|e| e.expire_at()) {
        Some(Some(_)) => {
            x.store.set_expire(key, None);
            x.log([&b"PERSIST"[..], key]);
            x.notify(crate::notify::GENERIC, "persist", key);
            Reply::Integer(1)
        }
        _ => Reply::Integer(0),
    }
}

/// `EXPIRETIME key`: the Unix time in seconds when the key expires, -1
/// without expiry, -2 if missing.
pub(crate) fn expiretime(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    Reply::Integer(match x.read_untouched(&args[1]).map(|e| e.expire_at()) {
        None => -2,
        Some(None) => -1,
        Some(Some(at)) => (at / 1000) as i64,
    })
}

/// `PEXPIRETIME key`: like `EXPIRETIME`, in milliseconds.
pub(crate) fn pexpiretime(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    Reply::Integer(match x.read_untouched(&args[1]).map(|e| e.expire_at()) {
        None => -2,
        Some(None) => -1,
        Some(Some(at)) => i64::try_from(at).unwrap_or(i64::MAX),
    })
}
