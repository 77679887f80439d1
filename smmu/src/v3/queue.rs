//! Index arithmetic of the SMMU's circular queues.
//!
//! A queue of `2^n` entries is tracked by producer and consumer values whose
//! low `n` bits index an entry and whose bit `n` is a wrap flag that flips on
//! every lap. Equal index and wrap: empty; equal index, different wrap: full.
//! Other register bits (CMDQ_CONS.ERR, EVENTQ_PROD.OVFLG) are not part of the
//! pointer and are stripped by [`Ring::ptr`].

use super::regs::MAX_QUEUE_LOG2;

/// The geometry of one queue: `2^log2` entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ring {
    log2: u32,
}

impl Ring {
    /// A queue of `2^log2_entries` entries (at most 2^19).
    pub const fn new(log2_entries: u32) -> Self {
        assert!(log2_entries <= MAX_QUEUE_LOG2);
        Self { log2: log2_entries }
    }

    /// log2 of the number of entries (the LOG2SIZE of the base register).
    pub const fn log2(self) -> u32 {
        self.log2
    }

    /// Number of entries.
    pub const fn entries(self) -> u32 {
        1 << self.log2
    }

    const fn wrap_bit(self) -> u32 {
        1 << self.log2
    }

    const fn ptr_mask(self) -> u32 {
        (self.wrap_bit() << 1) - 1
    }

    /// The pointer (wrap flag and index) in a register value.
    pub const fn ptr(self, reg: u32) -> u32 {
        reg & self.ptr_mask()
    }

    /// The entry a pointer designates.
    pub const fn index(self, p: u32) -> usize {
        (p & (self.entries() - 1)) as usize
    }

    /// The pointer's wrap flag.
    pub const fn wrap(self, p: u32) -> bool {
        p & self.wrap_bit() != 0
    }

    /// Nothing between `cons` and `prod`.
    pub const fn is_empty(self, prod: u32, cons: u32) -> bool {
        (prod ^ cons) & self.ptr_mask() == 0
    }

    /// Every entry between `cons` and `prod` is in use.
    pub const fn is_full(self, prod: u32, cons: u32) -> bool {
        (prod ^ cons) & self.ptr_mask() == self.wrap_bit()
    }

    /// Entries produced and not yet consumed.
    pub const fn used(self, prod: u32, cons: u32) -> u32 {
        prod.wrapping_sub(cons) & self.ptr_mask()
    }

    /// Entries that can be produced before the queue is full.
    pub const fn free(self, prod: u32, cons: u32) -> u32 {
        self.entries() - self.used(prod, cons)
    }

    /// `p` moved on by `n` entries (`n` at most the queue size), flipping the
    /// wrap flag when it passes the end.
    pub const fn advance(self, p: u32, n: u32) -> u32 {
        self.ptr(self.ptr(p).wrapping_add(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks every (prod, cons) a queue can be in against a model with
    /// unbounded counters: the register pointer is the counter modulo twice
    /// the size.
    fn exhaustive(log2: u32) {
        let ring = Ring::new(log2);
        let n = ring.entries();
        let ptr = |count: u32| count % (2 * n);
        for consumed in 0..4 * n {
            for used in 0..=n {
                let produced = consumed + used;
                let (prod, cons) = (ptr(produced), ptr(consumed));
                assert_eq!(
                    ring.is_empty(prod, cons),
                    used == 0,
                    "log2 {log2} {prod} {cons}"
                );
                assert_eq!(
                    ring.is_full(prod, cons),
                    used == n,
                    "log2 {log2} {prod} {cons}"
                );
                assert_eq!(ring.used(prod, cons), used);
                assert_eq!(ring.free(prod, cons), n - used);
                assert_eq!(ring.index(prod), (produced % n) as usize);
                assert_eq!(ring.wrap(prod), (produced / n) % 2 == 1);
                for step in 0..=n {
                    assert_eq!(ring.advance(prod, step), ptr(produced + step));
                }
            }
        }
    }

    #[test]
    fn exhaustive_small_queues() {
        for log2 in 0..=5 {
            exhaustive(log2);
        }
    }

    #[test]
    fn wrap_boundary_of_an_eight_entry_queue() {
        let ring = Ring::new(3);
        // Last entry of the first lap, then the first of the second lap.
        assert_eq!(ring.advance(7, 1), 0b1000);
        assert_eq!(ring.index(0b1000), 0);
        assert!(ring.wrap(0b1000));
        // End of the second lap wraps back to 0 with the flag clear.
        assert_eq!(ring.advance(0b1111, 1), 0);
        // Producer one lap ahead at the same index: full.
        assert!(ring.is_full(0b1011, 0b0011));
        assert!(ring.is_full(0b0011, 0b1011));
        assert!(!ring.is_empty(0b1011, 0b0011));
        // Producer behind in index but a lap ahead in wrap: 7 used.
        assert_eq!(ring.used(0b1010, 0b0011), 7);
    }

    #[test]
    fn register_flags_are_not_part_of_the_pointer() {
        let ring = Ring::new(15);
        let prod = 1 << 31 | 1 << 15 | 5; // OVFLG, wrap, index 5
        assert_eq!(ring.ptr(prod), 1 << 15 | 5);
        let cons = 1 << 24 | 1 << 15 | 5; // ERR = 1, same pointer
        assert!(ring.is_empty(prod, cons));
        assert_eq!(ring.used(prod, cons), 0);
    }

    #[test]
    fn largest_queue() {
        let ring = Ring::new(19);
        assert_eq!(ring.entries(), 1 << 19);
        assert_eq!(ring.advance((1 << 20) - 1, 1), 0);
    }
}
