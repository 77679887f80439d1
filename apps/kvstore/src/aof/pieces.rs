//! Log records whose large values stay in their own memory.
//!
//! ```text
//!  record:  [len crc *3 $3 SET $1 k $65536] [value ...] [\r\n]
//!           └── bytes encoded here ───────┘ └ shared ┘ └ bytes ┘
//! ```
//!
//! The bytes are the same as [`encode_record`](super::encode_record)'s;
//! only the value is not copied: the buffer ([`RecordBuf`]) keeps it by
//! reference, and the disk log's flush gathers it from the store's
//! memory. The CRC is taken over the value in place ([`crc32c_extend`]).

use alloc::vec::Vec;

use crate::num::digits_into;
use crate::store::Value;
use libos::checksum::crc32c_extend;

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

/// Memory that log records are encoded into, as they are made: a
/// command's [`Effects`](crate::commands::Effects), a plain `Vec`, or the
/// server's disk buffer for a log rewrite, which then takes each record
/// straight from the store's memory (one copy) instead of from a buffer
/// in between.
pub trait RecordBuf {
    /// The position the next byte goes to: bytes encoded so far (values
    /// taken by reference take no room here).
    fn end(&self) -> usize;
    /// Appends `bytes`.
    fn put(&mut self, bytes: &[u8]);
    /// The bytes from position `from` on, to checksum and to fill in a
    /// record's header; `None` when the buffer stopped keeping bytes (it is
    /// full and will report that itself).
    fn since_mut(&mut self, from: usize) -> Option<&mut [u8]>;
    /// Takes `value`, whose bytes belong at the end, by reference instead
    /// of copying them, if this buffer does that for a value this large.
    fn share(&mut self, _value: &Value) -> bool {
        false
    }
    /// Makes room for the record of `args` at once, when that helps
    /// (rather than growing piece by piece).
    fn reserve_for(&mut self, _args: &[Piece<'_>]) {}
    /// Adds one command as a log record (see [`encode_record_pieces`]).
    fn record(&mut self, args: &[Piece<'_>]) {
        encode_record_pieces(args, self);
    }
}

impl RecordBuf for Vec<u8> {
    fn end(&self) -> usize {
        self.len()
    }

    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }

    fn since_mut(&mut self, from: usize) -> Option<&mut [u8]> {
        self.get_mut(from..)
    }

    fn reserve_for(&mut self, args: &[Piece<'_>]) {
        self.reserve(most_bytes(args, usize::MAX));
    }
}

/// Encodes one command as a log record at the end of `out`. A
/// [`Piece::Value`] that `out` [shares](RecordBuf::share) is not copied;
/// the checksum is taken over it in place. With its shared values put back
/// where `out` took them, the bytes are exactly
/// [`encode_record`](super::encode_record)'s.
///
/// Panics if the payload exceeds 4 GiB, as `encode_record`.
///
/// ```
/// use kvstore::aof::{encode_record, encode_record_pieces, Piece};
///
/// let value = std::rc::Rc::new(vec![7u8; 100]);
/// let mut out = Vec::new();
/// encode_record_pieces(&[Piece::Bytes(b"SET"), Piece::Bytes(b"k"), Piece::Value(&value)], &mut out);
/// assert_eq!(out, encode_record(&[&b"SET"[..], b"k", &value]));
/// ```
pub fn encode_record_pieces<B: RecordBuf + ?Sized>(args: &[Piece<'_>], out: &mut B) {
    let start = out.end();
    out.reserve_for(args);
    out.put(&[0; RECORD_HEADER]);
    let (mut crc, mut unsummed, mut len) = (0, start + RECORD_HEADER, 0);
    let mut line = HeaderLine::new();
    out.put(line.format(b'*', args.len()));
    for arg in args {
        let bytes = arg.bytes();
        out.put(line.format(b'$', bytes.len()));
        match *arg {
            Piece::Value(v) if out.share(v) => {
                // Everything before the value is in `out`: sum it, then
                // the value where it lies.
                let at = out.end();
                if let Some(before) = out.since_mut(unsummed) {
                    crc = crc32c_extend(crc, before);
                }
                crc = crc32c_extend(crc, v);
                len += at - unsummed + v.len();
                unsummed = at;
            }
            _ => out.put(bytes),
        }
        out.put(b"\r\n");
    }
    len += out.end() - unsummed;
    let len = u32::try_from(len).expect("log record over 4 GiB");
    if let Some(rest) = out.since_mut(unsummed) {
        crc = crc32c_extend(crc, rest);
    }
    if let Some(record) = out.since_mut(start) {
        record[..4].copy_from_slice(&len.to_le_bytes());
        record[4..8].copy_from_slice(&crc.to_le_bytes());
    }
}

/// The most bytes the record of `args` takes in a buffer that shares
/// values of `share_from` bytes or more (a header line is at most 23
/// bytes).
pub fn most_bytes(args: &[Piece<'_>], share_from: usize) -> usize {
    let copied = |arg: &Piece<'_>| match *arg {
        Piece::Value(v) if v.len() >= share_from => 0,
        _ => arg.bytes().len(),
    };
    RECORD_HEADER + 24 + args.iter().map(|arg| copied(arg) + 24).sum::<usize>()
}

/// A RESP header line (`*3\r\n`, `$4096\r\n`) formatted on the stack.
struct HeaderLine([u8; 24]);

impl HeaderLine {
    fn new() -> Self {
        HeaderLine([0; 24])
    }

    /// The line for `kind` (`*` or `$`) and `n`.
    fn format(&mut self, kind: u8, n: usize) -> &[u8] {
        let buf = &mut self.0;
        // The digits end before "\r\n".
        let crlf = buf.len() - 2;
        buf[crlf..].copy_from_slice(b"\r\n");
        let at = digits_into(n as u64, &mut buf[..crlf]) - 1;
        buf[at] = kind;
        &buf[at..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aof::encode_record;
    use alloc::vec;

    /// A buffer that keeps values of `share_from` bytes or more by
    /// reference, as the server's buffers do for large values.
    struct Sharing {
        bytes: Vec<u8>,
        share_from: usize,
        shared: Vec<(usize, Value)>,
    }

    impl RecordBuf for Sharing {
        fn end(&self) -> usize {
            self.bytes.len()
        }
        fn put(&mut self, bytes: &[u8]) {
            self.bytes.extend_from_slice(bytes);
        }
        fn since_mut(&mut self, from: usize) -> Option<&mut [u8]> {
            self.bytes.get_mut(from..)
        }
        fn share(&mut self, value: &Value) -> bool {
            let share = value.len() >= self.share_from;
            if share {
                self.shared.push((self.bytes.len(), value.clone()));
            }
            share
        }
    }

    /// Encodes by pieces and puts the shared values back in their places.
    fn by_pieces(args: &[Piece<'_>], share_from: usize) -> (Vec<u8>, usize) {
        let mut out = Sharing {
            bytes: Vec::new(),
            share_from,
            shared: Vec::new(),
        };
        out.record(args);
        let count = out.shared.len();
        for (at, v) in out.shared.into_iter().rev() {
            out.bytes.splice(at..at, v.iter().copied());
        }
        (out.bytes, count)
    }

    #[test]
    fn pieces_concatenated_are_the_record_for_random_commands() {
        let mut rng = faultline_rng::Rng::new(7);
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

    #[test]
    fn header_lines_hold_any_length() {
        let mut line = HeaderLine::new();
        assert_eq!(line.format(b'*', 0), b"*0\r\n");
        assert_eq!(line.format(b'$', 4096), b"$4096\r\n");
        let most = alloc::format!("${}\r\n", usize::MAX);
        assert_eq!(line.format(b'$', usize::MAX), most.as_bytes());
    }
}
