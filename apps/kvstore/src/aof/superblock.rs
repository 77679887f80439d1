//! Where the log lives on a raw disk, so that neither an append nor a
//! compaction can lose it to a crash.
//!
//! ```text
//!  disk:  [slot 0][slot 1] ... [area 0 from 1 MiB][area 1, same size]
//!  slot:  "FLKVSB03" generation u64  start u64  limit u64  length u64  crc32c u32
//! ```
//!
//! The log occupies an extent of the disk (`start`, `limit` bytes); a
//! superblock names the extent and the log's durable length. Every update
//! writes a new superblock with the next generation into the slot
//! `generation % 2`, so the other slot always holds the previous, complete
//! one: a torn superblock write fails its checksum and opening falls back
//! to the previous generation, whose log bytes are intact (appends only add
//! beyond its length).
//!
//! Compaction writes the new log into an extent that does not overlap the
//! live log (the other half of the disk, see [`rewrite_extent`]) and only
//! then a superblock naming it. A crash at any point before that
//! superblock is complete leaves the old superblock newest and the old log
//! untouched. Because the superblock names its extent, a disk made bigger
//! (`run-qemu.sh --disk-size`) keeps its log where it is, and the next
//! compaction moves it into the bigger layout.
//!
//! Superblocks of earlier formats are read too: `FLKVSB02` (area 0 or 1 of
//! the halves of the disk as it is) and `FLKVSB01` (one slot, area 0).
//!
//! Bytes the log's length covers were written before the superblock that
//! counts them, so damage there is damage, never a torn write: see
//! [`read_slots`] and `kvstore::aof::check`.

use super::crc32c;

/// Bytes a superblock occupies in its slot.
pub const SIZE: usize = 44;
/// Distance between the two slots (one page: any block size up to 4 KiB
/// keeps them in separate blocks).
pub const SLOT_STRIDE: u64 = 4096;
/// Where area 0 starts; the space before it holds the slots.
pub const AREAS_START: u64 = 1 << 20;

const MAGIC: &[u8; 8] = b"FLKVSB03";
const MAGIC_V2: &[u8; 8] = b"FLKVSB02";
const MAGIC_V1: &[u8; 8] = b"FLKVSB01";
const SIZE_V2: usize = 36;

/// A run of the disk that holds a log: where it starts, how far it may grow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    /// Byte offset on the disk.
    pub start: u64,
    /// Bytes the log may occupy from `start`.
    pub limit: u64,
}

impl Extent {
    /// The byte after the extent.
    pub fn end(&self) -> u64 {
        self.start.saturating_add(self.limit)
    }

    /// Whether `start..end` of the disk shares a byte with this extent.
    pub fn overlaps(&self, start: u64, end: u64) -> bool {
        start < self.end() && self.start < end
    }
}

/// One superblock: which extent holds the log, and how much of it is valid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Superblock {
    /// Increases with every superblock written; the newest valid one wins.
    pub generation: u64,
    /// Where the log is.
    pub extent: Extent,
    /// Durable log bytes at the start of the extent.
    pub length: u64,
}

impl Superblock {
    /// The superblock's bytes, checksummed.
    pub fn encode(&self) -> [u8; SIZE] {
        let mut out = [0u8; SIZE];
        out[..8].copy_from_slice(MAGIC);
        out[8..16].copy_from_slice(&self.generation.to_le_bytes());
        out[16..24].copy_from_slice(&self.extent.start.to_le_bytes());
        out[24..32].copy_from_slice(&self.extent.limit.to_le_bytes());
        out[32..40].copy_from_slice(&self.length.to_le_bytes());
        let crc = crc32c(&out[..40]);
        out[40..44].copy_from_slice(&crc.to_le_bytes());
        out
    }

    /// Reads a slot of a disk of `capacity` bytes: `None` if it is blank,
    /// torn or corrupt, or names a log that does not fit the disk.
    pub fn decode(bytes: &[u8], capacity: u64) -> Option<Superblock> {
        let word = |at: usize| -> Option<u64> {
            Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
        };
        let crc_at = |at: usize| -> Option<u32> {
            Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
        };
        let magic = bytes.get(..8)?;
        let sb = if magic == MAGIC && bytes.len() >= SIZE {
            (crc_at(40)? == crc32c(&bytes[..40])).then_some(Superblock {
                generation: word(8)?,
                extent: Extent {
                    start: word(16)?,
                    limit: word(24)?,
                },
                length: word(32)?,
            })?
        } else if magic == MAGIC_V2 && bytes.len() >= SIZE_V2 {
            let area = word(16)?;
            if crc_at(32)? != crc32c(&bytes[..32]) || area >= 2 {
                return None;
            }
            Superblock {
                generation: word(8)?,
                extent: half(capacity, area as u8),
                length: word(24)?,
            }
        } else if magic == MAGIC_V1 && bytes.len() >= 20 {
            (crc_at(16)? == crc32c(&bytes[..16])).then_some(Superblock {
                generation: 0,
                extent: half(capacity, 0),
                length: word(8)?,
            })?
        } else {
            return None;
        };
        sb.fits(capacity).then_some(sb)
    }

    /// Whether the log it names lies on a disk of `capacity` bytes, after
    /// the slots, within its extent, and its generation has a successor.
    fn fits(&self, capacity: u64) -> bool {
        let e = self.extent;
        e.start >= AREAS_START
            && e.start
                .checked_add(e.limit)
                .is_some_and(|end| end <= capacity)
            && self.length <= e.limit
            && self.generation < MAX_GENERATION
    }

    /// The superblock to write after this one, for a log of `length` bytes
    /// in `extent`.
    pub fn next(&self, extent: Extent, length: u64) -> Superblock {
        Superblock {
            generation: self.generation + 1,
            extent,
            length,
        }
    }

    /// Byte offset on the disk of the slot this superblock is written to.
    pub fn slot_offset(&self) -> u64 {
        (self.generation % 2) * SLOT_STRIDE
    }
}

/// Generations from here on are not trusted: counting one per superblock
/// written, no disk gets there, so only damage or a crafted disk shows one,
/// and below it [`Superblock::next`] always has a newer successor.
pub const MAX_GENERATION: u64 = 1 << 63;

/// What the two superblock slots of a disk say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slots {
    /// Both slots are zeros: a disk that never held a log.
    Blank,
    /// The newest valid superblock; `other_unreadable` when the other slot
    /// is neither blank nor valid (a torn superblock write, or damage).
    Found {
        /// The superblock in force.
        superblock: Superblock,
        /// Which slot could not be read, if one could not.
        other_unreadable: Option<u8>,
    },
    /// Neither slot holds a valid superblock, and they are not blank: the
    /// log cannot be found without guessing.
    Unreadable,
}

/// Reads the two slots of a disk of `capacity` bytes.
pub fn read_slots(slot0: &[u8], slot1: &[u8], capacity: u64) -> Slots {
    let blank = |slot: &[u8]| slot.iter().take(SIZE).all(|&b| b == 0);
    let found = [
        Superblock::decode(slot0, capacity),
        Superblock::decode(slot1, capacity),
    ];
    let newest = (0..2u8)
        .filter_map(|i| found[i as usize].map(|sb| (i, sb)))
        .max_by_key(|(_, sb)| sb.generation);
    match newest {
        Some((i, superblock)) => {
            let other = 1 - i;
            let other_slot = if other == 0 { slot0 } else { slot1 };
            let other_unreadable =
                (found[other as usize].is_none() && !blank(other_slot)).then_some(other);
            Slots::Found {
                superblock,
                other_unreadable,
            }
        }
        None if blank(slot0) && blank(slot1) => Slots::Blank,
        None => Slots::Unreadable,
    }
}

/// The two halves of a disk of `capacity` bytes after the slots, each a
/// whole number of 4 KiB pages: where a new disk's log goes (area 0), and
/// where its first compaction goes (area 1).
pub fn half(capacity: u64, area: u8) -> Extent {
    let each = capacity.saturating_sub(AREAS_START) / 2 / 4096 * 4096;
    Extent {
        start: AREAS_START + u64::from(area) * each,
        limit: each,
    }
}

/// Where a compaction of the log in `live` (its bytes, written or pending,
/// end at `live_end`) should write the new log of `len` bytes: a half of
/// the disk as it is now, or failing that a half of the layout the live
/// log was made in, that does not touch the live log. `None` if no such
/// place holds `len` bytes.
pub fn rewrite_extent(capacity: u64, live: Extent, live_end: u64, len: u64) -> Option<Extent> {
    let old_layout = [
        Extent {
            start: AREAS_START,
            limit: live.limit,
        },
        Extent {
            start: AREAS_START.saturating_add(live.limit),
            limit: live.limit,
        },
    ];
    [half(capacity, 0), half(capacity, 1)]
        .into_iter()
        .chain(old_layout)
        .find(|e| {
            e.limit >= len
                && e.end() <= capacity
                && e.start != live.start
                && !(e.start < live_end && live.start < e.start.saturating_add(len))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aof::{encode_record, replay, rewrite, HEADER};
    use crate::store::Store;
    use alloc::vec::Vec;

    const DISK: u64 = 8 << 20;

    /// A disk image with the slots and extents at their offsets.
    struct Disk(Vec<u8>);

    impl Disk {
        fn new() -> Disk {
            Disk(alloc::vec![0; DISK as usize])
        }
        fn write(&mut self, at: u64, bytes: &[u8]) {
            self.0[at as usize..at as usize + bytes.len()].copy_from_slice(bytes);
        }
        fn write_super(&mut self, sb: &Superblock) {
            self.write(sb.slot_offset(), &sb.encode());
        }
        fn slots(&self) -> Slots {
            let slot = |i: u64| &self.0[(i * SLOT_STRIDE) as usize..][..SIZE];
            read_slots(slot(0), slot(1), DISK)
        }
        fn open(&self) -> Option<Superblock> {
            match self.slots() {
                Slots::Found { superblock, .. } => Some(superblock),
                _ => None,
            }
        }
        /// The keys the log named by the newest superblock replays to.
        fn keys(&self) -> Vec<Vec<u8>> {
            let sb = self.open().expect("a valid superblock");
            let start = sb.extent.start as usize;
            let mut keys = Vec::new();
            let report = replay(&self.0[start..start + sb.length as usize], |args| {
                keys.push(args[1].clone())
            });
            assert!(report.torn_tail.is_none());
            keys
        }
    }

    fn log_of(keys: &[&str]) -> Vec<u8> {
        let mut log = HEADER.to_vec();
        for k in keys {
            log.extend(encode_record(&["SET", k, "v"]));
        }
        log
    }

    fn superblock(generation: u64, area: u8, length: u64) -> Superblock {
        Superblock {
            generation,
            extent: half(DISK, area),
            length,
        }
    }

    #[test]
    fn roundtrip_and_corruption() {
        let sb = superblock(7, 1, 4242);
        assert_eq!(Superblock::decode(&sb.encode(), DISK), Some(sb));
        let mut bad = sb.encode();
        bad[20] ^= 1;
        assert_eq!(Superblock::decode(&bad, DISK), None);
        assert_eq!(Superblock::decode(&[0; SIZE], DISK), None);
        assert_eq!(Superblock::decode(&sb.encode()[..10], DISK), None);
        assert_eq!(sb.slot_offset(), SLOT_STRIDE);
        assert_eq!(sb.next(half(DISK, 0), 1).slot_offset(), 0);
    }

    #[test]
    fn a_superblock_naming_space_off_the_disk_is_not_trusted() {
        let past_the_end = superblock(3, 1, 10);
        assert_eq!(Superblock::decode(&past_the_end.encode(), DISK / 2), None);
        let too_long = superblock(3, 0, half(DISK, 0).limit + 1);
        assert_eq!(Superblock::decode(&too_long.encode(), DISK), None);
        let over_the_slots = Superblock {
            generation: 1,
            extent: Extent {
                start: 0,
                limit: 4096,
            },
            length: 0,
        };
        assert_eq!(Superblock::decode(&over_the_slots.encode(), DISK), None);
        let wrapping = Superblock {
            generation: 1,
            extent: Extent {
                start: AREAS_START,
                limit: u64::MAX,
            },
            length: 0,
        };
        assert_eq!(Superblock::decode(&wrapping.encode(), DISK), None);
    }

    #[test]
    fn newest_valid_generation_wins_and_a_bad_slot_is_reported() {
        let a = superblock(4, 0, 100);
        let b = a.next(half(DISK, 1), 50);
        let found = |superblock, other_unreadable| Slots::Found {
            superblock,
            other_unreadable,
        };
        assert_eq!(read_slots(&a.encode(), &b.encode(), DISK), found(b, None));
        assert_eq!(read_slots(&b.encode(), &a.encode(), DISK), found(b, None));
        let mut torn = b.encode();
        torn[SIZE - 1] ^= 0xff;
        assert_eq!(read_slots(&a.encode(), &torn, DISK), found(a, Some(1)));
        assert_eq!(read_slots(&a.encode(), &[0; SIZE], DISK), found(a, None));
    }

    #[test]
    fn a_generation_without_a_successor_is_not_trusted() {
        // Found by fuzzing (superblock): a slot claiming generation
        // u64::MAX was opened, and the next update overflowed.
        let legit = superblock(10, 0, 100);
        let crafted = Superblock {
            generation: u64::MAX,
            ..legit
        };
        let found = |superblock, other_unreadable| Slots::Found {
            superblock,
            other_unreadable,
        };
        assert_eq!(
            read_slots(&legit.encode(), &crafted.encode(), DISK),
            found(legit, Some(1))
        );
        assert_eq!(
            read_slots(&crafted.encode(), &[0; SIZE], DISK),
            Slots::Unreadable
        );
        let last = Superblock {
            generation: MAX_GENERATION - 1,
            ..legit
        };
        assert_eq!(Superblock::decode(&last.encode(), DISK), Some(last));
        assert!(last.next(half(DISK, 1), 0).generation > last.generation);
    }

    #[test]
    fn blank_slots_are_a_new_disk_and_two_bad_ones_are_damage() {
        assert_eq!(read_slots(&[0; SIZE], &[0; SIZE], DISK), Slots::Blank);
        let mut bad = superblock(4, 0, 100).encode();
        bad[9] ^= 1;
        assert_eq!(read_slots(&bad, &[0; SIZE], DISK), Slots::Unreadable);
        assert_eq!(read_slots(&[0; SIZE], &bad, DISK), Slots::Unreadable);
        assert_eq!(read_slots(&bad, &[0xff; SIZE], DISK), Slots::Unreadable);
    }

    #[test]
    fn older_formats_are_read_in_the_halves_of_the_disk() {
        let mut v1 = [0u8; 20];
        v1[..8].copy_from_slice(MAGIC_V1);
        v1[8..16].copy_from_slice(&300u64.to_le_bytes());
        let crc = crc32c(&v1[..16]);
        v1[16..20].copy_from_slice(&crc.to_le_bytes());
        let sb = Superblock::decode(&v1, DISK).unwrap();
        assert_eq!(
            (sb.generation, sb.extent, sb.length),
            (0, half(DISK, 0), 300)
        );
        let mut v2 = [0u8; SIZE_V2];
        v2[..8].copy_from_slice(MAGIC_V2);
        v2[8..16].copy_from_slice(&5u64.to_le_bytes());
        v2[16..24].copy_from_slice(&1u64.to_le_bytes());
        v2[24..32].copy_from_slice(&77u64.to_le_bytes());
        let crc = crc32c(&v2[..32]);
        v2[32..36].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(Superblock::decode(&v2, DISK), Some(superblock(5, 1, 77)));
        v2[16] = 2; // no third area
        assert_eq!(Superblock::decode(&v2, DISK), None);
        // Found by fuzzing (superblock): an area number past 1 with a
        // valid checksum was turned into a disk offset before it was
        // checked, and the multiplication overflowed.
        v2[16] = 255;
        let crc = crc32c(&v2[..32]);
        v2[32..36].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(Superblock::decode(&v2, u64::MAX), None);
    }

    #[test]
    fn a_rewrite_goes_where_the_live_log_is_not() {
        let live = half(DISK, 0);
        let end = live.start + 5000;
        assert_eq!(rewrite_extent(DISK, live, end, 4000), Some(half(DISK, 1)));
        assert_eq!(rewrite_extent(DISK, half(DISK, 1), end, 4000), Some(live));
        assert_eq!(rewrite_extent(DISK, live, end, live.limit + 1), None);
    }

    #[test]
    fn a_grown_disk_keeps_the_log_and_the_next_rewrite_takes_the_bigger_layout() {
        // The log in the second half of a 3 MiB disk, which then grows.
        let small = 3 << 20;
        let live = half(small, 1);
        let end = live.start + live.limit; // full
        let sb = Superblock {
            generation: 8,
            extent: live,
            length: live.limit,
        };
        // Still found where it is on the bigger disk.
        assert_eq!(Superblock::decode(&sb.encode(), DISK), Some(sb));
        // A compact log no bigger than the old half fits before it, in
        // the new first half; a bigger one goes to the new second half.
        let to = rewrite_extent(DISK, live, end, live.limit / 2).unwrap();
        assert_eq!(to, half(DISK, 0));
        let to = rewrite_extent(DISK, live, end, live.limit + 4096).unwrap();
        assert_eq!(to, half(DISK, 1));
        assert!(!live.overlaps(to.start, to.start + live.limit + 4096));
    }

    #[test]
    fn a_crash_at_any_step_of_a_rewrite_keeps_a_complete_log() {
        let mut disk = Disk::new();
        // The live log: three overwrites of one key, one other key.
        let old = log_of(&["a", "a", "a", "b"]);
        disk.write(half(DISK, 0).start, &old);
        let current = superblock(9, 0, old.len() as u64);
        disk.write_super(&current);
        // The rewrite's new log goes to the other area...
        let mut store = Store::new();
        store.set(b"a", b"v".to_vec(), None);
        store.set(b"b", b"v".to_vec(), None);
        let new = rewrite(&store, 0);
        assert!(new.len() < old.len());
        let to = rewrite_extent(
            DISK,
            current.extent,
            half(DISK, 0).start + old.len() as u64,
            new.len() as u64,
        )
        .unwrap();
        disk.write(to.start, &new);
        // ...a crash here leaves the old superblock, and the old log, newest.
        assert_eq!(disk.open(), Some(current));
        assert_eq!(disk.keys().len(), 4);
        // A torn switch is no different.
        let switch = current.next(to, new.len() as u64);
        let mut torn = switch.encode();
        torn[30] ^= 0x55;
        let mut crashed = Disk(disk.0.clone());
        crashed.write(switch.slot_offset(), &torn);
        assert_eq!(crashed.open(), Some(current));
        // Once the switch is whole, the compact log is the log.
        disk.write_super(&switch);
        assert_eq!(disk.open(), Some(switch));
        let mut keys = disk.keys();
        keys.sort();
        assert_eq!(keys, [b"a".to_vec(), b"b".to_vec()]);
        // Appends after the switch alternate slots and leave the old area
        // alone until the next rewrite.
        let grown = switch.next(to, new.len() as u64 + 10);
        assert_ne!(grown.slot_offset(), switch.slot_offset());
    }
}
