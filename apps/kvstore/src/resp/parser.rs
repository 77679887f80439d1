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
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bulk_len: 512 * 1024 * 1024,
            max_array_len: 1024 * 1024,
            max_inline_len: 64 * 1024,
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
}

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

    /// Bytes received but not yet returned as part of a command; lets the
    /// server enforce a per-client input buffer limit.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.pos
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
            partial.bulk_len = Some(len);
            // The body is followed by two bytes Redis skips without checking.
            if self.buf.len() - self.pos < len.saturating_add(2) {
                return Ok(None);
            }
            partial
                .args
                .push(self.buf[self.pos..self.pos + len].to_vec());
            partial.remaining -= 1;
            partial.bulk_len = None;
            self.pos += len + 2;
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
}
