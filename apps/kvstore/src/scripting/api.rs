//! The functions of the `redis` table that need Rust: `call`, `pcall`,
//! `sha1hex`, `log`, `setresp`, `set_repl` and `replicate_commands` (the rest are
//! Lua, in `sandbox.lua`), and `stopped`, which the sandbox's `pcall` asks.

use alloc::vec::Vec;

use faultline_lua::state::{Kind, Raise, Stack};

use super::convert::push_reply;
use super::Host;
use crate::resp::Reply;

/// `redis.call(name, ...)`: runs the command; an error reply is raised.
pub fn call<H: Host>(s: &mut Stack<'_>, host: &mut H) -> Result<usize, Raise> {
    command(s, host, true)
}

/// `redis.pcall(name, ...)`: runs the command; an error reply is returned
/// as `{err = ...}`.
pub fn pcall<H: Host>(s: &mut Stack<'_>, host: &mut H) -> Result<usize, Raise> {
    command(s, host, false)
}

fn command<H: Host>(s: &mut Stack<'_>, host: &mut H, raise: bool) -> Result<usize, Raise> {
    // The arguments are read into the host's buffer, kept from the last
    // call: a script's commands allocate nothing for their arguments.
    let mut args = core::mem::take(host.call_args());
    let reply = match arguments(s, &mut args) {
        Ok(()) => host.command(&mut args),
        Err(why) => Reply::error(why),
    };
    if args.len() <= KEPT_ARGS && args.iter().all(|a| a.capacity() <= KEPT_ARG_BYTES) {
        *host.call_args() = args;
    }
    s.pop(s.top());
    if push_reply(s, &reply, host.resp3()).is_err() {
        return Err(s.raise_message(b"ERR reached lua stack limit"));
    }
    if reply.is_error() {
        // Counted by the engine now: the script's reply, if it is this
        // error, is not counted again.
        let marked = s
            .push_bool(true)
            .and_then(|()| s.set_field(-2, super::COUNTED));
        if marked.is_err() {
            return Err(s.raise_message(b"ERR reached lua stack limit"));
        }
    }
    match (raise, reply.is_error()) {
        (true, true) => Err(s.raise()),
        _ => Ok(1),
    }
}

/// The most arguments, and the largest argument, whose buffers are kept
/// for the next `redis.call`: a large call's memory is given back.
const KEPT_ARGS: usize = 16;
const KEPT_ARG_BYTES: usize = 4096;

/// Reads the command's arguments into `args` (reusing its buffers):
/// strings, or numbers with all their digits (`%.17g`, as Redis writes
/// them: Lua's own `%.14g` would round).
fn arguments(s: &mut Stack<'_>, args: &mut Vec<Vec<u8>>) -> Result<(), &'static str> {
    let n = usize::try_from(s.top()).unwrap_or(0);
    if n == 0 {
        return Err("ERR Please specify at least one argument for this redis lib call");
    }
    args.truncate(n);
    args.resize_with(n, Vec::new);
    for (i, arg) in (1..).zip(args.iter_mut()) {
        match s.kind(i) {
            Kind::Number => *arg = super::convert::double_text(s.number(i).unwrap_or(0.0)),
            Kind::String if s.string_into(i, arg) => {}
            Kind::String => return Err(""),
            _ => return Err("ERR Lua redis lib command arguments must be strings or integers"),
        }
    }
    Ok(())
}

/// `redis.acl_check_cmd(name, ...)`: whether the script's user may run
/// the command with these arguments.
pub fn acl_check_cmd<H: Host>(s: &mut Stack<'_>, host: &mut H) -> Result<usize, Raise> {
    let mut args = Vec::new();
    if let Err(why) = arguments(s, &mut args) {
        return Err(s.raise_message(why.as_bytes()));
    }
    let Some(allowed) = host.acl_check(&args) else {
        return Err(s.raise_message(b"ERR Invalid command passed to redis.acl_check_cmd()"));
    };
    s.pop(s.top());
    s.push_bool(allowed).map_err(|_| s.raise())?;
    Ok(1)
}

/// `redis.sha1hex(text)`: the SHA-1 of a string, in hexadecimal.
pub fn sha1hex<H: Host>(s: &mut Stack<'_>, _host: &mut H) -> Result<usize, Raise> {
    if s.top() != 1 {
        return Err(s.raise_message(b"wrong number of arguments"));
    }
    let text = s.bytes(1).unwrap_or_default();
    let hex = super::sha1::sha1_hex(&text);
    s.push_bytes(hex.as_bytes()).map_err(|_| s.raise())?;
    Ok(1)
}

/// `redis.log(level, ...)`: writes the other arguments, joined by spaces,
/// to the server's log.
pub fn log<H: Host>(s: &mut Stack<'_>, _host: &mut H) -> Result<usize, Raise> {
    if s.top() < 2 {
        return Err(s.raise_message(b"redis.log() requires two arguments or more."));
    }
    let level = match s.number(1) {
        Some(l) if (0.0..=3.0).contains(&l) => l as u8,
        Some(_) => return Err(s.raise_message(b"Invalid debug level.")),
        None => return Err(s.raise_message(b"First argument must be a number (log level).")),
    };
    let mut text = Vec::new();
    for i in 2..=s.top() {
        if let Some(part) = s.bytes(i) {
            if !text.is_empty() {
                text.push(b' ');
            }
            text.extend_from_slice(&part);
        }
    }
    let text = alloc::string::String::from_utf8_lossy(&text);
    match level {
        0 => log::debug!(target: "script", "{text}"),
        1 | 2 => log::info!(target: "script", "{text}"),
        _ => log::warn!(target: "script", "{text}"),
    }
    Ok(0)
}

/// `redis.set_repl(flags)`: `REPL_AOF` (1) and `REPL_REPLICA` (2) bits,
/// checked as Redis checks them. kvstore logs every change whatever they
/// say: its log is its only copy of the data (it has no replicas), and a
/// log that left writes out would not replay (a later record could need
/// what is missing) and the server would not restart.
pub fn set_repl<H: Host>(s: &mut Stack<'_>, _host: &mut H) -> Result<usize, Raise> {
    if s.top() != 1 {
        return Err(s.raise_message(b"redis.set_repl() requires two arguments."));
    }
    let flags = s.to_number(1).unwrap_or(0.0) as i64;
    if flags & !3 != 0 {
        return Err(s.raise_message(
            b"Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
        ));
    }
    Ok(0)
}

/// `redis.replicate_commands()`: scripts' effects are always what is
/// logged (as in Redis 7.0), so this only says yes.
pub fn replicate_commands<H: Host>(s: &mut Stack<'_>, _host: &mut H) -> Result<usize, Raise> {
    s.push_bool(true).map_err(|_| s.raise())?;
    Ok(1)
}

/// `redis.setresp(version)`: the protocol, 2 or 3, replies reach the
/// script in (see `convert`).
pub fn setresp<H: Host>(s: &mut Stack<'_>, host: &mut H) -> Result<usize, Raise> {
    if s.top() != 1 {
        return Err(s.raise_message(b"redis.setresp() requires one argument."));
    }
    match s.to_number(1) {
        Some(v) if v == 2.0 || v == 3.0 => {
            host.set_resp3(v == 3.0);
            Ok(0)
        }
        _ => Err(s.raise_message(b"RESP version must be 2 or 3.")),
    }
}

/// `__faultline.stopped()` (for the sandbox's `pcall`, not scripts): the
/// error that stops the running script if it was stopped, else nil.
pub fn stopped<H: Host>(s: &mut Stack<'_>, host: &mut H) -> Result<usize, Raise> {
    match host.tick() {
        Some(why) => s.push_bytes(&why),
        None => s.push_nil(),
    }
    .map_err(|_| s.raise())?;
    Ok(1)
}
