//! Global errors: conditions the SMMU reports outside the event queue.
//!
//! An error is active while its GERROR bit differs from the same GERRORN bit;
//! software acknowledges it by toggling GERRORN to match. The one that
//! matters most here is EVENTQ_ABT_ERR, which QEMU raises when the event
//! queue was full and records were dropped: some faults are lost, and the
//! caller must recover without assuming it knows them all. Bit positions
//! match QEMU 7.2 (`R_GERROR_*`).

use super::cmd::CommandError;

/// GERROR bits.
pub mod bits {
    /// The command queue stopped on an error (see CMDQ_CONS.ERR).
    pub const CMDQ_ERR: u32 = 1 << 0;
    /// Writing the event queue failed, or (QEMU) it was full: events lost.
    pub const EVENTQ_ABT_ERR: u32 = 1 << 2;
    /// Writing the PRI queue failed.
    pub const PRIQ_ABT_ERR: u32 = 1 << 3;
    /// A CMD_SYNC completion MSI write aborted.
    pub const MSI_CMDQ_ABT_ERR: u32 = 1 << 4;
    /// An event queue MSI write aborted.
    pub const MSI_EVENTQ_ABT_ERR: u32 = 1 << 5;
    /// A PRI queue MSI write aborted.
    pub const MSI_PRIQ_ABT_ERR: u32 = 1 << 6;
    /// A global error MSI write aborted.
    pub const MSI_GERROR_ABT_ERR: u32 = 1 << 7;
    /// The SMMU entered service failure mode and stopped working.
    pub const SFM_ERR: u32 = 1 << 8;
    /// Every defined error bit.
    pub const ALL: u32 = 0x1fd;
}

/// A command the SMMU refused, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommandFailure {
    /// The SMMU's reason.
    pub error: CommandError,
    /// Opcode of the refused command (word 0 `[7:0]`).
    pub opcode: u8,
}

/// The global errors that were active, decoded, as acknowledged by
/// `Smmu::check_gerror`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GerrorStatus {
    /// The raw active bits (GERROR xor GERRORN, defined bits only).
    pub active: u32,
    /// EVENTQ_ABT_ERR: event records were dropped, so faults were lost.
    pub events_lost: bool,
    /// CMDQ_ERR: the command queue stopped.
    pub command_error: bool,
    /// The command that stopped it, once the driver has skipped it.
    pub command_failure: Option<CommandFailure>,
    /// PRIQ_ABT_ERR.
    pub priq_abort: bool,
    /// MSI_CMDQ_ABT_ERR.
    pub msi_cmdq_abort: bool,
    /// MSI_EVENTQ_ABT_ERR.
    pub msi_eventq_abort: bool,
    /// MSI_PRIQ_ABT_ERR.
    pub msi_priq_abort: bool,
    /// MSI_GERROR_ABT_ERR.
    pub msi_gerror_abort: bool,
    /// SFM_ERR: the SMMU has stopped translating; it needs a reset.
    pub service_failure: bool,
}

impl GerrorStatus {
    /// Decodes the active errors from GERROR and GERRORN.
    pub fn decode(gerror: u32, gerrorn: u32) -> Self {
        let active = (gerror ^ gerrorn) & bits::ALL;
        let on = |b| active & b != 0;
        Self {
            active,
            events_lost: on(bits::EVENTQ_ABT_ERR),
            command_error: on(bits::CMDQ_ERR),
            command_failure: None,
            priq_abort: on(bits::PRIQ_ABT_ERR),
            msi_cmdq_abort: on(bits::MSI_CMDQ_ABT_ERR),
            msi_eventq_abort: on(bits::MSI_EVENTQ_ABT_ERR),
            msi_priq_abort: on(bits::MSI_PRIQ_ABT_ERR),
            msi_gerror_abort: on(bits::MSI_GERROR_ABT_ERR),
            service_failure: on(bits::SFM_ERR),
        }
    }

    /// No error was active.
    pub fn is_clear(&self) -> bool {
        self.active == 0
    }

    /// The GERRORN value that acknowledges these errors.
    pub fn acknowledge(&self, gerrorn: u32) -> u32 {
        gerrorn ^ self.active
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn active_errors_are_the_differing_bits() {
        // EVENTQ_ABT_ERR toggled twice (inactive), CMDQ_ERR toggled once.
        let status = GerrorStatus::decode(0b001, 0b000);
        assert!(status.command_error && !status.events_lost);
        let status = GerrorStatus::decode(0b101, 0b100);
        assert_eq!(status.active, 0b001);
        // Acknowledging toggles GERRORN to match.
        assert_eq!(status.acknowledge(0b100), 0b101);
        assert!(GerrorStatus::decode(0b101, 0b101).is_clear());
    }

    #[test]
    fn every_bit_is_named() {
        let s = GerrorStatus::decode(bits::ALL, 0);
        assert!(s.command_error && s.events_lost && s.priq_abort);
        assert!(s.msi_cmdq_abort && s.msi_eventq_abort && s.msi_priq_abort);
        assert!(s.msi_gerror_abort && s.service_failure);
        assert_eq!(s.active, 0x1fd);
        // Bit 1 and bits above 8 are not errors.
        assert!(GerrorStatus::decode(0xffff_fe02, 0).is_clear());
    }

    #[test]
    fn events_lost_alone() {
        let s = GerrorStatus::decode(1 << 2, 0);
        assert_eq!(
            s,
            GerrorStatus {
                active: 4,
                events_lost: true,
                ..GerrorStatus::default()
            }
        );
    }
}
