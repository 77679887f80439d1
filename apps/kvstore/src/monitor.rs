//! `MONITOR`'s feed: the line a monitoring client receives for each command
//! the server runs, as Redis 7.0 writes it:
//!
//! ```text
//! +1700000000.123000 [0 10.0.2.2:41000] "set" "foo" "bar"
//! +1700000000.124000 [0 lua] "incr" "counter"        (a script's command)
//! ```
//!
//! Each argument is quoted with its special bytes escaped, and the secrets
//! of `AUTH` and `HELLO ... AUTH` are replaced by `(redacted)`. Who gets the
//! lines is kept by `pubsub::PubSub` (the monitors receive them through the
//! same outbox as messages).

use alloc::vec::Vec;

/// What replaces an argument a monitor must not see.
const REDACTED: &[u8] = b"(redacted)";

/// The feed line (a RESP simple string) for `args`, run at `now_ms` in
/// database `db` by `who` (`ip:port`, or `lua` for a script's command).
pub fn line(now_ms: u64, db: usize, who: &str, args: &[Vec<u8>]) -> Vec<u8> {
    let mut out = alloc::format!(
        "+{}.{:06} [{db} {who}]",
        now_ms / 1000,
        (now_ms % 1000) * 1000
    )
    .into_bytes();
    let secret = secret_from(args);
    for (i, arg) in args.iter().enumerate() {
        out.extend_from_slice(b" ");
        quote(if i >= secret { REDACTED } else { arg }, &mut out);
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// The index of the first argument to redact (`args.len()` when none):
/// everything after `AUTH`, and after `HELLO <version> AUTH`.
fn secret_from(args: &[Vec<u8>]) -> usize {
    let is = |i: usize, word: &[u8]| args.get(i).is_some_and(|a| a.eq_ignore_ascii_case(word));
    if is(0, b"auth") {
        return 1;
    }
    if is(0, b"hello") {
        if let Some(at) = (2..args.len()).find(|&i| is(i, b"auth")) {
            return at + 1;
        }
    }
    args.len()
}

/// Appends `arg` in double quotes, with `\\`, `"`, newline, return, tab,
/// bell and backspace escaped and other unprintable bytes as `\xHH`.
fn quote(arg: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    for &b in arg {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'"' => out.extend_from_slice(b"\\\""),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            7 => out.extend_from_slice(b"\\a"),
            8 => out.extend_from_slice(b"\\b"),
            0x20..=0x7e => out.push(b),
            _ => {
                out.extend_from_slice(b"\\x");
                out.push(HEX[usize::from(b >> 4)]);
                out.push(HEX[usize::from(b & 15)]);
            }
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&[u8]]) -> Vec<Vec<u8>> {
        words.iter().map(|w| w.to_vec()).collect()
    }

    #[test]
    fn a_command_is_one_quoted_line_with_time_database_and_client() {
        let l = line(
            1_700_000_000_123,
            2,
            "10.0.2.2:41000",
            &args(&[b"set", b"foo", b"bar"]),
        );
        assert_eq!(
            l,
            b"+1700000000.123000 [2 10.0.2.2:41000] \"set\" \"foo\" \"bar\"\r\n"
        );
        let l = line(5, 0, "lua", &args(&[b"incr", b"c"]));
        assert_eq!(l, b"+0.005000 [0 lua] \"incr\" \"c\"\r\n");
    }

    #[test]
    fn special_bytes_are_escaped() {
        let l = line(0, 0, "lua", &args(&[b"a\"b\\c\r\n\t\x07\x08\x00\xff"]));
        assert_eq!(
            l,
            b"+0.000000 [0 lua] \"a\\\"b\\\\c\\r\\n\\t\\a\\b\\x00\\xff\"\r\n"
        );
    }

    #[test]
    fn secrets_are_redacted() {
        let l = line(0, 0, "lua", &args(&[b"AUTH", b"user", b"pass"]));
        assert_eq!(
            l,
            b"+0.000000 [0 lua] \"AUTH\" \"(redacted)\" \"(redacted)\"\r\n"
        );
        let l = line(0, 0, "lua", &args(&[b"hello", b"2", b"AUTH", b"u", b"p"]));
        assert_eq!(
            l,
            b"+0.000000 [0 lua] \"hello\" \"2\" \"AUTH\" \"(redacted)\" \"(redacted)\"\r\n"
        );
        let l = line(0, 0, "lua", &args(&[b"hello", b"3"]));
        assert_eq!(l, b"+0.000000 [0 lua] \"hello\" \"3\"\r\n");
    }
}
