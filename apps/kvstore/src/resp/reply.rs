//! Replies and their encodings: RESP2, and RESP3 for connections that
//! asked for it with `HELLO 3`.
//!
//! A command builds one [`Reply`] whatever its client speaks; the types
//! RESP3 added (maps, sets, doubles, ...) are variants that
//! [`Reply::encode_as`] writes in RESP3 form for a RESP3 connection and in
//! their RESP2 stand-in (an array, a bulk string, an integer) otherwise,
//! as Redis does.

use alloc::string::String;
use alloc::vec::Vec;

/// The protocol a connection speaks: RESP2 until it sends `HELLO 3`,
/// which a `HELLO 2` undoes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Protocol {
    /// RESP2: the protocol every client starts with.
    #[default]
    Resp2,
    /// RESP3: typed replies (maps, sets, doubles, nulls) and pub/sub
    /// messages as out-of-band pushes.
    Resp3,
}

impl Protocol {
    /// The version number `HELLO` takes and reports (2 or 3).
    pub fn version(self) -> i64 {
        match self {
            Protocol::Resp2 => 2,
            Protocol::Resp3 => 3,
        }
    }
}

/// One reply to one command: RESP2's five shapes, and RESP3's types, each
/// of which falls back to a RESP2 shape for a RESP2 connection.
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
    /// A map (`HGETALL`, `CONFIG GET`): keys and values alternate, an odd
    /// last item is dropped. RESP3 `%n`; in RESP2 the flat array.
    Map(Vec<Reply>),
    /// A set of distinct items (`SMEMBERS`, `SINTER`). RESP3 `~n`; in
    /// RESP2 an array.
    Set(Vec<Reply>),
    /// Pairs (a member and its score, a field and its value) that RESP2
    /// sends as one flat array and RESP3 as an array of two-item arrays
    /// (`ZRANGE ... WITHSCORES`, `HRANDFIELD ... WITHVALUES`); an odd
    /// last item is dropped.
    Pairs(Vec<Reply>),
    /// Keys each with a value (`XREAD`'s streams and their entries): a
    /// map in RESP3, and in RESP2 an array of two-item arrays (not the
    /// flat array a [`Reply::Map`] becomes); an odd last item is dropped.
    Keyed(Vec<Reply>),
    /// A floating-point number, already formatted as Redis formats it
    /// (`1.5`, `inf`, `1e+20`): RESP3 `,1.5`; in RESP2 a bulk string.
    Double(Vec<u8>),
    /// RESP3 `#t`/`#f`; in RESP2 the integer 1 or 0.
    Boolean(bool),
    /// An integer too large for 64 bits, as its decimal digits: RESP3
    /// `(digits`; in RESP2 a bulk string.
    BigNumber(String),
    /// Text meant for a human (`INFO`, `CLIENT INFO`): RESP3 `=` with the
    /// format `txt`; in RESP2 a bulk string.
    Verbatim(Vec<u8>),
    /// An out-of-band message (pub/sub confirmations and messages): RESP3
    /// `>n`; in RESP2 an array.
    Push(Vec<Reply>),
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

/// The items of an array reply already in RESP, one after the other
/// (`$3\r\nfoo\r\n`...), and how many: built without a buffer per item.
/// Items are bulk strings, or arrays of them ([`push_array`]: a stream
/// entry is its ID and an array of fields and values).
///
/// [`push_array`]: Bulks::push_array
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

    /// Room for `bytes` of encoded items, reserved at once (items sized
    /// with [`bulk_len`](Bulks::bulk_len) and
    /// [`array_len`](Bulks::array_len)): `None` if the memory cannot be had.
    pub fn with_room(bytes: usize) -> Option<Bulks> {
        let mut encoded = Vec::new();
        encoded.try_reserve_exact(bytes).ok()?;
        Some(Bulks { count: 0, encoded })
    }

    /// Bytes a bulk string of `len` bytes takes encoded.
    pub fn bulk_len(len: usize) -> usize {
        bulk_encoded_len(len)
    }

    /// Bytes the header of an array of `len` elements takes.
    pub fn array_len(len: usize) -> usize {
        header_len(len)
    }

    /// How many items were added.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Adds `item` (within the room reserved, no allocation).
    pub fn push(&mut self, item: &[u8]) {
        self.push_element(item);
        self.count += 1;
    }

    /// Adds an item that is an array of `len` elements; they follow, each
    /// added with [`push_element`](Bulks::push_element) (or
    /// [`push_element_with`](Bulks::push_element_with)).
    pub fn push_array(&mut self, len: usize) {
        array_header(&mut self.encoded, len);
        self.count += 1;
    }

    /// Adds a bulk string element of an array item (see
    /// [`push_array`](Bulks::push_array)): not an item of its own.
    pub fn push_element(&mut self, element: &[u8]) {
        bulk_header(&mut self.encoded, element.len());
        self.encoded.extend_from_slice(element);
        self.encoded.extend_from_slice(b"\r\n");
    }

    /// Adds the header of an array nested in an array item (a stream
    /// entry's fields); its `len` elements follow.
    pub fn push_inner_array(&mut self, len: usize) {
        array_header(&mut self.encoded, len);
    }

    /// Adds an element of `len` bytes that `write` appends, without a
    /// buffer of its own (a stream ID's text).
    pub fn push_element_with(&mut self, len: usize, write: impl FnOnce(&mut Vec<u8>)) {
        bulk_header(&mut self.encoded, len);
        let at = self.encoded.len();
        write(&mut self.encoded);
        debug_assert_eq!(self.encoded.len() - at, len, "the length announced");
        self.encoded.extend_from_slice(b"\r\n");
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

    /// A map from the names in `fields` (bulk strings) to their values, in
    /// order: the reports `XINFO`, `FUNCTION` and `LCS IDX` give.
    pub fn fields<const N: usize>(fields: [(&str, Reply); N]) -> Self {
        Reply::Map(
            fields
                .into_iter()
                .flat_map(|(name, value)| [Reply::bulk(name), value])
                .collect(),
        )
    }

    /// What a `HELP` subcommand answers: its text, a simple string a line.
    pub fn help(lines: &[&str]) -> Self {
        Reply::array(
            lines
                .iter()
                .map(|&line| Reply::Simple(line.into()))
                .collect(),
        )
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
        self.encode_as(Protocol::Resp2, out);
    }

    /// Appends the encoding in `protocol` to `out`: RESP3's types in their
    /// own form for [`Protocol::Resp3`], in their RESP2 stand-in otherwise.
    pub fn encode_as(&self, protocol: Protocol, out: &mut Vec<u8>) {
        let resp3 = protocol == Protocol::Resp3;
        match self {
            Reply::Simple(text) => line(out, b'+', text.as_bytes()),
            Reply::Error(text) => line(out, b'-', text.as_bytes()),
            Reply::Integer(n) => header(out, b':', *n),
            Reply::Bulk(None) | Reply::Array(None) if resp3 => out.extend_from_slice(b"_\r\n"),
            Reply::Bulk(None) => out.extend_from_slice(b"$-1\r\n"),
            Reply::Bulk(Some(bytes)) => string(out, b'$', bytes),
            Reply::Array(None) => out.extend_from_slice(b"*-1\r\n"),
            Reply::Array(Some(items)) => aggregate(out, b'*', items, protocol),
            Reply::Sequence(replies) => {
                for reply in replies {
                    reply.encode_as(protocol, out);
                }
            }
            Reply::Bulks(bulks) => {
                array_header(out, bulks.count);
                out.extend_from_slice(&bulks.encoded);
            }
            Reply::Shared(value) => string(out, b'$', value),
            Reply::Map(items) => {
                let pairs = items.len() / 2;
                match resp3 {
                    true => header(out, b'%', len_i64(pairs)),
                    false => array_header(out, pairs * 2),
                }
                for item in &items[..pairs * 2] {
                    item.encode_as(protocol, out);
                }
            }
            Reply::Set(items) => aggregate(out, if resp3 { b'~' } else { b'*' }, items, protocol),
            Reply::Push(items) => aggregate(out, if resp3 { b'>' } else { b'*' }, items, protocol),
            Reply::Pairs(items) => {
                let pairs = items.len() / 2;
                match resp3 {
                    true => array_header(out, pairs),
                    false => array_header(out, pairs * 2),
                }
                for pair in items.chunks_exact(2) {
                    if resp3 {
                        array_header(out, 2);
                    }
                    pair[0].encode_as(protocol, out);
                    pair[1].encode_as(protocol, out);
                }
            }
            Reply::Keyed(items) => {
                let pairs = items.len() / 2;
                match resp3 {
                    true => header(out, b'%', len_i64(pairs)),
                    false => array_header(out, pairs),
                }
                for pair in items.chunks_exact(2) {
                    if !resp3 {
                        array_header(out, 2);
                    }
                    pair[0].encode_as(protocol, out);
                    pair[1].encode_as(protocol, out);
                }
            }
            Reply::Double(text) if resp3 => line(out, b',', text),
            Reply::Double(text) => string(out, b'$', text),
            Reply::Boolean(b) if resp3 => {
                out.extend_from_slice(if *b { b"#t\r\n" } else { b"#f\r\n" })
            }
            Reply::Boolean(b) => header(out, b':', i64::from(*b)),
            Reply::BigNumber(digits) if resp3 => line(out, b'(', digits.as_bytes()),
            Reply::BigNumber(digits) => string(out, b'$', digits.as_bytes()),
            Reply::Verbatim(text) if resp3 => {
                header(out, b'=', len_i64(text.len().saturating_add(4)));
                out.extend_from_slice(b"txt:");
                out.extend_from_slice(text);
                out.extend_from_slice(b"\r\n");
            }
            Reply::Verbatim(text) => string(out, b'$', text),
        }
    }

    /// Bytes [`encode`](Reply::encode) appends.
    pub fn encoded_len(&self) -> usize {
        self.encoded_len_as(Protocol::Resp2)
    }

    /// Bytes [`encode_as`](Reply::encode_as) appends for `protocol`.
    pub fn encoded_len_as(&self, protocol: Protocol) -> usize {
        let resp3 = protocol == Protocol::Resp3;
        let header = header_len;
        let all =
            |items: &[Reply]| -> usize { items.iter().map(|i| i.encoded_len_as(protocol)).sum() };
        match self {
            Reply::Simple(text) | Reply::Error(text) => text.len() + 3,
            Reply::BigNumber(digits) if resp3 => digits.len() + 3,
            Reply::Double(text) if resp3 => text.len() + 3,
            Reply::Integer(n) => integer_len(*n),
            // `#t\r\n` or `:1\r\n`.
            Reply::Boolean(_) => 4,
            Reply::Bulk(None) | Reply::Array(None) if resp3 => 3,
            Reply::Bulk(None) | Reply::Array(None) => 5,
            Reply::Bulk(Some(bytes)) | Reply::Double(bytes) => bulk_encoded_len(bytes.len()),
            Reply::BigNumber(digits) => bulk_encoded_len(digits.len()),
            Reply::Verbatim(text) if resp3 => bulk_encoded_len(text.len() + 4),
            Reply::Verbatim(text) => bulk_encoded_len(text.len()),
            Reply::Array(Some(items)) | Reply::Set(items) | Reply::Push(items) => {
                header(items.len()) + all(items)
            }
            Reply::Map(items) => {
                let pairs = items.len() / 2;
                header(if resp3 { pairs } else { pairs * 2 }) + all(&items[..pairs * 2])
            }
            Reply::Pairs(items) => {
                let pairs = items.len() / 2;
                let nested = if resp3 { pairs * header(2) } else { 0 };
                header(if resp3 { pairs } else { pairs * 2 }) + nested + all(&items[..pairs * 2])
            }
            Reply::Keyed(items) => {
                let pairs = items.len() / 2;
                let nested = if resp3 { 0 } else { pairs * header(2) };
                header(pairs) + nested + all(&items[..pairs * 2])
            }
            Reply::Sequence(replies) => all(replies),
            Reply::Bulks(bulks) => header(bulks.count) + bulks.encoded.len(),
            Reply::Shared(value) => bulk_encoded_len(value.len()),
        }
    }

    /// The items of an array reply, [`Reply::Bulks`] of bulk strings
    /// decoded, or of a map, set, pairs or push (flat, as RESP2 sends
    /// them): for code that looks into replies (tests, mostly). `None` for
    /// another shape.
    pub fn into_items(self) -> Option<Vec<Reply>> {
        match self {
            Reply::Array(Some(items))
            | Reply::Map(items)
            | Reply::Set(items)
            | Reply::Pairs(items)
            | Reply::Keyed(items)
            | Reply::Push(items) => Some(items),
            Reply::Bulks(bulks) => {
                let mut items = Vec::with_capacity(bulks.count);
                let mut rest = bulks.encoded.as_slice();
                while let Some(line) = rest.iter().position(|&b| b == b'\n') {
                    if rest[0] != b'$' {
                        // Arrays among the items: not a flat array.
                        return None;
                    }
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
    pub fn encode_or_oom(&self, protocol: Protocol, out: &mut Vec<u8>) {
        if out.try_reserve(self.encoded_len_as(protocol)).is_ok() {
            self.encode_as(protocol, out);
        } else {
            Reply::error("OOM not enough memory for the reply").encode(out);
        }
    }

    /// The RESP2 encoding as a new buffer.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.to_bytes_as(Protocol::Resp2)
    }

    /// The encoding in `protocol` as a new buffer.
    pub fn to_bytes_as(&self, protocol: Protocol) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_as(protocol, &mut out);
        out
    }
}

fn len_i64(len: usize) -> i64 {
    i64::try_from(len).unwrap_or(i64::MAX)
}

/// Bytes of the line `:n\r\n`.
fn integer_len(n: i64) -> usize {
    3 + n.unsigned_abs().checked_ilog10().unwrap_or(0) as usize + 1 + usize::from(n < 0)
}

/// A length-prefixed string (`$len\r\nbytes\r\n`).
fn string(out: &mut Vec<u8>, kind: u8, bytes: &[u8]) {
    header(out, kind, len_i64(bytes.len()));
    out.extend_from_slice(bytes);
    out.extend_from_slice(b"\r\n");
}

/// An aggregate of `items` under the type byte `kind` (`*`, `~`, `>`).
fn aggregate(out: &mut Vec<u8>, kind: u8, items: &[Reply], protocol: Protocol) {
    header(out, kind, len_i64(items.len()));
    for item in items {
        item.encode_as(protocol, out);
    }
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

    /// One of each RESP3 type, nested too.
    fn resp3_replies() -> Vec<Reply> {
        vec![
            Reply::Map(vec![Reply::bulk("k"), Reply::Double(b"1.5".to_vec())]),
            Reply::Map(vec![Reply::bulk("odd")]),
            Reply::Set(vec![Reply::bulk("a"), Reply::nil()]),
            Reply::Pairs(vec![Reply::bulk("m"), Reply::Double(b"-inf".to_vec())]),
            Reply::Pairs(vec![Reply::bulk("odd")]),
            Reply::Double(b"3".to_vec()),
            Reply::Boolean(true),
            Reply::Boolean(false),
            Reply::BigNumber(String::from("1234567999999999999999999999999999999")),
            Reply::Verbatim(b"a\r\nb".to_vec()),
            Reply::Push(vec![Reply::bulk("message"), Reply::Array(None)]),
            Reply::array(vec![Reply::Set(Vec::new()), Reply::Map(Vec::new())]),
        ]
    }

    #[test]
    fn resp3_types_in_resp3() {
        let wire: Vec<Vec<u8>> = resp3_replies()
            .iter()
            .map(|r| r.to_bytes_as(Protocol::Resp3))
            .collect();
        let expected: [&[u8]; 12] = [
            b"%1\r\n$1\r\nk\r\n,1.5\r\n",
            b"%0\r\n",
            b"~2\r\n$1\r\na\r\n_\r\n",
            b"*1\r\n*2\r\n$1\r\nm\r\n,-inf\r\n",
            b"*0\r\n",
            b",3\r\n",
            b"#t\r\n",
            b"#f\r\n",
            b"(1234567999999999999999999999999999999\r\n",
            b"=8\r\ntxt:a\r\nb\r\n",
            b">2\r\n$7\r\nmessage\r\n_\r\n",
            b"*2\r\n~0\r\n%0\r\n",
        ];
        for (got, want) in wire.iter().zip(expected) {
            assert_eq!(String::from_utf8_lossy(got), String::from_utf8_lossy(want));
        }
    }

    #[test]
    fn resp3_types_fall_back_to_resp2_shapes() {
        let wire: Vec<Vec<u8>> = resp3_replies().iter().map(Reply::to_bytes).collect();
        let expected: [&[u8]; 12] = [
            b"*2\r\n$1\r\nk\r\n$3\r\n1.5\r\n",
            b"*0\r\n",
            b"*2\r\n$1\r\na\r\n$-1\r\n",
            b"*2\r\n$1\r\nm\r\n$4\r\n-inf\r\n",
            b"*0\r\n",
            b"$1\r\n3\r\n",
            b":1\r\n",
            b":0\r\n",
            b"$37\r\n1234567999999999999999999999999999999\r\n",
            b"$4\r\na\r\nb\r\n",
            b"*2\r\n$7\r\nmessage\r\n*-1\r\n",
            b"*2\r\n*0\r\n*0\r\n",
        ];
        for (got, want) in wire.iter().zip(expected) {
            assert_eq!(String::from_utf8_lossy(got), String::from_utf8_lossy(want));
        }
    }

    #[test]
    fn encoded_len_as_is_what_encode_as_writes() {
        let mut replies = resp3_replies();
        replies.extend([Reply::nil(), Reply::Array(None), Reply::Integer(-12)]);
        for reply in replies {
            for protocol in [Protocol::Resp2, Protocol::Resp3] {
                assert_eq!(
                    reply.encoded_len_as(protocol),
                    reply.to_bytes_as(protocol).len(),
                    "{reply:?} {protocol:?}"
                );
            }
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
    fn bulks_hold_arrays_of_bulk_strings_too() {
        // A stream entry: its ID, then its fields and values.
        let room = Bulks::array_len(2)
            + Bulks::bulk_len(3)
            + Bulks::array_len(2)
            + Bulks::bulk_len(1)
            + Bulks::bulk_len(2);
        let mut bulks = Bulks::with_room(room).unwrap();
        bulks.push_array(2);
        bulks.push_element_with(3, |out| out.extend_from_slice(b"1-0"));
        bulks.push_inner_array(2);
        bulks.push_element(b"f");
        bulks.push_element(b"vv");
        assert_eq!(bulks.encoded.len(), room, "exactly the room reserved");
        assert_eq!(bulks.count(), 1);
        let reply = Reply::Bulks(bulks);
        let as_arrays = Reply::array(vec![Reply::array(vec![
            Reply::bulk(&b"1-0"[..]),
            Reply::array(vec![Reply::bulk(&b"f"[..]), Reply::bulk(&b"vv"[..])]),
        ])]);
        assert_eq!(reply, as_arrays);
        assert_eq!(reply.encoded_len(), reply.to_bytes().len());
        assert_eq!(reply.into_items(), None, "not a flat array");
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
