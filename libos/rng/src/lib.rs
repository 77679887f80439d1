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
//!
//! [`XorShift64Star`] is the second generator, kvstore's own draws
//! (random members and keys, eviction samples, LFU counter steps, sorted
//! set tree priorities): their callers use all 64 bits of a draw, the low
//! ones included (`draw % len`), and an LCG's low bits are poor (the
//! lowest alternates), while xorshift64*'s are as good as its high ones.

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

/// A seeded xorshift64* generator (Vigna): draws good in every bit, for
/// callers that reduce a whole draw modulo a small number.
///
/// ```
/// use faultline_rng::XorShift64Star;
///
/// let mut a = XorShift64Star::new(7);
/// let mut b = XorShift64Star::new(7);
/// assert_eq!(a.next_u64(), b.next_u64());
/// ```
#[derive(Clone, Debug)]
pub struct XorShift64Star(u64);

impl XorShift64Star {
    /// The generator seeded with `seed`; 0, the one state xorshift never
    /// leaves, is taken as 1.
    pub const fn new(seed: u64) -> XorShift64Star {
        XorShift64Star(if seed == 0 { 1 } else { seed })
    }

    /// The next draw, all 64 bits usable.
    pub fn next_u64(&mut self) -> u64 {
        let mut s = self.0;
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        self.0 = s;
        s.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

#[cfg(test)]
mod tests {
    use super::{Rng, XorShift64Star};

    #[test]
    fn xorshift_streams_repeat_use_low_bits_and_survive_seed_zero() {
        let mut a = XorShift64Star::new(9);
        let mut b = XorShift64Star::new(9);
        let mut low = [0u32; 2];
        for _ in 0..1000 {
            let x = a.next_u64();
            assert_eq!(x, b.next_u64());
            low[(x & 1) as usize] += 1;
        }
        assert!(low.iter().all(|&n| n > 400), "{low:?}");
        let mut zero = XorShift64Star::new(0);
        assert_ne!(zero.next_u64(), zero.next_u64());
    }

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
