//! A connection's replies waiting to be sent, in order, where a large
//! stored value is referred to instead of copied.
//!
//! ```text
//!  chunks:  [bytes: +OK ... $4096\r\n][value: 4 KiB, the store's][bytes: \r\n:1\r\n ...]
//!            └ sent ┘└ unsent ...
//!  stream offsets count every byte queued since the connection opened
//! ```
//!
//! A `GET` of a 4 KiB value copied the value into the connection's buffer,
//! and the server copied that into the socket: now the socket takes it
//! from the store's memory. Positions are stream offsets, so a reply held
//! for the log keeps its place however much is sent before it.

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use crate::store::Value;

/// Values at least this long are queued by reference; shorter ones are
/// copied, which costs less than a chunk of their own.
pub const SHARE_FROM: usize = 512;

/// One run of queued bytes.
#[derive(Debug)]
enum Chunk {
    /// Encoded replies.
    Bytes(Vec<u8>),
    /// A stored value, sent from its own memory.
    Value(Value),
}

impl Chunk {
    fn bytes(&self) -> &[u8] {
        match self {
            Chunk::Bytes(b) => b,
            Chunk::Value(v) => v,
        }
    }
}

/// Queued reply bytes (see the module's diagram).
///
/// ```
/// use kvstore::output::Output;
/// use kvstore::store::Value;
///
/// let mut out = Output::default();
/// out.push_with(|b| b.extend_from_slice(b"$600\r\n"));
/// out.push_value(&Value::new(vec![b'x'; 600]));
/// out.push_with(|b| b.extend_from_slice(b"\r\n+OK\r\n"));
/// assert_eq!(out.unsent(), 6 + 600 + 7);
/// let first: Vec<&[u8]> = out.pieces(u64::MAX).collect();
/// assert_eq!(first.len(), 3);
/// out.consume(10);
/// assert_eq!(out.pieces(u64::MAX).next().unwrap().len(), 596);
/// ```
#[derive(Debug, Default)]
pub struct Output {
    chunks: VecDeque<Chunk>,
    /// Bytes of the front chunk already sent.
    front_sent: usize,
    /// Stream offset of the first unsent byte.
    sent: u64,
    /// Stream offset after the last byte queued.
    end: u64,
    /// Sent chunks' buffers, kept for the next chunks of bytes (each
    /// reply after a shared value starts one).
    spares: Vec<Vec<u8>>,
}

/// Sent chunks' buffers kept for reuse: at most this many, each of at
/// most [`SPARE_BYTES`].
const SPARES: usize = 16;
const SPARE_BYTES: usize = 1024;

/// Sent bytes at the front of a chunk of replies are dropped once they
/// are this many and more than half of it, so sending a long reply in
/// socket-sized pieces does not move the rest each time.
const COMPACT_AT: usize = 64 * 1024;

impl Output {
    /// The stream offset the next byte queued gets.
    pub fn end(&self) -> u64 {
        self.end
    }

    /// The stream offset of the first byte not sent.
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// Bytes queued and not sent.
    pub fn unsent(&self) -> usize {
        (self.end - self.sent) as usize
    }

    /// Whether everything queued was sent.
    pub fn is_empty(&self) -> bool {
        self.end == self.sent
    }

    /// Queues what `encode` appends to the buffer it gets (one reply, or
    /// a message), copied: it stays in one piece, which
    /// [`replace`](Output::replace) relies on.
    pub fn push_with(&mut self, encode: impl FnOnce(&mut Vec<u8>)) {
        if !matches!(self.chunks.back(), Some(Chunk::Bytes(_))) {
            // Room for a few replies' headers.
            let buffer = self.spares.pop().unwrap_or_else(|| Vec::with_capacity(64));
            self.chunks.push_back(Chunk::Bytes(buffer));
        }
        let Some(Chunk::Bytes(tail)) = self.chunks.back_mut() else {
            unreachable!("a chunk of bytes was just made the last");
        };
        let before = tail.len();
        encode(tail);
        self.end += (tail.len() - before) as u64;
    }

    /// Queues `value`'s bytes from its own memory.
    pub fn push_value(&mut self, value: &Value) {
        self.end += value.len() as u64;
        self.chunks.push_back(Chunk::Value(value.clone()));
    }

    /// The unsent bytes before stream offset `until`, in order, as they
    /// lie (a socket takes them one after the other).
    pub fn pieces(&self, until: u64) -> impl Iterator<Item = &[u8]> + '_ {
        let mut left = until.saturating_sub(self.sent).min(self.unsent() as u64) as usize;
        let mut skip = self.front_sent;
        let pieces = self.chunks.iter().map_while(move |chunk| {
            if left == 0 {
                return None;
            }
            let bytes = &chunk.bytes()[skip..];
            skip = 0;
            let piece = &bytes[..bytes.len().min(left)];
            left -= piece.len();
            Some(piece)
        });
        // The last chunk's buffer is kept empty once sent.
        pieces.filter(|piece| !piece.is_empty())
    }

    /// The first `n` unsent bytes were sent.
    pub fn consume(&mut self, n: usize) {
        let mut n = n.min(self.unsent());
        self.sent += n as u64;
        while n > 0 {
            let last = self.chunks.len() == 1;
            let Some(front) = self.chunks.front_mut() else {
                break;
            };
            let left = front.bytes().len() - self.front_sent;
            if n < left {
                self.front_sent += n;
                break;
            }
            n -= left;
            self.front_sent = 0;
            match front {
                // The last chunk's buffer is kept for the next replies.
                Chunk::Bytes(b) if last => b.clear(),
                _ => {
                    if let Some(Chunk::Bytes(mut b)) = self.chunks.pop_front() {
                        if b.capacity() <= SPARE_BYTES && self.spares.len() < SPARES {
                            b.clear();
                            self.spares.push(b);
                        }
                    }
                }
            }
        }
        if let Some(Chunk::Bytes(front)) = self.chunks.front_mut() {
            if self.front_sent >= COMPACT_AT && self.front_sent * 2 >= front.len() {
                front.drain(..self.front_sent);
                self.front_sent = 0;
            }
        }
    }

    /// Puts `with` in place of the queued, unsent bytes from stream offset
    /// `start` to `end`, which one [`push_with`](Output::push_with) queued
    /// (a reply the log could not make durable becomes an error). Later
    /// bytes move; earlier offsets stay valid. `false` if the range is not
    /// one such run.
    pub fn replace(&mut self, start: u64, end: u64, with: &[u8]) -> bool {
        if start < self.sent || end < start || end > self.end {
            return false;
        }
        // The stream offset of the front chunk's first byte.
        let mut at = self.sent - self.front_sent as u64;
        for chunk in self.chunks.iter_mut() {
            let len = chunk.bytes().len() as u64;
            if start < at + len || (start == at + len && start == end) {
                let Chunk::Bytes(bytes) = chunk else {
                    return false;
                };
                let (from, to) = ((start - at) as usize, (end - at) as usize);
                if to > bytes.len() {
                    return false;
                }
                bytes.splice(from..to, with.iter().copied());
                self.end = self.end - (end - start) + with.len() as u64;
                return true;
            }
            at += len;
        }
        false
    }

    /// Drops everything queued (nobody is left to read it).
    pub fn clear(&mut self) {
        self.chunks.clear();
        self.front_sent = 0;
        self.sent = self.end;
    }

    /// The unsent bytes, copied out (for tests and tools).
    pub fn to_vec(&self, until: u64) -> Vec<u8> {
        self.pieces(until).flatten().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn bytes_and_values_come_out_in_order_however_they_are_sent() {
        let mut rng = faultline_rng::Rng::new(11);
        for round in 0..200 {
            let mut out = Output::default();
            let mut expected = Vec::new();
            let mut got = Vec::new();
            for i in 0..20u8 {
                if rng.below(3) == 0 {
                    let value = Value::new(vec![i; rng.below(900) as usize]);
                    expected.extend_from_slice(&value);
                    out.push_value(&value);
                } else {
                    let bytes = vec![b'a' + i; rng.below(40) as usize];
                    expected.extend_from_slice(&bytes);
                    out.push_with(|b| b.extend_from_slice(&bytes));
                }
                // A socket that takes a random part of what is offered.
                let room = rng.below(700) as usize;
                let mut taken = 0;
                for piece in out.pieces(u64::MAX) {
                    let n = piece.len().min(room - taken);
                    got.extend_from_slice(&piece[..n]);
                    taken += n;
                    if n < piece.len() {
                        break;
                    }
                }
                out.consume(taken);
            }
            got.extend(out.to_vec(u64::MAX));
            assert_eq!(got, expected, "round {round}");
        }
    }

    #[test]
    fn a_held_reply_is_replaced_in_place_and_later_offsets_move() {
        let mut out = Output::default();
        out.push_with(|b| b.extend_from_slice(b"+first\r\n"));
        out.consume(3);
        let start = out.end();
        out.push_with(|b| b.extend_from_slice(b"+OK\r\n"));
        let end = out.end();
        out.push_value(&Value::new(vec![b'v'; 600]));
        // Only what comes before the held reply may go.
        assert_eq!(out.to_vec(start), b"rst\r\n");
        assert!(out.replace(start, end, b"-ERR disk\r\n"));
        let all = out.to_vec(u64::MAX);
        assert!(all.starts_with(b"rst\r\n-ERR disk\r\nvvv"));
        assert_eq!(all.len(), 5 + 11 + 600);
        assert_eq!(out.unsent(), all.len());
        // A stored value is never a reply to replace.
        assert!(!out.replace(out.end() - 600, out.end(), b""));
    }

    #[test]
    fn a_long_reply_sent_in_pieces_is_compacted_not_moved_each_time() {
        let mut out = Output::default();
        out.push_with(|b| b.extend_from_slice(&vec![7u8; 300_000]));
        for _ in 0..120 {
            out.consume(1460);
        }
        assert_eq!(out.unsent(), 300_000 - 175_200);
        assert!(out.front_sent < COMPACT_AT, "the sent half was dropped");
        assert_eq!(out.to_vec(u64::MAX), vec![7u8; 124_800]);
        out.consume(usize::MAX);
        assert!(out.is_empty());
        assert_eq!(out.pieces(u64::MAX).count(), 0);
    }
}
