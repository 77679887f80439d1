//! Protocol errors: the request stream is malformed and cannot be resynced.

use core::fmt;

use alloc::format;

use super::Reply;

/// Why a request stream was rejected. Redis answers these with
/// `-ERR Protocol error: ...` and closes the connection; the server should do
/// the same (see [`ProtocolError::to_reply`]). The `Display` text is Redis's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProtocolError {
    /// The `*<count>` header is not a number or exceeds the element limit.
    InvalidMultibulkLength,
    /// An array element does not start with `$`; carries the byte found.
    ExpectedDollar(u8),
    /// A `$<len>` header is not a number, negative, or over the bulk limit.
    InvalidBulkLength,
    /// An inline request line is longer than the inline limit.
    TooBigInlineRequest,
    /// A `*<count>` header line is longer than the inline limit.
    TooBigMultibulkCount,
    /// A `$<len>` header line is longer than the inline limit.
    TooBigBulkCount,
    /// An inline request has an unterminated quote, or a closing quote
    /// followed by something other than a space.
    UnbalancedQuotes,
    /// The request being received would hold more than
    /// `client-query-buffer-limit` bytes: the client is closed.
    QueryBufferLimit,
    /// Memory for an announced argument could not be had: the client is
    /// closed, the server goes on.
    OutOfMemory,
}

impl ProtocolError {
    /// The error reply to send before closing the connection.
    pub fn to_reply(self) -> Reply {
        match self {
            Self::QueryBufferLimit => Reply::error(
                "ERR query buffer limit reached (client-query-buffer-limit); closing the connection",
            ),
            Self::OutOfMemory => Reply::error(
                "OOM not enough memory to receive this request; closing the connection",
            ),
            _ => Reply::Error(format!("ERR {self}")),
        }
    }
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Protocol error: ")?;
        match self {
            Self::InvalidMultibulkLength => f.write_str("invalid multibulk length"),
            Self::ExpectedDollar(got) => write!(f, "expected '$', got '{}'", char::from(*got)),
            Self::InvalidBulkLength => f.write_str("invalid bulk length"),
            Self::TooBigInlineRequest => f.write_str("too big inline request"),
            Self::TooBigMultibulkCount => f.write_str("too big mbulk count string"),
            Self::TooBigBulkCount => f.write_str("too big bulk count string"),
            Self::UnbalancedQuotes => f.write_str("unbalanced quotes in request"),
            Self::QueryBufferLimit => f.write_str("query buffer limit reached"),
            Self::OutOfMemory => f.write_str("out of memory for the request"),
        }
    }
}
