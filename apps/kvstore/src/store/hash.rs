//! Hash values: one key holding a map of fields to values (`HSET`,
//! `HGET`, ...).
//!
//! Fields are ordered like keys in the keyspace (by a hash of the field,
//! then by its bytes, see the `key` module), so `HSCAN` can use the same
//! kind of cursor as `SCAN`, with the same guarantee: a field present for
//! the whole scan is returned at least once.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use super::key::{self, KeyView, Probe, StoredKey};

/// Estimated bytes one field costs beyond its field and value bytes: its
/// share of a map node, two headers and allocator overhead. Like
/// [`ENTRY_OVERHEAD`](super::ENTRY_OVERHEAD), an estimate for `maxmemory`.
pub const FIELD_OVERHEAD: usize = 48;

/// One field and its value, borrowed from a [`Hash`].
pub type FieldValue<'a> = (&'a [u8], &'a [u8]);

/// The fields and values of one hash key, with a running estimate of the
/// memory they use.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hash {
    fields: BTreeMap<StoredKey, Vec<u8>>,
    /// Estimated bytes of all fields (see [`Hash::field_cost`]).
    size: usize,
}

impl Hash {
    /// An empty hash (a key never holds one: the store removes a hash key
    /// whose last field goes).
    pub fn new() -> Self {
        Self::default()
    }

    /// Estimated memory one field of `field_len` bytes holding `value_len`
    /// bytes costs.
    pub fn field_cost(field_len: usize, value_len: usize) -> usize {
        field_len + value_len + FIELD_OVERHEAD
    }

    /// Number of fields (`HLEN`).
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// Whether there are no fields.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// Estimated memory of the fields and values, in bytes: what the hash
    /// adds to its key's cost in the store.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The value of `field`, if the hash has it.
    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        self.fields
            .get(&Probe::new(field) as &dyn KeyView)
            .map(Vec::as_slice)
    }

    /// Whether the hash has `field`.
    pub fn contains(&self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    /// Sets `field` to `value` (both kept in the memory they come in);
    /// returns whether the field is new.
    pub fn insert(&mut self, field: Vec<u8>, value: Vec<u8>) -> bool {
        let probe = Probe::new(&field);
        if let Some(slot) = self.fields.get_mut(&probe as &dyn KeyView) {
            self.size = self.size - slot.len() + value.len();
            *slot = value;
            return false;
        }
        self.size += Self::field_cost(field.len(), value.len());
        self.fields.insert(StoredKey::from_vec(field), value);
        true
    }

    /// Removes `field`; returns whether it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match self.fields.remove(&Probe::new(field) as &dyn KeyView) {
            Some(value) => {
                self.size -= Self::field_cost(field.len(), value.len());
                true
            }
            None => false,
        }
    }

    /// Every field and its value, in field order.
    pub fn iter(&self) -> impl Iterator<Item = FieldValue<'_>> + '_ {
        self.fields.iter().map(|(f, v)| (f.bytes(), v.as_slice()))
    }

    /// One step of `HSCAN`: fields from position `cursor` on, at least
    /// `count` of them, and the cursor to continue from (0 when done). See
    /// [`Store::scan`](super::Store::scan) for the guarantee.
    pub fn scan(&self, cursor: u64, count: usize) -> (u64, Vec<FieldValue<'_>>) {
        let (next, found) = key::scan(&self.fields, cursor, count);
        let found = found.into_iter().map(|(f, v)| (f, v.as_slice())).collect();
        (next, found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::collections::BTreeSet;
    use alloc::format;

    #[test]
    fn fields_are_set_replaced_and_removed_with_their_cost() {
        let mut hash = Hash::new();
        assert!(hash.insert(b"name".to_vec(), b"ada".to_vec()));
        assert_eq!(hash.size(), Hash::field_cost(4, 3));
        assert!(
            !hash.insert(b"name".to_vec(), b"grace".to_vec()),
            "replaced"
        );
        assert_eq!(hash.get(b"name"), Some(&b"grace"[..]));
        assert_eq!(hash.size(), Hash::field_cost(4, 5));
        assert!(hash.insert(b"age".to_vec(), b"36".to_vec()));
        assert_eq!(hash.len(), 2);
        assert!(hash.remove(b"name"));
        assert!(!hash.remove(b"name"));
        assert_eq!(hash.size(), Hash::field_cost(3, 2));
        assert!(hash.remove(b"age"));
        assert!(hash.is_empty());
        assert_eq!(hash.size(), 0);
    }

    #[test]
    fn a_scan_visits_every_field() {
        let mut hash = Hash::new();
        for i in 0..500 {
            hash.insert(format!("f{i}").into_bytes(), b"v".to_vec());
        }
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
