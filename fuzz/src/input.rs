//! The fuzzer's bytes as a stream of choices.

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
