//! Fault records: what the fault registers of a context bank (or the
//! global space) say, decoded into the shared [`Fault`](crate::Fault).

use super::regs::{fsr, fsynr0, gfsr, CBFRSYNRA_SID_MASK};
use crate::fault::{Access, Fault, FaultKind};

/// A translation context bank's index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bank(pub u8);

/// One context fault as a context bank recorded it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContextFault {
    /// The bank that recorded it.
    pub bank: Bank,
    /// The fault in the memory manager's terms (stream from CBFRSYNRA,
    /// address from FAR, access from FSYNR0, kind from FSR). `None` when the
    /// bank reported only FSR.MULTI: faults happened that it could not
    /// record (see [`ContextFault::multi`]).
    pub fault: Option<Fault>,
    /// FSR.SS: the faulting transaction is stalled and waits for
    /// [`Mmu500::resume`](super::Mmu500::resume). Otherwise it was
    /// terminated (the device got an abort) and nothing is to be resumed.
    pub stalled: bool,
    /// FSR.MULTI: at least one further fault occurred in this bank while
    /// this one was recorded and was not recorded itself. Unrecorded
    /// transactions that stalled are presented again after the resume (and
    /// fault again if still unresolved); unrecorded ones that were
    /// terminated (stall queue full) are lost: the caller must treat every
    /// transfer on the bank's streams as suspect.
    pub multi: bool,
    /// The raw registers, for the log.
    pub raw: RawSyndrome,
}

/// The raw fault registers of a context bank.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawSyndrome {
    /// CB_FSR.
    pub fsr: u32,
    /// CB_FAR.
    pub far: u64,
    /// CB_FSYNR0.
    pub fsynr0: u32,
    /// CB_FSYNR1 (implementation defined).
    pub fsynr1: u32,
    /// CBFRSYNRA.
    pub cbfrsynra: u32,
}

impl RawSyndrome {
    /// Whether FSR records anything (a fault, MULTI or a stall).
    pub fn any(&self) -> bool {
        self.fsr & (fsr::CLEARABLE | fsr::SS) != 0
    }
}

/// The fault kind FSR names, the first by priority when several are set.
pub fn kind(fsr_value: u32) -> Option<FaultKind> {
    if fsr_value & fsr::TF != 0 {
        Some(FaultKind::Translation)
    } else if fsr_value & fsr::AFF != 0 {
        Some(FaultKind::AccessFlag)
    } else if fsr_value & fsr::PF != 0 {
        Some(FaultKind::Permission)
    } else if fsr_value & fsr::ASF != 0 {
        Some(FaultKind::AddressSize)
    } else {
        None
    }
}

/// The access FSYNR0 describes.
pub fn access(fsynr0_value: u32) -> Access {
    if fsynr0_value & fsynr0::WNR != 0 {
        Access::Write
    } else if fsynr0_value & fsynr0::IND != 0 {
        Access::Execute
    } else {
        Access::Read
    }
}

impl ContextFault {
    /// Decodes a bank's fault registers; `None` if FSR holds nothing.
    /// Faults the memory manager cannot resolve (external, TLB conflict,
    /// unsupported transaction) are reported with an address-size kind
    /// only if FSR says so; otherwise `fault` is `None` and the caller
    /// terminates the transaction.
    pub fn decode(bank: Bank, raw: RawSyndrome) -> Option<Self> {
        if !raw.any() {
            return None;
        }
        let fault = kind(raw.fsr).map(|kind| Fault {
            stream: raw.cbfrsynra & CBFRSYNRA_SID_MASK,
            iova: raw.far,
            access: access(raw.fsynr0),
            kind,
        });
        Some(Self {
            bank,
            fault,
            stalled: raw.fsr & fsr::SS != 0,
            multi: raw.fsr & fsr::MULTI != 0,
            raw,
        })
    }
}

/// A global fault: a transaction the SMMU refused before any context bank
/// (no SMR matched, two matched, an S2CR of type fault...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GlobalFault {
    /// sGFSR as read.
    pub gfsr: u32,
    /// The faulting StreamID (sGFSYNR1).
    pub stream: u32,
    /// The faulting address (sGFAR).
    pub address: u64,
    /// sGFSYNR0.
    pub gfsynr0: u32,
}

impl GlobalFault {
    /// No SMR matched the stream (sCR0.USFCFG = 1 made it a fault).
    pub fn unidentified_stream(&self) -> bool {
        self.gfsr & gfsr::USF != 0
    }

    /// Two SMRs matched the stream.
    pub fn stream_match_conflict(&self) -> bool {
        self.gfsr & gfsr::SMCF != 0
    }

    /// More global faults occurred than were recorded.
    pub fn multi(&self) -> bool {
        self.gfsr & gfsr::MULTI != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stalled_write_translation_fault() {
        let raw = RawSyndrome {
            fsr: fsr::TF | fsr::SS,
            far: 0x40_1234,
            fsynr0: fsynr0::WNR | 3,
            fsynr1: 0,
            cbfrsynra: 0x0871,
        };
        let f = ContextFault::decode(Bank(2), raw).unwrap();
        assert!(f.stalled && !f.multi);
        assert_eq!(
            f.fault,
            Some(Fault {
                stream: 0x871,
                iova: 0x40_1234,
                access: Access::Write,
                kind: FaultKind::Translation
            })
        );
    }

    #[test]
    fn kinds_and_accesses() {
        assert_eq!(kind(fsr::PF), Some(FaultKind::Permission));
        assert_eq!(kind(fsr::AFF | fsr::PF), Some(FaultKind::AccessFlag));
        assert_eq!(kind(fsr::ASF), Some(FaultKind::AddressSize));
        assert_eq!(kind(fsr::EF), None);
        assert_eq!(access(fsynr0::IND), Access::Execute);
        assert_eq!(access(0), Access::Read);
        assert!(ContextFault::decode(Bank(0), RawSyndrome::default()).is_none());
        let only_multi = RawSyndrome {
            fsr: fsr::MULTI,
            ..Default::default()
        };
        let f = ContextFault::decode(Bank(0), only_multi).unwrap();
        assert!(f.multi && f.fault.is_none() && !f.stalled);
    }
}
