//! The application's arguments: from the DTB's `/chosen/bootargs` (QEMU's
//! `-append`), or else from the `.bootargs` section the image tool fills.

extern crate alloc;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

/// Magic at the start of a filled `.bootargs` section.
pub const EMBEDDED_MAGIC: &[u8; 8] = b"FLARGS01";

/// The command line stored in a `.bootargs` section, if one was written:
/// magic, u32 little-endian length, UTF-8 text.
pub fn embedded_command_line(section: &[u8]) -> Option<&str> {
    if section.get(..8)? != EMBEDDED_MAGIC {
        return None;
    }
    let len = u32::from_le_bytes(section.get(8..12)?.try_into().ok()?) as usize;
    core::str::from_utf8(section.get(12..12usize.checked_add(len)?)?).ok()
}

/// An application's arguments, split on whitespace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Args {
    items: Vec<String>,
}

impl Args {
    /// Splits a command line into arguments.
    pub fn parse(command_line: &str) -> Args {
        Args {
            items: command_line
                .split_ascii_whitespace()
                .map(ToString::to_string)
                .collect(),
        }
    }

    /// Number of arguments.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The `i`th argument.
    pub fn get(&self, i: usize) -> Option<&str> {
        self.items.get(i).map(String::as_str)
    }

    /// All arguments.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.items.iter().map(String::as_str)
    }

    /// Whether `flag` is one of the arguments.
    pub fn contains(&self, flag: &str) -> bool {
        self.iter().any(|a| a == flag)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_on_any_whitespace() {
        let args = Args::parse("  4096\t4096 \n100 ");
        assert_eq!(args.len(), 3);
        assert_eq!(args.get(0), Some("4096"));
        assert_eq!(args.get(2), Some("100"));
        assert_eq!(args.get(3), None);
        assert!(Args::parse("").is_empty());
        assert!(args.contains("100"));
    }

    #[test]
    fn embedded_section_is_read_only_when_filled_correctly() {
        let mut section = [0u8; 64];
        assert_eq!(embedded_command_line(&section), None);
        section[..8].copy_from_slice(EMBEDDED_MAGIC);
        section[8..12].copy_from_slice(&5u32.to_le_bytes());
        section[12..17].copy_from_slice(b"a b c");
        assert_eq!(embedded_command_line(&section), Some("a b c"));
        section[8..12].copy_from_slice(&1000u32.to_le_bytes());
        assert_eq!(
            embedded_command_line(&section),
            None,
            "length past the section"
        );
        section[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(embedded_command_line(&section), None);
    }
}
