//! Streams in the serialization format: `STREAM_LISTPACKS_2` (type 19,
//! what Redis 7.0 writes; [`dump`] writes it too) and the older
//! `STREAM_LISTPACKS` (15, Redis 5 and 6; read only).
//!
//! The entries come in nodes: a node's key is its master ID (16 bytes,
//! big-endian milliseconds and sequence) and its value a listpack: the
//! master entry (live count, deleted count, the master field names, 0),
//! then each entry as flags, ID deltas from the master, either the
//! values alone (flag `SAMEFIELDS`: the master's field names) or a field
//! count and field-value pairs, and the number of elements it took. Then
//! come the length, the last ID, (type 19) the first ID, the largest
//! deleted ID and the count of entries ever added, and the consumer
//! groups: name, last delivered ID, (type 19) entries read, the pending
//! entries (raw ID, delivery time, delivery count) and the consumers
//! (name, seen time, the IDs pending for them).

use alloc::vec::Vec;

use super::cursor::{Bad, Cursor};
use super::packed;
use crate::store::{Consumer, Group, Pending, Stream, StreamId};

/// Entry flags.
const DELETED: i64 = 1;
const SAMEFIELDS: i64 = 2;

/// Entries per node [`dump`] writes (Redis's `stream-node-max-entries`
/// default).
const NODE_ENTRIES: usize = 100;

/// A stream's node limits (`stream-node-max-*`), for the nodes a loaded
/// stream is kept in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeLimits {
    /// Most entries a node holds (0: no limit).
    pub entries: u64,
    /// Most bytes a node holds (0: no limit).
    pub bytes: u64,
}

fn int(text: &[u8]) -> Result<i64, Bad> {
    crate::num::parse_i64(text).ok_or(Bad)
}

fn raw_id(c: &mut Cursor<'_>) -> Result<StreamId, Bad> {
    let raw = c.take(16)?;
    let half = |at: usize| {
        let mut be = [0u8; 8];
        be.copy_from_slice(&raw[at..at + 8]);
        u64::from_be_bytes(be)
    };
    Ok(StreamId::new(half(0), half(8)))
}

fn id(c: &mut Cursor<'_>) -> Result<StreamId, Bad> {
    Ok(StreamId::new(c.number()?, c.number()?))
}

/// A stream of type 19, or of type 15 when `legacy`.
pub fn load(c: &mut Cursor<'_>, legacy: bool, limits: NodeLimits) -> Result<Stream, Bad> {
    let mut stream = Stream::new();
    let nodes = c.count()?;
    for _ in 0..nodes {
        let key = c.string()?;
        let mut key = Cursor::new(&key);
        let master = raw_id(&mut key)?;
        key.end()?;
        let elements = packed::listpack(&c.string()?)?;
        node(&mut stream, master, &elements, limits)?;
    }
    let length = c.number()?;
    let last_id = id(c)?;
    if length != stream.len() as u64 || stream.last().is_some_and(|(last, _)| last > last_id) {
        return Err(Bad);
    }
    stream.last_id = last_id;
    if legacy {
        stream.max_deleted = StreamId::ZERO;
        stream.entries_added = length;
    } else {
        let _first = id(c)?;
        stream.max_deleted = id(c)?;
        stream.entries_added = c.number()?;
    }
    let groups = c.count()?;
    for _ in 0..groups {
        let name = c.string()?;
        let last = id(c)?;
        let entries_read = if legacy {
            stream.distance_from_first(last)
        } else {
            Some(c.number()?).filter(|&n| n != u64::MAX)
        };
        let mut group = Group::new(last, entries_read);
        let pending = c.count()?;
        for _ in 0..pending {
            let id = raw_id(c)?;
            let delivered_ms = c.u64_le()?;
            let deliveries = c.number()?;
            let unowned = Pending {
                consumer: Vec::new(),
                delivered_ms,
                deliveries,
            };
            if group.pending.insert(id, unowned).is_some() {
                return Err(Bad);
            }
        }
        let consumers = c.count()?;
        for _ in 0..consumers {
            let name = c.string()?;
            let mut consumer = Consumer {
                seen_ms: c.u64_le()?,
                pending: Default::default(),
            };
            for _ in 0..c.count()? {
                let id = raw_id(c)?;
                let entry = group.pending.get_mut(&id).ok_or(Bad)?;
                if !entry.consumer.is_empty() || name.is_empty() {
                    // Owned twice (or by a nameless consumer, which would
                    // read as unowned).
                    return Err(Bad);
                }
                entry.consumer = name.clone();
                consumer.pending.insert(id);
            }
            if group.consumers.insert(name, consumer).is_some() {
                return Err(Bad);
            }
        }
        if group.pending.values().any(|p| p.consumer.is_empty()) {
            return Err(Bad);
        }
        if stream.groups.insert(name, group).is_some() {
            return Err(Bad);
        }
    }
    Ok(stream)
}

/// The element at `*at`, moving past it.
fn take<'a>(elements: &'a [Vec<u8>], at: &mut usize) -> Result<&'a [u8], Bad> {
    let element = elements.get(*at).ok_or(Bad)?;
    *at += 1;
    Ok(element)
}

/// The entries of one node's listpack, added to `stream`.
fn node(
    stream: &mut Stream,
    master: StreamId,
    elements: &[Vec<u8>],
    limits: NodeLimits,
) -> Result<(), Bad> {
    let mut at = 0;
    let live = int(take(elements, &mut at)?)?;
    let deleted = int(take(elements, &mut at)?)?;
    let field_count = usize::try_from(int(take(elements, &mut at)?)?).map_err(|_| Bad)?;
    if field_count > elements.len() {
        return Err(Bad);
    }
    let master_fields: Vec<Vec<u8>> = (0..field_count)
        .map(|_| take(elements, &mut at).map(<[u8]>::to_vec))
        .collect::<Result<_, _>>()?;
    if int(take(elements, &mut at)?)? != 0 {
        return Err(Bad);
    }
    let (mut seen_live, mut seen_deleted) = (0, 0);
    while at < elements.len() {
        let start = at;
        let flags = int(take(elements, &mut at)?)?;
        let ms = master
            .ms
            .wrapping_add(int(take(elements, &mut at)?)? as u64);
        let seq = master
            .seq
            .wrapping_add(int(take(elements, &mut at)?)? as u64);
        let mut fields = Vec::new();
        if flags & SAMEFIELDS != 0 {
            for name in &master_fields {
                fields.push(name.clone());
                fields.push(take(elements, &mut at)?.to_vec());
            }
        } else {
            let n = usize::try_from(int(take(elements, &mut at)?)?).map_err(|_| Bad)?;
            if n > elements.len() {
                return Err(Bad);
            }
            for _ in 0..2 * n {
                fields.push(take(elements, &mut at)?.to_vec());
            }
        }
        let took = at - start;
        if int(take(elements, &mut at)?)? != took as i64 || fields.is_empty() {
            return Err(Bad);
        }
        let id = StreamId::new(ms, seq);
        if id < master || stream.last().is_some_and(|(last, _)| last >= id) {
            return Err(Bad);
        }
        if flags & DELETED != 0 {
            seen_deleted += 1;
            continue;
        }
        seen_live += 1;
        stream.add(id, fields, limits.entries, limits.bytes);
    }
    if seen_live != live || seen_deleted != deleted || seen_live + seen_deleted == 0 {
        return Err(Bad);
    }
    Ok(())
}

/// Writes `stream` as type 19 (the type byte is the caller's).
pub fn dump(out: &mut Vec<u8>, stream: &Stream) {
    let entries: Vec<(StreamId, &[Vec<u8>])> =
        stream.range(StreamId::ZERO, StreamId::MAX).collect();
    let chunks = entries.chunks(NODE_ENTRIES);
    super::put_len(out, chunks.len() as u64);
    for chunk in chunks {
        let (master, first_fields) = chunk[0];
        let names: Vec<&[u8]> = first_fields.iter().step_by(2).map(|f| &f[..]).collect();
        let mut key = Vec::with_capacity(16);
        key.extend_from_slice(&master.ms.to_be_bytes());
        key.extend_from_slice(&master.seq.to_be_bytes());
        super::put_string(out, &key);
        let mut lp = packed::ListpackWriter::new();
        lp.int(chunk.len() as i64);
        lp.int(0);
        lp.int(names.len() as i64);
        for name in &names {
            lp.bytes(name);
        }
        lp.int(0);
        for (id, fields) in chunk {
            let same = fields.len() == 2 * names.len()
                && fields.iter().step_by(2).zip(&names).all(|(f, n)| f == n);
            lp.int(if same { SAMEFIELDS } else { 0 });
            lp.int(id.ms.wrapping_sub(master.ms) as i64);
            lp.int(id.seq.wrapping_sub(master.seq) as i64);
            let count = fields.len() / 2;
            if same {
                for value in fields.iter().skip(1).step_by(2) {
                    lp.bytes(value);
                }
                lp.int(count as i64 + 3);
            } else {
                lp.int(count as i64);
                for field in fields.iter() {
                    lp.bytes(field);
                }
                lp.int(2 * count as i64 + 1 + 3);
            }
        }
        super::put_string(out, &lp.finish());
    }
    super::put_len(out, stream.len() as u64);
    put_id(out, stream.last_id);
    put_id(out, stream.first_id());
    put_id(out, stream.max_deleted);
    super::put_len(out, stream.entries_added);
    super::put_len(out, stream.groups.len() as u64);
    for (name, group) in &stream.groups {
        super::put_string(out, name);
        put_id(out, group.last_id);
        super::put_len(out, group.entries_read.unwrap_or(u64::MAX));
        super::put_len(out, group.pending.len() as u64);
        for (id, pending) in &group.pending {
            put_raw_id(out, *id);
            out.extend_from_slice(&pending.delivered_ms.to_le_bytes());
            super::put_len(out, pending.deliveries);
        }
        super::put_len(out, group.consumers.len() as u64);
        for (name, consumer) in &group.consumers {
            super::put_string(out, name);
            out.extend_from_slice(&consumer.seen_ms.to_le_bytes());
            super::put_len(out, consumer.pending.len() as u64);
            for id in &consumer.pending {
                put_raw_id(out, *id);
            }
        }
    }
}

fn put_id(out: &mut Vec<u8>, id: StreamId) {
    super::put_len(out, id.ms);
    super::put_len(out, id.seq);
}

fn put_raw_id(out: &mut Vec<u8>, id: StreamId) {
    out.extend_from_slice(&id.ms.to_be_bytes());
    out.extend_from_slice(&id.seq.to_be_bytes());
}
