//! The `struct` library scripts have in Redis (lua-struct's format
//! language, written from its documentation and observed behaviour):
//! `struct.pack(fmt, ...)`, `struct.unpack(fmt, data [, pos])` and
//! `struct.size(fmt)`.
//!
//! A format is a sequence of options: `<` and `>` set little and big endian
//! (little to start with), `!n` the largest alignment (`!` alone: 8; none
//! to start with), `x` a zero byte, `b/B` `h/H` `l/L` `T` signed and
//! unsigned integers of 1, 2, 8 and 8 bytes, `in`/`In` of `n` bytes (4 when
//! `n` is absent; 32 at most), `f` and `d` floats, `s` a string ending in a
//! zero byte, `cn` `n` bytes of a string (1 when absent; `c0`: the whole
//! string when packing, as many bytes as the number unpacked before it when
//! unpacking); spaces are passed over.

use alloc::vec::Vec;

use faultline_lua::state::{Kind, Raise, Stack};

use super::cjson::fail;
use super::Host;

/// The widest integer option (lua-struct's `MAXINTSIZE`).
const MAX_INT_SIZE: usize = 32;

/// The alignment `!` alone sets (a double's on aarch64 and x86-64).
const NATIVE_ALIGN: usize = 8;

/// One option of a format and its size in bytes.
#[derive(Clone, Copy)]
struct Item {
    option: u8,
    size: usize,
}

/// Reads a format, keeping the endianness and alignment its options set.
struct Format<'a> {
    text: &'a [u8],
    at: usize,
    little: bool,
    align: usize,
}

/// Why a format or its arguments are refused: a message for
/// `luaL_error` (after the caller's position) or for an argument.
enum Refusal {
    Error(alloc::string::String),
    Argument(i32, alloc::string::String),
}

impl<'a> Format<'a> {
    fn new(text: &'a [u8]) -> Self {
        Format {
            text,
            at: 0,
            little: true,
            align: 1,
        }
    }

    /// The number written at the cursor, or `default` when there is none.
    fn number(&mut self, default: usize) -> Result<usize, Refusal> {
        if !self.text.get(self.at).is_some_and(u8::is_ascii_digit) {
            return Ok(default);
        }
        let mut n: usize = 0;
        while let Some(&d) = self.text.get(self.at).filter(|d| d.is_ascii_digit()) {
            let digit = usize::from(d - b'0');
            if n > (i32::MAX as usize) / 10 || n * 10 > i32::MAX as usize - digit {
                return Err(Refusal::Error("integral size overflow".into()));
            }
            n = n * 10 + digit;
            self.at += 1;
        }
        Ok(n)
    }

    /// The next option that stands for data (the settings before it are
    /// applied), or `None` at the end.
    fn next(&mut self) -> Result<Option<Item>, Refusal> {
        while let Some(&option) = self.text.get(self.at) {
            self.at += 1;
            let size = match option {
                b' ' => continue,
                b'<' | b'>' => {
                    self.little = option == b'<';
                    continue;
                }
                b'!' => {
                    let a = self.number(NATIVE_ALIGN)?;
                    if !a.is_power_of_two() {
                        return Err(Refusal::Error(alloc::format!(
                            "alignment {a} is not a power of 2"
                        )));
                    }
                    self.align = a;
                    continue;
                }
                b'x' | b'b' | b'B' => 1,
                b'h' | b'H' => 2,
                b'l' | b'L' | b'T' | b'd' => 8,
                b'f' => 4,
                b's' => 0,
                b'c' => self.number(1)?,
                b'i' | b'I' => {
                    let n = self.number(4)?;
                    if n > MAX_INT_SIZE {
                        return Err(Refusal::Error(alloc::format!(
                            "integral size {n} is larger than limit of {MAX_INT_SIZE}"
                        )));
                    }
                    n
                }
                _ => {
                    return Err(Refusal::Argument(
                        1,
                        alloc::format!("invalid format option '{}'", char::from(option)),
                    ))
                }
            };
            return Ok(Some(Item { option, size }));
        }
        Ok(None)
    }

    /// The padding before `item` at offset `at`.
    fn padding(&self, item: Item, at: usize) -> usize {
        if item.size == 0 || item.option == b'c' {
            return 0;
        }
        let size = item.size.min(self.align);
        (size - (at & (size - 1))) & (size - 1)
    }
}

/// Raises a refusal as lua-struct does.
fn raise(s: &mut Stack<'_>, name: &str, refusal: Refusal) -> Raise {
    match refusal {
        Refusal::Error(msg) => fail(s, msg.as_bytes()),
        Refusal::Argument(i, msg) => {
            let msg = alloc::format!("bad argument #{i} to '{name}' ({msg})");
            fail(s, msg.as_bytes())
        }
    }
}

/// Argument `i` as a string (numbers are written as Lua writes them).
fn string_arg(s: &mut Stack<'_>, i: i32) -> Result<Vec<u8>, Refusal> {
    match s.kind(i) {
        Kind::String | Kind::Number => Ok(s.bytes(i).unwrap_or_default()),
        _ => Err(Refusal::Argument(
            i,
            alloc::format!("string expected, got {}", s.type_name(i)),
        )),
    }
}

/// Argument `i` as a number (strings that read as numbers count).
fn number_arg(s: &mut Stack<'_>, i: i32) -> Result<f64, Refusal> {
    s.to_number(i).ok_or_else(|| {
        Refusal::Argument(i, alloc::format!("number expected, got {}", s.type_name(i)))
    })
}

/// The bytes of `value`'s low 64 bits, `size` of them (zeros past 8), in
/// the format's order.
fn integer_bytes(value: u64, size: usize, little: bool, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend((0..size).map(|i| if i < 8 { (value >> (8 * i)) as u8 } else { 0 }));
    if !little {
        out[start..].reverse();
    }
}

/// `struct.pack(fmt, ...)`.
pub fn pack<H: Host>(s: &mut Stack<'_>, _: &mut H) -> Result<usize, Raise> {
    match pack_all(s) {
        Ok(out) => {
            s.push_bytes(&out).map_err(|_| s.raise())?;
            Ok(1)
        }
        // lua-struct's buffer is on the stack: a missing argument reads as nil.
        Err(Refusal::Argument(i, msg)) if i > 1 => {
            let msg = msg.replace("got no value", "got nil");
            Err(raise(s, "pack", Refusal::Argument(i, msg)))
        }
        Err(refusal) => Err(raise(s, "pack", refusal)),
    }
}

fn pack_all(s: &mut Stack<'_>) -> Result<Vec<u8>, Refusal> {
    let fmt = string_arg(s, 1)?;
    let mut format = Format::new(&fmt);
    let mut out = Vec::new();
    let mut arg = 2;
    while let Some(item) = format.next()? {
        let pad = format.padding(item, out.len());
        out.resize(out.len() + pad, 0);
        match item.option {
            b'x' => out.push(0),
            b'f' | b'd' => {
                let n = number_arg(s, arg)?;
                let bytes = match item.option {
                    b'f' => (n as f32).to_le_bytes().to_vec(),
                    _ => n.to_le_bytes().to_vec(),
                };
                let start = out.len();
                out.extend_from_slice(&bytes);
                if !format.little {
                    out[start..].reverse();
                }
                arg += 1;
            }
            b's' => {
                let text = string_arg(s, arg)?;
                out.extend_from_slice(&text);
                out.push(0);
                arg += 1;
            }
            b'c' => {
                let text = string_arg(s, arg)?;
                let size = if item.size == 0 {
                    text.len()
                } else {
                    item.size
                };
                if text.len() < size {
                    // lua-struct names the argument after this one.
                    return Err(Refusal::Argument(arg + 1, "string too short".into()));
                }
                out.extend_from_slice(&text[..size]);
                arg += 1;
            }
            _ => {
                let n = number_arg(s, arg)?;
                let value = if n < 0.0 { n as i64 as u64 } else { n as u64 };
                integer_bytes(value, item.size, format.little, &mut out);
                arg += 1;
            }
        }
    }
    Ok(out)
}

/// `struct.unpack(fmt, data [, pos])`: the values, then the position after
/// them.
pub fn unpack<H: Host>(s: &mut Stack<'_>, _: &mut H) -> Result<usize, Raise> {
    let start = s.top();
    match unpack_all(s) {
        Ok(()) => Ok((s.top() - start) as usize),
        Err(refusal) => Err(raise(s, "unpack", refusal)),
    }
}

fn unpack_all(s: &mut Stack<'_>) -> Result<(), Refusal> {
    let full = |_| Refusal::Error("too many results".into());
    let fmt = string_arg(s, 1)?;
    let data = string_arg(s, 2)?;
    let first = match s.kind(3) {
        Kind::None | Kind::Nil => 1.0,
        _ => number_arg(s, 3)?,
    };
    let first = first as i64;
    if first < 1 {
        return Err(Refusal::Argument(3, "offset must be 1 or greater".into()));
    }
    let base = s.top();
    let mut pos = (first - 1) as usize;
    let mut format = Format::new(&fmt);
    let short = || Refusal::Argument(2, "data string too short".into());
    while let Some(item) = format.next()? {
        pos = pos.saturating_add(format.padding(item, pos));
        if pos.saturating_add(item.size) > data.len() {
            return Err(short());
        }
        let mut size = item.size;
        match item.option {
            b'x' => {}
            b'f' | b'd' => {
                let mut bytes = [0u8; 8];
                bytes[..size].copy_from_slice(&data[pos..pos + size]);
                if !format.little {
                    bytes[..size].reverse();
                }
                let n = match size {
                    4 => f64::from(f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])),
                    _ => f64::from_le_bytes(bytes),
                };
                s.push_number(n).map_err(full)?;
            }
            b's' => {
                let Some(len) = data[pos..].iter().position(|&b| b == 0) else {
                    return Err(Refusal::Error("unfinished string in data".into()));
                };
                s.push_bytes(&data[pos..pos + len]).map_err(full)?;
                size = len + 1;
            }
            b'c' => {
                if size == 0 {
                    let previous = (s.top() > base).then(|| s.to_number(-1)).flatten();
                    let Some(n) = previous else {
                        return Err(Refusal::Error("format 'c0' needs a previous size".into()));
                    };
                    s.pop(1);
                    size = if n > 0.0 { n as usize } else { 0 };
                    if size > data.len() - pos {
                        return Err(short());
                    }
                }
                s.push_bytes(&data[pos..pos + size]).map_err(full)?;
            }
            option => {
                let bytes = &data[pos..pos + size];
                let mut value: u64 = 0;
                let mut push_byte = |b: u8| value = value.wrapping_shl(8) | u64::from(b);
                if format.little {
                    bytes.iter().rev().for_each(|&b| push_byte(b));
                } else {
                    bytes.iter().for_each(|&b| push_byte(b));
                }
                let signed = option.is_ascii_lowercase();
                let n = if signed && size < 8 && size > 0 {
                    let shift = 64 - 8 * size as u32;
                    (((value << shift) as i64) >> shift) as f64
                } else if signed {
                    value as i64 as f64
                } else {
                    value as f64
                };
                s.push_number(n).map_err(full)?;
            }
        }
        pos += size;
    }
    s.push_number(pos as f64 + 1.0).map_err(full)?;
    Ok(())
}

/// `struct.size(fmt)`: the bytes the format packs into.
pub fn size<H: Host>(s: &mut Stack<'_>, _: &mut H) -> Result<usize, Raise> {
    match size_of(s) {
        Ok(n) => {
            s.push_number(n as f64).map_err(|_| s.raise())?;
            Ok(1)
        }
        Err(refusal) => Err(raise(s, "size", refusal)),
    }
}

fn size_of(s: &mut Stack<'_>) -> Result<usize, Refusal> {
    let fmt = string_arg(s, 1)?;
    let mut format = Format::new(&fmt);
    let mut total: usize = 0;
    while let Some(item) = format.next()? {
        let undefined = match item.option {
            b's' => Some("s"),
            b'c' if item.size == 0 => Some("c0"),
            _ => None,
        };
        if let Some(name) = undefined {
            return Err(Refusal::Argument(
                1,
                alloc::format!("option '{name}' has no fixed size"),
            ));
        }
        total = total
            .saturating_add(format.padding(item, total))
            .saturating_add(item.size);
    }
    Ok(total)
}
