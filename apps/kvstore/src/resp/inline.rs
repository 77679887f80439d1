//! Splitting an inline request line into arguments, with Redis's quoting.
//!
//! `SET k "hello world"` and `SET k 'it\'s'` work as they do in `redis-cli`
//! and Redis itself: double quotes understand `\n \r \t \b \a \xHH` and
//! `\<any>`; single quotes understand only `\'`. A closing quote must be
//! followed by whitespace or the end of the line.

use alloc::vec::Vec;

/// Splits `line` into arguments. Returns `None` for unbalanced quotes (or a
/// closing quote glued to more text), which Redis reports as
/// `Protocol error: unbalanced quotes in request`. As in Redis, a NUL byte
/// ends the line.
pub fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let line = match line.iter().position(|&b| b == 0) {
        Some(nul) => &line[..nul],
        None => line,
    };
    let mut args = Vec::new();
    let mut p = 0;
    loop {
        while p < line.len() && is_space(line[p]) {
            p += 1;
        }
        if p == line.len() {
            return Some(args);
        }
        let (arg, next) = token(line, p)?;
        args.push(arg);
        p = next;
    }
}

/// C's `isspace` in the "C" locale.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// Reads one argument starting at `line[p]`, returning it and the position
/// after it.
fn token(line: &[u8], mut p: usize) -> Option<(Vec<u8>, usize)> {
    let mut arg = Vec::new();
    let at = |i: usize| line.get(i).copied();
    loop {
        match at(p) {
            None | Some(b' ' | b'\n' | b'\r' | b'\t') => return Some((arg, p)),
            Some(b'"') => p = double_quoted(line, p + 1, &mut arg)?,
            Some(b'\'') => p = single_quoted(line, p + 1, &mut arg)?,
            Some(b) => {
                arg.push(b);
                p += 1;
            }
        }
    }
}

/// Reads the body of a `"..."` string starting after the opening quote;
/// returns the position after the closing quote.
fn double_quoted(line: &[u8], mut p: usize, arg: &mut Vec<u8>) -> Option<usize> {
    loop {
        match line.get(p..)? {
            [] => return None,
            [b'\\', b'x', hi, lo, ..] if hex(*hi).is_some() && hex(*lo).is_some() => {
                arg.push(hex(*hi)? << 4 | hex(*lo)?);
                p += 4;
            }
            [b'\\', escaped, ..] => {
                arg.push(match escaped {
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'b' => 0x08,
                    b'a' => 0x07,
                    other => *other,
                });
                p += 2;
            }
            [b'"', rest @ ..] => return closing_quote(rest, p + 1),
            [b, ..] => {
                arg.push(*b);
                p += 1;
            }
        }
    }
}

/// Reads the body of a `'...'` string starting after the opening quote.
fn single_quoted(line: &[u8], mut p: usize, arg: &mut Vec<u8>) -> Option<usize> {
    loop {
        match line.get(p..)? {
            [] => return None,
            [b'\\', b'\'', ..] => {
                arg.push(b'\'');
                p += 2;
            }
            [b'\'', rest @ ..] => return closing_quote(rest, p + 1),
            [b, ..] => {
                arg.push(*b);
                p += 1;
            }
        }
    }
}

/// A closing quote must end the argument: next is whitespace or nothing.
fn closing_quote(rest: &[u8], after: usize) -> Option<usize> {
    match rest.first() {
        Some(&b) if !is_space(b) => None,
        _ => Some(after),
    }
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(line: &str) -> Option<Vec<Vec<u8>>> {
        split_args(line.as_bytes())
    }

    fn args(list: &[&[u8]]) -> Option<Vec<Vec<u8>>> {
        Some(list.iter().map(|a| a.to_vec()).collect())
    }

    #[test]
    fn plain_words_split_on_whitespace() {
        assert_eq!(split("SET k v"), args(&[b"SET", b"k", b"v"]));
        assert_eq!(split("  GET\t k  "), args(&[b"GET", b"k"]));
        assert_eq!(split(""), args(&[]));
        assert_eq!(split("   "), args(&[]));
    }

    #[test]
    fn double_quotes_and_escapes() {
        assert_eq!(
            split(r#"SET k "hello world""#),
            args(&[b"SET", b"k", b"hello world"])
        );
        assert_eq!(split(r#""a\nb\r\t\x41\"""#), args(&[b"a\nb\r\tA\""]));
        assert_eq!(
            split(r#""\xZZ""#),
            args(&[b"xZZ"]),
            "bad hex is a plain escape"
        );
        assert_eq!(split(r#""""#), args(&[b""]), "empty quoted argument");
        assert_eq!(split(r#"a"b c"d"#), None, "closing quote glued to text");
        assert_eq!(
            split(r#"a"b c""#),
            args(&[b"ab c"]),
            "quote may open mid-word"
        );
    }

    #[test]
    fn single_quotes_only_escape_the_quote() {
        assert_eq!(split(r"'it\'s'"), args(&[b"it's"]));
        assert_eq!(split(r"'a\nb'"), args(&[b"a\\nb"]));
    }

    #[test]
    fn unbalanced_quotes_are_rejected() {
        assert_eq!(split(r#"SET k "oops"#), None);
        assert_eq!(split("SET k 'oops"), None);
        assert_eq!(split(r#"SET k "trailing\"#), None);
    }

    #[test]
    fn nul_ends_the_line() {
        assert_eq!(split_args(b"GET k\0ignored"), args(&[b"GET", b"k"]));
    }
}
