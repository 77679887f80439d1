//! RESP, the Redis wire protocol: requests in, replies out (RESP2, or
//! RESP3 for a connection that switched with `HELLO 3`).
//!
//! Requests arrive as arrays of bulk strings (`*2\r\n$3\r\nGET\r\n$1\r\nk\r\n`)
//! or, from humans with `telnet`, as inline lines (`GET k\r\n`). The
//! [`Parser`] turns a byte stream that arrives in arbitrary pieces into whole
//! commands; a [`Reply`] turns a result back into bytes.

mod error;
mod inline;
mod parser;
mod reply;

#[cfg(test)]
mod proptest;

pub use error::ProtocolError;
pub use inline::split_args;
pub use parser::{decode_command, Limits, Parser};
pub(crate) use reply::bulk_header;
pub use reply::{encode_command, Bulks, Protocol, Reply};
