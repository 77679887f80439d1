//! How the engine touches a node's memory: every access names an IOVA (the
//! application's VA) and either completes or stops at a fault, telling how
//! far it got. The engine's state machines only see this trait, so they run
//! in host tests on [`FlatMemory`]; the device process plugs in the
//! SMMU-translated guest memory (`guest::GuestDma`).

use std::collections::HashSet;

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
}

/// A flat, heap-backed memory of `len` bytes at IOVA `base`, where pages can
/// be marked absent or read-only: the stand-in for a node in host tests.
pub struct FlatMemory {
    base: u64,
    bytes: Vec<u8>,
    absent: HashSet<u64>,
    read_only: HashSet<u64>,
    /// Faults reported so far (so tests can see what the "SMMU" saw).
    pub faults: Vec<u64>,
}

impl FlatMemory {
    /// Zeroed memory of `len` bytes at `base`, all pages present and
    /// writable.
    pub fn new(base: u64, len: usize) -> Self {
        Self {
            base,
            bytes: vec![0; len],
            absent: HashSet::new(),
            read_only: HashSet::new(),
            faults: Vec::new(),
        }
    }

    /// Makes the page at `va` fault until [`FlatMemory::make_present`].
    pub fn evict(&mut self, va: u64) {
        self.absent.insert(page_of(va));
    }

    /// Resolves a fault on the page at `va` (the "libOS" did its job).
    pub fn make_present(&mut self, va: u64) {
        self.absent.remove(&page_of(va));
    }

    /// Makes writes to the page at `va` fault.
    pub fn protect(&mut self, va: u64) {
        self.read_only.insert(page_of(va));
    }

    /// The bytes at `va..va+len` (test helper; panics outside the memory).
    pub fn slice(&self, va: u64, len: usize) -> Vec<u8> {
        let off = (va - self.base) as usize;
        self.bytes[off..off + len].to_vec()
    }

    /// Stores `data` at `va` regardless of faults (test helper; panics
    /// outside the memory).
    pub fn store(&mut self, va: u64, data: &[u8]) {
        let off = (va - self.base) as usize;
        self.bytes[off..off + data.len()].copy_from_slice(data);
    }

    /// Checks one access page by page: the offset in `bytes` or the fault.
    fn check(&mut self, va: u64, len: usize, write: bool) -> Result<usize, Fault> {
        if len == 0 {
            return Ok(0);
        }
        let mut at = va;
        let end = va.checked_add(len as u64);
        let limit = self.base + self.bytes.len() as u64;
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
}

impl Dma for FlatMemory {
    fn read(&mut self, va: u64, buf: &mut [u8]) -> Result<(), Fault> {
        match self.check(va, buf.len(), false) {
            Ok(off) => {
                buf.copy_from_slice(&self.bytes[off..off + buf.len()]);
                Ok(())
            }
            Err(f) => {
                let n = f.done as usize;
                let off = (va - self.base) as usize;
                if n > 0 {
                    buf[..n].copy_from_slice(&self.bytes[off..off + n]);
                }
                Err(f)
            }
        }
    }

    fn write(&mut self, va: u64, data: &[u8]) -> Result<(), Fault> {
        match self.check(va, data.len(), true) {
            Ok(off) => {
                self.bytes[off..off + data.len()].copy_from_slice(data);
                Ok(())
            }
            Err(f) => {
                let n = f.done as usize;
                let off = (va - self.base) as usize;
                if n > 0 {
                    self.bytes[off..off + n].copy_from_slice(&data[..n]);
                }
                Err(f)
            }
        }
    }

    fn probe(&mut self, va: u64, write: bool) -> Result<(), Fault> {
        self.check(va, 1, write).map(|_| ())
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
}
