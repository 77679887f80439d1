//! Finding the log on a disk and deciding whether it can be trusted: the
//! rule the server applies when it opens the log, and what `kv-check`
//! reports and fixes.
//!
//! ```text
//!  slots ──► Blank ─────────────► a new, empty log
//!        ──► Unreadable ────────► refuse: Damage::Superblocks
//!        ──► Found(sb) ──► replay log[..sb.length]
//!                           ├─ whole ───────► open it
//!                           └─ stops at N ──► refuse: Damage::Log { offset N }
//! ```
//!
//! Every byte below a superblock's length was on the disk before that
//! superblock was written, so a record that does not read back there is
//! damage, not a crash's torn write (that can only lie past the length,
//! which is never read). The server stops with the offset rather than cut
//! acknowledged writes away; [`fix`] cuts the log at the damage only when
//! an operator asks, and says what it keeps.

use alloc::format;
use alloc::string::String;

use super::superblock::{self, read_slots, Slots, Superblock, SLOT_STRIDE};
use super::{replay, TailError};
use crate::Args;

/// Why a log cannot be opened as it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Damage {
    /// Neither superblock slot is valid, and they are not blank.
    Superblocks,
    /// The log named by `superblock` does not replay to its length.
    Log {
        /// The superblock in force.
        superblock: Superblock,
        /// The first bad spot, as an offset in the log.
        at: TailError,
    },
}

impl Damage {
    /// A one-line description with the disk offsets involved.
    pub fn describe(&self) -> String {
        match self {
            Damage::Superblocks => format!(
                "both superblocks (disk bytes 0 and {SLOT_STRIDE}) are unreadable and not blank"
            ),
            Damage::Log { superblock, at } => format!(
                "the log is damaged at byte {} of {} (disk offset {}): {:?}",
                at.offset,
                superblock.length,
                superblock.extent.start + at.offset as u64,
                at.reason
            ),
        }
    }
}

/// What opening found on the disk: the superblock in force, if any, and
/// which slot could not be read (a torn superblock write or damage, the
/// previous generation was used).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Found {
    /// `None` for a blank disk.
    pub superblock: Option<Superblock>,
    /// A slot that was neither blank nor valid.
    pub unreadable_slot: Option<u8>,
}

/// Step one of opening: the two slots of a disk of `capacity` bytes.
pub fn find(slot0: &[u8], slot1: &[u8], capacity: u64) -> Result<Found, Damage> {
    match read_slots(slot0, slot1, capacity) {
        Slots::Blank => Ok(Found {
            superblock: None,
            unreadable_slot: None,
        }),
        Slots::Found {
            superblock,
            other_unreadable,
        } => Ok(Found {
            superblock: Some(superblock),
            unreadable_slot: other_unreadable,
        }),
        Slots::Unreadable => Err(Damage::Superblocks),
    }
}

/// Step two: replays `log` (the `superblock.length` bytes it names) into
/// `apply`; returns the number of records, or the damage if any byte of it
/// does not read back.
pub fn replay_all(
    superblock: Superblock,
    log: &[u8],
    apply: impl FnMut(Args),
) -> Result<u64, Damage> {
    let report = replay(log, apply);
    match report.torn_tail {
        None => Ok(report.records),
        Some(at) => Err(Damage::Log { superblock, at }),
    }
}

/// What [`inspect`] found on a disk image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inspection {
    /// The superblock in force (for a blank disk, `None`).
    pub superblock: Option<Superblock>,
    /// A superblock slot that could not be read.
    pub unreadable_slot: Option<u8>,
    /// Records that replay.
    pub records: u64,
    /// Bytes of log that replay (the header and whole, valid records).
    pub valid_bytes: u64,
    /// Why the log cannot be opened as it is, if it cannot.
    pub damage: Option<Damage>,
}

impl Inspection {
    /// Whether the server would open this disk.
    pub fn is_clean(&self) -> bool {
        self.damage.is_none()
    }
}

/// Reads a whole disk image as the server would open it, without changing
/// it; `apply` gets every record that replays.
pub fn inspect(disk: &[u8], mut apply: impl FnMut(Args)) -> Inspection {
    let capacity = disk.len() as u64;
    let slot = |i: u64| disk.get((i * SLOT_STRIDE) as usize..).unwrap_or(&[]);
    let mut out = Inspection {
        superblock: None,
        unreadable_slot: None,
        records: 0,
        valid_bytes: 0,
        damage: None,
    };
    let found = match find(slot(0), slot(1), capacity) {
        Ok(found) => found,
        Err(damage) => {
            // Say what the halves of the disk would give, for `fix`.
            let (extent, report) = best_half(disk, &mut apply);
            out.superblock = report.as_ref().map(|r| Superblock {
                generation: 0,
                extent,
                length: r.valid_bytes as u64,
            });
            out.records = report.as_ref().map_or(0, |r| r.records);
            out.valid_bytes = report.map_or(0, |r| r.valid_bytes as u64);
            out.damage = Some(damage);
            return out;
        }
    };
    out.unreadable_slot = found.unreadable_slot;
    let Some(sb) = found.superblock else {
        return out;
    };
    out.superblock = Some(sb);
    let log = log_bytes(disk, sb);
    let report = replay(log, &mut apply);
    out.records = report.records;
    out.valid_bytes = report.valid_bytes as u64;
    out.damage = report
        .torn_tail
        .map(|at| Damage::Log { superblock: sb, at });
    out
}

/// The bytes a superblock names (bounded by the disk: a superblock that
/// decoded lies on it).
fn log_bytes(disk: &[u8], sb: Superblock) -> &[u8] {
    let start = (sb.extent.start as usize).min(disk.len());
    let end = (sb.extent.start + sb.length).min(disk.len() as u64) as usize;
    &disk[start..end]
}

/// With no superblock to trust: the half of the disk whose log replays
/// furthest (in records), and that replay, if either holds a log header;
/// `apply` gets that half's records. A guess (a half can hold an older
/// log), which is why only [`fix`] acts on it, and says what it kept.
fn best_half(
    disk: &[u8],
    apply: &mut impl FnMut(Args),
) -> (superblock::Extent, Option<super::ReplayReport>) {
    let capacity = disk.len() as u64;
    let bytes = |e: superblock::Extent| {
        let end = e.end().min(capacity) as usize;
        &disk[(e.start as usize).min(end)..end]
    };
    let best = (0..2)
        .map(|area| superblock::half(capacity, area))
        .map(|e| (e, replay(bytes(e), |_| {})))
        .filter(|(_, report)| report.valid_bytes > 0)
        .max_by_key(|(_, report)| report.records);
    match best {
        Some((extent, report)) => {
            replay(bytes(extent), apply);
            (extent, Some(report))
        }
        None => (superblock::half(capacity, 0), None),
    }
}

/// What [`fix`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fixed {
    /// The superblock it wrote (into its slot of the image).
    pub superblock: Superblock,
    /// Records the fixed log holds.
    pub records: u64,
    /// Log bytes dropped at and after the damage.
    pub dropped_bytes: u64,
}

/// Cuts the log at its first damaged byte by writing a new superblock
/// with the intact length into `disk` (a whole disk image). With both
/// superblocks unreadable it takes the half of the disk whose log replays
/// furthest. Returns `None` (and changes nothing) when the disk is clean.
pub fn fix(disk: &mut [u8]) -> Option<Fixed> {
    let found = inspect(disk, |_| {});
    let damage = found.damage?;
    let (previous, dropped) = match damage {
        Damage::Log { superblock, at } => (superblock, superblock.length - at.offset as u64),
        Damage::Superblocks => {
            let guess = found.superblock.unwrap_or(Superblock {
                generation: 0,
                extent: superblock::half(disk.len() as u64, 0),
                length: 0,
            });
            (guess, 0)
        }
    };
    // Above both slots' generations, whatever they hold, so the fix wins.
    let sb = Superblock {
        generation: previous.generation.max(highest_generation(disk)) + 1,
        extent: previous.extent,
        length: found.valid_bytes,
    };
    let at = sb.slot_offset() as usize;
    let bytes = sb.encode();
    disk[at..at + bytes.len()].copy_from_slice(&bytes);
    Some(Fixed {
        superblock: sb,
        records: found.records,
        dropped_bytes: dropped,
    })
}

/// The largest generation either slot decodes to (0 if none).
fn highest_generation(disk: &[u8]) -> u64 {
    let capacity = disk.len() as u64;
    (0..2u64)
        .filter_map(|i| {
            let slot = disk.get((i * SLOT_STRIDE) as usize..)?;
            superblock::Superblock::decode(slot, capacity)
        })
        .map(|sb| sb.generation)
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aof::superblock::half;
    use crate::aof::{encode_record, TailReason, HEADER};
    use alloc::vec::Vec;

    const DISK: usize = 4 << 20;

    /// A disk holding `keys` SETs in its first half, named by a superblock
    /// of generation 3.
    fn disk_with(keys: &[&str]) -> (Vec<u8>, Superblock) {
        let mut disk = alloc::vec![0u8; DISK];
        let mut log = HEADER.to_vec();
        for k in keys {
            log.extend(encode_record(&["SET", k, "value"]));
        }
        let sb = Superblock {
            generation: 3,
            extent: half(DISK as u64, 0),
            length: log.len() as u64,
        };
        let start = sb.extent.start as usize;
        disk[start..start + log.len()].copy_from_slice(&log);
        disk[sb.slot_offset() as usize..][..superblock::SIZE].copy_from_slice(&sb.encode());
        (disk, sb)
    }

    fn keys(disk: &[u8]) -> Vec<Vec<u8>> {
        let mut keys = Vec::new();
        inspect(disk, |args| keys.push(args[1].clone()));
        keys
    }

    #[test]
    fn a_clean_disk_reports_every_record() {
        let (disk, sb) = disk_with(&["a", "b", "c"]);
        let found = inspect(&disk, |_| {});
        assert!(found.is_clean());
        assert_eq!(found.records, 3);
        assert_eq!(found.valid_bytes, sb.length);
        assert_eq!(fix(&mut disk.clone()), None, "nothing to fix");
    }

    #[test]
    fn a_blank_disk_is_clean_and_empty() {
        let disk = alloc::vec![0u8; DISK];
        let found = inspect(&disk, |_| {});
        assert!(found.is_clean());
        assert_eq!((found.superblock, found.records), (None, 0));
    }

    #[test]
    fn a_flipped_byte_in_the_middle_is_damage_with_its_offset_and_fix_keeps_the_prefix() {
        let (mut disk, sb) = disk_with(&["a", "b", "c", "d"]);
        let record = encode_record(&["SET", "a", "value"]).len();
        // A byte inside the third record's payload.
        let third = HEADER.len() + 2 * record;
        disk[sb.extent.start as usize + third + 12] ^= 0x40;
        let found = inspect(&disk, |_| {});
        let Some(Damage::Log { at, .. }) = found.damage else {
            panic!("damage expected: {found:?}");
        };
        assert_eq!(
            (at.offset, at.reason),
            (third, TailReason::ChecksumMismatch)
        );
        assert!(found.damage.unwrap().describe().contains(&format!(
            "byte {third} of {} (disk offset {})",
            sb.length,
            sb.extent.start + third as u64
        )));
        assert_eq!(keys(&disk), [b"a".to_vec(), b"b".to_vec()]);
        let fixed = fix(&mut disk).expect("fixed");
        assert_eq!(fixed.records, 2);
        assert_eq!(fixed.dropped_bytes, (2 * record) as u64);
        assert!(fixed.superblock.generation > sb.generation);
        assert!(inspect(&disk, |_| {}).is_clean());
        assert_eq!(keys(&disk), [b"a".to_vec(), b"b".to_vec()]);
    }

    #[test]
    fn a_damaged_header_is_damage_at_byte_zero() {
        let (mut disk, sb) = disk_with(&["a"]);
        disk[sb.extent.start as usize + 2] ^= 1;
        let found = inspect(&disk, |_| {});
        assert!(matches!(found.damage, Some(Damage::Log { at, .. }) if at.offset == 0));
        let fixed = fix(&mut disk).unwrap();
        assert_eq!((fixed.records, fixed.superblock.length), (0, 0));
        assert!(inspect(&disk, |_| {}).is_clean());
    }

    #[test]
    fn two_unreadable_superblocks_are_damage_and_fix_finds_the_log() {
        let (mut disk, _) = disk_with(&["a", "b"]);
        disk[SLOT_STRIDE as usize + 5] ^= 0xff; // generation 3 lives in slot 1
        disk[7] = 1; // slot 0: not blank either
        let found = inspect(&disk, |_| {});
        assert_eq!(found.damage, Some(Damage::Superblocks));
        assert_eq!(found.records, 2, "what the first half would give");
        let fixed = fix(&mut disk).unwrap();
        assert_eq!(fixed.records, 2);
        assert!(inspect(&disk, |_| {}).is_clean());
        assert_eq!(keys(&disk), [b"a".to_vec(), b"b".to_vec()]);
    }

    #[test]
    fn one_unreadable_slot_is_reported_and_the_other_used() {
        let (mut disk, sb) = disk_with(&["a"]);
        let older = Superblock {
            generation: 2,
            ..sb
        };
        disk[older.slot_offset() as usize..][..superblock::SIZE].copy_from_slice(&older.encode());
        disk[older.slot_offset() as usize + 9] ^= 1;
        let found = inspect(&disk, |_| {});
        assert!(found.is_clean());
        assert_eq!(found.unreadable_slot, Some(0));
        assert_eq!(found.superblock, Some(sb));
    }
}
