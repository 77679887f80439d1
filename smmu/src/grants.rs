//! What one device was given: the ranges of memory it may reach and with
//! which rights. The rule of device isolation in one place.
//!
//! ```text
//!  grant(range, rights) ─► GrantId ─► revoke(id)
//!        │                               │
//!        ▼                               ▼
//!  allows(va, access)?   a fault there is resolved only if yes; else it is
//!                        an isolation fault: reported, never resolved
//!  rights_over(page)     what a mirrored entry may allow (read-only or
//!                        read-write), the union of every grant covering it
//! ```
//!
//! A fixed table that never allocates: it is read on the fault path and
//! changed under the SMMU's lock, where growing the heap could deadlock.
//! Faults far outnumber grants, so the table is kept for lookups: sorted
//! by start, each entry also holding the furthest end of it and every
//! entry before it (its "reach"). The grants that may hold an address are
//! then found by a binary search and a walk back that stops where the
//! reach falls short of it: one step for grants that do not overlap, however
//! many there are (an NVMe driver holds one per queue and PRP-list frame).
//!
//! ```text
//!  start  0x1000  0x3000  0x3000  0x9000     sorted by start
//!  end    0x2000  0x8000  0x4000  0xa000
//!  reach  0x2000  0x8000  0x8000  0xa000     max(end) up to here
//!                 ▲       ▲ search(0x5000) lands here; walk back while
//!                 │         reach > 0x5000: two entries, one holds it
//! ```

use crate::fault::Access;
use core::ops::Range;

/// What a grant lets a device do to memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rights {
    /// The device may read (a `ToDevice` buffer, an NVMe write's data).
    Read,
    /// The device may read and write. An SMMU cannot express write-only,
    /// so there is no such grant.
    ReadWrite,
}

impl Rights {
    /// Whether these rights cover `access`.
    pub fn allow(self, access: Access) -> bool {
        match access {
            Access::Read => true,
            Access::Write => self == Rights::ReadWrite,
            Access::Execute => false,
        }
    }

    /// The wider of two rights.
    pub fn union(self, other: Rights) -> Rights {
        if self == Rights::ReadWrite || other == Rights::ReadWrite {
            Rights::ReadWrite
        } else {
            Rights::Read
        }
    }
}

/// Names one grant, to revoke it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GrantId(u32);

/// The table is full: more grants live at once than it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooManyGrants;

#[derive(Clone, Copy, Debug)]
struct Entry {
    id: u32,
    start: u64,
    end: u64,
    rights: Rights,
    /// The largest `end` of this entry and every entry before it.
    reach: u64,
}

/// The grants of one device, at most `N` at once, packed at the front of
/// the table in order of their start (see the module diagram).
pub struct Grants<const N: usize> {
    entries: [Entry; N],
    len: usize,
    next_id: u32,
}

const UNUSED: Entry = Entry {
    id: 0,
    start: 0,
    end: 0,
    rights: Rights::Read,
    reach: 0,
};

impl<const N: usize> Default for Grants<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Grants<N> {
    /// No grants: the device reaches nothing.
    pub const fn new() -> Self {
        Self {
            entries: [UNUSED; N],
            len: 0,
            next_id: 1,
        }
    }

    /// Lets the device reach `range` with `rights` until [`revoke`](Self::revoke).
    /// Grants may overlap; each is revoked on its own.
    pub fn grant(&mut self, range: Range<u64>, rights: Rights) -> Result<GrantId, TooManyGrants> {
        if self.len == N {
            return Err(TooManyGrants);
        }
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1).max(1);
        let at = self.live().partition_point(|e| e.start <= range.start);
        self.entries.copy_within(at..self.len, at + 1);
        self.entries[at] = Entry {
            id,
            start: range.start,
            end: range.end,
            rights,
            reach: 0,
        };
        self.len += 1;
        self.recompute_reach(at);
        Ok(GrantId(id))
    }

    /// Withdraws a grant; returns what it covered (`None`: no such grant).
    pub fn revoke(&mut self, id: GrantId) -> Option<(Range<u64>, Rights)> {
        let i = self.live().iter().position(|e| e.id == id.0)?;
        let e = self.entries[i];
        self.remove(i);
        self.recompute_reach(i);
        Some((e.start..e.end, e.rights))
    }

    /// Takes entry `i` out, keeping the order; the caller recomputes the
    /// reach from `i` on.
    fn remove(&mut self, i: usize) {
        self.entries.copy_within(i + 1..self.len, i);
        self.len -= 1;
        self.entries[self.len] = UNUSED;
    }

    /// Brings `reach` up to date from entry `from` to the end.
    fn recompute_reach(&mut self, from: usize) {
        let mut reach = match from {
            0 => 0,
            _ => self.entries[from - 1].reach,
        };
        for e in &mut self.entries[from..self.len] {
            reach = reach.max(e.end);
            e.reach = reach;
        }
    }

    /// Withdraws every grant that lies inside `range` (the memory is gone);
    /// returns how many.
    pub fn revoke_within(&mut self, range: Range<u64>) -> usize {
        let mut n = 0;
        let mut i = 0;
        while i < self.len {
            let e = self.entries[i];
            if range.start <= e.start && e.end <= range.end {
                self.remove(i);
                n += 1;
            } else {
                i += 1;
            }
        }
        if n > 0 {
            self.recompute_reach(0);
        }
        n
    }

    fn live(&self) -> &[Entry] {
        &self.entries[..self.len]
    }

    /// The grants that contain `va`: those starting at or before it, walked
    /// back from the last until no earlier one reaches past `va`.
    fn holding(&self, va: u64) -> impl Iterator<Item = &Entry> + '_ {
        let last = self.live().partition_point(|e| e.start <= va);
        self.entries[..last]
            .iter()
            .rev()
            .take_while(move |e| e.reach > va)
            .filter(move |e| va < e.end)
    }

    /// Whether some grant lets the device do `access` at `va`.
    pub fn allows(&self, va: u64, access: Access) -> bool {
        self.holding(va).any(|e| e.rights.allow(access))
    }

    /// The rights the grants give over every byte of `range`: `None` if
    /// some byte is not granted at all, read-write only if read-write
    /// grants cover all of it. (What a mirrored mapping of the range may
    /// allow.)
    pub fn rights_over(&self, range: Range<u64>) -> Option<Rights> {
        if !self.cover(range.clone(), |_| true) {
            return None;
        }
        Some(if self.cover(range, |r| r == Rights::ReadWrite) {
            Rights::ReadWrite
        } else {
            Rights::Read
        })
    }

    /// Whether grants whose rights pass `which` cover all of `range`.
    fn cover(&self, range: Range<u64>, which: impl Fn(Rights) -> bool) -> bool {
        // From the start, jump to the furthest end of a grant covering the
        // current point, until past the end or stuck in a hole.
        let mut at = range.start;
        while at < range.end {
            let end = self
                .holding(at)
                .filter(|e| which(e.rights))
                .map(|e| e.end)
                .max();
            match end {
                Some(end) => at = end,
                None => return false,
            }
        }
        true
    }

    /// Whether any grant overlaps `range`.
    pub fn overlaps(&self, range: Range<u64>) -> bool {
        // Of the grants starting before its end, does any end after its
        // start? The last one's reach says.
        let before_end = self.live().partition_point(|e| e.start < range.end);
        before_end > 0 && self.entries[before_end - 1].reach > range.start
    }

    /// The live grants' ranges and rights (to map what they cover again
    /// after a revocation cleared an overlap).
    pub fn iter(&self) -> impl Iterator<Item = (Range<u64>, Rights)> + '_ {
        self.live().iter().map(|e| (e.start..e.end, e.rights))
    }

    /// Grants alive.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the device reaches nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: u64 = 4096;

    #[test]
    fn a_device_reaches_nothing_until_granted() {
        let g = Grants::<4>::new();
        assert!(!g.allows(0x4000_0000, Access::Read));
        assert_eq!(g.rights_over(0..PAGE), None);
    }

    #[test]
    fn read_grants_refuse_writes_and_nothing_executes() {
        let mut g = Grants::<4>::new();
        g.grant(PAGE..3 * PAGE, Rights::Read).unwrap();
        assert!(g.allows(PAGE, Access::Read));
        assert!(g.allows(3 * PAGE - 1, Access::Read));
        assert!(!g.allows(3 * PAGE, Access::Read), "the end is exclusive");
        assert!(!g.allows(PAGE - 1, Access::Read));
        assert!(!g.allows(PAGE, Access::Write));
        assert!(!g.allows(PAGE, Access::Execute));
        assert_eq!(g.rights_over(PAGE..2 * PAGE), Some(Rights::Read));
    }

    #[test]
    fn revoking_one_of_two_overlapping_grants_keeps_the_other() {
        let mut g = Grants::<4>::new();
        let wide = g.grant(0..8 * PAGE, Rights::Read).unwrap();
        let narrow = g.grant(2 * PAGE..3 * PAGE, Rights::ReadWrite).unwrap();
        assert!(g.allows(2 * PAGE, Access::Write));
        assert_eq!(g.rights_over(2 * PAGE..3 * PAGE), Some(Rights::ReadWrite));
        assert_eq!(
            g.revoke(narrow),
            Some((2 * PAGE..3 * PAGE, Rights::ReadWrite))
        );
        assert!(!g.allows(2 * PAGE, Access::Write));
        assert!(g.allows(2 * PAGE, Access::Read));
        assert_eq!(g.revoke(narrow), None, "a grant is revoked once");
        g.revoke(wide).unwrap();
        assert!(g.is_empty());
    }

    #[test]
    fn rights_over_a_range_need_every_byte_covered() {
        let mut g = Grants::<4>::new();
        g.grant(0..PAGE, Rights::ReadWrite).unwrap();
        g.grant(PAGE..2 * PAGE, Rights::Read).unwrap();
        g.grant(3 * PAGE..4 * PAGE, Rights::ReadWrite).unwrap();
        assert_eq!(g.rights_over(0..PAGE), Some(Rights::ReadWrite));
        assert_eq!(
            g.rights_over(0..2 * PAGE),
            Some(Rights::Read),
            "read-write only in part of it"
        );
        assert_eq!(g.rights_over(0..4 * PAGE), None, "a hole at page 2");
        assert!(g.overlaps(PAGE + 1..PAGE + 2));
        assert!(!g.overlaps(2 * PAGE..3 * PAGE));
    }

    #[test]
    fn memory_that_goes_takes_its_grants_along() {
        let mut g = Grants::<4>::new();
        let inside = g.grant(PAGE..2 * PAGE, Rights::ReadWrite).unwrap();
        g.grant(0..8 * PAGE, Rights::Read).unwrap();
        assert_eq!(g.revoke_within(PAGE..4 * PAGE), 1);
        assert_eq!(g.revoke(inside), None);
        assert!(g.allows(PAGE, Access::Read), "the wider grant stays");
    }

    #[test]
    fn a_full_table_refuses_and_a_freed_slot_is_reused() {
        let mut g = Grants::<2>::new();
        let a = g.grant(0..PAGE, Rights::Read).unwrap();
        g.grant(PAGE..2 * PAGE, Rights::Read).unwrap();
        assert_eq!(
            g.grant(2 * PAGE..3 * PAGE, Rights::Read),
            Err(TooManyGrants)
        );
        g.revoke(a).unwrap();
        let c = g.grant(2 * PAGE..3 * PAGE, Rights::Read).unwrap();
        assert_ne!(c, a, "ids are not reused while the counter runs");
        assert_eq!(g.len(), 2);
    }

    /// The rules above written the plain way, over every grant; the
    /// sorted table must answer the same.
    struct Plain(alloc::vec::Vec<(u32, u64, u64, Rights)>);

    impl Plain {
        fn allows(&self, va: u64, access: Access) -> bool {
            self.0
                .iter()
                .any(|&(_, s, e, r)| s <= va && va < e && r.allow(access))
        }

        fn covered(&self, range: Range<u64>, rw: bool) -> bool {
            (range.start..range.end).step_by(64).all(|b| {
                self.0
                    .iter()
                    .any(|&(_, s, e, r)| s <= b && b < e && (!rw || r == Rights::ReadWrite))
            })
        }

        fn overlaps(&self, range: Range<u64>) -> bool {
            self.0
                .iter()
                .any(|&(_, s, e, _)| s < range.end && range.start < e)
        }
    }

    #[test]
    fn the_sorted_table_answers_as_a_plain_list_would() {
        // Grant and revoke at random (a fixed seed) over a small space, so
        // that grants nest, touch and overlap; after each change, ask
        // every question at every 64-byte step.
        let mut rng = faultline_rng::Rng::new(0x2545_f491_4f6c_dd1d);
        let mut next = move |n: u64| rng.below(n);
        let mut g = Grants::<16>::new();
        let mut plain = Plain(alloc::vec::Vec::new());
        for _ in 0..400 {
            if next(3) > 0 && g.len() < 16 {
                let start = next(32) * 64;
                let end = start + (1 + next(8)) * 64;
                let rights = [Rights::Read, Rights::ReadWrite][next(2) as usize];
                let id = g.grant(start..end, rights).unwrap();
                plain.0.push((id.0, start, end, rights));
            } else if !plain.0.is_empty() {
                let (id, s, e, r) = plain.0.swap_remove(next(plain.0.len() as u64) as usize);
                assert_eq!(g.revoke(GrantId(id)), Some((s..e, r)));
            }
            for a in (0..48 * 64).step_by(64) {
                for access in [Access::Read, Access::Write] {
                    assert_eq!(g.allows(a, access), plain.allows(a, access), "{a:#x}");
                }
                let range = a..a + 3 * 64;
                let want = if plain.covered(range.clone(), true) {
                    Some(Rights::ReadWrite)
                } else if plain.covered(range.clone(), false) {
                    Some(Rights::Read)
                } else {
                    None
                };
                assert_eq!(g.rights_over(range.clone()), want, "{range:x?}");
                assert_eq!(g.overlaps(range.clone()), plain.overlaps(range));
            }
        }
    }
}
