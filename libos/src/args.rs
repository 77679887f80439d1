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

/// Prefix of the arguments the kernel keeps for itself
/// (`faultline.NAME=VALUE`); the app never sees them.
pub const KERNEL_PREFIX: &str = "faultline.";

/// The kernel's own options from the command line, by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelOptions {
    items: Vec<(String, String)>,
}

impl KernelOptions {
    /// The value of option `name` (the last one given wins); `Some("")`
    /// for an option given without `=VALUE`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.items
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

impl Args {
    /// Splits the kernel's options (`faultline.NAME[=VALUE]`) from the
    /// app's arguments, keeping the app's in order.
    pub fn split_kernel_options(self) -> (KernelOptions, Args) {
        let mut options = KernelOptions::default();
        let mut app = Vec::new();
        for item in self.items {
            match item.strip_prefix(KERNEL_PREFIX) {
                Some(option) => {
                    let (name, value) = option.split_once('=').unwrap_or((option, ""));
                    options.items.push((name.to_string(), value.to_string()));
                }
                None => app.push(item),
            }
        }
        (options, Args { items: app })
    }
}

/// A unicast Ethernet address written `02:00:5e:10:00:01` (or with `-`).
pub fn parse_mac(text: &str) -> Option<[u8; 6]> {
    let mut mac = [0u8; 6];
    let mut parts = text.split([':', '-']);
    for byte in &mut mac {
        let part = parts.next()?;
        if part.len() != 2 {
            return None;
        }
        *byte = u8::from_str_radix(part, 16).ok()?;
    }
    let unicast = mac[0] & 1 == 0;
    (parts.next().is_none() && unicast && mac != [0; 6]).then_some(mac)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_options_are_taken_out_of_the_apps_arguments() {
        let args =
            Args::parse("appendfsync always faultline.mac=02:00:00:00:00:07 faultline.quiet");
        let (kernel, app) = args.split_kernel_options();
        assert_eq!(app, Args::parse("appendfsync always"));
        assert_eq!(kernel.get("mac"), Some("02:00:00:00:00:07"));
        assert_eq!(kernel.get("quiet"), Some(""));
        assert_eq!(kernel.get("smp"), None);
    }

    #[test]
    fn only_a_well_formed_unicast_mac_is_taken() {
        assert_eq!(
            parse_mac("02:00:5e:10:00:01"),
            Some([2, 0, 0x5e, 0x10, 0, 1])
        );
        assert_eq!(
            parse_mac("02-00-5E-10-00-01"),
            Some([2, 0, 0x5e, 0x10, 0, 1])
        );
        for bad in [
            "",
            "02:00:5e:10:00",
            "02:00:5e:10:00:01:02",
            "2:00:5e:10:00:01",
            "02:00:5e:10:00:zz",
            "01:00:5e:00:00:01", // multicast
            "00:00:00:00:00:00",
        ] {
            assert_eq!(parse_mac(bad), None, "{bad}");
        }
    }

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
