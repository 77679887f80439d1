//! `GuestDma` against a fake QEMU: a thread that answers the backend
//! channel's MISS messages in order, as QEMU 7.2 does, sending each
//! translation as an IOTLB UPDATE to a real frontend thread (which inserts
//! it and acks) before replying. Its "guest SMMU" translates every page of
//! a small memory except the holes a test makes; a miss on a hole is a
//! fault event, which the fake records.

use super::*;
use crate::frontend::{Frontend, Shared};
use crate::sys;
use crate::vhost_msg::{
    self as msg, req, Header, IotlbMsg, BACKEND_IOTLB_MSG, FLAG_NEED_REPLY, FLAG_REPLY,
    HEADER_SIZE, IOTLB_MISS, IOTLB_SIZE, IOTLB_UPDATE,
};
use std::collections::HashSet;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::Mutex;
use std::thread::JoinHandle;

/// IOVA of the fake guest memory's first page.
const BASE: u64 = 0x4000_0000;
/// Where "QEMU" has that memory mapped (what UPDATEs name).
const QEMU_BASE: u64 = 0x7f00_0000_0000;
/// Pages of fake guest memory.
const PAGES: u64 = 256;

fn page(i: u64) -> u64 {
    BASE + i * PAGE
}

/// What the fake QEMU saw.
#[derive(Default)]
struct Seen {
    /// Every MISS, in arrival order.
    misses: Vec<u64>,
    /// MISS messages that were already waiting together at each read.
    bursts: Vec<usize>,
    /// Pages it could not translate (events in the guest's SMMU queue).
    events: Vec<u64>,
}

struct Rig {
    dma: GuestDma,
    tr: Arc<Translation>,
    /// Pages the fake guest SMMU cannot translate.
    holes: Arc<Mutex<HashSet<u64>>>,
    seen: Arc<Mutex<Seen>>,
    qemu: Option<JoinHandle<()>>,
}

impl Rig {
    /// Fake memory with `holes` (page numbers) untranslatable.
    fn new(holes: &[u64]) -> Self {
        let stats = Arc::new(Stats::default());
        let shared = Arc::new(Shared::new(stats.clone()).expect("shared state"));
        let len = PAGES * PAGE;
        let fd = sys::memfd("guest-test", len).expect("memfd");
        let map = Mapping::new(&fd, len).expect("mapping");
        *shared.tr.regions.write().unwrap() = Arc::new(Regions(vec![Region {
            uaddr: QEMU_BASE,
            size: len,
            map,
            offset: 0,
            handle: 1,
            fd: Arc::new(fd),
        }]));
        let (main_qemu, main_ours) = UnixStream::pair().expect("main socket");
        let (back_qemu, back_ours) = UnixStream::pair().expect("backend channel");
        let front_shared = shared.clone();
        std::thread::spawn(move || {
            let _ = Frontend::new(main_ours, front_shared, 0, false).serve();
        });
        let holes = Arc::new(Mutex::new(
            holes.iter().map(|&i| page(i)).collect::<HashSet<u64>>(),
        ));
        let seen = Arc::new(Mutex::new(Seen::default()));
        let qemu = {
            let (holes, seen) = (holes.clone(), seen.clone());
            std::thread::spawn(move || fake_qemu(back_qemu, main_qemu, holes, seen))
        };
        let ch = MissChannel::new(back_ours).expect("miss channel");
        Self {
            dma: GuestDma::new(shared.tr.clone(), Some(ch), stats, false, 0),
            tr: shared.tr.clone(),
            holes,
            seen,
            qemu: Some(qemu),
        }
    }

    /// The libOS resolved page `i`: the fake SMMU translates it from now on.
    fn resolve(&self, i: u64) {
        self.holes.lock().unwrap().remove(&page(i));
    }

    fn misses(&self) -> Vec<u64> {
        self.seen.lock().unwrap().misses.clone()
    }

    fn bursts(&self) -> Vec<usize> {
        self.seen.lock().unwrap().bursts.clone()
    }

    fn events(&self) -> Vec<u64> {
        self.seen.lock().unwrap().events.clone()
    }

    fn translated(&self, i: u64) -> bool {
        matches!(
            self.tr.iotlb.read().unwrap().lookup(page(i), PERM_WRITE),
            Lookup::Hit { .. }
        )
    }

    /// The bytes of the fake guest memory at IOVA `va`.
    fn bytes(&self, va: u64, n: usize) -> Vec<u8> {
        let regions = self.tr.regions.read().unwrap().clone();
        let mut out = vec![0; n];
        assert!(regions.0[0].map.read_at((va - BASE) as usize, &mut out));
        out
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        // Closing the backend channel ends the fake QEMU.
        self.dma.set_channel(None);
        if let Some(q) = self.qemu.take() {
            // A broken expectation inside the fake QEMU fails the test.
            if let Err(e) = q.join() {
                if !std::thread::panicking() {
                    std::panic::resume_unwind(e);
                }
            }
        }
    }
}

/// Serves MISS messages strictly one after the other, in arrival order.
fn fake_qemu(
    mut back: UnixStream,
    mut main: UnixStream,
    holes: Arc<Mutex<HashSet<u64>>>,
    seen: Arc<Mutex<Seen>>,
) {
    let one = HEADER_SIZE + IOTLB_SIZE;
    let mut pending: Vec<u8> = Vec::new();
    let mut buf = [0u8; 64 << 10];
    loop {
        let n = match back.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        pending.extend_from_slice(&buf[..n]);
        seen.lock().unwrap().bursts.push(pending.len() / one);
        while pending.len() >= one {
            let h = Header::decode(&pending).expect("a header");
            assert_eq!(
                (h.request, h.flags),
                (BACKEND_IOTLB_MSG, 1 | FLAG_NEED_REPLY)
            );
            let m = IotlbMsg::decode(&pending[HEADER_SIZE..one]).expect("a miss");
            assert_eq!(m.kind, IOTLB_MISS);
            pending.drain(..one);
            seen.lock().unwrap().misses.push(m.iova);
            let hole = holes.lock().unwrap().contains(&m.iova);
            if hole {
                seen.lock().unwrap().events.push(m.iova);
            } else {
                let update = IotlbMsg {
                    iova: m.iova,
                    size: PAGE,
                    uaddr: QEMU_BASE + (m.iova - BASE),
                    perm: PERM_READ | PERM_WRITE,
                    kind: IOTLB_UPDATE,
                };
                let out = msg::encode(req::IOTLB_MSG, FLAG_NEED_REPLY, &update.encode());
                main.write_all(&out).expect("UPDATE");
                let mut ack = [0u8; msg::REPLY_U64_SIZE];
                main.read_exact(&mut ack).expect("the frontend's ack");
                assert_eq!(ack, msg::ack(req::IOTLB_MSG, 0));
            }
            let reply = msg::encode(
                BACKEND_IOTLB_MSG,
                FLAG_REPLY,
                &u64::from(hole).to_le_bytes(),
            );
            if back.write_all(&reply).is_err() {
                return;
            }
        }
    }
}

fn pages(from: u64, to: u64) -> Vec<u64> {
    (from..to).map(page).collect()
}

#[test]
fn a_cold_range_costs_one_round_trip_per_window() {
    let mut rig = Rig::new(&[]);
    let data: Vec<u8> = (0..40 * PAGE).map(|i| (i * 7) as u8).collect();
    rig.dma.write(page(0), &data).unwrap();
    assert_eq!(rig.bytes(page(0), data.len()), data);
    assert_eq!(rig.misses(), pages(0, 40), "each page asked once, in order");
    assert_eq!(
        rig.bursts(),
        vec![MISS_WINDOW, 40 - MISS_WINDOW],
        "all misses of a window were on the socket before QEMU answered one"
    );
    assert!(rig.events().is_empty());
    // Warm now: no more misses.
    rig.dma.write(page(0), &data).unwrap();
    assert_eq!(rig.misses().len(), 40);
}

#[test]
fn only_the_page_the_access_stands_at_stops_it() {
    // A hole in the middle: the access copies up to it, then stops there
    // without asking again (the guest has its event already).
    let mut rig = Rig::new(&[5]);
    let data = vec![0xab; 8 * PAGE as usize];
    let f = rig.dma.write(page(0), &data).unwrap_err();
    assert_eq!(
        f,
        Fault {
            va: page(5),
            done: 5 * PAGE,
            kind: FaultKind::Smmu
        }
    );
    assert_eq!(rig.misses(), pages(0, 8), "one window, no second miss");
    assert_eq!(rig.events(), vec![page(5)], "one event for the hole");
    assert_eq!(
        rig.bytes(page(0), 5 * PAGE as usize),
        &data[..5 * PAGE as usize]
    );
    assert!(
        rig.translated(6) && rig.translated(7),
        "the pages after it are ready"
    );
    assert_eq!(rig.bytes(page(6), 4), vec![0; 4], "but not written");

    // The libOS resolves the page and answers; the retry asks only for it.
    rig.resolve(5);
    rig.dma.fault_answered(Some(page(5)));
    rig.dma.write(page(5), &data[5 * PAGE as usize..]).unwrap();
    assert_eq!(rig.misses().last(), Some(&page(5)));
    assert_eq!(rig.misses().len(), 9);
    assert_eq!(rig.bytes(page(0), data.len()), data);
}

#[test]
fn a_fault_at_the_first_page_stops_the_access_at_once_and_the_rest_is_translated() {
    let mut rig = Rig::new(&[0]);
    let f = rig
        .dma
        .read(page(0), &mut [0u8; 4 * PAGE as usize])
        .unwrap_err();
    assert_eq!((f.va, f.done, f.kind), (page(0), 0, FaultKind::Smmu));
    assert_eq!(rig.misses(), pages(0, 4));
    assert!((1..4).all(|i| rig.translated(i)));
    assert_eq!(rig.events(), vec![page(0)]);
}

#[test]
fn a_window_never_crosses_the_end_of_its_access() {
    let mut rig = Rig::new(&[]);
    // From the middle of page 0 to the middle of page 2.
    rig.dma
        .write(page(0) + 0x800, &[1; 2 * PAGE as usize])
        .unwrap();
    assert_eq!(rig.misses(), pages(0, 3));
    // One byte: one page.
    rig.dma.read(page(10), &mut [0u8; 1]).unwrap();
    assert_eq!(rig.misses(), [pages(0, 3), pages(10, 11)].concat());
    // A long access: every window ends at the access's end, not past it.
    rig.dma
        .write(page(100), &vec![2; 70 * PAGE as usize])
        .unwrap();
    assert_eq!(rig.misses().len(), 3 + 1 + 70);
    assert!(rig.misses().iter().all(|&p| p < page(170)));
    assert_eq!(
        rig.bursts()[2..],
        [MISS_WINDOW, MISS_WINDOW, 70 - 2 * MISS_WINDOW]
    );
}

#[test]
fn a_window_skips_pages_already_translated() {
    let mut rig = Rig::new(&[]);
    rig.dma.write(page(2), &[1; 16]).unwrap();
    rig.dma.write(page(0), &[1; 5 * PAGE as usize]).unwrap();
    assert_eq!(
        rig.misses(),
        vec![page(2), page(0), page(1), page(3), page(4)]
    );
}

#[test]
fn a_page_faulted_ahead_is_not_asked_again_until_the_libos_answers() {
    let mut rig = Rig::new(&[2, 6]);
    let data = vec![7u8; 8 * PAGE as usize];
    let f = rig.dma.write(page(0), &data).unwrap_err();
    assert_eq!(f.va, page(2));
    assert_eq!(rig.events(), vec![page(2), page(6)]);

    // The libOS resolves both (page 6 from the event asked ahead) but has
    // only answered for page 2 so far: the retry stops at page 6 without a
    // second event for it.
    rig.resolve(2);
    rig.resolve(6);
    rig.dma.fault_answered(Some(page(2)));
    let f = rig
        .dma
        .write(page(2), &data[2 * PAGE as usize..])
        .unwrap_err();
    assert_eq!((f.va, f.done, f.kind), (page(6), 4 * PAGE, FaultKind::Smmu));
    assert_eq!(rig.misses(), [pages(0, 8), vec![page(2)]].concat());
    assert_eq!(rig.events(), vec![page(2), page(6)], "no second event");

    // Its answer (a RESUME names no page) lets the next access ask again.
    rig.dma.fault_answered(None);
    rig.dma.write(page(6), &data[6 * PAGE as usize..]).unwrap();
    assert_eq!(rig.misses().last(), Some(&page(6)));
    assert_eq!(rig.bytes(page(0), data.len()), data);
}

#[test]
fn a_page_ready_for_a_page_nobody_reached_only_clears_its_note() {
    let mut rig = Rig::new(&[1, 3]);
    let f = rig.dma.write(page(0), &[5; 4 * PAGE as usize]).unwrap_err();
    assert_eq!(f.va, page(1));
    // PAGE_READY for page 3 while the access stands at page 1: nothing to
    // wake, and nothing happens to the access…
    rig.resolve(3);
    rig.dma.fault_answered(Some(page(3)));
    rig.dma.fault_answered(Some(page(200))); // …or for a page never asked
    let f = rig.dma.write(page(1), &[5; 3 * PAGE as usize]).unwrap_err();
    assert_eq!(
        (f.va, f.done),
        (page(1), 0),
        "page 1 still faults: its note was consumed, so it is asked again"
    );
    // …but page 3 is asked again when reached, and now translates.
    rig.resolve(1);
    rig.dma.write(page(1), &[5; 3 * PAGE as usize]).unwrap();
    assert_eq!(rig.misses().iter().filter(|&&p| p == page(3)).count(), 2);
}

#[test]
fn a_broken_reply_is_a_fatal_fault_not_a_panic_or_a_hang() {
    let stats = Arc::new(Stats::default());
    let tr = Arc::new(Translation::default());
    let (mut qemu, ours) = UnixStream::pair().unwrap();
    let mut dma = GuestDma::new(tr, Some(MissChannel::new(ours).unwrap()), stats, false, 0);
    let answer = std::thread::spawn(move || {
        let mut b = [0u8; HEADER_SIZE + IOTLB_SIZE];
        qemu.read_exact(&mut b).unwrap();
        // A reply to another request, then a hang-up.
        let _ = qemu.write_all(&msg::reply_u64(req::SET_MEM_TABLE, 0));
    });
    let f = dma.read(page(0), &mut [0u8; 8]).unwrap_err();
    assert_eq!(f.kind, FaultKind::Fatal);
    answer.join().unwrap();
    // The channel is gone: later misses fail at once.
    assert_eq!(
        dma.read(page(1), &mut [0u8; 8]).unwrap_err().kind,
        FaultKind::Fatal
    );
}
