//! Error replies, worded exactly as Redis 7 words them: clients and test
//! suites match on this text.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use crate::resp::Reply;

/// `-ERR wrong number of arguments for 'get' command`.
pub fn wrong_args(fullname: &str) -> Reply {
    Reply::Error(format!(
        "ERR wrong number of arguments for '{fullname}' command"
    ))
}

/// `-WRONGTYPE ...`: a command for one type used on a key holding
/// another (`GET` on a hash, `HGET` on a string).
pub fn wrong_type() -> Reply {
    Reply::error("WRONGTYPE Operation against a key holding the wrong kind of value")
}

/// What a client blocked in `XREADGROUP` is answered when its stream is
/// deleted, overwritten with another type, flushed or swapped away.
pub const STREAM_GONE: &str = "UNBLOCKED the stream key no longer exists";

/// What a client blocked in `XREADGROUP` is answered when its consumer
/// group is destroyed (or its stream replaced by one without the group).
pub const GROUP_GONE: &str =
    "NOGROUP the consumer group this client was blocked on no longer exists";

/// `-ERR syntax error`.
pub fn syntax() -> Reply {
    Reply::error("ERR syntax error")
}

/// `-ERR value is not an integer or out of range`.
pub fn not_integer() -> Reply {
    Reply::error("ERR value is not an integer or out of range")
}

/// `-ERR value is out of range, value must between -2147483648 and
/// 2147483647`: an integer argument that must fit 32 bits (database
/// indexes).
pub fn not_32_bit() -> Reply {
    Reply::error("ERR value is out of range, value must between -2147483648 and 2147483647")
}

/// A database index as `SELECT`, `MOVE` and `COPY ... DB` read one: an
/// integer (else [`not_integer`]) of 32 bits (else [`not_32_bit`]).
pub fn db_index(arg: &[u8]) -> Result<i64, Reply> {
    let n = crate::num::parse_i64(arg).ok_or_else(not_integer)?;
    i32::try_from(n).map_err(|_| not_32_bit())?;
    Ok(n)
}

/// `-ERR increment or decrement would overflow`.
pub fn overflow() -> Reply {
    Reply::error("ERR increment or decrement would overflow")
}

/// `-ERR invalid expire time in 'set' command`.
pub fn invalid_expire(fullname: &str) -> Reply {
    Reply::Error(format!("ERR invalid expire time in '{fullname}' command"))
}

/// `-OOM command not allowed when used memory > 'maxmemory'.`
pub fn oom() -> Reply {
    Reply::error("OOM command not allowed when used memory > 'maxmemory'.")
}

/// `-MISCONF ...`: a write refused while the log cannot be written.
pub fn misconf(reason: &str) -> Reply {
    Reply::Error(format!(
        "MISCONF Errors writing to the AOF file: {reason}. Write commands are refused until the log can be written again (see INFO persistence)"
    ))
}

/// A write refused because `min-replicas-to-write` asks for replicas
/// kvstore does not have.
pub fn noreplicas() -> Reply {
    Reply::error("NOREPLICAS Not enough good replicas to write.")
}

/// `-ERR string exceeds maximum allowed size (proto-max-bulk-len)`.
pub fn too_long() -> Reply {
    Reply::error("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
}

/// `-ERR unknown command 'foo', with args beginning with: 'a' 'b' `: the
/// name and then arguments, each quoted and followed by a space, until 128
/// bytes of arguments have been shown.
pub fn unknown_command(args: &[Vec<u8>]) -> Reply {
    let name = args.first().map_or(&[][..], |n| &n[..n.len().min(128)]);
    let mut shown: Vec<u8> = Vec::new();
    for arg in args.iter().skip(1) {
        if shown.len() >= 128 {
            break;
        }
        let room = 128 - shown.len();
        shown.push(b'\'');
        shown.extend_from_slice(&arg[..arg.len().min(room)]);
        shown.extend_from_slice(b"' ");
    }
    Reply::Error(format!(
        "ERR unknown command '{}', with args beginning with: {}",
        lossy(name),
        lossy(&shown)
    ))
}

/// `-ERR unknown subcommand 'foo'. Try CONFIG HELP.`
pub fn unknown_subcommand(command: &[u8], sub: &[u8]) -> Reply {
    Reply::Error(format!(
        "ERR unknown subcommand '{}'. Try {} HELP.",
        lossy(&sub[..sub.len().min(128)]),
        lossy(command).to_ascii_uppercase()
    ))
}

/// Arguments echoed in error text may be any bytes; error lines are text.
pub fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Bytes as Redis shows them through C's `%s` in an error: up to the
/// first NUL byte (`NOGROUP No such key 'bin' ...` for `bin\0...`).
pub fn c_string(bytes: &[u8]) -> String {
    lossy(bytes.split(|&b| b == 0).next().unwrap_or(bytes))
}
