//! The incremental request parser.
//!
//! Bytes arrive from the network in whatever pieces TCP delivers; the parser
//! buffers them and hands out whole commands. A half-received array is kept
//! as parsed-so-far state, so a command with many or large arguments is not
//! re-parsed from the start on every read.

use alloc::vec::Vec;

use super::inline::split_args;
use super::ProtocolError;
use crate::num::parse_i64;
use crate::Args;

/// Bounds on what one request may claim, so a client cannot make the server
/// allocate without limit. The defaults are Redis's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Longest bulk string accepted (`proto-max-bulk-len`, 512 MiB).
    pub max_bulk_len: u64,
    /// Most elements in one request array (1024 * 1024).
    pub max_array_len: u64,
    /// Longest inline request line, and longest `*`/`$` header line (64 KiB).
    pub max_inline_len: usize,
    /// Most bytes one request may hold while it is received
    /// (`client-query-buffer-limit`, 1 GiB).
    pub max_query_buffer: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bulk_len: 512 * 1024 * 1024,
            max_array_len: 1024 * 1024,
            max_inline_len: 64 * 1024,
            max_query_buffer: 1 << 30,
        }
    }
}

/// An array request whose elements have not all arrived yet.
#[derive(Debug)]
struct Partial {
    remaining: usize,
    args: Args,
    /// Length of the bulk string whose `$<len>` header was consumed but
    /// whose body has not fully arrived.
    bulk_len: Option<usize>,
    /// A large body being received straight into its own memory (see
    /// [`RECEIVE_DIRECT`]).
    body: Option<Vec<u8>>,
    /// Bytes of `args` and `body` so far, for the query buffer limit.
    held: u64,
}

/// Bodies of this many bytes or more are copied from the input into their
/// own allocation, made once at the announced length as they arrive,
/// instead of piling up in the input buffer first: a 500 MiB value costs
/// 500 MiB once, and an allocation that fails is an error for this client.
pub const RECEIVE_DIRECT: usize = 64 * 1024;

/// Turns a byte stream into commands: [`feed`](Parser::feed) what was read,
/// then call [`next_command`](Parser::next_command) until it returns
/// `Ok(None)`.
///
/// ```
/// use kvstore::resp::Parser;
///
/// let mut parser = Parser::new();
/// parser.feed(b"*2\r\n$3\r\nGET\r\n$1");
/// assert_eq!(parser.next_command(), Ok(None)); // not complete yet
/// parser.feed(b"\r\nk\r\nPING\r\n");
/// assert_eq!(parser.next_command(), Ok(Some(vec![b"GET".to_vec(), b"k".to_vec()])));
/// assert_eq!(parser.next_command(), Ok(Some(vec![b"PING".to_vec()])));
/// assert_eq!(parser.next_command(), Ok(None));
/// ```
///
/// After a protocol error the stream cannot be trusted: the parser keeps
/// returning that error, and the server should reply with
/// [`ProtocolError::to_reply`] and close.
#[derive(Debug)]
pub struct Parser {
    buf: Vec<u8>,
    pos: usize,
    limits: Limits,
    partial: Option<Partial>,
    failed: Option<ProtocolError>,
}

impl Default for Parser {
    fn default() -> Self {
        Self::new()
    }
}

impl Parser {
    /// A parser with Redis's default [`Limits`].
    pub fn new() -> Self {
        Self::with_limits(Limits::default())
    }

    /// A parser with custom limits (e.g. `proto-max-bulk-len` from config).
    pub fn with_limits(limits: Limits) -> Self {
        Parser {
            buf: Vec::new(),
            pos: 0,
            limits,
            partial: None,
            failed: None,
        }
    }

    /// Follows new limits (`CONFIG SET proto-max-bulk-len` and
    /// `client-query-buffer-limit` apply to connections already open).
    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    /// Appends bytes received from the client.
    pub fn feed(&mut self, bytes: &[u8]) {
        if self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        } else if self.pos > 0 && self.pos >= self.buf.len() / 2 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// Bytes received but not yet returned as part of a command (those
    /// of arguments received in full, or straight into their own memory,
    /// included); lets the server see a client's input memory.
    pub fn buffered(&self) -> usize {
        let held = self.partial.as_ref().map_or(0, |p| {
            let args: usize = p.args.iter().map(Vec::len).sum();
            args + p.body.as_ref().map_or(0, Vec::capacity)
        });
        self.buf.len() - self.pos + held
    }

    /// The next complete command, `Ok(None)` if more bytes are needed, or the
    /// protocol error that ends this connection. Empty requests (`*0`, a
    /// blank inline line) are skipped, as Redis does.
    pub fn next_command(&mut self) -> Result<Option<Args>, ProtocolError> {
        if let Some(err) = self.failed {
            return Err(err);
        }
        let result = self.parse();
        if let Err(err) = result {
            self.failed = Some(err);
        }
        result
    }

    fn parse(&mut self) -> Result<Option<Args>, ProtocolError> {
        loop {
            if self.partial.is_none() {
                let Some(&first) = self.buf.get(self.pos) else {
                    return Ok(None);
                };
                if first != b'*' {
                    match self.inline()? {
                        Some(args) if args.is_empty() => continue,
                        other => return Ok(other),
                    }
                }
                match self.array_header()? {
                    None => return Ok(None),
                    Some(0) => continue,
                    Some(count) => {
                        self.partial = Some(Partial {
                            remaining: count,
                            args: Vec::with_capacity(count.min(1024)),
                            bulk_len: None,
                            body: None,
                            held: 0,
                        })
                    }
                }
            }
            return self.array_elements();
        }
    }

    /// Parses one inline line; `Some(empty)` for a blank line.
    fn inline(&mut self) -> Result<Option<Args>, ProtocolError> {
        let rest = &self.buf[self.pos..];
        let Some(newline) = rest.iter().position(|&b| b == b'\n') else {
            // A '\r' at the end may be the line's terminator: not counted,
            // so a line at the limit is accepted however it is split.
            let pending = rest.strip_suffix(b"\r").unwrap_or(rest);
            if pending.len() > self.limits.max_inline_len {
                return Err(ProtocolError::TooBigInlineRequest);
            }
            return Ok(None);
        };
        let mut line = &rest[..newline];
        if let [head @ .., b'\r'] = line {
            line = head;
        }
        if line.len() > self.limits.max_inline_len {
            return Err(ProtocolError::TooBigInlineRequest);
        }
        let args = split_args(line).ok_or(ProtocolError::UnbalancedQuotes)?;
        self.pos += newline + 1;
        Ok(Some(args))
    }

    /// Finds a `\r`-terminated header line at the read position whose `\n`
    /// has also arrived; returns where the text between the type byte and
    /// `\r` starts and ends.
    fn header_line(&self, too_big: ProtocolError) -> Result<Option<(usize, usize)>, ProtocolError> {
        let rest = &self.buf[self.pos..];
        match rest.iter().position(|&b| b == b'\r') {
            None if rest.len() > self.limits.max_inline_len => Err(too_big),
            None => Ok(None),
            Some(cr) if cr > self.limits.max_inline_len => Err(too_big),
            // Like Redis, require the byte after '\r' but do not inspect it.
            Some(cr) if cr + 1 >= rest.len() => Ok(None),
            Some(cr) => Ok(Some((self.pos + 1, self.pos + cr))),
        }
    }

    /// Parses `*<count>\r\n`; a count of zero or less means "no command".
    fn array_header(&mut self) -> Result<Option<usize>, ProtocolError> {
        let Some((start, end)) = self.header_line(ProtocolError::TooBigMultibulkCount)? else {
            return Ok(None);
        };
        let count =
            parse_i64(&self.buf[start..end]).ok_or(ProtocolError::InvalidMultibulkLength)?;
        if count > i64::from(i32::MAX) || (count > 0 && count as u64 > self.limits.max_array_len) {
            return Err(ProtocolError::InvalidMultibulkLength);
        }
        self.pos = end + 2;
        Ok(Some(usize::try_from(count).unwrap_or(0)))
    }

    /// Reads as many `$<len>\r\n<bytes>\r\n` elements as have arrived.
    fn array_elements(&mut self) -> Result<Option<Args>, ProtocolError> {
        loop {
            let Some(partial) = self.partial.as_ref() else {
                return Ok(None);
            };
            if partial.remaining == 0 {
                return Ok(self.partial.take().map(|p| p.args));
            }
            let len = match partial.bulk_len {
                Some(len) => len,
                None => {
                    let Some(len) = self.bulk_header()? else {
                        return Ok(None);
                    };
                    len
                }
            };
            let partial = self.partial.as_mut().expect("checked above");
            if partial.bulk_len.is_none() {
                partial.bulk_len = Some(len);
                partial.held = partial.held.saturating_add(len as u64);
                if partial.held > self.limits.max_query_buffer {
                    return Err(ProtocolError::QueryBufferLimit);
                }
                if len >= RECEIVE_DIRECT {
                    let mut body = Vec::new();
                    body.try_reserve_exact(len)
                        .map_err(|_| ProtocolError::OutOfMemory)?;
                    partial.body = Some(body);
                }
            }
            if let Some(body) = partial.body.as_mut() {
                let take = (len - body.len()).min(self.buf.len() - self.pos);
                body.extend_from_slice(&self.buf[self.pos..self.pos + take]);
                self.pos += take;
                if body.len() < len {
                    return Ok(None);
                }
            }
            // The body is followed by two bytes Redis skips without checking.
            let body_in_buffer = if partial.body.is_some() { 0 } else { len };
            if self.buf.len() - self.pos < body_in_buffer + 2 {
                return Ok(None);
            }
            let arg = match partial.body.take() {
                Some(body) => body,
                None => self.buf[self.pos..self.pos + len].to_vec(),
            };
            partial.args.push(arg);
            partial.remaining -= 1;
            partial.bulk_len = None;
            self.pos += body_in_buffer + 2;
        }
    }

    /// Parses `$<len>\r\n` at the read position.
    fn bulk_header(&mut self) -> Result<Option<usize>, ProtocolError> {
        let Some((start, end)) = self.header_line(ProtocolError::TooBigBulkCount)? else {
            return Ok(None);
        };
        let kind = self.buf[self.pos];
        if kind != b'$' {
            return Err(ProtocolError::ExpectedDollar(kind));
        }
        let len = parse_i64(&self.buf[start..end])
            .and_then(|len| u64::try_from(len).ok())
            .filter(|&len| len <= self.limits.max_bulk_len)
            .and_then(|len| usize::try_from(len).ok())
            .ok_or(ProtocolError::InvalidBulkLength)?;
        self.pos = end + 2;
        Ok(Some(len))
    }
}

/// Decodes one complete, strictly formed RESP array of bulk strings that
/// spans all of `bytes` (every `\r\n` checked, nothing trailing). The
/// append-only log stores commands this way; anything else is corruption.
pub fn decode_command(bytes: &[u8]) -> Option<Args> {
    let mut rest = bytes;
    let count = header(&mut rest, b'*')?;
    let mut args = Vec::with_capacity(count.min(1024));
    for _ in 0..count {
        let len = header(&mut rest, b'$')?;
        if rest.len() < len.checked_add(2)? || &rest[len..len + 2] != b"\r\n" {
            return None;
        }
        args.push(rest[..len].to_vec());
        rest = &rest[len + 2..];
    }
    (rest.is_empty() && count > 0).then_some(args)
}

/// Reads `<kind><non-negative number>\r\n` from the front of `rest`.
fn header(rest: &mut &[u8], kind: u8) -> Option<usize> {
    let (&first, tail) = rest.split_first()?;
    if first != kind {
        return None;
    }
    let cr = tail.iter().position(|&b| b == b'\r')?;
    if tail.get(cr + 1) != Some(&b'\n') {
        return None;
    }
    let value = usize::try_from(parse_i64(&tail[..cr])?).ok()?;
    *rest = &tail[cr + 2..];
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    fn args(list: &[&[u8]]) -> Args {
        list.iter().map(|a| a.to_vec()).collect()
    }

    fn parse_all(input: &[u8]) -> Result<Vec<Args>, ProtocolError> {
        let mut parser = Parser::new();
        parser.feed(input);
        let mut out = Vec::new();
        while let Some(cmd) = parser.next_command()? {
            out.push(cmd);
        }
        Ok(out)
    }

    fn error_text(input: &[u8]) -> alloc::string::String {
        parse_all(input).unwrap_err().to_string()
    }

    #[test]
    fn array_of_bulk_strings() {
        assert_eq!(
            parse_all(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n"),
            Ok(vec![args(&[b"SET", b"k", b"hello"])])
        );
    }

    #[test]
    fn bulk_strings_are_binary_safe() {
        assert_eq!(
            parse_all(b"*2\r\n$4\r\na\r\nb\r\n$0\r\n\r\n"),
            Ok(vec![args(&[b"a\r\nb", b""])])
        );
        assert_eq!(
            parse_all(b"*1\r\n$3\r\n\x00\xff*\r\n"),
            Ok(vec![args(&[b"\x00\xff*"])])
        );
    }

    #[test]
    fn pipelined_commands_in_one_buffer() {
        let input = b"*1\r\n$4\r\nPING\r\nECHO hi\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\nQUIT\n";
        assert_eq!(
            parse_all(input),
            Ok(vec![
                args(&[b"PING"]),
                args(&[b"ECHO", b"hi"]),
                args(&[b"GET", b"k"]),
                args(&[b"QUIT"]),
            ])
        );
    }

    #[test]
    fn inline_commands_with_quotes() {
        assert_eq!(
            parse_all(b"SET k \"a b\"\r\nSET k 'c d'\n"),
            Ok(vec![
                args(&[b"SET", b"k", b"a b"]),
                args(&[b"SET", b"k", b"c d"])
            ])
        );
    }

    #[test]
    fn empty_requests_are_skipped() {
        assert_eq!(
            parse_all(b"\r\n   \r\n*0\r\n*-1\r\nPING\r\n"),
            Ok(vec![args(&[b"PING"])])
        );
    }

    #[test]
    fn partial_input_waits() {
        let full = b"*2\r\n$3\r\nGET\r\n$10\r\n0123456789\r\n";
        for cut in 0..full.len() {
            let mut parser = Parser::new();
            parser.feed(&full[..cut]);
            assert_eq!(parser.next_command(), Ok(None), "cut at {cut}");
            parser.feed(&full[cut..]);
            assert_eq!(
                parser.next_command(),
                Ok(Some(args(&[b"GET", b"0123456789"])))
            );
        }
    }

    #[test]
    fn every_protocol_error_text() {
        assert_eq!(
            error_text(b"*x\r\n"),
            "Protocol error: invalid multibulk length"
        );
        assert_eq!(
            error_text(b"*2147483648\r\n"),
            "Protocol error: invalid multibulk length"
        );
        assert_eq!(
            error_text(b"*1048577\r\n"),
            "Protocol error: invalid multibulk length"
        );
        assert_eq!(
            error_text(b"*1\r\nx3\r\nfoo\r\n"),
            "Protocol error: expected '$', got 'x'"
        );
        assert_eq!(
            error_text(b"*1\r\n$-1\r\n"),
            "Protocol error: invalid bulk length"
        );
        assert_eq!(
            error_text(b"*1\r\n$abc\r\n"),
            "Protocol error: invalid bulk length"
        );
        assert_eq!(
            error_text(b"*1\r\n$536870913\r\n"),
            "Protocol error: invalid bulk length"
        );
        assert_eq!(
            error_text(&[b'A'; 64 * 1024 + 1]),
            "Protocol error: too big inline request"
        );
        assert_eq!(
            error_text(b"SET k \"unterminated\r\n"),
            "Protocol error: unbalanced quotes in request"
        );
        let mut long_count = b"*".to_vec();
        long_count.resize(64 * 1024 + 2, b'1');
        assert_eq!(
            error_text(&long_count),
            "Protocol error: too big mbulk count string"
        );
        let mut long_len = b"*1\r\n$".to_vec();
        long_len.resize(64 * 1024 + 8, b'1');
        assert_eq!(
            error_text(&long_len),
            "Protocol error: too big bulk count string"
        );
    }

    #[test]
    fn an_inline_line_at_the_limit_parses_however_split() {
        // Found by fuzzing (resp_parser): with the line's '\r' received
        // but not its '\n', the line was counted one byte too long.
        let limits = Limits {
            max_inline_len: 8,
            ..Limits::default()
        };
        let mut parser = Parser::with_limits(limits);
        parser.feed(b"GET 1234\r");
        assert_eq!(parser.next_command(), Ok(None));
        parser.feed(b"\n");
        assert_eq!(parser.next_command(), Ok(Some(args(&[b"GET", b"1234"]))));
        let mut parser = Parser::with_limits(limits);
        parser.feed(b"GET 12345\r");
        assert_eq!(
            parser.next_command(),
            Err(ProtocolError::TooBigInlineRequest)
        );
    }

    #[test]
    fn errors_become_err_replies_and_stick() {
        let mut parser = Parser::new();
        parser.feed(b"*1\r\n$x\r\nPING\r\n");
        let err = parser.next_command().unwrap_err();
        assert_eq!(
            err.to_reply().to_bytes(),
            b"-ERR Protocol error: invalid bulk length\r\n"
        );
        assert_eq!(parser.next_command(), Err(err));
    }

    #[test]
    fn limits_are_configurable() {
        let mut parser = Parser::with_limits(Limits {
            max_bulk_len: 4,
            max_array_len: 2,
            max_inline_len: 8,
            max_query_buffer: 1 << 20,
        });
        parser.feed(b"*1\r\n$5\r\n");
        assert_eq!(parser.next_command(), Err(ProtocolError::InvalidBulkLength));
        let mut parser = Parser::with_limits(Limits {
            max_array_len: 2,
            ..Limits::default()
        });
        parser.feed(b"*3\r\n");
        assert_eq!(
            parser.next_command(),
            Err(ProtocolError::InvalidMultibulkLength)
        );
        let mut parser = Parser::with_limits(Limits {
            max_inline_len: 8,
            ..Limits::default()
        });
        parser.feed(b"GET 12345\r\n");
        assert_eq!(
            parser.next_command(),
            Err(ProtocolError::TooBigInlineRequest)
        );
    }

    #[test]
    fn buffer_is_reclaimed() {
        let mut parser = Parser::new();
        for _ in 0..1000 {
            parser.feed(b"PING\r\n*1\r\n$4\r\nPI");
            while parser.next_command().unwrap().is_some() {}
            parser.feed(b"NG\r\n");
            while parser.next_command().unwrap().is_some() {}
        }
        assert_eq!(parser.buffered(), 0);
        assert!(parser.buf.capacity() < 1024);
    }

    #[test]
    fn strict_decoding_for_the_log() {
        let ok = b"*2\r\n$3\r\nDEL\r\n$1\r\nk\r\n";
        assert_eq!(decode_command(ok), Some(args(&[b"DEL", b"k"])));
        assert_eq!(decode_command(&ok[..ok.len() - 1]), None);
        assert_eq!(decode_command(b"*2\r\n$3\r\nDEL\r\n$1\r\nkXX"), None);
        assert_eq!(decode_command(b"*1\r\n$3\r\nDEL\r\nextra"), None);
        assert_eq!(decode_command(b"*0\r\n"), None);
        assert_eq!(decode_command(b"PING\r\n"), None);
    }

    #[test]
    fn a_large_body_is_received_into_its_own_memory_piece_by_piece() {
        let mut parser = Parser::new();
        let value: Vec<u8> = (0..RECEIVE_DIRECT * 3).map(|i| (i % 251) as u8).collect();
        let mut request = Vec::new();
        crate::resp::encode_command(&[&b"SET"[..], b"k", &value], &mut request);
        let (head, body) = request.split_at(30);
        parser.feed(head);
        assert_eq!(parser.next_command(), Ok(None));
        for chunk in body.chunks(4096) {
            assert!(parser.buf.len() < 2 * 4096, "the input buffer stays small");
            parser.feed(chunk);
            if let Some(args) = parser.next_command().unwrap() {
                assert_eq!(args[2], value);
                assert_eq!(args[2].capacity(), value.len(), "allocated once, exactly");
                return;
            }
            assert_eq!(
                parser.buffered(),
                parser.buf.len() - parser.pos + 4 + value.len()
            );
        }
        panic!("the command never completed");
    }

    #[test]
    fn a_request_over_the_query_buffer_limit_ends_the_connection() {
        let mut parser = Parser::with_limits(Limits {
            max_query_buffer: 100_000,
            ..Limits::default()
        });
        parser.feed(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100000\r\n");
        assert_eq!(parser.next_command(), Err(ProtocolError::QueryBufferLimit));
        let reply = ProtocolError::QueryBufferLimit.to_reply();
        assert!(
            matches!(reply, crate::resp::Reply::Error(e) if e.contains("client-query-buffer-limit"))
        );
    }

    #[test]
    fn memory_that_cannot_be_had_is_an_error_not_a_panic() {
        let mut parser = Parser::with_limits(Limits {
            max_bulk_len: u64::MAX,
            max_query_buffer: u64::MAX,
            ..Limits::default()
        });
        parser.feed(format!("*1\r\n${}\r\n", isize::MAX as u64).as_bytes());
        assert_eq!(parser.next_command(), Err(ProtocolError::OutOfMemory));
    }
}
