//! Deterministic pseudo-random numbers: the one generator of Faultline's
//! randomized tests (host and guest), the differential test's command
//! stream, the fuzzer's generated seeds and the self-test's stress runs.
//! A seed gives the same stream on every run and every machine, so a
//! failure names its seed and replays.
//!
//! A 64-bit linear congruential generator (Knuth's MMIX constants):
//! one multiply and one add a draw, `no_std`, good enough to choose test
//! cases; draws come from the state's high bits, the well mixed ones.
//! Not for secrets: anyone who sees a few outputs can predict the rest,
//! so keys and anything an attacker must not guess need another source.

#![no_std]

/// A seeded linear congruential generator.
///
/// ```
/// use faultline_rng::Rng;
///
/// let mut a = Rng::new(7);
/// let mut b = Rng::new(7);
/// assert_eq!(a.next_u64(), b.next_u64());
/// assert!(a.below(10) < 10);
/// ```
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// The generator seeded with `seed` (any value, 0 included).
    pub const fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next state, all 64 bits (the low ones are the weakest: prefer
    /// the high ones, as [`below`](Self::below) and [`fill`](Self::fill)
    /// do).
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        (self.next_u64() >> 33) % n
    }

    /// An index in `0..n` (`n` > 0).
    pub fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    /// True `percent` times in a hundred.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// One of `items` (not empty).
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.index(items.len())]
    }

    /// Fills `bytes`, one draw a byte (its high bits, the best mixed).
    pub fn fill(&mut self, bytes: &mut [u8]) {
        for byte in bytes {
            *byte = (self.next_u64() >> 56) as u8;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Rng;

    #[test]
    fn a_seed_gives_one_stream_and_zero_is_a_seed() {
        let mut a = Rng::new(42);
        let mut b = Rng::new(42);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        let mut zero = Rng::new(0);
        assert_ne!(zero.next_u64(), zero.next_u64());
    }

    #[test]
    fn draws_stay_in_range_and_reach_every_value() {
        let mut rng = Rng::new(1);
        let mut seen = [0u32; 7];
        for _ in 0..7000 {
            seen[rng.index(7)] += 1;
        }
        assert!(seen.iter().all(|&n| n > 800), "{seen:?}");
        let hits = (0..1000).filter(|_| rng.chance(30)).count();
        assert!((200..400).contains(&hits), "{hits}");
        assert_eq!(rng.pick(&[5]), 5);
        let mut bytes = [0u8; 64];
        rng.fill(&mut bytes);
        assert!(bytes.iter().any(|&b| b != bytes[0]));
    }
}
