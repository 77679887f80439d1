//! Stream values: entries of field-value pairs ordered by an ID that only
//! grows (`XADD`, `XRANGE`, ...), and the consumer groups that read them
//! (`XGROUP`, `XREADGROUP`, `XACK`, ...).
//!
//! ```text
//!  entries   BTreeMap  1-0 → [f v ...]   1-1 → [...]   5-0 → [...]
//!  nodes     [first 1-0, 100 slots, 98 live] [first 9-3, 12 slots, 12 live]
//!  groups    name → last delivered ID, entries read,
//!                   PEL: ID → (consumer, delivery time, deliveries)
//!                   consumers: name → (seen time, its pending IDs)
//! ```
//!
//! Redis keeps entries in nodes of up to `stream-node-max-entries`
//! entries, and approximate trimming (`MAXLEN ~`) only ever removes whole
//! nodes: clients see that in how many entries such a trim leaves. The
//! entries here sit in one ordered map, and [`Stream`] keeps the node
//! boundaries beside it (first ID, slots used, live entries) so that `~`
//! removes the entries Redis would.
//!
//! A stream may be empty (all entries deleted or trimmed, or created for a
//! group by `XGROUP CREATE ... MKSTREAM`): unlike the other collections,
//! it stays, with its last ID, until deleted.

use alloc::collections::{BTreeMap, BTreeSet, VecDeque};
use alloc::vec::Vec;

/// Estimated bytes one entry costs beyond its fields and values: its ID,
/// a map node and vector headers.
pub const STREAM_ENTRY_OVERHEAD: usize = 64;
/// Estimated bytes of one pending entry of a group (the ID in the PEL
/// and in its consumer's set, and the delivery data).
pub const PENDING_OVERHEAD: usize = 96;
/// Estimated bytes of a group or a consumer beyond its name.
pub const GROUP_OVERHEAD: usize = 128;

/// A stream entry ID: milliseconds and a sequence number within them,
/// ordered as the pair.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId {
    /// The milliseconds part.
    pub ms: u64,
    /// The sequence number within the millisecond.
    pub seq: u64,
}

impl StreamId {
    /// `0-0`, below every entry's ID.
    pub const ZERO: StreamId = StreamId { ms: 0, seq: 0 };
    /// The largest ID there is.
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    /// The ID `ms-seq`.
    pub const fn new(ms: u64, seq: u64) -> Self {
        StreamId { ms, seq }
    }

    /// The ID right after this one; `None` after [`StreamId::MAX`].
    pub fn next(self) -> Option<StreamId> {
        match self.seq.checked_add(1) {
            Some(seq) => Some(StreamId::new(self.ms, seq)),
            None => Some(StreamId::new(self.ms.checked_add(1)?, 0)),
        }
    }

    /// The ID right before this one; `None` before [`StreamId::ZERO`].
    pub fn prev(self) -> Option<StreamId> {
        match self.seq.checked_sub(1) {
            Some(seq) => Some(StreamId::new(self.ms, seq)),
            None => Some(StreamId::new(self.ms.checked_sub(1)?, u64::MAX)),
        }
    }

    /// The text form, `ms-seq`.
    pub fn format(self) -> Vec<u8> {
        let mut text = Vec::with_capacity(self.text_len());
        self.push_text(&mut text);
        text
    }

    /// Appends the text form to `out`: how replies write an ID without a
    /// buffer of its own.
    pub fn push_text(self, out: &mut Vec<u8>) {
        crate::num::push_u64(out, self.ms);
        out.push(b'-');
        crate::num::push_u64(out, self.seq);
    }

    /// Bytes of the text form.
    pub fn text_len(self) -> usize {
        crate::num::decimal_len(self.ms) + 1 + crate::num::decimal_len(self.seq)
    }

    /// Parses `ms-seq`, or `ms` alone (its sequence then `missing_seq`):
    /// the form IDs take as arguments, without the special `-`, `+`, `$`,
    /// `>` or `*`. `None` if it does not parse.
    pub fn parse(text: &[u8], missing_seq: u64) -> Option<StreamId> {
        let number = |part: &[u8]| -> Option<u64> {
            if part.is_empty() || !part.iter().all(u8::is_ascii_digit) {
                return None;
            }
            core::str::from_utf8(part).ok()?.parse().ok()
        };
        match text.iter().position(|&b| b == b'-') {
            Some(dash) => Some(StreamId::new(
                number(&text[..dash])?,
                number(&text[dash + 1..])?,
            )),
            None => Some(StreamId::new(number(text)?, missing_seq)),
        }
    }
}

/// One delivered, not yet acknowledged entry of a group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pending {
    /// The consumer it was delivered to.
    pub consumer: Vec<u8>,
    /// When it was last delivered, in milliseconds.
    pub delivered_ms: u64,
    /// How many times it was delivered.
    pub deliveries: u64,
}

/// A consumer of a group.
#[derive(Clone, Debug, Default)]
pub struct Consumer {
    /// When it last read or claimed, in milliseconds (`XINFO`'s idle).
    pub seen_ms: u64,
    /// The IDs pending for it.
    pub pending: BTreeSet<StreamId>,
}

/// Consumers are equal when the same entries are pending for them: when
/// they were last seen is a matter of the clock (a replayed log sees them
/// when it replays).
impl PartialEq for Consumer {
    fn eq(&self, other: &Self) -> bool {
        self.pending == other.pending
    }
}

impl Eq for Consumer {}

/// A consumer group.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Group {
    /// The last ID delivered to the group (`>` reads after it).
    pub last_id: StreamId,
    /// How many entries the group read, counted from the stream's first
    /// ever entry; `None` when not known (Redis's -1).
    pub entries_read: Option<u64>,
    /// Delivered entries not acknowledged (the PEL).
    pub pending: BTreeMap<StreamId, Pending>,
    /// The consumers, by name.
    pub consumers: BTreeMap<Vec<u8>, Consumer>,
}

impl Group {
    /// A group that delivers what comes after `last_id`.
    pub fn new(last_id: StreamId, entries_read: Option<u64>) -> Self {
        Group {
            last_id,
            entries_read,
            ..Group::default()
        }
    }

    /// Estimated bytes of the group, its name excluded.
    fn size(&self) -> usize {
        let consumers: usize = self
            .consumers
            .keys()
            .map(|name| name.len() + GROUP_OVERHEAD)
            .sum();
        GROUP_OVERHEAD + consumers + self.pending.len() * PENDING_OVERHEAD
    }

    /// Removes `id` from the PEL and from its consumer's pending set;
    /// whether it was pending.
    pub fn ack(&mut self, id: StreamId) -> bool {
        let Some(pending) = self.pending.remove(&id) else {
            return false;
        };
        if let Some(consumer) = self.consumers.get_mut(&pending.consumer) {
            consumer.pending.remove(&id);
        }
        true
    }

    /// Makes `id` pending for `consumer` (created if missing), delivered
    /// at `now` for the `deliveries`th time, taking it from whichever
    /// consumer held it.
    pub fn assign(&mut self, id: StreamId, consumer: &[u8], now: u64, deliveries: u64) {
        self.ack(id);
        self.consumers
            .entry(consumer.to_vec())
            .or_insert_with(|| Consumer {
                seen_ms: now,
                pending: BTreeSet::new(),
            })
            .pending
            .insert(id);
        self.pending.insert(
            id,
            Pending {
                consumer: consumer.to_vec(),
                delivered_ms: now,
                deliveries,
            },
        );
    }
}

/// A node boundary (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Node {
    /// The ID of the first entry put in it.
    first: StreamId,
    /// Entries ever put in it, deleted ones included.
    slots: u64,
    /// Bytes put in it, as a listpack would hold them.
    bytes: u64,
    /// Entries in it not deleted.
    live: u64,
}

/// How a trim chooses what to remove.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trim {
    /// Keep at most this many entries (`MAXLEN`).
    MaxLen(u64),
    /// Remove the entries below this ID (`MINID`).
    MinId(StreamId),
}

/// A stream's entries, its counters and its consumer groups.
#[derive(Clone, Debug, Default)]
pub struct Stream {
    entries: BTreeMap<StreamId, Vec<Vec<u8>>>,
    nodes: VecDeque<Node>,
    /// The last ID added (or set by `XSETID`).
    pub last_id: StreamId,
    /// The largest ID `XDEL` removed (or set by `XSETID`).
    pub max_deleted: StreamId,
    /// Entries ever added.
    pub entries_added: u64,
    /// The consumer groups, by name.
    pub groups: BTreeMap<Vec<u8>, Group>,
    /// Estimated bytes of the entries.
    entry_bytes: usize,
}

/// Streams are equal when their entries, counters and groups are: where
/// node boundaries fall depends on the settings and trims of the past
/// (a replayed log trims exactly what approximate trims removed).
impl PartialEq for Stream {
    fn eq(&self, other: &Self) -> bool {
        self.entries == other.entries
            && self.last_id == other.last_id
            && self.max_deleted == other.max_deleted
            && self.entries_added == other.entries_added
            && self.groups == other.groups
    }
}

impl Eq for Stream {}

/// The bytes an entry with `fields` costs.
fn entry_cost(fields: &[Vec<u8>]) -> usize {
    STREAM_ENTRY_OVERHEAD + fields.iter().map(|f| f.len() + 8).sum::<usize>()
}

impl Stream {
    /// An empty stream, last ID `0-0`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it has no entries (it may still have groups).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Estimated bytes of the whole stream, for `maxmemory`.
    pub fn size(&self) -> usize {
        let groups: usize = self
            .groups
            .iter()
            .map(|(name, g)| name.len() + g.size())
            .sum();
        self.entry_bytes + groups
    }

    /// The estimated bytes an entry of `fields` adds (see
    /// [`size`](Stream::size)).
    pub fn cost_of(fields: &[Vec<u8>]) -> usize {
        entry_cost(fields)
    }

    /// The first entry, if any.
    pub fn first(&self) -> Option<(StreamId, &[Vec<u8>])> {
        self.entries
            .iter()
            .next()
            .map(|(id, f)| (*id, f.as_slice()))
    }

    /// The last entry, if any.
    pub fn last(&self) -> Option<(StreamId, &[Vec<u8>])> {
        self.entries
            .iter()
            .next_back()
            .map(|(id, f)| (*id, f.as_slice()))
    }

    /// The fields and values of entry `id`, if it exists.
    pub fn get(&self, id: StreamId) -> Option<&[Vec<u8>]> {
        self.entries.get(&id).map(Vec::as_slice)
    }

    /// Entries from `start` to `end` (both included), in order.
    pub fn range(
        &self,
        start: StreamId,
        end: StreamId,
    ) -> impl DoubleEndedIterator<Item = (StreamId, &[Vec<u8>])> + Clone + '_ {
        let (start, end) = if start <= end {
            (start, end)
        } else {
            // An empty range (a BTreeMap range must not be inverted).
            (StreamId::MAX, StreamId::ZERO)
        };
        let range = match start <= end {
            true => Some(self.entries.range(start..=end)),
            false => None,
        };
        range
            .into_iter()
            .flatten()
            .map(|(id, f)| (*id, f.as_slice()))
    }

    /// Adds entry `id` (greater than [`last_id`](Stream::last_id), which
    /// the caller checked) with `fields` (field, value, ...).
    pub fn add(&mut self, id: StreamId, fields: Vec<Vec<u8>>, max_entries: u64, max_bytes: u64) {
        let cost = entry_cost(&fields);
        // What the entry takes in a node of Redis's (a listpack): its
        // bytes and a few of framing, not the memory estimate.
        let packed = 4 + fields.iter().map(|f| f.len() as u64 + 2).sum::<u64>();
        let full = self.nodes.back().is_none_or(|node| {
            (max_entries > 0 && node.slots >= max_entries)
                || (max_bytes > 0 && node.bytes + packed > max_bytes && node.slots > 0)
        });
        if full {
            self.nodes.push_back(Node {
                first: id,
                slots: 0,
                bytes: 0,
                live: 0,
            });
        }
        if let Some(node) = self.nodes.back_mut() {
            node.slots += 1;
            node.bytes += packed;
            node.live += 1;
        }
        self.entry_bytes += cost;
        self.entries.insert(id, fields);
        self.last_id = id;
        self.entries_added += 1;
    }

    /// The index of the node holding `id`.
    fn node_of(&self, id: StreamId) -> Option<usize> {
        let after = self.nodes.partition_point(|node| node.first <= id);
        after.checked_sub(1)
    }

    /// Removes entry `id`, counting it in its node; whether it existed.
    /// (`XDEL` also records it as [`max_deleted`](Stream::max_deleted).)
    pub fn remove(&mut self, id: StreamId) -> bool {
        let Some(fields) = self.entries.remove(&id) else {
            return false;
        };
        self.entry_bytes -= entry_cost(&fields);
        if let Some(at) = self.node_of(id) {
            let node = &mut self.nodes[at];
            node.live = node.live.saturating_sub(1);
            if node.live == 0 {
                self.nodes.remove(at);
            }
        }
        true
    }

    /// Trims by `how`: exactly, or when `approx` only whole nodes (Redis's
    /// `~`), removing at most `limit` entries then (0: no limit). Returns
    /// how many entries went.
    pub fn trim(&mut self, how: Trim, approx: bool, limit: u64) -> u64 {
        let mut removed = 0;
        if approx {
            while let Some(node) = self.nodes.front().copied() {
                if limit > 0 && removed + node.live > limit {
                    break;
                }
                let whole = match how {
                    Trim::MaxLen(max) => (self.len() as u64).saturating_sub(node.live) >= max,
                    Trim::MinId(min) => match self.nodes.get(1) {
                        // Every entry of the node is below the next node's first.
                        Some(next) => next.first <= min,
                        None => self.last().is_some_and(|(last, _)| last < min),
                    },
                };
                if !whole {
                    break;
                }
                let end = self.nodes.get(1).map(|n| n.first);
                let ids: Vec<StreamId> = self
                    .entries
                    .keys()
                    .take_while(|id| end.is_none_or(|end| **id < end))
                    .copied()
                    .collect();
                for id in ids {
                    if let Some(fields) = self.entries.remove(&id) {
                        self.entry_bytes -= entry_cost(&fields);
                        removed += 1;
                    }
                }
                self.nodes.pop_front();
            }
            return removed;
        }
        while let Some((first, _)) = self.first() {
            let goes = match how {
                Trim::MaxLen(max) => self.len() as u64 > max,
                Trim::MinId(min) => first < min,
            };
            if !goes {
                break;
            }
            self.remove(first);
            removed += 1;
        }
        removed
    }

    /// How many entries come before `id` since the first ever added,
    /// counted from the counters when they allow it (Redis's estimate of
    /// a group's entries read); `None` when deletions make it unknowable.
    pub fn distance_from_first(&self, id: StreamId) -> Option<u64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if self.is_empty() && id <= self.last_id {
            return Some(self.entries_added);
        }
        if id == self.last_id {
            return Some(self.entries_added);
        }
        if id > self.last_id {
            return None;
        }
        let first = self.first().map_or(self.last_id, |(id, _)| id);
        if self.max_deleted == StreamId::ZERO || self.max_deleted < first {
            let before = self.entries_added - self.len() as u64;
            if id < first {
                return Some(before);
            }
            if id == first {
                return Some(before + 1);
            }
        }
        None
    }

    /// Whether an entry deleted by `XDEL` lies between `start` and the
    /// end of the stream (so counting entries read from `start` on would
    /// go wrong).
    pub fn deleted_after(&self, start: StreamId) -> bool {
        if self.is_empty() || self.max_deleted == StreamId::ZERO {
            return false;
        }
        self.max_deleted >= start
    }

    /// A group's lag: entries added that it has not read; `None` when
    /// not known.
    pub fn lag(&self, group: &Group) -> Option<u64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        match group.entries_read {
            Some(read) if !self.deleted_after(group.last_id) => {
                Some(self.entries_added.saturating_sub(read))
            }
            _ => self
                .distance_from_first(group.last_id)
                .map(|read| self.entries_added.saturating_sub(read)),
        }
    }

    /// The ID of the first entry, or `0-0` when empty (`XINFO`'s
    /// recorded-first-entry-id).
    pub fn first_id(&self) -> StreamId {
        self.first().map_or(StreamId::ZERO, |(id, _)| id)
    }

    /// Nodes the entries take (`XINFO STREAM`'s radix-tree-keys).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn fields() -> Vec<Vec<u8>> {
        vec![b"f".to_vec(), b"v".to_vec()]
    }

    #[test]
    fn ids_parse_format_and_step() {
        assert_eq!(StreamId::parse(b"5-3", 0), Some(StreamId::new(5, 3)));
        assert_eq!(StreamId::parse(b"5", 9), Some(StreamId::new(5, 9)));
        for bad in [
            &b""[..],
            b"-",
            b"5-",
            b"-5",
            b"a-1",
            b"1-2-3",
            b"18446744073709551616",
        ] {
            assert_eq!(StreamId::parse(bad, 0), None, "{bad:?}");
        }
        assert_eq!(StreamId::new(1, u64::MAX).next(), Some(StreamId::new(2, 0)));
        assert_eq!(StreamId::MAX.next(), None);
        assert_eq!(StreamId::new(2, 0).prev(), Some(StreamId::new(1, u64::MAX)));
        assert_eq!(StreamId::ZERO.prev(), None);
        assert_eq!(StreamId::new(7, 1).format(), b"7-1");
        for id in [StreamId::ZERO, StreamId::MAX, StreamId::new(10, 99)] {
            let text = alloc::format!("{}-{}", id.ms, id.seq);
            assert_eq!(id.format(), text.as_bytes());
            assert_eq!(id.text_len(), text.len());
        }
    }

    #[test]
    fn approximate_trims_remove_whole_nodes_only() {
        let mut s = Stream::new();
        for i in 1..=101 {
            s.add(StreamId::new(i, 0), fields(), 10, 0);
        }
        assert_eq!(s.trim(Trim::MaxLen(55), true, 30), 30);
        assert_eq!(s.len(), 71);
        assert_eq!(s.trim(Trim::MaxLen(55), true, 0), 10);
        assert_eq!(s.len(), 61);
        assert_eq!(s.trim(Trim::MaxLen(55), false, 0), 6);
        assert_eq!(s.first_id(), StreamId::new(47, 0));
        assert_eq!(s.trim(Trim::MinId(StreamId::new(60, 0)), true, 0), 4);
        assert_eq!(s.trim(Trim::MinId(StreamId::new(60, 0)), false, 0), 9);
        assert_eq!(s.entries_added, 101);
        assert!(s.remove(StreamId::new(60, 0)));
        assert!(!s.remove(StreamId::new(60, 0)));
        assert_eq!(s.len(), 41);
    }

    #[test]
    fn size_follows_entries_and_groups() {
        let mut s = Stream::new();
        assert_eq!(s.size(), 0);
        s.add(StreamId::new(1, 0), fields(), 100, 4096);
        let one = s.size();
        assert!(one > 0);
        s.groups
            .insert(b"g".to_vec(), Group::new(StreamId::ZERO, None));
        s.groups
            .get_mut(&b"g"[..])
            .unwrap()
            .assign(StreamId::new(1, 0), b"c", 5, 1);
        assert!(s.size() > one + PENDING_OVERHEAD);
        s.groups.clear();
        s.remove(StreamId::new(1, 0));
        assert_eq!(s.size(), 0);
    }
}
