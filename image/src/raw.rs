//! Flat binaries: the ELF's loadable bytes laid out as they sit in memory.
//!
//! Boot loaders that do not read ELF (U-Boot's `bootm`, `go`, JTAG loaders) want the
//! image as one block of bytes to copy to a load address and jump into.

use crate::elf::Elf;
use crate::error::{Error, Result};

/// The largest flat image the tool will produce. Anything bigger almost certainly comes
/// from segments linked far apart, which would make a mostly-zero file.
pub const MAX_SIZE: u64 = 256 << 20;

/// A flat binary and where it must be loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawImage {
    /// The bytes, from the lowest loaded address on, gaps filled with zeros.
    pub bytes: Vec<u8>,
    /// Physical address of `bytes[0]`.
    pub load_addr: u64,
    /// Address to jump to (the ELF's `e_entry`).
    pub entry: u64,
}

/// Lays out every `PT_LOAD` segment with file bytes (`p_filesz > 0`) at its `p_paddr`,
/// from the lowest address to the end of the highest segment's file bytes.
///
/// Zero-initialised memory past `p_filesz` (`.bss`) is not included: the kernel clears it.
pub fn from_elf(elf_bytes: &[u8]) -> Result<RawImage> {
    let elf = Elf::parse(elf_bytes)?;
    let segments: Vec<_> = elf
        .load_segments()?
        .into_iter()
        .filter(|s| s.filesz > 0)
        .collect();
    if segments.is_empty() {
        return Err(Error::elf("", "no loadable segment with file contents"));
    }
    let load_addr = segments.iter().map(|s| s.paddr).min().unwrap_or(0);
    let mut end = load_addr;
    for s in &segments {
        let seg_end = s.paddr.checked_add(s.filesz).ok_or_else(|| {
            Error::elf(
                "",
                format!("segment at {:#x} wraps the address space", s.paddr),
            )
        })?;
        end = end.max(seg_end);
    }
    let size = end - load_addr;
    if size > MAX_SIZE {
        return Err(Error::elf(
            "",
            format!(
                "loadable segments span {load_addr:#x}..{end:#x} ({size} bytes), more than \
                 the {MAX_SIZE}-byte limit for a flat image; check the linker script's \
                 physical addresses"
            ),
        ));
    }
    let mut bytes = vec![0u8; size as usize];
    for s in &segments {
        let at = (s.paddr - load_addr) as usize;
        let from = s.offset as usize;
        let len = s.filesz as usize;
        bytes[at..at + len].copy_from_slice(&elf_bytes[from..from + len]);
    }
    Ok(RawImage {
        bytes,
        load_addr,
        entry: elf.entry(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{ElfSpec, Segment};

    fn elf(segments: Vec<Segment>, entry: u64) -> Vec<u8> {
        ElfSpec {
            machine: 183,
            entry,
            segments,
            sections: vec![],
        }
        .to_bytes()
    }

    #[test]
    fn two_segments_with_a_gap() {
        // Written out of address order, to check sorting does not depend on it.
        let bytes = elf(
            vec![
                Segment {
                    addr: 0x4010_0010,
                    data: vec![0xbb; 5],
                    bss: 0x1000,
                },
                Segment {
                    addr: 0x4010_0000,
                    data: vec![0xaa; 6],
                    bss: 0,
                },
            ],
            0x4010_0004,
        );
        let raw = from_elf(&bytes).unwrap();
        assert_eq!(raw.load_addr, 0x4010_0000);
        assert_eq!(raw.entry, 0x4010_0004);
        let mut want = vec![0xaa; 6];
        want.extend_from_slice(&[0; 10]);
        want.extend_from_slice(&[0xbb; 5]);
        assert_eq!(raw.bytes, want);
    }

    #[test]
    fn bss_only_segments_are_ignored() {
        let bytes = elf(
            vec![
                Segment {
                    addr: 0x1000,
                    data: vec![1, 2, 3, 4],
                    bss: 0,
                },
                Segment {
                    addr: 0x10_0000,
                    data: vec![],
                    bss: 0x8000,
                },
            ],
            0x1000,
        );
        let raw = from_elf(&bytes).unwrap();
        assert_eq!(raw.bytes, vec![1, 2, 3, 4]);
        assert_eq!(raw.load_addr, 0x1000);
    }

    #[test]
    fn no_loadable_bytes_is_an_error() {
        let bytes = elf(vec![], 0);
        let msg = from_elf(&bytes).unwrap_err().to_string();
        assert!(msg.contains("no loadable segment"), "{msg}");
    }

    #[test]
    fn huge_gaps_are_refused() {
        let bytes = elf(
            vec![
                Segment {
                    addr: 0,
                    data: vec![1],
                    bss: 0,
                },
                Segment {
                    addr: 0x8000_0000,
                    data: vec![2],
                    bss: 0,
                },
            ],
            0,
        );
        let msg = from_elf(&bytes).unwrap_err().to_string();
        assert!(msg.contains("span"), "{msg}");
    }

    #[test]
    fn rejects_non_aarch64() {
        let mut spec = ElfSpec {
            machine: 62,
            entry: 0,
            segments: vec![Segment {
                addr: 0,
                data: vec![1],
                bss: 0,
            }],
            sections: vec![],
        };
        assert!(from_elf(&spec.to_bytes()).is_err());
        spec.machine = 183;
        assert!(from_elf(&spec.to_bytes()).is_ok());
    }
}
