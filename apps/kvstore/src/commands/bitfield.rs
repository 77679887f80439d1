//! `BITFIELD` and `BITFIELD_RO`: integers of any width at any bit offset
//! of a string (see `commands::bitfield_math`).
//!
//! The operations are read and checked first, all of them, as Redis does;
//! then they run against the value as it was plus an overlay of the bytes
//! they changed, and only if a byte changed (or the string had to grow)
//! is the string written. A `BITFIELD` that changed the string is logged
//! as itself: it depends on nothing but the value and its arguments.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use super::bitfield_math::{self, Overflow, Width};
use super::errors;
use super::exec::Exec;
use crate::config::Config;
use crate::notify;
use crate::num::parse_i64;
use crate::resp::Reply;
use crate::store::Store;

/// One operation.
#[derive(Clone, Copy, Debug)]
struct Op {
    kind: Kind,
    width: Width,
    offset: u64,
    overflow: Overflow,
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Get,
    Set(i64),
    IncrBy(i64),
}

/// The operations of `BITFIELD key ...` (`args[2..]`), and the last bit a
/// write reaches, if any writes.
fn parse(args: &[Vec<u8>], max_bulk: u64) -> Result<(Vec<Op>, Option<u64>), Reply> {
    let mut ops = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut last_bit: Option<u64> = None;
    let mut j = 2;
    while j < args.len() {
        let left = args.len() - j - 1;
        let word = args[j].to_ascii_lowercase();
        let takes = match word.as_slice() {
            b"get" if left >= 2 => 2,
            b"set" | b"incrby" if left >= 3 => 3,
            b"overflow" if left >= 1 => {
                overflow = match args[j + 1].to_ascii_lowercase().as_slice() {
                    b"wrap" => Overflow::Wrap,
                    b"sat" => Overflow::Sat,
                    b"fail" => Overflow::Fail,
                    _ => return Err(Reply::error("ERR Invalid OVERFLOW type specified")),
                };
                j += 2;
                continue;
            }
            _ => return Err(errors::syntax()),
        };
        let width = Width::parse(&args[j + 1]).ok_or_else(|| {
            Reply::error(
                "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.",
            )
        })?;
        let offset = offset(&args[j + 2], Some(width.bits), max_bulk)?;
        let kind = match word.as_slice() {
            b"get" => Kind::Get,
            _ => {
                let n = parse_i64(&args[j + 3]).ok_or_else(errors::not_integer)?;
                let end = offset + u64::from(width.bits) - 1;
                last_bit = Some(last_bit.map_or(end, |b| b.max(end)));
                match word.as_slice() {
                    b"set" => Kind::Set(n),
                    _ => Kind::IncrBy(n),
                }
            }
        };
        ops.push(Op {
            kind,
            width,
            offset,
            overflow,
        });
        j += 1 + takes;
    }
    Ok((ops, last_bit))
}

/// A bit offset argument: a number, or with `field_bits` also `#n` for
/// the `n`th field of that many bits; not negative, and its byte below
/// `proto-max-bulk-len` (the longest string a client could send).
pub(crate) fn offset(arg: &[u8], field_bits: Option<u32>, max_bulk: u64) -> Result<u64, Reply> {
    let bad = || Reply::error("ERR bit offset is not an integer or out of range");
    let (index, times) = match (arg.split_first(), field_bits) {
        (Some((b'#', rest)), Some(bits)) => (rest, i64::from(bits)),
        _ => (arg, 1),
    };
    let offset = parse_i64(index).ok_or_else(bad)?.wrapping_mul(times);
    if offset < 0 || (offset as u64 >> 3) >= max_bulk {
        return Err(bad());
    }
    Ok(offset as u64)
}

/// What an offset's byte must stay below: `proto-max-bulk-len`, except
/// when the log is replayed (a record is replayed whatever the setting is
/// now, as Redis loads its AOF).
pub(crate) fn offset_limit(x: &Exec<'_>) -> u64 {
    match x.loading {
        true => u64::MAX,
        false => x.config.proto_max_bulk_len,
    }
}

/// The string as it was, plus the bytes the operations changed.
struct Overlay<'a> {
    base: &'a [u8],
    changed: BTreeMap<u64, u8>,
}

impl Overlay<'_> {
    fn byte(&self, at: u64) -> u8 {
        match self.changed.get(&at) {
            Some(&byte) => byte,
            None => usize::try_from(at)
                .ok()
                .and_then(|i| self.base.get(i))
                .copied()
                .unwrap_or(0),
        }
    }

    fn set_bit(&mut self, at: u64, on: bool) {
        let mask = 0x80 >> (at & 7);
        let byte = self.byte(at >> 3);
        self.changed
            .insert(at >> 3, if on { byte | mask } else { byte & !mask });
    }

    /// Whether any changed byte differs from the string's.
    fn differs(&self) -> bool {
        self.changed.iter().any(|(&at, &byte)| {
            usize::try_from(at)
                .ok()
                .and_then(|i| self.base.get(i))
                .map_or(byte != 0, |&old| old != byte)
        })
    }
}

/// `BITFIELD key [GET type offset | SET type offset value | INCRBY type
/// offset increment | OVERFLOW WRAP|SAT|FAIL] ...`
pub(crate) fn bitfield(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    run(x, args, false)
}

/// `BITFIELD_RO key [GET type offset] ...`: `GET` only.
pub(crate) fn bitfield_ro(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    run(x, args, true)
}

fn run(x: &mut Exec<'_>, args: &[Vec<u8>], read_only: bool) -> Reply {
    let (ops, last_bit) = match parse(args, offset_limit(x)) {
        Ok(parsed) => parsed,
        Err(reply) => return reply,
    };
    if last_bit.is_some() && read_only {
        return Reply::error("ERR BITFIELD_RO only supports the GET subcommand");
    }
    let key = &args[1];
    let found = match last_bit {
        None => x.read_string(key),
        Some(_) => x.live_string(key),
    };
    let base = match found {
        Ok(value) => value.cloned(),
        Err(reply) => return reply,
    };
    let existed = base.is_some();
    let base_bytes: &[u8] = base.as_deref().map_or(&[], Vec::as_slice);
    let mut overlay = Overlay {
        base: base_bytes,
        changed: BTreeMap::new(),
    };
    // The string is made or grown for the writes, whatever they do.
    let grows = last_bit.is_some_and(|bit| (bit >> 3) + 1 > base_bytes.len() as u64);
    let mut changes = 0;
    let mut replies = Vec::with_capacity(ops.len());
    for op in &ops {
        let old = bitfield_math::get(|at| overlay.byte(at), op.offset, op.width);
        let (new, answer) = match op.kind {
            Kind::Get => {
                replies.push(Reply::Integer(old));
                continue;
            }
            Kind::Set(value) => {
                let new = bitfield_math::add(value, 0, op.width, op.overflow);
                (new, old)
            }
            Kind::IncrBy(incr) => {
                let new = bitfield_math::add(old, incr, op.width, op.overflow);
                (new, new.unwrap_or(0))
            }
        };
        let Some(new) = new else {
            replies.push(Reply::nil());
            continue;
        };
        replies.push(Reply::Integer(answer));
        bitfield_math::set(
            |at, on| overlay.set_bit(at, on),
            op.offset,
            op.width.bits,
            new as u64,
        );
        if grows || old != new {
            changes += 1;
        }
    }
    let write = grows || overlay.differs();
    let changed = core::mem::take(&mut overlay.changed);
    // The value is shared no more, so it is changed in place.
    drop(overlay);
    drop(base);
    if write {
        let len = last_bit.map_or(0, |bit| (bit >> 3) + 1) as usize;
        let written = x.store.update_string(key, |value| {
            if value.len() < len {
                value.try_reserve(len - value.len()).ok()?;
                value.resize(len, 0);
            }
            for (at, byte) in changed {
                value[at as usize] = byte;
            }
            Some(())
        });
        match written {
            Some(Some(())) => x.log(args),
            Some(None) => {
                if !existed {
                    x.store.remove(key);
                }
                return errors::oom();
            }
            None => return errors::wrong_type(),
        }
    }
    if changes > 0 {
        x.notify(notify::STRING, "setbit", key);
    }
    Reply::array(replies)
}

/// Growth of `BITFIELD key ...`: the bytes up to the last bit it writes.
pub(crate) fn bitfield_growth(store: &Store, limits: &Config, args: &[Vec<u8>]) -> usize {
    let Ok((_, Some(last_bit))) = parse(args, limits.proto_max_bulk_len) else {
        return 0;
    };
    let bytes = (last_bit >> 3) as usize + 1;
    match store.get(&args[1]) {
        Some(entry) => bytes.saturating_sub(entry.value().len()),
        None => Store::cost(args[1].len(), bytes),
    }
}
