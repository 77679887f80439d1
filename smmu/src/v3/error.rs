//! Why the driver fails.

use super::cd::CdError;
use super::gerror::CommandFailure;
use super::regs::ProbeError;
use core::fmt;

/// Which piece of SMMU memory an allocation was for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Allocation {
    /// Stream table (linear, level 1 or level 2).
    StreamTable,
    /// Context descriptors.
    ContextDescriptors,
    /// Command queue.
    CommandQueue,
    /// Event queue.
    EventQueue,
}

/// What the driver was waiting for when it gave up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// CR0ACK to reflect a CR0 write.
    Cr0Ack,
    /// IRQ_CTRL_ACK to reflect an IRQ_CTRL write.
    IrqCtrlAck,
    /// Room in a full command queue.
    CommandQueueSpace,
    /// A CMD_SYNC to complete.
    CommandSync,
}

/// Why the driver failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// The SMMU lacks something the design needs.
    Unsupported(ProbeError),
    /// The requested command queue exceeds IDR1.CMDQS.
    CommandQueueTooLarge {
        /// Requested log2 entries.
        requested: u32,
        /// Largest the SMMU supports.
        max: u32,
    },
    /// The requested event queue exceeds IDR1.EVENTQS.
    EventQueueTooLarge {
        /// Requested log2 entries.
        requested: u32,
        /// Largest the SMMU supports.
        max: u32,
    },
    /// [`DmaAllocator::alloc`](super::DmaAllocator::alloc) returned `None`.
    OutOfMemory(Allocation),
    /// [`DmaAllocator::alloc`](super::DmaAllocator::alloc) returned memory too small or misaligned.
    BadMemory(Allocation),
    /// The SMMU did not respond within [`Config::poll_limit`](super::Config::poll_limit) polls.
    Timeout(Wait),
    /// The SMMU refused a command (GERROR.CMDQ_ERR, CMDQ_CONS.ERR). The
    /// driver has replaced it with a CMD_SYNC and acknowledged the error, so
    /// the queue runs again.
    Command(CommandFailure),
    /// The StreamID is beyond the stream table.
    StreamOutOfRange {
        /// The StreamID.
        sid: u32,
        /// StreamID bits the table covers.
        sid_bits: u32,
    },
    /// The context descriptor parameters are invalid.
    BadContext(CdError),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unsupported(e) => write!(f, "unsupported SMMU: {e}"),
            Self::CommandQueueTooLarge { requested, max } => {
                write!(f, "command queue 2^{requested} exceeds the SMMU's 2^{max}")
            }
            Self::EventQueueTooLarge { requested, max } => {
                write!(f, "event queue 2^{requested} exceeds the SMMU's 2^{max}")
            }
            Self::OutOfMemory(what) => write!(f, "no memory for the SMMU {what:?}"),
            Self::BadMemory(what) => write!(f, "SMMU {what:?} memory too small or misaligned"),
            Self::Timeout(what) => write!(f, "SMMU timed out waiting for {what:?}"),
            Self::Command(c) => write!(f, "SMMU command {:#04x} failed: {}", c.opcode, c.error),
            Self::StreamOutOfRange { sid, sid_bits } => {
                write!(
                    f,
                    "StreamID {sid:#x} beyond the {sid_bits}-bit stream table"
                )
            }
            Self::BadContext(e) => write!(f, "bad context descriptor: {e}"),
        }
    }
}
