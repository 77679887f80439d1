//! What a driver has handed a virtio device, by the token (descriptor head)
//! the queue gave it. The device returns tokens in its used ring; that is
//! the device's word, so every returned token is checked here: one out of
//! range, or naming nothing in flight, is refused (the caller disables the
//! device), never an index out of bounds or a buffer handed out twice.
//!
//! ```text
//!  add(buffer) ──token t──▶ InFlight[t] = buffer ──▶ device
//!  used ring: t' ──▶ take(t'): Some(buffer) if t' was given, else None
//! ```

/// Buffers in flight, by token.
#[derive(Debug)]
pub struct InFlight<T, const N: usize> {
    slots: [Option<T>; N],
}

/// Why a token could not be recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenError {
    /// The token is past the queue size.
    OutOfRange(u16),
    /// Something is already in flight under the token.
    InUse(u16),
}

impl<T, const N: usize> InFlight<T, N> {
    /// Nothing in flight.
    pub fn new() -> Self {
        Self {
            slots: core::array::from_fn(|_| None),
        }
    }

    /// Records `item` under the token the queue returned for it. The queue
    /// (the driver's own code) never hands out a token twice; a refusal
    /// here gives the item back.
    pub fn insert(&mut self, token: u16, item: T) -> Result<(), (TokenError, T)> {
        match self.slots.get_mut(token as usize) {
            None => Err((TokenError::OutOfRange(token), item)),
            Some(Some(_)) => Err((TokenError::InUse(token), item)),
            Some(slot) => {
                *slot = Some(item);
                Ok(())
            }
        }
    }

    /// What was in flight under a token the device returned; `None` if the
    /// token is out of range or names nothing in flight.
    pub fn take(&mut self, token: u16) -> Option<T> {
        self.slots.get_mut(token as usize)?.take()
    }

    /// What is in flight under a token the device returned, left in place
    /// (checked before the queue is asked to recycle its descriptors).
    pub fn peek(&self, token: u16) -> Option<&T> {
        self.slots.get(token as usize)?.as_ref()
    }

    /// How many items are in flight.
    pub fn len(&self) -> usize {
        self.slots.iter().filter(|s| s.is_some()).count()
    }

    /// Whether nothing is in flight.
    pub fn is_empty(&self) -> bool {
        self.slots.iter().all(Option::is_none)
    }
}

impl<T, const N: usize> Default for InFlight<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_returned_token_gives_back_what_was_sent_once() {
        let mut q: InFlight<&str, 4> = InFlight::new();
        q.insert(2, "frame").unwrap();
        assert_eq!(q.peek(2), Some(&"frame"));
        assert_eq!(q.take(2), Some("frame"));
        assert_eq!(q.take(2), None, "a token returned twice names nothing");
        assert!(q.is_empty());
    }

    #[test]
    fn tokens_a_device_makes_up_are_refused_not_indexed() {
        let mut q: InFlight<u32, 4> = InFlight::new();
        q.insert(0, 7).unwrap();
        for bad in [1, 3, 4, 255, u16::MAX] {
            assert_eq!(q.peek(bad), None, "token {bad}");
            assert_eq!(q.take(bad), None, "token {bad}");
        }
        assert_eq!(q.len(), 1, "the real one is still in flight");
    }

    #[test]
    fn the_driver_cannot_record_past_the_queue_or_over_a_live_token() {
        let mut q: InFlight<u32, 2> = InFlight::new();
        assert_eq!(q.insert(2, 1), Err((TokenError::OutOfRange(2), 1)));
        q.insert(1, 5).unwrap();
        assert_eq!(q.insert(1, 6), Err((TokenError::InUse(1), 6)));
        assert_eq!(q.take(1), Some(5));
    }
}
