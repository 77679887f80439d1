//! Replies and their RESP2 encoding.

use alloc::string::String;
use alloc::vec::Vec;

/// One reply to one command, in RESP2's five shapes.
#[derive(Clone, Debug)]
pub enum Reply {
    /// `+OK`: a short status line.
    Simple(String),
    /// `-ERR ...`: the text includes the error code (`ERR`, `OOM`, ...).
    Error(String),
    /// `:42`.
    Integer(i64),
    /// `$3\r\nfoo` or, for `None`, the null bulk string `$-1`.
    Bulk(Option<Vec<u8>>),
    /// `*2\r\n...` or, for `None`, the null array `*-1`.
    Array(Option<Vec<Reply>>),
    /// Several replies to one command, one after the other (`SUBSCRIBE a
    /// b` answers once per channel).
    Sequence(Vec<Reply>),
    /// A bulk string that is a stored value, shared rather than copied
    /// (`GET`): the reply is encoded from the store's own memory.
    Shared(crate::store::Value),
    /// An array of bulk strings built already encoded (see [`Bulks`]):
    /// what commands answering with many elements (`LRANGE`) build, one
    /// buffer where an `Array` of `Bulk`s takes one per element.
    Bulks(Bulks),
}

/// Two replies are equal when they encode the same: an array of bulk
/// strings is one whether it was built as [`Reply::Array`] or
/// [`Reply::Bulks`].
impl PartialEq for Reply {
    fn eq(&self, other: &Self) -> bool {
        self.to_bytes() == other.to_bytes()
    }
}

impl Eq for Reply {}

/// Bulk strings already in RESP, one after the other (`$3\r\nfoo\r\n`...),
/// and how many: the items of an array reply, built without a buffer per
/// item.
///
/// ```
/// use kvstore::resp::{Bulks, Reply};
///
/// let elements: [&[u8]; 2] = [b"a", b"bc"];
/// let mut bulks = Bulks::for_items(&elements).unwrap();
/// for element in elements {
///     bulks.push(element);
/// }
/// assert_eq!(Reply::Bulks(bulks).to_bytes(), b"*2\r\n$1\r\na\r\n$2\r\nbc\r\n");
/// ```
#[derive(Clone, Debug, Default)]
pub struct Bulks {
    count: usize,
    encoded: Vec<u8>,
}

impl Bulks {
    /// Room for `items`, reserved at once: `None` if the memory cannot be
    /// had (the command answers `-OOM`). Push them with [`push`](Bulks::push).
    pub fn for_items<T: AsRef<[u8]>>(items: impl IntoIterator<Item = T>) -> Option<Bulks> {
        let bytes = items
            .into_iter()
            .map(|i| bulk_encoded_len(i.as_ref().len()))
            .sum();
        let mut encoded = Vec::new();
        encoded.try_reserve_exact(bytes).ok()?;
        Some(Bulks { count: 0, encoded })
    }

    /// Adds `item` (within the room reserved, no allocation).
    pub fn push(&mut self, item: &[u8]) {
        bulk_header(&mut self.encoded, item.len());
        self.encoded.extend_from_slice(item);
        self.encoded.extend_from_slice(b"\r\n");
        self.count += 1;
    }
}

/// Bytes a bulk string of `len` bytes takes encoded.
fn bulk_encoded_len(len: usize) -> usize {
    header_len(len) + len + 2
}

/// Bytes of the line `*n\r\n` or `$n\r\n`.
fn header_len(n: usize) -> usize {
    3 + n.checked_ilog10().unwrap_or(0) as usize + 1
}

impl Reply {
    /// `+OK`, the most common reply.
    pub fn ok() -> Self {
        Reply::Simple(String::from("OK"))
    }

    /// The null bulk string: a missing key.
    pub fn nil() -> Self {
        Reply::Bulk(None)
    }

    /// A bulk string holding `bytes`.
    pub fn bulk(bytes: impl Into<Vec<u8>>) -> Self {
        Reply::Bulk(Some(bytes.into()))
    }

    /// An array of replies.
    pub fn array(items: Vec<Reply>) -> Self {
        Reply::Array(Some(items))
    }

    /// An error reply; `text` starts with the error code, e.g.
    /// `"ERR syntax error"`.
    pub fn error(text: impl Into<String>) -> Self {
        Reply::Error(text.into())
    }

    /// Whether this is an error reply.
    pub fn is_error(&self) -> bool {
        matches!(self, Reply::Error(_))
    }

    /// Appends the RESP2 encoding to `out`. Line breaks inside status and
    /// error text would break framing, so they are written as spaces (Redis
    /// does the same).
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Reply::Simple(text) => line(out, b'+', text.as_bytes()),
            Reply::Error(text) => line(out, b'-', text.as_bytes()),
            Reply::Integer(n) => header(out, b':', *n),
            Reply::Bulk(None) => out.extend_from_slice(b"$-1\r\n"),
            Reply::Bulk(Some(bytes)) => {
                header(out, b'$', len_i64(bytes.len()));
                out.extend_from_slice(bytes);
                out.extend_from_slice(b"\r\n");
            }
            Reply::Array(None) => out.extend_from_slice(b"*-1\r\n"),
            Reply::Array(Some(items)) => {
                header(out, b'*', len_i64(items.len()));
                for item in items {
                    item.encode(out);
                }
            }
            Reply::Sequence(replies) => {
                for reply in replies {
                    reply.encode(out);
                }
            }
            Reply::Bulks(bulks) => {
                array_header(out, bulks.count);
                out.extend_from_slice(&bulks.encoded);
            }
            Reply::Shared(value) => {
                bulk_header(out, value.len());
                out.extend_from_slice(value);
                out.extend_from_slice(b"\r\n");
            }
        }
    }

    /// Bytes [`encode`](Reply::encode) appends.
    pub fn encoded_len(&self) -> usize {
        let header = header_len;
        match self {
            Reply::Simple(text) | Reply::Error(text) => text.len() + 3,
            Reply::Integer(n) => {
                3 + n.unsigned_abs().checked_ilog10().unwrap_or(0) as usize
                    + 1
                    + usize::from(*n < 0)
            }
            Reply::Bulk(None) | Reply::Array(None) => 5,
            Reply::Bulk(Some(bytes)) => header(bytes.len()) + bytes.len() + 2,
            Reply::Array(Some(items)) => {
                header(items.len()) + items.iter().map(Reply::encoded_len).sum::<usize>()
            }
            Reply::Sequence(replies) => replies.iter().map(Reply::encoded_len).sum(),
            Reply::Bulks(bulks) => header(bulks.count) + bulks.encoded.len(),
            Reply::Shared(value) => bulk_encoded_len(value.len()),
        }
    }

    /// The items of an array reply, [`Reply::Bulks`] decoded: for code
    /// that looks into replies (tests, mostly). `None` for another shape.
    pub fn into_items(self) -> Option<Vec<Reply>> {
        match self {
            Reply::Array(Some(items)) => Some(items),
            Reply::Bulks(bulks) => {
                let mut items = Vec::with_capacity(bulks.count);
                let mut rest = bulks.encoded.as_slice();
                while let Some(line) = rest.iter().position(|&b| b == b'\n') {
                    let len: usize = core::str::from_utf8(&rest[1..line - 1])
                        .ok()?
                        .parse()
                        .ok()?;
                    items.push(Reply::bulk(&rest[line + 1..line + 1 + len]));
                    rest = &rest[line + 1 + len + 2..];
                }
                Some(items)
            }
            _ => None,
        }
    }

    /// Appends the encoding to `out` if the memory for it can be had;
    /// otherwise appends Redis's `-OOM` error instead (a reply too big for
    /// the memory left fails that command, not the server).
    pub fn encode_or_oom(&self, out: &mut Vec<u8>) {
        if out.try_reserve(self.encoded_len()).is_ok() {
            self.encode(out);
        } else {
            Reply::error("OOM not enough memory for the reply").encode(out);
        }
    }

    /// The RESP2 encoding as a new buffer.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode(&mut out);
        out
    }
}

fn len_i64(len: usize) -> i64 {
    i64::try_from(len).unwrap_or(i64::MAX)
}

fn line(out: &mut Vec<u8>, kind: u8, text: &[u8]) {
    out.push(kind);
    out.extend(
        text.iter()
            .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
    );
    out.extend_from_slice(b"\r\n");
}

fn header(out: &mut Vec<u8>, kind: u8, n: i64) {
    out.push(kind);
    crate::num::push_i64(out, n);
    out.extend_from_slice(b"\r\n");
}

/// Encodes a command as the RESP array of bulk strings that a client would
/// send; the append-only log stores commands in this form.
pub fn encode_command<A: AsRef<[u8]>>(args: &[A], out: &mut Vec<u8>) {
    array_header(out, args.len());
    for arg in args {
        let arg = arg.as_ref();
        bulk_header(out, arg.len());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
}

/// The line before an array of `n` items (`*n\r\n`), for encoders that
/// write a command's arguments themselves.
fn array_header(out: &mut Vec<u8>, n: usize) {
    header(out, b'*', len_i64(n));
}

/// The line before a bulk string of `len` bytes (`$len\r\n`); the bytes
/// and `\r\n` follow.
pub(crate) fn bulk_header(out: &mut Vec<u8>, len: usize) {
    header(out, b'$', len_i64(len));
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn every_shape() {
        assert_eq!(Reply::ok().to_bytes(), b"+OK\r\n");
        assert_eq!(
            Reply::error("ERR syntax error").to_bytes(),
            b"-ERR syntax error\r\n"
        );
        assert_eq!(Reply::Integer(-7).to_bytes(), b":-7\r\n");
        assert_eq!(Reply::bulk(&b"a\r\nb"[..]).to_bytes(), b"$4\r\na\r\nb\r\n");
        assert_eq!(Reply::nil().to_bytes(), b"$-1\r\n");
        assert_eq!(Reply::Array(None).to_bytes(), b"*-1\r\n");
        assert_eq!(
            Reply::array(vec![Reply::Integer(1), Reply::nil(), Reply::array(vec![])]).to_bytes(),
            b"*3\r\n:1\r\n$-1\r\n*0\r\n"
        );
    }

    #[test]
    fn line_breaks_cannot_escape_a_status_line() {
        assert_eq!(
            Reply::error("ERR bad\r\nthing").to_bytes(),
            b"-ERR bad  thing\r\n"
        );
    }

    #[test]
    fn commands_encode_as_bulk_arrays() {
        let mut out = Vec::new();
        encode_command(&[&b"SET"[..], b"k", b""], &mut out);
        assert_eq!(out, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n");
    }

    #[test]
    fn encoded_len_is_what_encode_writes() {
        let replies = [
            Reply::ok(),
            Reply::error("ERR x"),
            Reply::Integer(0),
            Reply::Integer(-1234),
            Reply::Integer(i64::MIN),
            Reply::Integer(i64::MAX),
            Reply::Bulk(None),
            Reply::bulk(vec![7u8; 1000]),
            Reply::bulk(Vec::new()),
            Reply::Array(None),
            Reply::array(vec![
                Reply::bulk("a"),
                Reply::array(Vec::new()),
                Reply::Integer(10),
            ]),
        ];
        for reply in replies {
            assert_eq!(reply.encoded_len(), reply.to_bytes().len(), "{reply:?}");
        }
    }

    #[test]
    fn bulks_are_an_array_of_bulk_strings_in_one_buffer() {
        let items: Vec<Vec<u8>> = vec![b"a".to_vec(), Vec::new(), vec![b'\n'; 12], vec![7; 1000]];
        let mut bulks = Bulks::for_items(&items).unwrap();
        let reserved = bulks.encoded.capacity();
        for item in &items {
            bulks.push(item);
        }
        assert_eq!(
            bulks.encoded.capacity(),
            reserved,
            "exactly the room reserved"
        );
        let reply = Reply::Bulks(bulks);
        let as_array = Reply::array(items.iter().map(|i| Reply::bulk(i.clone())).collect());
        assert_eq!(reply.to_bytes(), as_array.to_bytes());
        assert_eq!(reply.encoded_len(), reply.to_bytes().len());
        assert_eq!(reply, as_array);
        assert_eq!(reply.into_items(), Some(as_array.into_items().unwrap()));
        let empty = Reply::Bulks(Bulks::for_items(Vec::<Vec<u8>>::new()).unwrap());
        assert_eq!(empty.to_bytes(), b"*0\r\n");
    }

    #[test]
    fn a_shared_value_is_a_bulk_string() {
        let value = crate::store::Value::new(b"a\r\nb".to_vec());
        let reply = Reply::Shared(value.clone());
        assert_eq!(reply, Reply::bulk(&b"a\r\nb"[..]));
        assert_eq!(reply.encoded_len(), reply.to_bytes().len());
        assert_eq!(crate::store::Value::strong_count(&value), 2, "not copied");
    }
}
