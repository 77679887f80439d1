//! Decoding of the Exception Syndrome Register, for the fault path (is this
//! a translation fault? a write?) and for crash reports a person can read.

use core::fmt;

/// A decoded ESR_EL1 value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Esr(pub u64);

/// What kind of access a fault was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// A load.
    Read,
    /// A store.
    Write,
    /// An instruction fetch.
    Execute,
}

/// The broad cause of a data or instruction abort, from its fault status code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AbortKind {
    /// No valid translation at the given table level.
    Translation(u8),
    /// Access flag not set, at the given level.
    AccessFlag(u8),
    /// The mapping forbids this access, at the given level.
    Permission(u8),
    /// Address size fault, at the given level.
    AddressSize(u8),
    /// Misaligned access.
    Alignment,
    /// External abort or anything else, with the raw status code.
    Other(u8),
}

impl Esr {
    /// Exception class (ESR bits 31:26).
    pub fn class(self) -> u8 {
        ((self.0 >> 26) & 0x3f) as u8
    }

    /// Instruction-specific syndrome (bits 24:0).
    pub fn iss(self) -> u32 {
        (self.0 & 0x1ff_ffff) as u32
    }

    /// Whether this is a data abort taken from the current exception level.
    pub fn is_data_abort(self) -> bool {
        matches!(self.class(), 0x24 | 0x25)
    }

    /// Whether this is an instruction abort.
    pub fn is_instruction_abort(self) -> bool {
        matches!(self.class(), 0x20 | 0x21)
    }

    /// For aborts: the kind of fault.
    pub fn abort_kind(self) -> Option<AbortKind> {
        if !(self.is_data_abort() || self.is_instruction_abort()) {
            return None;
        }
        let fsc = (self.iss() & 0x3f) as u8;
        let level = fsc & 0b11;
        Some(match fsc & !0b11 {
            0b00_0000 => AbortKind::AddressSize(level),
            0b00_0100 => AbortKind::Translation(level),
            0b00_1000 => AbortKind::AccessFlag(level),
            0b00_1100 => AbortKind::Permission(level),
            _ if fsc == 0b10_0001 => AbortKind::Alignment,
            _ => AbortKind::Other(fsc),
        })
    }

    /// For aborts: which access faulted.
    pub fn access(self) -> Option<Access> {
        if self.is_instruction_abort() {
            Some(Access::Execute)
        } else if self.is_data_abort() {
            // WnR (bit 6); cache maintenance (CM, bit 8) reports as a write.
            Some(if self.iss() & (1 << 6) != 0 {
                Access::Write
            } else {
                Access::Read
            })
        } else {
            None
        }
    }

    /// A name for the exception class.
    pub fn class_name(self) -> &'static str {
        match self.class() {
            0x00 => "unknown reason (undefined instruction)",
            0x01 => "WFI/WFE trapped",
            0x07 => "FP/SIMD access trapped",
            0x0e => "illegal execution state",
            0x15 => "SVC",
            0x16 => "HVC",
            0x17 => "SMC",
            0x18 => "system register access trapped",
            0x20 => "instruction abort from a lower EL",
            0x21 => "instruction abort",
            0x22 => "PC alignment fault",
            0x24 => "data abort from a lower EL",
            0x25 => "data abort",
            0x26 => "SP alignment fault",
            0x2c => "floating-point exception",
            0x2f => "SError",
            0x30 | 0x31 => "breakpoint",
            0x32 | 0x33 => "software step",
            0x34 | 0x35 => "watchpoint",
            0x3c => "BRK instruction",
            _ => "unrecognized exception class",
        }
    }
}

impl fmt::Display for AbortKind {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            AbortKind::Translation(l) => write!(f, "translation fault at level {l}"),
            AbortKind::AccessFlag(l) => write!(f, "access flag fault at level {l}"),
            AbortKind::Permission(l) => write!(f, "permission fault at level {l}"),
            AbortKind::AddressSize(l) => write!(f, "address size fault at level {l}"),
            AbortKind::Alignment => write!(f, "alignment fault"),
            AbortKind::Other(fsc) => write!(f, "fault status {fsc:#04x}"),
        }
    }
}

impl fmt::Display for Esr {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "ESR {:#010x}: {} (EC {:#04x})",
            self.0,
            self.class_name(),
            self.class()
        )?;
        if let (Some(kind), Some(access)) = (self.abort_kind(), self.access()) {
            let what = match access {
                Access::Read => "read",
                Access::Write => "write",
                Access::Execute => "instruction fetch",
            };
            write!(f, ", {kind} on {what}")?;
        } else if self.class() == 0x3c {
            write!(f, ", immediate {:#x}", self.iss() & 0xffff)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::string::ToString;

    #[test]
    fn write_translation_fault_is_decoded() {
        // Data abort, same EL, IL, WnR, DFSC = translation fault level 3.
        let esr = Esr(0x9600_0047);
        assert!(esr.is_data_abort());
        assert_eq!(esr.abort_kind(), Some(AbortKind::Translation(3)));
        assert_eq!(esr.access(), Some(Access::Write));
        let text = esr.to_string();
        assert!(text.contains("data abort"), "{text}");
        assert!(
            text.contains("translation fault at level 3 on write"),
            "{text}"
        );
    }

    #[test]
    fn instruction_permission_fault_is_an_execute_access() {
        let esr = Esr(0x8600_000f);
        assert_eq!(esr.abort_kind(), Some(AbortKind::Permission(3)));
        assert_eq!(esr.access(), Some(Access::Execute));
    }

    #[test]
    fn read_permission_fault_and_non_aborts() {
        let esr = Esr(0x9600_004f);
        assert_eq!(esr.abort_kind(), Some(AbortKind::Permission(3)));
        assert_eq!(Esr(0x9600_000f).access(), Some(Access::Read));
        let brk = Esr(0xf200_0001);
        assert_eq!(brk.abort_kind(), None);
        assert!(
            brk.to_string()
                .contains("BRK instruction (EC 0x3c), immediate 0x1"),
            "{brk}"
        );
        assert!(Esr(0x0200_0000)
            .to_string()
            .contains("undefined instruction"));
    }
}
