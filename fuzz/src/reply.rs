//! A strict RESP2 reply decoder, written apart from the library's encoder,
//! to check that every reply the engine makes is well-formed on the wire.

use kvstore::resp::{Protocol, Reply};

/// Decodes exactly one reply spanning all of `bytes`: every line ends in
/// `\r\n`, status and error lines hold no `\r` or `\n`, numbers have no sign
/// `+` or leading zeros, bulk and array lengths are -1 or more and match
/// their contents, nothing trails.
pub fn decode(bytes: &[u8]) -> Result<Reply, String> {
    let mut rest = bytes;
    let reply = one(&mut rest)?;
    if !rest.is_empty() {
        return Err(format!("{} bytes after the reply", rest.len()));
    }
    Ok(reply)
}

/// Encodes `reply`, decodes it again, and checks that it reads back as the
/// same reply (status and error text with line breaks as spaces); and that
/// the length the encoder reserves for it is what it writes, in RESP2 and
/// in RESP3.
pub fn check_roundtrip(reply: &Reply) -> Result<(), String> {
    for protocol in [Protocol::Resp2, Protocol::Resp3] {
        let (reserved, written) = (
            reply.encoded_len_as(protocol),
            reply.to_bytes_as(protocol).len(),
        );
        if reserved != written {
            return Err(format!(
                "{reply:?} in {protocol:?}: {reserved} bytes reserved, {written} written"
            ));
        }
    }
    let wire = reply.to_bytes();
    let back = decode(&wire).map_err(|e| format!("{e}: {:?}", String::from_utf8_lossy(&wire)))?;
    let expected = normalized(reply);
    if back != expected {
        return Err(format!("{reply:?} reads back as {back:?}"));
    }
    Ok(())
}

/// `reply` as it should read back: line breaks in status and error text
/// become spaces.
fn normalized(reply: &Reply) -> Reply {
    let flat = |s: &String| s.replace(['\r', '\n'], " ");
    match reply {
        Reply::Simple(s) => Reply::Simple(flat(s)),
        Reply::Error(s) => Reply::Error(flat(s)),
        Reply::Array(Some(items)) => Reply::Array(Some(items.iter().map(normalized).collect())),
        other => other.clone(),
    }
}

fn one(rest: &mut &[u8]) -> Result<Reply, String> {
    let (&kind, tail) = rest.split_first().ok_or("empty reply")?;
    *rest = tail;
    let text = line(rest)?;
    match kind {
        b'+' | b'-' => {
            let text = String::from_utf8(text.to_vec()).map_err(|_| "status is not UTF-8")?;
            // An empty error line is what Redis itself sends for a script
            // that returns {err = ''}, and kvstore as well.
            Ok(if kind == b'+' {
                Reply::Simple(text)
            } else {
                Reply::Error(text)
            })
        }
        b':' => Ok(Reply::Integer(number(text)?)),
        b'$' => match number(text)? {
            -1 => Ok(Reply::Bulk(None)),
            len if len >= 0 => {
                let len = len as usize;
                if rest.len() < len + 2 || &rest[len..len + 2] != b"\r\n" {
                    return Err(format!("bulk of {len} bytes not followed by CRLF"));
                }
                let body = rest[..len].to_vec();
                *rest = &rest[len + 2..];
                Ok(Reply::Bulk(Some(body)))
            }
            len => Err(format!("bulk length {len}")),
        },
        b'*' => match number(text)? {
            -1 => Ok(Reply::Array(None)),
            n if n >= 0 => {
                let items = (0..n).map(|_| one(rest)).collect::<Result<_, _>>()?;
                Ok(Reply::Array(Some(items)))
            }
            n => Err(format!("array length {n}")),
        },
        other => Err(format!("unknown reply type {:?}", char::from(other))),
    }
}

/// The text before the next `\r\n`, which must hold no other `\r` or `\n`.
fn line<'a>(rest: &mut &'a [u8]) -> Result<&'a [u8], String> {
    let end = rest
        .iter()
        .position(|&b| b == b'\r' || b == b'\n')
        .ok_or("unterminated line")?;
    if rest.get(end..end + 2) != Some(b"\r\n") {
        return Err("line break inside a line".into());
    }
    let text = &rest[..end];
    *rest = &rest[end + 2..];
    Ok(text)
}

/// A decimal integer in canonical form.
fn number(text: &[u8]) -> Result<i64, String> {
    let s = std::str::from_utf8(text).map_err(|_| "number is not ASCII")?;
    let n: i64 = s.parse().map_err(|_| format!("bad number {s:?}"))?;
    if n.to_string() != s {
        return Err(format!("number {s:?} is not canonical"));
    }
    Ok(n)
}
