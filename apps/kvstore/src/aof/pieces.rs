//! Log records whose large values stay in their own memory.
//!
//! ```text
//!  record:  [len crc *3 $3 SET $1 k $65536] [value ...] [\r\n]
//!           └── bytes encoded here ───────┘ └ shared ┘ └ bytes ┘
//! ```
//!
//! The bytes are the same as [`encode_record`](super::encode_record)'s;
//! only the value is not copied: the encoder says where it goes, and the
//! disk log's flush gathers it from the store's memory. The CRC is taken
//! over the value in place ([`crc32c_extend`]).

use alloc::vec::Vec;

use super::crc32c::crc32c_extend;
use crate::resp::{array_header, bulk_header};
use crate::store::Value;

/// One piece of a sequence of log records, in order; also one argument
/// of a command to log (see [`encode_record_pieces`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    /// Bytes to copy into the log's staging buffer (names, keys, numbers).
    Bytes(&'a [u8]),
    /// A stored value, written from its own memory (an argument shorter
    /// than `share_from` is copied instead).
    Value(&'a Value),
}

impl<'a> Piece<'a> {
    /// The piece's bytes.
    pub fn bytes(&self) -> &'a [u8] {
        match *self {
            Piece::Bytes(b) => b,
            Piece::Value(v) => v,
        }
    }
}

/// Bytes before each payload: length and checksum.
const RECORD_HEADER: usize = 8;

/// Encodes one command as a log record at the end of `out`, except that
/// each [`Piece::Value`] of at least `share_from` bytes is not copied: the
/// value is passed to `share` with the length of `out` at that point, the
/// place its bytes belong. Inserting the shared values there gives exactly
/// [`encode_record`](super::encode_record)'s bytes.
///
/// Panics if the payload exceeds 4 GiB, as `encode_record`.
///
/// ```
/// use std::rc::Rc;
/// use kvstore::aof::{encode_record, encode_record_pieces, Piece};
///
/// let value = Rc::new(vec![7u8; 100]);
/// let (mut out, mut shared) = (Vec::new(), Vec::new());
/// let args = [Piece::Bytes(b"SET"), Piece::Bytes(b"k"), Piece::Value(&value)];
/// encode_record_pieces(&args, 64, &mut out, |at, v| shared.push((at, v.clone())));
/// assert_eq!(shared.len(), 1);
/// let (at, v) = &shared[0];
/// out.splice(at..at, v.iter().copied());
/// assert_eq!(out, encode_record(&[&b"SET"[..], b"k", &value]));
/// ```
pub fn encode_record_pieces<'v>(
    args: &[Piece<'v>],
    share_from: usize,
    out: &mut Vec<u8>,
    mut share: impl FnMut(usize, &'v Value),
) {
    let start = out.len();
    // Room for the whole record at once (a header line is at most 22
    // bytes), rather than growing the buffer piece by piece.
    let copied: usize = args
        .iter()
        .map(|arg| match *arg {
            Piece::Value(v) if v.len() >= share_from => 24,
            _ => arg.bytes().len() + 24,
        })
        .sum();
    out.reserve(RECORD_HEADER + 24 + copied);
    out.extend_from_slice(&[0; RECORD_HEADER]);
    let (mut crc, mut unsummed, mut len) = (0, start + RECORD_HEADER, 0);
    array_header(out, args.len());
    for arg in args {
        let bytes = arg.bytes();
        bulk_header(out, bytes.len());
        match *arg {
            Piece::Value(v) if v.len() >= share_from => {
                crc = crc32c_extend(crc, &out[unsummed..]);
                crc = crc32c_extend(crc, v);
                len += out.len() - unsummed + v.len();
                unsummed = out.len();
                share(out.len(), v);
            }
            _ => out.extend_from_slice(bytes),
        }
        out.extend_from_slice(b"\r\n");
    }
    crc = crc32c_extend(crc, &out[unsummed..]);
    len += out.len() - unsummed;
    let len = u32::try_from(len).expect("log record over 4 GiB");
    out[start..start + 4].copy_from_slice(&len.to_le_bytes());
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aof::encode_record;
    use alloc::vec;

    /// Encodes by pieces and puts the shared values back in their places.
    fn by_pieces(args: &[Piece<'_>], share_from: usize) -> (Vec<u8>, usize) {
        let mut out = Vec::new();
        let mut shared = Vec::new();
        encode_record_pieces(args, share_from, &mut out, |at, v| shared.push((at, v)));
        let count = shared.len();
        for (at, v) in shared.into_iter().rev() {
            out.splice(at..at, v.iter().copied());
        }
        (out, count)
    }

    #[test]
    fn pieces_concatenated_are_the_record_for_random_commands() {
        let mut rng = crate::test_rng::Rng(7);
        let mut next = |n: u64| rng.below(n);
        let mut shared_seen = 0;
        for round in 0..300 {
            let values: Vec<Value> = (0..1 + next(4))
                .map(|i| {
                    let len = [0, 1, 63, 64, 65, 300][next(6) as usize];
                    Value::new((0..len).map(|b| (b as u8) ^ (i as u8 * 37)).collect())
                })
                .collect();
            let mut args = vec![Piece::Bytes(b"MSET")];
            for (i, v) in values.iter().enumerate() {
                args.push(Piece::Bytes(if i % 2 == 0 { b"key" } else { b"k\r\n" }));
                args.push(if next(3) == 0 {
                    Piece::Bytes(v)
                } else {
                    Piece::Value(v)
                });
            }
            let plain: Vec<&[u8]> = args.iter().map(Piece::bytes).collect();
            let (record, shared) = by_pieces(&args, 64);
            assert_eq!(record, encode_record(&plain), "round {round}");
            shared_seen += shared;
        }
        assert!(shared_seen > 100, "the random commands shared values");
    }

    #[test]
    fn small_values_are_copied() {
        let value = Value::new(b"small".to_vec());
        let args = [
            Piece::Bytes(b"SET"),
            Piece::Bytes(b"k"),
            Piece::Value(&value),
        ];
        let (record, shared) = by_pieces(&args, 6);
        assert_eq!(shared, 0);
        assert_eq!(record, encode_record(&[&b"SET"[..], b"k", b"small"]));
    }
}
