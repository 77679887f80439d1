//! The engine's IOTLB: which IOVA ranges QEMU has translated for us, to
//! which address in QEMU's process (`uaddr`), with which permission.
//!
//! QEMU fills it with `IOTLB_MSG UPDATE` after it resolved one of our misses
//! through the guest's SMMUv3, and empties it with `INVALIDATE` when the
//! guest invalidates its SMMU TLB (for example after evicting a page). A hit
//! is one ordered-map lookup; anything else is a miss the caller must ask
//! QEMU about.

use std::collections::BTreeMap;

/// Read permission bit of [`Perm`] (`VHOST_ACCESS_RO`).
pub const PERM_READ: u8 = 1;
/// Write permission bit of [`Perm`] (`VHOST_ACCESS_WO`).
pub const PERM_WRITE: u8 = 2;

/// Access rights of a mapping, as the vhost IOTLB encodes them (bit 0 read,
/// bit 1 write); also the kind of an access we want to make.
pub type Perm = u8;

/// The permission an UPDATE from QEMU can be trusted with.
///
/// QEMU 7.2 answers every miss with read-write (`perm` 3), whatever the
/// guest's page table says: its SMMU checked only the access the miss asked
/// for. Taken at its word, a translation asked for a read of a read-only
/// page (the guest's shared zero block) would let a later write through.
/// So an update gets what the outstanding misses it answers (`asked`:
/// page and wanted access) asked for, a write implying a read (ARM stage-1
/// mappings are never write-only), and no more than it says itself. An
/// update no miss asked for is trusted for reads only.
pub fn granted(update: Perm, iova: u64, size: u64, asked: &[(u64, Perm)]) -> Perm {
    let last = iova.saturating_add(size.max(1) - 1);
    let wanted = asked
        .iter()
        .filter(|&&(page, _)| page >= iova && page <= last)
        .fold(PERM_READ, |acc, &(_, want)| acc | want);
    update & wanted
}

/// One translation QEMU gave us.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Bytes covered from the key IOVA.
    pub size: u64,
    /// Address in QEMU's process that the first IOVA maps to.
    pub uaddr: u64,
    /// [`PERM_READ`] | [`PERM_WRITE`].
    pub perm: Perm,
}

/// The outcome of a lookup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// Translated: `uaddr` of the IOVA and how many bytes from it are covered
    /// by the same entry.
    Hit {
        /// The engine-side address of the IOVA.
        uaddr: u64,
        /// Bytes from the IOVA covered by the same entry.
        run: u64,
    },
    /// No entry covers the IOVA.
    Miss,
    /// An entry covers it but lacks the wanted permission.
    Denied,
}

/// IOVA → QEMU-address map, keyed by the first IOVA of each entry.
/// Entries never overlap: an insert removes the parts it covers.
#[derive(Default, Debug)]
pub struct Iotlb {
    map: BTreeMap<u64, Entry>,
}

impl Iotlb {
    /// An empty IOTLB.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of entries (for statistics and tests).
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether there is no entry.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Adds a translation of `[iova, iova + size)`, replacing whatever
    /// overlapped it. A zero size or a range that wraps is ignored (returns
    /// false): it comes from outside and cannot be honoured.
    pub fn insert(&mut self, iova: u64, size: u64, uaddr: u64, perm: Perm) -> bool {
        if size == 0
            || iova.checked_add(size - 1).is_none()
            || uaddr.checked_add(size - 1).is_none()
        {
            return false;
        }
        self.invalidate(iova, size);
        self.map.insert(iova, Entry { size, uaddr, perm });
        true
    }

    /// Forgets every translation that overlaps `[iova, iova + size)` (the
    /// range is clamped at the top of the address space). A size of 0 means
    /// "up to the top": QEMU sends `addr_mask + 1`, which wraps to 0 when
    /// the guest invalidates the whole address space. Parts of an
    /// overlapping entry outside the range stay translated. Returns how many
    /// entries were touched.
    pub fn invalidate(&mut self, iova: u64, size: u64) -> usize {
        let last = if size == 0 {
            u64::MAX
        } else {
            iova.saturating_add(size - 1)
        };
        // Entries that start below `iova` but reach into the range, and every
        // entry starting inside it.
        let mut hit: Vec<u64> = Vec::new();
        if let Some((&start, e)) = self.map.range(..iova).next_back() {
            if start + (e.size - 1) >= iova {
                hit.push(start);
            }
        }
        hit.extend(self.map.range(iova..=last).map(|(&k, _)| k));
        for &start in &hit {
            let e = self.map.remove(&start).expect("key was just listed");
            let end = start + (e.size - 1);
            if start < iova {
                let keep = iova - start;
                self.map.insert(start, Entry { size: keep, ..e });
            }
            if end > last {
                let from = last + 1;
                let skip = from - start;
                self.map.insert(
                    from,
                    Entry {
                        size: end - last,
                        uaddr: e.uaddr + skip,
                        perm: e.perm,
                    },
                );
            }
        }
        hit.len()
    }

    /// Translates `iova` for an access needing `want`.
    pub fn lookup(&self, iova: u64, want: Perm) -> Lookup {
        let Some((&start, e)) = self.map.range(..=iova).next_back() else {
            return Lookup::Miss;
        };
        let off = iova - start;
        if off >= e.size {
            return Lookup::Miss;
        }
        if e.perm & want != want {
            return Lookup::Denied;
        }
        Lookup::Hit {
            uaddr: e.uaddr + off,
            run: e.size - off,
        }
    }
}

impl Iotlb {
    /// Like [`Iotlb::lookup`], but a hit's `run` goes on through following
    /// entries that continue it in QEMU's address space with the wanted
    /// permission (QEMU translates page by page), up to `limit` bytes: one
    /// walk instead of a lookup per page for large accesses.
    pub fn lookup_contiguous(&self, iova: u64, want: Perm, limit: u64) -> Lookup {
        let first = self.lookup(iova, want);
        let Lookup::Hit { uaddr, mut run } = first else {
            return first;
        };
        if run >= limit {
            return first;
        }
        for (&start, e) in self.map.range(iova.saturating_add(1)..) {
            if run >= limit
                || start != iova.wrapping_add(run)
                || e.uaddr != uaddr.wrapping_add(run)
                || e.perm & want != want
            {
                break;
            }
            run += e.size;
        }
        Lookup::Hit { uaddr, run }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_contiguous_lookup_merges_pages_that_continue_each_other() {
        let mut t = Iotlb::new();
        for p in 0..4 {
            t.insert(0x1000 * p, 0x1000, 0xa000 + 0x1000 * p, RW);
        }
        t.insert(0x4000, 0x1000, 0x5000, RW); // not contiguous in QEMU's space
        t.insert(0x5000, 0x1000, 0xf000, PERM_READ);
        assert_eq!(
            t.lookup_contiguous(0x800, PERM_WRITE, 1 << 20),
            Lookup::Hit {
                uaddr: 0xa800,
                run: 0x3800
            }
        );
        assert_eq!(
            t.lookup_contiguous(0x800, PERM_WRITE, 0x1000),
            Lookup::Hit {
                uaddr: 0xa800,
                run: 0x1800
            },
            "stops once past the limit"
        );
        assert_eq!(t.lookup_contiguous(0x6000, PERM_READ, 99), Lookup::Miss);
    }

    use super::*;

    const RW: Perm = PERM_READ | PERM_WRITE;

    #[test]
    fn a_hit_gives_the_address_and_the_rest_of_the_entry() {
        let mut t = Iotlb::new();
        assert!(t.insert(0x4000_0000, 0x2000, 0x7f00_0000_0000, RW));
        assert_eq!(
            t.lookup(0x4000_1010, PERM_READ),
            Lookup::Hit {
                uaddr: 0x7f00_0000_1010,
                run: 0xff0
            }
        );
        assert_eq!(t.lookup(0x4000_2000, PERM_READ), Lookup::Miss);
        assert_eq!(t.lookup(0x3fff_ffff, PERM_READ), Lookup::Miss);
    }

    #[test]
    fn a_lookup_across_pages_walks_entry_by_entry() {
        let mut t = Iotlb::new();
        t.insert(0x1000, 0x1000, 0xa000, RW);
        t.insert(0x2000, 0x1000, 0x5000, RW); // not contiguous in QEMU's space
        let Lookup::Hit { uaddr, run } = t.lookup(0x1800, PERM_WRITE) else {
            panic!()
        };
        assert_eq!((uaddr, run), (0xa800, 0x800));
        assert_eq!(
            t.lookup(0x1800 + run, PERM_WRITE),
            Lookup::Hit {
                uaddr: 0x5000,
                run: 0x1000
            }
        );
    }

    #[test]
    fn an_update_is_trusted_for_what_its_miss_asked() {
        let block = 0x4000_0000u64;
        // A read miss: QEMU says read-write, only read is granted.
        let read_miss = [(block + 0x3000, PERM_READ)];
        assert_eq!(granted(RW, block, 2 << 20, &read_miss), PERM_READ);
        // A write miss in the same block: read-write.
        let write_miss = [(block + 0x3000, PERM_WRITE)];
        assert_eq!(granted(RW, block, 2 << 20, &write_miss), RW);
        // Misses elsewhere do not count; an unasked update reads only.
        let elsewhere = [(block + (2 << 20), PERM_WRITE)];
        assert_eq!(granted(RW, block, 2 << 20, &elsewhere), PERM_READ);
        assert_eq!(granted(RW, block, 0x1000, &[]), PERM_READ);
        // Never more than the update itself says.
        assert_eq!(granted(PERM_READ, block, 0x1000, &write_miss), PERM_READ);
        // A read-granted entry denies a write, which then misses again.
        let mut t = Iotlb::new();
        t.insert(
            block,
            2 << 20,
            0x10_0000,
            granted(RW, block, 2 << 20, &read_miss),
        );
        assert_eq!(t.lookup(block + 0x5000, PERM_WRITE), Lookup::Denied);
    }

    #[test]
    fn permissions_are_checked() {
        let mut t = Iotlb::new();
        t.insert(0x1000, 0x1000, 0xa000, PERM_READ);
        assert!(matches!(t.lookup(0x1000, PERM_READ), Lookup::Hit { .. }));
        assert_eq!(t.lookup(0x1000, PERM_WRITE), Lookup::Denied);
        assert_eq!(t.lookup(0x1000, RW), Lookup::Denied);
    }

    #[test]
    fn invalidating_a_range_splits_entries_that_stick_out() {
        let mut t = Iotlb::new();
        t.insert(0x10000, 0x4000, 0x90000, RW);
        assert_eq!(t.invalidate(0x11000, 0x1000), 1);
        assert!(matches!(
            t.lookup(0x10fff, PERM_READ),
            Lookup::Hit {
                uaddr: 0x90fff,
                run: 1
            }
        ));
        assert_eq!(t.lookup(0x11000, PERM_READ), Lookup::Miss);
        assert_eq!(
            t.lookup(0x12000, PERM_READ),
            Lookup::Hit {
                uaddr: 0x92000,
                run: 0x2000
            }
        );
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn invalidating_everything_copes_with_the_top_of_the_address_space() {
        let mut t = Iotlb::new();
        t.insert(0x1000, 0x1000, 0xa000, RW);
        t.insert(u64::MAX - 0xfff, 0x1000, 0xb000, RW);
        assert_eq!(t.invalidate(0, u64::MAX), 2);
        assert_eq!(t.len(), 1, "the last byte was not in the range");
        assert_eq!(
            t.invalidate(0, 0),
            1,
            "size 0: everything (QEMU's wrapped addr_mask + 1)"
        );
        assert!(t.is_empty());
    }

    #[test]
    fn an_update_replaces_what_it_overlaps() {
        let mut t = Iotlb::new();
        t.insert(0x1000, 0x3000, 0xa000, PERM_READ);
        t.insert(0x2000, 0x1000, 0xf000, RW);
        assert_eq!(
            t.lookup(0x2000, PERM_WRITE),
            Lookup::Hit {
                uaddr: 0xf000,
                run: 0x1000
            }
        );
        assert_eq!(
            t.lookup(0x1000, PERM_READ),
            Lookup::Hit {
                uaddr: 0xa000,
                run: 0x1000
            }
        );
        assert_eq!(
            t.lookup(0x3000, PERM_READ),
            Lookup::Hit {
                uaddr: 0xc000,
                run: 0x1000
            }
        );
    }

    #[test]
    fn nonsense_from_outside_is_refused_not_panicked_on() {
        let mut t = Iotlb::new();
        assert!(!t.insert(0x1000, 0, 0xa000, RW));
        assert!(!t.insert(u64::MAX, 2, 0xa000, RW));
        assert!(!t.insert(0x1000, 0x1000, u64::MAX, RW));
        assert!(t.is_empty());
    }
}
