//! Boot arguments embedded in the image.
//!
//! On boards without a device tree (zcu102 booted from U-Boot's `bootm` of a legacy
//! image, or QEMU's `xlnx-zcu102`), the guest cannot get a command line from the boot
//! loader, so the tool writes it into a reserved section of the kernel itself. The kernel
//! reserves a zero-filled `.bootargs` section of [`SECTION_SIZE`] bytes; the tool fills it
//! with:
//!
//! | bytes        | contents                                      |
//! |--------------|-----------------------------------------------|
//! | `0..8`       | [`MAGIC`] (`FLARGS01`)                        |
//! | `8..12`      | length `L` of the command line, u32 little-endian |
//! | `12..12+L`   | the command line, UTF-8, arguments joined by single spaces |
//!
//! The rest of the section is zero. The guest splits the line on whitespace, so an
//! argument may not contain whitespace, `"` or control characters.

use crate::elf::Elf;
use crate::error::{Error, Result};

/// Name of the ELF section the kernel reserves for the arguments.
pub const SECTION: &str = ".bootargs";
/// Size of that section as the kernel reserves it.
pub const SECTION_SIZE: usize = 4096;
/// Marks a section the tool has filled in (format version 1).
pub const MAGIC: [u8; 8] = *b"FLARGS01";
/// Bytes before the command line: magic and length.
pub const HEADER_SIZE: usize = 12;
/// The longest command line that fits a [`SECTION_SIZE`] section.
pub const MAX_LINE: usize = SECTION_SIZE - HEADER_SIZE;

/// Checks each argument and joins them with single spaces into the guest's command line.
///
/// Arguments must be non-empty and free of whitespace, `"` and control characters,
/// because the guest splits the line on whitespace and knows no quoting.
pub fn command_line(args: &[String]) -> Result<String> {
    for arg in args {
        if arg.is_empty() {
            return Err(Error::BootArgs(
                "empty argument (the guest splits on whitespace, so it would vanish)".into(),
            ));
        }
        if let Some(c) = arg
            .chars()
            .find(|c| c.is_whitespace() || *c == '"' || c.is_control())
        {
            return Err(Error::BootArgs(format!(
                "argument {arg:?} contains {c:?}; the guest splits its command line on \
                 whitespace and has no quoting, so arguments may not contain whitespace, \
                 '\"' or control characters"
            )));
        }
    }
    Ok(args.join(" "))
}

/// Encodes `line` as the contents of a `.bootargs` section of `capacity` bytes.
pub fn encode(line: &str, capacity: usize) -> Result<Vec<u8>> {
    let max = capacity.saturating_sub(HEADER_SIZE);
    if capacity < HEADER_SIZE || line.len() > max {
        return Err(Error::BootArgs(format!(
            "command line is {} bytes; at most {max} fit the {capacity}-byte {SECTION} section",
            line.len()
        )));
    }
    let mut block = vec![0u8; capacity];
    block[..8].copy_from_slice(&MAGIC);
    block[8..12].copy_from_slice(&(line.len() as u32).to_le_bytes());
    block[HEADER_SIZE..HEADER_SIZE + line.len()].copy_from_slice(line.as_bytes());
    Ok(block)
}

/// Writes `args` into the `.bootargs` section of the ELF in `elf_bytes`.
///
/// Returns whether the section was written. An ELF without the section is accepted
/// (and left alone) only when there are no arguments to embed.
pub fn patch(elf_bytes: &mut [u8], args: &[String]) -> Result<bool> {
    let line = command_line(args)?;
    let section = Elf::parse(elf_bytes)?.section(SECTION)?;
    let Some(section) = section else {
        if line.is_empty() {
            return Ok(false);
        }
        return Err(Error::BootArgs(format!(
            "the kernel has no {SECTION} section to hold arguments \
             (it must reserve {SECTION_SIZE} zero bytes in a section of that name)"
        )));
    };
    let block = encode(&line, section.size as usize)?;
    let start = section.offset as usize;
    elf_bytes[start..start + block.len()].copy_from_slice(&block);
    Ok(true)
}

/// Reads back the command line from a `.bootargs` block, if it holds one (for tests and
/// for inspecting images).
pub fn decode(block: &[u8]) -> Option<&str> {
    if block.len() < HEADER_SIZE || block[..8] != MAGIC {
        return None;
    }
    let len = u32::from_le_bytes(block[8..12].try_into().ok()?) as usize;
    let line = block.get(HEADER_SIZE..HEADER_SIZE.checked_add(len)?)?;
    std::str::from_utf8(line).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use object::write::{Object, StandardSection, StandardSegment};
    use object::{Architecture, BinaryFormat, Endianness, SectionKind};

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    /// An AArch64 object with a text section and a zero-filled `.bootargs`, written by
    /// `object::write` (an ELF the tool did not hand-craft itself).
    fn kernel_with_bootargs(size: usize) -> Vec<u8> {
        let mut obj = Object::new(BinaryFormat::Elf, Architecture::Aarch64, Endianness::Little);
        let text = obj.section_id(StandardSection::Text);
        // wfe; b .-4
        obj.append_section_data(text, &[0x5f, 0x20, 0x03, 0xd5, 0xff, 0xff, 0xff, 0x17], 4);
        let seg = obj.segment_name(StandardSegment::Data).to_vec();
        let args = obj.add_section(seg, SECTION.as_bytes().to_vec(), SectionKind::Data);
        obj.append_section_data(args, &vec![0; size], 8);
        obj.write().unwrap()
    }

    fn bootargs_bytes(elf: &[u8]) -> &[u8] {
        let s = Elf::parse(elf).unwrap().section(SECTION).unwrap().unwrap();
        &elf[s.offset as usize..(s.offset + s.size) as usize]
    }

    #[test]
    fn joins_with_single_spaces() {
        assert_eq!(command_line(&[]).unwrap(), "");
        assert_eq!(
            command_line(&strings(&["--mode=fault", "size=4M", "ü"])).unwrap(),
            "--mode=fault size=4M ü"
        );
    }

    #[test]
    fn rejects_arguments_the_guest_would_split() {
        for bad in ["a b", "tab\there", "new\nline", "say\"hi\"", "nul\0", ""] {
            let err = command_line(&strings(&["ok", bad])).unwrap_err();
            assert!(matches!(err, Error::BootArgs(_)), "{bad:?}: {err}");
        }
        let msg = command_line(&strings(&["a b"])).unwrap_err().to_string();
        assert!(msg.contains("whitespace"), "{msg}");
    }

    #[test]
    fn encodes_magic_length_and_line() {
        let block = encode("x=1 y", 64).unwrap();
        assert_eq!(block.len(), 64);
        assert_eq!(&block[..8], b"FLARGS01");
        assert_eq!(&block[8..12], &5u32.to_le_bytes());
        assert_eq!(&block[12..17], b"x=1 y");
        assert!(block[17..].iter().all(|&b| b == 0));
        assert_eq!(decode(&block), Some("x=1 y"));
    }

    #[test]
    fn longest_line_fits_and_one_more_byte_does_not() {
        let line = "a".repeat(MAX_LINE);
        assert_eq!(encode(&line, SECTION_SIZE).unwrap().len(), SECTION_SIZE);
        let err = encode(&"a".repeat(MAX_LINE + 1), SECTION_SIZE).unwrap_err();
        assert!(err.to_string().contains("4084"), "{err}");
    }

    #[test]
    fn patches_the_section_of_an_object_written_elf() {
        let mut elf = kernel_with_bootargs(SECTION_SIZE);
        let before = elf.clone();
        assert!(patch(&mut elf, &strings(&["hello", "n=3"])).unwrap());
        let block = bootargs_bytes(&elf);
        assert_eq!(&block[..8], b"FLARGS01");
        assert_eq!(u32::from_le_bytes(block[8..12].try_into().unwrap()), 9);
        assert_eq!(&block[12..21], b"hello n=3");
        assert!(block[21..].iter().all(|&b| b == 0));
        // Nothing outside the section changed.
        let s = Elf::parse(&before)
            .unwrap()
            .section(SECTION)
            .unwrap()
            .unwrap();
        let (a, b) = (s.offset as usize, (s.offset + s.size) as usize);
        assert_eq!(before[..a], elf[..a]);
        assert_eq!(before[b..], elf[b..]);
    }

    #[test]
    fn repatching_clears_a_longer_old_line() {
        let mut elf = kernel_with_bootargs(SECTION_SIZE);
        patch(&mut elf, &strings(&["a-much-longer-argument"])).unwrap();
        patch(&mut elf, &strings(&["b"])).unwrap();
        let block = bootargs_bytes(&elf);
        assert_eq!(decode(block), Some("b"));
        assert!(block[13..].iter().all(|&b| b == 0));
    }

    #[test]
    fn empty_args_still_mark_the_section() {
        let mut elf = kernel_with_bootargs(SECTION_SIZE);
        assert!(patch(&mut elf, &[]).unwrap());
        assert_eq!(decode(bootargs_bytes(&elf)), Some(""));
    }

    #[test]
    fn missing_section_is_an_error_only_with_args() {
        let mut obj = Object::new(BinaryFormat::Elf, Architecture::Aarch64, Endianness::Little);
        let text = obj.section_id(StandardSection::Text);
        obj.append_section_data(text, &[0; 8], 4);
        let mut elf = obj.write().unwrap();
        let before = elf.clone();
        assert!(!patch(&mut elf, &[]).unwrap());
        assert_eq!(elf, before);
        let err = patch(&mut elf, &strings(&["x"])).unwrap_err();
        assert!(err.to_string().contains(".bootargs"), "{err}");
    }

    #[test]
    fn too_long_for_the_section() {
        let mut elf = kernel_with_bootargs(SECTION_SIZE);
        let arg = "x".repeat(MAX_LINE + 1);
        let err = patch(&mut elf, &[arg]).unwrap_err();
        assert!(matches!(err, Error::BootArgs(_)), "{err}");
    }

    #[test]
    fn decode_rejects_foreign_blocks() {
        assert_eq!(decode(&[0; 64]), None);
        let mut block = encode("abc", 64).unwrap();
        block[8..12].copy_from_slice(&1000u32.to_le_bytes());
        assert_eq!(decode(&block), None);
    }
}
