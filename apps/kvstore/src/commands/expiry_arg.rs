//! Turning a relative or absolute expiry argument into an absolute time,
//! with Redis's range checks (shared by `SET` and the `EXPIRE` family).

use super::errors;
use super::exec::Exec;
use crate::num::parse_i64;
use crate::resp::Reply;

/// How an expiry argument is expressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unit {
    /// Seconds from now (`EX`, `EXPIRE`).
    Seconds,
    /// Milliseconds from now (`PX`, `PEXPIRE`).
    Millis,
    /// Unix time in seconds (`EXAT`, `EXPIREAT`).
    UnixSeconds,
    /// Unix time in milliseconds (`PXAT`, `PEXPIREAT`).
    UnixMillis,
}

impl Unit {
    fn seconds(self) -> bool {
        matches!(self, Unit::Seconds | Unit::UnixSeconds)
    }

    fn relative(self) -> bool {
        matches!(self, Unit::Seconds | Unit::Millis)
    }
}

/// `SET`'s rule: the number must be positive, and the absolute time must
/// not overflow. Errors: not an integer, or `invalid expire time in 'set'`.
pub(crate) fn set_expire_at(x: &Exec<'_>, unit: Unit, raw: &[u8]) -> Result<u64, Reply> {
    let n = parse_i64(raw).ok_or_else(errors::not_integer)?;
    if n <= 0 {
        return Err(errors::invalid_expire(x.fullname));
    }
    absolute(x, unit, n)
        .filter(|&at| at > 0)
        .map(|at| at as u64)
        .ok_or_else(|| errors::invalid_expire(x.fullname))
}

/// The `EXPIRE` family's rule: any integer (zero or negative means "already
/// expired"), as long as the arithmetic does not overflow. Returns the
/// absolute time, which may be negative.
pub(crate) fn expire_at(x: &Exec<'_>, unit: Unit, raw: &[u8]) -> Result<i64, Reply> {
    let n = parse_i64(raw).ok_or_else(errors::not_integer)?;
    absolute(x, unit, n).ok_or_else(|| errors::invalid_expire(x.fullname))
}

fn absolute(x: &Exec<'_>, unit: Unit, n: i64) -> Option<i64> {
    let ms = if unit.seconds() {
        n.checked_mul(1000)?
    } else {
        n
    };
    if unit.relative() {
        ms.checked_add(i64::try_from(x.now).ok()?)
    } else {
        Some(ms)
    }
}
