//! The boards an image can be built for.
//!
//! A board decides the `libos` feature the guest is built with, the target directory it is
//! built in, which image formats are produced, and how QEMU is started.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// A machine Faultline images are built for and booted on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Board {
    /// QEMU's `virt` machine (Cortex-A53, GICv2, SMMUv3): the development and CI platform,
    /// and the board every command uses unless told otherwise.
    #[default]
    QemuVirt,
    /// The Xilinx ZCU102 (Zynq UltraScale+ MPSoC), as real hardware or QEMU's `xlnx-zcu102`.
    Zcu102,
}

impl Board {
    /// Every board, in the order they are listed to users.
    pub const ALL: [Board; 2] = [Board::QemuVirt, Board::Zcu102];

    /// The board's name on the command line, in paths, and as the `libos` feature.
    pub fn name(self) -> &'static str {
        match self {
            Board::QemuVirt => "qemu-virt",
            Board::Zcu102 => "zcu102",
        }
    }

    /// The names of every board, for help texts and error messages.
    pub fn names() -> Vec<&'static str> {
        Board::ALL.iter().map(|b| b.name()).collect()
    }

    /// Parses a board name; an unknown name is an error listing the valid ones.
    pub fn parse(name: &str) -> Result<Board> {
        Board::ALL
            .into_iter()
            .find(|b| b.name() == name)
            .ok_or_else(|| Error::UnknownBoard {
                name: name.to_string(),
                valid: Board::names(),
            })
    }

    /// Whether a legacy uImage is produced for this board: every board can boot from
    /// U-Boot (the zcu102 does on hardware; `qemu-virt` with Debian's `u-boot-qemu`, see
    /// `image/tests/uboot.rs`).
    pub fn wants_uimage(self) -> bool {
        match self {
            Board::QemuVirt | Board::Zcu102 => true,
        }
    }
}

impl fmt::Display for Board {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Board {
    type Err = Error;

    fn from_str(s: &str) -> Result<Board> {
        Board::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for b in Board::ALL {
            assert_eq!(Board::parse(b.name()).unwrap(), b);
            assert_eq!(b.to_string().parse::<Board>().unwrap(), b);
        }
        assert_eq!(Board::QemuVirt.name(), "qemu-virt");
        assert_eq!(Board::Zcu102.name(), "zcu102");
        assert_eq!(Board::default(), Board::QemuVirt);
    }

    #[test]
    fn unknown_board_lists_valid_names() {
        let err = Board::parse("rpi4").unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("rpi4"), "{msg}");
        assert!(msg.contains("qemu-virt"), "{msg}");
        assert!(msg.contains("zcu102"), "{msg}");
        // Matching is exact: no case folding, no prefixes.
        assert!(Board::parse("QEMU-VIRT").is_err());
        assert!(Board::parse("zcu").is_err());
        assert!(Board::parse("").is_err());
    }

    #[test]
    fn every_board_gets_a_uimage() {
        assert!(Board::Zcu102.wants_uimage());
        assert!(Board::QemuVirt.wants_uimage());
    }
}
