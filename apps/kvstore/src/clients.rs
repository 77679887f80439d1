//! What `CLIENT LIST` and `CLIENT INFO` report about every connection, and
//! the connections `CLIENT KILL` asked the server to close. The server
//! registers each connection (its address and when it came); after every
//! command the engine records what that client's context says (name,
//! database, subscriptions, transaction, last command). Fixed-size fields:
//! recording allocates nothing on the command path.
//!
//! ```text
//!  server: connected(id, addr, now) ─┐
//!  engine, after each command: seen(ctx, cmd, now)
//!  CLIENT LIST ─▶ one line per entry      CLIENT KILL ─▶ kills ─▶ server closes
//!  server: gone(id) ─────────────────┘
//! ```

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use crate::commands::ClientCtx;

/// The server's own address, as every connection sees it (QEMU's user
/// network gives the guest this one).
pub const LOCAL_ADDR: &str = "10.0.2.15:6379";

/// One connection as `CLIENT LIST` shows it.
#[derive(Clone, Debug)]
pub struct ClientInfo {
    id: u64,
    addr: String,
    since_ms: u64,
    last_ms: u64,
    name: Option<Vec<u8>>,
    db: usize,
    sub: usize,
    psub: usize,
    ssub: usize,
    multi: i64,
    /// The last command's full name (`client|list`), `None` before the
    /// first or after an unknown one.
    cmd: Option<&'static str>,
    /// Bytes of the request being run, while it runs (`qbuf=`).
    qbuf: usize,
    no_evict: bool,
    /// The protocol version it speaks (`HELLO`): `resp=`.
    resp: i64,
    /// The ACL user it runs as (`user=`).
    user: Vec<u8>,
}

/// Every connection, and the kills asked for.
#[derive(Debug, Default)]
pub struct Clients {
    by_id: BTreeMap<u64, ClientInfo>,
    kills: Vec<u64>,
}

impl ClientInfo {
    /// The `CLIENT LIST` line (without the line break), as Redis 7 words it
    /// for the fields this server has; `tracking` is its client-side
    /// caching flags (`t`, `R`, `B`, see `kvstore::tracking`) and redirect
    /// (`redir=`, -1 when off).
    pub fn line(&self, now_ms: u64, tracking: (&str, i64)) -> String {
        let name = self
            .name
            .as_deref()
            .map(String::from_utf8_lossy)
            .unwrap_or_default();
        let cmd = self.cmd.unwrap_or("NULL");
        let mut flags = String::from(match (self.is_pubsub(), self.multi >= 0) {
            (true, _) => "P",
            (_, true) => "x",
            _ => "",
        });
        flags.push_str(tracking.0);
        if self.no_evict {
            flags.push('e');
        }
        if flags.is_empty() {
            flags.push('N');
        }
        format!(
            "id={} addr={} laddr={LOCAL_ADDR} fd=-1 name={} age={} idle={} flags={} db={} sub={} psub={} ssub={} multi={} qbuf={} qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd={} user={} redir={} resp={}",
            self.id,
            self.addr,
            name,
            now_ms.saturating_sub(self.since_ms) / 1000,
            now_ms.saturating_sub(self.last_ms) / 1000,
            flags,
            self.db,
            self.sub,
            self.psub,
            self.ssub,
            self.multi,
            self.qbuf,
            cmd,
            String::from_utf8_lossy(&self.user),
            tracking.1,
            self.resp
        )
    }

    /// The connection's id (`CLIENT ID`).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The connection's address, `ip:port`.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The ACL user it runs as.
    pub fn user(&self) -> &[u8] {
        &self.user
    }

    /// Whether it is in pub/sub mode.
    pub fn is_pubsub(&self) -> bool {
        self.sub + self.psub + self.ssub > 0
    }
}

impl Clients {
    /// A new connection from `addr` at `now_ms`.
    pub fn connected(&mut self, id: u64, addr: String, now_ms: u64) {
        self.by_id.insert(
            id,
            ClientInfo {
                id,
                addr,
                since_ms: now_ms,
                last_ms: now_ms,
                name: None,
                db: 0,
                sub: 0,
                psub: 0,
                ssub: 0,
                multi: -1,
                cmd: None,
                qbuf: 0,
                no_evict: false,
                resp: 2,
                user: crate::acl::DEFAULT_USER.to_vec(),
            },
        );
    }

    /// The connection closed.
    pub fn gone(&mut self, id: u64) {
        self.by_id.remove(&id);
    }

    /// Records what `client` looks like at `now_ms`, running `command` (its
    /// full name, `None` if unknown) from a request of `request_len`
    /// bytes (0 once it ran).
    pub fn seen(
        &mut self,
        client: &ClientCtx,
        command: Option<&'static str>,
        request_len: usize,
        now_ms: u64,
    ) {
        let Some(info) = self.by_id.get_mut(&client.id()) else {
            return;
        };
        info.last_ms = now_ms;
        if info.name.as_deref() != client.name() {
            info.name = client.name().map(<[u8]>::to_vec);
        }
        if info.user != client.user() {
            info.user = client.user().to_vec();
        }
        info.db = client.db();
        info.resp = client.protocol().version();
        info.sub = client.channels.len();
        info.psub = client.patterns.len();
        info.ssub = client.shard_channels.len();
        info.multi = client.multi.as_ref().map_or(-1, |m| m.queued.len() as i64);
        info.cmd = command;
        info.qbuf = request_len;
    }

    /// Sets `CLIENT NO-EVICT` for `id`.
    pub fn set_no_evict(&mut self, id: u64, on: bool) {
        if let Some(info) = self.by_id.get_mut(&id) {
            info.no_evict = on;
        }
    }

    /// The connection `id`, if registered.
    pub fn get(&self, id: u64) -> Option<&ClientInfo> {
        self.by_id.get(&id)
    }

    /// Every registered connection, by id.
    pub fn all(&self) -> impl Iterator<Item = &ClientInfo> {
        self.by_id.values()
    }

    /// Asks the server to close connection `id`.
    pub fn kill(&mut self, id: u64) {
        self.kills.push(id);
    }

    /// The connections to close, since the last call.
    pub fn take_kills(&mut self) -> Vec<u64> {
        core::mem::take(&mut self.kills)
    }
}
