//! A split virtqueue (virtio 1.x) read and written through [`Dma`], so every
//! ring access goes through the node's SMMU like the engine's data accesses.
//!
//! ```text
//!  driver                         engine (this module)
//!  desc[i] = {addr,len,flags,next}
//!  avail.ring[idx % n] = head
//!  avail.idx += 1   ──kick──▶     pop(): head → walk desc chain (checked)
//!                                 ... process ...
//!                   ◀─call───     push(head, len): used.ring[..] = {head,len}
//!                                                  used.idx += 1
//! ```
//!
//! Everything read from the ring is guest input: indices out of range,
//! chains that loop, indirect descriptors (not offered) and readable
//! descriptors after writable ones are reported as [`RingError`], never
//! followed and never a panic.

use crate::dma::{Dma, Fault};
use std::sync::atomic::{fence, Ordering};

/// Descriptor flag: the chain goes on at `next`.
pub const DESC_F_NEXT: u16 = 1;
/// Descriptor flag: the device writes this buffer.
pub const DESC_F_WRITE: u16 = 2;
/// Descriptor flag: the buffer is a table of descriptors (not negotiated).
pub const DESC_F_INDIRECT: u16 = 4;
/// Avail flag: the driver does not want interrupts.
const AVAIL_F_NO_INTERRUPT: u16 = 1;
/// Used flag: the device does not want kicks.
const USED_F_NO_NOTIFY: u16 = 1;
/// Largest queue size virtio allows.
pub const MAX_QUEUE_SIZE: u16 = 32768;

/// Why a ring could not be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingError {
    /// The ring or a buffer could not be translated.
    Fault(u64),
    /// The queue size is not a power of two in 1..=32768.
    BadSize(u16),
    /// The driver claims more new buffers than the ring holds.
    TooManyAvail(u16),
    /// A descriptor index past the table.
    BadIndex(u16),
    /// A chain longer than the table: it loops.
    Loop,
    /// An indirect descriptor (the feature is not offered).
    Indirect,
    /// A readable descriptor after a writable one.
    Order,
}

impl From<Fault> for RingError {
    fn from(f: Fault) -> Self {
        RingError::Fault(f.va)
    }
}

/// One buffer, as a descriptor chain split into its readable and writable
/// parts (address, length).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Chain {
    /// Index of the head descriptor, returned in the used ring.
    pub head: u16,
    /// Buffers the engine reads.
    pub readable: Vec<(u64, u32)>,
    /// Buffers the engine writes.
    pub writable: Vec<(u64, u32)>,
}

impl Chain {
    /// Reads up to `max` bytes from the readable part, in order.
    pub fn read(&self, dma: &mut dyn Dma, max: usize) -> Result<Vec<u8>, RingError> {
        let mut out = Vec::new();
        for &(addr, len) in &self.readable {
            let n = (len as usize).min(max - out.len());
            let at = out.len();
            out.resize(at + n, 0);
            dma.read(addr, &mut out[at..])?;
            if out.len() == max {
                break;
            }
        }
        Ok(out)
    }

    /// Writes `data` over the writable part; returns the bytes written
    /// (less than `data.len()` if the buffers are too small).
    pub fn write(&self, dma: &mut dyn Dma, data: &[u8]) -> Result<u32, RingError> {
        let mut done = 0usize;
        for &(addr, len) in &self.writable {
            let n = (len as usize).min(data.len() - done);
            dma.write(addr, &data[done..done + n])?;
            done += n;
            if done == data.len() {
                break;
            }
        }
        Ok(done as u32)
    }
}

/// The device side of one split virtqueue.
#[derive(Clone, Debug)]
pub struct SplitRing {
    size: u16,
    desc: u64,
    avail: u64,
    used: u64,
    next_avail: u16,
    next_used: Option<u16>,
}

impl SplitRing {
    /// A ring of `size` entries at the given IOVAs, starting at avail index
    /// `base` (from SET_VRING_BASE).
    pub fn new(size: u16, desc: u64, avail: u64, used: u64, base: u16) -> Result<Self, RingError> {
        if size == 0 || size > MAX_QUEUE_SIZE || !size.is_power_of_two() {
            return Err(RingError::BadSize(size));
        }
        Ok(Self {
            size,
            desc,
            avail,
            used,
            next_avail: base,
            next_used: None,
        })
    }

    /// Index of the next avail entry the engine will take (GET_VRING_BASE).
    pub fn next_avail(&self) -> u16 {
        self.next_avail
    }

    fn read_u16(dma: &mut dyn Dma, va: u64) -> Result<u16, RingError> {
        let mut b = [0u8; 2];
        dma.read(va, &mut b)?;
        Ok(u16::from_le_bytes(b))
    }

    /// How many buffers the driver has made available and we have not taken.
    pub fn pending(&self, dma: &mut dyn Dma) -> Result<u16, RingError> {
        let idx = Self::read_u16(dma, self.avail + 2)?;
        // Descriptors are read after the index: order against the driver's
        // publication of the index.
        fence(Ordering::Acquire);
        let n = idx.wrapping_sub(self.next_avail);
        if n > self.size {
            return Err(RingError::TooManyAvail(n));
        }
        Ok(n)
    }

    /// Takes the next available chain, if any, and checks it.
    pub fn pop(&mut self, dma: &mut dyn Dma) -> Result<Option<Chain>, RingError> {
        if self.pending(dma)? == 0 {
            return Ok(None);
        }
        let slot = self.avail + 4 + 2 * u64::from(self.next_avail % self.size);
        let head = Self::read_u16(dma, slot)?;
        self.next_avail = self.next_avail.wrapping_add(1);
        self.walk(dma, head).map(Some)
    }

    fn walk(&self, dma: &mut dyn Dma, head: u16) -> Result<Chain, RingError> {
        let mut chain = Chain {
            head,
            ..Chain::default()
        };
        let mut i = head;
        for _ in 0..self.size {
            if i >= self.size {
                return Err(RingError::BadIndex(i));
            }
            let mut d = [0u8; 16];
            dma.read(self.desc + 16 * u64::from(i), &mut d)?;
            let addr = u64::from_le_bytes(d[0..8].try_into().expect("8 bytes"));
            let len = u32::from_le_bytes(d[8..12].try_into().expect("4 bytes"));
            let flags = u16::from_le_bytes([d[12], d[13]]);
            let next = u16::from_le_bytes([d[14], d[15]]);
            if flags & DESC_F_INDIRECT != 0 {
                return Err(RingError::Indirect);
            }
            if flags & DESC_F_WRITE != 0 {
                chain.writable.push((addr, len));
            } else if chain.writable.is_empty() {
                chain.readable.push((addr, len));
            } else {
                return Err(RingError::Order);
            }
            if flags & DESC_F_NEXT == 0 {
                return Ok(chain);
            }
            i = next;
        }
        Err(RingError::Loop)
    }

    /// Returns chain `head` to the driver with `len` bytes written.
    pub fn push(&mut self, dma: &mut dyn Dma, head: u16, len: u32) -> Result<(), RingError> {
        let used_idx = match self.next_used {
            Some(i) => i,
            None => Self::read_u16(dma, self.used + 2)?,
        };
        let slot = self.used + 4 + 8 * u64::from(used_idx % self.size);
        let mut elem = [0u8; 8];
        elem[..4].copy_from_slice(&u32::from(head).to_le_bytes());
        elem[4..].copy_from_slice(&len.to_le_bytes());
        dma.write(slot, &elem)?;
        // The element must be visible before the index that publishes it.
        fence(Ordering::Release);
        let next = used_idx.wrapping_add(1);
        dma.write(self.used + 2, &next.to_le_bytes())?;
        self.next_used = Some(next);
        Ok(())
    }

    /// Asks the driver for a kick per buffer it makes available (`true`)
    /// or spares it that (`false`: the engine looks at the ring anyway).
    /// After asking, the caller looks at the ring again: a buffer the
    /// driver made available without kicking is found then.
    pub fn set_kicks(&mut self, dma: &mut dyn Dma, on: bool) -> Result<(), RingError> {
        let flags = if on { 0 } else { USED_F_NO_NOTIFY };
        dma.write(self.used, &flags.to_le_bytes())?;
        fence(Ordering::SeqCst);
        Ok(())
    }

    /// Whether the driver wants an interrupt for used buffers.
    pub fn wants_interrupt(&self, dma: &mut dyn Dma) -> bool {
        fence(Ordering::SeqCst);
        match Self::read_u16(dma, self.avail) {
            Ok(flags) => flags & AVAIL_F_NO_INTERRUPT == 0,
            Err(_) => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dma::FlatMemory;

    const DESC: u64 = 0x1000;
    const AVAIL: u64 = 0x2000;
    const USED: u64 = 0x3000;
    const N: u16 = 8;

    fn desc(m: &mut FlatMemory, i: u16, addr: u64, len: u32, flags: u16, next: u16) {
        let mut d = [0u8; 16];
        d[0..8].copy_from_slice(&addr.to_le_bytes());
        d[8..12].copy_from_slice(&len.to_le_bytes());
        d[12..14].copy_from_slice(&flags.to_le_bytes());
        d[14..16].copy_from_slice(&next.to_le_bytes());
        m.write(DESC + 16 * u64::from(i), &d).unwrap();
    }

    fn offer(m: &mut FlatMemory, heads: &[u16]) {
        let mut idx = [0u8; 2];
        m.read(AVAIL + 2, &mut idx).unwrap();
        let mut idx = u16::from_le_bytes(idx);
        for &h in heads {
            m.write(AVAIL + 4 + 2 * u64::from(idx % N), &h.to_le_bytes())
                .unwrap();
            idx = idx.wrapping_add(1);
        }
        m.write(AVAIL + 2, &idx.to_le_bytes()).unwrap();
    }

    fn setup() -> (FlatMemory, SplitRing) {
        (
            FlatMemory::new(0, 0x10000),
            SplitRing::new(N, DESC, AVAIL, USED, 0).unwrap(),
        )
    }

    #[test]
    fn a_two_part_request_is_read_as_one_message_and_returned_used() {
        let (mut m, mut ring) = setup();
        m.write(0x8000, b"hdr-").unwrap();
        m.write(0x9000, b"work-request").unwrap();
        desc(&mut m, 3, 0x8000, 4, DESC_F_NEXT, 5);
        desc(&mut m, 5, 0x9000, 12, 0, 0);
        offer(&mut m, &[3]);
        let chain = ring.pop(&mut m).unwrap().unwrap();
        assert_eq!(chain.read(&mut m, 100).unwrap(), b"hdr-work-request");
        assert_eq!(chain.read(&mut m, 6).unwrap(), b"hdr-wo");
        assert_eq!(ring.pop(&mut m).unwrap(), None);
        ring.push(&mut m, chain.head, 0).unwrap();
        let mut used = [0u8; 12];
        m.read(USED, &mut used).unwrap();
        assert_eq!(&used[2..4], &1u16.to_le_bytes());
        assert_eq!(&used[4..8], &3u32.to_le_bytes());
    }

    #[test]
    fn a_writable_chain_takes_a_completion() {
        let (mut m, mut ring) = setup();
        desc(&mut m, 0, 0x8000, 10, DESC_F_WRITE | DESC_F_NEXT, 1);
        desc(&mut m, 1, 0x9000, 100, DESC_F_WRITE, 0);
        offer(&mut m, &[0]);
        let chain = ring.pop(&mut m).unwrap().unwrap();
        assert_eq!(chain.write(&mut m, &[9; 20]).unwrap(), 20);
        assert_eq!(m.slice(0x9000, 11), &[9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 0]);
    }

    #[test]
    fn bad_descriptors_are_errors_not_panics() {
        let (mut m, mut ring) = setup();
        desc(&mut m, 0, 0x8000, 4, DESC_F_NEXT, 0); // loops on itself
        desc(&mut m, 1, 0x8000, 4, DESC_F_NEXT, 200); // next out of range
        desc(&mut m, 2, 0x8000, 4, DESC_F_INDIRECT, 0);
        desc(&mut m, 3, 0x8000, 4, DESC_F_WRITE | DESC_F_NEXT, 4);
        desc(&mut m, 4, 0x8000, 4, 0, 0); // readable after writable
        desc(&mut m, 5, 0xdead_0000, 4, 0, 0); // outside memory
        offer(&mut m, &[0, 1, 2, 3, 9, 5]);
        assert_eq!(ring.pop(&mut m), Err(RingError::Loop));
        assert_eq!(ring.pop(&mut m), Err(RingError::BadIndex(200)));
        assert_eq!(ring.pop(&mut m), Err(RingError::Indirect));
        assert_eq!(ring.pop(&mut m), Err(RingError::Order));
        assert_eq!(ring.pop(&mut m), Err(RingError::BadIndex(9)));
        let chain = ring.pop(&mut m).unwrap().unwrap();
        assert_eq!(chain.read(&mut m, 4), Err(RingError::Fault(0xdead_0000)));
    }

    #[test]
    fn kicks_are_asked_for_in_the_used_flags_and_the_index_is_kept() {
        let (mut m, mut ring) = setup();
        desc(&mut m, 0, 0x8000, 4, 0, 0);
        offer(&mut m, &[0]);
        let chain = ring.pop(&mut m).unwrap().unwrap();
        ring.push(&mut m, chain.head, 0).unwrap();
        ring.set_kicks(&mut m, false).unwrap();
        assert_eq!(m.slice(USED, 4), &[1, 0, 1, 0], "NO_NOTIFY, index 1");
        ring.set_kicks(&mut m, true).unwrap();
        assert_eq!(m.slice(USED, 4), &[0, 0, 1, 0]);
        let mut far = SplitRing::new(N, DESC, AVAIL, 0xdead_0000, 0).unwrap();
        assert!(matches!(
            far.set_kicks(&mut m, false),
            Err(RingError::Fault(_))
        ));
    }

    #[test]
    fn an_avail_index_too_far_ahead_or_a_bad_size_is_refused() {
        let (mut m, mut ring) = setup();
        m.write(AVAIL + 2, &100u16.to_le_bytes()).unwrap();
        assert_eq!(ring.pop(&mut m), Err(RingError::TooManyAvail(100)));
        assert_eq!(
            SplitRing::new(6, 0, 0, 0, 0).err(),
            Some(RingError::BadSize(6))
        );
        assert_eq!(
            SplitRing::new(0, 0, 0, 0, 0).err(),
            Some(RingError::BadSize(0))
        );
        let r = SplitRing::new(N, DESC, 0xdead_0000, USED, 0).unwrap();
        assert!(matches!(r.pending(&mut m), Err(RingError::Fault(_))));
    }
}
