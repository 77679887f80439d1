//! The MMU-500 driver against a register-level model of the ZynqMP's
//! MMU-500 (`mmu500_model/mod.rs`): bring-up, translation, the stall -> resolve
//! -> resume path and its corner cases, unmatched streams, probing absent
//! hardware, TLB sync timeouts, and a DMA scheduler driving a stalled
//! device to completion without retransmission.

mod kernel;
mod mmu500_model;

use kernel::{kernel, ASID, ROOT};
use mmu500_model::{cb_offset, cbar_offset, Abort, Model, Outcome};
use smmu::fault::FaultSet;
use smmu::v2::regs::{cb, fsr, gr0, sctlr};
use smmu::v2::{
    Bank, CdParams, Config, ContextFault, Error, Mmu500, ProbeError, Resume, StreamMatch, Wait,
};
use smmu::{Access, Fault, FaultKind, Iommu};

/// A device on the ZynqMP: GDMA's StreamID (TBU 2, master 0x68).
const GDMA: u32 = 0x14e8;
/// Another device: SD0 (TBU 2, master 0x70).
const SD0: u32 = 0x0870;
/// A buffer of the application, not resident yet.
const BUF: u64 = 0x40_0000;

/// A device's view: its own table and ASID.
fn view(asid: u16, root: u64) -> CdParams {
    CdParams {
        ttb0: root,
        asid,
        ..kernel()
    }
}

fn bring_up() -> (Mmu500<Model>, Model) {
    let model = Model::zynqmp();
    let smmu = Mmu500::new(model.clone(), Config::zynqmp()).expect("MMU-500 comes up");
    (smmu, model)
}

/// The kernel's fault resolution (`mm::resolve`): maps the page unless the
/// device was not granted it.
fn resolve(model: &Model, root: u64, granted: std::ops::Range<u64>, f: &ContextFault) -> Resume {
    match f.fault {
        Some(fault) if granted.contains(&fault.iova) => {
            model.map(root, fault.iova);
            Resume::Retry
        }
        _ => Resume::Abort,
    }
}

fn no_violations(model: &Model) {
    assert_eq!(model.state().violations, Vec::<String>::new());
}

#[test]
fn translates_a_mapped_page() {
    let (mut smmu, model) = bring_up();
    {
        let s = model.state();
        // Translation on, unmatched streams fault, global faults reported.
        assert_eq!(s.scr0 & 1, 0, "CLIENTPD clear");
        assert_ne!(s.scr0 & (1 << 10), 0, "USFCFG set");
        assert_ne!(s.scr0 & 0b110, 0, "GFRE and GFIE");
        // The whole TLB was invalidated and synced before sCR0 was written.
        let pos = |off| s.writes.iter().position(|w| w.0 == off).unwrap();
        assert!(pos(gr0::TLBIALLNSNH) < pos(gr0::STLBGSYNC));
        assert!(pos(gr0::STLBGSYNC) < pos(gr0::SCR0));
        assert!(s.smr.iter().all(|&r| r == 0));
    }

    let bank = smmu.attach(GDMA, &kernel()).unwrap();
    assert_eq!(bank, Bank(0));
    {
        let s = model.state();
        assert_eq!(s.smr[0], 1 << 31 | GDMA, "SMR: valid, exact match");
        assert_eq!(s.s2cr[0], 0, "S2CR: translate through bank 0");
        assert_eq!((s.cbar[0] >> 16) & 3, 1, "CBAR: stage 1, stage-2 bypass");
        assert_eq!(s.cba2r[0] & 1, 1, "CBA2R: AArch64");
        let b = &s.banks[0];
        assert_eq!(b.ttbr0, (ASID as u64) << 48 | ROOT);
        assert_eq!(b.tcr & 0x3f, 25);
        assert_eq!((b.mair0, b.mair1), (0xff04, 0));
        let want = sctlr::M | sctlr::TRE | sctlr::AFE | sctlr::CFRE | sctlr::CFIE | sctlr::CFCFG;
        assert_eq!(b.sctlr, want, "stall on fault, hold later transactions");
        // SCTLR.M last of the bank, the SMR last of all.
        let last_sctlr = s
            .writes
            .iter()
            .rposition(|w| w.0 == cb_offset(0, cb::SCTLR));
        let cbar = s.writes.iter().rposition(|w| w.0 == cbar_offset(0));
        let smr = s.writes.iter().rposition(|w| w.0 == gr0::smr(0));
        assert!(cbar < last_sctlr && last_sctlr < smr);
    }

    model.map(ROOT, BUF);
    let t = model.dma(GDMA, BUF + 0x10, Access::Write);
    assert_eq!(model.outcome(t), Outcome::Done { pa: BUF + 0x10 });
    assert!(model.cached(ASID, BUF));
    assert!(!model.context_irq(0));
    assert_eq!(smmu.take_fault(bank), None);
    no_violations(&model);
}

#[test]
fn stall_resolve_resume_retry_completes_the_transaction() {
    let (mut smmu, model) = bring_up();
    let bank = smmu.attach(GDMA, &kernel()).unwrap();

    // The device writes a page the application has not touched yet.
    let t = model.dma(GDMA, BUF + 0x80, Access::Write);
    assert_eq!(model.outcome(t), Outcome::Stalled);
    assert!(model.context_irq(0));

    // The interrupt handler reads the record...
    let record = smmu.take_fault(bank).expect("a fault is recorded");
    assert_eq!(
        record.fault,
        Some(Fault {
            stream: GDMA,
            iova: BUF + 0x80,
            access: Access::Write,
            kind: FaultKind::Translation,
        })
    );
    assert!(record.stalled && !record.multi);
    // ...and masks the bank's interrupt, which SS alone keeps asserted.
    assert!(!model.context_irq(0));
    assert!(smmu.is_stalled(bank));

    // The kernel resolves the page, then resumes: retry.
    model.map(ROOT, BUF);
    assert!(smmu.resume(bank, Resume::Retry));
    assert_eq!(model.outcome(t), Outcome::Done { pa: BUF + 0x80 });
    assert_eq!(model.resumes(0), [0]);
    assert_eq!(model.state().banks[0].fsr, 0, "FSR cleared");
    assert_ne!(model.state().banks[0].sctlr & sctlr::CFIE, 0, "CFIE back");
    assert!(!smmu.is_stalled(bank));
    // A second resume (the scheduler may resume unstalled segments) is a no-op.
    assert!(!smmu.resume(bank, Resume::Retry));
    assert_eq!(model.resumes(0), [0]);
    no_violations(&model);
}

#[test]
fn resume_terminate_aborts_the_transaction() {
    let (mut smmu, model) = bring_up();
    let bank = smmu.attach(GDMA, &kernel()).unwrap();
    let t = model.dma(GDMA, BUF, Access::Read);
    let record = smmu.take_fault(bank).unwrap();
    assert_eq!(record.fault.unwrap().access, Access::Read);

    smmu.resume(bank, Resume::Abort);
    assert_eq!(model.outcome(t), Outcome::Aborted(Abort::Terminated));
    assert_eq!(model.resumes(0), [1], "RESUME.TnR = 1");
    assert_eq!(model.state().banks[0].fsr, 0);
    no_violations(&model);
}

#[test]
fn an_unresolvable_page_terminates() {
    let (mut smmu, model) = bring_up();
    smmu.attach(GDMA, &kernel()).unwrap();
    // Granted: one page at BUF. The device strays two pages further.
    let granted = BUF..BUF + 0x1000;
    let ok = model.dma(GDMA, BUF, Access::Write);
    let handled = smmu.handle_faults(|f| resolve(&model, ROOT, granted.clone(), f));
    assert_eq!(handled, 1);
    assert_eq!(model.outcome(ok), Outcome::Done { pa: BUF });

    let stray = model.dma(GDMA, BUF + 0x2000, Access::Write);
    let mut seen = Vec::new();
    smmu.handle_faults(|f| {
        seen.push(f.fault.unwrap().iova);
        resolve(&model, ROOT, granted.clone(), f)
    });
    assert_eq!(seen, [BUF + 0x2000]);
    assert_eq!(model.outcome(stray), Outcome::Aborted(Abort::Terminated));
    assert!(!model.is_mapped(ROOT, BUF + 0x2000));

    // A write to a read-only page is a permission fault, also refused.
    model.map_read_only(ROOT, BUF + 0x3000);
    let ro = model.dma(GDMA, BUF + 0x3000, Access::Write);
    let mut kinds = Vec::new();
    smmu.handle_faults(|f| {
        kinds.push(f.fault.unwrap().kind);
        Resume::Abort
    });
    assert_eq!(kinds, [FaultKind::Permission]);
    assert_eq!(model.outcome(ro), Outcome::Aborted(Abort::Terminated));
    no_violations(&model);
}

#[test]
fn two_streams_in_two_banks_fault_independently() {
    let (mut smmu, model) = bring_up();
    const VIEW: u64 = 0x4_0800_0000;
    let a = smmu.attach(GDMA, &kernel()).unwrap();
    let b = smmu.attach(SD0, &view(2, VIEW)).unwrap();
    assert_ne!(a, b);
    assert_eq!(smmu.bank_of(GDMA), Some(a));
    assert_eq!(smmu.bank_of(SD0), Some(b));

    let ta = model.dma(GDMA, BUF, Access::Write);
    let tb = model.dma(SD0, BUF + 0x5000, Access::Read);
    assert!(model.context_irq(a.0 as usize) && model.context_irq(b.0 as usize));

    // One interrupt handler pass reads both banks.
    let mut records = Vec::new();
    assert_eq!(smmu.take_faults(|r| records.push(r)), 2);
    let fault = |r: &ContextFault| r.fault.unwrap();
    assert_eq!((records[0].bank, fault(&records[0]).stream), (a, GDMA));
    assert_eq!((records[1].bank, fault(&records[1]).stream), (b, SD0));
    assert_eq!(fault(&records[1]).iova, BUF + 0x5000);

    // Resuming one bank leaves the other stalled.
    model.map(VIEW, BUF + 0x5000);
    smmu.resume(b, Resume::Retry);
    assert_eq!(model.outcome(tb), Outcome::Done { pa: BUF + 0x5000 });
    assert_eq!(model.outcome(ta), Outcome::Stalled);
    assert!(smmu.is_stalled(a));
    // The same page in the kernel's table is still unmapped: each bank
    // walks its own table under its own ASID.
    assert!(!model.is_mapped(ROOT, BUF + 0x5000));

    model.map(ROOT, BUF);
    smmu.resume(a, Resume::Retry);
    assert_eq!(model.outcome(ta), Outcome::Done { pa: BUF });
    no_violations(&model);
}

#[test]
fn a_second_fault_while_stalled_is_multi_and_faults_again_after_the_resume() {
    let (mut smmu, model) = bring_up();
    let bank = smmu.attach(GDMA, &kernel()).unwrap();

    // Two transactions in the walk pipeline together, both on missing pages.
    let ids = model.dma_burst(&[
        (GDMA, BUF, Access::Write),
        (GDMA, BUF + 0x1000, Access::Write),
    ]);
    // A third, issued after: held behind the stall, untranslated.
    let later = model.dma(GDMA, BUF + 0x2000, Access::Write);
    assert_eq!(model.outcome(ids[0]), Outcome::Stalled);
    assert_eq!(model.outcome(ids[1]), Outcome::Stalled);
    assert_eq!(model.outcome(later), Outcome::Held);

    // Only the first is recorded; MULTI says another was not.
    let mut set = FaultSet::<16>::new();
    let got = smmu.collect_faults(&mut set);
    assert_eq!((got.records, got.new_faults, got.stalled), (1, 1, 1));
    assert!(got.lost, "MULTI: the caller cannot know what else faulted");
    assert_eq!(set.iter().next().unwrap().iova, BUF);
    assert_ne!(model.state().banks[0].fsr & fsr::MULTI, 0);

    // Resolve what was recorded and retry: the unrecorded one faults again
    // and is recorded now, with its own interrupt; the held one waits.
    model.map(ROOT, BUF);
    smmu.resume(bank, Resume::Retry);
    assert_eq!(model.outcome(ids[0]), Outcome::Done { pa: BUF });
    assert_eq!(model.outcome(ids[1]), Outcome::Stalled);
    assert_eq!(model.outcome(later), Outcome::Held);
    assert!(model.context_irq(0));
    let second = smmu.take_fault(bank).unwrap();
    assert_eq!(second.fault.unwrap().iova, BUF + 0x1000);
    assert!(!second.multi);

    // And the held one after that.
    model.map(ROOT, BUF + 0x1000);
    smmu.resume(bank, Resume::Retry);
    assert_eq!(model.outcome(ids[1]), Outcome::Done { pa: BUF + 0x1000 });
    assert_eq!(model.outcome(later), Outcome::Stalled);
    let third = smmu.take_fault(bank).unwrap();
    assert_eq!(third.fault.unwrap().iova, BUF + 0x2000);
    model.map(ROOT, BUF + 0x2000);
    smmu.resume(bank, Resume::Retry);
    assert_eq!(model.outcome(later), Outcome::Done { pa: BUF + 0x2000 });
    no_violations(&model);
}

#[test]
fn tlb_invalidation_during_a_stall() {
    let (mut smmu, model) = bring_up();
    let bank = smmu.attach(GDMA, &kernel()).unwrap();
    // One page translated (and cached), one stalled.
    let cached = BUF + 0x7000;
    model.map(ROOT, cached);
    model.dma(GDMA, cached, Access::Read);
    assert!(model.cached(ASID, cached));
    let t = model.dma(GDMA, BUF, Access::Write);
    smmu.take_fault(bank).unwrap();

    // The kernel evicts the cached page while the bank is stalled: the
    // invalidation and its sync complete.
    model.unmap(ROOT, cached);
    smmu.invalidate_va(ASID, cached).unwrap();
    assert!(!model.cached(ASID, cached));
    smmu.invalidate_range(ASID, BUF..BUF + 0x3000).unwrap();
    smmu.invalidate_asid(ASID).unwrap();
    assert_eq!(model.outcome(t), Outcome::Stalled, "still stalled");

    model.map(ROOT, BUF);
    smmu.resume(bank, Resume::Retry);
    assert_eq!(model.outcome(t), Outcome::Done { pa: BUF });
    // The evicted page is not served from a stale entry: it faults.
    let again = model.dma(GDMA, cached, Access::Read);
    assert_eq!(model.outcome(again), Outcome::Stalled);
    smmu.handle_faults(|_| Resume::Abort);
    no_violations(&model);
}

#[test]
fn a_full_stall_queue_terminates_and_reports_lost_faults() {
    let (mut smmu, model) = bring_up();
    model.state_mut().stall_slots = 2;
    let bank = smmu.attach(GDMA, &kernel()).unwrap();

    let first = model.dma(GDMA, BUF, Access::Write);
    let held = model.dma(GDMA, BUF + 0x1000, Access::Write);
    let overflow = model.dma(GDMA, BUF + 0x2000, Access::Write);
    assert_eq!(model.outcome(first), Outcome::Stalled);
    assert_eq!(model.outcome(held), Outcome::Held);
    assert_eq!(
        model.outcome(overflow),
        Outcome::Aborted(Abort::StallQueueFull)
    );

    let mut set = FaultSet::<16>::new();
    let got = smmu.collect_faults(&mut set);
    assert!(got.lost, "the terminated transaction's fault is lost");
    assert_eq!(got.new_faults, 1);

    // Resolving with everything the device may touch lets the rest finish.
    for p in 0..3 {
        model.map(ROOT, BUF + p * 0x1000);
    }
    smmu.resume(bank, Resume::Retry);
    assert_eq!(model.outcome(first), Outcome::Done { pa: BUF });
    assert_eq!(model.outcome(held), Outcome::Done { pa: BUF + 0x1000 });
    assert_eq!(model.state().banks[0].fsr, 0);
    no_violations(&model);
}

#[test]
fn an_unmatched_stream_faults() {
    let (mut smmu, model) = bring_up();
    smmu.attach(GDMA, &kernel()).unwrap();
    let t = model.dma(0x0871, BUF, Access::Write);
    assert_eq!(model.outcome(t), Outcome::Aborted(Abort::Unmatched));
    assert!(model.global_irq());
    let g = smmu.take_global_fault().unwrap();
    assert!(g.unidentified_stream() && !g.multi());
    assert_eq!(g.stream, 0x0871);
    assert!(!model.global_irq());
    assert_eq!(smmu.take_global_fault(), None);

    // Detaching makes a stream unmatched too; overlapping matches are refused.
    smmu.detach(GDMA).unwrap();
    let t = model.dma(GDMA, BUF, Access::Write);
    assert_eq!(model.outcome(t), Outcome::Aborted(Abort::Unmatched));
    let tbu2 = StreamMatch {
        id: 0x1400,
        mask: 0x3ff,
    };
    smmu.attach_match(tbu2, &kernel()).unwrap();
    assert_eq!(
        smmu.attach(GDMA, &kernel()),
        Err(Error::StreamConflict {
            stream: GDMA,
            smr: 0
        })
    );
    assert_eq!(
        smmu.attach(0x8000, &kernel()),
        Err(Error::StreamTooWide {
            stream: 0x8000,
            mask: 0,
            sid_bits: 15
        })
    );
    no_violations(&model);
}

#[test]
fn probing_absent_hardware_says_no_smmu() {
    // QEMU's xlnx-zcu102 maps nothing at 0xFD80_0000: reads are 0.
    let model = Model::absent();
    let err = Mmu500::new(model.clone(), Config::zynqmp()).err().unwrap();
    assert_eq!(err, Error::Probe(ProbeError::NotPresent { id0: 0 }));
    assert_eq!(err.to_string(), "ID registers read 0x0: nothing answers");
    assert!(model.state().writes.is_empty());
}

#[test]
fn a_tlb_sync_that_never_completes_is_an_error() {
    let config = Config {
        poll_limit: 100,
        ..Config::zynqmp()
    };
    let stuck = Model::zynqmp();
    stuck.state_mut().tlbsync_stuck = true;
    assert_eq!(
        Mmu500::new(stuck, config).err(),
        Some(Error::Timeout(Wait::GlobalTlbSync))
    );

    let model = Model::zynqmp();
    let mut smmu = Mmu500::new(model.clone(), config).unwrap();
    let bank = smmu.attach(GDMA, &kernel()).unwrap();
    model.state_mut().tlbsync_stuck = true;
    assert_eq!(
        smmu.invalidate_va(ASID, BUF),
        Err(Error::Timeout(Wait::ContextTlbSync(bank)))
    );
}

#[test]
fn both_drivers_share_the_kernel_facing_interface() {
    fn attach_and_invalidate<I: Iommu>(iommu: &mut I) {
        iommu.attach(GDMA, &kernel()).unwrap();
        iommu.invalidate_range(ASID, BUF..BUF + 0x2000).unwrap();
        let mut set = FaultSet::<16>::new();
        assert_eq!(iommu.collect_faults(&mut set).new_faults, 0);
        iommu.detach(GDMA).unwrap();
    }
    let (mut smmu, model) = bring_up();
    attach_and_invalidate(&mut smmu);
    no_violations(&model);
}

/// The DMA scheduler drives a device behind the MMU-500: the device stalls
/// on every page of a cold buffer, the scheduler resolves each fault and
/// resumes the stall through `Engine::resume`, and the transfer completes
/// without a single retransmission.
mod scheduler {
    use super::*;
    use dma::{
        Completion, Direction, Engine, EngineCaps, EngineError, MemError, Policy, Scheduler,
        Segment, SegmentId, StreamId, Transfer,
    };
    use mmu500_model::TxnId;
    use std::cell::RefCell;
    use std::ops::Range;
    use std::rc::Rc;

    /// The memory manager: resolving a page maps it in the model's table.
    struct Memory {
        model: Model,
        granted: Range<usize>,
    }

    impl dma::Memory for Memory {
        fn page_size(&self) -> usize {
            4096
        }
        fn is_resident(&self, va: usize, _: dma::Access) -> bool {
            self.model.is_mapped(ROOT, va as u64)
        }
        fn make_resident(&mut self, va: usize, _: dma::Access) -> Result<(), MemError> {
            if !self.granted.contains(&va) {
                return Err(MemError::NotGranted);
            }
            self.model.map(ROOT, va as u64);
            Ok(())
        }
        fn pin(&mut self, _: Range<usize>) -> Result<(), MemError> {
            Ok(())
        }
        fn unpin(&mut self, _: Range<usize>) {}
        fn now(&self) -> u64 {
            0
        }
    }

    /// A DMA engine behind the MMU-500 whose stream stalls on faults: it
    /// writes each segment one page-sized burst after another.
    struct StallingDevice {
        smmu: Rc<RefCell<Mmu500<Model>>>,
        model: Model,
        in_flight: Vec<(SegmentId, Vec<TxnId>)>,
        resumes: usize,
    }

    impl Engine for StallingDevice {
        fn caps(&self) -> EngineCaps {
            EngineCaps {
                max_segment: 4 * 4096,
                max_pieces: 1,
                block: 1,
                can_resume: true,
                stream: StreamId(GDMA),
                physical: false,
            }
        }

        fn start(&mut self, seg: &Segment) -> Result<(), EngineError> {
            let va = seg.va();
            let txns = (va.start..va.end)
                .step_by(4096)
                .map(|a| self.model.dma(GDMA, a as u64, Access::Write))
                .collect();
            self.in_flight.push((seg.id, txns));
            Ok(())
        }

        /// `dma::Resume` goes to the MMU-500 unchanged.
        fn resume(&mut self, _seg: &Segment, how: dma::Resume) {
            let mut smmu = self.smmu.borrow_mut();
            if let Some(bank) = smmu.bank_of(GDMA) {
                self.resumes += smmu.resume(bank, how) as usize;
            }
        }
    }

    impl StallingDevice {
        fn completions(&mut self) -> Vec<(SegmentId, Completion)> {
            let model = self.model.clone();
            let mut done = Vec::new();
            self.in_flight.retain(|(seg, txns)| {
                let outcomes: Vec<Outcome> = txns.iter().map(|&t| model.outcome(t)).collect();
                if outcomes.iter().any(Outcome::pending) {
                    return true;
                }
                let ok = outcomes.iter().all(|o| matches!(o, Outcome::Done { .. }));
                let status = if ok {
                    Completion::Ok
                } else {
                    Completion::Error(EngineError::Device(1))
                };
                done.push((*seg, status));
                false
            });
            done
        }
    }

    fn run(
        granted: Range<usize>,
        len: usize,
    ) -> (Result<dma::TransferReport, dma::TransferError>, usize) {
        let (smmu, model) = bring_up();
        let smmu = Rc::new(RefCell::new(smmu));
        smmu.borrow_mut().attach(GDMA, &kernel()).unwrap();
        let mut device = StallingDevice {
            smmu: smmu.clone(),
            model: model.clone(),
            in_flight: Vec::new(),
            resumes: 0,
        };
        let mut mem = Memory {
            model: model.clone(),
            granted,
        };
        let mut sched = Scheduler::default();
        let engine = sched.add_engine(&device, 2);
        let va = BUF as usize..BUF as usize + len;
        let transfer = Transfer::contiguous(Direction::FromDevice, va, 0, Policy::FaultAware);
        sched.submit(engine, transfer).unwrap();
        for _ in 0..100 {
            sched.poll(&mut [&mut device], &mut mem);
            // The device's completions as observed, then the faults drained
            // (the scheduler's ordering rule), then the completions handed in.
            let completions = device.completions();
            let mut records = Vec::new();
            smmu.borrow_mut().take_faults(|r| records.push(r));
            for r in records {
                if let Some(f) = r.fault {
                    let access = match f.access {
                        Access::Write => dma::Access::Write,
                        _ => dma::Access::Read,
                    };
                    sched.on_fault(&mut mem, StreamId(f.stream), f.iova as usize, access);
                }
                if r.multi {
                    sched.events_lost(StreamId(GDMA));
                }
            }
            for (seg, status) in completions {
                sched.completed(engine, seg, status).unwrap();
            }
            if let Some((_, result)) = sched.take_finished().pop() {
                no_violations(&model);
                return (result, device.resumes);
            }
        }
        panic!("the transfer never finished");
    }

    #[test]
    fn a_stalled_device_completes_without_retransmission() {
        let len = 6 * 4096;
        let (result, resumes) = run(BUF as usize..BUF as usize + len, len);
        let report = result.expect("the transfer completes");
        assert_eq!(report.stats.retransmissions, 0);
        assert_eq!(report.stats.faults, 6, "one fault per page");
        assert_eq!(report.stats.resumes, 6);
        assert_eq!(resumes, 6, "every resume reached the MMU-500");
    }

    #[test]
    fn an_ungranted_page_aborts_the_stall_and_fails_the_transfer() {
        let len = 3 * 4096;
        let (result, _) = run(BUF as usize..BUF as usize + 4096, len);
        assert!(result.is_err(), "{result:?}");
    }
}
