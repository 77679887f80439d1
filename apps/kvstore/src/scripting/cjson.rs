//! The `cjson` library scripts have in Redis: `cjson.encode` and
//! `cjson.decode`, answering as Redis 7.0's lua-cjson 2.1.0 does (written
//! from its documented and observed behaviour), with the settings of
//! [`CjsonSettings`].
//!
//! One difference: tables nest at most 128 deep when encoding (see
//! [`MAX_ENCODE_DEPTH`]), where lua-cjson allows 1000.
//!
//! `cjson.null` is the light userdata holding a null pointer, as in Redis
//! (`type(cjson.null)` is `userdata`); decoding JSON `null` gives it and
//! encoding it gives `null`. Callbacks run without Lua's memory limit (see
//! faultline-lua), so what they make is bounded here: decoding makes a
//! bounded number of values per input byte, and encoding stops at
//! [`MAX_TEXT`] bytes.

use alloc::vec::Vec;

use faultline_lua::state::{Kind, Raise, Stack};

use super::cjson_settings::{CjsonSettings, InvalidNumbers};
use super::Host;

/// The deepest nesting of tables encoded whatever `encode_max_depth` says:
/// encoding recurses on the server's stack (256 KiB on the guest, some
/// 400 bytes a level), so kvstore stops at 128 with lua-cjson's message.
pub const MAX_ENCODE_DEPTH: usize = 128;

/// The longest text `cjson.encode` makes: a table that holds itself many
/// times over would otherwise grow the text without bound.
pub const MAX_TEXT: usize = 64 << 20;

/// Raises `msg` as lua-cjson's `luaL_error` does: after the position of the
/// Lua code that called the function.
pub fn fail(s: &mut Stack<'_>, msg: &[u8]) -> Raise {
    let mut text = s.caller_position();
    text.extend_from_slice(msg);
    s.raise_message(&text)
}

/// Checks that exactly one argument was given (lua-cjson's message).
fn one_argument(s: &mut Stack<'_>, name: &str) -> Result<(), Raise> {
    if s.top() != 1 {
        let msg = alloc::format!("bad argument #1 to '{name}' (expected 1 argument)");
        return Err(fail(s, msg.as_bytes()));
    }
    Ok(())
}

/// `cjson.encode(value)`: the JSON text of `value`.
pub fn encode<H: Host>(s: &mut Stack<'_>, host: &mut H) -> Result<usize, Raise> {
    one_argument(s, "encode")?;
    let settings = *host.cjson_settings();
    let mut encoder = Encoder {
        settings: &settings,
        out: Vec::new(),
    };
    if let Err(msg) = encoder.value(s, 1, 0) {
        return Err(fail(s, &msg));
    }
    s.push_bytes(&encoder.out).map_err(|_| s.raise())?;
    Ok(1)
}

/// One `cjson.encode`: the settings it follows and the text it has written
/// so far. Its methods append to the text; their error is lua-cjson's
/// message.
struct Encoder<'a> {
    settings: &'a CjsonSettings,
    out: Vec<u8>,
}

impl Encoder<'_> {
    /// Appends the JSON of the value at `idx`, a table being at nesting
    /// `depth` + 1.
    fn value(&mut self, s: &mut Stack<'_>, idx: i32, depth: usize) -> Result<(), Vec<u8>> {
        let out = &mut self.out;
        if out.len() > MAX_TEXT {
            return Err(b"Cannot serialise: the text is too long".to_vec());
        }
        match s.kind(idx) {
            Kind::Nil | Kind::None => out.extend_from_slice(b"null"),
            Kind::Boolean => match s.truthy(idx) {
                true => out.extend_from_slice(b"true"),
                false => out.extend_from_slice(b"false"),
            },
            Kind::Number => self.number(s, idx)?,
            Kind::String => string(&s.bytes(idx).unwrap_or_default(), out),
            Kind::Table => self.table(s, idx, depth + 1)?,
            Kind::Other if s.is_null_pointer(idx) => out.extend_from_slice(b"null"),
            kind => {
                let name = match kind {
                    Kind::Function => "function",
                    _ if s.is_thread(idx) => "thread",
                    _ => "userdata",
                };
                return Err(
                    alloc::format!("Cannot serialise {name}: type not supported").into_bytes(),
                );
            }
        }
        Ok(())
    }

    /// A number as C's `%.{precision}g` writes it (the default 14 is how Lua
    /// writes numbers); NaN and the infinities as the settings say.
    fn number(&mut self, s: &mut Stack<'_>, idx: i32) -> Result<(), Vec<u8>> {
        let (settings, out) = (self.settings, &mut self.out);
        let n = s.number(idx).unwrap_or(f64::NAN);
        if !n.is_finite() {
            match settings.invalid_numbers {
                InvalidNumbers::Refuse => {
                    return Err(b"Cannot serialise number: must not be NaN or Inf".to_vec())
                }
                InvalidNumbers::AsNull => {
                    out.extend_from_slice(b"null");
                    return Ok(());
                }
                // NaN has no sign in the text, whatever its bits.
                InvalidNumbers::Write if n.is_nan() => {
                    out.extend_from_slice(b"nan");
                    return Ok(());
                }
                InvalidNumbers::Write => {}
            }
        }
        let mut text = alloc::string::String::new();
        if n.is_sign_negative() {
            text.push('-');
        }
        let digits = settings.precision as usize;
        faultline_lua::libc::float::format_double(&mut text, n, b'g', digits, false);
        out.extend_from_slice(text.as_bytes());
        Ok(())
    }

    /// How lua-cjson writes a table: as an array when every key is a positive
    /// integer, `null` filling holes (unless the array is excessively sparse,
    /// as `encode_sparse_array` says: refused, or written as an object); as an
    /// object otherwise.
    fn table(&mut self, s: &mut Stack<'_>, idx: i32, depth: usize) -> Result<(), Vec<u8>> {
        let settings = self.settings;
        if depth > MAX_ENCODE_DEPTH.min(settings.encode_max_depth as usize) {
            return Err(
                alloc::format!("Cannot serialise, excessive nesting ({depth})").into_bytes(),
            );
        }
        // lua-cjson keeps the largest key in a C int: a key past its range
        // reads as the smallest int (as x86-64 converts), which makes the
        // table an object unless a later key is larger.
        let mut largest: i32 = 0;
        let mut items: i32 = 0;
        let mut array = true;
        s.pairs(idx, |v| match v.number(1) {
            Some(k) if k >= 1.0 && k == libm_floor(k) => {
                if k > f64::from(largest) {
                    largest = if k < 2_147_483_648.0 {
                        k as i32
                    } else {
                        i32::MIN
                    };
                }
                items = items.saturating_add(1);
                true
            }
            _ => {
                array = false;
                false
            }
        })
        .map_err(|_| b"Cannot serialise table: out of stack space".to_vec())?;
        if array && settings.is_sparse(largest, items) {
            if !settings.sparse_convert {
                return Err(b"Cannot serialise table: excessively sparse array".to_vec());
            }
            array = false;
        }
        if array && largest > 0 {
            self.out.push(b'[');
            for i in 1..=largest as usize {
                if i > 1 {
                    self.out.push(b',');
                }
                s.get_index(idx, i)
                    .map_err(|_| b"Cannot serialise table: out of stack space".to_vec())?;
                let done = self.value(s, -1, depth);
                s.pop(1);
                done?;
            }
            self.out.push(b']');
            return Ok(());
        }
        self.out.push(b'{');
        let mut first = true;
        let mut failure = None;
        s.pairs(idx, |v| {
            let done = self.member(v, depth, first);
            first = false;
            match done {
                Ok(()) => true,
                Err(msg) => {
                    failure = Some(msg);
                    false
                }
            }
        })
        .map_err(|_| b"Cannot serialise table: out of stack space".to_vec())?;
        if let Some(msg) = failure {
            return Err(msg);
        }
        self.out.push(b'}');
        Ok(())
    }

    /// One `"key":value` of an object, the key at 1 and the value at 2 of `v`.
    fn member(&mut self, v: &mut Stack<'_>, depth: usize, first: bool) -> Result<(), Vec<u8>> {
        if !first {
            self.out.push(b',');
        }
        match v.kind(1) {
            Kind::String => string(&v.bytes(1).unwrap_or_default(), &mut self.out),
            Kind::Number => {
                self.out.push(b'"');
                self.number(v, 1)?;
                self.out.push(b'"');
            }
            _ => {
                let name = v.type_name(1);
                let name = if v.is_thread(1) { "thread" } else { name };
                return Err(alloc::format!(
                    "Cannot serialise {name}: table key must be a number or string"
                )
                .into_bytes());
            }
        }
        self.out.push(b':');
        self.value(v, 2, depth)
    }
}

/// A JSON string: control characters, DEL, `"`, `\` and `/` escaped as
/// lua-cjson escapes them; other bytes as they are.
fn string(text: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    for &b in text {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            8 => out.extend_from_slice(b"\\b"),
            9 => out.extend_from_slice(b"\\t"),
            10 => out.extend_from_slice(b"\\n"),
            12 => out.extend_from_slice(b"\\f"),
            13 => out.extend_from_slice(b"\\r"),
            0..=31 | 127 => {
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(b >> 4)]);
                out.push(HEX[usize::from(b & 15)]);
            }
            _ => out.push(b),
        }
    }
    out.push(b'"');
}

/// `floor` for the finite numbers keys are (core has none without std).
fn libm_floor(x: f64) -> f64 {
    if !x.is_finite() || x.abs() >= 4_503_599_627_370_496.0 {
        return x;
    }
    let t = x as i64 as f64;
    if t > x {
        t - 1.0
    } else {
        t
    }
}

/// Whether a number's text (from its first byte) is one JSON has no
/// place for: hexadecimal, an infinity or NaN, after an optional `-`.
fn is_invalid_number(text: &[u8]) -> bool {
    let digits = text.strip_prefix(b"-").unwrap_or(text);
    let starts =
        |word: &[u8]| digits.len() >= word.len() && digits[..word.len()].eq_ignore_ascii_case(word);
    starts(b"0x") || starts(b"inf") || starts(b"nan")
}

/// A token of JSON text, as lua-cjson names them in its messages.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Token {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    Str,
    Number(f64),
    Bool(bool),
    Null,
    Colon,
    Comma,
    End,
    /// A token that could not be read, and why.
    Error(&'static str),
}

impl Token {
    fn name(self) -> &'static str {
        match self {
            Token::ObjBegin => "T_OBJ_BEGIN",
            Token::ObjEnd => "T_OBJ_END",
            Token::ArrBegin => "T_ARR_BEGIN",
            Token::ArrEnd => "T_ARR_END",
            Token::Str => "T_STRING",
            Token::Number(_) => "T_NUMBER",
            Token::Bool(_) => "T_BOOLEAN",
            Token::Null => "T_NULL",
            Token::Colon => "T_COLON",
            Token::Comma => "T_COMMA",
            Token::End => "T_END",
            Token::Error(why) => why,
        }
    }
}

/// Reads JSON text token by token. A NUL byte ends the text, as in
/// lua-cjson (which reads it as a C string).
struct Lexer<'a> {
    text: &'a [u8],
    at: usize,
    /// The bytes of the last string token.
    string: Vec<u8>,
    /// Whether `nan`, `inf` and hexadecimal numbers are read.
    invalid_numbers: bool,
}

impl Lexer<'_> {
    fn byte(&self, i: usize) -> u8 {
        self.text.get(i).copied().unwrap_or(0)
    }

    /// The next token and the index of the byte it (or its error) is at.
    fn next(&mut self) -> (Token, usize) {
        while matches!(self.byte(self.at), b' ' | b'\t' | b'\n' | b'\r') {
            self.at += 1;
        }
        let start = self.at;
        let single = match self.byte(start) {
            0 => return (Token::End, start),
            b'{' => Some(Token::ObjBegin),
            b'}' => Some(Token::ObjEnd),
            b'[' => Some(Token::ArrBegin),
            b']' => Some(Token::ArrEnd),
            b':' => Some(Token::Colon),
            b',' => Some(Token::Comma),
            _ => None,
        };
        if let Some(token) = single {
            self.at += 1;
            return (token, start);
        }
        let rest = &self.text[start..];
        let b = rest[0];
        if b == b'"' {
            return self.string();
        }
        let words: [(&[u8], Token); 3] = [
            (b"true", Token::Bool(true)),
            (b"false", Token::Bool(false)),
            (b"null", Token::Null),
        ];
        let numeric = b == b'-' || b.is_ascii_digit();
        if !numeric {
            for (word, token) in words {
                if rest.starts_with(word) {
                    self.at += word.len();
                    return (token, start);
                }
            }
        }
        let special = rest.len() >= 3
            && (rest[..3].eq_ignore_ascii_case(b"inf") || rest[..3].eq_ignore_ascii_case(b"nan"));
        if numeric && !self.invalid_numbers && is_invalid_number(rest) {
            return (Token::Error("invalid number"), start);
        }
        if numeric || (special && self.invalid_numbers) {
            return match strtod(rest) {
                Some((n, len)) => {
                    self.at += len;
                    (Token::Number(n), start)
                }
                None => (Token::Error("invalid number"), start),
            };
        }
        (Token::Error("invalid token"), start)
    }

    /// A string token, from its opening quote; its bytes go to `string`.
    fn string(&mut self) -> (Token, usize) {
        self.string.clear();
        let mut i = self.at + 1;
        loop {
            match self.byte(i) {
                0 => return (Token::Error("unexpected end of string"), i),
                b'"' => break,
                b'\\' => {
                    let plain = match self.byte(i + 1) {
                        b'"' => b'"',
                        b'\\' => b'\\',
                        b'/' => b'/',
                        b'b' => 8,
                        b'f' => 12,
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'u' => match self.unicode(i) {
                            Some(len) => {
                                i += len;
                                continue;
                            }
                            None => return (Token::Error("invalid unicode escape code"), i),
                        },
                        _ => return (Token::Error("invalid escape code"), i),
                    };
                    self.string.push(plain);
                    i += 2;
                }
                b => {
                    self.string.push(b);
                    i += 1;
                }
            }
        }
        let start = self.at;
        self.at = i + 1;
        (Token::Str, start)
    }

    /// The `\uXXXX` escape at `i` (a surrogate pair is two) appended as
    /// UTF-8; how many bytes it took.
    fn unicode(&mut self, i: usize) -> Option<usize> {
        let hex = |at: usize| -> Option<u32> {
            let digits = self.text.get(at..at + 4)?;
            digits
                .iter()
                .try_fold(0u32, |n, &d| Some(n * 16 + char::from(d).to_digit(16)?))
        };
        let first = hex(i + 2)?;
        let (code, len) = match first {
            0xDC00..=0xDFFF => return None,
            0xD800..=0xDBFF => {
                if self.byte(i + 6) != b'\\' || self.byte(i + 7) != b'u' {
                    return None;
                }
                let low = hex(i + 8)?;
                if !(0xDC00..=0xDFFF).contains(&low) {
                    return None;
                }
                (0x10000 + ((first - 0xD800) << 10) + (low - 0xDC00), 12)
            }
            _ => (first, 6),
        };
        let c = char::from_u32(code)?;
        let mut buf = [0u8; 4];
        self.string
            .extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        Some(len)
    }
}

/// The number C's `strtod` reads at the start of `text` (decimal,
/// hexadecimal, `inf`, `infinity`, `nan`, `nan(...)`, with a sign), and how
/// many bytes it took; `None` when it reads nothing.
pub fn strtod(text: &[u8]) -> Option<(f64, usize)> {
    let at = |i: usize| text.get(i).copied().unwrap_or(0);
    let mut i = 0;
    let negative = at(0) == b'-';
    if matches!(at(0), b'-' | b'+') {
        i = 1;
    }
    let sign = |n: f64| if negative { -n } else { n };
    let starts = |i: usize, word: &[u8]| {
        text.get(i..i + word.len())
            .is_some_and(|w| w.eq_ignore_ascii_case(word))
    };
    if starts(i, b"infinity") {
        return Some((sign(f64::INFINITY), i + 8));
    }
    if starts(i, b"inf") {
        return Some((sign(f64::INFINITY), i + 3));
    }
    if starts(i, b"nan") {
        let mut end = i + 3;
        if at(end) == b'(' {
            let mut j = end + 1;
            while at(j).is_ascii_alphanumeric() || at(j) == b'_' {
                j += 1;
            }
            if at(j) == b')' {
                end = j + 1;
            }
        }
        return Some((f64::NAN, end));
    }
    if at(i) == b'0' && at(i + 1) | 0x20 == b'x' {
        if let Some((n, len)) = hex_float(&text[i + 2..]) {
            return Some((sign(n), i + 2 + len));
        }
    }
    let digits = |mut j: usize| {
        while at(j).is_ascii_digit() {
            j += 1;
        }
        j
    };
    let whole_end = digits(i);
    let mut end = whole_end;
    let mut any = whole_end > i;
    if at(end) == b'.' {
        let frac_end = digits(end + 1);
        any |= frac_end > end + 1;
        end = frac_end;
    }
    if !any {
        return None;
    }
    if at(end) | 0x20 == b'e' {
        let mut j = end + 1;
        if matches!(at(j), b'+' | b'-') {
            j += 1;
        }
        let exp_end = digits(j);
        if exp_end > j {
            end = exp_end;
        }
    }
    let literal = core::str::from_utf8(&text[..end]).ok()?;
    let n = literal.parse::<f64>().ok()?;
    Some((n, end))
}

/// A hexadecimal number after `0x`: digits, a fraction, a binary exponent.
fn hex_float(text: &[u8]) -> Option<(f64, usize)> {
    let at = |i: usize| text.get(i).copied().unwrap_or(0);
    let mut mantissa = 0f64;
    let mut exponent: i64 = 0;
    let mut i = 0;
    let mut any = false;
    while let Some(d) = char::from(at(i)).to_digit(16) {
        mantissa = mantissa * 16.0 + f64::from(d);
        any = true;
        i += 1;
    }
    if at(i) == b'.' {
        i += 1;
        while let Some(d) = char::from(at(i)).to_digit(16) {
            mantissa = mantissa * 16.0 + f64::from(d);
            exponent -= 4;
            any = true;
            i += 1;
        }
    }
    if !any {
        return None;
    }
    if at(i) | 0x20 == b'p' {
        let mut j = i + 1;
        let negative = at(j) == b'-';
        if matches!(at(j), b'+' | b'-') {
            j += 1;
        }
        let mut e: i64 = 0;
        let start = j;
        while at(j).is_ascii_digit() {
            e = (e * 10 + i64::from(at(j) - b'0')).min(1 << 20);
            j += 1;
        }
        if j > start {
            exponent += if negative { -e } else { e };
            i = j;
        }
    }
    let mut n = mantissa;
    let mut e = exponent.clamp(-4000, 4000);
    while e > 0 && n.is_finite() {
        n *= 2.0;
        e -= 1;
    }
    while e < 0 && n != 0.0 {
        n *= 0.5;
        e += 1;
    }
    Some((n, i))
}

/// One array or object being read.
enum Open {
    /// An array and the index of its next item.
    Array(usize),
    /// An object (its pending key is on the stack above it).
    Object,
}

/// `cjson.decode(text)`: the Lua value of a JSON text.
pub fn decode<H: Host>(s: &mut Stack<'_>, host: &mut H) -> Result<usize, Raise> {
    one_argument(s, "decode")?;
    let settings = *host.cjson_settings();
    let text = match s.kind(1) {
        Kind::String | Kind::Number => s.bytes(1).unwrap_or_default(),
        _ => {
            let got = s.type_name(1);
            let msg = alloc::format!("bad argument #1 to 'decode' (string expected, got {got})");
            return Err(fail(s, msg.as_bytes()));
        }
    };
    let mut lexer = Lexer {
        text: &text,
        at: 0,
        string: Vec::new(),
        invalid_numbers: settings.decode_invalid_numbers,
    };
    match parse(s, &mut lexer, settings.decode_max_depth as usize) {
        Ok(()) => Ok(1),
        Err(msg) => Err(fail(s, msg.as_bytes())),
    }
}

/// lua-cjson's message for an unexpected token.
fn expected(what: &str, (token, at): (Token, usize)) -> alloc::string::String {
    alloc::format!(
        "Expected {what} but found {} at character {}",
        token.name(),
        at + 1
    )
}

/// Pushes the value of the whole text (without recursion: the open arrays
/// and objects are on the Lua stack and in `open`).
fn parse(
    s: &mut Stack<'_>,
    lexer: &mut Lexer<'_>,
    max_depth: usize,
) -> Result<(), alloc::string::String> {
    let full = |_| alloc::string::String::from("Cannot decode: out of stack space");
    let mut open: Vec<Open> = Vec::new();
    let mut token = lexer.next();
    loop {
        // A value starts at `token`.
        let mut closed = false;
        match token.0 {
            Token::ObjBegin | Token::ArrBegin => {
                let depth = open.len() + 1;
                if depth > max_depth {
                    return Err(alloc::format!(
                        "Found too many nested data structures ({depth}) at character {}",
                        token.1 + 1
                    ));
                }
                s.push_table(0, 0).map_err(full)?;
                let next = lexer.next();
                if token.0 == Token::ArrBegin {
                    open.push(Open::Array(1));
                    if next.0 == Token::ArrEnd {
                        open.pop();
                        closed = true;
                    } else {
                        token = next;
                    }
                } else {
                    open.push(Open::Object);
                    if next.0 == Token::ObjEnd {
                        open.pop();
                        closed = true;
                    } else {
                        key(s, lexer, next)?;
                        token = lexer.next();
                    }
                }
                if !closed {
                    continue;
                }
            }
            Token::Str => s.push_bytes(&lexer.string).map_err(full)?,
            Token::Number(n) => s.push_number(n).map_err(full)?,
            Token::Bool(b) => s.push_bool(b).map_err(full)?,
            Token::Null => s.push_null_pointer().map_err(full)?,
            _ => return Err(expected("value", token)),
        }
        // A value is complete on top of the stack: it goes into what is
        // open, closing what ends after it.
        loop {
            match open.last_mut() {
                None => {
                    let next = lexer.next();
                    if next.0 != Token::End {
                        return Err(expected("the end", next));
                    }
                    return Ok(());
                }
                Some(Open::Array(n)) => {
                    s.set_index(-2, *n).map_err(full)?;
                    *n += 1;
                    let next = lexer.next();
                    match next.0 {
                        Token::Comma => {
                            token = lexer.next();
                            break;
                        }
                        Token::ArrEnd => {
                            open.pop();
                        }
                        _ => return Err(expected("comma or array end", next)),
                    }
                }
                Some(Open::Object) => {
                    s.set_pair(-3).map_err(full)?;
                    let next = lexer.next();
                    match next.0 {
                        Token::Comma => {
                            let name = lexer.next();
                            key(s, lexer, name)?;
                            token = lexer.next();
                            break;
                        }
                        Token::ObjEnd => {
                            open.pop();
                        }
                        _ => return Err(expected("comma or object end", next)),
                    }
                }
            }
        }
    }
}

/// Pushes an object's key (the string `token`) after checking the colon
/// that follows it.
fn key(
    s: &mut Stack<'_>,
    lexer: &mut Lexer<'_>,
    token: (Token, usize),
) -> Result<(), alloc::string::String> {
    if token.0 != Token::Str {
        return Err(expected("object key string", token));
    }
    s.push_bytes(&lexer.string)
        .map_err(|_| alloc::string::String::from("Cannot decode: out of stack space"))?;
    let colon = lexer.next();
    if colon.0 != Token::Colon {
        return Err(expected("colon", colon));
    }
    Ok(())
}
