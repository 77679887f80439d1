//! How the engine touches a node's memory: every access names an IOVA (the
//! application's VA) and either completes or stops at a fault, telling how
//! far it got. The engine's state machines only see this trait, so they run
//! in host tests on [`FlatMemory`]; the device process plugs in the
//! SMMU-translated guest memory (`guest::GuestDma`).
//!
//! The direct data path adds four operations: the initiator *lends* a range
//! of its memory (translated through its own SMMU, guarded by a
//! [`Lease`]) and *releases* it when the answer came; the target *pulls*
//! (WRITE) from or *pushes* (READ) into a peer's lent extents, translating
//! its own side page by page with full fault semantics. Memories that
//! cannot share (the defaults) make the engine use datagrams.

use crate::lease::{self, Lease, Leases};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// Translation granule of the guest (the SMMU uses the CPU's 4 KiB pages).
pub const PAGE: u64 = 4096;

/// The page containing `va`.
pub fn page_of(va: u64) -> u64 {
    va & !(PAGE - 1)
}

/// An access that could not complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    /// Page (page-aligned IOVA) that could not be made accessible.
    pub va: u64,
    /// Bytes of the access completed before it.
    pub done: u64,
    /// Whether the node's SMMU reported it (the libOS will hear of it and
    /// answer with PAGE_READY or RESUME) or the engine itself gave up.
    pub kind: FaultKind,
}

/// Who knows about a [`Fault`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// The SMMU failed to translate (or denied the permission) and recorded
    /// an event the libOS sees: wait for it to resolve the page.
    Smmu,
    /// The engine cannot reach the memory at all (no memory table, QEMU gone):
    /// nobody will resolve it, fail at once.
    Fatal,
}

/// `len` bytes at `offset` of region `region` of the lender's exported
/// memory (what a peer maps).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    /// The lender's handle of an exported region (unique over its life).
    pub region: u32,
    /// Byte offset in the region's file.
    pub offset: u64,
    /// Bytes.
    pub len: u64,
}

/// A range of a node's memory lent to a peer: where its bytes are in the
/// lender's exported memory, and the lease that guards them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lent {
    /// The lease on the lender's board.
    pub lease: Lease,
    /// The bytes, in order.
    pub extents: Vec<Extent>,
}

impl Lent {
    /// Total bytes (None if they overflow: a peer's nonsense).
    pub fn len(&self) -> Option<u64> {
        self.extents
            .iter()
            .try_fold(0u64, |a, e| a.checked_add(e.len))
    }

    /// Whether no byte is lent.
    pub fn is_empty(&self) -> bool {
        self.len() == Some(0)
    }

    /// Calls `f(extent, offset_in_region, offset_in_piece, n)` for each part
    /// of the lent bytes `at..at+n` (offsets relative to the lent range);
    /// false if the extents end before.
    pub fn each_part(&self, at: u64, n: u64, mut f: impl FnMut(&Extent, u64, u64, u64)) -> bool {
        let (mut pos, mut done) = (0u64, 0u64);
        for e in &self.extents {
            if done == n {
                break;
            }
            let e_end = pos.saturating_add(e.len);
            let from = at + done;
            if from < e_end {
                let k = (e_end - from).min(n - done);
                f(e, e.offset + (from - pos), done, k);
                done += k;
            }
            pos = e_end;
        }
        done == n
    }
}

/// Why memory could not be lent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LendError {
    /// A local page faulted (as for any local access).
    Fault(Fault),
    /// Every lease slot is in use: try again a little later.
    Busy,
    /// This memory cannot be lent at all: use datagrams.
    Unavailable,
}

/// Why a pull or push from/into a peer's lent memory stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirectError {
    /// This node's own side faulted after `Fault::done` bytes.
    Fault(Fault),
    /// The lender took its memory back after `done` bytes (invalidation,
    /// new memory table, stale request): it must lend the rest again.
    Revoked {
        /// Bytes copied before.
        done: u64,
    },
    /// The peer's memory cannot be mapped here: use datagrams.
    Unshared,
    /// The extents are nonsense (outside the peer's memory).
    Invalid,
}

/// Memory of one node as the engine's DMA sees it.
pub trait Dma {
    /// Fills `buf` from `va..`.
    fn read(&mut self, va: u64, buf: &mut [u8]) -> Result<(), Fault>;
    /// Stores `data` at `va..`.
    fn write(&mut self, va: u64, data: &[u8]) -> Result<(), Fault>;
    /// Translates the page of `va` for a read (or a `write`) without
    /// touching its bytes: a fault is reported as an access would report
    /// it, so the libOS starts resolving the page before data arrives.
    fn probe(&mut self, va: u64, write: bool) -> Result<(), Fault>;
    /// Copies `len` bytes from `src` to `dst` on this node, in order, so that
    /// `Fault::done` bytes are in place when it stops. Goes through a bounce
    /// buffer: source and destination may overlap and fault independently.
    fn copy(&mut self, src: u64, dst: u64, len: u64) -> Result<(), Fault> {
        let mut buf = vec![0u8; len.min(64 * 1024) as usize];
        let mut done = 0;
        while done < len {
            let n = (len - done).min(buf.len() as u64) as usize;
            let at = done;
            let add = |f: Fault| Fault {
                done: at + f.done,
                ..f
            };
            match self.read(src + at, &mut buf[..n]) {
                Ok(()) => self.write(dst + at, &buf[..n]).map_err(add)?,
                Err(rf) => {
                    // Place what was read before the source page that faulted.
                    self.write(dst + at, &buf[..rf.done as usize])
                        .map_err(add)?;
                    return Err(add(rf));
                }
            }
            done += n as u64;
        }
        Ok(())
    }

    /// Whether this memory can be lent to peers (else: datagrams).
    fn can_lend(&self) -> bool {
        false
    }

    /// Lends `[va, va+len)` (for the peer to write into when `write`):
    /// translates it and takes a lease; a local fault is reported as usual.
    fn lend(&mut self, va: u64, len: u64, write: bool) -> Result<Lent, LendError> {
        let _ = (va, len, write);
        Err(LendError::Unavailable)
    }

    /// Takes a lease back (its request was answered or abandoned).
    fn release(&mut self, lease: Lease) {
        let _ = lease;
    }

    /// Copies `from` (memory lent by node `peer`) to `va..` here, in order.
    fn pull(&mut self, peer: u16, from: &Lent, va: u64) -> Result<(), DirectError> {
        let _ = (peer, from, va);
        Err(DirectError::Unshared)
    }

    /// Copies `va..` here into `to` (memory lent by node `peer`), in order.
    fn push(&mut self, peer: u16, va: u64, to: &Lent) -> Result<(), DirectError> {
        let _ = (peer, va, to);
        Err(DirectError::Unshared)
    }
}

/// What a [`FlatMemory`] of a test cluster sees of another node's.
#[derive(Clone)]
struct Peer {
    bytes: Arc<Mutex<Vec<u8>>>,
    leases: Arc<Leases>,
}

/// A flat, heap-backed memory of `len` bytes at IOVA `base`, where pages can
/// be marked absent or read-only: the stand-in for a node in host tests.
/// Memories made by [`FlatMemory::cluster`] lend to each other like guest
/// memories of one host (region handle 1, offsets from `base`), so the
/// direct data path runs in host tests; evicting or protecting a page
/// revokes the leases over it, as an IOTLB invalidation does.
pub struct FlatMemory {
    base: u64,
    bytes: Arc<Mutex<Vec<u8>>>,
    absent: HashSet<u64>,
    read_only: HashSet<u64>,
    leases: Arc<Leases>,
    peers: Vec<Option<Peer>>,
    lending: bool,
    /// Faults reported so far (so tests can see what the "SMMU" saw).
    pub faults: Vec<u64>,
}

/// Bytes per extent a [`FlatMemory`] lends (several extents per request).
const FLAT_EXTENT: u64 = 16 * PAGE;

/// The exported region handle of a [`FlatMemory`].
const FLAT_REGION: u32 = 1;

impl FlatMemory {
    /// Zeroed memory of `len` bytes at `base`, all pages present and
    /// writable, lending to nobody.
    pub fn new(base: u64, len: usize) -> Self {
        Self {
            base,
            bytes: Arc::new(Mutex::new(vec![0; len])),
            absent: HashSet::new(),
            read_only: HashSet::new(),
            leases: Arc::new(Leases::on_heap(1024)),
            peers: Vec::new(),
            lending: false,
            faults: Vec::new(),
        }
    }

    /// The memories of `n` nodes of one host: each can lend to the others.
    pub fn cluster(n: usize, base: u64, len: usize) -> Vec<Self> {
        let mut all: Vec<Self> = (0..n).map(|_| Self::new(base, len)).collect();
        let peers: Vec<Option<Peer>> = all
            .iter()
            .map(|m| {
                Some(Peer {
                    bytes: m.bytes.clone(),
                    leases: m.leases.clone(),
                })
            })
            .collect();
        for m in &mut all {
            m.peers = peers.clone();
            m.lending = true;
        }
        all
    }

    /// Stops (or resumes) lending: the initiator falls back to datagrams.
    pub fn set_lending(&mut self, on: bool) {
        self.lending = on;
    }

    /// Forgets node `rank`'s memory: its lent extents cannot be mapped.
    pub fn forget_peer(&mut self, rank: usize) {
        if let Some(p) = self.peers.get_mut(rank) {
            *p = None;
        }
    }

    /// Leases of this memory currently out.
    pub fn leases_out(&self) -> usize {
        self.leases.live()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<u8>> {
        self.bytes.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn len(&self) -> u64 {
        self.lock().len() as u64
    }

    /// Makes the page at `va` fault until [`FlatMemory::make_present`]
    /// (and takes back the leases over it, like an IOTLB invalidation).
    pub fn evict(&mut self, va: u64) {
        self.absent.insert(page_of(va));
        self.leases.revoke(page_of(va), PAGE);
    }

    /// Resolves a fault on the page at `va` (the "libOS" did its job).
    pub fn make_present(&mut self, va: u64) {
        self.absent.remove(&page_of(va));
    }

    /// Makes writes to the page at `va` fault.
    pub fn protect(&mut self, va: u64) {
        self.read_only.insert(page_of(va));
        self.leases.revoke(page_of(va), PAGE);
    }

    /// The bytes at `va..va+len` (test helper; panics outside the memory).
    pub fn slice(&self, va: u64, len: usize) -> Vec<u8> {
        let off = (va - self.base) as usize;
        self.lock()[off..off + len].to_vec()
    }

    /// Stores `data` at `va` regardless of faults (test helper; panics
    /// outside the memory).
    pub fn store(&mut self, va: u64, data: &[u8]) {
        let off = (va - self.base) as usize;
        self.lock()[off..off + data.len()].copy_from_slice(data);
    }

    /// Checks one access page by page: the offset in `bytes` or the fault.
    fn check(&mut self, va: u64, len: usize, write: bool) -> Result<usize, Fault> {
        let mut at = va;
        let end = va.checked_add(len as u64);
        let limit = self.base + self.len();
        while end.is_none_or(|e| at < e) {
            let p = page_of(at);
            let bad = at < self.base
                || at >= limit
                || self.absent.contains(&p)
                || (write && self.read_only.contains(&p));
            if bad {
                self.faults.push(p);
                return Err(Fault {
                    va: p,
                    done: at - va,
                    kind: FaultKind::Smmu,
                });
            }
            at = p + PAGE;
        }
        Ok((va - self.base) as usize)
    }

    /// The peer `rank` and whether `lent` lies inside its memory.
    fn peer(&self, rank: u16, lent: &Lent) -> Result<Peer, DirectError> {
        let p = self
            .peers
            .get(rank as usize)
            .cloned()
            .flatten()
            .ok_or(DirectError::Unshared)?;
        let size = p.bytes.lock().unwrap_or_else(|e| e.into_inner()).len() as u64;
        let inside = lent.extents.iter().all(|e| {
            e.region == FLAT_REGION && e.offset.checked_add(e.len).is_some_and(|end| end <= size)
        });
        if !inside || lent.len().is_none() {
            return Err(DirectError::Invalid);
        }
        Ok(p)
    }

    /// Copies between this memory's `va..` and `lent` page by page, one
    /// claim of the lease per page; `into_me`: from the peer to here.
    fn direct(
        &mut self,
        rank: u16,
        lent: &Lent,
        va: u64,
        into_me: bool,
    ) -> Result<(), DirectError> {
        let p = self.peer(rank, lent)?;
        let total = lent.len().ok_or(DirectError::Invalid)?;
        va.checked_add(total).ok_or(DirectError::Invalid)?;
        let mut done = 0u64;
        while done < total {
            let at = va + done;
            let n = (page_of(at) + PAGE - at).min(total - done);
            let off = self
                .check(at, n as usize, into_me)
                .map_err(|f| DirectError::Fault(Fault { done, ..f }))?;
            let board = p.leases.words();
            if !lease::claim(board, lent.lease) {
                return Err(DirectError::Revoked { done });
            }
            let mut buf = vec![0u8; n as usize];
            if into_me {
                let theirs = p.bytes.lock().unwrap_or_else(|e| e.into_inner());
                lent.each_part(done, n, |_, roff, poff, k| {
                    buf[poff as usize..(poff + k) as usize]
                        .copy_from_slice(&theirs[roff as usize..(roff + k) as usize]);
                });
                drop(theirs);
                self.lock()[off..off + n as usize].copy_from_slice(&buf);
            } else {
                buf.copy_from_slice(&self.lock()[off..off + n as usize]);
                let mut theirs = p.bytes.lock().unwrap_or_else(|e| e.into_inner());
                lent.each_part(done, n, |_, roff, poff, k| {
                    theirs[roff as usize..(roff + k) as usize]
                        .copy_from_slice(&buf[poff as usize..(poff + k) as usize]);
                });
            }
            lease::unclaim(board, lent.lease);
            done += n;
        }
        Ok(())
    }
}

impl Dma for FlatMemory {
    fn read(&mut self, va: u64, buf: &mut [u8]) -> Result<(), Fault> {
        match self.check(va, buf.len(), false) {
            Ok(off) => {
                buf.copy_from_slice(&self.lock()[off..off + buf.len()]);
                Ok(())
            }
            Err(f) => {
                let n = f.done as usize;
                let off = (va - self.base) as usize;
                if n > 0 {
                    buf[..n].copy_from_slice(&self.lock()[off..off + n]);
                }
                Err(f)
            }
        }
    }

    fn write(&mut self, va: u64, data: &[u8]) -> Result<(), Fault> {
        match self.check(va, data.len(), true) {
            Ok(off) => {
                self.lock()[off..off + data.len()].copy_from_slice(data);
                Ok(())
            }
            Err(f) => {
                let n = f.done as usize;
                let off = (va - self.base) as usize;
                if n > 0 {
                    self.lock()[off..off + n].copy_from_slice(&data[..n]);
                }
                Err(f)
            }
        }
    }

    fn probe(&mut self, va: u64, write: bool) -> Result<(), Fault> {
        self.check(va, 1, write).map(|_| ())
    }

    fn can_lend(&self) -> bool {
        self.lending
    }

    fn lend(&mut self, va: u64, len: u64, write: bool) -> Result<Lent, LendError> {
        if !self.lending {
            return Err(LendError::Unavailable);
        }
        let lease = self.leases.lend(va, len).ok_or(LendError::Busy)?;
        if let Err(f) = self.check(va, len as usize, write) {
            self.leases.release(lease);
            return Err(LendError::Fault(f));
        }
        let mut extents = Vec::new();
        let mut at = 0;
        while at < len {
            let k = (FLAT_EXTENT - (va + at) % FLAT_EXTENT).min(len - at);
            extents.push(Extent {
                region: FLAT_REGION,
                offset: va + at - self.base,
                len: k,
            });
            at += k;
        }
        Ok(Lent { lease, extents })
    }

    fn release(&mut self, lease: Lease) {
        self.leases.release(lease);
    }

    fn pull(&mut self, peer: u16, from: &Lent, va: u64) -> Result<(), DirectError> {
        self.direct(peer, from, va, true)
    }

    fn push(&mut self, peer: u16, va: u64, to: &Lent) -> Result<(), DirectError> {
        self.direct(peer, to, va, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_access_stops_at_the_first_absent_page_and_says_how_far_it_got() {
        let mut m = FlatMemory::new(0x10000, 4 * PAGE as usize);
        m.store(0x10000, b"abcdefgh");
        m.evict(0x12000);
        let mut buf = [0u8; 0x2000];
        let f = m.read(0x11000 - 4, &mut buf).unwrap_err();
        assert_eq!(
            f,
            Fault {
                va: 0x12000,
                done: 0x1004,
                kind: FaultKind::Smmu
            }
        );
        m.make_present(0x12000);
        assert!(m.read(0x11000 - 4, &mut buf).is_ok());
    }

    #[test]
    fn writes_to_read_only_pages_fault_and_reads_do_not() {
        let mut m = FlatMemory::new(0, 2 * PAGE as usize);
        m.protect(PAGE);
        assert!(m.read(PAGE, &mut [0; 8]).is_ok());
        assert_eq!(m.write(PAGE - 2, &[1; 4]).unwrap_err().done, 2);
        assert_eq!(m.slice(PAGE - 2, 2), &[1, 1]);
    }

    #[test]
    fn a_copy_reports_the_bytes_in_place_when_the_destination_faults() {
        let mut m = FlatMemory::new(0, 8 * PAGE as usize);
        m.store(0, &[7; 3 * PAGE as usize]);
        m.evict(5 * PAGE);
        let f = m.copy(0, 4 * PAGE, 2 * PAGE).unwrap_err();
        assert_eq!((f.va, f.done), (5 * PAGE, PAGE));
        assert!(m.slice(4 * PAGE, PAGE as usize).iter().all(|&b| b == 7));
        let f = m.read(9 * PAGE, &mut [0]).unwrap_err();
        assert_eq!(f.va, 9 * PAGE, "outside the memory is a fault too");
    }

    #[test]
    fn lent_memory_is_copied_by_the_peer_until_the_lender_takes_it_back() {
        let mut c = FlatMemory::cluster(2, 0, 64 * PAGE as usize);
        c[0].store(0, &[9; 40 * PAGE as usize]);
        let lent = c[0].lend(0, 40 * PAGE, false).unwrap();
        assert_eq!(lent.extents.len(), 3, "split every 16 pages");
        assert_eq!(lent.len(), Some(40 * PAGE));
        c[1].pull(0, &lent, 8 * PAGE).unwrap();
        assert!(c[1]
            .slice(8 * PAGE, 40 * PAGE as usize)
            .iter()
            .all(|&b| b == 9));
        // The lender's page 5 is evicted: the lease is gone.
        c[0].evict(5 * PAGE);
        assert_eq!(c[0].leases_out(), 0);
        assert_eq!(
            c[1].pull(0, &lent, 8 * PAGE),
            Err(DirectError::Revoked { done: 0 })
        );
        // The borrower's own fault stops the copy where it happened.
        let lent = c[0].lend(16 * PAGE, 4 * PAGE, false).unwrap();
        c[1].evict(2 * PAGE);
        let e = c[1].pull(0, &lent, PAGE + 100).unwrap_err();
        assert_eq!(
            e,
            DirectError::Fault(Fault {
                va: 2 * PAGE,
                done: PAGE - 100,
                kind: FaultKind::Smmu
            })
        );
        c[0].release(lent.lease);
        assert_eq!(
            c[1].push(0, 0, &lent),
            Err(DirectError::Revoked { done: 0 })
        );
    }

    #[test]
    fn lending_a_faulting_page_is_a_local_fault_and_nonsense_extents_are_refused() {
        let mut c = FlatMemory::cluster(2, 0, 8 * PAGE as usize);
        c[0].evict(3 * PAGE);
        let e = c[0].lend(0, 8 * PAGE, false).unwrap_err();
        assert!(matches!(e, LendError::Fault(f) if f.va == 3 * PAGE));
        assert_eq!(c[0].leases_out(), 0);
        let mut lent = c[0].lend(0, PAGE, true).unwrap();
        lent.extents[0].offset = 1 << 40;
        assert_eq!(c[1].pull(0, &lent, 0), Err(DirectError::Invalid));
        c[1].forget_peer(0);
        assert_eq!(c[1].pull(0, &lent, 0), Err(DirectError::Unshared));
        let mut alone = FlatMemory::new(0, PAGE as usize);
        assert_eq!(alone.lend(0, 8, false), Err(LendError::Unavailable));
    }
}
