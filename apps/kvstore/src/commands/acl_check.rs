//! The ACL check every command passes before it runs (at the top level,
//! when queued in `MULTI`, again at `EXEC`, and for each `redis.call` of
//! a script), with Redis's `-NOPERM` errors and `ACL LOG` entries.

use alloc::string::String;
use alloc::vec::Vec;

use super::{table, ClientCtx, Engine};
use crate::acl::log::{Context, Entry, Reason};
use crate::acl::{self, Denied};
use crate::resp::Reply;

/// The error a script's command gets when the ACL refuses it.
fn script_text(denied: Denied) -> &'static str {
    match denied {
        Denied::Command => {
            "ERR The user executing the script can't run this command or subcommand"
        }
        Denied::Key(_) => "ERR The user executing the script can't access at least one of the keys mentioned in the command arguments",
        Denied::Channel(_) => "ERR The user executing the script can't publish to the channel mentioned in the command",
    }
}

/// The error a queued command gets at `EXEC` when the rules changed
/// since it was queued.
fn exec_text(denied: Denied) -> String {
    let why = match denied {
        Denied::Command => "no permission to execute the command or subcommand",
        Denied::Key(_) => "no permission to touch the specified keys",
        Denied::Channel(_) => "no permission to access one of the channels used as arguments",
    };
    alloc::format!("NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: {why}")
}

/// The `CLIENT INFO` line of client `id`, for an `ACL LOG` entry.
pub(super) fn client_line(
    clients: &crate::clients::Clients,
    tracking: &crate::tracking::Tracking,
    id: u64,
    now_ms: u64,
) -> String {
    clients
        .get(id)
        .map(|info| info.line(now_ms, (tracking.list_flags(id), tracking.redirect(id))))
        .unwrap_or_default()
}

/// Logs a refusal in `acl`'s log.
#[allow(clippy::too_many_arguments)]
pub(super) fn log_refusal(
    acl: &mut acl::Acl,
    max_len: u64,
    reason: Reason,
    context: Context,
    object: &[u8],
    username: &[u8],
    client_info: String,
    now_ms: u64,
) {
    let entry = Entry {
        count: 1,
        reason,
        context,
        object: object.to_vec(),
        username: username.to_vec(),
        last_ms: now_ms,
        client_info,
    };
    acl.log
        .add(entry, usize::try_from(max_len).unwrap_or(usize::MAX));
}

impl Engine {
    /// Why `client` may not run `spec` with `args`, if the ACL says so:
    /// the error to answer, after logging the refusal.
    pub(super) fn acl_refusal(
        &mut self,
        spec: &table::Spec,
        args: &[Vec<u8>],
        client: &ClientCtx,
        now: u64,
    ) -> Option<Reply> {
        if client.acl_exempt {
            return None;
        }
        let denied = match self.acl.user(&client.user) {
            Some(user) => acl::check(user, spec, args).err()?,
            // The user was deleted: its connection is being closed.
            None => Denied::Command,
        };
        let context = if client.in_script {
            Context::Lua
        } else if client.multi.is_some() || self.in_exec {
            Context::Multi
        } else {
            Context::Toplevel
        };
        let object = match denied {
            Denied::Command => spec.name.as_bytes(),
            Denied::Key(at) | Denied::Channel(at) => args.get(at).map_or(&[][..], Vec::as_slice),
        };
        let line = client_line(&self.clients, &self.tracking, client.id(), now);
        let max_len = self.config.acllog_max_len;
        log_refusal(
            &mut self.acl,
            max_len,
            denied.reason(),
            context,
            object,
            &client.user,
            line,
            now,
        );
        Some(match context {
            Context::Lua => Reply::error(script_text(denied)),
            Context::Multi if client.multi.is_none() => Reply::Error(exec_text(denied)),
            _ => Reply::Error(denied.error_text(spec.name)),
        })
    }

    /// `redis.acl_check_cmd(...)` of the running script: whether its user
    /// may run `args` (arity is not checked, as in Redis); `None` if
    /// `args` names no command.
    pub(super) fn acl_allows(&self, user: &[u8], args: &[Vec<u8>]) -> Option<bool> {
        let top = table::lookup(args.first()?)?;
        let spec = match args.get(1) {
            Some(sub) if !top.subcommands.is_empty() => top.subcommand(sub)?,
            _ => top,
        };
        Some(
            self.acl
                .user(user)
                .is_some_and(|u| acl::check(u, spec, args).is_ok()),
        )
    }
}
