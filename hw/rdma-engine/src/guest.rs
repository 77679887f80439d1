//! The node's memory as the engine reaches it through the SMMU: QEMU's guest
//! RAM mapped from the memory table, the IOTLB in front of it, and IOTLB
//! misses sent to QEMU on the backend channel.
//!
//! ```text
//!  access(iova) ── IOTLB hit ──▶ uaddr ── memory table ──▶ our mapping ──▶ copy
//!        │
//!        └─ miss/denied ─▶ backend channel: IOTLB_MSG MISS(iova, perm), NEED_REPLY
//!                          QEMU walks the guest SMMU ─┬─ ok: UPDATE on the main socket
//!                                                     │      (frontend thread inserts,
//!                                                     │      acks), then reply 0 → retry
//!                                                     └─ fault: event in the guest's
//!                                                            SMMU event queue, reply ≠ 0
//!                                                            → Fault{kind: Smmu}
//! ```
//!
//! The frontend thread owns the main socket; this side only reads the
//! shared [`Translation`] and talks on the backend channel, so QEMU's
//! UPDATE (which it sends before answering a miss) is never stuck behind us.

use crate::dma::{page_of, Dma, Fault, FaultKind};
use crate::iotlb::{Iotlb, Lookup, Perm, PERM_READ, PERM_WRITE};
use crate::stats::Stats;
use crate::sys::Mapping;
use crate::vhost_msg::{
    self, IotlbMsg, BACKEND_IOTLB_MSG, FLAG_NEED_REPLY, HEADER_SIZE, IOTLB_MISS,
};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// One region of guest RAM in our address space.
pub struct Region {
    /// QEMU's address of the region's first byte.
    pub uaddr: u64,
    /// Bytes.
    pub size: u64,
    /// Our mapping of the region's fd (from offset 0).
    pub map: Mapping,
    /// Offset of the region inside `map`.
    pub offset: u64,
}

/// The memory table: QEMU address → our mapping.
#[derive(Default)]
pub struct Regions(pub Vec<Region>);

impl Regions {
    /// The region holding QEMU's address `uaddr`, the offset of `uaddr` in
    /// its mapping and how many bytes from it lie in the region.
    fn host(&self, uaddr: u64) -> Option<(&Region, u64, u64)> {
        let r = self
            .0
            .iter()
            .find(|r| uaddr >= r.uaddr && uaddr - r.uaddr < r.size)?;
        Some((r, r.offset + (uaddr - r.uaddr), r.size - (uaddr - r.uaddr)))
    }
}

/// Most bytes of one piece of an access (one translation looked up).
pub const MAX_PIECE: u64 = 256 << 10;

/// Why a walk over guest memory stopped.
enum Stop {
    Fault(Fault),
    /// The piece function refused after `done` bytes.
    Refused(u64),
}

/// What the frontend thread and the engine share about translation.
#[derive(Default)]
pub struct Translation {
    /// IOVA → QEMU address.
    pub iotlb: RwLock<Iotlb>,
    /// QEMU address → ours.
    pub regions: RwLock<Arc<Regions>>,
    /// Misses waiting for QEMU's answer (page, wanted access): what the
    /// UPDATE answering one is trusted with (see [`crate::iotlb::granted`]).
    pub asked: Mutex<Vec<(u64, Perm)>>,
}

/// The engine's side of the backend channel: asks QEMU to translate.
pub struct MissChannel {
    sock: UnixStream,
}

/// How long we wait for QEMU to answer a miss before calling it broken.
const MISS_TIMEOUT: Duration = Duration::from_secs(5);

impl MissChannel {
    /// Wraps the socket QEMU gave with SET_BACKEND_REQ_FD.
    pub fn new(sock: UnixStream) -> std::io::Result<Self> {
        sock.set_read_timeout(Some(MISS_TIMEOUT))?;
        Ok(Self { sock })
    }

    /// Sends IOTLB MISS for the page of `iova` and waits for QEMU's verdict:
    /// Ok(true) translated (the UPDATE is already in the IOTLB), Ok(false)
    /// the guest SMMU faulted.
    pub fn miss(&mut self, iova: u64, perm: Perm) -> std::io::Result<bool> {
        let m = IotlbMsg {
            iova,
            perm,
            kind: IOTLB_MISS,
            ..IotlbMsg::default()
        };
        self.sock.write_all(&vhost_msg::encode(
            BACKEND_IOTLB_MSG,
            FLAG_NEED_REPLY,
            &m.encode(),
        ))?;
        let mut hdr = [0u8; HEADER_SIZE];
        self.sock.read_exact(&mut hdr)?;
        let h = vhost_msg::Header::decode(&hdr)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()))?;
        let mut p = vec![0u8; h.size as usize];
        self.sock.read_exact(&mut p)?;
        let v = vhost_msg::decode_u64(&p)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()))?;
        Ok(v == 0)
    }
}

/// Guest memory behind the SMMU, as a [`Dma`] for the engine.
pub struct GuestDma {
    tr: Arc<Translation>,
    misses: Option<MissChannel>,
    stats: Arc<Stats>,
    verbose: bool,
    rank: u16,
}

/// Misses in a row for one page (QEMU said yes, the entry vanished again).
const MISS_LOOPS: u32 = 8;

impl GuestDma {
    /// Memory seen through `tr`, resolving misses on `misses` (None until
    /// QEMU gives us the backend channel: then every miss is fatal).
    pub fn new(
        tr: Arc<Translation>,
        misses: Option<MissChannel>,
        stats: Arc<Stats>,
        verbose: bool,
        rank: u16,
    ) -> Self {
        Self {
            tr,
            misses,
            stats,
            verbose,
            rank,
        }
    }

    /// Replaces the backend channel (a new SET_BACKEND_REQ_FD).
    pub fn set_channel(&mut self, misses: Option<MissChannel>) {
        self.misses = misses;
    }

    /// Runs `f(region, offset_in_its_mapping, iova_offset, n)` over
    /// `[iova, iova+len)` piece by piece (adjacent translations that are
    /// contiguous in one region form one piece of at most [`MAX_PIECE`]),
    /// resolving misses; stops at the first page that cannot be made
    /// accessible with `want`, or when `f` returns false.
    fn access(
        &mut self,
        iova: u64,
        len: u64,
        want: Perm,
        mut f: impl FnMut(&Region, usize, usize, usize) -> bool,
    ) -> Result<(), Stop> {
        let mut done = 0u64;
        let mut loops = 0;
        while done < len {
            let at = iova.wrapping_add(done);
            let step = {
                let tlb = self.tr.iotlb.read().unwrap_or_else(|p| p.into_inner());
                let limit = (len - done).min(MAX_PIECE);
                match tlb.lookup_contiguous(at, want, limit) {
                    Lookup::Hit { uaddr, run } => {
                        let regions = self
                            .tr
                            .regions
                            .read()
                            .unwrap_or_else(|p| p.into_inner())
                            .clone();
                        match regions.host(uaddr) {
                            Some((region, off, in_region)) => {
                                let n = run.min(in_region).min(limit);
                                // The copy happens under the IOTLB read lock: an
                                // invalidation waits for accesses in flight.
                                if !f(region, off as usize, done as usize, n as usize) {
                                    return Err(Stop::Refused(done));
                                }
                                Some(n)
                            }
                            None => {
                                return Err(Stop::Fault(Fault {
                                    va: page_of(at),
                                    done,
                                    kind: FaultKind::Fatal,
                                }))
                            }
                        }
                    }
                    Lookup::Miss | Lookup::Denied => None,
                }
            };
            match step {
                Some(n) => {
                    done += n;
                    loops = 0;
                }
                None => {
                    loops += 1;
                    let fault = |kind| Fault {
                        va: page_of(at),
                        done,
                        kind,
                    };
                    if loops > MISS_LOOPS {
                        return Err(Stop::Fault(fault(FaultKind::Fatal)));
                    }
                    match self.resolve(page_of(at), want) {
                        Ok(true) => {}
                        Ok(false) => return Err(Stop::Fault(fault(FaultKind::Smmu))),
                        Err(f) => return Err(Stop::Fault(Fault { done, ..f })),
                    }
                }
            }
        }
        Ok(())
    }

    /// Plain accesses never refuse a piece.
    fn plain(r: Result<(), Stop>) -> Result<(), Fault> {
        match r {
            Ok(()) => Ok(()),
            Err(Stop::Fault(f)) => Err(f),
            Err(Stop::Refused(done)) => Err(Fault {
                va: 0,
                done,
                kind: FaultKind::Fatal,
            }),
        }
    }

    /// One miss round trip; Err only when the channel is unusable.
    fn resolve(&mut self, page: u64, want: Perm) -> Result<bool, Fault> {
        let fatal = Fault {
            va: page,
            done: 0,
            kind: FaultKind::Fatal,
        };
        let Some(ch) = self.misses.as_mut() else {
            return Err(fatal);
        };
        self.stats.misses.fetch_add(1, Ordering::Relaxed);
        let t0 = Instant::now();
        let asked = || self.tr.asked.lock().unwrap_or_else(|p| p.into_inner());
        asked().push((page, want));
        let answer = ch.miss(page, want);
        {
            let mut asked = asked();
            if let Some(i) = asked.iter().position(|&x| x == (page, want)) {
                asked.swap_remove(i);
            }
        }
        match answer {
            Ok(ok) => {
                let us = t0.elapsed().as_micros() as u64;
                self.stats.miss_us.fetch_add(us, Ordering::Relaxed);
                if !ok {
                    self.stats.faults.fetch_add(1, Ordering::Relaxed);
                }
                if self.verbose || !ok {
                    let what = if ok {
                        "translated"
                    } else {
                        "FAULT (QEMU: SMMU could not translate; guest event recorded)"
                    };
                    log(
                        self.rank,
                        self.verbose || !ok,
                        &format!("IOTLB miss iova={page:#x} perm={want} -> {what} in {us} us"),
                    );
                }
                Ok(ok)
            }
            Err(e) => {
                eprintln!(
                    "rdma-engine {}: IOTLB miss on the backend channel failed: {e}",
                    self.rank
                );
                self.misses = None;
                Err(fatal)
            }
        }
    }
}

/// Prints a log line when `on`.
pub fn log(rank: u16, on: bool, msg: &str) {
    if on {
        eprintln!("rdma-engine {rank}: {msg}");
    }
}

impl Dma for GuestDma {
    fn read(&mut self, va: u64, buf: &mut [u8]) -> Result<(), Fault> {
        let r = self.access(va, buf.len() as u64, PERM_READ, |region, off, at, n| {
            region.map.read_at(off, &mut buf[at..at + n])
        });
        Self::plain(r)
    }

    fn write(&mut self, va: u64, data: &[u8]) -> Result<(), Fault> {
        let r = self.access(va, data.len() as u64, PERM_WRITE, |region, off, at, n| {
            region.map.write_at(off, &data[at..at + n])
        });
        Self::plain(r)
    }

    fn probe(&mut self, va: u64, write: bool) -> Result<(), Fault> {
        let want = if write { PERM_WRITE } else { PERM_READ };
        Self::plain(self.access(va, 1, want, |_, _, _, _| true))
    }
}
