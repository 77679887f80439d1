//! Reading the guest ELF: the checks and the few facts the image formats need.
//!
//! The tool only ever handles AArch64, little-endian, 64-bit executables, so this module
//! rejects anything else up front with a message saying what was found instead.

use object::elf::{FileHeader64, EM_AARCH64, PT_LOAD, SHT_NOBITS};
use object::read::elf::{FileHeader, ProgramHeader, SectionHeader};
use object::LittleEndian;

use crate::error::{Error, Result};

const LE: LittleEndian = LittleEndian;

/// A `PT_LOAD` program header: where a piece of the file goes in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadSegment {
    /// Physical load address (`p_paddr`), which is what the loaders place bytes at.
    pub paddr: u64,
    /// Offset of the segment's bytes in the file (`p_offset`).
    pub offset: u64,
    /// Bytes taken from the file (`p_filesz`).
    pub filesz: u64,
    /// Bytes occupied in memory (`p_memsz`), the excess being zero-filled.
    pub memsz: u64,
}

/// A section located in the file, for patching its bytes in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SectionInfo {
    /// Offset of the section's bytes in the file.
    pub offset: u64,
    /// Size in bytes.
    pub size: u64,
}

/// A parsed AArch64 ELF64 little-endian file, borrowed from its bytes.
pub struct Elf<'a> {
    bytes: &'a [u8],
    header: &'a FileHeader64<LittleEndian>,
}

impl<'a> Elf<'a> {
    /// Checks the identification and machine fields, then keeps the header for queries.
    pub fn parse(bytes: &'a [u8]) -> Result<Elf<'a>> {
        if bytes.len() < 16 || &bytes[..4] != b"\x7fELF" {
            return Err(Error::elf("", "not an ELF file (bad magic)"));
        }
        match bytes[4] {
            2 => {}
            1 => return Err(Error::elf("", "32-bit ELF; need a 64-bit AArch64 ELF")),
            c => return Err(Error::elf("", format!("unknown ELF class {c}"))),
        }
        match bytes[5] {
            1 => {}
            2 => {
                return Err(Error::elf(
                    "",
                    "big-endian ELF; need a little-endian AArch64 ELF",
                ))
            }
            d => return Err(Error::elf("", format!("unknown ELF data encoding {d}"))),
        }
        let header = FileHeader64::<LittleEndian>::parse(bytes)
            .map_err(|e| Error::elf("", format!("unreadable ELF header: {e}")))?;
        let machine = header.e_machine(LE);
        if machine != EM_AARCH64 {
            return Err(Error::elf(
                "",
                format!(
                    "machine is {} (e_machine), not AArch64 ({})",
                    machine.0, EM_AARCH64.0
                ),
            ));
        }
        Ok(Elf { bytes, header })
    }

    /// The entry point (`e_entry`).
    pub fn entry(&self) -> u64 {
        self.header.e_entry(LE)
    }

    /// Every `PT_LOAD` segment, in program header order, each checked to lie in the file.
    pub fn load_segments(&self) -> Result<Vec<LoadSegment>> {
        let headers = self
            .header
            .program_headers(LE, self.bytes)
            .map_err(|e| Error::elf("", format!("unreadable program headers: {e}")))?;
        let mut segments = Vec::new();
        for ph in headers.iter().filter(|ph| ph.p_type(LE) == PT_LOAD) {
            let seg = LoadSegment {
                paddr: ph.p_paddr(LE),
                offset: ph.p_offset(LE),
                filesz: ph.p_filesz(LE),
                memsz: ph.p_memsz(LE),
            };
            if !self.in_file(seg.offset, seg.filesz) {
                return Err(Error::elf(
                    "",
                    format!(
                        "segment at {:#x} claims file bytes {:#x}+{:#x} beyond the file's end",
                        seg.paddr, seg.offset, seg.filesz
                    ),
                ));
            }
            segments.push(seg);
        }
        Ok(segments)
    }

    /// Whether `len` bytes from file offset `offset` lie inside the file.
    fn in_file(&self, offset: u64, len: u64) -> bool {
        offset
            .checked_add(len)
            .is_some_and(|end| end <= self.bytes.len() as u64)
    }

    /// The file-backed section called `name`, if there is one.
    ///
    /// A section with that name but no bytes in the file (`SHT_NOBITS`) is an error,
    /// because the callers want to write into it.
    pub fn section(&self, name: &str) -> Result<Option<SectionInfo>> {
        let table = self
            .header
            .sections(LE, self.bytes)
            .map_err(|e| Error::elf("", format!("unreadable section headers: {e}")))?;
        let Some((_, sh)) = table.section_by_name(LE, name.as_bytes()) else {
            return Ok(None);
        };
        if sh.sh_type(LE) == SHT_NOBITS {
            return Err(Error::elf(
                "",
                format!("section {name} has no bytes in the file (SHT_NOBITS)"),
            ));
        }
        let info = SectionInfo {
            offset: sh.sh_offset(LE),
            size: sh.sh_size(LE),
        };
        if !self.in_file(info.offset, info.size) {
            return Err(Error::elf(
                "",
                format!("section {name} extends beyond the file's end"),
            ));
        }
        Ok(Some(info))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{ElfSpec, Segment};

    fn two_segments() -> Vec<u8> {
        ElfSpec {
            machine: 183,
            entry: 0x4008_0000,
            segments: vec![
                Segment {
                    addr: 0x4008_0000,
                    data: vec![1; 32],
                    bss: 0,
                },
                Segment {
                    addr: 0x4009_0000,
                    data: vec![2; 8],
                    bss: 0x100,
                },
            ],
            sections: vec![(".data".into(), 1, 0, 8)],
        }
        .to_bytes()
    }

    #[test]
    fn reads_entry_segments_and_sections() {
        let bytes = two_segments();
        let elf = Elf::parse(&bytes).unwrap();
        assert_eq!(elf.entry(), 0x4008_0000);
        let segs = elf.load_segments().unwrap();
        assert_eq!(segs.len(), 2);
        assert_eq!(segs[1].paddr, 0x4009_0000);
        assert_eq!(segs[1].filesz, 8);
        assert_eq!(segs[1].memsz, 0x108);
        let data = elf.section(".data").unwrap().unwrap();
        assert_eq!(data.offset, segs[1].offset);
        assert_eq!(data.size, 8);
        assert_eq!(elf.section(".bootargs").unwrap(), None);
    }

    #[test]
    fn rejects_other_kinds_of_file() {
        let msg = |b: &[u8]| Elf::parse(b).err().unwrap().to_string();
        assert!(msg(b"#!/bin/sh\n").contains("not an ELF"));

        let mut bytes = two_segments();
        bytes[4] = 1;
        assert!(msg(&bytes).contains("32-bit"), "{}", msg(&bytes));

        let mut bytes = two_segments();
        bytes[5] = 2;
        assert!(msg(&bytes).contains("big-endian"), "{}", msg(&bytes));

        let mut bytes = two_segments();
        bytes[18..20].copy_from_slice(&62u16.to_le_bytes()); // x86-64
        let m = msg(&bytes);
        assert!(m.contains("62") && m.contains("AArch64"), "{m}");
    }

    #[test]
    fn rejects_segments_past_the_end() {
        // Keep the headers (0xb0 bytes) but cut the first segment's data short.
        let bytes = two_segments();
        let elf = Elf::parse(&bytes[..0xc0]).unwrap();
        let msg = elf.load_segments().unwrap_err().to_string();
        assert!(msg.contains("beyond the file's end"), "{msg}");
    }
}
