//! NVMe scatter/gather lists: a command's data as byte-granular pieces of
//! memory, for controllers whose Identify data says they take SGLs with no
//! alignment requirement (SGLS bits 1:0 = 01b; QEMU's `nvme` does).
//!
//! ```text
//!  one piece:    DPTR = data block descriptor {address, length}
//!  n pieces:     DPTR = last segment descriptor {list, 16 n} ──► list page:
//!                         [data block 0][data block 1] ... [data block n-1]
//! ```
//!
//! A descriptor is 16 bytes: address (8), length (4), reserved (3), and an
//! identifier byte whose high nibble is the type. The list lives in a page
//! reserved for the command (the one PRP lists use), so it never faults.

use crate::dma_memory::DmaMemory;
use core::ops::Range;

/// Descriptor type: one piece of data.
const DATA_BLOCK: u8 = 0x0;
/// Descriptor type: the last list of descriptors (no further segment).
const LAST_SEGMENT: u8 = 0x3;

/// Bytes per descriptor.
pub const DESCRIPTOR: usize = 16;

/// Most pieces one command carries: one list page of descriptors.
pub const MAX_PIECES: usize = super::PAGE / DESCRIPTOR;

/// Whether the Identify Controller SGLS field (bytes 536..540) says the
/// controller takes SGLs for NVM commands at byte granularity. Dword-aligned
/// SGL support (10b) is not enough for pieces at odd addresses.
pub fn supported(sgls: u32) -> bool {
    sgls & 0b11 == 0b01
}

/// One descriptor as the two little-endian quadwords the controller reads.
fn descriptor(address: u64, length: u32, kind: u8) -> [u64; 2] {
    [address, length as u64 | ((kind as u64) << 60)]
}

/// Why pieces cannot be described.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SglError {
    /// No piece, an empty piece, or one of 4 GiB or more.
    BadPiece,
    /// More pieces than one list page holds ([`MAX_PIECES`]).
    TooMany,
}

/// The data pointer (DPTR, command dwords 6..10) for `pieces` (IOVAs, in
/// order). With more than one piece the data block descriptors are written
/// to `list` (the command's list page).
pub fn encode(pieces: &[Range<usize>], list: &mut DmaMemory) -> Result<[u64; 2], SglError> {
    let data = |p: &Range<usize>| -> Result<[u64; 2], SglError> {
        let len = u32::try_from(p.len()).ok().filter(|&n| n > 0);
        Ok(descriptor(
            p.start as u64,
            len.ok_or(SglError::BadPiece)?,
            DATA_BLOCK,
        ))
    };
    match pieces {
        [] => Err(SglError::BadPiece),
        [one] => data(one),
        many if many.len() * DESCRIPTOR > list.len() || many.len() > MAX_PIECES => {
            Err(SglError::TooMany)
        }
        many => {
            for (slot, p) in many.iter().enumerate() {
                let [address, length] = data(p)?;
                list.set_u64(2 * slot, address);
                list.set_u64(2 * slot + 1, length);
            }
            let bytes = (many.len() * DESCRIPTOR) as u32;
            Ok(descriptor(list.addr(), bytes, LAST_SEGMENT))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dma_memory::test_memory;
    use alloc::vec::Vec;

    /// The list's descriptors, as the controller would read them.
    fn descriptors(list: &DmaMemory) -> Vec<[u64; 2]> {
        (0..list.len() / DESCRIPTOR)
            .map(|i| [list.u64_at(2 * i), list.u64_at(2 * i + 1)])
            .collect()
    }

    #[test]
    fn one_piece_is_a_data_block_in_the_command() {
        let mut list = test_memory(4 * DESCRIPTOR);
        let dptr = encode(
            core::slice::from_ref(&(0x4000_0003..0x4000_1003)),
            &mut list,
        )
        .unwrap();
        assert_eq!(dptr, [0x4000_0003, 0x1000]);
        assert_eq!(descriptors(&list), [[0; 2]; 4], "no list needed");
    }

    #[test]
    fn several_pieces_go_to_the_list_behind_a_last_segment_descriptor() {
        let mut list = test_memory(4 * DESCRIPTOR);
        let pieces = [0x1000..0x101e, 0x5_0003..0x5_1003, 0x101e..0x1020];
        let dptr = encode(&pieces, &mut list).unwrap();
        // Type 3 in the identifier byte (byte 15), 3 descriptors = 48 bytes.
        assert_eq!(dptr, [list.addr(), 0x3000_0000_0000_0000 | 48]);
        let list = descriptors(&list);
        assert_eq!(list[0], [0x1000, 30]);
        assert_eq!(list[1], [0x5_0003, 4096]);
        assert_eq!(list[2], [0x101e, 2]);
        assert_eq!(list[3], [0, 0]);
        // Byte 15 of a descriptor, as the controller reads it.
        assert_eq!(dptr[1].to_le_bytes()[7], 0x30);
        assert_eq!(list[1][1].to_le_bytes()[7], 0x00);
    }

    #[test]
    fn bad_lists_are_refused() {
        let mut list = test_memory(2 * DESCRIPTOR);
        assert_eq!(encode(&[], &mut list), Err(SglError::BadPiece));
        assert_eq!(
            encode(core::slice::from_ref(&(5..5)), &mut list),
            Err(SglError::BadPiece)
        );
        assert_eq!(
            encode(core::slice::from_ref(&(0..1 << 32)), &mut list),
            Err(SglError::BadPiece)
        );
        let three = [0..1, 2..3, 4..5];
        assert_eq!(encode(&three, &mut list), Err(SglError::TooMany));
    }

    #[test]
    fn only_byte_granular_sgl_support_counts() {
        assert!(supported(0x0001_0001), "QEMU: no alignment, bit bucket");
        assert!(!supported(0));
        assert!(!supported(0b10), "dword granularity only");
    }
}
