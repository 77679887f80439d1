//! Values between Redis and Lua, as Redis 7.0 converts them.
//!
//! A command's reply reaches Lua as RESP2 would carry it to a client
//! (integer: number; bulk string: string; null: `false`; array: table;
//! status: `{ok = ...}`; error: `{err = ...}`), so every reply shape kvstore
//! has converts the way its RESP2 encoding reads. A script's result goes back
//! the other way: string: bulk; number: integer (truncated); `true`: 1;
//! `false` and `nil`: null; a table with `err` or `ok`: error or status; any
//! other table: an array of its items up to the first `nil`.

use alloc::string::String;
use alloc::vec::Vec;

use faultline_lua::state::{Kind, Stack, StackError};

use crate::resp::{Protocol, Reply};

/// Nested tables a script's result may have: deeper (or a table that holds
/// itself) answers an error rather than exhaust the stack.
const DEEPEST: usize = 500;

/// Pushes `reply` as a Lua value.
pub fn push_reply(s: &mut Stack<'_>, reply: &Reply) -> Result<(), StackError> {
    let bytes = reply.to_bytes_as(Protocol::Resp2);
    let mut rest = bytes.as_slice();
    push_resp2(s, &mut rest, 0)
}

/// Pushes the RESP2 value at the start of `rest` and moves past it.
fn push_resp2(s: &mut Stack<'_>, rest: &mut &[u8], depth: usize) -> Result<(), StackError> {
    let (kind, line) = take_line(rest);
    match kind {
        b'+' | b'-' => {
            s.push_table(0, 1)?;
            s.push_bytes(line)?;
            s.set_field(-2, if kind == b'+' { b"ok" } else { b"err" })
        }
        b':' => s.push_number(parse_int(line) as f64),
        b'$' => match usize::try_from(parse_int(line)) {
            Ok(len) if len <= rest.len() => {
                let (data, after) = rest.split_at(len);
                *rest = after.get(2..).unwrap_or_default();
                s.push_bytes(data)
            }
            _ => s.push_bool(false),
        },
        b'*' => match usize::try_from(parse_int(line)) {
            Ok(n) if depth < DEEPEST => {
                s.push_table(n.min(rest.len()), 0)?;
                for i in 1..=n {
                    push_resp2(s, rest, depth + 1)?;
                    s.set_index(-2, i)?;
                }
                Ok(())
            }
            Ok(_) => Err(StackError::Full),
            Err(_) => s.push_bool(false),
        },
        _ => s.push_bool(false),
    }
}

/// The type byte and the rest of the line at the start of `rest`, which
/// moves past the line.
fn take_line<'a>(rest: &mut &'a [u8]) -> (u8, &'a [u8]) {
    let all: &'a [u8] = rest;
    let end = all
        .windows(2)
        .position(|w| w == b"\r\n")
        .unwrap_or(all.len());
    *rest = all.get(end + 2..).unwrap_or_default();
    match all.first() {
        Some(&kind) => (kind, &all[1..end]),
        None => (0, &[]),
    }
}

fn parse_int(line: &[u8]) -> i64 {
    crate::num::parse_i64(line).unwrap_or(-1)
}

/// The reply a script's value at `idx` stands for.
/// A table nested too deep (or holding itself) makes the whole reply
/// Redis's error.
pub fn to_reply(s: &mut Stack<'_>, idx: i32) -> Reply {
    let top = s.top();
    let reply = value_reply(s, idx, 0).unwrap_or_else(|too_deep| too_deep);
    s.pop(s.top() - top);
    reply
}

fn value_reply(s: &mut Stack<'_>, idx: i32, depth: usize) -> Result<Reply, Reply> {
    Ok(match s.kind(idx) {
        Kind::String => Reply::Bulk(s.bytes(idx)),
        Kind::Number => Reply::Integer(to_integer(s.number(idx).unwrap_or(0.0))),
        Kind::Boolean if s.truthy(idx) => Reply::Integer(1),
        Kind::Table if depth >= DEEPEST => return Err(Reply::error("ERR reached lua stack limit")),
        Kind::Table => table_reply(s, idx, depth)?,
        _ => Reply::Bulk(None),
    })
}

/// A Lua number as Redis's integer reply: truncated toward zero, as C
/// converts; a number out of `i64`'s range (or NaN) gives `i64::MIN`, as
/// that conversion does on x86-64, where the Redis kvstore is compared
/// with runs.
pub fn to_integer(n: f64) -> i64 {
    const BOUND: f64 = 9_223_372_036_854_775_808.0;
    if (-BOUND..BOUND).contains(&n) {
        n as i64
    } else {
        i64::MIN
    }
}

/// A table: an error or status if it has an `err` or `ok` string, else an
/// array.
fn table_reply(s: &mut Stack<'_>, idx: i32, depth: usize) -> Result<Reply, Reply> {
    let top = s.top();
    let t = if idx < 0 { top + 1 + idx } else { idx };
    if let Some(text) = string_field(s, t, b"err") {
        return Ok(Reply::Error(one_line(&text)));
    }
    if let Some(text) = string_field(s, t, b"ok") {
        return Ok(Reply::Simple(one_line(&text)));
    }
    let mut items = Vec::new();
    for i in 1.. {
        match s.get_index(t, i) {
            Ok(Kind::Nil) | Err(_) => {
                s.pop(s.top() - top);
                break;
            }
            Ok(_) => {
                let item = value_reply(s, -1, depth + 1);
                s.pop(s.top() - top);
                items.push(item?);
            }
        }
    }
    Ok(Reply::Array(Some(items)))
}

/// The field `name` of the table at `t` when it is a string.
fn string_field(s: &mut Stack<'_>, t: i32, name: &[u8]) -> Option<Vec<u8>> {
    let kind = s.get_field(t, name).ok();
    let text = (kind == Some(Kind::String)).then(|| s.bytes(-1)).flatten();
    if kind.is_some() {
        s.pop(1);
    }
    text
}

/// A status or error text on one line, as a reply must be.
pub fn one_line(text: &[u8]) -> String {
    String::from_utf8_lossy(text).replace(['\r', '\n'], " ")
}
