//! Where the generators' choices come from: the fuzzer's bytes
//! ([`Input`]) or a seeded generator ([`Rng`]), behind one trait, so that
//! either tool can drive either generator.

use faultline_rng::Rng;

/// A source of choices. The generators take `&mut dyn Choices`; `pick`
/// and `chance` are on the trait object.
pub trait Choices {
    /// A number below `n` (`n` > 0).
    fn below(&mut self, n: usize) -> usize;
    /// Any byte.
    fn byte(&mut self) -> u8;
    /// Any 64-bit number.
    fn u64(&mut self) -> u64;
    /// Up to `max` bytes of any value.
    fn bytes(&mut self, max: usize) -> Vec<u8>;
}

impl dyn Choices + '_ {
    /// One of `items` (not empty).
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    /// True `percent` times in a hundred.
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

/// A seeded stream of choices: the differential test's.
impl Choices for Rng {
    fn below(&mut self, n: usize) -> usize {
        self.index(n)
    }

    fn byte(&mut self) -> u8 {
        self.below(256) as u8
    }

    fn u64(&mut self) -> u64 {
        self.next_u64()
    }

    fn bytes(&mut self, max: usize) -> Vec<u8> {
        let mut bytes = vec![0; self.index(max + 1)];
        self.fill(&mut bytes);
        bytes
    }
}

/// The fuzzer's bytes as choices.
impl Choices for Input<'_> {
    fn below(&mut self, n: usize) -> usize {
        Input::below(self, n)
    }

    fn byte(&mut self) -> u8 {
        Input::byte(self)
    }

    fn u64(&mut self) -> u64 {
        Input::u64(self)
    }

    fn bytes(&mut self, max: usize) -> Vec<u8> {
        Input::bytes(self, max).to_vec()
    }
}

/// Reads choices off the front of the fuzzer's input; once it is used up,
/// every choice is 0 (the first option), so any input is a valid program.
pub struct Input<'a> {
    bytes: &'a [u8],
}

impl<'a> Input<'a> {
    /// Choices read from `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Input { bytes }
    }

    /// Whether every byte has been read.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The next byte (0 at the end).
    pub fn byte(&mut self) -> u8 {
        match self.bytes.split_first() {
            Some((&b, rest)) => {
                self.bytes = rest;
                b
            }
            None => 0,
        }
    }

    /// A number below `n` (`n` at most 256 for one byte's worth of choice;
    /// larger `n` read two bytes).
    pub fn below(&mut self, n: usize) -> usize {
        assert!(n > 0);
        if n <= 256 {
            usize::from(self.byte()) % n
        } else {
            (usize::from(self.byte()) << 8 | usize::from(self.byte())) % n
        }
    }

    /// One of `items`.
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    /// A little-endian u64 from the next eight bytes.
    pub fn u64(&mut self) -> u64 {
        (0..8).fold(0, |n, i| n | u64::from(self.byte()) << (8 * i))
    }

    /// Up to `max` bytes taken from the input as they are.
    pub fn bytes(&mut self, max: usize) -> &'a [u8] {
        let len = self.below(max + 1).min(self.bytes.len());
        let (taken, rest) = self.bytes.split_at(len);
        self.bytes = rest;
        taken
    }

    /// Everything not read yet.
    pub fn rest(&mut self) -> &'a [u8] {
        core::mem::take(&mut self.bytes)
    }
}
