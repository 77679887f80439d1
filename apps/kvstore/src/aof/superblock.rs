//! Where the log lives on a raw disk, so that neither an append nor a
//! compaction can lose it to a crash.
//!
//! ```text
//!  disk:  [slot 0][slot 1] ... [area 0 from 1 MiB][area 1, same size]
//!  slot:  "FLKVSB02"  generation u64  area u64  length u64  crc32c u32
//! ```
//!
//! The log occupies one of two areas; a superblock names the area and the
//! log's durable length. Every update writes a new superblock with the next
//! generation into the slot `generation % 2`, so the other slot always
//! holds the previous, complete one: a torn superblock write fails its
//! checksum and opening falls back to the previous generation, whose log
//! bytes are intact (appends only add beyond its length).
//!
//! Compaction writes the new log into the *other* area and only then a
//! superblock naming it. A crash at any point before that superblock is
//! complete leaves the old superblock newest and the old log untouched.
//!
//! Disks written before the two-area layout carry a `FLKVSB01` superblock
//! in slot 0 (log in area 0); it is read as generation 0.

use super::crc32c;

/// Bytes a superblock occupies in its slot.
pub const SIZE: usize = 36;
/// Distance between the two slots (one page: any block size up to 4 KiB
/// keeps them in separate blocks).
pub const SLOT_STRIDE: u64 = 4096;
/// Where area 0 starts; the space before it holds the slots.
pub const AREAS_START: u64 = 1 << 20;

const MAGIC: &[u8; 8] = b"FLKVSB02";
const MAGIC_V1: &[u8; 8] = b"FLKVSB01";

/// One superblock: which area holds the log, and how much of it is valid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Superblock {
    /// Increases with every superblock written; the newest valid one wins.
    pub generation: u64,
    /// Area 0 or 1.
    pub area: u8,
    /// Durable log bytes at the start of the area.
    pub length: u64,
}

impl Superblock {
    /// The superblock's bytes, checksummed.
    pub fn encode(&self) -> [u8; SIZE] {
        let mut out = [0u8; SIZE];
        out[..8].copy_from_slice(MAGIC);
        out[8..16].copy_from_slice(&self.generation.to_le_bytes());
        out[16..24].copy_from_slice(&u64::from(self.area).to_le_bytes());
        out[24..32].copy_from_slice(&self.length.to_le_bytes());
        let crc = crc32c(&out[..32]);
        out[32..36].copy_from_slice(&crc.to_le_bytes());
        out
    }

    /// Reads a slot: `None` if it is blank, torn or corrupt.
    pub fn decode(bytes: &[u8]) -> Option<Superblock> {
        let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
        if bytes.len() >= SIZE && &bytes[..8] == MAGIC {
            let crc = u32::from_le_bytes(bytes[32..36].try_into().unwrap());
            let area = word(16);
            return (crc == crc32c(&bytes[..32]) && area < 2).then(|| Superblock {
                generation: word(8),
                area: area as u8,
                length: word(24),
            });
        }
        // The single-superblock format: magic, length, crc32c of both.
        if bytes.len() >= 20 && &bytes[..8] == MAGIC_V1 {
            let crc = u32::from_le_bytes(bytes[16..20].try_into().unwrap());
            return (crc == crc32c(&bytes[..16])).then(|| Superblock {
                generation: 0,
                area: 0,
                length: word(8),
            });
        }
        None
    }

    /// The superblock to write after this one, for a log of `length` bytes
    /// in `area`.
    pub fn next(&self, area: u8, length: u64) -> Superblock {
        Superblock {
            generation: self.generation + 1,
            area,
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

/// The newest valid superblock of the two slots, if any. One whose length
/// does not fit its area (`area_len`) is not trusted, nor one whose
/// generation is [`MAX_GENERATION`] or more.
pub fn newest(slot0: &[u8], slot1: &[u8], area_len: u64) -> Option<Superblock> {
    [Superblock::decode(slot0), Superblock::decode(slot1)]
        .into_iter()
        .flatten()
        .filter(|sb| sb.length <= area_len && sb.generation < MAX_GENERATION)
        .max_by_key(|sb| sb.generation)
}

/// The two areas of a disk of `capacity` bytes: (start of area 0, length
/// of each), lengths rounded down to whole 4 KiB pages.
pub fn areas(capacity: u64) -> (u64, u64) {
    let each = capacity.saturating_sub(AREAS_START) / 2 / 4096 * 4096;
    (AREAS_START, each)
}

/// Byte offset on the disk where `area` starts.
pub fn area_start(capacity: u64, area: u8) -> u64 {
    let (start, each) = areas(capacity);
    start + u64::from(area) * each
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aof::{encode_record, replay, rewrite, HEADER};
    use crate::store::Store;
    use alloc::vec::Vec;

    const DISK: u64 = 8 << 20;

    /// A disk image with the slots and areas at their offsets.
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
        fn open(&self) -> Option<Superblock> {
            let slot = |i: u64| &self.0[(i * SLOT_STRIDE) as usize..][..SIZE];
            newest(slot(0), slot(1), areas(DISK).1)
        }
        /// The keys the log named by the newest superblock replays to.
        fn keys(&self) -> Vec<Vec<u8>> {
            let sb = self.open().expect("a valid superblock");
            let start = area_start(DISK, sb.area) as usize;
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

    #[test]
    fn roundtrip_and_corruption() {
        let sb = Superblock {
            generation: 7,
            area: 1,
            length: 4242,
        };
        assert_eq!(Superblock::decode(&sb.encode()), Some(sb));
        let mut bad = sb.encode();
        bad[20] ^= 1;
        assert_eq!(Superblock::decode(&bad), None);
        assert_eq!(Superblock::decode(&[0; SIZE]), None);
        let mut wrong_area = sb;
        wrong_area.area = 2;
        assert_eq!(Superblock::decode(&wrong_area.encode()), None);
        assert_eq!(sb.slot_offset(), SLOT_STRIDE);
        assert_eq!(sb.next(0, 1).slot_offset(), 0);
    }

    #[test]
    fn newest_valid_generation_wins() {
        let a = Superblock {
            generation: 4,
            area: 0,
            length: 100,
        };
        let b = a.next(1, 50);
        assert_eq!(newest(&a.encode(), &b.encode(), 1000), Some(b));
        assert_eq!(newest(&b.encode(), &a.encode(), 1000), Some(b));
        let mut torn = b.encode();
        torn[SIZE - 1] ^= 0xff;
        assert_eq!(newest(&a.encode(), &torn, 1000), Some(a));
        assert_eq!(newest(&a.encode(), &b.encode(), 60), Some(b));
        assert_eq!(newest(&a.encode(), &b.encode(), 40), None);
    }

    #[test]
    fn a_generation_without_a_successor_is_not_trusted() {
        // Found by fuzzing (superblock): a slot claiming generation
        // u64::MAX was opened, and the next update overflowed.
        let legit = Superblock {
            generation: 10,
            area: 0,
            length: 100,
        };
        let crafted = Superblock {
            generation: u64::MAX,
            ..legit
        };
        assert_eq!(
            newest(&legit.encode(), &crafted.encode(), 1000),
            Some(legit)
        );
        assert_eq!(newest(&crafted.encode(), &[0; SIZE], 1000), None);
        let last = Superblock {
            generation: MAX_GENERATION - 1,
            ..legit
        };
        let found = newest(&last.encode(), &legit.encode(), 1000).unwrap();
        assert!(found.next(1, 0).generation > found.generation);
    }

    #[test]
    fn the_old_single_superblock_format_is_read_as_area_zero() {
        let mut v1 = [0u8; 20];
        v1[..8].copy_from_slice(MAGIC_V1);
        v1[8..16].copy_from_slice(&300u64.to_le_bytes());
        let crc = crc32c(&v1[..16]);
        v1[16..20].copy_from_slice(&crc.to_le_bytes());
        let sb = Superblock::decode(&v1).unwrap();
        assert_eq!((sb.generation, sb.area, sb.length), (0, 0, 300));
        assert_eq!(area_start(DISK, 0), AREAS_START);
    }

    #[test]
    fn a_crash_at_any_step_of_a_rewrite_keeps_a_complete_log() {
        let mut disk = Disk::new();
        // The live log: three overwrites of one key, one other key.
        let old = log_of(&["a", "a", "a", "b"]);
        disk.write(area_start(DISK, 0), &old);
        let current = Superblock {
            generation: 9,
            area: 0,
            length: old.len() as u64,
        };
        disk.write_super(&current);
        // The rewrite's new log goes to the other area...
        let mut store = Store::new();
        store.set(b"a", b"v".to_vec(), None);
        store.set(b"b", b"v".to_vec(), None);
        let new = rewrite(&store, 0);
        assert!(new.len() < old.len());
        disk.write(area_start(DISK, 1), &new);
        // ...a crash here leaves the old superblock, and the old log, newest.
        assert_eq!(disk.open(), Some(current));
        assert_eq!(disk.keys().len(), 4);
        // A torn switch is no different.
        let switch = current.next(1, new.len() as u64);
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
        let grown = switch.next(1, new.len() as u64 + 10);
        assert_ne!(grown.slot_offset(), switch.slot_offset());
    }
}
