//! Hash values: one key holding a map of fields to values (`HSET`,
//! `HGET`, ...).
//!
//! A small hash is kept compact: every field and value one after the
//! other in a single buffer, each behind its length (`OBJECT ENCODING`
//! calls that form `listpack`, as Redis does). Lookups scan it, which for
//! a few dozen short fields costs less than a map's nodes. Once the hash
//! has more fields than `hash-max-listpack-entries`, or a field or value
//! longer than `hash-max-listpack-value` bytes, it becomes a map for good
//! (`hashtable`):
//!
//! ```text
//!  compact  [len f1][f1][len v1][v1][len f2][f2][len v2][v2] ...
//!     │ a field past the limits
//!     ▼
//!  map      fields ordered like keys in the keyspace (by a hash of the
//!           field, then its bytes, see the `key` module)
//! ```
//!
//! `HSCAN` walks the map with the same kind of cursor as `SCAN` and the
//! same guarantee (a field present for the whole scan is returned at least
//! once); a compact hash is returned whole in one step.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use super::key::{self, KeyView, Probe, StoredKey};

/// Estimated bytes one field costs in the map form beyond its field and
/// value bytes: its share of a map node, two headers and allocator
/// overhead. Like [`ENTRY_OVERHEAD`](super::ENTRY_OVERHEAD), an estimate
/// for `maxmemory`, and an upper bound of what a field costs compact.
pub const FIELD_OVERHEAD: usize = 48;

/// One field and its value, borrowed from a [`Hash`].
pub type FieldValue<'a> = (&'a [u8], &'a [u8]);

/// Up to what size a hash stays compact (`hash-max-listpack-entries` and
/// `hash-max-listpack-value`, Redis's defaults 128 and 64).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompactLimits {
    /// Most fields.
    pub entries: usize,
    /// Longest field or value, in bytes.
    pub value: usize,
}

impl Default for CompactLimits {
    fn default() -> Self {
        CompactLimits {
            entries: 128,
            value: 64,
        }
    }
}

/// The fields and values of one hash key, with the memory they use.
#[derive(Clone, Debug)]
pub struct Hash {
    form: Form,
    /// Bytes of all fields: the compact buffer's length, or the map
    /// estimate (see [`Hash::field_cost`]).
    size: usize,
}

/// The two ways a hash is kept (see the module's documentation).
#[derive(Clone, Debug)]
enum Form {
    /// `len`-prefixed fields and values in one buffer, in insertion order.
    Compact {
        bytes: Vec<u8>,
        len: usize,
    },
    Map(BTreeMap<StoredKey, Vec<u8>>),
}

/// Two hashes are equal when they hold the same fields and values, kept
/// compact or not.
impl PartialEq for Hash {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().all(|(f, v)| other.get(f) == Some(v))
    }
}

impl Eq for Hash {}

impl Default for Hash {
    fn default() -> Self {
        Hash {
            form: Form::Compact {
                bytes: Vec::new(),
                len: 0,
            },
            size: 0,
        }
    }
}

impl Hash {
    /// An empty hash, compact (a key never holds one: the store removes a
    /// hash key whose last field goes).
    pub fn new() -> Self {
        Self::default()
    }

    /// Estimated memory one field of `field_len` bytes holding `value_len`
    /// bytes costs in the map form (at least what it costs compact).
    pub fn field_cost(field_len: usize, value_len: usize) -> usize {
        field_len + value_len + FIELD_OVERHEAD
    }

    /// Number of fields (`HLEN`).
    pub fn len(&self) -> usize {
        match &self.form {
            Form::Compact { len, .. } => *len,
            Form::Map(map) => map.len(),
        }
    }

    /// Whether there are no fields.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Memory of the fields and values, in bytes: what the hash adds to
    /// its key's cost in the store.
    pub fn size(&self) -> usize {
        self.size
    }

    /// `OBJECT ENCODING`'s name for the form the hash is in.
    pub fn encoding(&self) -> &'static str {
        match self.form {
            Form::Compact { .. } => "listpack",
            Form::Map(_) => "hashtable",
        }
    }

    /// The value of `field`, if the hash has it.
    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match &self.form {
            Form::Compact { bytes, .. } => compact::find(bytes, field).map(|at| at.value(bytes)),
            Form::Map(map) => map
                .get(&Probe::new(field) as &dyn KeyView)
                .map(Vec::as_slice),
        }
    }

    /// Whether the hash has `field`.
    pub fn contains(&self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    /// Sets `field` to `value`; returns whether the field is new. A hash
    /// that would outgrow `limits` becomes a map first; in the map, field
    /// and value are kept in the memory they come in.
    pub fn insert(&mut self, field: Vec<u8>, value: Vec<u8>, limits: CompactLimits) -> bool {
        if let Form::Compact { bytes, len } = &mut self.form {
            let fits = field.len() <= limits.value && value.len() <= limits.value;
            match compact::find(bytes, &field) {
                Some(at) if fits => {
                    bytes.splice(at.value_range(), compact::encode(&value));
                    self.size = bytes.len();
                    return false;
                }
                None if fits && *len < limits.entries => {
                    bytes.extend(compact::encode(&field));
                    bytes.extend(compact::encode(&value));
                    *len += 1;
                    self.size = bytes.len();
                    return true;
                }
                _ => self.convert_to_map(),
            }
        }
        let Form::Map(map) = &mut self.form else {
            unreachable!("a hash past its compact limits is a map");
        };
        let probe = Probe::new(&field);
        if let Some(slot) = map.get_mut(&probe as &dyn KeyView) {
            self.size = self.size - slot.len() + value.len();
            *slot = value;
            return false;
        }
        self.size += Self::field_cost(field.len(), value.len());
        map.insert(StoredKey::from_vec(field), value);
        true
    }

    /// Removes `field`; returns whether it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match &mut self.form {
            Form::Compact { bytes, len } => {
                let Some(at) = compact::find(bytes, field) else {
                    return false;
                };
                bytes.drain(at.entry_range());
                *len -= 1;
                self.size = bytes.len();
                true
            }
            Form::Map(map) => match map.remove(&Probe::new(field) as &dyn KeyView) {
                Some(value) => {
                    self.size -= Self::field_cost(field.len(), value.len());
                    true
                }
                None => false,
            },
        }
    }

    /// Every field and its value: in insertion order when compact, in
    /// field order as a map.
    pub fn iter(&self) -> impl Iterator<Item = FieldValue<'_>> + '_ {
        let (compact, map) = match &self.form {
            Form::Compact { bytes, .. } => (Some(compact::Fields { rest: bytes }), None),
            Form::Map(map) => (
                None,
                Some(map.iter().map(|(f, v)| (f.bytes(), v.as_slice()))),
            ),
        };
        compact
            .into_iter()
            .flatten()
            .chain(map.into_iter().flatten())
    }

    /// One step of `HSCAN`: fields from position `cursor` on, at least
    /// `count` of them, and the cursor to continue from (0 when done). See
    /// [`Store::scan`](super::Store::scan) for the guarantee. A compact
    /// hash comes whole in the first step.
    pub fn scan(&self, cursor: u64, count: usize) -> (u64, Vec<FieldValue<'_>>) {
        match &self.form {
            Form::Compact { .. } => (0, self.iter().collect()),
            Form::Map(map) => {
                let (next, found) = key::scan(map, cursor, count);
                let found = found.into_iter().map(|(f, v)| (f, v.as_slice())).collect();
                (next, found)
            }
        }
    }

    /// Moves a compact hash's fields into the map form.
    fn convert_to_map(&mut self) {
        let mut map = BTreeMap::new();
        let mut size = 0;
        for (field, value) in self.iter() {
            size += Self::field_cost(field.len(), value.len());
            map.insert(StoredKey::from_vec(field.to_vec()), value.to_vec());
        }
        self.form = Form::Map(map);
        self.size = size;
    }
}

/// The compact form's buffer: each field and each value behind its length
/// as a LEB128 number (one byte up to 127).
mod compact {
    use core::ops::Range;

    /// `bytes` behind their length.
    pub fn encode(bytes: &[u8]) -> impl Iterator<Item = u8> + '_ {
        let mut len = bytes.len();
        let mut prefix = [0u8; 10];
        let mut n = 0;
        loop {
            let low = (len & 0x7f) as u8;
            len >>= 7;
            prefix[n] = low | if len > 0 { 0x80 } else { 0 };
            n += 1;
            if len == 0 {
                break;
            }
        }
        prefix.into_iter().take(n).chain(bytes.iter().copied())
    }

    /// The length-prefixed item at the start of `rest`, and what follows
    /// it; `None` at the end. The buffer is only ever written by
    /// [`encode`], so a cut-short item cannot occur; it reads as the end.
    fn next(rest: &[u8]) -> Option<(&[u8], &[u8])> {
        let (mut len, mut shift, mut i) = (0usize, 0u32, 0);
        loop {
            let byte = *rest.get(i)?;
            len |= usize::from(byte & 0x7f).checked_shl(shift)?;
            i += 1;
            shift += 7;
            if byte & 0x80 == 0 {
                break;
            }
        }
        let end = i.checked_add(len).filter(|&end| end <= rest.len())?;
        Some((&rest[i..end], &rest[end..]))
    }

    /// Where one field's entry lies in the buffer.
    pub struct At {
        start: usize,
        value: Range<usize>,
    }

    impl At {
        /// The value's bytes.
        pub fn value<'a>(&self, bytes: &'a [u8]) -> &'a [u8] {
            let (value, _) = next(&bytes[self.value.clone()]).unwrap_or_default();
            value
        }

        /// The value with its length prefix.
        pub fn value_range(&self) -> Range<usize> {
            self.value.clone()
        }

        /// The field and the value with their prefixes.
        pub fn entry_range(&self) -> Range<usize> {
            self.start..self.value.end
        }
    }

    /// The entry of `field`, if the buffer has it.
    pub fn find(bytes: &[u8], field: &[u8]) -> Option<At> {
        let mut rest = bytes;
        loop {
            let start = bytes.len() - rest.len();
            let (name, after_name) = next(rest)?;
            let (_, after_value) = next(after_name)?;
            if name == field {
                let value_start = bytes.len() - after_name.len();
                let value_end = bytes.len() - after_value.len();
                return Some(At {
                    start,
                    value: value_start..value_end,
                });
            }
            rest = after_value;
        }
    }

    /// The fields and values of a buffer, in order.
    pub struct Fields<'a> {
        pub rest: &'a [u8],
    }

    impl<'a> Iterator for Fields<'a> {
        type Item = (&'a [u8], &'a [u8]);

        fn next(&mut self) -> Option<Self::Item> {
            let (field, after_field) = next(self.rest)?;
            let (value, after_value) = next(after_field)?;
            self.rest = after_value;
            Some((field, value))
        }
    }

    /// Used by the tests: a buffer from fields and values.
    #[cfg(test)]
    pub fn build(pairs: &[(&[u8], &[u8])]) -> alloc::vec::Vec<u8> {
        pairs
            .iter()
            .flat_map(|(f, v)| encode(f).chain(encode(v)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::collections::BTreeSet;
    use alloc::format;

    const MAP: CompactLimits = CompactLimits {
        entries: 0,
        value: 0,
    };

    #[test]
    fn fields_are_set_replaced_and_removed_with_their_cost() {
        let mut hash = Hash::new();
        assert!(hash.insert(b"name".to_vec(), b"ada".to_vec(), MAP));
        assert_eq!(hash.encoding(), "hashtable");
        assert_eq!(hash.size(), Hash::field_cost(4, 3));
        assert!(
            !hash.insert(b"name".to_vec(), b"grace".to_vec(), MAP),
            "replaced"
        );
        assert_eq!(hash.get(b"name"), Some(&b"grace"[..]));
        assert_eq!(hash.size(), Hash::field_cost(4, 5));
        assert!(hash.insert(b"age".to_vec(), b"36".to_vec(), MAP));
        assert_eq!(hash.len(), 2);
        assert!(hash.remove(b"name"));
        assert!(!hash.remove(b"name"));
        assert_eq!(hash.size(), Hash::field_cost(3, 2));
        assert!(hash.remove(b"age"));
        assert!(hash.is_empty());
        assert_eq!(hash.size(), 0);
    }

    #[test]
    fn a_small_hash_is_one_buffer_in_insertion_order() {
        let mut hash = Hash::new();
        let limits = CompactLimits::default();
        assert!(hash.insert(b"b".to_vec(), b"2".to_vec(), limits));
        assert!(hash.insert(b"a".to_vec(), b"1".to_vec(), limits));
        assert!(!hash.insert(b"b".to_vec(), b"two".to_vec(), limits));
        assert_eq!(hash.encoding(), "listpack");
        let pairs: Vec<_> = hash.iter().collect();
        assert_eq!(pairs, [(&b"b"[..], &b"two"[..]), (&b"a"[..], &b"1"[..])]);
        assert_eq!(
            hash.size(),
            compact::build(&[(b"b", b"two"), (b"a", b"1")]).len()
        );
        assert_eq!(hash.size(), 10, "6 bytes, each item behind a length byte");
        assert_eq!(hash.scan(0, 1), (0, pairs), "whole in one step");
        assert!(hash.remove(b"b"));
        assert_eq!(hash.get(b"a"), Some(&b"1"[..]));
        assert_eq!((hash.len(), hash.size()), (1, 4));
    }

    #[test]
    fn a_hash_becomes_a_map_past_either_limit_and_stays_one() {
        let limits = CompactLimits {
            entries: 3,
            value: 8,
        };
        let mut many = Hash::new();
        for i in 0..3 {
            many.insert(format!("f{i}").into_bytes(), b"v".to_vec(), limits);
        }
        assert_eq!(many.encoding(), "listpack");
        many.insert(b"f3".to_vec(), b"v".to_vec(), limits);
        assert_eq!(many.encoding(), "hashtable", "a fourth field");
        assert_eq!(many.size(), 4 * Hash::field_cost(2, 1));
        many.remove(b"f3");
        many.remove(b"f2");
        assert_eq!(many.encoding(), "hashtable", "no way back");

        let mut long = Hash::new();
        long.insert(b"f".to_vec(), b"short".to_vec(), limits);
        long.insert(b"f".to_vec(), b"123456789".to_vec(), limits);
        assert_eq!(long.encoding(), "hashtable", "a value of 9 bytes");
        assert_eq!(long.get(b"f"), Some(&b"123456789"[..]));
        let mut long_field = Hash::new();
        long_field.insert(b"123456789".to_vec(), b"v".to_vec(), limits);
        assert_eq!(long_field.encoding(), "hashtable", "a field of 9 bytes");
    }

    #[test]
    fn equal_contents_are_equal_hashes_in_either_form() {
        let mut compact = Hash::new();
        let mut map = Hash::new();
        for (f, v) in [(&b"x"[..], &b"1"[..]), (b"y", b"2")] {
            compact.insert(f.to_vec(), v.to_vec(), CompactLimits::default());
            map.insert(f.to_vec(), v.to_vec(), MAP);
        }
        assert_eq!(compact, map);
        map.insert(b"y".to_vec(), b"3".to_vec(), MAP);
        assert_ne!(compact, map);
    }

    #[test]
    fn long_fields_take_longer_length_prefixes() {
        let mut hash = Hash::new();
        let limits = CompactLimits {
            entries: 10,
            value: 1 << 20,
        };
        let big = alloc::vec![7u8; 300];
        hash.insert(big.clone(), big.clone(), limits);
        hash.insert(b"k".to_vec(), b"".to_vec(), limits);
        assert_eq!(hash.get(&big), Some(&big[..]));
        assert_eq!(hash.get(b"k"), Some(&b""[..]));
        assert_eq!(
            hash.size(),
            2 * (2 + 300) + (1 + 1) + 1,
            "300 takes two length bytes"
        );
        assert!(hash.remove(&big));
        assert_eq!(hash.iter().count(), 1);
    }

    #[test]
    fn a_scan_visits_every_field() {
        let mut hash = Hash::new();
        for i in 0..500 {
            hash.insert(
                format!("f{i}").into_bytes(),
                b"v".to_vec(),
                CompactLimits::default(),
            );
        }
        assert_eq!(hash.encoding(), "hashtable");
        let (mut cursor, mut seen) = (0, BTreeSet::new());
        loop {
            let (next, batch) = hash.scan(cursor, 7);
            seen.extend(batch.into_iter().map(|(f, _)| f.to_vec()));
            if next == 0 {
                break;
            }
            assert!(next > cursor);
            cursor = next;
        }
        assert_eq!(seen.len(), 500);
    }
}
