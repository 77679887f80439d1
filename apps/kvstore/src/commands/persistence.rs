//! `BGREWRITEAOF` and `SHUTDOWN`: requests to the server about the
//! append-only log; `LASTSAVE` and `ROLE`, what a client asks about how
//! the data is kept.
//!
//! The engine cannot reach the disk, so the commands only record the
//! request ([`Stats::aof_rewrite_scheduled`](super::Stats),
//! [`Stats::shutdown_asked`](super::Stats)); the server sees them once the
//! current batch of commands is done ([`Engine::aof_rewrite_wanted`],
//! [`Engine::take_shutdown`](super::Engine::take_shutdown)) and acts.

use alloc::vec::Vec;

use super::exec::Exec;
use crate::resp::Reply;

/// `LASTSAVE`: the Unix time of the last RDB snapshot. kvstore keeps its
/// data in its log and makes no snapshots, so it is the server's start, as
/// in a Redis that only appends to its log.
pub(crate) fn lastsave(x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    Reply::Integer((x.started_ms / 1000) as i64)
}

/// `ROLE`: kvstore is a primary with no replicas, at replication offset 0.
pub(crate) fn role(_x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    Reply::array(alloc::vec![
        Reply::Bulk(Some(b"master".to_vec())),
        Reply::Integer(0),
        Reply::array(alloc::vec![]),
    ])
}

/// `BGREWRITEAOF`: replies as Redis does when it starts a rewrite, or
/// refuses while one is running.
pub(crate) fn bgrewriteaof(x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    if x.stats.aof_rewrite_in_progress {
        return Reply::error("ERR Background append only file rewriting already in progress");
    }
    x.stats.aof_rewrite_scheduled = true;
    Reply::Simple(alloc::string::String::from(
        "Background append only file rewriting started",
    ))
}

/// `SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]`: asks the server to flush
/// the log and stop. The reply queued here is the one for a shutdown that
/// fails (the log cannot be flushed, without `FORCE`); when it succeeds the
/// machine stops before any reply is sent, as Redis closes the connection.
/// The log is flushed with `NOSAVE` too: it is the only copy of the data.
pub(crate) fn shutdown(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let (mut save, mut nosave, mut force, mut abort) = (false, false, false, false);
    for arg in &args[1..] {
        match arg.to_ascii_uppercase().as_slice() {
            b"SAVE" => save = true,
            b"NOSAVE" => nosave = true,
            b"NOW" => {}
            b"FORCE" => force = true,
            b"ABORT" => abort = true,
            _ => return super::errors::syntax(),
        }
    }
    if (save && nosave) || (abort && args.len() > 2) {
        return super::errors::syntax();
    }
    if abort {
        // Shutdowns here are synchronous: none is ever left in progress.
        return Reply::error("ERR No shutdown in progress.");
    }
    x.stats.shutdown_asked = Some(force);
    Reply::error("ERR Errors trying to SHUTDOWN. Check logs.")
}
