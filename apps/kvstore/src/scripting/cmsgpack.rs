//! The `cmsgpack` library scripts have in Redis: MessagePack as Redis
//! 7.0's lua-cmsgpack writes and reads it (written from its documented and
//! observed behaviour).
//!
//! Packing: integral numbers in the smallest integer form, other numbers as
//! float 32 when that is exact and float 64 otherwise; strings as str;
//! tables whose keys are exactly 1..n as arrays, others as maps; tables
//! nested 16 deep, functions and other values as nil. Unpacking reads every
//! type but the ext ones (an error, as in Redis); bin reads as a string.
//! Callbacks run without Lua's memory limit, so output is bounded by
//! [`super::cjson::MAX_TEXT`] and input nesting by [`MAX_UNPACK_DEPTH`].

use alloc::vec::Vec;

use faultline_lua::state::{Kind, Raise, Stack};

use super::cjson::{fail, MAX_TEXT};
use super::Host;

/// Tables this deep are packed as nil (lua-cmsgpack's nesting limit).
const MAX_PACK_DEPTH: usize = 16;

/// The deepest nesting of arrays and maps unpacked (lua-cmsgpack has none;
/// deeper input is refused rather than exhausting the stack).
const MAX_UNPACK_DEPTH: usize = 128;

/// `cmsgpack.pack(...)`: the MessagePack of each argument, one after another.
pub fn pack<H: Host>(s: &mut Stack<'_>, _: &mut H) -> Result<usize, Raise> {
    if s.top() == 0 {
        return Err(fail(
            s,
            b"bad argument #0 to 'pack' (MessagePack pack needs input.)",
        ));
    }
    let mut out = Vec::new();
    for i in 1..=s.top() {
        if let Err(msg) = pack_value(s, i, 0, &mut out) {
            return Err(fail(s, msg));
        }
    }
    s.push_bytes(&out).map_err(|_| s.raise())?;
    Ok(1)
}

/// Appends the value at `idx`, `level` tables deep.
fn pack_value(
    s: &mut Stack<'_>,
    idx: i32,
    level: usize,
    out: &mut Vec<u8>,
) -> Result<(), &'static [u8]> {
    if out.len() > MAX_TEXT {
        return Err(b"MessagePack pack: the output is too long");
    }
    match s.kind(idx) {
        Kind::Boolean => out.push(if s.truthy(idx) { 0xc3 } else { 0xc2 }),
        Kind::Number => number(s.number(idx).unwrap_or(0.0), out),
        Kind::String => string(&s.bytes(idx).unwrap_or_default(), out),
        Kind::Table if level < MAX_PACK_DEPTH => table(s, idx, level, out)?,
        _ => out.push(0xc0),
    }
    Ok(())
}

/// A number: an integer if it is one that fits 64 bits, else a float.
fn number(n: f64, out: &mut Vec<u8>) {
    let two63 = 9_223_372_036_854_775_808.0;
    if n.is_finite() && (-two63..two63).contains(&n) && (n as i64) as f64 == n {
        integer(n as i64, out);
    } else if f64::from(n as f32) == n {
        out.push(0xca);
        out.extend_from_slice(&(n as f32).to_be_bytes());
    } else {
        out.push(0xcb);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

/// An integer in its smallest form.
fn integer(n: i64, out: &mut Vec<u8>) {
    match n {
        0..=127 => out.push(n as u8),
        128..=0xff => out.extend_from_slice(&[0xcc, n as u8]),
        0x100..=0xffff => {
            out.push(0xcd);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.push(0xce);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        }
        _ if n > 0 => {
            out.push(0xcf);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
        -32..=-1 => out.push(n as u8),
        -128..=-33 => out.extend_from_slice(&[0xd0, n as u8]),
        -32768..=-129 => {
            out.push(0xd1);
            out.extend_from_slice(&(n as i16).to_be_bytes());
        }
        -2_147_483_648..=-32769 => {
            out.push(0xd2);
            out.extend_from_slice(&(n as i32).to_be_bytes());
        }
        _ => {
            out.push(0xd3);
            out.extend_from_slice(&n.to_be_bytes());
        }
    }
}

/// A length-prefixed header: the fix form's `fix` bits when it fits under
/// `fix_max`, else the 8-bit (if `small` has one), 16-bit or 32-bit form.
fn header(
    out: &mut Vec<u8>,
    len: usize,
    fix: u8,
    fix_max: usize,
    small: Option<u8>,
    wide: [u8; 2],
) {
    if len <= fix_max {
        out.push(fix | len as u8);
    } else if let (Some(code), true) = (small, len <= 0xff) {
        out.extend_from_slice(&[code, len as u8]);
    } else if len <= 0xffff {
        out.push(wide[0]);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(wide[1]);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
}

fn string(text: &[u8], out: &mut Vec<u8>) {
    header(out, text.len(), 0xa0, 31, Some(0xd9), [0xda, 0xdb]);
    out.extend_from_slice(text);
}

/// An array when the keys are exactly 1..n (an empty table too), a map
/// otherwise.
fn table(
    s: &mut Stack<'_>,
    idx: i32,
    level: usize,
    out: &mut Vec<u8>,
) -> Result<(), &'static [u8]> {
    let full: &'static [u8] = b"MessagePack pack: out of stack space";
    let mut count = 0usize;
    let mut largest = 0f64;
    let mut array = true;
    s.pairs(idx, |v| {
        count += 1;
        match v.number(1) {
            Some(k) if (1.0..9.0e15).contains(&k) && (k as u64) as f64 == k => {
                largest = largest.max(k)
            }
            _ => array = false,
        }
        true
    })
    .map_err(|_| full)?;
    if array && largest == count as f64 {
        header(out, count, 0x90, 15, None, [0xdc, 0xdd]);
        for i in 1..=count {
            s.get_index(idx, i).map_err(|_| full)?;
            let done = pack_value(s, -1, level + 1, out);
            s.pop(1);
            done?;
        }
        return Ok(());
    }
    header(out, count, 0x80, 15, None, [0xde, 0xdf]);
    let mut failure = Ok(());
    s.pairs(idx, |v| {
        failure = pack_value(v, 1, level + 1, out).and_then(|()| pack_value(v, 2, level + 1, out));
        failure.is_ok()
    })
    .map_err(|_| full)?;
    failure
}

/// Why unpacking stopped: lua-cmsgpack's messages, or Lua's for a bad key.
#[derive(Debug)]
enum Bad {
    Missing,
    Format,
    NilKey,
    NanKey,
    Deep,
    Full,
}

/// `cmsgpack.unpack(data)`: every value in `data`.
pub fn unpack<H: Host>(s: &mut Stack<'_>, _: &mut H) -> Result<usize, Raise> {
    unpack_with(s, "unpack", 0, 0)
}

/// `cmsgpack.unpack_one(data [, offset])`: the offset after the first value
/// at `offset` (-1 at the end), then that value.
pub fn unpack_one<H: Host>(s: &mut Stack<'_>, _: &mut H) -> Result<usize, Raise> {
    let offset = optional_integer(s, 2, "unpack_one")?;
    unpack_with(s, "unpack_one", 1, offset)
}

/// `cmsgpack.unpack_limit(data, limit [, offset])`: as `unpack_one`, with up
/// to `limit` values (all of them when 0).
pub fn unpack_limit<H: Host>(s: &mut Stack<'_>, _: &mut H) -> Result<usize, Raise> {
    let limit = match s.to_number(2) {
        Some(n) => n as i64,
        None => return Err(argument_error(s, 2, "unpack_limit", "number")),
    };
    let offset = optional_integer(s, 3, "unpack_limit")?;
    unpack_with(s, "unpack_limit", limit, offset)
}

fn argument_error(s: &mut Stack<'_>, i: i32, name: &str, want: &str) -> Raise {
    let got = s.type_name(i);
    let msg = alloc::format!("bad argument #{i} to '{name}' ({want} expected, got {got})");
    fail(s, msg.as_bytes())
}

fn optional_integer(s: &mut Stack<'_>, i: i32, name: &str) -> Result<i64, Raise> {
    match s.kind(i) {
        Kind::None | Kind::Nil => Ok(0),
        _ => match s.to_number(i) {
            Some(n) => Ok(n as i64),
            None => Err(argument_error(s, i, name, "number")),
        },
    }
}

/// Unpacks up to `limit` values (all when 0) from `offset` of argument 1;
/// with a limit the next offset comes first.
fn unpack_with(s: &mut Stack<'_>, name: &str, limit: i64, offset: i64) -> Result<usize, Raise> {
    let data = match s.kind(1) {
        Kind::String | Kind::Number => s.bytes(1).unwrap_or_default(),
        _ => return Err(argument_error(s, 1, name, "string")),
    };
    let len = data.len();
    if offset < 0 || limit < 0 {
        let msg =
            alloc::format!("Invalid request to unpack with offset of {offset} and limit of {len}.");
        return Err(fail(s, msg.as_bytes()));
    }
    if offset as u64 > len as u64 {
        let msg = alloc::format!("Start offset {offset} greater than input length {len}.");
        return Err(fail(s, msg.as_bytes()));
    }
    let all = limit == 0;
    let mut rest = &data[offset as usize..];
    s.clear();
    let mut count = 0;
    while !rest.is_empty() && (all || count < limit) {
        if let Err(bad) = value(s, &mut rest, 0) {
            let msg: &[u8] = match bad {
                Bad::Missing => b"Missing bytes in input.",
                Bad::Format => b"Bad data format in input.",
                Bad::NilKey => return Err(s.raise_message(b"table index is nil")),
                Bad::NanKey => return Err(s.raise_message(b"table index is NaN")),
                Bad::Deep => b"Too deeply nested data structures in input.",
                Bad::Full => {
                    b"too many return values at once; use unpack_one or unpack_limit instead."
                }
            };
            return Err(fail(s, msg));
        }
        count += 1;
    }
    if !all {
        s.push_number(match rest.is_empty() {
            true => -1.0,
            false => (len - rest.len()) as f64,
        })
        .map_err(|_| s.raise())?;
        // The offset goes first: each value moves round behind it.
        for _ in 0..count {
            s.push_value(1).map_err(|_| s.raise())?;
            s.remove(1);
        }
    }
    Ok(s.top() as usize)
}

/// Takes `n` bytes from the front of `rest`.
fn take<'a>(rest: &mut &'a [u8], n: usize) -> Result<&'a [u8], Bad> {
    if rest.len() < n {
        return Err(Bad::Missing);
    }
    let (head, tail) = rest.split_at(n);
    *rest = tail;
    Ok(head)
}

/// A big-endian unsigned number of `n` bytes.
fn be(rest: &mut &[u8], n: usize) -> Result<u64, Bad> {
    Ok(take(rest, n)?
        .iter()
        .fold(0u64, |v, &b| v << 8 | u64::from(b)))
}

/// Pushes the next value of `rest`, `depth` arrays and maps deep.
fn value(s: &mut Stack<'_>, rest: &mut &[u8], depth: usize) -> Result<(), Bad> {
    let full = |_| Bad::Full;
    let code = take(rest, 1)?[0];
    let number = |s: &mut Stack<'_>, n: f64| s.push_number(n).map_err(full);
    match code {
        0x00..=0x7f => number(s, f64::from(code)),
        0xe0..=0xff => number(s, f64::from(code as i8)),
        0xcc..=0xcf => {
            let n = be(rest, 1 << (code - 0xcc))?;
            number(s, n as f64)
        }
        0xd0..=0xd3 => {
            let width = 1usize << (code - 0xd0);
            let raw = be(rest, width)?;
            let shift = 64 - 8 * width as u32;
            number(s, (((raw << shift) as i64) >> shift) as f64)
        }
        0xca => number(s, f64::from(f32::from_bits(be(rest, 4)? as u32))),
        0xcb => number(s, f64::from_bits(be(rest, 8)?)),
        0xc0 => s.push_nil().map_err(full),
        0xc2 | 0xc3 => s.push_bool(code == 0xc3).map_err(full),
        0xa0..=0xbf => bytes(s, rest, usize::from(code & 0x1f)),
        0xd9..=0xdb => {
            let len = be(rest, 1 << (code - 0xd9))? as usize;
            bytes(s, rest, len)
        }
        0xc4..=0xc6 => {
            let len = be(rest, 1 << (code - 0xc4))? as usize;
            bytes(s, rest, len)
        }
        0x90..=0x9f => array(s, rest, usize::from(code & 0x0f), depth),
        0xdc | 0xdd => {
            let len = be(rest, if code == 0xdc { 2 } else { 4 })? as usize;
            array(s, rest, len, depth)
        }
        0x80..=0x8f => map(s, rest, usize::from(code & 0x0f), depth),
        0xde | 0xdf => {
            let len = be(rest, if code == 0xde { 2 } else { 4 })? as usize;
            map(s, rest, len, depth)
        }
        _ => Err(Bad::Format),
    }
}

fn bytes(s: &mut Stack<'_>, rest: &mut &[u8], len: usize) -> Result<(), Bad> {
    let text = take(rest, len)?;
    s.push_bytes(text).map_err(|_| Bad::Full)
}

fn array(s: &mut Stack<'_>, rest: &mut &[u8], len: usize, depth: usize) -> Result<(), Bad> {
    if depth >= MAX_UNPACK_DEPTH {
        return Err(Bad::Deep);
    }
    // Each item takes a byte at least: no room is made for more.
    s.push_table(len.min(rest.len()), 0)
        .map_err(|_| Bad::Full)?;
    for i in 1..=len {
        value(s, rest, depth + 1)?;
        s.set_index(-2, i).map_err(|_| Bad::Full)?;
    }
    Ok(())
}

fn map(s: &mut Stack<'_>, rest: &mut &[u8], len: usize, depth: usize) -> Result<(), Bad> {
    if depth >= MAX_UNPACK_DEPTH {
        return Err(Bad::Deep);
    }
    s.push_table(0, len.min(rest.len() / 2))
        .map_err(|_| Bad::Full)?;
    for _ in 0..len {
        value(s, rest, depth + 1)?;
        value(s, rest, depth + 1)?;
        let bad = match s.kind(-2) {
            Kind::Nil => Some(Bad::NilKey),
            Kind::Number if s.number(-2).is_some_and(f64::is_nan) => Some(Bad::NanKey),
            _ => None,
        };
        if let Some(bad) = bad {
            return Err(bad);
        }
        s.set_pair(-3).map_err(|_| Bad::Full)?;
    }
    Ok(())
}
