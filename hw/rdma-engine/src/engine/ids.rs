//! Remote keys: random numbers from the OS (`/dev/urandom`, read a batch
//! at a time), so that nobody who was not given a key can guess one. A
//! counter from 1 would let any peer reach the first exposure.

use std::collections::hash_map::RandomState;
use std::fs::File;
use std::hash::{BuildHasher, Hasher};
use std::io::Read;

/// Ids read from the OS at once (one read per this many transfers).
const BATCH: usize = 256;

/// Where transfer ids come from.
pub(super) struct Ids {
    urandom: Option<File>,
    buf: Vec<u64>,
    /// If `/dev/urandom` cannot be read: SipHash under keys std takes from
    /// the OS, over a counter (still unpredictable without the keys).
    keyed: RandomState,
    counter: u64,
}

impl Ids {
    pub fn new() -> Self {
        Self {
            urandom: File::open("/dev/urandom").ok(),
            buf: Vec::with_capacity(BATCH),
            keyed: RandomState::new(),
            counter: 0,
        }
    }

    fn refill(&mut self) {
        let mut bytes = [0u8; BATCH * 8];
        let ok = self
            .urandom
            .as_mut()
            .is_some_and(|f| f.read_exact(&mut bytes).is_ok());
        if ok {
            self.buf.extend(
                bytes
                    .chunks_exact(8)
                    .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))),
            );
        } else {
            self.urandom = None;
            for _ in 0..BATCH {
                self.counter += 1;
                let mut h = self.keyed.build_hasher();
                h.write_u64(self.counter);
                self.buf.push(h.finish());
            }
        }
    }

    /// A fresh remote key: 32 random bits (RoCE's R_Key), never 0 and not
    /// one `taken` says is in use or was used.
    pub fn next_key(&mut self, taken: impl Fn(u32) -> bool) -> u32 {
        loop {
            let k = self.next(|_| false) as u32;
            if k != 0 && !taken(k) {
                return k;
            }
        }
    }

    /// A fresh random 64-bit number, never 0 and not one `taken` says is
    /// in use.
    pub fn next(&mut self, taken: impl Fn(u64) -> bool) -> u64 {
        loop {
            let Some(id) = self.buf.pop() else {
                self.refill();
                continue;
            };
            if id != 0 && !taken(id) {
                return id;
            }
        }
    }
}
