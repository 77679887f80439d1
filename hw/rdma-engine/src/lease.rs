//! Leases: how a node lends ranges of its memory to a peer that copies
//! straight from or into them (the direct data path), and how it takes them
//! back at any moment, e.g. when the guest unmaps a page that is lent.
//!
//! Each engine owns a *lease board*: an array of atomic words in a small
//! shared memory that every peer maps too. A lease is one word,
//! `seq << 2 | state`:
//!
//! ```text
//!   lender lends        FREE ───────────────▶ seq|LENT     (before translating)
//!   borrower, per piece seq|LENT ──CAS──▶ seq|CLAIMED ── memcpy ──▶ seq|LENT
//!   lender takes back   seq|LENT ──CAS──▶ FREE            (ACK/NACK, end of the
//!                       (spins while CLAIMED: one piece)   request, invalidation)
//! ```
//!
//! A borrower whose claim fails (the word no longer says `seq|LENT`) stops
//! and reports how far it got; so a stale or duplicated request can never
//! touch memory that was taken back, and an IOTLB invalidation of lent pages
//! only waits for the one memcpy piece in progress (bounded), never for a
//! peer's answer. Invalidation and lending need no common lock: a lease is
//! registered before its pages are translated, and the frontend revokes
//! after it removed the translations, so every lend either misses the
//! invalidated translation or is revoked.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const FREE: u64 = 0;
const LENT: u64 = 1;
const CLAIMED: u64 = 2;

/// How long taking a lease back waits for a borrower's claimed piece (a
/// memcpy of at most a few hundred KiB) before giving up on a peer that died
/// or hangs in the middle of it.
pub const CLAIM_WAIT: Duration = Duration::from_millis(100);

/// Words of a lease board: a heap array in tests, a shared mapping in the
/// device process.
pub trait Words: Send + Sync {
    /// The board's words.
    fn words(&self) -> &[AtomicU64];
}

impl Words for Vec<AtomicU64> {
    fn words(&self) -> &[AtomicU64] {
        self
    }
}

impl Words for crate::sys::Mapping {
    fn words(&self) -> &[AtomicU64] {
        crate::sys::Mapping::words(self)
    }
}

/// One lease: a slot of the lender's board and the sequence number that
/// makes this use of the slot unique.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Lease {
    /// Word index on the lender's board.
    pub slot: u32,
    /// Sequence number of this lease (never reused by the lender).
    pub seq: u64,
}

impl Lease {
    fn word(self, state: u64) -> u64 {
        (self.seq << 2) | state
    }
}

/// Borrower side: claims `lease` on the lender's `board` for one piece of
/// copying; false when the lender took it back (or it never existed).
pub fn claim(board: &[AtomicU64], lease: Lease) -> bool {
    board.get(lease.slot as usize).is_some_and(|w| {
        w.compare_exchange(
            lease.word(LENT),
            lease.word(CLAIMED),
            Ordering::Acquire,
            Ordering::Relaxed,
        )
        .is_ok()
    })
}

/// Borrower side: ends the piece started by a successful [`claim`].
pub fn unclaim(board: &[AtomicU64], lease: Lease) {
    if let Some(w) = board.get(lease.slot as usize) {
        let _ = w.compare_exchange(
            lease.word(CLAIMED),
            lease.word(LENT),
            Ordering::Release,
            Ordering::Relaxed,
        );
    }
}

/// A live lease of the lender: which IOVA range it covers.
#[derive(Clone, Copy, Debug)]
struct Live {
    seq: u64,
    iova: u64,
    len: u64,
}

#[derive(Default)]
struct Book {
    free: Vec<u32>,
    next_seq: u64,
    live: HashMap<u32, Live>,
}

/// Lender side: this node's board and which of its leases cover which IOVAs.
/// Shared by the engine thread (lend, release) and the frontend thread
/// (revoke on IOTLB invalidation or a new memory table).
pub struct Leases {
    board: Box<dyn Words>,
    book: Mutex<Book>,
}

impl Leases {
    /// Leases on `board` (every word FREE).
    pub fn new(board: Box<dyn Words>) -> Self {
        let n = board.words().len().min(u32::MAX as usize) as u32;
        Self {
            board,
            book: Mutex::new(Book {
                free: (0..n).rev().collect(),
                next_seq: 1,
                live: HashMap::new(),
            }),
        }
    }

    /// Leases on a heap board of `slots` words (tests, or no sharing).
    pub fn on_heap(slots: usize) -> Self {
        Self::new(Box::new(
            (0..slots).map(|_| AtomicU64::new(FREE)).collect::<Vec<_>>(),
        ))
    }

    /// The board's words (what borrowers in this process claim on).
    pub fn words(&self) -> &[AtomicU64] {
        self.board.words()
    }

    fn book(&self) -> std::sync::MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Lends `[iova, iova+len)`: None when every slot is in use.
    pub fn lend(&self, iova: u64, len: u64) -> Option<Lease> {
        let mut b = self.book();
        let slot = b.free.pop()?;
        let seq = b.next_seq;
        b.next_seq += 1;
        let lease = Lease { slot, seq };
        b.live.insert(slot, Live { seq, iova, len });
        self.board.words()[slot as usize].store(lease.word(LENT), Ordering::Release);
        Some(lease)
    }

    /// Takes `lease` back (its request was answered or abandoned); nothing
    /// if it was already revoked.
    pub fn release(&self, lease: Lease) {
        let mut b = self.book();
        if b.live.get(&lease.slot).is_some_and(|l| l.seq == lease.seq) {
            b.live.remove(&lease.slot);
            drop(b);
            self.take_back(lease);
            self.book().free.push(lease.slot);
        }
    }

    /// Takes back every lease overlapping `[iova, iova+size)` (size 0: all
    /// of them), waiting only for claimed pieces to end. Returns how many.
    pub fn revoke(&self, iova: u64, size: u64) -> usize {
        let last = if size == 0 {
            u64::MAX
        } else {
            iova.saturating_add(size - 1)
        };
        let hit: Vec<Lease> = {
            let mut b = self.book();
            let hit: Vec<Lease> = b
                .live
                .iter()
                .filter(|(_, l)| {
                    let l_last = l.iova.saturating_add(l.len.max(1) - 1);
                    l.iova <= last && l_last >= iova
                })
                .map(|(&slot, l)| Lease { slot, seq: l.seq })
                .collect();
            for l in &hit {
                b.live.remove(&l.slot);
            }
            hit
        };
        for &l in &hit {
            self.take_back(l);
        }
        self.book().free.extend(hit.iter().map(|l| l.slot));
        hit.len()
    }

    /// Leases currently out (for tests and statistics).
    pub fn live(&self) -> usize {
        self.book().live.len()
    }

    /// LENT or CLAIMED → FREE, waiting (bounded) while a piece is claimed.
    fn take_back(&self, lease: Lease) {
        let w = &self.board.words()[lease.slot as usize];
        let deadline = Instant::now() + CLAIM_WAIT;
        let mut spins = 0u32;
        loop {
            match w.compare_exchange(lease.word(LENT), FREE, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return,
                Err(cur) if cur == lease.word(CLAIMED) && Instant::now() < deadline => {
                    spins += 1;
                    if spins < 64 {
                        std::hint::spin_loop();
                    } else {
                        std::thread::yield_now();
                    }
                }
                Err(cur) => {
                    if cur == lease.word(CLAIMED) {
                        eprintln!(
                            "rdma-engine: a peer held lease {}/{} for over {CLAIM_WAIT:?}; taken back anyway",
                            lease.slot, lease.seq
                        );
                    }
                    w.store(FREE, Ordering::Release);
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    #[test]
    fn a_claim_needs_the_live_lease_and_fails_once_it_is_taken_back() {
        let l = Leases::on_heap(4);
        let a = l.lend(0x1000, 0x2000).unwrap();
        assert!(claim(l.words(), a));
        assert!(!claim(l.words(), a), "already claimed");
        unclaim(l.words(), a);
        assert!(claim(l.words(), a));
        unclaim(l.words(), a);
        l.release(a);
        assert!(!claim(l.words(), a), "released");
        let b = l.lend(0x1000, 0x2000).unwrap();
        assert_eq!(b.slot, a.slot, "the slot is reused ...");
        assert!(!claim(l.words(), a), "... but not by the old lease");
        assert!(claim(l.words(), b));
        assert!(
            !claim(l.words(), Lease { slot: 99, seq: 1 }),
            "no such slot"
        );
    }

    #[test]
    fn revoking_a_range_takes_back_only_the_leases_that_overlap_it() {
        let l = Leases::on_heap(8);
        let a = l.lend(0x1000, 0x1000).unwrap();
        let b = l.lend(0x3000, 0x2000).unwrap();
        assert_eq!(l.revoke(0x4fff, 1), 1);
        assert!(claim(l.words(), a) && !claim(l.words(), b));
        unclaim(l.words(), a);
        l.release(b); // late answer to a revoked request: nothing happens
        assert_eq!(l.live(), 1);
        assert_eq!(l.revoke(0, 0), 1, "size 0 is everything");
        assert!(!claim(l.words(), a));
    }

    #[test]
    fn the_board_runs_out_and_recovers() {
        let l = Leases::on_heap(2);
        let a = l.lend(0, 1).unwrap();
        let _b = l.lend(0, 1).unwrap();
        assert!(l.lend(0, 1).is_none());
        l.release(a);
        assert!(l.lend(0, 1).is_some());
    }

    #[test]
    fn an_invalidation_waits_for_a_claimed_piece_and_no_longer() {
        let l = Arc::new(Leases::on_heap(4));
        let a = l.lend(0x10000, 0x1000).unwrap();
        assert!(claim(l.words(), a));
        let done = Arc::new(AtomicBool::new(false));
        let (l2, d2) = (l.clone(), done.clone());
        let t = std::thread::spawn(move || {
            l2.revoke(0x10000, 0x1000);
            d2.store(true, Ordering::SeqCst);
        });
        std::thread::sleep(Duration::from_millis(20));
        assert!(!done.load(Ordering::SeqCst), "waits while the peer copies");
        unclaim(l.words(), a);
        t.join().unwrap();
        assert!(done.load(Ordering::SeqCst));
        assert!(!claim(l.words(), a), "the next piece is refused");
        // A borrower that never finishes holds the invalidation for a bounded time.
        let b = l.lend(0x10000, 0x1000).unwrap();
        assert!(claim(l.words(), b));
        let t0 = Instant::now();
        l.revoke(0, 0);
        assert!(t0.elapsed() >= CLAIM_WAIT && t0.elapsed() < 10 * CLAIM_WAIT);
        assert_eq!(l.live(), 0);
    }
}
