//! Redis's serialization format for one value, as `DUMP` writes it and
//! `RESTORE` reads it, so that values move between kvstore and Redis 7.0
//! both ways.
//!
//! A payload is an RDB object (a type byte and the encoded value), the
//! RDB version (2 bytes, little-endian; Redis 7.0 writes 10 and reads up
//! to 10) and a CRC-64 ([`crc64`]) of everything before it (8 bytes,
//! little-endian).
//!
//! # What kvstore writes
//!
//! [`dump`] writes the simple, unpacked types every Redis since 2.x
//! reads: a string as type 0 (plain bytes, never int-encoded or
//! compressed), a list as type 1, a set as type 2, a sorted set as type 5
//! (`ZSET_2`, binary scores) and a hash as type 4. Redis picks the
//! encoding of a restored value from its own settings either way, so
//! nothing is lost by not writing the packed forms. A stream is written
//! as Redis 7.0 writes it (`STREAM_LISTPACKS_2`, see [`stream`]), with
//! its consumer groups, pending entries and consumers.
//!
//! # What kvstore reads
//!
//! [`load`] reads every type Redis 7.0 writes or still reads but module
//! values (which fail as bad data, as in a Redis without the module):
//! strings (plain, int-encoded and LZF-compressed, see [`lzf`]), lists
//! (1, ziplist 10, quicklist 14 of ziplists, quicklist 18 of listpacks
//! and plain nodes), sets (2, intset 11), sorted sets (3 with text
//! scores, 5, ziplist 12, listpack 17), hashes (4, zipmap 9, ziplist 13,
//! listpack 16) and streams (15 and 19). Everything is checked while read
//! (lengths against the bytes there, every packed entry, duplicates, NaN
//! scores, no empty collection, a stream's counts and IDs in order, every
//! pending entry owned by one consumer), so a bad payload is refused with
//! [`LoadError::Bad`] and never panics. Bytes after the object are
//! ignored, as Redis 7.0 ignores them.

pub mod cursor;
pub mod lzf;
pub mod packed;
pub mod stream;

mod crc64;

use alloc::vec::Vec;

pub use crc64::crc64;
use cursor::{Bad, Cursor};

use crate::store::{CompactLimits, Data, End, Hash, List, Set, Zset};

/// The RDB version kvstore writes and the newest it reads: Redis 7.0's.
pub const RDB_VERSION: u16 = 10;

/// Type bytes of the format.
mod types {
    pub const STRING: u8 = 0;
    pub const LIST: u8 = 1;
    pub const SET: u8 = 2;
    pub const ZSET: u8 = 3;
    pub const HASH: u8 = 4;
    pub const ZSET_2: u8 = 5;
    pub const HASH_ZIPMAP: u8 = 9;
    pub const LIST_ZIPLIST: u8 = 10;
    pub const SET_INTSET: u8 = 11;
    pub const ZSET_ZIPLIST: u8 = 12;
    pub const HASH_ZIPLIST: u8 = 13;
    pub const LIST_QUICKLIST: u8 = 14;
    pub const STREAM_LISTPACKS: u8 = 15;
    pub const HASH_LISTPACK: u8 = 16;
    pub const ZSET_LISTPACK: u8 = 17;
    pub const LIST_QUICKLIST_2: u8 = 18;
    pub const STREAM_LISTPACKS_2: u8 = 19;
}

/// Why a payload was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadError {
    /// Too short, a newer RDB version, or the checksum does not match.
    VersionOrChecksum,
    /// Not a well-formed value (or a module's, which kvstore has none
    /// of).
    Bad,
}

impl From<Bad> for LoadError {
    fn from(_: Bad) -> Self {
        LoadError::Bad
    }
}

/// The settings that pick how a restored value is kept, as for any
/// other write (Redis too converts on load).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// `hash-max-listpack-*`.
    pub hash: CompactLimits,
    /// `zset-max-listpack-*`.
    pub zset: CompactLimits,
    /// `set-max-intset-entries`.
    pub set_max_ints: usize,
    /// `stream-node-max-entries` and `stream-node-max-bytes`.
    pub stream_node: stream::NodeLimits,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            hash: CompactLimits::default(),
            zset: CompactLimits::default(),
            set_max_ints: 512,
            stream_node: stream::NodeLimits {
                entries: 100,
                bytes: 4096,
            },
        }
    }
}

/// The body of `payload` (the RDB object) if its version and checksum
/// are right.
pub fn verify(payload: &[u8]) -> Result<&[u8], LoadError> {
    let Some(body_len) = payload.len().checked_sub(10) else {
        return Err(LoadError::VersionOrChecksum);
    };
    let (body, footer) = payload.split_at(body_len);
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    let mut crc = [0u8; 8];
    crc.copy_from_slice(&footer[2..]);
    if version > RDB_VERSION || crc64(&payload[..body_len + 2]) != u64::from_le_bytes(crc) {
        return Err(LoadError::VersionOrChecksum);
    }
    Ok(body)
}

/// The value a whole payload holds: [`verify`], then the object.
///
/// ```
/// use kvstore::rdb::{dump, load, Limits};
/// use kvstore::store::Data;
///
/// let value = Data::from(b"hello".to_vec());
/// let payload = dump(&value);
/// assert_eq!(load(&payload, Limits::default()), Ok(value));
/// ```
pub fn load(payload: &[u8], limits: Limits) -> Result<Data, LoadError> {
    let body = verify(payload)?;
    // Bytes after the object are ignored, as Redis 7.0 ignores them.
    object(&mut Cursor::new(body), limits)
}

/// One RDB object: the type byte and the value.
fn object(c: &mut Cursor<'_>, limits: Limits) -> Result<Data, LoadError> {
    use types::*;
    let kind = c.byte()?;
    Ok(match kind {
        STRING => Data::from(c.string()?),
        LIST => {
            let n = c.count()?;
            list((0..n).map(|_| c.string()))?
        }
        SET => {
            let n = c.count()?;
            set((0..n).map(|_| c.string()), limits)?
        }
        ZSET | ZSET_2 | HASH => {
            let n = c.count()?;
            let mut pairs = Vec::new();
            for _ in 0..n {
                let first = c.string()?;
                match kind {
                    HASH => pairs.push((first, Pair::Value(c.string()?))),
                    ZSET => pairs.push((first, Pair::Score(c.text_double()?))),
                    _ => pairs.push((first, Pair::Score(c.binary_double()?))),
                }
            }
            if kind == HASH {
                hash(pairs.into_iter().map(|(f, v)| (f, v.value())), limits)?
            } else {
                zset(pairs.into_iter().map(|(m, s)| (m, s.score())), limits)?
            }
        }
        LIST_ZIPLIST => list(packed::ziplist(&c.string()?)?.into_iter().map(Ok))?,
        SET_INTSET => {
            let members = packed::intset(&c.string()?)?;
            set(members.into_iter().map(|n| Ok(cursor::text(n))), limits)?
        }
        ZSET_ZIPLIST | ZSET_LISTPACK | HASH_ZIPLIST | HASH_LISTPACK | HASH_ZIPMAP => {
            let blob = c.string()?;
            let elements = match kind {
                ZSET_ZIPLIST | HASH_ZIPLIST => packed::ziplist(&blob)?,
                HASH_ZIPMAP => packed::zipmap(&blob)?,
                _ => packed::listpack(&blob)?,
            };
            if elements.len() % 2 != 0 {
                return Err(LoadError::Bad);
            }
            let mut it = elements.into_iter();
            let pairs = core::iter::from_fn(|| Some((it.next()?, it.next()?)));
            if matches!(kind, HASH_ZIPLIST | HASH_LISTPACK | HASH_ZIPMAP) {
                hash(pairs.map(|(f, v)| (f, Ok(v))), limits)?
            } else {
                zset(pairs.map(|(m, s)| (m, cursor::parse_double(&s))), limits)?
            }
        }
        LIST_QUICKLIST | LIST_QUICKLIST_2 => {
            let quicklist_2 = kind == LIST_QUICKLIST_2;
            let nodes = c.count()?;
            let mut elements = Vec::new();
            for _ in 0..nodes {
                if !quicklist_2 {
                    elements.extend(packed::ziplist(&c.string()?)?);
                    continue;
                }
                match c.count()? {
                    // A plain node: one large element.
                    1 => elements.push(c.string()?),
                    2 => elements.extend(packed::listpack(&c.string()?)?),
                    _ => return Err(LoadError::Bad),
                }
            }
            list(elements.into_iter().map(Ok))?
        }
        STREAM_LISTPACKS | STREAM_LISTPACKS_2 => {
            let legacy = kind == STREAM_LISTPACKS;
            Data::from(stream::load(c, legacy, limits.stream_node)?)
        }
        _ => return Err(LoadError::Bad),
    })
}

/// The second half of a hash's or a sorted set's pair.
enum Pair {
    Value(Vec<u8>),
    Score(f64),
}

impl Pair {
    fn value(self) -> Result<Vec<u8>, Bad> {
        match self {
            Pair::Value(v) => Ok(v),
            Pair::Score(_) => Err(Bad),
        }
    }

    fn score(self) -> Result<f64, Bad> {
        match self {
            Pair::Score(s) => Ok(s),
            Pair::Value(_) => Err(Bad),
        }
    }
}

fn list(elements: impl Iterator<Item = Result<Vec<u8>, Bad>>) -> Result<Data, Bad> {
    let mut list = List::new();
    for element in elements {
        list.push(End::Right, element?);
    }
    if list.is_empty() {
        return Err(Bad);
    }
    Ok(Data::from(list))
}

fn set(members: impl Iterator<Item = Result<Vec<u8>, Bad>>, limits: Limits) -> Result<Data, Bad> {
    let mut set = Set::new();
    for member in members {
        if !set.insert(&member?, limits.set_max_ints) {
            return Err(Bad);
        }
    }
    if set.is_empty() {
        return Err(Bad);
    }
    Ok(Data::from(set))
}

fn hash(
    pairs: impl Iterator<Item = (Vec<u8>, Result<Vec<u8>, Bad>)>,
    limits: Limits,
) -> Result<Data, Bad> {
    let mut hash = Hash::new();
    for (field, value) in pairs {
        if !hash.insert(field, value?, limits.hash) {
            return Err(Bad);
        }
    }
    if hash.is_empty() {
        return Err(Bad);
    }
    Ok(Data::from(hash))
}

fn zset(
    pairs: impl Iterator<Item = (Vec<u8>, Result<f64, Bad>)>,
    limits: Limits,
) -> Result<Data, Bad> {
    let pairs = pairs
        .map(|(member, score)| match score {
            Ok(score) if !score.is_nan() => Ok((member, score)),
            _ => Err(Bad),
        })
        .collect::<Result<Vec<_>, Bad>>()?;
    let longest = pairs.iter().map(|(m, _)| m.len()).max().ok_or(Bad)?;
    let mut zset = Zset::for_size(pairs.len(), longest, limits.zset);
    for (member, score) in pairs {
        if zset.insert(member, score, limits.zset) != Ok(true) {
            return Err(Bad);
        }
    }
    Ok(Data::from(zset))
}

/// The payload `DUMP` answers for `data` (see the module's notes on what
/// is written).
pub fn dump(data: &Data) -> Vec<u8> {
    let mut out = Vec::new();
    match data {
        Data::String(value) => {
            out.push(types::STRING);
            put_string(&mut out, value);
        }
        Data::List(list) => {
            out.push(types::LIST);
            put_len(&mut out, list.len() as u64);
            for element in list.iter() {
                put_string(&mut out, element);
            }
        }
        Data::Set(set) => {
            out.push(types::SET);
            put_len(&mut out, set.len() as u64);
            for member in set.iter() {
                put_string(&mut out, &member);
            }
        }
        Data::Zset(zset) => {
            out.push(types::ZSET_2);
            put_len(&mut out, zset.len() as u64);
            for (member, score) in zset.iter() {
                put_string(&mut out, member);
                out.extend_from_slice(&score.to_le_bytes());
            }
        }
        Data::Hash(hash) => {
            out.push(types::HASH);
            put_len(&mut out, hash.len() as u64);
            for (field, value) in hash.iter() {
                put_string(&mut out, field);
                put_string(&mut out, value);
            }
        }
        Data::Stream(value) => {
            out.push(types::STREAM_LISTPACKS_2);
            stream::dump(&mut out, value);
        }
    }
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// A length in the shortest form that holds it.
fn put_len(out: &mut Vec<u8>, n: u64) {
    if n < 1 << 6 {
        out.push(n as u8);
    } else if n < 1 << 14 {
        out.extend_from_slice(&[0x40 | (n >> 8) as u8, n as u8]);
    } else if let Ok(n) = u32::try_from(n) {
        out.push(0x80);
        out.extend_from_slice(&n.to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

/// A string as plain bytes behind its length.
fn put_string(out: &mut Vec<u8>, bytes: &[u8]) {
    put_len(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests;
