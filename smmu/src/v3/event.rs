//! Event queue records: what the SMMU reports, decoded.
//!
//! Every record is 32 bytes. Word 0 carries the event code `[7:0]`, SSV (bit
//! 11), SubstreamID `[31:12]` and StreamID `[63:32]`; word 1 the stall tag
//! `[15:0]`, Stall (31), PnU (33), InD (34), RnW (35), S2 (39) and Class
//! `[41:40]`; word 2 the input address; word 3 a second address (the IPA
//! `[51:12]` of a stage-2 fault, or the physical address `[51:3]` of a failed
//! fetch). These positions are Arm IHI 0070's and match what QEMU 7.2 writes
//! (`EVT_SET_*` in `hw/arm/smmuv3-internal.h`).
//!
//! QEMU records only: F_UUT, C_BAD_STREAMID, F_STE_FETCH, C_BAD_STE,
//! F_STREAM_DISABLED, F_TRANSL_FORBIDDEN, C_BAD_SUBSTREAMID, F_CD_FETCH
//! (with the fetch address in word 2, not 3), C_BAD_CD, F_WALK_EABT and the
//! four translation faults, and F_CFG_CONFLICT; the other codes are decoded
//! from the specification for other SMMUs.

use super::bits::{addr_bits, bit, get};
use crate::fault::{Access, Fault, FaultKind};

/// One record as read from the queue: four little-endian 64-bit words.
pub type RawEvent = [u64; 4];

/// Bytes in an event record.
pub const EVENT_BYTES: usize = 32;

/// Event codes (word 0 bits `[7:0]`).
pub mod code {
    /// Unsupported upstream transaction.
    pub const F_UUT: u8 = 0x01;
    /// StreamID beyond the stream table.
    pub const C_BAD_STREAMID: u8 = 0x02;
    /// External abort fetching an STE.
    pub const F_STE_FETCH: u8 = 0x03;
    /// Invalid or malformed STE.
    pub const C_BAD_STE: u8 = 0x04;
    /// ATS translation request not allowed.
    pub const F_BAD_ATS_TREQ: u8 = 0x05;
    /// Traffic on a stream whose STE disables it.
    pub const F_STREAM_DISABLED: u8 = 0x06;
    /// ATS-translated traffic not allowed.
    pub const F_TRANSL_FORBIDDEN: u8 = 0x07;
    /// SubstreamID beyond the CD table, or not allowed.
    pub const C_BAD_SUBSTREAMID: u8 = 0x08;
    /// External abort fetching a CD.
    pub const F_CD_FETCH: u8 = 0x09;
    /// Invalid or malformed CD.
    pub const C_BAD_CD: u8 = 0x0a;
    /// External abort during a table walk.
    pub const F_WALK_EABT: u8 = 0x0b;
    /// No valid translation.
    pub const F_TRANSLATION: u8 = 0x10;
    /// Address beyond the configured size.
    pub const F_ADDR_SIZE: u8 = 0x11;
    /// Access flag clear.
    pub const F_ACCESS: u8 = 0x12;
    /// Access not permitted by the descriptor.
    pub const F_PERMISSION: u8 = 0x13;
    /// Conflicting TLB entries.
    pub const F_TLB_CONFLICT: u8 = 0x20;
    /// Conflicting cached configuration.
    pub const F_CFG_CONFLICT: u8 = 0x21;
    /// A PCIe page request (PRI) delivered through the event queue.
    pub const E_PAGE_REQUEST: u8 = 0x24;
    /// External abort fetching a VMS (virtual machine structure).
    pub const F_VMS_FETCH: u8 = 0x25;
}

/// The transaction attributes a record carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transaction {
    /// RnW: a read (else a write).
    pub read: bool,
    /// InD: an instruction fetch (else data).
    pub instruction: bool,
    /// PnU: privileged (else unprivileged).
    pub privileged: bool,
}

impl Transaction {
    fn from_word1(w1: u64) -> Self {
        Self {
            privileged: bit(w1, 33),
            instruction: bit(w1, 34),
            read: bit(w1, 35),
        }
    }

    /// The access in the generic [`Fault`] vocabulary.
    pub fn access(&self) -> Access {
        match (self.read, self.instruction) {
            (false, _) => Access::Write,
            (true, true) => Access::Execute,
            (true, false) => Access::Read,
        }
    }
}

/// Which access of the translation failed (word 1 Class, bits `[41:40]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultClass {
    /// Fetching the context descriptor.
    ContextDescriptor,
    /// Fetching a translation table descriptor.
    TranslationTable,
    /// The input address itself (the transaction's own access).
    InputAddress,
    /// The reserved encoding.
    Reserved,
}

/// The fields shared by the translation fault records (F_WALK_EABT,
/// F_TRANSLATION, F_ADDR_SIZE, F_ACCESS, F_PERMISSION).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TranslationFault {
    /// StreamID.
    pub stream: u32,
    /// SubstreamID, if the transaction had one.
    pub substream: Option<u32>,
    /// The faulting input (virtual) address.
    pub iova: u64,
    /// Read/write, instruction/data, privileged/unprivileged.
    pub transaction: Transaction,
    /// Which access failed.
    pub class: FaultClass,
    /// The fault arose at stage 2.
    pub stage2: bool,
    /// The stall tag, if the transaction was stalled (never on QEMU).
    pub stall_tag: Option<u16>,
    /// The intermediate physical address of a stage-2 fault.
    pub ipa: Option<u64>,
}

/// A decoded event record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// F_UUT: a transaction the SMMU cannot handle (e.g. an unsupported
    /// atomic).
    UnsupportedUpstream {
        /// StreamID.
        stream: u32,
        /// SubstreamID, if any.
        substream: Option<u32>,
        /// Input address.
        iova: u64,
        /// Transaction attributes.
        transaction: Transaction,
    },
    /// C_BAD_STREAMID: the StreamID is beyond the stream table.
    BadStreamId {
        /// StreamID.
        stream: u32,
        /// SubstreamID, if any.
        substream: Option<u32>,
    },
    /// F_STE_FETCH: reading the STE aborted.
    SteFetchAbort {
        /// StreamID.
        stream: u32,
        /// SubstreamID, if any.
        substream: Option<u32>,
        /// Physical address of the fetch (`[51:3]`).
        fetch_addr: u64,
    },
    /// C_BAD_STE: the STE is invalid (V = 0, as for a stream that was never
    /// attached) or malformed.
    BadSte {
        /// StreamID.
        stream: u32,
        /// SubstreamID, if any.
        substream: Option<u32>,
    },
    /// F_BAD_ATS_TREQ: an ATS translation request the STE does not allow.
    BadAtsRequest {
        /// StreamID.
        stream: u32,
        /// SubstreamID, if any.
        substream: Option<u32>,
        /// Requested address.
        iova: u64,
        /// Transaction attributes.
        transaction: Transaction,
    },
    /// F_STREAM_DISABLED: traffic on a disabled stream.
    StreamDisabled {
        /// StreamID.
        stream: u32,
    },
    /// F_TRANSL_FORBIDDEN: ATS-translated traffic the STE forbids.
    TranslationForbidden {
        /// StreamID.
        stream: u32,
        /// Address of the transaction.
        iova: u64,
        /// It was a read.
        read: bool,
    },
    /// C_BAD_SUBSTREAMID: the SubstreamID is out of range or not allowed.
    BadSubstreamId {
        /// StreamID.
        stream: u32,
        /// SubstreamID (word 0 `[31:12]`).
        substream: u32,
    },
    /// F_CD_FETCH: reading the CD aborted.
    CdFetchAbort {
        /// StreamID.
        stream: u32,
        /// SubstreamID, if any.
        substream: Option<u32>,
        /// Physical address of the fetch (`[51:3]`, per the specification;
        /// QEMU leaves it 0 and writes the address in word 2 instead).
        fetch_addr: u64,
    },
    /// C_BAD_CD: the CD is invalid or asks for something unsupported.
    BadCd {
        /// StreamID.
        stream: u32,
        /// SubstreamID, if any.
        substream: Option<u32>,
    },
    /// F_WALK_EABT: a table walk read aborted.
    WalkExternalAbort {
        /// The faulting transaction.
        fault: TranslationFault,
        /// Physical address of the descriptor read (`[51:3]`).
        fetch_addr: u64,
    },
    /// F_TRANSLATION: no valid translation (the page is not mapped).
    Translation(TranslationFault),
    /// F_ADDR_SIZE: an address beyond the configured size.
    AddressSize(TranslationFault),
    /// F_ACCESS: the descriptor's access flag is clear.
    AccessFlag(TranslationFault),
    /// F_PERMISSION: the descriptor forbids the access.
    Permission(TranslationFault),
    /// F_TLB_CONFLICT: the TLB holds conflicting entries for the address.
    TlbConflict {
        /// StreamID.
        stream: u32,
        /// SubstreamID, if any.
        substream: Option<u32>,
        /// Input address.
        iova: u64,
        /// Transaction attributes.
        transaction: Transaction,
        /// At stage 2.
        stage2: bool,
    },
    /// F_CFG_CONFLICT: cached configuration conflicts.
    ConfigConflict {
        /// StreamID.
        stream: u32,
        /// SubstreamID, if any.
        substream: Option<u32>,
    },
    /// E_PAGE_REQUEST: a PRI page request.
    PageRequest {
        /// StreamID.
        stream: u32,
        /// SubstreamID, if any.
        substream: Option<u32>,
        /// Requested address.
        iova: u64,
        /// Transaction attributes.
        transaction: Transaction,
    },
    /// F_VMS_FETCH: reading a virtual machine structure aborted.
    VmsFetchAbort {
        /// StreamID.
        stream: u32,
        /// Physical address of the fetch (`[51:3]`).
        fetch_addr: u64,
    },
    /// An IMPLEMENTATION DEFINED event (codes 0xe0..=0xef).
    ImplementationDefined {
        /// Event code.
        code: u8,
        /// The whole record.
        raw: RawEvent,
    },
    /// A code this driver does not know.
    Unknown {
        /// Event code.
        code: u8,
        /// The whole record.
        raw: RawEvent,
    },
}

impl Event {
    /// Decodes one record.
    pub fn decode(raw: &RawEvent) -> Self {
        let [w0, w1, w2, w3] = *raw;
        let code = get(w0, 0, 8) as u8;
        let stream = get(w0, 32, 32) as u32;
        let ssid = get(w0, 12, 20) as u32;
        let substream = bit(w0, 11).then_some(ssid);
        let transaction = Transaction::from_word1(w1);
        let fetch_addr = addr_bits(w3, 51, 3);
        let translation = || {
            let stage2 = bit(w1, 39);
            TranslationFault {
                stream,
                substream,
                iova: w2,
                transaction,
                class: match get(w1, 40, 2) {
                    0 => FaultClass::ContextDescriptor,
                    1 => FaultClass::TranslationTable,
                    2 => FaultClass::InputAddress,
                    _ => FaultClass::Reserved,
                },
                stage2,
                stall_tag: bit(w1, 31).then_some(get(w1, 0, 16) as u16),
                ipa: (stage2 && code != code::F_WALK_EABT).then_some(addr_bits(w3, 51, 12)),
            }
        };
        match code {
            code::F_UUT => Self::UnsupportedUpstream {
                stream,
                substream,
                iova: w2,
                transaction,
            },
            code::C_BAD_STREAMID => Self::BadStreamId { stream, substream },
            code::F_STE_FETCH => Self::SteFetchAbort {
                stream,
                substream,
                fetch_addr,
            },
            code::C_BAD_STE => Self::BadSte { stream, substream },
            code::F_BAD_ATS_TREQ => Self::BadAtsRequest {
                stream,
                substream,
                iova: w2,
                transaction,
            },
            code::F_STREAM_DISABLED => Self::StreamDisabled { stream },
            code::F_TRANSL_FORBIDDEN => Self::TranslationForbidden {
                stream,
                iova: w2,
                read: transaction.read,
            },
            code::C_BAD_SUBSTREAMID => Self::BadSubstreamId {
                stream,
                substream: ssid,
            },
            code::F_CD_FETCH => Self::CdFetchAbort {
                stream,
                substream,
                fetch_addr,
            },
            code::C_BAD_CD => Self::BadCd { stream, substream },
            code::F_WALK_EABT => Self::WalkExternalAbort {
                fault: translation(),
                fetch_addr,
            },
            code::F_TRANSLATION => Self::Translation(translation()),
            code::F_ADDR_SIZE => Self::AddressSize(translation()),
            code::F_ACCESS => Self::AccessFlag(translation()),
            code::F_PERMISSION => Self::Permission(translation()),
            code::F_TLB_CONFLICT => Self::TlbConflict {
                stream,
                substream,
                iova: w2,
                transaction,
                stage2: bit(w1, 39),
            },
            code::F_CFG_CONFLICT => Self::ConfigConflict { stream, substream },
            code::E_PAGE_REQUEST => Self::PageRequest {
                stream,
                substream,
                iova: w2,
                transaction,
            },
            code::F_VMS_FETCH => Self::VmsFetchAbort { stream, fetch_addr },
            0xe0..=0xef => Self::ImplementationDefined { code, raw: *raw },
            _ => Self::Unknown { code, raw: *raw },
        }
    }

    /// The event code.
    pub fn code(&self) -> u8 {
        match self {
            Self::UnsupportedUpstream { .. } => code::F_UUT,
            Self::BadStreamId { .. } => code::C_BAD_STREAMID,
            Self::SteFetchAbort { .. } => code::F_STE_FETCH,
            Self::BadSte { .. } => code::C_BAD_STE,
            Self::BadAtsRequest { .. } => code::F_BAD_ATS_TREQ,
            Self::StreamDisabled { .. } => code::F_STREAM_DISABLED,
            Self::TranslationForbidden { .. } => code::F_TRANSL_FORBIDDEN,
            Self::BadSubstreamId { .. } => code::C_BAD_SUBSTREAMID,
            Self::CdFetchAbort { .. } => code::F_CD_FETCH,
            Self::BadCd { .. } => code::C_BAD_CD,
            Self::WalkExternalAbort { .. } => code::F_WALK_EABT,
            Self::Translation(_) => code::F_TRANSLATION,
            Self::AddressSize(_) => code::F_ADDR_SIZE,
            Self::AccessFlag(_) => code::F_ACCESS,
            Self::Permission(_) => code::F_PERMISSION,
            Self::TlbConflict { .. } => code::F_TLB_CONFLICT,
            Self::ConfigConflict { .. } => code::F_CFG_CONFLICT,
            Self::PageRequest { .. } => code::E_PAGE_REQUEST,
            Self::VmsFetchAbort { .. } => code::F_VMS_FETCH,
            Self::ImplementationDefined { code, .. } | Self::Unknown { code, .. } => *code,
        }
    }

    /// The specification's name of the event, for logs.
    pub fn name(&self) -> &'static str {
        match self {
            Self::UnsupportedUpstream { .. } => "F_UUT",
            Self::BadStreamId { .. } => "C_BAD_STREAMID",
            Self::SteFetchAbort { .. } => "F_STE_FETCH",
            Self::BadSte { .. } => "C_BAD_STE",
            Self::BadAtsRequest { .. } => "F_BAD_ATS_TREQ",
            Self::StreamDisabled { .. } => "F_STREAM_DISABLED",
            Self::TranslationForbidden { .. } => "F_TRANSL_FORBIDDEN",
            Self::BadSubstreamId { .. } => "C_BAD_SUBSTREAMID",
            Self::CdFetchAbort { .. } => "F_CD_FETCH",
            Self::BadCd { .. } => "C_BAD_CD",
            Self::WalkExternalAbort { .. } => "F_WALK_EABT",
            Self::Translation(_) => "F_TRANSLATION",
            Self::AddressSize(_) => "F_ADDR_SIZE",
            Self::AccessFlag(_) => "F_ACCESS",
            Self::Permission(_) => "F_PERMISSION",
            Self::TlbConflict { .. } => "F_TLB_CONFLICT",
            Self::ConfigConflict { .. } => "F_CFG_CONFLICT",
            Self::PageRequest { .. } => "E_PAGE_REQUEST",
            Self::VmsFetchAbort { .. } => "F_VMS_FETCH",
            Self::ImplementationDefined { .. } => "IMPDEF",
            Self::Unknown { .. } => "unknown",
        }
    }

    /// The StreamID the record names (word 0 `[63:32]`).
    pub fn stream(&self) -> u32 {
        match *self {
            Self::UnsupportedUpstream { stream, .. }
            | Self::BadStreamId { stream, .. }
            | Self::SteFetchAbort { stream, .. }
            | Self::BadSte { stream, .. }
            | Self::BadAtsRequest { stream, .. }
            | Self::StreamDisabled { stream }
            | Self::TranslationForbidden { stream, .. }
            | Self::BadSubstreamId { stream, .. }
            | Self::CdFetchAbort { stream, .. }
            | Self::BadCd { stream, .. }
            | Self::TlbConflict { stream, .. }
            | Self::ConfigConflict { stream, .. }
            | Self::PageRequest { stream, .. }
            | Self::VmsFetchAbort { stream, .. } => stream,
            Self::WalkExternalAbort { fault, .. }
            | Self::Translation(fault)
            | Self::AddressSize(fault)
            | Self::AccessFlag(fault)
            | Self::Permission(fault) => fault.stream,
            Self::ImplementationDefined { raw, .. } | Self::Unknown { raw, .. } => {
                get(raw[0], 32, 32) as u32
            }
        }
    }

    /// The generic page fault this record reports, for the four kinds the
    /// memory manager can resolve (translation, access flag, permission,
    /// address size); `None` for configuration errors and aborts.
    pub fn as_fault(&self) -> Option<Fault> {
        let (fault, kind) = match self {
            Self::Translation(f) => (f, FaultKind::Translation),
            Self::AccessFlag(f) => (f, FaultKind::AccessFlag),
            Self::Permission(f) => (f, FaultKind::Permission),
            Self::AddressSize(f) => (f, FaultKind::AddressSize),
            _ => return None,
        };
        Some(Fault {
            stream: fault.stream,
            iova: fault.iova,
            access: fault.transaction.access(),
            kind,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault::{Access, FaultKind};

    /// Word 0 from its fields: code `[7:0]`, SSV (11), SSID `[31:12]`, SID `[63:32]`.
    fn w0(code: u8, sid: u32, ssid: Option<u32>) -> u64 {
        let (ssv, ssid) = ssid.map_or((0, 0), |s| (1, s as u64));
        code as u64 | ssv << 11 | ssid << 12 | (sid as u64) << 32
    }

    /// Word 1 from its fields: PnU (33), InD (34), RnW (35), S2 (39), Class `[41:40]`.
    fn w1(read: bool, instruction: bool, privileged: bool, s2: bool, class: u64) -> u64 {
        (privileged as u64) << 33
            | (instruction as u64) << 34
            | (read as u64) << 35
            | (s2 as u64) << 39
            | class << 40
    }

    const READ: Transaction = Transaction {
        read: true,
        instruction: false,
        privileged: false,
    };
    const WRITE: Transaction = Transaction {
        read: false,
        instruction: false,
        privileged: false,
    };

    #[test]
    fn translation_fault_as_qemu_writes_it() {
        // QEMU: a device read of 0x7f_0000_1234 on StreamID 0x10, no
        // substream; EVT_SET_RNW(1), class left 0.
        let raw = [
            w0(0x10, 0x10, None),
            w1(true, false, false, false, 0),
            0x7f_0000_1234,
            0,
        ];
        assert_eq!(raw[0], 0x0000_0010_0000_0010);
        assert_eq!(raw[1], 1 << 35);
        let event = Event::decode(&raw);
        assert_eq!(
            event,
            Event::Translation(TranslationFault {
                stream: 0x10,
                substream: None,
                iova: 0x7f_0000_1234,
                transaction: READ,
                class: FaultClass::ContextDescriptor,
                stage2: false,
                stall_tag: None,
                ipa: None,
            })
        );
        assert_eq!(event.code(), code::F_TRANSLATION);
        assert_eq!(event.name(), "F_TRANSLATION");
        assert_eq!(event.stream(), 0x10);
        assert_eq!(
            event.as_fault(),
            Some(Fault {
                stream: 0x10,
                iova: 0x7f_0000_1234,
                access: Access::Read,
                kind: FaultKind::Translation,
            })
        );
    }

    #[test]
    fn the_four_resolvable_kinds_become_faults() {
        let kinds = [
            (code::F_TRANSLATION, FaultKind::Translation),
            (code::F_ADDR_SIZE, FaultKind::AddressSize),
            (code::F_ACCESS, FaultKind::AccessFlag),
            (code::F_PERMISSION, FaultKind::Permission),
        ];
        for (code, kind) in kinds {
            let raw = [
                w0(code, 3, None),
                w1(false, false, false, false, 2),
                0x5000,
                0,
            ];
            let fault = Event::decode(&raw).as_fault().unwrap();
            assert_eq!(fault.kind, kind);
            assert_eq!(fault.access, Access::Write);
            assert_eq!((fault.stream, fault.iova), (3, 0x5000));
        }
    }

    #[test]
    fn full_translation_fault_fields() {
        // Stalled (bit 31, STAG 0x77), substream 5, privileged instruction
        // fetch, stage 2, class IN, IPA in word 3 at [51:12].
        let raw = [
            w0(code::F_PERMISSION, 0xabcd, Some(5)),
            w1(true, true, true, true, 2) | 1 << 31 | 0x77,
            0xffff_0000,
            0x0000_0012_3456_7000 | 0xfff,
        ];
        let Event::Permission(f) = Event::decode(&raw) else {
            panic!("not a permission fault");
        };
        assert_eq!(f.stream, 0xabcd);
        assert_eq!(f.substream, Some(5));
        assert_eq!(f.iova, 0xffff_0000);
        assert!(f.transaction.read && f.transaction.instruction && f.transaction.privileged);
        assert_eq!(f.transaction.access(), Access::Execute);
        assert!(f.stage2);
        assert_eq!(f.class, FaultClass::InputAddress);
        assert_eq!(f.stall_tag, Some(0x77));
        assert_eq!(f.ipa, Some(0x12_3456_7000));
    }

    #[test]
    fn walk_external_abort_reports_the_descriptor_address() {
        // QEMU: class = 1 (TT), addr2 = address of the descriptor read.
        let raw = [
            w0(code::F_WALK_EABT, 8, None),
            w1(false, false, false, false, 1),
            0x1000,
            0x40_0000_0ff8,
        ];
        let event = Event::decode(&raw);
        let Event::WalkExternalAbort { fault, fetch_addr } = event else {
            panic!("not a walk abort");
        };
        assert_eq!(fetch_addr, 0x40_0000_0ff8);
        assert_eq!(fault.class, FaultClass::TranslationTable);
        assert_eq!(fault.ipa, None);
        assert_eq!(
            event.as_fault(),
            None,
            "an abort is not a fault mm can resolve"
        );
    }

    #[test]
    fn configuration_events() {
        let sid = 0x0100;
        let plain = |code| Event::decode(&[w0(code, sid, None), 0, 0, 0]);
        assert_eq!(
            plain(code::C_BAD_STREAMID),
            Event::BadStreamId {
                stream: sid,
                substream: None
            }
        );
        assert_eq!(
            plain(code::C_BAD_STE),
            Event::BadSte {
                stream: sid,
                substream: None
            }
        );
        assert_eq!(
            plain(code::C_BAD_CD),
            Event::BadCd {
                stream: sid,
                substream: None
            }
        );
        assert_eq!(
            plain(code::F_STREAM_DISABLED),
            Event::StreamDisabled { stream: sid }
        );
        assert_eq!(
            plain(code::F_CFG_CONFLICT),
            Event::ConfigConflict {
                stream: sid,
                substream: None
            }
        );
        assert_eq!(
            Event::decode(&[w0(code::C_BAD_SUBSTREAMID, sid, None) | 9 << 12, 0, 0, 0]),
            Event::BadSubstreamId {
                stream: sid,
                substream: 9
            }
        );
        for event in [
            plain(code::C_BAD_STREAMID),
            plain(code::C_BAD_STE),
            plain(code::C_BAD_CD),
        ] {
            assert_eq!(event.as_fault(), None);
            assert_eq!(event.stream(), sid);
        }
    }

    #[test]
    fn fetch_aborts_carry_the_fetch_address() {
        // FetchAddr [51:3] in word 3; bits [2:0] are not part of it.
        let w3 = 0x0000_0040_0123_4567;
        for (code, expect) in [
            (
                code::F_STE_FETCH,
                Event::SteFetchAbort {
                    stream: 2,
                    substream: Some(1),
                    fetch_addr: 0x40_0123_4560,
                },
            ),
            (
                code::F_CD_FETCH,
                Event::CdFetchAbort {
                    stream: 2,
                    substream: Some(1),
                    fetch_addr: 0x40_0123_4560,
                },
            ),
        ] {
            assert_eq!(Event::decode(&[w0(code, 2, Some(1)), 0, 0, w3]), expect);
        }
        assert_eq!(
            Event::decode(&[w0(code::F_VMS_FETCH, 2, None), 0, 0, w3]),
            Event::VmsFetchAbort {
                stream: 2,
                fetch_addr: 0x40_0123_4560
            }
        );
    }

    #[test]
    fn transaction_events() {
        let w1w = w1(false, false, false, false, 0);
        assert_eq!(
            Event::decode(&[w0(code::F_UUT, 7, None), w1w, 0x8000, 0]),
            Event::UnsupportedUpstream {
                stream: 7,
                substream: None,
                iova: 0x8000,
                transaction: WRITE
            }
        );
        assert_eq!(
            Event::decode(&[w0(code::F_BAD_ATS_TREQ, 7, Some(3)), 1 << 35, 0x8000, 0]),
            Event::BadAtsRequest {
                stream: 7,
                substream: Some(3),
                iova: 0x8000,
                transaction: READ
            }
        );
        assert_eq!(
            Event::decode(&[w0(code::F_TRANSL_FORBIDDEN, 7, None), 1 << 35, 0x9000, 0]),
            Event::TranslationForbidden {
                stream: 7,
                iova: 0x9000,
                read: true
            }
        );
        assert_eq!(
            Event::decode(&[w0(code::F_TLB_CONFLICT, 7, None), 1 << 39, 0xa000, 0]),
            Event::TlbConflict {
                stream: 7,
                substream: None,
                iova: 0xa000,
                transaction: WRITE,
                stage2: true
            }
        );
        assert_eq!(
            Event::decode(&[w0(code::E_PAGE_REQUEST, 7, Some(0)), 1 << 35, 0xb000, 0]),
            Event::PageRequest {
                stream: 7,
                substream: Some(0),
                iova: 0xb000,
                transaction: READ
            }
        );
    }

    #[test]
    fn unknown_and_implementation_defined_keep_the_record() {
        let raw = [w0(0xe3, 4, None), 1, 2, 3];
        let event = Event::decode(&raw);
        assert_eq!(event, Event::ImplementationDefined { code: 0xe3, raw });
        assert_eq!((event.code(), event.stream()), (0xe3, 4));
        let raw = [w0(0x0c, 5, None), 0, 0, 0];
        assert_eq!(Event::decode(&raw), Event::Unknown { code: 0x0c, raw });
        assert_eq!(Event::decode(&raw).stream(), 5);
    }

    #[test]
    fn every_known_code_round_trips() {
        for code in 0..=255u8 {
            let event = Event::decode(&[w0(code, 1, None), 0, 0, 0]);
            assert_eq!(event.code(), code);
            assert_eq!(event.stream(), 1);
        }
    }
}
