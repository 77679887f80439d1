//! Per-connection state the commands can see and change.

use alloc::vec::Vec;

/// What the engine knows about one connection. The server creates one per
/// client and passes it to every [`Engine::execute`](super::Engine::execute).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientCtx {
    id: u64,
    pub(crate) name: Option<Vec<u8>>,
    pub(crate) quit: bool,
    /// Passed `AUTH` (or `HELLO ... AUTH`); only asked when the server
    /// has a `requirepass`.
    pub(crate) authenticated: bool,
    /// The ACL user its commands run as (`AUTH`): `default` at first.
    pub(crate) user: Vec<u8>,
    /// Runs without ACL checks: a blocked client's command run again
    /// when its key is ready (it was checked when it came).
    pub(crate) acl_exempt: bool,
    /// The database `SELECT` chose.
    pub(crate) db: usize,
    /// Commands queued since `MULTI`, if in a transaction.
    pub(crate) multi: Option<Multi>,
    /// Keys `WATCH`ed: database, key, and the entry's version then (`None`:
    /// missing).
    pub(crate) watched: Vec<(usize, Vec<u8>, Option<u64>)>,
    /// Channels, patterns and shard channels subscribed to (`SUBSCRIBE`,
    /// `PSUBSCRIBE`, `SSUBSCRIBE`): while any, a RESP2 client may only run
    /// the (un)subscribing commands, `PING`, `QUIT` and `RESET`.
    pub(crate) channels: alloc::collections::BTreeSet<Vec<u8>>,
    pub(crate) patterns: alloc::collections::BTreeSet<Vec<u8>>,
    pub(crate) shard_channels: alloc::collections::BTreeSet<Vec<u8>>,
    /// `CLIENT REPLY OFF`: no replies until `CLIENT REPLY ON`.
    pub(crate) replies_off: bool,
    /// Replies still to drop (`CLIENT REPLY SKIP`: its own and the next).
    pub(crate) replies_to_skip: u8,
    /// Waiting on keys (`BLPOP`, ...): its session runs nothing more and
    /// sends no reply until the engine answers it.
    pub(crate) blocked: bool,
    /// The protocol its replies are encoded in (`HELLO 2|3`).
    pub(crate) protocol: crate::resp::Protocol,
    /// The client a script's commands run as (see `commands::scripting`).
    pub(crate) in_script: bool,
}

/// A transaction being queued.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Multi {
    /// The commands, in order.
    pub queued: Vec<crate::Args>,
    /// A command was refused while queuing: `EXEC` aborts.
    pub failed: bool,
}

impl ClientCtx {
    /// A new connection; `id` is what `CLIENT ID` reports (unique per
    /// server run, chosen by the server).
    pub fn new(id: u64) -> Self {
        Self::with_user(id, crate::acl::DEFAULT_USER.to_vec())
    }

    /// [`ClientCtx::new`] with `user` as the user name (a script's own
    /// client, whose name buffer is reused from the last script's).
    pub(crate) fn with_user(id: u64, user: Vec<u8>) -> Self {
        ClientCtx {
            id,
            name: None,
            quit: false,
            authenticated: false,
            user,
            acl_exempt: false,
            db: 0,
            multi: None,
            watched: Vec::new(),
            channels: alloc::collections::BTreeSet::new(),
            patterns: alloc::collections::BTreeSet::new(),
            shard_channels: alloc::collections::BTreeSet::new(),
            replies_off: false,
            replies_to_skip: 0,
            blocked: false,
            protocol: crate::resp::Protocol::Resp2,
            in_script: false,
        }
    }

    /// Whether the reply to the command `name` just run is dropped
    /// (`CLIENT REPLY OFF|SKIP`); the caller asks once per command. The
    /// confirmations of (P|S)(UN)SUBSCRIBE are pub/sub pushes, like the
    /// messages that follow them, and are sent all the same, as in Redis.
    pub fn reply_silenced(&mut self, name: &[u8]) -> bool {
        let skipped = self.replies_to_skip > 0;
        if skipped {
            self.replies_to_skip -= 1;
        }
        let push = [
            &b"subscribe"[..],
            b"psubscribe",
            b"unsubscribe",
            b"punsubscribe",
            b"ssubscribe",
            b"sunsubscribe",
        ]
        .iter()
        .any(|p| name.eq_ignore_ascii_case(p));
        (skipped || self.replies_off) && !push
    }

    /// Whether the client waits on keys (a blocking command found nothing):
    /// its reply comes from [`Engine::take_unblocked`](super::Engine::take_unblocked).
    pub fn is_blocked(&self) -> bool {
        self.blocked
    }

    /// The client got its answer (served, timed out or `CLIENT UNBLOCK`):
    /// it runs commands again.
    pub fn unblocked(&mut self) {
        self.blocked = false;
    }

    /// The protocol the client's replies are encoded in: RESP2 until it
    /// sends `HELLO 3`.
    pub fn protocol(&self) -> crate::resp::Protocol {
        self.protocol
    }

    /// The connection's id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The name set with `CLIENT SETNAME`, if any.
    pub fn name(&self) -> Option<&[u8]> {
        self.name.as_deref()
    }

    /// The ACL user the client runs as.
    pub fn user(&self) -> &[u8] {
        &self.user
    }

    /// The database the client works in (`SELECT`).
    pub fn db(&self) -> usize {
        self.db
    }

    /// How many channels, patterns and shard channels it is subscribed
    /// to: while any, it is in pub/sub mode.
    pub fn subscriptions(&self) -> usize {
        self.channels.len() + self.patterns.len() + self.shard_channels.len()
    }

    /// Whether the client sent `QUIT`: the server should write the pending
    /// replies and close the connection.
    pub fn should_close(&self) -> bool {
        self.quit
    }
}
