//! `BGREWRITEAOF`: asks the server to compact the append-only log.
//!
//! The engine cannot reach the disk, so the command only records the
//! request ([`Stats::aof_rewrite_scheduled`](super::Stats)); the server
//! sees it through [`Engine::aof_rewrite_wanted`](super::Engine) once the
//! current batch of commands is done, and does the rewrite.

use alloc::vec::Vec;

use super::exec::Exec;
use crate::resp::Reply;

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
