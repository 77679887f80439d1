//! U-Boot legacy images ("uImage"): a 64-byte header in front of a flat binary.
//!
//! The zcu102 (and the QFDB it stands in for) boots from U-Boot, as can `qemu-virt`
//! (Debian's `u-boot-qemu`). U-Boot's `bootm` command checks this header's two CRCs, copies the payload to the load address and jumps to
//! the entry point. All header fields are big-endian:
//!
//! | offset | size | field                                        |
//! |--------|------|----------------------------------------------|
//! | 0      | 4    | magic, [`MAGIC`]                             |
//! | 4      | 4    | CRC32 of the header with this field zero     |
//! | 8      | 4    | creation time, seconds since the Unix epoch  |
//! | 12     | 4    | payload size                                 |
//! | 16     | 4    | load address                                 |
//! | 20     | 4    | entry point                                  |
//! | 24     | 4    | CRC32 of the payload                         |
//! | 28     | 1    | operating system ([`OS_LINUX`])              |
//! | 29     | 1    | architecture ([`ARCH_ARM64`])                |
//! | 30     | 1    | image type ([`TYPE_KERNEL`])                 |
//! | 31     | 1    | compression ([`COMP_NONE`])                  |
//! | 32     | 32   | name, NUL-padded                             |

use crate::error::{Error, Result};
use crate::raw::RawImage;

/// Identifies a legacy image header.
pub const MAGIC: u32 = 0x2705_1956;
/// Size of the header in bytes.
pub const HEADER_SIZE: usize = 64;
/// Size of the name field in bytes.
pub const NAME_SIZE: usize = 32;
/// OS code for Linux: `bootm` then boots it like an arm64 Linux kernel (x0 = DTB address).
pub const OS_LINUX: u8 = 5;
/// Architecture code for AArch64.
pub const ARCH_ARM64: u8 = 22;
/// Image type code for an OS kernel.
pub const TYPE_KERNEL: u8 = 2;
/// Compression code for an uncompressed payload.
pub const COMP_NONE: u8 = 0;

/// The fields of a legacy header that vary between images.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Creation time, seconds since the Unix epoch.
    pub time: u32,
    /// Payload size in bytes.
    pub size: u32,
    /// Where `bootm` copies the payload.
    pub load: u32,
    /// Where `bootm` jumps.
    pub entry: u32,
    /// CRC32 of the payload.
    pub data_crc: u32,
    /// Image name (at most 31 bytes are kept, so the field stays NUL-terminated).
    pub name: String,
}

impl Header {
    /// Encodes the header, computing the header CRC over the encoded bytes.
    pub fn to_bytes(&self) -> [u8; HEADER_SIZE] {
        let mut h = [0u8; HEADER_SIZE];
        h[0..4].copy_from_slice(&MAGIC.to_be_bytes());
        // h[4..8], the header CRC, stays zero until the rest is filled in.
        h[8..12].copy_from_slice(&self.time.to_be_bytes());
        h[12..16].copy_from_slice(&self.size.to_be_bytes());
        h[16..20].copy_from_slice(&self.load.to_be_bytes());
        h[20..24].copy_from_slice(&self.entry.to_be_bytes());
        h[24..28].copy_from_slice(&self.data_crc.to_be_bytes());
        h[28] = OS_LINUX;
        h[29] = ARCH_ARM64;
        h[30] = TYPE_KERNEL;
        h[31] = COMP_NONE;
        let name = truncate(&self.name, NAME_SIZE - 1);
        h[32..32 + name.len()].copy_from_slice(name.as_bytes());
        let hcrc = crc32fast::hash(&h);
        h[4..8].copy_from_slice(&hcrc.to_be_bytes());
        h
    }
}

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
fn truncate(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Builds a complete legacy image (header followed by the payload) for `raw`.
///
/// Addresses must fit the header's 32-bit fields.
pub fn build(raw: &RawImage, name: &str, time: u32) -> Result<Vec<u8>> {
    let addr32 = |what: &str, value: u64| {
        u32::try_from(value).map_err(|_| {
            Error::UImage(format!(
                "{what} {value:#x} does not fit the legacy header's 32 bits"
            ))
        })
    };
    let size = u32::try_from(raw.bytes.len())
        .map_err(|_| Error::UImage(format!("payload of {} bytes is too large", raw.bytes.len())))?;
    let header = Header {
        time,
        size,
        load: addr32("load address", raw.load_addr)?,
        entry: addr32("entry point", raw.entry)?,
        data_crc: crc32fast::hash(&raw.bytes),
        name: name.to_string(),
    };
    let mut image = Vec::with_capacity(HEADER_SIZE + raw.bytes.len());
    image.extend_from_slice(&header.to_bytes());
    image.extend_from_slice(&raw.bytes);
    Ok(image)
}

/// The creation time to stamp: `$SOURCE_DATE_EPOCH` when set (reproducible builds),
/// otherwise now.
pub fn timestamp() -> u32 {
    if let Some(t) = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|v| v.trim().parse::<u32>().ok())
    {
        return t;
    }
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs().min(u32::MAX as u64) as u32)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bit-at-a-time CRC-32 (reflected polynomial 0xEDB88320), written independently of
    /// `crc32fast` so the tests do not check the library against itself.
    fn crc32_reference(data: &[u8]) -> u32 {
        let mut crc = 0xffff_ffffu32;
        for &byte in data {
            crc ^= byte as u32;
            for _ in 0..8 {
                let mask = (crc & 1).wrapping_neg();
                crc = (crc >> 1) ^ (0xedb8_8320 & mask);
            }
        }
        !crc
    }

    fn be32(b: &[u8], at: usize) -> u32 {
        u32::from_be_bytes(b[at..at + 4].try_into().unwrap())
    }

    #[test]
    fn reference_crc_matches_the_standard_check_value() {
        assert_eq!(crc32_reference(b"123456789"), 0xcbf4_3926);
    }

    #[test]
    fn header_fields_and_crcs() {
        let raw = RawImage {
            bytes: (0..=255u8).cycle().take(1000).collect(),
            load_addr: 0x0008_0000,
            entry: 0x0008_0040,
        };
        let img = build(&raw, "faultline hello", 1_700_000_000).unwrap();
        assert_eq!(img.len(), HEADER_SIZE + 1000);
        let h = &img[..HEADER_SIZE];
        assert_eq!(be32(h, 0), 0x2705_1956);
        assert_eq!(be32(h, 8), 1_700_000_000);
        assert_eq!(be32(h, 12), 1000);
        assert_eq!(be32(h, 16), 0x0008_0000);
        assert_eq!(be32(h, 20), 0x0008_0040);
        assert_eq!(be32(h, 24), crc32_reference(&raw.bytes));
        assert_eq!(&h[28..32], &[5, 22, 2, 0]);
        assert_eq!(&h[32..47], b"faultline hello");
        assert!(h[47..].iter().all(|&b| b == 0));
        // Header CRC: over the header with its own field zeroed.
        let mut zeroed = h.to_vec();
        zeroed[4..8].fill(0);
        assert_eq!(be32(h, 4), crc32_reference(&zeroed));
        assert_eq!(&img[HEADER_SIZE..], &raw.bytes[..]);
    }

    #[test]
    fn long_names_are_cut_and_stay_terminated() {
        let h = Header {
            time: 0,
            size: 0,
            load: 0,
            entry: 0,
            data_crc: 0,
            name: "faultline a-very-long-application-name".into(),
        }
        .to_bytes();
        assert_eq!(&h[32..63], b"faultline a-very-long-applicati");
        assert_eq!(h[63], 0);
        assert_eq!(truncate("aé", 2), "a");
    }

    #[test]
    fn addresses_above_4g_are_refused() {
        let raw = RawImage {
            bytes: vec![0; 4],
            load_addr: 0x1_0000_0000,
            entry: 0x1_0000_0000,
        };
        let msg = build(&raw, "x", 0).unwrap_err().to_string();
        assert!(msg.contains("load address"), "{msg}");
    }
}
