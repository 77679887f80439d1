//! List values: one key holding a sequence of elements, pushed and popped
//! at either end (`LPUSH`, `RPOP`, ...) and reachable by index (`LINDEX`,
//! `LSET`, ...).
//!
//! A ring buffer of owned elements: both ends are O(1), an index is O(1),
//! and an insert or removal in the middle moves the shorter side. The list
//! keeps a running estimate of its memory, as [`Hash`](super::Hash) does,
//! so the store's accounting stays exact.

use alloc::collections::{TryReserveError, VecDeque};
use alloc::vec::Vec;

/// Estimated bytes one element costs beyond its own bytes: its slot in the
/// ring buffer (a vector header) and allocator overhead. An estimate for
/// `maxmemory`, like [`ENTRY_OVERHEAD`](super::ENTRY_OVERHEAD).
pub const ELEMENT_OVERHEAD: usize = 32;

/// Which end of a list: `LEFT` is the head (index 0), `RIGHT` the tail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The head: `LPUSH`, `LPOP`.
    Left,
    /// The tail: `RPUSH`, `RPOP`.
    Right,
}

/// The elements of one list key, head first, with a running estimate of
/// the memory they use.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct List {
    items: VecDeque<Vec<u8>>,
    /// Estimated bytes of all elements (see [`List::element_cost`]).
    size: usize,
}

impl List {
    /// An empty list (a key never holds one: the store removes a list key
    /// whose last element goes).
    pub fn new() -> Self {
        Self::default()
    }

    /// Estimated memory one element of `len` bytes costs.
    pub fn element_cost(len: usize) -> usize {
        len + ELEMENT_OVERHEAD
    }

    /// Number of elements (`LLEN`).
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Estimated memory of the elements, in bytes: what the list adds to
    /// its key's cost in the store.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Makes room for `more` elements without pushing them, so a push of
    /// many elements either fits or fails before changing anything.
    pub fn try_reserve(&mut self, more: usize) -> Result<(), TryReserveError> {
        self.items.try_reserve(more)
    }

    /// Adds `element` at `end` (kept in the memory it comes in).
    pub fn push(&mut self, end: End, element: Vec<u8>) {
        self.size += Self::element_cost(element.len());
        match end {
            End::Left => self.items.push_front(element),
            End::Right => self.items.push_back(element),
        }
    }

    /// Removes and returns the element at `end`, if any.
    pub fn pop(&mut self, end: End) -> Option<Vec<u8>> {
        let element = match end {
            End::Left => self.items.pop_front(),
            End::Right => self.items.pop_back(),
        }?;
        self.size -= Self::element_cost(element.len());
        Some(element)
    }

    /// The element at `index` (0 is the head), if there is one.
    pub fn get(&self, index: usize) -> Option<&[u8]> {
        self.items.get(index).map(Vec::as_slice)
    }

    /// Replaces the element at `index`; returns whether there was one.
    pub fn set(&mut self, index: usize, element: Vec<u8>) -> bool {
        let Some(slot) = self.items.get_mut(index) else {
            return false;
        };
        self.size = self.size - slot.len() + element.len();
        *slot = element;
        true
    }

    /// Inserts `element` so that it ends up at `index` (at most the
    /// length: then it goes at the tail).
    pub fn insert(&mut self, index: usize, element: Vec<u8>) {
        self.size += Self::element_cost(element.len());
        self.items.insert(index.min(self.items.len()), element);
    }

    /// The index of the first element equal to `element`, head first.
    pub fn position(&self, element: &[u8]) -> Option<usize> {
        self.items.iter().position(|e| e == element)
    }

    /// Removes up to `count` elements equal to `element` (every one if
    /// `count` is 0), searching from `from`; returns how many went. In
    /// place, in one pass, without allocating.
    pub fn remove_equal(&mut self, element: &[u8], count: usize, from: End) -> usize {
        let matching = self.items.iter().filter(|e| *e == element).count();
        let remove = if count == 0 {
            matching
        } else {
            count.min(matching)
        };
        // Matches are met head first: from the tail, the first ones stay.
        let mut skip = match from {
            End::Left => 0,
            End::Right => matching - remove,
        };
        let mut left = remove;
        let mut freed = 0;
        self.items.retain(|e| {
            if left == 0 || e != element {
                return true;
            }
            if skip > 0 {
                skip -= 1;
                return true;
            }
            left -= 1;
            freed += Self::element_cost(e.len());
            false
        });
        self.size -= freed;
        remove
    }

    /// Keeps only the elements from `start` to `end` inclusive (indexes
    /// already resolved and in range), dropping the rest; an empty range
    /// (`start > end`) empties the list.
    pub fn keep_range(&mut self, start: usize, end: usize) {
        if start > end || start >= self.items.len() {
            self.items.clear();
            self.size = 0;
            return;
        }
        let end = end.min(self.items.len() - 1);
        for dropped in self.items.drain(end + 1..) {
            self.size -= Self::element_cost(dropped.len());
        }
        for dropped in self.items.drain(..start) {
            self.size -= Self::element_cost(dropped.len());
        }
    }

    /// Every element, head first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &[u8]> + ExactSizeIterator + '_ {
        self.items.iter().map(Vec::as_slice)
    }

    /// The elements from `start` to `end` inclusive (resolved, in range).
    pub fn range(&self, start: usize, end: usize) -> impl DoubleEndedIterator<Item = &[u8]> + '_ {
        self.items.range(start..=end).map(Vec::as_slice)
    }
}

/// Resolves Redis's list indexes (negative counts from the tail: -1 is
/// the last element) against a list of `len` elements: `None` if it falls
/// outside the list.
pub fn resolve_index(index: i64, len: usize) -> Option<usize> {
    let len = i64::try_from(len).ok()?;
    let at = if index < 0 {
        len.checked_add(index)?
    } else {
        index
    };
    (0..len).contains(&at).then_some(at as usize)
}

/// Resolves a `start`/`stop` range the way `LRANGE` and `LTRIM` read it
/// (negative from the tail, clamped to the list): the inclusive indexes,
/// or `None` if the range holds no element.
pub fn resolve_range(start: i64, stop: i64, len: usize) -> Option<(usize, usize)> {
    let len = i64::try_from(len).ok()?;
    let from_tail = |i: i64| if i < 0 { len.saturating_add(i) } else { i };
    // A start before the head is the head; a stop before it, nothing.
    let (start, stop) = (from_tail(start).max(0), from_tail(stop));
    if start > stop || start >= len {
        return None;
    }
    Some((start as usize, stop.min(len - 1) as usize))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> List {
        let mut l = List::new();
        for item in items {
            l.push(End::Right, item.as_bytes().to_vec());
        }
        l
    }

    fn items(l: &List) -> Vec<&str> {
        l.iter().map(|e| core::str::from_utf8(e).unwrap()).collect()
    }

    #[test]
    fn both_ends_push_and_pop_with_their_cost() {
        let mut l = List::new();
        l.push(End::Left, b"b".to_vec());
        l.push(End::Left, b"a".to_vec());
        l.push(End::Right, b"ccc".to_vec());
        assert_eq!(items(&l), ["a", "b", "ccc"]);
        assert_eq!(l.size(), 3 * ELEMENT_OVERHEAD + 5);
        assert_eq!(l.pop(End::Right), Some(b"ccc".to_vec()));
        assert_eq!(l.pop(End::Left), Some(b"a".to_vec()));
        assert_eq!(l.size(), List::element_cost(1));
        assert!(l.set(0, b"longer".to_vec()));
        assert!(!l.set(1, b"x".to_vec()));
        assert_eq!(l.size(), List::element_cost(6));
        l.pop(End::Left);
        assert_eq!((l.len(), l.size()), (0, 0));
        assert_eq!(l.pop(End::Left), None);
    }

    #[test]
    fn remove_equal_counts_from_either_end() {
        let mut l = list(&["a", "x", "b", "x", "c", "x"]);
        assert_eq!(l.remove_equal(b"x", 2, End::Right), 2);
        assert_eq!(items(&l), ["a", "x", "b", "c"]);
        assert_eq!(l.remove_equal(b"x", 0, End::Left), 1);
        assert_eq!(items(&l), ["a", "b", "c"]);
        assert_eq!(l.size(), 3 * List::element_cost(1));
    }

    #[test]
    fn keep_range_trims_both_sides() {
        let mut l = list(&["a", "b", "c", "d", "e"]);
        l.keep_range(1, 3);
        assert_eq!(items(&l), ["b", "c", "d"]);
        assert_eq!(l.size(), 3 * List::element_cost(1));
        l.keep_range(2, 1);
        assert!(l.is_empty());
        assert_eq!(l.size(), 0);
    }

    #[test]
    fn indexes_and_ranges_resolve_like_redis() {
        assert_eq!(resolve_index(0, 3), Some(0));
        assert_eq!(resolve_index(-1, 3), Some(2));
        assert_eq!(resolve_index(3, 3), None);
        assert_eq!(resolve_index(-4, 3), None);
        assert_eq!(resolve_index(i64::MIN, 3), None);
        assert_eq!(resolve_range(0, -1, 3), Some((0, 2)));
        assert_eq!(resolve_range(-100, 100, 3), Some((0, 2)));
        assert_eq!(resolve_range(2, 1, 3), None);
        assert_eq!(resolve_range(5, 10, 3), None);
        assert_eq!(resolve_range(0, -5, 3), None);
        assert_eq!(resolve_range(0, 0, 0), None);
        assert_eq!(resolve_range(i64::MIN, i64::MAX, 2), Some((0, 1)));
    }
}
