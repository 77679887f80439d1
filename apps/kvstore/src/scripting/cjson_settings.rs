//! lua-cjson's settings and the functions scripts change them with
//! (`cjson.encode_max_depth(5)`, `cjson.encode_invalid_numbers('null')`,
//! ...). Each function sets what it is given and returns the setting as it
//! is then; with no argument it only reads it. The settings belong to the
//! server, as they belong to Redis's Lua state, and stay until changed.

use alloc::string::String;

use faultline_lua::state::{Kind, Raise, Stack};

use super::cjson::fail;
use super::Host;

/// What `cjson.encode` does with NaN and the infinities.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InvalidNumbers {
    /// An error (the default).
    Refuse,
    /// Written as `nan`, `inf`, `-inf` (not JSON, but what lua-cjson writes).
    Write,
    /// Written as `null`.
    AsNull,
}

/// The settings `cjson.encode` and `cjson.decode` follow.
#[derive(Debug, Clone, Copy)]
pub struct CjsonSettings {
    /// The deepest nesting `encode` writes (never past
    /// [`super::cjson::MAX_ENCODE_DEPTH`]).
    pub encode_max_depth: u32,
    /// The deepest nesting `decode` reads.
    pub decode_max_depth: u32,
    /// Significant digits of encoded numbers (1 to 14).
    pub precision: u32,
    /// What `encode` does with NaN and the infinities.
    pub invalid_numbers: InvalidNumbers,
    /// Whether `decode` reads `nan`, `inf` and hexadecimal numbers.
    pub decode_invalid_numbers: bool,
    /// lua-cjson's buffer reuse: kept only to be read back (kvstore makes
    /// a new buffer for every text).
    pub keep_buffer: bool,
    /// Sparse arrays are written as objects instead of refused.
    pub sparse_convert: bool,
    /// An array whose largest index is past `sparse_safe` and past
    /// `sparse_ratio` times its items is sparse (a ratio of 0: never).
    pub sparse_ratio: u32,
    /// The largest index an array may always have, however sparse.
    pub sparse_safe: u32,
}

impl Default for CjsonSettings {
    /// lua-cjson 2.1.0's defaults, which Redis keeps.
    fn default() -> Self {
        CjsonSettings {
            encode_max_depth: 1000,
            decode_max_depth: 1000,
            precision: 14,
            invalid_numbers: InvalidNumbers::Refuse,
            decode_invalid_numbers: true,
            keep_buffer: true,
            sparse_convert: false,
            sparse_ratio: 2,
            sparse_safe: 10,
        }
    }
}

impl CjsonSettings {
    /// Whether an array of `items` values whose largest index is `largest`
    /// is too sparse to write as an array.
    pub fn is_sparse(&self, largest: i32, items: i32) -> bool {
        let (ratio, safe) = (i64::from(self.sparse_ratio), i64::from(self.sparse_safe));
        let (largest, items) = (i64::from(largest), i64::from(items));
        ratio > 0 && largest > safe && largest > items * ratio
    }
}

/// At most `max` arguments (lua-cjson's check).
fn at_most(s: &mut Stack<'_>, name: &str, max: i32) -> Result<(), Raise> {
    if s.top() > max {
        let at = max + 1;
        let msg = alloc::format!("bad argument #{at} to '{name}' (found too many arguments)");
        return Err(fail(s, msg.as_bytes()));
    }
    Ok(())
}

/// Argument `i` as an integer in `low..=high`, or `None` when absent.
fn integer(
    s: &mut Stack<'_>,
    i: i32,
    name: &str,
    low: u32,
    high: u32,
) -> Result<Option<u32>, Raise> {
    if matches!(s.kind(i), Kind::None | Kind::Nil) {
        return Ok(None);
    }
    let Some(n) = s.to_number(i) else {
        let got = s.type_name(i);
        let msg = alloc::format!("bad argument #{i} to '{name}' (number expected, got {got})");
        return Err(fail(s, msg.as_bytes()));
    };
    let n = n as i64;
    if n < i64::from(low) || n > i64::from(high) {
        // lua-cjson names the first argument whichever is out of range.
        let msg = alloc::format!(
            "bad argument #1 to '{name}' (expected integer between {low} and {high})"
        );
        return Err(fail(s, msg.as_bytes()));
    }
    Ok(Some(n as u32))
}

/// Argument `i` as one of `words` (a boolean counts as `words[0]` for
/// false and `words[1]` for true), or `None` when absent.
fn option(s: &mut Stack<'_>, i: i32, name: &str, words: &[&str]) -> Result<Option<usize>, Raise> {
    match s.kind(i) {
        Kind::None | Kind::Nil => Ok(None),
        Kind::Boolean => Ok(Some(usize::from(s.truthy(i)))),
        Kind::String | Kind::Number => {
            let word = String::from_utf8_lossy(&s.bytes(i).unwrap_or_default()).into_owned();
            match words.iter().position(|w| *w == word) {
                Some(at) => Ok(Some(at)),
                None => {
                    let msg =
                        alloc::format!("bad argument #{i} to '{name}' (invalid option '{word}')");
                    Err(fail(s, msg.as_bytes()))
                }
            }
        }
        _ => {
            let got = s.type_name(i);
            let msg = alloc::format!("bad argument #{i} to '{name}' (string expected, got {got})");
            Err(fail(s, msg.as_bytes()))
        }
    }
}

const ON_OFF: &[&str] = &["off", "on"];

fn give_number(s: &mut Stack<'_>, n: u32) -> Result<usize, Raise> {
    s.push_number(f64::from(n)).map_err(|_| s.raise())?;
    Ok(1)
}

fn give_bool(s: &mut Stack<'_>, b: bool) -> Result<usize, Raise> {
    s.push_bool(b).map_err(|_| s.raise())?;
    Ok(1)
}

/// A setting that is one integer in `low..=high`: set if given, returned.
fn integer_setting(
    s: &mut Stack<'_>,
    name: &str,
    (low, high): (u32, u32),
    setting: &mut u32,
) -> Result<usize, Raise> {
    at_most(s, name, 1)?;
    if let Some(n) = integer(s, 1, name, low, high)? {
        *setting = n;
    }
    give_number(s, *setting)
}

/// A setting that is on or off: set if given, returned.
fn on_off_setting(s: &mut Stack<'_>, name: &str, setting: &mut bool) -> Result<usize, Raise> {
    at_most(s, name, 1)?;
    if let Some(at) = option(s, 1, name, ON_OFF)? {
        *setting = at == 1;
    }
    give_bool(s, *setting)
}

/// Depths are C ints of at least 1.
const DEPTHS: (u32, u32) = (1, i32::MAX as u32);

/// `cjson.encode_max_depth([depth])`.
pub fn encode_max_depth<H: Host>(s: &mut Stack<'_>, host: &mut H) -> Result<usize, Raise> {
    let setting = &mut host.cjson_settings().encode_max_depth;
    integer_setting(s, "encode_max_depth", DEPTHS, setting)
}

/// `cjson.decode_max_depth([depth])`.
pub fn decode_max_depth<H: Host>(s: &mut Stack<'_>, host: &mut H) -> Result<usize, Raise> {
    let setting = &mut host.cjson_settings().decode_max_depth;
    integer_setting(s, "decode_max_depth", DEPTHS, setting)
}

/// `cjson.encode_number_precision([digits])`.
pub fn encode_number_precision<H: Host>(s: &mut Stack<'_>, host: &mut H) -> Result<usize, Raise> {
    let setting = &mut host.cjson_settings().precision;
    integer_setting(s, "encode_number_precision", (1, 14), setting)
}

/// `cjson.encode_keep_buffer([on])`.
pub fn encode_keep_buffer<H: Host>(s: &mut Stack<'_>, host: &mut H) -> Result<usize, Raise> {
    on_off_setting(
        s,
        "encode_keep_buffer",
        &mut host.cjson_settings().keep_buffer,
    )
}

/// `cjson.encode_invalid_numbers([on | 'null'])`.
pub fn encode_invalid_numbers<H: Host>(s: &mut Stack<'_>, host: &mut H) -> Result<usize, Raise> {
    at_most(s, "encode_invalid_numbers", 1)?;
    let settings = host.cjson_settings();
    if let Some(at) = option(s, 1, "encode_invalid_numbers", &["off", "on", "null"])? {
        settings.invalid_numbers = [
            InvalidNumbers::Refuse,
            InvalidNumbers::Write,
            InvalidNumbers::AsNull,
        ][at];
    }
    match settings.invalid_numbers {
        InvalidNumbers::AsNull => {
            s.push_bytes(b"null").map_err(|_| s.raise())?;
            Ok(1)
        }
        other => give_bool(s, other == InvalidNumbers::Write),
    }
}

/// `cjson.decode_invalid_numbers([on])`.
pub fn decode_invalid_numbers<H: Host>(s: &mut Stack<'_>, host: &mut H) -> Result<usize, Raise> {
    on_off_setting(
        s,
        "decode_invalid_numbers",
        &mut host.cjson_settings().decode_invalid_numbers,
    )
}

/// `cjson.encode_sparse_array([convert [, ratio [, safe]]])`: returns all
/// three.
pub fn encode_sparse_array<H: Host>(s: &mut Stack<'_>, host: &mut H) -> Result<usize, Raise> {
    at_most(s, "encode_sparse_array", 3)?;
    let settings = host.cjson_settings();
    if let Some(at) = option(s, 1, "encode_sparse_array", ON_OFF)? {
        settings.sparse_convert = at == 1;
    }
    if let Some(n) = integer(s, 2, "encode_sparse_array", 0, i32::MAX as u32)? {
        settings.sparse_ratio = n;
    }
    if let Some(n) = integer(s, 3, "encode_sparse_array", 0, i32::MAX as u32)? {
        settings.sparse_safe = n;
    }
    let settings = *settings;
    give_bool(s, settings.sparse_convert)?;
    give_number(s, settings.sparse_ratio)?;
    give_number(s, settings.sparse_safe)?;
    Ok(3)
}
