//! Why the MMU-500 driver fails, and how it is configured.

use super::id::{zynqmp, ProbeError};
use super::syndrome::Bank;
use crate::v3::CdError;
use core::fmt;

/// How to set the MMU-500 up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Bytes of register window the board maps (ZynqMP: 128 KiB).
    pub window: usize,
    /// How many times to poll a TLB synchronisation status before giving up
    /// with [`Error::Timeout`].
    pub poll_limit: u32,
    /// Ranges spanning more pages than this are invalidated by ASID instead
    /// of page by page.
    pub range_invalidate_pages: u64,
}

impl Config {
    /// The ZynqMP's MMU-500 at `0xFD80_0000`.
    pub const fn zynqmp() -> Self {
        Self {
            window: zynqmp::WINDOW,
            poll_limit: 1_000_000,
            range_invalidate_pages: 64,
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Self::zynqmp()
    }
}

/// What the driver was waiting for when it gave up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// sTLBGSTATUS.GSACTIVE to clear after sTLBGSYNC.
    GlobalTlbSync,
    /// TLBSTATUS.SACTIVE of a context bank to clear after its TLBSYNC.
    ContextTlbSync(Bank),
}

/// Why the driver failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// Nothing usable at the address (see [`ProbeError::NotPresent`] for
    /// "no SMMU at all").
    Probe(ProbeError),
    /// A TLB synchronisation did not complete within
    /// [`Config::poll_limit`] polls.
    Timeout(Wait),
    /// Every stream match register is in use.
    NoFreeStreamMatch,
    /// Every stage-1 context bank is in use.
    NoFreeContextBank,
    /// The StreamID or mask has bits beyond the SMMU's StreamID width.
    StreamTooWide {
        /// StreamID.
        stream: u32,
        /// Mask.
        mask: u32,
        /// StreamID bits the SMMU has.
        sid_bits: u32,
    },
    /// The stream (with its mask) overlaps an SMR already in use: a
    /// transaction matching both would be a stream match conflict.
    StreamConflict {
        /// StreamID.
        stream: u32,
        /// Index of the SMR it overlaps.
        smr: usize,
    },
    /// The ASID is already in use by a context bank with another table.
    AsidConflict {
        /// The ASID.
        asid: u16,
        /// The bank using it.
        bank: Bank,
    },
    /// The context parameters are invalid.
    BadContext(CdError),
    /// No SMR matches this StreamID exactly.
    NotAttached(u32),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Probe(e) => write!(f, "{e}"),
            Self::Timeout(w) => write!(f, "MMU-500 timed out waiting for {w:?}"),
            Self::NoFreeStreamMatch => f.write_str("no free stream match register"),
            Self::NoFreeContextBank => f.write_str("no free stage-1 context bank"),
            Self::StreamTooWide {
                stream,
                mask,
                sid_bits,
            } => write!(
                f,
                "StreamID {stream:#x} mask {mask:#x} wider than {sid_bits} bits"
            ),
            Self::StreamConflict { stream, smr } => {
                write!(f, "StreamID {stream:#x} overlaps SMR {smr}")
            }
            Self::AsidConflict { asid, bank } => {
                write!(f, "ASID {asid} is bank {}'s, with another table", bank.0)
            }
            Self::BadContext(e) => write!(f, "bad context: {e}"),
            Self::NotAttached(s) => write!(f, "StreamID {s:#x} is not attached"),
        }
    }
}
