//! Command queue entries: how software tells the SMMU to drop cached
//! configuration and translations.
//!
//! Field positions are Arm IHI 0070's command formats and match what QEMU
//! 7.2 parses (`CMD_TYPE` word 0 `[7:0]`, `CMD_SSEC` word 0 bit 10 (must be 0),
//! `CMD_SYNC_CS` word 0 `[13:12]`, `CMD_SID` word 1, `CMD_VMID` word 1 `[15:0]`,
//! `CMD_ASID` word 1 `[31:16]`, `CMD_LEAF`/`CMD_STE_RANGE` word 2, `CMD_ADDR`
//! words 2-3 `& ~0xfff`). CFGI_ALL is the spec's CFGI_STE_RANGE (0x04) with
//! Range = 31: QEMU has an internal `SMMU_CMD_CFGI_ALL = 7` that it rejects as
//! an illegal command.

use super::bits::{addr_bits, get, put};
use core::fmt;

/// One command: two little-endian 64-bit words.
pub type RawCommand = [u64; 2];

/// Bytes in a command.
pub const COMMAND_BYTES: usize = 16;

/// Opcodes (word 0 bits `[7:0]`).
pub mod opcode {
    /// Invalidate the cached STE of one stream.
    pub const CFGI_STE: u8 = 0x03;
    /// Invalidate the cached STEs of a range of streams (CFGI_ALL with Range 31).
    pub const CFGI_STE_RANGE: u8 = 0x04;
    /// Invalidate the cached CD of one stream and substream.
    pub const CFGI_CD: u8 = 0x05;
    /// Invalidate stage-1 TLB entries of one ASID.
    pub const TLBI_NH_ASID: u8 = 0x11;
    /// Invalidate stage-1 TLB entries of one address in one ASID.
    pub const TLBI_NH_VA: u8 = 0x12;
    /// Invalidate all non-secure, non-hypervisor TLB entries.
    pub const TLBI_NSNH_ALL: u8 = 0x30;
    /// Complete once every earlier command has completed.
    pub const CMD_SYNC: u8 = 0x46;
}

/// A command the driver issues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// Drop the cached STE of `sid` and, for a two-level table, its level-1
    /// descriptor (Leaf = 0), so an updated STE takes effect.
    CfgiSte {
        /// StreamID.
        sid: u32,
    },
    /// Drop the cached CD (substream 0) of `sid`.
    CfgiCd {
        /// StreamID.
        sid: u32,
    },
    /// Drop every cached STE and CD.
    CfgiAll,
    /// Drop the TLB entries for `va` in `asid`; with `leaf`, only last-level
    /// entries (not cached table walks).
    TlbiNhVa {
        /// ASID the entries are tagged with.
        asid: u16,
        /// Virtual address (the page containing it).
        va: u64,
        /// Only last-level entries.
        leaf: bool,
    },
    /// Drop every TLB entry tagged with `asid`.
    TlbiNhAsid {
        /// ASID.
        asid: u16,
    },
    /// Drop every non-secure EL1 TLB entry.
    TlbiNsnhAll,
    /// Completes when all earlier commands have; completion is observed by
    /// polling CMDQ_CONS (CS = SIG_NONE: no MSI, no SEV).
    Sync,
}

impl Command {
    /// This command's opcode.
    pub fn opcode(&self) -> u8 {
        match self {
            Self::CfgiSte { .. } => opcode::CFGI_STE,
            Self::CfgiCd { .. } => opcode::CFGI_CD,
            Self::CfgiAll => opcode::CFGI_STE_RANGE,
            Self::TlbiNhVa { .. } => opcode::TLBI_NH_VA,
            Self::TlbiNhAsid { .. } => opcode::TLBI_NH_ASID,
            Self::TlbiNsnhAll => opcode::TLBI_NSNH_ALL,
            Self::Sync => opcode::CMD_SYNC,
        }
    }

    /// The command as the SMMU reads it from the queue.
    pub fn encode(&self) -> RawCommand {
        let op = self.opcode() as u64;
        match *self {
            // SID at [63:32]; word 1 Leaf (bit 0) = 0.
            Self::CfgiSte { sid } => [op | put(sid as u64, 32, 32), 0],
            // SSID [31:12] = 0, SID at [63:32]; word 1 Leaf = 1 (the CD
            // itself; there is no level-1 CD table).
            Self::CfgiCd { sid } => [op | put(sid as u64, 32, 32), 1],
            // Word 1 Range [4:0] = 31: every StreamID.
            Self::CfgiAll => [op, 31],
            // VMID [47:32] = 0, ASID [63:48]; word 1: Leaf bit 0, TTL and TG
            // [11:8] = 0 (no range hint), Address [63:12].
            Self::TlbiNhVa { asid, va, leaf } => [
                op | put(asid as u64, 48, 16),
                leaf as u64 | addr_bits(va, 63, 12),
            ],
            Self::TlbiNhAsid { asid } => [op | put(asid as u64, 48, 16), 0],
            Self::TlbiNsnhAll => [op, 0],
            // CS [13:12] = 0b00 (SIG_NONE).
            Self::Sync => [op, 0],
        }
    }
}

/// Why the SMMU stopped consuming commands (CMDQ_CONS.ERR, bits `[30:24]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommandError {
    /// CERROR_ILL: unknown opcode or bad field.
    Illegal,
    /// CERROR_ABT: the SMMU could not read the command (external abort).
    Abort,
    /// CERROR_ATC_INV_SYNC: an ATS invalidation timed out before a sync.
    AtcInvalidationSync,
    /// An error code this driver does not know.
    Other(u8),
}

impl CommandError {
    /// Decodes the ERR field of a CMDQ_CONS value, `None` for "no error".
    pub fn from_cons(cons: u32) -> Option<Self> {
        match get(cons as u64, super::regs::CMDQ_CONS_ERR_SHIFT, 7) as u8 {
            0 => None,
            1 => Some(Self::Illegal),
            2 => Some(Self::Abort),
            3 => Some(Self::AtcInvalidationSync),
            other => Some(Self::Other(other)),
        }
    }
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Illegal => f.write_str("illegal command"),
            Self::Abort => f.write_str("abort reading the command queue"),
            Self::AtcInvalidationSync => f.write_str("ATC invalidation timed out"),
            Self::Other(code) => write!(f, "command error {code:#x}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_invalidation() {
        // CFGI_STE: opcode 0x03, SID 0x0123 at [63:32], Leaf = 0.
        assert_eq!(
            Command::CfgiSte { sid: 0x0123 }.encode(),
            [0x0000_0123_0000_0003, 0]
        );
        // CFGI_CD: opcode 0x05, SSID [31:12] = 0, SID at [63:32], Leaf = 1.
        assert_eq!(
            Command::CfgiCd { sid: 0x0008 }.encode(),
            [0x0000_0008_0000_0005, 1]
        );
        // CFGI_ALL = CFGI_STE_RANGE (0x04) with Range [4:0] = 31.
        assert_eq!(Command::CfgiAll.encode(), [0x04, 0x1f]);
    }

    #[test]
    fn tlb_invalidation() {
        // TLBI_NH_VA: opcode 0x12, ASID 1 at [63:48]; word 1: address
        // [63:12] in place (the in-page offset dropped), Leaf at bit 0.
        assert_eq!(
            Command::TlbiNhVa {
                asid: 1,
                va: 0x7f_1234_5678,
                leaf: true
            }
            .encode(),
            [(1 << 48) | 0x12, 0x7f_1234_5000 | 1]
        );
        assert_eq!(
            Command::TlbiNhVa {
                asid: 0xbeef,
                va: 0x1000,
                leaf: false
            }
            .encode(),
            [0xbeef_0000_0000_0012, 0x1000]
        );
        // TLBI_NH_ASID: opcode 0x11, ASID at [63:48].
        assert_eq!(
            Command::TlbiNhAsid { asid: 0x00ff }.encode(),
            [0x00ff_0000_0000_0011, 0]
        );
        assert_eq!(Command::TlbiNsnhAll.encode(), [0x30, 0]);
    }

    #[test]
    fn sync_signals_nothing() {
        // CMD_SYNC 0x46 with CS [13:12] = 0: completion seen by polling CONS.
        assert_eq!(Command::Sync.encode(), [0x46, 0]);
    }

    #[test]
    fn command_errors() {
        assert_eq!(CommandError::from_cons(0x0000_0005), None);
        assert_eq!(
            CommandError::from_cons(1 << 24 | 5),
            Some(CommandError::Illegal)
        );
        assert_eq!(CommandError::from_cons(2 << 24), Some(CommandError::Abort));
        assert_eq!(
            CommandError::from_cons(3 << 24),
            Some(CommandError::AtcInvalidationSync)
        );
        assert_eq!(
            CommandError::from_cons(0x7f << 24),
            Some(CommandError::Other(0x7f))
        );
        // Bit 31 is not part of ERR.
        assert_eq!(CommandError::from_cons(1 << 31), None);
    }
}
