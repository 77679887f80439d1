//! Redis glob patterns, as used by `KEYS`, `SCAN ... MATCH` and `CONFIG GET`.
//!
//! Supported: `*` (any run of bytes), `?` (one byte), `[abc]`, `[^abc]`,
//! `[a-z]` (reversed ranges like `[z-a]` work too), and `\x` to take `x`
//! literally. As in Redis, an unterminated `[` class runs to the end of the
//! pattern and a trailing lone `\` matches a backslash.
//!
//! Matching is iterative with a single backtrack point for the last `*`, so a
//! hostile pattern like `*a*a*a*a*b` costs O(pattern x subject), not an
//! exponential search.

/// Whether `subject` matches the glob `pattern`, byte for byte.
pub fn matches(pattern: &[u8], subject: &[u8]) -> bool {
    matches_with(pattern, subject, false)
}

/// Like [`matches()`], ignoring ASCII case; `CONFIG GET` matches parameter
/// names this way.
pub fn matches_nocase(pattern: &[u8], subject: &[u8]) -> bool {
    matches_with(pattern, subject, true)
}

fn matches_with(pattern: &[u8], subject: &[u8], nocase: bool) -> bool {
    let (mut p, mut i) = (0, 0);
    // Where to resume if the current attempt fails: the pattern position
    // just after the last `*`, and the subject position that `*` would
    // extend to next.
    let mut retry: Option<(usize, usize)> = None;
    loop {
        if pattern.get(p) == Some(&b'*') {
            while pattern.get(p) == Some(&b'*') {
                p += 1;
            }
            if p == pattern.len() {
                return true;
            }
            retry = Some((p, i));
            continue;
        }
        match (pattern.get(p), subject.get(i)) {
            (None, None) => return true,
            (Some(_), Some(&c)) => {
                let (ok, next) = atom(pattern, p, c, nocase);
                if ok {
                    p = next;
                    i += 1;
                    continue;
                }
            }
            _ => {}
        }
        match retry {
            Some((star_p, star_i)) if star_i < subject.len() => {
                retry = Some((star_p, star_i + 1));
                p = star_p;
                i = star_i + 1;
            }
            _ => return false,
        }
    }
}

/// Matches the single-byte atom at `pattern[p]` (never `*`) against `c`;
/// returns whether it matched and where the next atom starts.
fn atom(pattern: &[u8], p: usize, c: u8, nocase: bool) -> (bool, usize) {
    let eq = |a: u8, b: u8| {
        if nocase {
            a.eq_ignore_ascii_case(&b)
        } else {
            a == b
        }
    };
    match pattern[p] {
        b'?' => (true, p + 1),
        b'[' => class(pattern, p + 1, c, nocase),
        b'\\' if p + 1 < pattern.len() => (eq(pattern[p + 1], c), p + 2),
        literal => (eq(literal, c), p + 1),
    }
}

/// Matches a `[...]` class whose body starts at `pattern[j]`.
fn class(pattern: &[u8], mut j: usize, c: u8, nocase: bool) -> (bool, usize) {
    let negate = pattern.get(j) == Some(&b'^');
    if negate {
        j += 1;
    }
    let mut hit = false;
    loop {
        let rest = &pattern[j.min(pattern.len())..];
        match rest {
            [] => break,
            [b'\\', escaped, ..] => {
                hit |= *escaped == c;
                j += 2;
            }
            [b']', ..] => {
                j += 1;
                break;
            }
            [start, b'-', end, ..] => {
                let (mut lo, mut hi, mut x) = (*start.min(end), *start.max(end), c);
                if nocase {
                    lo = lo.to_ascii_lowercase();
                    hi = hi.to_ascii_lowercase();
                    x = x.to_ascii_lowercase();
                }
                hit |= (lo..=hi).contains(&x);
                j += 3;
            }
            [single, ..] => {
                hit |= if nocase {
                    single.eq_ignore_ascii_case(&c)
                } else {
                    *single == c
                };
                j += 1;
            }
        }
    }
    (hit != negate, j.min(pattern.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stars_and_question_marks() {
        assert!(matches(b"*", b""));
        assert!(matches(b"*", b"anything"));
        assert!(matches(b"h?llo", b"hello"));
        assert!(!matches(b"h?llo", b"hllo"));
        assert!(matches(b"h*llo", b"hllo"));
        assert!(matches(b"h*llo", b"heeeello"));
        assert!(matches(b"user:*:name", b"user:42:name"));
        assert!(!matches(b"user:*:name", b"user:42:age"));
        assert!(matches(b"**a**", b"xax"));
        assert!(!matches(b"", b"x"));
        assert!(matches(b"", b""));
    }

    #[test]
    fn classes() {
        assert!(matches(b"h[ae]llo", b"hello"));
        assert!(matches(b"h[ae]llo", b"hallo"));
        assert!(!matches(b"h[ae]llo", b"hillo"));
        assert!(matches(b"h[^e]llo", b"hallo"));
        assert!(!matches(b"h[^e]llo", b"hello"));
        assert!(matches(b"h[a-b]llo", b"hbllo"));
        assert!(matches(b"h[b-a]llo", b"hallo"), "reversed range");
        assert!(!matches(b"h[a-b]llo", b"hcllo"));
        assert!(matches(b"[\\]]", b"]"));
        assert!(
            matches(b"x[abc", b"xc"),
            "unterminated class runs to the end"
        );
        assert!(!matches(b"[]", b"a"), "empty class matches nothing");
    }

    #[test]
    fn escapes() {
        assert!(matches(b"\\*", b"*"));
        assert!(!matches(b"\\*", b"x"));
        assert!(matches(b"a\\?", b"a?"));
        assert!(matches(b"a\\", b"a\\"), "trailing backslash is literal");
    }

    #[test]
    fn case_folding_is_opt_in() {
        assert!(!matches(b"MAXMEMORY", b"maxmemory"));
        assert!(matches_nocase(b"MAX*", b"maxmemory"));
        assert!(matches_nocase(b"[M]axmemory", b"maxmemory"));
    }

    #[test]
    fn pathological_patterns_stay_fast() {
        let subject = [b'a'; 4096];
        assert!(!matches(b"*a*a*a*a*a*a*a*a*a*a*b", &subject));
    }

    #[test]
    fn binary_bytes() {
        assert!(matches(b"\x00*\xff", b"\x00\r\n\xff"));
        assert!(matches(b"?", b"\xfe"));
    }
}
