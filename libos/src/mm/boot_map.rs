//! The identity map the boot assembly turns the MMU on with: one level-1
//! table of 1 GiB blocks, computed at compile time from the board, so no Rust
//! code ever runs with the MMU off. The kernel replaces it with its own
//! fine-grained table as soon as the frame allocator is up.

use hw::board::{Board, BootSlot, GIB};

const VALID_BLOCK: u64 = 0b01;
const ATTR_INDEX_SHIFT: u64 = 2;
const INNER_SHAREABLE: u64 = 0b11 << 8;
const ACCESS_FLAG: u64 = 1 << 10;
const NOT_GLOBAL: u64 = 1 << 11;
const PXN: u64 = 1 << 53;
const UXN: u64 = 1 << 54;
/// MAIR index of device memory (see arch::MAIR).
const ATTR_DEVICE: u64 = 0;
/// MAIR index of normal memory.
const ATTR_NORMAL: u64 = 1;

/// A page-aligned level-1 translation table.
#[repr(C, align(4096))]
pub struct BootTable(pub [u64; 512]);

/// The boot identity map of `board`: RAM as normal executable memory, MMIO
/// as device memory, non-global (ASID 0) so it never clashes with the
/// kernel's table.
pub const fn boot_map(board: &Board) -> BootTable {
    let mut entries = [0u64; 512];
    let mut i = 0;
    while i < 512 {
        let base = (i * GIB) as u64 | VALID_BLOCK | ACCESS_FLAG | NOT_GLOBAL;
        entries[i] = match board.boot_slot(i) {
            BootSlot::Invalid => 0,
            BootSlot::Normal => base | (ATTR_NORMAL << ATTR_INDEX_SHIFT) | INNER_SHAREABLE | UXN,
            BootSlot::Device => base | (ATTR_DEVICE << ATTR_INDEX_SHIFT) | PXN | UXN,
        };
        i += 1;
    }
    BootTable(entries)
}

/// The boot identity map of the board this image is built for.
#[cfg(target_os = "none")]
#[unsafe(no_mangle)]
pub static BOOT_MAP: BootTable = boot_map(hw::board::CURRENT);

#[cfg(test)]
mod tests {
    use super::*;
    use hw::board::{QEMU_VIRT, ZCU102};

    #[test]
    fn virt_ram_is_executable_normal_memory_and_mmio_is_device() {
        let t = boot_map(&QEMU_VIRT).0;
        assert_eq!(
            t[1],
            0x4000_0000 | 0b01 | (1 << 2) | (0b11 << 8) | (1 << 10) | (1 << 11) | UXN
        );
        assert_eq!(t[0] & PXN, PXN, "MMIO is never executable");
        assert_eq!((t[0] >> 2) & 7, ATTR_DEVICE);
        assert_eq!(t[256] & !0xfff_u64 & ((1 << 48) - 1), 256 << 30);
        assert_eq!(t[2 + 100], 0);
    }

    #[test]
    fn zcu102_maps_ddr_from_zero() {
        let t = boot_map(&ZCU102).0;
        assert_eq!(t[0] & ((1 << 48) - 1) & !0xfff, 0);
        assert_eq!(t[0] & 1, 1);
        assert_eq!((t[3] >> 2) & 7, ATTR_DEVICE);
        assert_eq!(t[2], 0);
    }
}
