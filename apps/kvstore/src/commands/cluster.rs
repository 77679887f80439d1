//! `CLUSTER`, `READONLY`, `READWRITE`: kvstore is one server, never part of a Redis Cluster, so every
//! subcommand answers that cluster support is off, as a Redis started
//! without `cluster-enabled` does. The subcommands are still known (with
//! their arities and flags) so that clients probing for a cluster, and
//! scripts, get Redis's answers rather than "unknown command".

use alloc::vec::Vec;

use super::exec::Exec;
use crate::resp::Reply;

/// Every `CLUSTER` subcommand, and `READONLY` and `READWRITE` (a
/// cluster replica's reads).
pub(crate) fn disabled(_x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    Reply::error("ERR This instance has cluster support disabled")
}
