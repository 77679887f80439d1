//! Values between Redis and Lua, as Redis 7.0 converts them.
//!
//! A command's reply reaches Lua as RESP2 would carry it to a client
//! (integer: number; bulk string: string; null: `false`; array: table;
//! status: `{ok = ...}`; error: `{err = ...}`), so every reply shape kvstore
//! has converts the way its RESP2 encoding reads. A script's result goes back
//! the other way: string: bulk; number: integer (truncated); `true`: 1;
//! `false` and `nil`: null; a table with `err` or `ok`: error or status; any
//! other table: an array of its items up to the first `nil`.
//!
//! After `redis.setresp(3)` replies reach the script in RESP3's types too
//! (null: `nil`; boolean: boolean; double: `{double = n}`; map:
//! `{map = {...}}`; set: `{set = {member = true}}`; big number:
//! `{big_number = text}`; verbatim text: `{verbatim_string = {format =
//! 'txt', string = text}}`), and booleans go back as booleans. A script
//! may return the RESP3 shapes (`double`, `big_number`, `map`, `set`,
//! `verbatim_string` tables) whatever its version; a RESP2 client gets
//! their RESP2 form.

use alloc::string::String;
use alloc::vec::Vec;

use faultline_lua::state::{Kind, Stack, StackError};

use crate::resp::{Protocol, Reply};

/// Nested tables a script's result (or a reply to it) may have: deeper,
/// or a table that holds itself, answers an error. The conversion recurses
/// once per level on the guest's 256 KiB stack, which 64 levels fit with
/// room to spare (`image/tests/kvstore_scripts.rs` returns a table that
/// holds itself).
const DEEPEST: usize = 64;

/// Pushes `reply` as a Lua value, as RESP3 carries it if `resp3`.
pub fn push_reply(s: &mut Stack<'_>, reply: &Reply, resp3: bool) -> Result<(), StackError> {
    // The replies most commands give, pushed as they are: the same values
    // their encoding would give, without encoding and parsing it.
    match reply {
        Reply::Integer(n) => return s.push_number(*n as f64),
        Reply::Bulk(Some(bytes)) => return s.push_bytes(bytes),
        Reply::Shared(value) => return s.push_bytes(value),
        _ => {}
    }
    let protocol = if resp3 {
        Protocol::Resp3
    } else {
        Protocol::Resp2
    };
    let bytes = reply.to_bytes_as(protocol);
    let mut rest = bytes.as_slice();
    push_resp(s, &mut rest, 0)
}

/// Pushes the RESP value at the start of `rest` and moves past it.
fn push_resp(s: &mut Stack<'_>, rest: &mut &[u8], depth: usize) -> Result<(), StackError> {
    let (kind, line) = take_line(rest);
    if depth >= DEEPEST {
        return Err(StackError::Full);
    }
    match kind {
        b'_' => s.push_nil(),
        b'#' => s.push_bool(line == b"t"),
        b',' => {
            let text = core::str::from_utf8(line).unwrap_or("0");
            let n: f64 = text.parse().unwrap_or(0.0);
            wrapped(s, b"double", |s| s.push_number(n))
        }
        b'(' => wrapped(s, b"big_number", |s| s.push_bytes(line)),
        b'=' => {
            let body = bulk_body(rest, line);
            let (format, text) = match body.get(3) {
                Some(b':') => (&body[..3], &body[4..]),
                _ => (&b"txt"[..], body),
            };
            wrapped(s, b"verbatim_string", |s| {
                s.push_table(0, 2)?;
                s.push_bytes(format)?;
                s.set_field(-2, b"format")?;
                s.push_bytes(text)?;
                s.set_field(-2, b"string")
            })
        }
        b'%' | b'~' => {
            let n = usize::try_from(parse_int(line)).unwrap_or(0);
            let name: &[u8] = if kind == b'%' { b"map" } else { b"set" };
            wrapped(s, name, |s| {
                s.push_table(0, n.min(rest.len()))?;
                for _ in 0..n {
                    push_resp(s, rest, depth + 1)?;
                    if kind == b'%' {
                        push_resp(s, rest, depth + 1)?;
                    } else {
                        s.push_bool(true)?;
                    }
                    s.set_pair(-3)?;
                }
                Ok(())
            })
        }
        b'+' | b'-' => {
            s.push_table(0, 1)?;
            s.push_bytes(line)?;
            s.set_field(-2, if kind == b'+' { b"ok" } else { b"err" })
        }
        b':' => s.push_number(parse_int(line) as f64),
        b'$' => match usize::try_from(parse_int(line)) {
            Ok(_) => {
                let data = bulk_body(rest, line);
                s.push_bytes(data)
            }
            _ => s.push_bool(false),
        },
        b'*' | b'>' => match usize::try_from(parse_int(line)) {
            Ok(n) => {
                s.push_table(n.min(rest.len()), 0)?;
                for i in 1..=n {
                    push_resp(s, rest, depth + 1)?;
                    s.set_index(-2, i)?;
                }
                Ok(())
            }
            Err(_) => s.push_bool(false),
        },
        _ => s.push_bool(false),
    }
}

/// Pushes `{name = <what push makes>}`.
fn wrapped(
    s: &mut Stack<'_>,
    name: &[u8],
    push: impl FnOnce(&mut Stack<'_>) -> Result<(), StackError>,
) -> Result<(), StackError> {
    s.push_table(0, 1)?;
    push(s)?;
    s.set_field(-2, name)
}

/// The body of a bulk string whose length line was `line`, taken from the
/// start of `rest` (which moves past it and its CRLF).
fn bulk_body<'a>(rest: &mut &'a [u8], line: &[u8]) -> &'a [u8] {
    let all: &'a [u8] = rest;
    let len = usize::try_from(parse_int(line)).unwrap_or(0).min(all.len());
    let (data, after) = all.split_at(len);
    *rest = after.get(2..).unwrap_or_default();
    data
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
/// Redis's error. `resp3`: the script chose RESP3 (`redis.setresp(3)`), so
/// booleans stay booleans.
pub fn to_reply(s: &mut Stack<'_>, idx: i32, resp3: bool) -> Reply {
    let top = s.top();
    let reply = value_reply(s, idx, 0, resp3).unwrap_or_else(|too_deep| too_deep);
    s.pop(s.top() - top);
    reply
}

fn value_reply(s: &mut Stack<'_>, idx: i32, depth: usize, resp3: bool) -> Result<Reply, Reply> {
    Ok(match s.kind(idx) {
        Kind::String => Reply::Bulk(s.bytes(idx)),
        Kind::Number => Reply::Integer(to_integer(s.number(idx).unwrap_or(0.0))),
        Kind::Boolean if resp3 => Reply::Boolean(s.truthy(idx)),
        Kind::Boolean if s.truthy(idx) => Reply::Integer(1),
        Kind::Table if depth >= DEEPEST => return Err(Reply::error("ERR reached lua stack limit")),
        Kind::Table => table_reply(s, idx, depth, resp3)?,
        _ => Reply::Bulk(None),
    })
}

/// A double as Redis 7.0 writes one (`%.17g`; `inf`, `-inf`, `nan`).
pub fn double_text(n: f64) -> Vec<u8> {
    let mut text = String::new();
    if n.is_sign_negative() && !n.is_nan() {
        text.push('-');
    }
    faultline_lua::libc::float::format_double(&mut text, n, b'g', 17, false);
    text.into_bytes()
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
fn table_reply(s: &mut Stack<'_>, idx: i32, depth: usize, resp3: bool) -> Result<Reply, Reply> {
    let top = s.top();
    let t = if idx < 0 { top + 1 + idx } else { idx };
    if let Some(text) = string_field(s, t, b"err") {
        return Ok(Reply::Error(one_line(&text)));
    }
    if let Some(text) = string_field(s, t, b"ok") {
        return Ok(Reply::Simple(one_line(&text)));
    }
    if s.get_field(t, b"double") == Ok(Kind::Number) {
        let n = s.number(-1).unwrap_or(0.0);
        s.pop(1);
        return Ok(Reply::Double(double_text(n)));
    }
    s.pop(s.top() - top);
    if let Some(text) = string_field(s, t, b"big_number") {
        return Ok(Reply::BigNumber(one_line(&text)));
    }
    for (name, map) in [(&b"map"[..], true), (b"set", false)] {
        if s.get_field(t, name) == Ok(Kind::Table) {
            let items = collection(s, map, depth, resp3);
            s.pop(s.top() - top);
            return items.map(|items| {
                if map {
                    Reply::Map(items)
                } else {
                    Reply::Set(items)
                }
            });
        }
        s.pop(s.top() - top);
    }
    if s.get_field(t, b"verbatim_string") == Ok(Kind::Table) {
        let inner = s.top();
        let text = string_field(s, inner, b"string");
        s.pop(s.top() - top);
        if let Some(text) = text {
            return Ok(Reply::Verbatim(text));
        }
    }
    s.pop(s.top() - top);
    let mut items = Vec::new();
    for i in 1.. {
        match s.get_index(t, i) {
            Ok(Kind::Nil) | Err(_) => {
                s.pop(s.top() - top);
                break;
            }
            Ok(_) => {
                let item = value_reply(s, -1, depth + 1, resp3);
                s.pop(s.top() - top);
                items.push(item?);
            }
        }
    }
    Ok(Reply::Array(Some(items)))
}

/// The items of the map (keys and values, alternating) or set (keys) on
/// top of the stack.
fn collection(
    s: &mut Stack<'_>,
    map: bool,
    depth: usize,
    resp3: bool,
) -> Result<Vec<Reply>, Reply> {
    let mut items = Vec::new();
    let mut failed = None;
    let walked = s.pairs(-1, |view| {
        let pair = [
            value_reply(view, 1, depth + 1, resp3),
            value_reply(view, 2, depth + 1, resp3),
        ];
        for (i, item) in pair.into_iter().enumerate() {
            match item {
                Ok(item) if map || i == 0 => items.push(item),
                Ok(_) => {}
                Err(e) => failed = Some(e),
            }
        }
        failed.is_none()
    });
    if let Some(e) = failed {
        return Err(e);
    }
    walked.map_err(|_| Reply::error("ERR reached lua stack limit"))?;
    Ok(items)
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
