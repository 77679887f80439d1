//! `CLIENT UNBLOCK`: answers a client blocked on keys (`BLPOP`, ...)
//! before anything arrives for it.

use alloc::vec::Vec;

use super::errors;
use super::exec::Exec;
use crate::num::parse_i64;
use crate::resp::Reply;

/// `CLIENT UNBLOCK client-id [TIMEOUT|ERROR]`: 1 if the client was
/// blocked, which then gets its timeout reply (`TIMEOUT`, the default) or
/// an `-UNBLOCKED` error (`ERROR`); 0 if it was not blocked.
pub(crate) fn client_unblock(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let Some(id) = parse_i64(&args[2]) else {
        return errors::not_integer();
    };
    let as_error = match args.get(3) {
        None => false,
        Some(how) if how.eq_ignore_ascii_case(b"TIMEOUT") => false,
        Some(how) if how.eq_ignore_ascii_case(b"ERROR") => true,
        Some(_) => return Reply::error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR"),
    };
    if args.len() > 4 {
        return errors::syntax();
    }
    let Some(waiter) = u64::try_from(id).ok().and_then(|id| x.blocking.waiter(id)) else {
        return Reply::Integer(0);
    };
    let reply = match as_error {
        true => {
            let text = "UNBLOCKED client unblocked via CLIENT UNBLOCK";
            x.stats.count_blocked_failure(&waiter.args, text);
            Reply::error(text)
        }
        false => waiter.wait.timeout_reply.clone(),
    };
    Reply::Integer(i64::from(x.blocking.unblock(id as u64, reply)))
}
