//! HyperLogLog commands: `PFADD`, `PFCOUNT` and `PFMERGE`, over strings in
//! Redis's own HyperLogLog format (see `kvstore::hll`).
//!
//! What gets logged:
//!
//! | command                      | logged as                                  |
//! |------------------------------|--------------------------------------------|
//! | `PFADD` to a dense value     | itself (it changes registers only)         |
//! | `PFADD` creating or to a sparse value, `PFMERGE` | `SET key <new value> KEEPTTL` |
//! | `PFCOUNT key` that refreshed the cached count | itself (it writes the cache) |
//!
//! A sparse value's bytes depend on `hll-sparse-max-bytes`, which the log
//! does not record, so changes to one are logged as the bytes they made.

use alloc::vec::Vec;

use super::exec::Exec;
use crate::aof::Piece;
use crate::config::Config;
use crate::hll::{self, Encoding};
use crate::notify;
use crate::resp::Reply;
use crate::store::Store;

/// `-WRONGTYPE Key is not a valid HyperLogLog string value.`
pub(super) fn not_hll() -> Reply {
    Reply::error("WRONGTYPE Key is not a valid HyperLogLog string value.")
}

/// `-INVALIDOBJ Corrupted HLL object detected`
pub(super) fn corrupt() -> Reply {
    Reply::error("INVALIDOBJ Corrupted HLL object detected")
}

/// The HyperLogLog encoding of the live string at `key` (`None` if the
/// key is missing), or the error for another type or a foreign string.
/// `read` counts a keyspace hit or miss.
fn hll_at(x: &mut Exec<'_>, key: &[u8], read: bool) -> Result<Option<Encoding>, Reply> {
    let value = match read {
        true => x.read_string(key)?,
        false => x.live_string(key)?,
    };
    match value {
        None => Ok(None),
        Some(value) => hll::encoding(value).map(Some).ok_or_else(not_hll),
    }
}

/// Logs `SET key <its value> KEEPTTL`: the whole new value.
pub(super) fn log_value(x: &mut Exec<'_>, key: &[u8]) {
    if let Some(value) = x.store.get(key).and_then(|e| e.shared()).cloned() {
        x.log_args(&[
            Piece::Bytes(b"SET"),
            Piece::Bytes(key),
            Piece::Value(&value),
            Piece::Bytes(b"KEEPTTL"),
        ]);
    }
}

/// `PFADD key [element ...]`: 1 if a register changed or the key was
/// created, else 0.
pub(crate) fn pfadd(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let key = &args[1];
    let existing = match hll_at(x, key, false) {
        Ok(existing) => existing,
        Err(reply) => return reply,
    };
    let max_bytes = x.config.hll_sparse_max_bytes;
    let elements = &args[2..];
    if existing.is_some() {
        // Nothing to change: the value stays untouched (a WATCH on it
        // holds), as in Redis.
        let value = x.store.get(key).map_or(&[][..], |e| e.value());
        match hll::would_change(value, elements.iter().map(Vec::as_slice)) {
            Ok(false) => return Reply::Integer(0),
            Ok(true) => {}
            Err(_) => return corrupt(),
        }
    }
    let added = x.store.update_string(key, |value| {
        if existing.is_none() {
            *value = hll::new_sparse();
        }
        // A sparse value found corrupt halfway is left as it was.
        let before = (existing == Some(Encoding::Sparse)).then(|| value.clone());
        let mut updated = existing.is_none();
        for element in elements {
            match hll::add(value, element, max_bytes) {
                Ok(changed) => updated |= changed,
                Err(corrupt) => {
                    if let Some(before) = before {
                        *value = before;
                    }
                    return Err(corrupt);
                }
            }
        }
        if updated {
            hll::invalidate_cache(value);
        }
        Ok(updated)
    });
    match added {
        Some(Ok(true)) => {
            if existing == Some(Encoding::Dense) {
                x.log(&args[..]);
            } else {
                log_value(x, &args[1]);
            }
            x.notify(notify::STRING, "pfadd", &args[1]);
            Reply::Integer(1)
        }
        Some(Ok(false)) => Reply::Integer(0),
        Some(Err(_)) => corrupt(),
        None => super::errors::wrong_type(),
    }
}

/// `PFCOUNT key [key ...]`: the estimated number of distinct elements of
/// one HyperLogLog (refreshing its cached count) or of the union of
/// several (missing keys count as empty).
pub(crate) fn pfcount(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    if args.len() > 2 {
        let mut registers = match zero_registers() {
            Ok(registers) => registers,
            Err(reply) => return reply,
        };
        return match union(x, &args[1..], &mut registers) {
            Ok(_) => Reply::Integer(hll::count_registers(&registers) as i64),
            Err(reply) => reply,
        };
    }
    let key = &args[1];
    let count = match x.read_string(key) {
        Ok(None) => return Reply::Integer(0),
        Err(reply) => return reply,
        Ok(Some(value)) if hll::encoding(value).is_none() => return not_hll(),
        Ok(Some(value)) => {
            if let Some(count) = hll::cached(value) {
                return Reply::Integer(count as i64);
            }
            match hll::count(value) {
                Ok(count) => count,
                Err(_) => return corrupt(),
            }
        }
    };
    x.store
        .update_string(key, |value| hll::set_cache(value, count));
    x.log([&b"PFCOUNT"[..], key]);
    Reply::Integer(count as i64)
}

/// 16384 registers at 0, one byte each; `-OOM` if the memory is not there.
fn zero_registers() -> Result<Vec<u8>, Reply> {
    let mut registers = Vec::new();
    registers
        .try_reserve_exact(hll::REGISTERS)
        .map_err(|_| super::errors::oom())?;
    registers.resize(hll::REGISTERS, 0u8);
    Ok(registers)
}

/// Raises `registers` to those of each HyperLogLog in `keys` (missing
/// keys skipped); whether any of them was dense.
fn union(x: &mut Exec<'_>, keys: &[Vec<u8>], registers: &mut [u8]) -> Result<bool, Reply> {
    let mut any_dense = false;
    for key in keys {
        let Some(value) = x.read_string(key)? else {
            continue;
        };
        match hll::encoding(value) {
            None => return Err(not_hll()),
            Some(encoding) => any_dense |= encoding == Encoding::Dense,
        }
        hll::merge_into(registers, value).map_err(|_| corrupt())?;
    }
    Ok(any_dense)
}

/// `PFMERGE destkey [sourcekey ...]`: the destination (read as a source
/// too) becomes the union of them all; dense if any of them was.
pub(crate) fn pfmerge(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let mut registers = match zero_registers() {
        Ok(registers) => registers,
        Err(reply) => return reply,
    };
    let any_dense = match union(x, &args[1..], &mut registers) {
        Ok(any_dense) => any_dense,
        Err(reply) => return reply,
    };
    let key = &args[1];
    let existed = match hll_at(x, key, false) {
        Ok(existed) => existed.is_some(),
        Err(reply) => return reply,
    };
    let max_bytes = x.config.hll_sparse_max_bytes;
    let merged = x.store.update_string(key, |value| {
        if !existed {
            *value = hll::new_sparse();
        }
        if any_dense {
            hll::to_dense(value)?;
        }
        for (index, &register) in registers.iter().enumerate() {
            if register > 0 {
                hll::raise(value, index, register, max_bytes)?;
            }
        }
        hll::invalidate_cache(value);
        Ok(())
    });
    match merged {
        Some(Ok(())) => {
            log_value(x, key);
            x.notify(notify::STRING, "pfadd", key);
            Reply::ok()
        }
        Some(Err(hll::Corrupt)) => corrupt(),
        None => super::errors::wrong_type(),
    }
}

/// Growth of `PFADD key ...` or `PFMERGE key ...`: at most a dense
/// HyperLogLog at `args[1]`.
pub(crate) fn hll_growth(store: &Store, _limits: &Config, args: &[Vec<u8>]) -> usize {
    match store.get(&args[1]) {
        Some(entry) => hll::DENSE_SIZE.saturating_sub(entry.value().len()),
        None => Store::cost(args[1].len(), hll::DENSE_SIZE),
    }
}
