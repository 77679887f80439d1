//! `SLOWLOG GET|LEN|RESET|HELP`: reading the slow log (`kvstore::slowlog`).

use alloc::vec::Vec;

use super::exec::Exec;
use crate::resp::Reply;

/// Entries `SLOWLOG GET` gives without a count.
const DEFAULT_COUNT: usize = 10;

/// `SLOWLOG GET [count]`: the newest entries, `count` of them (-1: all).
pub(crate) fn get(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let count = match args.get(2) {
        None => Some(DEFAULT_COUNT),
        Some(arg) => match crate::num::parse_i64(arg) {
            Some(-1) => None,
            Some(n) if n >= 0 => Some(usize::try_from(n).unwrap_or(usize::MAX)),
            Some(_) => return Reply::error("ERR count should be greater than or equal to -1"),
            None => return Reply::error("ERR value is not an integer or out of range"),
        },
    };
    x.slowlog.newest(count)
}

/// `SLOWLOG LEN`.
pub(crate) fn len(x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    Reply::Integer(x.slowlog.len() as i64)
}

/// `SLOWLOG RESET`.
pub(crate) fn reset(x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    x.slowlog.reset();
    Reply::ok()
}

/// `SLOWLOG HELP`.
pub(crate) fn help(_x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    Reply::help(&[
        "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "GET [<count>]",
        "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
        "    Entries are made of:",
        "    id, timestamp, time in microseconds, arguments array, client IP and port,",
        "    client name",
        "LEN",
        "    Return the length of the slowlog.",
        "RESET",
        "    Reset the slowlog.",
        "HELP",
        "    Print this help.",
    ])
}
