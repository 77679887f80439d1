//! Set values: one key holding distinct members (`SADD`, `SISMEMBER`,
//! `SINTER`, ...).
//!
//! A set whose members are all integers (in Redis's strict decimal form:
//! no sign but `-`, no leading zeros) is kept as a sorted array of `i64`s
//! while it has at most `set-max-intset-entries` members (`OBJECT
//! ENCODING` says `intset`, as Redis does): eight bytes a member, and a
//! lookup is a binary search. A member that is not an integer, or one
//! member too many, turns it into a map for good (`hashtable`), ordered
//! like keys in the keyspace so that `SSCAN` walks it with the same cursor
//! as `SCAN` (see the `key` module). Beside the map, a vector of slots
//! holds each member's hash at a position of its own, so a member can be
//! picked at random (`SPOP`, `SRANDMEMBER`) by a random position and a
//! lookup, not a walk: each member records its slot, and a removal moves
//! the last slot into the freed one.
//!
//! ```text
//!  intset   [-5][3][17][1000]            sorted i64s
//!     │ "apple", or member 513
//!     ▼
//!  map      members by a hash of their bytes, then the bytes ──► slot
//!  slots    [hash of member at slot 0][hash at slot 1] ...
//! ```
//!
//! This is Redis 7.0's choice: there is no compact form for small sets of
//! strings (Redis 7.2 added `listpack` for them).

use alloc::collections::{BTreeMap, TryReserveError};
use alloc::vec::Vec;
use core::ops::{Bound, Deref};

use super::key::{self, KeyView, Probe, StoredKey};
use crate::num::parse_i64;

/// Estimated bytes one member costs in the map form beyond its own bytes:
/// its share of a map node, its header, its slot and allocator overhead.
/// An estimate for `maxmemory`, like [`ENTRY_OVERHEAD`](super::ENTRY_OVERHEAD).
pub const MEMBER_OVERHEAD: usize = 56;

/// Bytes one member of an `intset` takes.
pub const INT_MEMBER_SIZE: usize = 8;

/// Longest decimal text of an `i64` (`-9223372036854775808`).
const INT_TEXT: usize = 20;

/// The members of one set key, with the memory they use.
#[derive(Clone, Debug)]
pub struct Set {
    form: Form,
    /// Bytes of all members: eight per member as an intset, the map
    /// estimate (see [`Set::member_cost`]) as a map.
    size: usize,
}

/// The two ways a set is kept (see the module's documentation).
#[derive(Clone, Debug)]
enum Form {
    /// Integers, ascending, no duplicates.
    Ints(Vec<i64>),
    Map(Table),
}

/// The map form: members in keyspace order, each with its slot, and the
/// slots (see the module's documentation).
#[derive(Clone, Debug, Default)]
struct Table {
    members: BTreeMap<StoredKey, usize>,
    /// The hash of the member whose slot this is, for each slot.
    slots: Vec<u64>,
}

impl Table {
    /// The slot record of the member holding `slot`, whose hash is
    /// `hash`: among the members with that hash (one, unless hashes
    /// collide), the one that records it.
    fn holder(&mut self, hash: u64, slot: usize) -> Option<&mut usize> {
        let from = Probe::at(hash);
        let range = (Bound::Included(&from as &dyn KeyView), Bound::Unbounded);
        self.members
            .range_mut::<dyn KeyView, _>(range)
            .take_while(|(m, _)| m.hash() == hash)
            .map(|(_, at)| at)
            .find(|at| **at == slot)
    }

    /// Adds `member` (not there yet) in a new last slot.
    fn insert(&mut self, member: StoredKey) {
        self.slots.push(member.hash());
        self.members.insert(member, self.slots.len() - 1);
    }

    /// Removes `member`; returns whether it was there. The last slot moves
    /// into the freed one.
    fn remove(&mut self, member: &[u8]) -> bool {
        let Some(slot) = self.members.remove(&Probe::new(member) as &dyn KeyView) else {
            return false;
        };
        let last = self.slots.len() - 1;
        self.slots.swap_remove(slot);
        if slot != last {
            // The member of the last slot, moved, still records `last`.
            if let Some(at) = self.holder(self.slots[slot], last) {
                *at = slot;
            }
        }
        true
    }
}

/// One member, borrowed from a [`Set`] or, for an intset, written out as
/// decimal text on the stack. Dereferences to the member's bytes.
#[derive(Clone, Copy, Debug)]
pub enum Member<'a> {
    /// A member of the map form, as stored.
    Bytes(&'a [u8]),
    /// A member of an intset: its text and the text's length.
    Int([u8; INT_TEXT], u8),
}

impl Member<'_> {
    /// The text of `n`, as Redis replies with an intset's members.
    pub fn int(n: i64) -> Member<'static> {
        let mut text = [0u8; INT_TEXT];
        let mut at = INT_TEXT;
        let mut rest = n.unsigned_abs();
        loop {
            at -= 1;
            text[at] = b'0' + (rest % 10) as u8;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        if n < 0 {
            at -= 1;
            text[at] = b'-';
        }
        let len = INT_TEXT - at;
        text.copy_within(at.., 0);
        Member::Int(text, len as u8)
    }
}

impl Deref for Member<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Member::Bytes(bytes) => bytes,
            Member::Int(text, len) => &text[..usize::from(*len)],
        }
    }
}

/// Two members are equal when their bytes are, however each is held.
impl PartialEq for Member<'_> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for Member<'_> {}

/// Members order by their bytes, however each is held (sorted-set
/// algebra keys a map by them).
impl Ord for Member<'_> {
    fn cmp(&self, other: &Self) -> core::cmp::Ordering {
        (**self).cmp(&**other)
    }
}

impl PartialOrd for Member<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<core::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// Two sets are equal when they hold the same members, whatever their
/// forms.
impl PartialEq for Set {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().all(|m| other.contains(&m))
    }
}

impl Eq for Set {}

impl Default for Set {
    fn default() -> Self {
        Set {
            form: Form::Ints(Vec::new()),
            size: 0,
        }
    }
}

/// `member` as an intset keeps it, if it is an integer in canonical form
/// (what Redis's strict parser accepts: `-0`, `+1`, `01` and ` 1` are
/// strings).
fn as_int(member: &[u8]) -> Option<i64> {
    parse_i64(member)
}

impl Set {
    /// An empty set, an intset until a member says otherwise (a key never
    /// holds one: the store removes a set key whose last member goes).
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of members (`SCARD`).
    pub fn len(&self) -> usize {
        match &self.form {
            Form::Ints(ints) => ints.len(),
            Form::Map(table) => table.members.len(),
        }
    }

    /// Whether there are no members.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Memory of the members, in bytes: what the set adds to its key's
    /// cost in the store.
    pub fn size(&self) -> usize {
        self.size
    }

    /// What one member of `len` bytes costs in the set's present form.
    pub fn member_cost(&self, len: usize) -> usize {
        match self.form {
            Form::Ints(_) => INT_MEMBER_SIZE,
            Form::Map(_) => Self::map_member_cost(len),
        }
    }

    /// What one member of `len` bytes costs in the map form: the most a
    /// member can cost, so what `maxmemory` checks reckon with.
    pub fn map_member_cost(len: usize) -> usize {
        len + MEMBER_OVERHEAD
    }

    /// The most the members would cost as a map: an upper bound of what a
    /// set built from them costs, whatever its form.
    pub fn size_as_map(&self) -> usize {
        match &self.form {
            Form::Ints(ints) => ints.len() * Self::map_member_cost(INT_TEXT),
            Form::Map(_) => self.size,
        }
    }

    /// `OBJECT ENCODING`'s name for the form the set is in.
    pub fn encoding(&self) -> &'static str {
        match self.form {
            Form::Ints(_) => "intset",
            Form::Map(_) => "hashtable",
        }
    }

    /// Whether `member` is in the set.
    pub fn contains(&self, member: &[u8]) -> bool {
        match &self.form {
            Form::Ints(ints) => as_int(member).is_some_and(|n| ints.binary_search(&n).is_ok()),
            Form::Map(table) => table
                .members
                .contains_key(&Probe::new(member) as &dyn KeyView),
        }
    }

    /// Makes room for `more` members without adding them, so that adding
    /// many either fits or fails before changing anything (a map's nodes
    /// are allocated one by one, as a keyspace's are; its slots at once).
    pub fn try_reserve(&mut self, more: usize) -> Result<(), TryReserveError> {
        match &mut self.form {
            Form::Ints(ints) => ints.try_reserve(more),
            Form::Map(table) => table.slots.try_reserve(more),
        }
    }

    /// Adds a copy of `member`; returns whether it is new. An intset turns
    /// into a map when `member` is not an integer or would be one more
    /// than `max_ints` (`set-max-intset-entries`).
    pub fn insert(&mut self, member: &[u8], max_ints: usize) -> bool {
        if let Form::Ints(ints) = &mut self.form {
            if let Some(n) = as_int(member) {
                match ints.binary_search(&n) {
                    Ok(_) => return false,
                    Err(at) if ints.len() < max_ints => {
                        ints.insert(at, n);
                        self.size += INT_MEMBER_SIZE;
                        return true;
                    }
                    Err(_) => {}
                }
            }
            self.convert_to_map();
        }
        let Form::Map(table) = &mut self.form else {
            unreachable!("a set past its intset limits is a map");
        };
        if table
            .members
            .contains_key(&Probe::new(member) as &dyn KeyView)
        {
            return false;
        }
        self.size += Self::map_member_cost(member.len());
        table.insert(StoredKey::new(member));
        true
    }

    /// Removes `member`; returns whether it was there. A map stays a map.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        match &mut self.form {
            Form::Ints(ints) => {
                let Some(at) = as_int(member).and_then(|n| ints.binary_search(&n).ok()) else {
                    return false;
                };
                ints.remove(at);
                self.size -= INT_MEMBER_SIZE;
                true
            }
            Form::Map(table) => {
                let removed = table.remove(member);
                if removed {
                    self.size -= Self::map_member_cost(member.len());
                }
                removed
            }
        }
    }

    /// Every member: ascending as an intset, in hash order as a map.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Member<'_>> + '_ {
        let (ints, map) = match &self.form {
            Form::Ints(ints) => (ints.as_slice(), None),
            Form::Map(table) => (&[][..], Some(&table.members)),
        };
        Members {
            ints: ints.iter(),
            map: map.map(|m| m.keys()),
        }
    }

    /// The member at position `index` (below [`len`](Set::len); `None`
    /// past the end) of an order of its own, for picking members at random
    /// (each position names one member): an intset's ascending order, a
    /// map's slots. A lookup, not a walk.
    pub fn nth(&self, index: usize) -> Option<Member<'_>> {
        match &self.form {
            Form::Ints(ints) => ints.get(index).map(|&n| Member::int(n)),
            Form::Map(table) => {
                let hash = *table.slots.get(index)?;
                let from = Probe::at(hash);
                let range = (Bound::Included(&from as &dyn KeyView), Bound::Unbounded);
                table
                    .members
                    .range::<dyn KeyView, _>(range)
                    .take_while(|(m, _)| m.hash() == hash)
                    .find(|(_, &at)| at == index)
                    .map(|(m, _)| Member::Bytes(m.bytes()))
            }
        }
    }

    /// One step of `SSCAN`: members from position `cursor` on, at least
    /// `count` of them, and the cursor to continue from (0 when done). See
    /// [`Store::scan`](super::Store::scan) for the guarantee. An intset
    /// comes whole in the first step, as Redis sends it.
    pub fn scan(&self, cursor: u64, count: usize) -> (u64, Vec<Member<'_>>) {
        match &self.form {
            Form::Ints(_) => (0, self.iter().collect()),
            Form::Map(table) => {
                let (next, found) = key::scan(&table.members, cursor, count);
                (
                    next,
                    found.into_iter().map(|(m, _)| Member::Bytes(m)).collect(),
                )
            }
        }
    }

    /// Moves an intset's members into the map form.
    fn convert_to_map(&mut self) {
        let mut table = Table::default();
        let mut size = 0;
        for member in self.iter() {
            size += Self::map_member_cost(member.len());
            table.insert(StoredKey::new(&member));
        }
        self.form = Form::Map(table);
        self.size = size;
    }
}

/// The iterator of [`Set::iter`]: one of the two forms' members.
struct Members<'a, M> {
    ints: core::slice::Iter<'a, i64>,
    map: Option<M>,
}

impl<'a, M: Iterator<Item = &'a StoredKey> + ExactSizeIterator> Iterator for Members<'a, M> {
    type Item = Member<'a>;

    fn next(&mut self) -> Option<Member<'a>> {
        match &mut self.map {
            Some(map) => map.next().map(|m| Member::Bytes(m.bytes())),
            None => self.ints.next().map(|&n| Member::int(n)),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let len = match &self.map {
            Some(map) => map.len(),
            None => self.ints.len(),
        };
        (len, Some(len))
    }
}

impl<'a, M: Iterator<Item = &'a StoredKey> + ExactSizeIterator> ExactSizeIterator
    for Members<'a, M>
{
}

impl Set {
    /// Whether the map form's slots and members agree (always true for an
    /// intset): every slot is recorded by a member of its hash, and every
    /// member records its own slot. What the tests and the fuzz targets
    /// check after changes, since random picks rely on it.
    pub fn slots_consistent(&self) -> bool {
        let Form::Map(table) = &self.form else {
            return true;
        };
        table.slots.len() == table.members.len()
            && (0..table.slots.len()).all(|i| self.nth(i).is_some())
            && table
                .members
                .iter()
                .all(|(m, &at)| table.slots.get(at) == Some(&m.hash()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::collections::BTreeSet;
    use alloc::format;

    fn texts(set: &Set) -> Vec<Vec<u8>> {
        set.iter().map(|m| m.to_vec()).collect()
    }

    #[test]
    fn integers_are_kept_sorted_in_an_intset() {
        let mut set = Set::new();
        for m in ["17", "-5", "1000", "3", "17"] {
            set.insert(m.as_bytes(), 512);
        }
        assert_eq!(set.encoding(), "intset");
        assert_eq!(set.len(), 4);
        assert_eq!(set.size(), 4 * INT_MEMBER_SIZE);
        assert_eq!(texts(&set), [&b"-5"[..], b"3", b"17", b"1000"]);
        assert!(set.contains(b"17"));
        assert!(!set.contains(b"017"), "not the same member");
        assert!(set.remove(b"3"));
        assert!(!set.remove(b"3"));
        assert!(!set.remove(b"apple"));
        assert_eq!(set.nth(1).as_deref(), Some(&b"17"[..]));
        assert_eq!(
            set.scan(0, 1),
            (0, set.iter().collect()),
            "whole in one step"
        );
    }

    #[test]
    fn a_string_or_one_integer_too_many_makes_a_map_for_good() {
        let mut set = Set::new();
        for m in ["1", "2", "3"] {
            set.insert(m.as_bytes(), 3);
        }
        assert_eq!(set.encoding(), "intset");
        assert!(set.insert(b"4", 3));
        assert_eq!(set.encoding(), "hashtable", "a fourth member");
        assert_eq!(set.size(), 4 * Set::map_member_cost(1));
        set.remove(b"4");
        set.remove(b"3");
        assert_eq!(set.encoding(), "hashtable", "no way back");
        assert!(set.contains(b"1"));

        let mut words = Set::new();
        words.insert(b"7", 512);
        words.insert(b"apple", 512);
        assert_eq!(words.encoding(), "hashtable");
        assert!(words.contains(b"7") && words.contains(b"apple"));
        for not_canonical in ["-0", "+1", "01", " 1", "9223372036854775808"] {
            let mut set = Set::new();
            set.insert(not_canonical.as_bytes(), 512);
            assert_eq!(set.encoding(), "hashtable", "{not_canonical}");
        }
    }

    #[test]
    fn extreme_integers_read_back_as_they_were_written() {
        let mut set = Set::new();
        for n in [i64::MIN, i64::MAX, 0, -1] {
            set.insert(format!("{n}").as_bytes(), 512);
        }
        assert_eq!(set.encoding(), "intset");
        let back: Vec<String> = set
            .iter()
            .map(|m| String::from_utf8(m.to_vec()).unwrap())
            .collect();
        assert_eq!(
            back,
            ["-9223372036854775808", "-1", "0", "9223372036854775807"]
        );
    }

    #[test]
    fn equal_members_are_equal_sets_in_either_form() {
        let mut ints = Set::new();
        let mut map = Set::new();
        for m in ["1", "2"] {
            ints.insert(m.as_bytes(), 512);
            map.insert(m.as_bytes(), 0);
        }
        assert_eq!((ints.encoding(), map.encoding()), ("intset", "hashtable"));
        assert_eq!(ints, map);
        map.insert(b"x", 0);
        assert_ne!(ints, map);
    }

    #[test]
    fn every_position_names_one_member_however_members_come_and_go() {
        let mut set = Set::new();
        let mut rng = faultline_rng::Rng::new(12345);
        for i in 0..1000 {
            set.insert(format!("m{i}").as_bytes(), 512);
        }
        assert_eq!(set.encoding(), "hashtable");
        for round in 0..700 {
            let victim = format!("m{}", rng.below(1000));
            set.remove(victim.as_bytes());
            if round % 3 == 0 {
                set.insert(format!("n{round}").as_bytes(), 512);
            }
            assert!(set.slots_consistent(), "round {round}");
        }
        let by_position: BTreeSet<Vec<u8>> = (0..set.len())
            .map(|i| set.nth(i).unwrap().to_vec())
            .collect();
        let all: BTreeSet<Vec<u8>> = set.iter().map(|m| m.to_vec()).collect();
        assert_eq!(by_position, all, "each member at one position");
        assert_eq!(by_position.len(), set.len());
        assert_eq!(set.nth(set.len()), None);
        let mut ints = Set::new();
        ints.insert(b"5", 512);
        ints.insert(b"-5", 512);
        assert!(ints.slots_consistent());
        assert_eq!(ints.nth(0).as_deref(), Some(&b"-5"[..]));
    }

    #[test]
    fn a_scan_visits_every_member_of_a_map() {
        let mut set = Set::new();
        for i in 0..500 {
            set.insert(format!("m{i}").as_bytes(), 512);
        }
        assert_eq!(
            set.size(),
            set.iter().map(|m| Set::map_member_cost(m.len())).sum()
        );
        let (mut cursor, mut seen) = (0, BTreeSet::new());
        loop {
            let (next, batch) = set.scan(cursor, 7);
            seen.extend(batch.into_iter().map(|m| m.to_vec()));
            if next == 0 {
                break;
            }
            assert!(next > cursor);
            cursor = next;
        }
        assert_eq!(seen.len(), 500);
        assert_eq!(set.iter().len(), 500);
    }
}
