//! RDMA on memory the verbs own while the engine or a peer may touch it, so
//! that apps need no `unsafe` (Tock's way: a driver takes the buffer and
//! gives it back).
//!
//! ```text
//!  let exposed = rdma.expose_region(region, Access::REMOTE_WRITE)?;  // the region moves in
//!  peers get exposed.remote();  exposed.byte(i) / exposed.snapshot(..)  // looks, volatile
//!  let region = exposed.revoke();                                    // key gone, region back
//!
//!  let source = Arc::new(region);                                    // shared, read-only
//!  let w = qp.write_owned(source.clone(), 0..len, remote, policy)?;  // several may be in flight
//!  let (source, wc) = w.wait()?;                                     // the buffer comes back
//!  let r = qp.read_owned(dest, 0..len, remote, policy)?;             // dest moves in
//!  let (dest, wc) = r.wait()?;                                       // filled
//!
//!  let arena = rdma.register(region)?;   // granted once, for its life (a registration)
//!  let w = qp.write_owned(arena, off..off + len, remote, policy)?;  // no grant per transfer
//! ```
//!
//! While the engine may write a buffer, nothing else holds a reference to
//! its bytes; a pending transfer that is dropped waits for its completion
//! before it lets the buffer go (or for the engine to be cut off).

extern crate alloc;

use super::verbs::{Access, Exposure, QueuePair, Rdma, RdmaError, RemoteAddr, RemoteRegion};
use super::{WorkCompletion, WorkId};
use crate::dma::{Grant, Policy, Rights};
use crate::mm::{MmError, Region};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::ops::Range;
use core::sync::atomic::AtomicU64;

/// A region exposed to peers, owned until [`ExposedRegion::revoke`] gives
/// it back.
pub struct ExposedRegion {
    // Declared first: dropped (the key revoked) before the memory goes.
    exposure: Exposure,
    region: Region,
}

impl Rdma {
    /// Exposes all of `region` to peers with `access`, taking it until it
    /// is given back by [`ExposedRegion::revoke`]; on failure the region
    /// comes back with the error.
    pub fn expose_region(
        &self,
        region: Region,
        access: Access,
    ) -> Result<ExposedRegion, (RdmaError, Region)> {
        // SAFETY: the region is owned by the returned ExposedRegion, which
        // drops the exposure (revoking the key) before the region, and
        // hands out no reference to its bytes while they are exposed (only
        // volatile copies).
        match unsafe { self.expose(region.range(), access) } {
            Ok(exposure) => Ok(ExposedRegion { exposure, region }),
            Err(e) => Err((e, region)),
        }
    }
}

impl ExposedRegion {
    /// What peers need to reach it.
    pub fn remote(&self) -> RemoteRegion {
        self.exposure.remote()
    }

    /// Where it starts in this node's address space.
    pub fn start(&self) -> usize {
        self.region.start()
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.region.len()
    }

    /// Whether it is empty (never: regions have at least a page).
    pub fn is_empty(&self) -> bool {
        self.region.len() == 0
    }

    /// Pages backed by frames now (none of a region nothing touched).
    pub fn resident_pages(&self) -> usize {
        self.region.resident_pages()
    }

    /// The byte at `offset` as it is now (a peer may change it at any
    /// moment: a ping-pong watches its buffer this way).
    pub fn byte(&self, offset: usize) -> Option<u8> {
        let p = self.region.range().start.checked_add(offset)?;
        if offset >= self.region.len() {
            return None;
        }
        // SAFETY: `p` is inside the region, which is mapped (or maps on
        // this first touch) for as long as `self` lives; a peer may write
        // it through the engine, so it is read volatile, one byte at a
        // time (no torn value), and no reference to it is formed.
        Some(unsafe { core::ptr::read_volatile(p as *const u8) })
    }

    /// A copy of `range` as it is now, byte by byte (see
    /// [`ExposedRegion::byte`]); `None` outside the region.
    pub fn snapshot(&self, range: Range<usize>) -> Option<Vec<u8>> {
        if range.end > self.region.len() || range.start > range.end {
            return None;
        }
        range.map(|i| self.byte(i)).collect()
    }

    /// Maps the pages touching `offsets` now ([`Region::populate`]): peers
    /// then reach them without a fault. No byte is read or written here.
    pub fn populate(&mut self, offsets: Range<usize>) -> Result<(), MmError> {
        self.region.populate(offsets)
    }

    /// Pins the pages touching `offsets` ([`Region::pin`]), as an RDMA
    /// registration does.
    pub fn pin(&mut self, offsets: Range<usize>) -> Result<(), MmError> {
        self.region.pin(offsets)
    }

    /// Releases one pin of the pages touching `offsets` ([`Region::unpin`]).
    pub fn unpin(&mut self, offsets: Range<usize>) -> Result<(), MmError> {
        self.region.unpin(offsets)
    }

    /// Evicts the pages touching `offsets` ([`Region::evict`]); a peer's
    /// next access brings them back. Pages evicted.
    pub fn evict(&mut self, offsets: Range<usize>) -> Result<usize, MmError> {
        self.region.evict(offsets)
    }

    /// Frees the pages touching `offsets` ([`Region::discard`]); they read
    /// as zeros again. Pages freed.
    pub fn discard(&mut self, offsets: Range<usize>) -> Result<usize, MmError> {
        self.region.discard(offsets)
    }

    /// Revokes the key (no peer request passes with it from now on, and
    /// none is still placing bytes) and gives the region back.
    pub fn revoke(self) -> Region {
        let ExposedRegion { exposure, region } = self;
        drop(exposure);
        region
    }
}

mod sealed {
    /// Only libos's buffer kinds are transfer buffers: what the engine may
    /// touch while a transfer holds one is decided here.
    pub trait Sealed {}
    impl Sealed for crate::mm::Region {}
    impl Sealed for super::Arc<crate::mm::Region> {}
    impl Sealed for super::Registered {}
    impl Sealed for super::Ungranted {}
}

/// Memory a WRITE may read from while it is in flight: it cannot move or
/// be written meanwhile (a region owned by the transfer, or shared
/// read-only).
pub trait WriteSource: sealed::Sealed {
    /// The region.
    fn region(&self) -> &Region;
    /// Whether the transfer grants the engine the region for its time
    /// (not a [`Registered`] region, granted already, nor an
    /// [`Ungranted`] one, never granted on purpose).
    fn grant_with_transfer(&self) -> bool {
        true
    }
}

impl WriteSource for Region {
    fn region(&self) -> &Region {
        self
    }
}

impl WriteSource for Arc<Region> {
    fn region(&self) -> &Region {
        self
    }
}

impl WriteSource for Registered {
    fn region(&self) -> &Region {
        &self.region
    }
    fn grant_with_transfer(&self) -> bool {
        false
    }
}

impl WriteSource for Ungranted {
    fn region(&self) -> &Region {
        &self.0
    }
    fn grant_with_transfer(&self) -> bool {
        false
    }
}

/// Memory a READ may fill while it is in flight: a region owned by the
/// transfer alone, which nothing else reads or writes meanwhile.
pub trait ReadDest: sealed::Sealed {
    /// The region.
    fn region(&self) -> &Region;
    /// As [`WriteSource::grant_with_transfer`].
    fn grant_with_transfer(&self) -> bool {
        true
    }
}

impl ReadDest for Region {
    fn region(&self) -> &Region {
        self
    }
}

impl ReadDest for Registered {
    fn region(&self) -> &Region {
        &self.region
    }
    fn grant_with_transfer(&self) -> bool {
        false
    }
}

impl ReadDest for Ungranted {
    fn region(&self) -> &Region {
        &self.0
    }
    fn grant_with_transfer(&self) -> bool {
        false
    }
}

/// A region a transfer holds without granting it to the engine: a
/// confined engine's access to it is an isolation fault, and the transfer
/// ends with `LocalAccessError` (what the isolation tests check).
pub struct Ungranted(pub Region);

/// A region the engine may move for as long as this lives (granted
/// read-write once, as an RDMA memory registration is): the owning
/// transfers on it grant nothing of their own, so that each one costs no
/// more than the raw verbs'.
pub struct Registered {
    // Declared first: dropped (the engine cut off) before the memory goes.
    grant: Grant,
    region: Region,
}

impl Rdma {
    /// Grants the engine all of `region`, read-write, until the returned
    /// [`Registered`] is given back by [`Registered::into_region`] or
    /// dropped; on failure the region comes back with the error.
    pub fn register(&self, region: Region) -> Result<Registered, (RdmaError, Region)> {
        match self.grant(region.range(), Rights::ReadWrite) {
            Ok(grant) => Ok(Registered { grant, region }),
            Err(e) => Err((e, region)),
        }
    }
}

impl Registered {
    /// The region (its bytes, its pages).
    pub fn region(&self) -> &Region {
        &self.region
    }

    /// The region, to write or to manage its pages. Putting another region
    /// in its place leaves that one ungranted: transfers on it then fail
    /// as isolation faults.
    pub fn region_mut(&mut self) -> &mut Region {
        &mut self.region
    }

    /// Ends the grant and gives the region back.
    pub fn into_region(self) -> Region {
        let Registered { grant, region } = self;
        drop(grant);
        region
    }
}

/// A WRITE or READ in flight on a buffer it owns; [`Pending::wait`] gives
/// the buffer back with the completion.
pub struct Pending<B> {
    rdma: Rdma,
    id: Option<WorkId>,
    // Dropped after the wait (see Drop): the engine's grant, then the buffer.
    grant: Option<Grant>,
    buffer: Option<B>,
}

impl<B> Pending<B> {
    /// Waits for the end of the transfer; the buffer comes back with its
    /// completion. If the engine stopped answering it has been cut off from
    /// memory ([`Rdma::wait`]) and the buffer comes back with the error.
    pub fn wait(mut self) -> Result<(B, WorkCompletion), (RdmaError, B)> {
        let id = self.id.take().expect("a pending transfer has its id");
        let result = self.rdma.wait(id);
        self.grant = None;
        let buffer = self
            .buffer
            .take()
            .expect("a pending transfer has its buffer");
        match result {
            Ok(wc) => Ok((buffer, wc)),
            Err(e) => Err((e, buffer)),
        }
    }
}

impl<B> Drop for Pending<B> {
    fn drop(&mut self) {
        // Not waited for: the buffer may not go while the engine can
        // still reach it.
        if let Some(id) = self.id.take() {
            let _ = self.rdma.wait(id);
        }
    }
}

/// Checks that `range` lies inside `region`; the addresses it covers.
fn inside(region: &Region, range: &Range<usize>) -> Option<Range<usize>> {
    if range.start > range.end || range.end > region.len() {
        return None;
    }
    let start = region.start() + range.start;
    Some(start..start + range.len())
}

impl QueuePair {
    /// RDMA WRITE of `source[range]` to `remote`, the source held until
    /// [`Pending::wait`] gives it back.
    pub fn write_owned<S: WriteSource>(
        &self,
        source: S,
        range: Range<usize>,
        remote: RemoteAddr,
        policy: Policy,
    ) -> Result<Pending<S>, (RdmaError, S)> {
        self.post_write_owned(source, range, remote, None, policy)
    }

    /// As [`QueuePair::write_owned`], then `imm` is delivered to a RECV
    /// posted on the remote node once the data is placed
    /// ([`QueuePair::write_with_imm`]).
    pub fn write_with_imm_owned<S: WriteSource>(
        &self,
        source: S,
        range: Range<usize>,
        remote: RemoteAddr,
        imm: u32,
        policy: Policy,
    ) -> Result<Pending<S>, (RdmaError, S)> {
        self.post_write_owned(source, range, remote, Some(imm), policy)
    }

    fn post_write_owned<S: WriteSource>(
        &self,
        source: S,
        range: Range<usize>,
        remote: RemoteAddr,
        imm: Option<u32>,
        policy: Policy,
    ) -> Result<Pending<S>, (RdmaError, S)> {
        let rdma = self.rdma();
        let Some(local) = inside(source.region(), &range) else {
            return Err((RdmaError::BadLength(range.end), source));
        };
        let grant = if !source.grant_with_transfer() {
            None
        } else {
            match rdma.grant(source.region().range(), Rights::Read) {
                Ok(g) => Some(g),
                Err(e) => return Err((e, source)),
            }
        };
        let posted = match imm {
            // SAFETY: the source region is owned by (or shared read-only
            // with) the Pending, which keeps it, unwritten, until the
            // completion is taken or the engine is cut off (wait, or Drop).
            Some(imm) => unsafe { self.write_with_imm(local, remote, imm, policy) },
            // SAFETY: as above.
            None => unsafe { self.write(local, remote, policy) },
        };
        match posted {
            Ok(id) => Ok(Pending {
                rdma,
                id: Some(id),
                grant,
                buffer: Some(source),
            }),
            Err(e) => Err((e, source)),
        }
    }

    /// RDMA READ of `remote` into `dest[range]`, the destination held until
    /// [`Pending::wait`] gives it back, filled.
    pub fn read_owned<D: ReadDest>(
        &self,
        dest: D,
        range: Range<usize>,
        remote: RemoteAddr,
        policy: Policy,
    ) -> Result<Pending<D>, (RdmaError, D)> {
        let rdma = self.rdma();
        let Some(local) = inside(dest.region(), &range) else {
            return Err((RdmaError::BadLength(range.end), dest));
        };
        let grant = if !dest.grant_with_transfer() {
            None
        } else {
            match rdma.grant(dest.region().range(), Rights::ReadWrite) {
                Ok(g) => Some(g),
                Err(e) => return Err((e, dest)),
            }
        };
        // SAFETY: `dest` is owned by the Pending, which holds it, with no
        // reference to its bytes anywhere else (a `ReadDest` is a region
        // owned alone), until the completion is
        // taken or the engine is cut off (wait, or Drop).
        match unsafe { self.read(local, remote, policy) } {
            Ok(id) => Ok(Pending {
                rdma,
                id: Some(id),
                grant,
                buffer: Some(dest),
            }),
            Err(e) => Err((e, dest)),
        }
    }
}

impl QueuePair {
    /// RDMA READ of `remote` into `words`, which live for good and which
    /// Rust code only reads and writes atomically: whatever the engine
    /// does there, every value stays valid. The protection tests aim a
    /// confined engine at a static this way, which it was never granted:
    /// the READ must end with `LocalAccessError`, the words unchanged.
    pub fn read_into_static(
        &self,
        words: &'static [AtomicU64],
        remote: RemoteAddr,
        policy: Policy,
    ) -> Result<WorkId, RdmaError> {
        let start = words.as_ptr() as usize;
        let local = start..start + core::mem::size_of_val(words);
        // SAFETY: `words` are never freed, and every bit pattern written
        // there by the engine is a valid AtomicU64, which no Rust code
        // reads but atomically.
        unsafe { self.read(local, remote, policy) }
    }
}

impl Rdma {
    /// Exposes `memory` where nothing is or can ever be (outside every
    /// window regions are handed out from, and mapped nowhere now): peers
    /// that reach it with the key get `RemoteAccessError` (a fault that
    /// cannot be resolved), not a protection error. `BadAddress` if
    /// something may be there.
    pub fn expose_unbacked(
        &self,
        memory: Range<usize>,
        access: Access,
    ) -> Result<Exposure, RdmaError> {
        if !crate::mm::backs_nothing(memory.clone()) {
            return Err(RdmaError::BadAddress(memory.start));
        }
        // SAFETY: no Rust value is or will be at `memory` (checked above),
        // so what peers do there reaches nothing Rust code uses.
        unsafe { self.expose(memory, access) }
    }
}
