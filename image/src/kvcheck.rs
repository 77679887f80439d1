//! `faultline-image kv-check DISK [--fix]`: what the key-value store's disk
//! holds, and cutting its log at damage when the operator asks.
//!
//! The server refuses to start on a log that does not read back whole
//! (see `kvstore::aof::check`), because cutting it silently would drop
//! acknowledged writes. This command reads the same disk image on the
//! host with the same rules, says where the damage is and what would be
//! kept, and with `--fix` writes a superblock that ends the log before the
//! damage; the server then starts with exactly what the report said.

use std::fmt::Write as _;
use std::path::Path;

use kvstore::aof::check::{self, Damage};
use kvstore::commands::Engine;
use kvstore::config::Config;

use crate::error::{Error, Result};

/// What [`kv_check`] found, and did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// The report's lines, for the console.
    pub text: String,
    /// Whether the disk opens as it is (or does after the fix).
    pub clean: bool,
    /// Keys the (fixed) log replays to.
    pub keys: usize,
}

/// Inspects the disk image at `path`; with `fix`, cuts a damaged log at
/// its first bad byte and writes the image back.
pub fn kv_check(path: &Path, fix: bool) -> Result<Report> {
    let mut disk = std::fs::read(path).map_err(|e| Error::io(path.display().to_string(), e))?;
    let mut text = String::new();
    let (found, keys) = replay(&disk);
    let _ = writeln!(text, "kv-check: {} ({} bytes)", path.display(), disk.len());
    match found.superblock {
        None => {
            let _ = writeln!(text, "kv-check: blank disk: no log yet");
        }
        Some(sb) => {
            let _ = writeln!(
                text,
                "kv-check: superblock generation {}: log of {} bytes at disk offset {} (room for {})",
                sb.generation, sb.length, sb.extent.start, sb.extent.limit
            );
        }
    }
    if let Some(slot) = found.unreadable_slot {
        let _ = writeln!(
            text,
            "kv-check: superblock slot {slot} is unreadable (a torn write or damage); the other slot is in force"
        );
    }
    let _ = writeln!(
        text,
        "kv-check: {} records replay ({} bytes), {keys} keys",
        found.records, found.valid_bytes
    );
    let Some(damage) = found.damage else {
        let _ = writeln!(text, "kv-check: clean: the server opens this log as it is");
        return Ok(Report {
            text,
            clean: true,
            keys,
        });
    };
    let _ = writeln!(text, "kv-check: DAMAGED: {}", damage.describe());
    let dropped = match damage {
        Damage::Log { superblock, at } => superblock.length - at.offset as u64,
        Damage::Superblocks => 0,
    };
    if !fix {
        let _ = writeln!(
            text,
            "kv-check: --fix would keep those {} records ({keys} keys) and drop the {dropped} bytes from the damage on",
            found.records
        );
        return Ok(Report {
            text,
            clean: false,
            keys,
        });
    }
    let fixed = check::fix(&mut disk).expect("a damaged disk gets a fix");
    std::fs::write(path, &disk).map_err(|e| Error::io(path.display().to_string(), e))?;
    let (after, keys) = replay(&disk);
    let _ = writeln!(
        text,
        "kv-check: fixed: superblock generation {} ends the log at {} bytes: {} records, {keys} keys kept, {} bytes dropped",
        fixed.superblock.generation, fixed.superblock.length, fixed.records, fixed.dropped_bytes
    );
    Ok(Report {
        text,
        clean: after.is_clean(),
        keys,
    })
}

/// Inspects `disk` and counts the keys its log loads to, as the server
/// would load them now.
fn replay(disk: &[u8]) -> (check::Inspection, usize) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let mut engine = Engine::new(Config::default(), now);
    let found = check::inspect(disk, |args| {
        let _ = engine.load(args, now);
    });
    let keys = engine.key_count();
    (found, keys)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kvstore::aof::superblock::{half, Superblock, SIZE};
    use kvstore::aof::{encode_record, HEADER};

    const DISK: u64 = 4 << 20;

    fn disk_file(name: &str, keys: &[&str]) -> (std::path::PathBuf, Superblock) {
        let mut disk = vec![0u8; DISK as usize];
        let mut log = HEADER.to_vec();
        for k in keys {
            log.extend(encode_record(&["SET", k, "value"]));
        }
        let sb = Superblock {
            generation: 1,
            extent: half(DISK, 0),
            length: log.len() as u64,
        };
        let start = sb.extent.start as usize;
        disk[start..start + log.len()].copy_from_slice(&log);
        disk[sb.slot_offset() as usize..][..SIZE].copy_from_slice(&sb.encode());
        let path =
            std::env::temp_dir().join(format!("kv-check-{}-{name}.disk", std::process::id()));
        std::fs::write(&path, disk).unwrap();
        (path, sb)
    }

    #[test]
    fn a_clean_disk_is_reported_with_its_keys() {
        let (path, _) = disk_file("clean", &["a", "b", "a"]);
        let report = kv_check(&path, false).unwrap();
        assert!(report.clean, "{}", report.text);
        assert_eq!(report.keys, 2);
        assert!(report.text.contains("3 records replay"), "{}", report.text);
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn damage_is_reported_then_fixed_keeping_what_was_promised() {
        let (path, sb) = disk_file("damaged", &["a", "b", "c"]);
        let mut disk = std::fs::read(&path).unwrap();
        let last = sb.extent.start as usize + sb.length as usize - 3;
        disk[last] ^= 0x10;
        std::fs::write(&path, &disk).unwrap();
        let report = kv_check(&path, false).unwrap();
        assert!(!report.clean);
        assert!(
            report.text.contains("DAMAGED: the log is damaged at byte"),
            "{}",
            report.text
        );
        assert!(
            report
                .text
                .contains("--fix would keep those 2 records (2 keys)"),
            "{}",
            report.text
        );
        assert_eq!(
            std::fs::read(&path).unwrap(),
            disk,
            "inspecting changes nothing"
        );
        let fixed = kv_check(&path, true).unwrap();
        assert!(fixed.clean, "{}", fixed.text);
        assert_eq!(fixed.keys, 2);
        assert!(kv_check(&path, false).unwrap().clean);
        std::fs::remove_file(path).unwrap();
    }
}
