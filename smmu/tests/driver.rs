//! The SMMUv3 driver against a software SMMU that behaves like QEMU 7.2's:
//! bring-up, attaching a device to the kernel's page table, a DMA page fault
//! from record to resolution, invalidation, and the error paths.

mod fake;
mod kernel;

use fake::{Context, DmaResult, FakeSmmu, Memory, Overflow, StreamConfig};
use kernel::{kernel, ASID, ROOT};
use smmu::fault::FaultSet;
use smmu::v3::gerror::CommandFailure;
use smmu::v3::regs::{self, ProbeError};
use smmu::v3::{
    CdParams, CommandError, Config, Error, Event, FaultsDrained, Smmu, Unattached, Wait,
};
use smmu::{Access, Fault, FaultKind};

/// Drains the event queue into `faults` through the driver's fault set,
/// which starts with what `faults` holds (so those are not added again).
fn drain_into<R: smmu::v3::Regs, M: smmu::v3::DmaAllocator>(
    smmu: &mut Smmu<R, M>,
    faults: &mut Vec<Fault>,
) -> FaultsDrained {
    let mut set = FaultSet::<1024>::new();
    for f in faults.iter() {
        set.insert(*f);
    }
    let drained = smmu.drain_faults_dedup(&mut set);
    *faults = set.iter().collect();
    drained
}

/// A device on the PCIe root bus: 00:01.0.
const NIC: u32 = 0x08;

/// An SMMU with an eight-record event queue and the NIC attached to the
/// kernel's tables: where the event-queue tests start.
fn small_queue() -> (Smmu<FakeSmmu, Memory>, FakeSmmu) {
    with_nic(Config {
        eventq_log2: 3,
        ..Config::pci_root_bus()
    })
}

/// An SMMU brought up with `config` and the NIC attached to the kernel's
/// tables.
fn with_nic(config: Config) -> (Smmu<FakeSmmu, Memory>, FakeSmmu) {
    let (mut smmu, fake) = bring_up(config);
    smmu.attach(NIC, &kernel()).unwrap();
    (smmu, fake)
}

fn bring_up(config: Config) -> (Smmu<FakeSmmu, Memory>, FakeSmmu) {
    let (fake, memory) = FakeSmmu::new();
    let smmu = Smmu::new(fake.clone(), memory, config).expect("SMMU comes up");
    fake.take_commands();
    (smmu, fake)
}

fn opcodes(commands: &[[u64; 2]]) -> Vec<u8> {
    commands.iter().map(|c| c[0] as u8).collect()
}

#[test]
fn brings_the_smmu_up_the_way_qemu_expects() {
    let (fake, memory) = FakeSmmu::new();
    let smmu = Smmu::new(fake.clone(), memory, Config::pci_root_bus()).unwrap();
    let s = fake.state();

    // Disabled first, then command queue, event queue, translation, each
    // acknowledged through CR0ACK.
    let cr0_writes: Vec<u64> = s
        .writes
        .iter()
        .filter(|w| w.0 == regs::CR0)
        .map(|w| w.1)
        .collect();
    assert_eq!(cr0_writes, [0, 0b1000, 0b1100, 0b1101]);
    assert_eq!(s.writes[0], (regs::CR0, 0));
    assert_eq!(s.cr0ack, 0b1101);

    // A linear table for 2^8 StreamIDs; queues of 2^8 commands and 2^15
    // events, all with the allocate hint (bit 62).
    assert_eq!(s.strtab_base_cfg, 8);
    assert_eq!(s.strtab_base & 0x3f, 0, "STE table aligned");
    assert_eq!(s.strtab_base >> 62, 1);
    assert_eq!(s.cmdq_base & 0x1f, 8);
    assert_eq!(s.eventq_base & 0x1f, 15);
    assert_eq!((s.cmdq_base >> 62, s.eventq_base >> 62), (1, 1));
    // Write-back (0b01) inner-shareable (0b11) queue and table accesses:
    // QUEUE_IC [1:0], QUEUE_OC [3:2], QUEUE_SH [5:4], TABLE_* [11:6].
    assert_eq!(s.cr1, 0b11_01_01_11_01_01);
    assert_eq!(s.cr2, 1 << 1, "RECINVSID");
    assert_eq!(s.irq_ctrl, 0b101, "eventq and gerror interrupts");
    // Everything cached is dropped before translation is enabled.
    assert_eq!(
        s.commands,
        [[0x04, 31], [0x30, 0], [0x46, 0]],
        "CFGI_ALL, TLBI_NSNH_ALL, CMD_SYNC"
    );
    assert!(!smmu.two_level_stream_table());
    assert_eq!(smmu.features().sid_bits, 16);
}

#[test]
fn an_attached_device_walks_the_kernels_page_table() {
    let (_smmu, fake) = with_nic(Config::pci_root_bus());

    // The SMMU drops its cached STE and CD, then syncs.
    assert_eq!(
        fake.take_commands(),
        [
            [(NIC as u64) << 32 | 0x03, 0],
            [(NIC as u64) << 32 | 0x05, 1],
            [0x46, 0]
        ]
    );
    // QEMU's decoder accepts the STE and CD, and sees the CPU's regime.
    assert_eq!(
        fake.config(NIC),
        Ok(StreamConfig::Translate(Context {
            ttb0: ROOT,
            t0sz: 25,
            asid: ASID,
            ips_bits: 40,
            mair: 0xff04,
            record_faults: true,
        }))
    );
    // A page the kernel has mapped is reachable by DMA at its virtual address.
    fake.map(ROOT, 0x20_0000);
    assert_eq!(
        fake.dma(NIC, 0x20_0000, 64, true),
        DmaResult {
            translated: 16,
            failed: 0
        }
    );
}

#[test]
fn a_dma_page_fault_from_record_to_resolution() {
    let (mut smmu, fake) = with_nic(Config::pci_root_bus());

    // The device writes a 4 KiB buffer the kernel has not faulted in. QEMU
    // aborts it and logs one record per 4 bytes.
    let buffer = 0x7f_0000_3000;
    assert_eq!(fake.dma(NIC, buffer, 4096, true).failed, 1024);
    assert!(fake.state().eventq_irqs > 0);

    // The eventq interrupt handler drains them: one fault for the page.
    let mut faults = Vec::new();
    let drained = drain_into(&mut smmu, &mut faults);
    assert_eq!(
        drained,
        FaultsDrained {
            records: 1024,
            repeats: 1023,
            new_faults: 1,
            ..FaultsDrained::default()
        }
    );
    assert_eq!(
        faults,
        [Fault {
            stream: NIC,
            iova: buffer,
            access: Access::Write,
            kind: FaultKind::Translation,
        }]
    );

    // mm::resolve maps the page; the retransmitted DMA goes through.
    fake.map(ROOT, faults[0].page());
    assert_eq!(fake.dma(NIC, buffer, 4096, true).failed, 0);
    assert_eq!(drain_into(&mut smmu, &mut faults).records, 0);
}

#[test]
fn reads_and_writes_of_one_page_are_separate_faults() {
    let (mut smmu, fake) = with_nic(Config::pci_root_bus());
    fake.dma(NIC, 0x1000, 8, false);
    fake.dma(NIC, 0x1008, 8, true);
    fake.dma(NIC, 0x2000, 4, false);
    let mut faults = Vec::new();
    drain_into(&mut smmu, &mut faults);
    let seen: Vec<(u64, Access)> = faults.iter().map(|f| (f.page(), f.access)).collect();
    assert_eq!(
        seen,
        [
            (0x1000, Access::Read),
            (0x1000, Access::Write),
            (0x2000, Access::Read)
        ]
    );
}

#[test]
fn stale_translations_last_until_invalidated() {
    let (mut smmu, fake) = with_nic(Config::pci_root_bus());
    let va = 0x40_0000;
    fake.map(ROOT, va);
    assert_eq!(fake.dma(NIC, va, 4, false).failed, 0);

    // The kernel unmaps the page; QEMU's IOTLB still holds it.
    fake.unmap(ROOT, va);
    assert_eq!(fake.dma(NIC, va, 4, false).failed, 0, "stale IOTLB entry");

    // The unmap hook invalidates it: now the device faults.
    fake.take_commands();
    smmu.invalidate_va(ASID, va).unwrap();
    assert_eq!(fake.take_commands(), [[(1 << 48) | 0x12, va], [0x46, 0]]);
    assert_eq!(fake.dma(NIC, va, 4, false).failed, 1);
}

#[test]
fn ranges_are_invalidated_page_by_page_or_by_asid() {
    let (mut smmu, fake) = bring_up(Config::pci_root_bus());
    // 0x1ff0..0x3010 touches pages 0x1000, 0x2000 and 0x3000.
    smmu.invalidate_range(ASID, 0x1ff0..0x3010).unwrap();
    let commands = fake.take_commands();
    assert_eq!(opcodes(&commands), [0x12, 0x12, 0x12, 0x46]);
    let pages: Vec<u64> = commands[..3].iter().map(|c| c[1] & !0xfff).collect();
    assert_eq!(pages, [0x1000, 0x2000, 0x3000]);

    // More than 64 pages: one TLBI_NH_ASID instead.
    smmu.invalidate_range(ASID, 0..65 * 4096).unwrap();
    assert_eq!(fake.take_commands(), [[(1 << 48) | 0x11, 0], [0x46, 0]]);

    // Nothing to do for an empty range.
    smmu.invalidate_range(ASID, 0x5000..0x5000).unwrap();
    assert!(fake.take_commands().is_empty());

    smmu.invalidate_asid(7).unwrap();
    assert_eq!(fake.take_commands(), [[(7 << 48) | 0x11, 0], [0x46, 0]]);
}

#[test]
fn a_full_command_queue_waits_for_the_smmu() {
    // Two entries: five invalidations and a sync need three laps.
    let (mut smmu, fake) = bring_up(Config {
        cmdq_log2: 1,
        ..Config::pci_root_bus()
    });
    smmu.invalidate_range(ASID, 0..5 * 4096).unwrap();
    let commands = fake.take_commands();
    assert_eq!(opcodes(&commands), [0x12, 0x12, 0x12, 0x12, 0x12, 0x46]);
    let pages: Vec<u64> = commands[..5].iter().map(|c| c[1]).collect();
    assert_eq!(pages, [0, 0x1000, 0x2000, 0x3000, 0x4000]);
}

#[test]
fn a_command_queue_that_never_drains_times_out() {
    let (mut smmu, fake) = bring_up(Config {
        cmdq_log2: 1,
        poll_limit: 100,
        ..Config::pci_root_bus()
    });
    fake.state_mut().consume_commands = false;
    assert_eq!(
        smmu.invalidate_asid(ASID),
        Err(Error::Timeout(Wait::CommandSync))
    );

    let (mut smmu, fake) = bring_up(Config {
        cmdq_log2: 1,
        poll_limit: 100,
        ..Config::pci_root_bus()
    });
    fake.state_mut().consume_commands = false;
    assert_eq!(
        smmu.invalidate_range(ASID, 0..4 * 4096),
        Err(Error::Timeout(Wait::CommandQueueSpace))
    );
}

#[test]
fn a_refused_command_is_reported_and_skipped() {
    let (mut smmu, fake) = bring_up(Config::pci_root_bus());
    fake.state_mut().illegal_opcodes.push(0x11);

    let failure = CommandFailure {
        error: CommandError::Illegal,
        opcode: 0x11,
    };
    assert_eq!(smmu.invalidate_asid(ASID), Err(Error::Command(failure)));
    assert_eq!(
        Error::Command(failure).to_string(),
        "SMMU command 0x11 failed: illegal command"
    );
    // The error is acknowledged and the queue runs on: the refused command
    // became a CMD_SYNC, and the next invalidation works.
    {
        let s = fake.state();
        assert_eq!(s.gerror, s.gerrorn);
    }
    assert_eq!(opcodes(&fake.take_commands()), [0x46, 0x46]);
    smmu.invalidate_va(ASID, 0x1000).unwrap();
    assert_eq!(opcodes(&fake.take_commands()), [0x12, 0x46]);
}

#[test]
fn a_cr0ack_that_never_follows_times_out() {
    let (fake, memory) = FakeSmmu::new();
    fake.state_mut().cr0ack_stuck = true;
    let config = Config {
        poll_limit: 10,
        ..Config::pci_root_bus()
    };
    assert_eq!(
        Smmu::new(fake, memory, config).err(),
        Some(Error::Timeout(Wait::Cr0Ack))
    );
}

#[test]
fn smmus_that_cannot_share_the_cpu_page_table_are_refused() {
    let refused = |change: fn(&mut fake::State), config: Config| {
        let (fake, memory) = FakeSmmu::new();
        change(&mut fake.state_mut());
        Smmu::new(fake, memory, config).err().expect("refused")
    };
    let root_bus = Config::pci_root_bus();
    assert_eq!(
        refused(|s| s.idr[0] &= !(1 << 1), root_bus),
        Error::Unsupported(ProbeError::NoStage1)
    );
    assert_eq!(
        refused(|s| s.idr[0] &= !(1 << 4), root_bus),
        Error::Unsupported(ProbeError::NotCoherent)
    );
    assert_eq!(
        refused(|s| s.idr[5] &= !(1 << 4), root_bus),
        Error::Unsupported(ProbeError::No4KGranule)
    );
    assert_eq!(
        refused(|s| s.idr[5] = (s.idr[5] & !7) | 1, root_bus),
        Error::Unsupported(ProbeError::OutputAddressTooSmall { have: 36, need: 40 })
    );
    let wide = Config {
        sid_bits_needed: 17,
        ..root_bus
    };
    assert_eq!(
        refused(|_| {}, wide),
        Error::Unsupported(ProbeError::SidSizeTooSmall { have: 16, need: 17 })
    );
    let huge = Config {
        eventq_log2: 20,
        ..root_bus
    };
    assert_eq!(
        refused(|_| {}, huge),
        Error::EventQueueTooLarge {
            requested: 20,
            max: 19
        }
    );
    assert_eq!(
        Error::Unsupported(ProbeError::NotCoherent).to_string(),
        "unsupported SMMU: SMMU table walks are not cache-coherent"
    );
}

#[test]
fn running_out_of_memory_is_an_error() {
    let memory = Memory::with_limit(40 * 1024);
    let fake = FakeSmmu::with_memory(memory.clone());
    // 16 KiB of STEs and 16 KiB of CDs fit; the 1 MiB event queue does not.
    assert_eq!(
        Smmu::new(fake, memory, Config::pci_root_bus()).err(),
        Some(Error::OutOfMemory(smmu::v3::Allocation::EventQueue))
    );
}

#[test]
fn a_full_event_queue_is_reported_as_lost_faults() {
    // Eight records fit; a faulting 4 KiB DMA logs 1024.
    let (mut smmu, fake) = small_queue();
    fake.dma(NIC, 0x9000, 4096, true);
    assert_eq!(fake.state().gerror_irqs, 1);

    // The gerror interrupt handler learns that faults were lost...
    let status = smmu.check_gerror();
    assert!(status.events_lost);
    assert_eq!(status.active, 1 << 2);
    // ...and has acknowledged it.
    {
        let s = fake.state();
        assert_eq!(s.gerror, s.gerrorn);
    }
    assert!(smmu.check_gerror().is_clear());

    // The records that did fit still name the page.
    let mut faults = Vec::new();
    let drained = drain_into(&mut smmu, &mut faults);
    assert_eq!((drained.records, drained.new_faults), (8, 1));
    assert_eq!(faults[0].page(), 0x9000);
}

#[test]
fn an_overflow_flag_is_acknowledged_and_reported() {
    // An SMMU following the architecture toggles EVENTQ_PROD.OVFLG instead.
    let (mut smmu, fake) = bring_up(Config {
        eventq_log2: 3,
        ..Config::pci_root_bus()
    });
    fake.state_mut().overflow = Overflow::Flag;
    smmu.attach(NIC, &kernel()).unwrap();
    fake.dma(NIC, 0x9000, 64, false);

    let mut faults = Vec::new();
    let drained = drain_into(&mut smmu, &mut faults);
    assert!(drained.events_lost);
    assert_eq!(drained.records, 8);
    {
        let s = fake.state();
        assert_eq!(s.eventq_cons >> 31, s.eventq_prod >> 31, "OVACKFLG = OVFLG");
    }
    // Acknowledged: the next drain reports nothing lost.
    fake.dma(NIC, 0xa000, 4, false);
    let drained = drain_into(&mut smmu, &mut faults);
    assert!(!drained.events_lost);
    assert_eq!(drained.records, 1);
}

#[test]
fn the_event_queue_wraps() {
    let (mut smmu, fake) = small_queue();
    // Three records per round, eight slots: the indices wrap every few
    // rounds and the wrap flag flips.
    for round in 0..20u64 {
        let page = 0x10_0000 + round * 0x1000;
        fake.dma(NIC, page, 12, true);
        let mut events = Vec::new();
        let drained = smmu.drain_events(|event| events.push(event));
        assert_eq!((drained.records, events.len()), (3, 1), "round {round}");
        assert!(!drained.events_lost && !drained.more_pending);
        assert!(events.iter().all(|e| e.as_fault().unwrap().page() == page));
    }
    assert!(smmu.check_gerror().is_clear());
}

#[test]
fn a_drain_reads_what_was_queued_when_it_began() {
    let (mut smmu, fake) = small_queue();
    fake.dma(NIC, 0x1000, 16, true);
    // The fault handed on makes the device fault again meanwhile (on a new
    // page). The drain stops at the four records it found, one fault and
    // three repeats, so that the caller resolves that fault first.
    let drained = smmu.drain_events(|_| {
        fake.dma(NIC, 0x10_0000, 8, true);
    });
    assert_eq!((drained.records, drained.repeats), (4, 3));
    assert!(drained.more_pending && !drained.events_lost);
    // The eventq interrupt will not fire again for those: drain once more.
    let mut pages = Vec::new();
    let drained = smmu.drain_events(|e| pages.push(e.as_fault().unwrap().page()));
    assert_eq!((drained.records, drained.more_pending), (2, false));
    assert_eq!(pages, [0x10_0000]);
}

#[test]
fn records_repeating_one_fault_are_counted_not_handed_on() {
    let (mut smmu, fake) = with_nic(Config::pci_root_bus());
    // QEMU records a faulting access once per word: 64 bytes on one page,
    // then 8 bytes on the next page, then the first page again.
    fake.dma(NIC, 0x5000, 64, true);
    fake.dma(NIC, 0x6000, 8, true);
    fake.dma(NIC, 0x5000, 4, true);
    let mut pages = Vec::new();
    let drained = smmu.drain_events(|e| pages.push(e.as_fault().unwrap().page()));
    assert_eq!(pages, vec![0x5000, 0x6000, 0x5000]);
    assert_eq!((drained.records, drained.repeats), (16 + 2 + 1, 15 + 1));
}

#[test]
fn two_level_stream_table_for_wide_stream_ids() {
    let (mut smmu, fake) = bring_up(Config {
        sid_bits_needed: 16,
        ..Config::pci_root_bus()
    });
    assert!(smmu.two_level_stream_table());
    // LOG2SIZE = 16, SPLIT = 8 at [10:6], FMT = 1 (two-level) at [17:16].
    assert_eq!(fake.state().strtab_base_cfg, 16 | 8 << 6 | 1 << 16);

    // Bus 0x12, device 6, function 4: StreamID 0x1234.
    smmu.attach(0x1234, &kernel()).unwrap();
    assert!(matches!(fake.config(0x1234), Ok(StreamConfig::Translate(c)) if c.ttb0 == ROOT));
    // A device on a bus the kernel never configured is rejected.
    assert_eq!(fake.config(0x5600), Err(0x02));
    fake.dma(0x5600, 0x1000, 4, false);
    let mut faults = Vec::new();
    let drained = drain_into(&mut smmu, &mut faults);
    assert_eq!(
        drained.first_other,
        Some(Event::BadStreamId {
            stream: 0x5600,
            substream: None
        })
    );
}

#[test]
fn detached_streams_abort_and_bypassed_ones_pass() {
    let (mut smmu, fake) = with_nic(Config::pci_root_bus());
    fake.take_commands();
    smmu.detach(NIC).unwrap();
    assert_eq!(
        fake.take_commands(),
        [[0x0000_0008_0000_0003, 0], [0x46, 0]]
    );
    assert_eq!(fake.config(NIC), Ok(StreamConfig::Abort));
    assert_eq!(fake.dma(NIC, 0x1000, 8, true).failed, 2);
    assert_eq!(smmu.drain_events(|_| {}).records, 0, "aborts are silent");

    smmu.bypass(NIC).unwrap();
    assert_eq!(fake.config(NIC), Ok(StreamConfig::Bypass));
    assert_eq!(fake.dma(NIC, 0x1000, 8, true).failed, 0);
}

#[test]
fn unattached_streams_are_rejected_visibly_by_default() {
    let (mut smmu, fake) = bring_up(Config::pci_root_bus());
    assert_eq!(fake.dma(0x10, 0x1000, 4, false).failed, 1);
    let mut faults = Vec::new();
    let drained = drain_into(&mut smmu, &mut faults);
    assert!(faults.is_empty());
    assert_eq!(drained.other_events, 1);
    assert_eq!(
        drained.first_other,
        Some(Event::BadSte {
            stream: 0x10,
            substream: None
        })
    );

    for (unattached, config) in [
        (Unattached::Abort, StreamConfig::Abort),
        (Unattached::Bypass, StreamConfig::Bypass),
    ] {
        let (_smmu, fake) = bring_up(Config {
            unattached,
            ..Config::pci_root_bus()
        });
        assert_eq!(fake.config(0x10), Ok(config));
    }
}

#[test]
fn reattaching_goes_through_abort_and_invalidates() {
    let (mut smmu, fake) = with_nic(Config::pci_root_bus());
    fake.take_commands();
    let other = CdParams {
        asid: 2,
        ..kernel()
    };
    smmu.attach(NIC, &other).unwrap();
    // The STE is aborted and invalidated before its CD is rewritten.
    assert_eq!(
        opcodes(&fake.take_commands()),
        [0x03, 0x46, 0x03, 0x05, 0x46]
    );
    assert!(matches!(fake.config(NIC), Ok(StreamConfig::Translate(c)) if c.asid == 2));
}

#[test]
fn bad_attachments_are_refused() {
    let (mut smmu, _fake) = bring_up(Config::pci_root_bus());
    assert_eq!(
        smmu.attach(0x100, &kernel()),
        Err(Error::StreamOutOfRange {
            sid: 0x100,
            sid_bits: 8
        })
    );
    let misaligned = CdParams {
        ttb0: ROOT + 8,
        ..kernel()
    };
    assert_eq!(
        smmu.attach(NIC, &misaligned),
        Err(Error::BadContext(smmu::v3::CdError::TtbMisaligned(
            ROOT + 8
        )))
    );
}
