//! Deterministic pseudo-random numbers for the randomized tests (no
//! external crate, the same cases every run): the one generator of the
//! crate's tests.

/// A 64-bit linear congruential generator seeded by its one field.
pub struct Rng(pub u64);

impl Rng {
    /// The next state, all 64 bits (the low ones are the weakest: prefer
    /// the high ones, as [`below`](Self::below) does).
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        (self.next_u64() >> 33) % n
    }

    /// An index in `0..n`.
    pub fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    /// True `percent` times in a hundred.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// One of `items`.
    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.index(items.len())]
    }
}
