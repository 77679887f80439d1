//! `CLIENT PAUSE timeout [WRITE|ALL]` and `CLIENT UNPAUSE` (the rules are
//! `kvstore::pause`'s), with Redis 7.0's replies.

use alloc::vec::Vec;

use super::exec::Exec;
use crate::num::parse_i64;
use crate::resp::Reply;

/// `CLIENT PAUSE timeout [WRITE|ALL]`: the mode is checked before the
/// timeout, as in Redis.
pub(crate) fn client_pause(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let all =
        match args.get(3).map(|m| m.to_ascii_lowercase()) {
            _ if args.len() > 4 => return Reply::error(
                "ERR unknown subcommand or wrong number of arguments for 'pause'. Try CLIENT HELP.",
            ),
            None => true,
            Some(m) if m == b"all" => true,
            Some(m) if m == b"write" => false,
            Some(_) => return Reply::error("ERR CLIENT PAUSE mode must be WRITE or ALL"),
        };
    let Some(ms) = parse_i64(&args[2]) else {
        return Reply::error("ERR timeout is not an integer or out of range");
    };
    let Ok(ms) = u64::try_from(ms) else {
        return Reply::error("ERR timeout is negative");
    };
    x.pause.start(x.now, x.now.saturating_add(ms), all);
    Reply::ok()
}

/// `CLIENT UNPAUSE`: the commands that waited run.
pub(crate) fn client_unpause(x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    x.pause.end();
    Reply::ok()
}
