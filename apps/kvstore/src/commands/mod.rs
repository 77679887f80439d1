//! Command execution: the [`Engine`] runs one parsed command against the
//! dataset and returns the reply plus the canonical commands to log.
//!
//! # What gets logged
//!
//! Every change is described by [`Outcome::effects`] in a form that replays
//! to the same dataset whenever the log is loaded:
//!
//! | command                              | logged as                          |
//! |--------------------------------------|------------------------------------|
//! | `SET k v EX 10` (`PX`, `EXAT`, ...)  | `SET k v PXAT <absolute ms>`        |
//! | `SET k v NX` / `XX` / `GET`, `SETNX`, `GETSET` (if they wrote) | `SET k v` |
//! | `INCR`, `DECR`, `INCRBY`, `DECRBY`   | `SET k <new value> KEEPTTL`        |
//! | `EXPIRE`, `PEXPIRE`, `EXPIREAT`, ... | `PEXPIREAT k <absolute ms>`        |
//! | any expiry time already in the past  | `DEL k` (if the key existed)       |
//! | `DEL k1 k2` (k2 missing)             | `DEL k1`; nothing if none existed  |
//! | `APPEND`, `MSET`, `PERSIST` (if it removed a TTL) | as given              |
//! | `FLUSHALL`, `FLUSHDB`                | `FLUSHALL`                         |
//! | a key found expired when touched     | `DEL k`, before the command's own  |
//! | `RENAME`/`COPY`/`MOVE` of a hash     | `DEL` of the target, then its `HSET` (and `PEXPIREAT`) |
//! | hash writes (`HSET`, `HDEL`, ...)    | see `commands::hashes`             |
//! | set writes (`SADD`, `SPOP`, ...)     | see `commands::sets`               |
//! | `SORT ... STORE dst`                 | see `commands::sort`               |
//! | `PFADD`, `PFCOUNT`, `PFMERGE`        | see `commands::hyperloglog`        |
//! | `GEOADD`; `GEO*STORE` results        | `ZADD`; `DEL` and the whole result |
//! | `BITOP`; `BITFIELD` (if it changed)  | `SET` (or `DEL`) of the result; itself |
//! | `RESTORE`                            | as `COPY`: `DEL`, then what rebuilds the value (see `commands::dump`) |
//! | `FUNCTION LOAD`/`DELETE`/`FLUSH`/`RESTORE` | see `commands::functions`   |
//!
//! Replay goes through [`Engine::load`], which, like Redis loading its AOF,
//! never expires keys while loading: the logged `DEL`s say exactly when
//! keys went away, so every command sees the state it saw the first time.

mod acl;
mod acl_check;
mod auth;
mod bitfield;
mod bitfield_math;
mod bitop;
mod bits;
pub(crate) mod categories;
mod client;
mod client_pause;
mod cluster;
mod connection;
mod dump;
mod effects;
mod errors;
mod evict;
mod exec;
mod expire;
mod expiry_arg;
mod functions;
mod geo;
mod geo_search;
mod hashes;
mod hll_debug;
mod hyperloglog;
mod info;
mod introspect;
mod key_flags;
mod key_positions;
mod keys;
mod latency;
mod lcs;
mod list_moves;
mod lists;
mod memory;
mod multi_pop;
mod object;
mod persistence;
mod pubsub;
mod scripting;
mod set_options;
mod sets;
mod slowlog;
mod sort;
mod stats;
mod stream_groups;
mod streams;
mod string_ops;
mod strings;
pub(crate) mod table;
mod tracking;
mod transaction;
mod unblock;
mod zset_algebra;
mod zset_pops;
mod zset_ranges;
mod zsets;

#[cfg(test)]
mod tests;

use alloc::vec::Vec;

pub use client::ClientCtx;
pub(crate) use client::Multi;
pub use effects::{Effects, SHARE_FROM};
pub use errors::misconf;
pub use stats::Stats;
pub use streams::push_stream;
pub use zsets::{push_zset, ZSET_MEMBERS_PER_RECORD};

use crate::aof::RewriteScan;
use crate::config::Config;
use crate::resp::Reply;
use crate::store::{Entry, Store};
use crate::Args;
use exec::Exec;

/// The version string `INFO` and `HELLO` report; clients compare against
/// it to pick features, so it claims the Redis whose command set and reply
/// types kvstore implements: 7.0 (the release of Debian's redis-server,
/// which the differential test compares against). Claiming 7.2 made
/// clients count on 7.2's additions kvstore does not have.
pub const REDIS_VERSION: &str = "7.0.15";

/// The result of one command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// What to send the client.
    pub reply: Reply,
    /// Canonical commands to append to the log, in order; empty if the
    /// dataset did not change.
    pub effects: Effects,
}

impl Outcome {
    /// The outcome of a command that changed nothing: `reply` alone, with
    /// nothing to log.
    pub fn unchanged(reply: Reply) -> Self {
        Outcome {
            reply,
            effects: Effects::default(),
        }
    }

    /// Whether the command changed the dataset.
    pub fn modified(&self) -> bool {
        !self.effects.is_empty()
    }
}

/// The database and everything commands need around it: the keyspace, the
/// settings and the counters. One engine serves all clients; the server
/// calls it with one command at a time.
#[derive(Debug)]
pub struct Engine {
    /// The databases (`SELECT`), `config.databases` of them.
    dbs: Vec<Store>,
    /// The database of the last record the log holds: a record in another
    /// database is preceded by a `SELECT`. (A rewrite's steps leave its
    /// new log in this database too, so the records appended to the old
    /// log and to the new one read the same in both.)
    logged_db: usize,
    /// The database records being loaded apply to (the log's `SELECT`s).
    loading_db: usize,
    config: Config,
    stats: Stats,
    started_ms: u64,
    /// State of the generator `RANDOMKEY` draws from.
    random: faultline_rng::XorShift64Star,
    /// Publish/subscribe state (never logged: messages are not data).
    pubsub: crate::pubsub::PubSub,
    /// `CLIENT PAUSE` in force (see `kvstore::pause`).
    pause: crate::pause::Pause,
    /// Client-side caching: who tracks which keys (`CLIENT TRACKING`).
    tracking: crate::tracking::Tracking,
    /// The running script called a read-only command: its caller tracks
    /// the script's declared keys, as in Redis.
    script_read: bool,
    /// The connections, for `CLIENT LIST`, `INFO` and `KILL`.
    clients: crate::clients::Clients,
    /// The commands that took longest (`SLOWLOG`).
    slowlog: crate::slowlog::SlowLog,
    /// Microseconds on a monotonic clock, to time commands with.
    clock_us: fn() -> u64,
    /// Clients blocked on keys (`BLPOP`, ...), see `kvstore::blocking`.
    blocking: crate::blocking::Blocking,
    /// Running the commands of an `EXEC`: blocking commands do not block.
    in_exec: bool,
    /// What the command just run asked to wait for, if it blocks.
    pending_wait: Option<crate::blocking::Wait>,
    /// The running log rewrite's scan, if one runs: commands ask it which
    /// keys the new log holds already (see [`RewriteScan`]).
    rewrite: Option<RewriteScan>,
    /// The scripts known (`SCRIPT LOAD`, `EVAL`) and the Lua state.
    scripts: crate::scripting::Scripts<Engine>,
    /// The script running now, if one is.
    script_run: Option<scripting::ScriptRun>,
    /// The buffers `redis.call` reads its arguments into (see
    /// `Host::call_args`).
    script_call_args: Vec<Vec<u8>>,
    /// The user name buffer of the last script's own client, for the next
    /// one's: starting a script allocates nothing for it.
    script_user: Vec<u8>,
    /// What scripts' `math.random` draws from, shared by all of them.
    lua_random: crate::scripting::random::Rand48,
    /// The error the script just finished answers was counted when a
    /// command it ran answered it (see `Host::error_counted`).
    reply_error_counted: bool,
    /// How scripts' `cjson` encodes and decodes, shared by all of them.
    cjson_settings: crate::scripting::cjson_settings::CjsonSettings,
    /// The function libraries (`FUNCTION LOAD`) and their Lua state.
    functions: crate::scripting::functions::Functions<Engine>,
    /// The running script declared `allow-oom`: its writes are not
    /// refused for `maxmemory`.
    script_allows_oom: bool,
    /// What serves the other clients while a script is busy (see
    /// `kvstore::busy`), if the server installed it.
    busy_poll: BusyPollSlot,
    /// When the library code `FUNCTION LOAD` runs started (microseconds),
    /// for its timeout; `None` when none runs, or while replaying the log.
    library_load_started: Option<u64>,
    /// The ACL users and log (see `kvstore::acl`).
    acl: crate::acl::Acl,
    /// The `requirepass` the default user's password was last set from.
    acl_requirepass: Option<Vec<u8>>,
}

/// The engine's [`BusyPoll`](crate::busy::BusyPoll), if any.
#[derive(Default)]
struct BusyPollSlot(Option<alloc::boxed::Box<dyn crate::busy::BusyPoll>>);

impl core::fmt::Debug for BusyPollSlot {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(if self.0.is_some() { "BusyPoll" } else { "None" })
    }
}

impl Engine {
    /// An empty database with the given settings; `now_ms` is the start
    /// time `INFO` measures uptime from.
    pub fn new(config: Config, now_ms: u64) -> Self {
        Engine {
            dbs: (0..config.databases.max(1)).map(|_| Store::new()).collect(),
            // A new log starts in database 0.
            logged_db: 0,
            loading_db: 0,
            config,
            stats: Stats::default(),
            started_ms: now_ms,
            random: faultline_rng::XorShift64Star::new(now_ms | 1),
            pubsub: crate::pubsub::PubSub::default(),
            tracking: Default::default(),
            pause: Default::default(),
            script_read: false,
            clients: crate::clients::Clients::default(),
            slowlog: crate::slowlog::SlowLog::default(),
            clock_us: || 0,
            blocking: crate::blocking::Blocking::default(),
            in_exec: false,
            pending_wait: None,
            rewrite: None,
            scripts: crate::scripting::Scripts::default(),
            script_run: None,
            script_call_args: Vec::new(),
            script_user: Vec::new(),
            lua_random: Default::default(),
            cjson_settings: Default::default(),
            reply_error_counted: false,
            functions: Default::default(),
            script_allows_oom: false,
            busy_poll: BusyPollSlot::default(),
            library_load_started: None,
            acl: crate::acl::Acl::default(),
            acl_requirepass: None,
        }
        .with_requirepass()
    }

    /// The default user's password set from `requirepass`, if it changed
    /// since the last time (start, `CONFIG SET requirepass`), as Redis.
    fn with_requirepass(mut self) -> Self {
        self.sync_requirepass();
        self
    }

    fn sync_requirepass(&mut self) {
        if self.acl_requirepass != self.config.requirepass {
            self.acl_requirepass = self.config.requirepass.clone();
            self.acl
                .set_default_password(self.acl_requirepass.as_deref());
        }
    }

    /// Runs one command for `client` at time `now_ms` (milliseconds on the
    /// same clock as every other call; use Unix time if the log must
    /// survive restarts, since it stores absolute expiry times).
    ///
    /// ```
    /// use kvstore::commands::{ClientCtx, Engine};
    /// use kvstore::config::Config;
    /// use kvstore::resp::Reply;
    ///
    /// let mut engine = Engine::new(Config::default(), 0);
    /// let mut client = ClientCtx::new(1);
    /// let args = |s: &str| s.split(' ').map(|a| a.as_bytes().to_vec()).collect::<Vec<_>>();
    /// let out = engine.execute(&args("SET k v EX 10"), &mut client, 5_000);
    /// assert_eq!(out.reply, Reply::ok());
    /// assert_eq!(out.effects.commands(), [args("SET k v PXAT 15000")]);
    /// assert_eq!(engine.execute(&args("TTL k"), &mut client, 6_000).reply, Reply::Integer(9));
    /// ```
    pub fn execute(&mut self, args: &[Vec<u8>], client: &mut ClientCtx, now_ms: u64) -> Outcome {
        self.execute_owned(args.to_vec(), client, now_ms)
    }

    /// [`execute`](Engine::execute) for arguments the caller gives away: a
    /// value is stored in the memory it was received in, not copied (the
    /// server's path; see `RECEIVE_DIRECT` in `kvstore::resp`).
    pub fn execute_owned(
        &mut self,
        mut args: Args,
        client: &mut ClientCtx,
        now_ms: u64,
    ) -> Outcome {
        let full_name = table::full_name(&args);
        self.clients
            .seen(client, full_name, table::request_len(&args), now_ms);
        if args.len() == 1 && args[0].eq_ignore_ascii_case(b"reset") {
            // Not queued in a transaction, allowed while subscribed.
            return self.reset(client);
        }
        let mut outcome = match pubsub::subscribed_gate(&args, client) {
            Some(reply) => Outcome::unchanged(reply),
            None => match self.transaction(&mut args, client, now_ms) {
                Some(outcome) => outcome,
                None => self.run(&mut args, client, now_ms, false),
            },
        };
        if let Some(wait) = self.pending_wait.take() {
            // A blocking command found nothing: the client waits.
            let db = client.db.min(self.dbs.len() - 1);
            self.blocking.block(client.id(), db, args.clone(), wait);
            client.blocked = true;
        }
        let served = self.serve_blocked(now_ms);
        outcome.effects.append(served);
        // What the command changed (database, name, subscriptions).
        self.clients.seen(client, full_name, 0, now_ms);
        if let Some(name) = args.first() {
            // `CLIENT CACHING` covers the next command (or transaction).
            if client.multi.is_none() && !name.eq_ignore_ascii_case(b"client") {
                self.tracking.command_done(client.id());
            }
        }
        self.count_reply_error(&outcome.reply);
        if outcome.modified() {
            self.stats.dirty += 1;
        }
        let used = self.used_memory() as u64;
        self.stats.used_memory_peak = self.stats.used_memory_peak.max(used);
        outcome
    }

    /// Counts `reply` in the error stats if it is an error a command
    /// inside it (a script's) has not counted already.
    fn count_reply_error(&mut self, reply: &Reply) {
        let counted = core::mem::take(&mut self.reply_error_counted);
        if let (Reply::Error(text), false) = (reply, counted) {
            self.stats.count_error(text);
        }
    }

    /// `RESET`: the connection as if new: no transaction, nothing watched,
    /// no subscriptions, database 0, no name, and (with a `requirepass`)
    /// not authenticated. Answers `+RESET`.
    fn reset(&mut self, client: &mut ClientCtx) -> Outcome {
        self.pubsub.forget(client.id());
        self.tracking.disable(client.id());
        *client = ClientCtx::new(client.id());
        Outcome::unchanged(Reply::Simple("RESET".into()))
    }

    /// Applies one command read back from the log. Keys do not expire while
    /// loading, expiry times in the past are kept as they are, `maxmemory`
    /// is not enforced and nothing is logged; call with the current time.
    /// Returns the error reply if the command failed (a log written by this
    /// engine never contains one).
    pub fn load(&mut self, mut args: Args, now_ms: u64) -> Result<(), Reply> {
        let mut client = ClientCtx::new(0);
        client.db = self.loading_db;
        let reply = self.run(&mut args, &mut client, now_ms, true).reply;
        // The log goes on in the database its last record left it in.
        self.loading_db = client.db;
        self.logged_db = self.loading_db;
        match reply {
            Reply::Error(_) => Err(reply),
            _ => Ok(()),
        }
    }

    /// One step of background expiry: examines up to `budget` keys and
    /// removes the expired ones. Returns the `DEL` commands to log. Call it
    /// periodically (Redis does ten times a second). A cycle that takes
    /// `latency-monitor-threshold` or longer is an `expire-cycle` latency
    /// event. Clients blocked in the
    /// consumer group of a stream that expired are answered (see
    /// [`take_unblocked`](Engine::take_unblocked)).
    pub fn active_expire(&mut self, now_ms: u64, budget: usize) -> Effects {
        let started_us = (self.clock_us)();
        let mut effects = Effects::default();
        if self.pause.active(now_ms) {
            // Nothing expires while clients are paused, as in Redis.
            return effects;
        }
        for db in 0..self.dbs.len() {
            let removed = self.dbs[db].sweep_expired(now_ms, budget);
            self.stats.expired_keys += removed.len() as u64;
            for key in removed {
                let mut del = Effects::default();
                del.push([&b"DEL"[..], &key]);
                effects.append(self.in_db(db, del));
                let flags = self.config.notify_keyspace_events;
                crate::notify::publish(
                    &mut self.pubsub,
                    flags,
                    crate::notify::EXPIRED,
                    "expired",
                    &key,
                    db,
                );
                self.tracking.invalidate(&key, None);
            }
        }
        // A client may wait in the group of a stream that expired.
        effects.append(self.serve_blocked(now_ms));
        let ms = (self.clock_us)().saturating_sub(started_us) / 1000;
        let threshold = self.config.latency_monitor_threshold;
        if threshold > 0 && ms >= threshold {
            self.stats
                .latency_events
                .record("expire-cycle", ms, now_ms / 1000);
        }
        effects
    }

    /// `effects` made in database `db`, preceded by a `SELECT` when the log
    /// was last told about another one.
    fn in_db(&mut self, db: usize, effects: Effects) -> Effects {
        if effects.is_empty() || self.logged_db == db {
            return effects;
        }
        self.logged_db = db;
        let mut selected = Effects::default();
        selected.push([&b"SELECT"[..], &crate::num::format_i64(db as i64)]);
        selected.append(effects);
        selected
    }

    /// The memory estimate of every database, and what Lua holds for
    /// scripts and functions (which counts toward `maxmemory`, as in Redis).
    pub fn used_memory(&self) -> usize {
        self.data_memory() + self.scripts.lua_memory() + self.functions.lua_memory()
    }

    /// The memory estimate of every database.
    fn data_memory(&self) -> usize {
        self.dbs.iter().map(Store::used_memory).sum()
    }

    /// Whether the server should compact the log now: `BGREWRITEAOF` asked
    /// for it, or the log (`aof_current_size`) outgrew its size after the
    /// last rewrite (`aof_base_size`) by the `auto-aof-rewrite-*` rule. The
    /// server keeps both sizes in [`Stats`] up to date.
    pub fn aof_rewrite_wanted(&self) -> bool {
        let s = &self.stats;
        !s.aof_rewrite_in_progress
            && (s.aof_rewrite_scheduled
                || (self.config.appendonly
                    && self
                        .config
                        .aof_rewrite
                        .should_rewrite(s.aof_current_size, s.aof_base_size)))
    }

    /// The log cannot be written (full, or the disk failed): from now on
    /// write commands are answered `-MISCONF` with `reason`, reads go on.
    pub fn log_write_failed(&mut self, reason: &str) {
        self.stats.aof_write_error = Some(reason.into());
    }

    /// The log can be written again: writes are accepted.
    pub fn log_write_recovered(&mut self) {
        self.stats.aof_write_error = None;
    }

    /// The reply for a write whose records could not be made durable.
    pub fn log_error_reply(&self) -> Reply {
        errors::misconf(
            self.stats
                .aof_write_error
                .as_deref()
                .unwrap_or("the log could not be written"),
        )
    }

    /// A `SHUTDOWN` the server must carry out, if one was asked since the
    /// last call: `Some(force)`.
    pub fn take_shutdown(&mut self) -> Option<bool> {
        self.stats.shutdown_asked.take()
    }

    /// Asks the server for a log rewrite, as `BGREWRITEAOF` does (the
    /// server asks for one itself when the log is full).
    pub fn schedule_aof_rewrite(&mut self) {
        self.stats.aof_rewrite_scheduled = true;
    }

    /// The server begins rewriting the log at `now_ms`: from now on it
    /// takes [`aof_rewrite_step`](Engine::aof_rewrite_step)s, and the
    /// records of commands go to both logs.
    pub fn aof_rewrite_started(&mut self, now_ms: u64) {
        self.rewrite = Some(RewriteScan::new(now_ms));
        self.stats.aof_rewrite_scheduled = false;
        self.stats.aof_rewrite_in_progress = true;
    }

    /// The rewrite ended after `took_ms`: with the new log's size, or
    /// `None` if it failed and the old log stays. A failure also resets the
    /// base size, so the automatic rule waits for the log to double again
    /// instead of retrying at once.
    pub fn aof_rewrite_finished(&mut self, new_size: Option<u64>, took_ms: u64) {
        self.rewrite = None;
        let s = &mut self.stats;
        s.aof_rewrite_in_progress = false;
        s.aof_last_rewrite_ms = Some(took_ms);
        s.aof_last_rewrite_ok = new_size.is_some();
        match new_size {
            Some(size) => {
                s.aof_rewrites += 1;
                s.aof_current_size = size;
                s.aof_base_size = size;
            }
            None => s.aof_base_size = s.aof_current_size,
        }
    }

    /// Database 0, e.g. for [`aof::rewrite`](crate::aof::rewrite).
    pub fn store(&self) -> &Store {
        &self.dbs[0]
    }

    /// Every database, by index.
    pub fn databases(&self) -> &[Store] {
        &self.dbs
    }

    /// Adds the next step of the running log rewrite, about `keys` keys,
    /// to `out` (the new log only), a record at a time (see
    /// [`RewriteScan::step_records`]). Returns whether the scan is
    /// complete, as it is when no rewrite runs.
    pub fn aof_rewrite_step(&mut self, keys: usize, out: &mut dyn crate::aof::RecordBuf) -> bool {
        let libraries = match &self.rewrite {
            // The new log starts with the users and function libraries.
            Some(scan) if scan.at_start() => {
                let mut records = self.acl.records();
                records.extend(self.function_records());
                records
            }
            _ => Vec::new(),
        };
        match self.rewrite.as_mut() {
            Some(scan) => {
                scan.set_prelude(libraries);
                scan.step_records(&self.dbs, keys, self.logged_db, out)
            }
            None => true,
        }
    }

    /// Keys in all databases.
    pub fn key_count(&self) -> usize {
        self.dbs.iter().map(Store::len).sum()
    }

    /// The settings in force.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The settings, for the server to adjust.
    pub fn config_mut(&mut self) -> &mut Config {
        &mut self.config
    }

    /// The counters `INFO` reports.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Messages `PUBLISH` left since the last call, for the server to
    /// append to each subscriber's output: (client id, RESP bytes).
    pub fn take_messages(&mut self) -> Vec<(u64, Vec<u8>)> {
        self.pubsub.take_messages()
    }

    /// Whether `CLIENT PAUSE` holds `args` for `client` at `now_ms`: the
    /// session keeps it and runs it once the pause ends. A command that
    /// cannot run (unknown, wrong arity) gets its error instead.
    pub fn paused(&self, args: &[Vec<u8>], client: &ClientCtx, now_ms: u64) -> bool {
        if !self.pause.active(now_ms) {
            return false;
        }
        let Ok(spec) = transaction::check(args) else {
            return false;
        };
        let writes = |spec: &table::Spec| {
            spec.flags & table::WRITE != 0 || crate::pause::MAY_REPLICATE.contains(&spec.name)
        };
        let exec_writes = spec.name == "exec"
            && client.multi.as_ref().is_some_and(|m| {
                m.queued
                    .iter()
                    .any(|queued| transaction::check(queued).is_ok_and(writes))
            });
        self.pause.holds(now_ms, writes(spec) || exec_writes)
    }

    /// When the `CLIENT PAUSE` in force at `now_ms` ends, if one is: the
    /// server wakes then to run what waited.
    pub fn pause_deadline(&self, now_ms: u64) -> Option<u64> {
        self.pause.deadline(now_ms)
    }

    /// Client-side caching messages (invalidations, broken redirects) left
    /// since the last call, after keeping the tracking table within
    /// `tracking-table-max-keys`: (client id, message) for the server to
    /// hand to each client's session (see `kvstore::tracking`).
    pub fn take_invalidations(&mut self) -> Vec<(u64, crate::tracking::Push)> {
        if !self.tracking.any() && !self.tracking.has_pending() {
            return Vec::new();
        }
        self.tracking.limit(self.config.tracking_table_max_keys);
        let clients = &self.clients;
        self.tracking.take(|id| clients.get(id).is_some())
    }

    /// Client `id` connected from `addr` (`ip:port`) at `now_ms`.
    pub fn client_connected(&mut self, id: u64, addr: alloc::string::String, now_ms: u64) {
        self.clients.connected(id, addr, now_ms);
    }

    /// Serves the clients blocked on keys that got data (see
    /// `kvstore::blocking`). For each ready key: a list's or sorted set's
    /// waiters in order of arrival run their command again, as long as the
    /// key holds a value of the type they wait for; a stream's waiters
    /// each run theirs again, in order of arrival, those still without
    /// entries waiting on in their place (each waits after its own ID).
    /// Each served command's effects are logged as what it did (a `BLMOVE`
    /// as `LMOVE`, a `BLPOP` as `LPOP`), after the command that made the
    /// key ready; keys a served command fills in turn (`BLMOVE`'s
    /// destination) are served too. A client waiting in a consumer group
    /// whose stream or group is gone is answered with an error, as in
    /// Redis (see [`Blocking::signal_lost_groups`](crate::blocking::Blocking::signal_lost_groups)).
    fn serve_blocked(&mut self, now: u64) -> Effects {
        let dbs = &self.dbs;
        self.blocking.signal_lost_groups(|db, key, group| {
            live_entry(dbs, db, key, now)
                .and_then(Entry::stream)
                .is_some_and(|s| s.groups.contains_key(group))
        });
        let mut effects = Effects::default();
        while let Some((db, key)) = self.blocking.next_ready() {
            match live_entry(&self.dbs, db, &key, now).map(|e| e.data().type_name()) {
                Some("stream") => effects.append(self.serve_stream_waiters(db, &key, now)),
                Some(kind) => {
                    effects.append(self.serve_in_order(db, &key, kind, now));
                    self.refuse_group_waiters(db, &key, errors::STREAM_GONE);
                }
                None => self.refuse_group_waiters(db, &key, errors::STREAM_GONE),
            }
        }
        effects
    }

    /// Serves the waiters on `key` of `db`, which holds a `kind` that is
    /// not a stream, first come first served while it holds one.
    fn serve_in_order(&mut self, db: usize, key: &[u8], kind: &str, now: u64) -> Effects {
        let mut effects = Effects::default();
        while let Some(id) = self.blocking.first_waiter(db, key) {
            let Some(waiter) = self.blocking.waiter(id) else {
                break;
            };
            let servable = waiter.wait.kind == kind
                && live_entry(&self.dbs, db, key, now)
                    .is_some_and(|e| e.data().type_name() == kind);
            if !servable {
                break;
            }
            match self.serve_again(id, db, now) {
                Some(served) => effects.append(served),
                None => break,
            }
        }
        effects
    }

    /// Serves the waiters on the stream `key` of `db`, each in turn: a
    /// client of a consumer group that is gone is answered `-NOGROUP`.
    fn serve_stream_waiters(&mut self, db: usize, key: &[u8], now: u64) -> Effects {
        let mut effects = Effects::default();
        for id in self.blocking.waiters_on(db, key) {
            let Some(waiter) = self.blocking.waiter(id) else {
                continue;
            };
            if waiter.wait.kind != "stream" {
                continue;
            }
            let Some(stream) = live_entry(&self.dbs, db, key, now).and_then(Entry::stream) else {
                // A served client's command took the stream.
                break;
            };
            if let Some(group) = &waiter.wait.group {
                if !stream.groups.contains_key(group) {
                    self.refuse(id, errors::GROUP_GONE);
                    continue;
                }
            }
            if let Some(served) = self.serve_again(id, db, now) {
                effects.append(served);
            }
        }
        effects
    }

    /// Runs blocked client `id`'s command again, in database `db`: its
    /// effects if that answered it (the reply goes to
    /// [`take_unblocked`](Engine::take_unblocked)), `None` if it found
    /// nothing and the client waits on in its place.
    fn serve_again(&mut self, id: u64, db: usize, now: u64) -> Option<Effects> {
        let mut args = self.blocking.waiter(id)?.args.clone();
        let mut client = ClientCtx::new(id);
        client.db = db;
        client.authenticated = true;
        client.acl_exempt = true;
        let outcome = self.run(&mut args, &mut client, now, false);
        if self.pending_wait.take().is_some() {
            return None;
        }
        self.blocking.unblock(id, outcome.reply);
        Some(outcome.effects)
    }

    /// Answers every client waiting on `key` of `db` in a consumer group
    /// with the error `text` (the stream is gone).
    fn refuse_group_waiters(&mut self, db: usize, key: &[u8], text: &str) {
        for id in self.blocking.group_waiters_on(db, key) {
            self.refuse(id, text);
        }
    }

    /// Answers blocked client `id` with the error `text`, counted as its
    /// command's failure (the call was counted when it blocked). It
    /// changed nothing, so nothing is logged.
    fn refuse(&mut self, id: u64, text: &str) {
        let Some(waiter) = self.blocking.waiter(id) else {
            return;
        };
        self.stats.count_blocked_failure(&waiter.args, text);
        self.blocking.unblock(id, Reply::error(text));
    }

    /// Answers the blocked clients whose timeout passed at `now_ms` (their
    /// replies join [`take_unblocked`](Engine::take_unblocked)).
    pub fn unblock_timed_out(&mut self, now_ms: u64) {
        if !self.blocking.is_empty() {
            self.blocking.expire(now_ms);
        }
    }

    /// When the next blocked client times out, if any: the server sleeps
    /// no longer.
    pub fn next_block_deadline(&self) -> Option<u64> {
        self.blocking.next_deadline()
    }

    /// Replies for blocked clients that were served, timed out or
    /// unblocked since the last call: (client id, reply). The server hands
    /// each to its session ([`Session::unblock`](crate::session::Session::unblock)).
    pub fn take_unblocked(&mut self) -> Vec<(u64, Reply)> {
        self.blocking.take_unblocked()
    }

    /// How many clients are blocked.
    pub fn blocked_clients(&self) -> usize {
        self.blocking.len()
    }

    /// Client `id` disconnected: its subscriptions end, and it stops
    /// waiting if it was blocked.
    pub fn client_gone(&mut self, id: u64) {
        self.blocking.forget(id);
        self.tracking.disable(id);
        self.pubsub.forget(id);
        self.clients.gone(id);
    }

    /// Connections `CLIENT KILL` asked to close since the last call.
    pub fn take_kills(&mut self) -> Vec<u64> {
        self.clients.take_kills()
    }

    /// The counters, for the server to fill in connection and log figures.
    pub fn stats_mut(&mut self) -> &mut Stats {
        &mut self.stats
    }

    /// `SWAPDB index1 index2`: the two databases trade contents, for every
    /// client. Refused while the log is rewritten: the rewrite's scan would
    /// have captured the keys under the old indices.
    fn swapdb(&mut self, args: &[Vec<u8>], loading: bool) -> Outcome {
        let reply = Outcome::unchanged;
        // Each index a 32-bit integer, with its own error, as in Redis.
        let index = |arg: &[u8]| crate::num::parse_i64(arg).filter(|n| i32::try_from(*n).is_ok());
        let Some(a) = index(&args[1]) else {
            return reply(Reply::error("ERR invalid first DB index"));
        };
        let Some(b) = index(&args[2]) else {
            return reply(Reply::error("ERR invalid second DB index"));
        };
        let range = 0..self.dbs.len() as i64;
        if !range.contains(&a) || !range.contains(&b) {
            return reply(Reply::error("ERR DB index is out of range"));
        }
        if self.stats.aof_rewrite_in_progress && !loading {
            return reply(Reply::error(
                "ERR SWAPDB is not allowed while the append-only log is being rewritten; try again when INFO says aof_rewrite_in_progress:0",
            ));
        }
        self.dbs.swap(a as usize, b as usize);
        // Waited keys may hold data now.
        self.blocking.signal_db(a as usize);
        self.blocking.signal_db(b as usize);
        let mut effects = Effects::default();
        if !loading {
            effects.push(&args[..3]);
            effects.mark_db_independent();
            self.stats.total_commands_processed += 1;
        }
        Outcome {
            reply: Reply::ok(),
            effects,
        }
    }

    /// Why a client's command cannot run now, whatever its arguments
    /// say: a write while the log cannot be written (`-MISCONF`) or while
    /// `min-replicas-to-write` asks for replicas (`-NOREPLICAS`), or a
    /// write that may add data while memory is past `maxmemory`, or that
    /// would push it past (`-OOM`; an eviction policy has made what room
    /// it could before, see `commands::evict`). Checked
    /// before running, and before queueing inside `MULTI`, as Redis does.
    pub(super) fn refusal(&self, spec: &table::Spec, args: &[Vec<u8>], db: usize) -> Option<Reply> {
        let writes = spec.flags & table::WRITE != 0;
        if let (Some(reason), true) = (&self.stats.aof_write_error, writes) {
            return Some(errors::misconf(reason));
        }
        if writes && self.config.lacks_replicas() {
            return Some(errors::noreplicas());
        }
        let limit = self.config.maxmemory;
        if let (Some(growth), true) = (spec.growth, limit > 0 && !self.script_allows_oom) {
            // Over the limit already, any write that may add data is
            // refused (as Redis does); under it, one that would cross it.
            let grows = growth(&self.dbs[db], &self.config, args);
            let used = self.used_memory() as u64;
            if used > limit || (grows > 0 && used + grows as u64 > limit) {
                return Some(errors::oom());
            }
        }
        None
    }

    fn run(
        &mut self,
        args: &mut [Vec<u8>],
        client: &mut ClientCtx,
        now: u64,
        loading: bool,
    ) -> Outcome {
        match transaction::check(args) {
            Ok(spec) => self.run_checked(spec, args, client, now, loading),
            Err(refused) => {
                self.count_rejected(args);
                Outcome::unchanged(refused)
            }
        }
    }

    /// [`Engine::run`] of a command [`transaction::check`] found well
    /// formed, as `spec`.
    fn run_checked(
        &mut self,
        spec: &'static table::Spec,
        args: &mut [Vec<u8>],
        client: &mut ClientCtx,
        now: u64,
        loading: bool,
    ) -> Outcome {
        let reply = Outcome::unchanged;
        let Some(run) = spec.run else {
            return reply(errors::wrong_args(spec.name));
        };
        if !self.acl.auth_required() {
            // A connection that was in while no password was asked stays
            // in when one is set, as in Redis.
            client.authenticated = true;
        } else if !client.authenticated && !loading && !auth::BEFORE_AUTH.contains(&spec.name) {
            self.count_rejected(args);
            return reply(auth::noauth());
        }
        if !loading {
            if let Some(refused) = self.acl_refusal(spec, args, client, now) {
                self.count_rejected(args);
                return reply(refused);
            }
        }
        let db = client.db.min(self.dbs.len() - 1);
        let mut evicted = Effects::default();
        if !loading {
            evicted = self.evict_for(spec, args, db, now);
        }
        if !loading {
            if let Some(refusal) = self.refusal(spec, args, db) {
                self.count_rejected(args);
                return Outcome {
                    reply: refusal,
                    effects: evicted,
                };
            }
        }
        if !loading && spec.flags & table::ADMIN == 0 {
            self.feed_monitors(args, client, now);
        }
        let started_us = (self.clock_us)();
        if spec.name == "swapdb" {
            let mut outcome = self.swapdb(args, loading);
            evicted.append(outcome.effects);
            outcome.effects = evicted;
            return outcome;
        }
        if let Some(mut outcome) = self.script_command(spec, args, client, now, loading) {
            self.stats.used_memory_lua = self.scripts.lua_memory() as u64;
            self.stats.used_memory_functions = self.functions.lua_memory() as u64;
            self.stats.cached_scripts = self.scripts.len() as u64;
            evicted.append(outcome.effects);
            outcome.effects = evicted;
            if !loading {
                let kept = || crate::slowlog::trimmed(args);
                self.finished(
                    spec,
                    kept,
                    client,
                    now,
                    started_us,
                    outcome.reply.is_error(),
                );
            }
            return outcome;
        }
        for store in &mut self.dbs {
            // Any database may be written (`MOVE`, `COPY ... DB`).
            store.set_clock(now);
            store.set_lfu_tuning(self.config.lfu);
        }
        let logs_slow = self.config.slowlog_log_slower_than >= 0 && !client.in_script;
        let (before, rest) = self.dbs.split_at_mut(db);
        let (store, after) = rest.split_first_mut().expect("db is in range");
        let mut exec = Exec {
            store,
            db,
            dbs_before: before,
            dbs_after: after,
            config: &mut self.config,
            stats: &mut self.stats,
            client,
            now,
            started_ms: self.started_ms,
            random: &mut self.random,
            pubsub: &mut self.pubsub,
            tracking: &mut self.tracking,
            pause: &mut self.pause,
            clients: &mut self.clients,
            slowlog: &mut self.slowlog,
            blocking: &mut self.blocking,
            rewrite: self.rewrite.as_ref(),
            acl: &mut self.acl,
            may_block: !loading && !self.in_exec,
            block: None,
            loading,
            fullname: spec.name,
            effects: Effects::default(),
        };
        let created = exec.config.notify_keyspace_events & crate::notify::NEW != 0
            && spec.flags & table::WRITE != 0;
        let missing: Vec<Vec<u8>> = match created {
            true => key_args(spec, args)
                .filter(|key| exec.store.get(key).is_none_or(|e| e.is_expired(now)))
                .map(|key| key.to_vec())
                .collect(),
            false => Vec::new(),
        };
        let news_go_at = exec.pubsub.pending();
        // A write may take its values out of `args` (to keep them without
        // a copy): the slow log keeps what it needs of them first.
        let kept_args = (spec.flags & table::WRITE != 0 && logs_slow && !loading)
            .then(|| crate::slowlog::trimmed(args));
        let reply = run(&mut exec, args);
        if spec.flags & table::READONLY != 0 && !loading && exec.tracking.any() {
            match exec.client.in_script {
                // The script's caller tracks the script's declared keys.
                true => self.script_read = true,
                false => {
                    let keys = key_positions::key_positions(spec, args).unwrap_or_default();
                    let keys = keys.iter().filter_map(|&i| args.get(i).map(Vec::as_slice));
                    exec.tracking.remember(exec.client.id(), keys);
                }
            }
        }
        for key in missing {
            if exec.store.get(&key).is_some() {
                // Before the command's own events, as Redis sends it.
                let flags = exec.config.notify_keyspace_events;
                let published = exec.pubsub.pending();
                crate::notify::publish(exec.pubsub, flags, crate::notify::NEW, "new", &key, db);
                exec.pubsub.move_back(published, news_go_at);
            }
        }
        self.pending_wait = exec.block.take();
        let effects = match exec.effects.db_independent() {
            true => exec.effects,
            false => {
                let effects = exec.effects;
                self.in_db(db, effects)
            }
        };
        evicted.append(effects);
        let mut effects = evicted;
        if spec.name == "config|set" && !loading && !reply.is_error() {
            // A lower limit or another policy takes effect at once.
            effects.append(self.make_room(0, now));
            self.sync_requirepass();
        }
        if !loading {
            // Counted after running, so INFO does not count itself.
            let kept = || kept_args.unwrap_or_else(|| crate::slowlog::trimmed(args));
            self.finished(spec, kept, client, now, started_us, reply.is_error());
        }
        Outcome { reply, effects }
    }

    /// Shows `args`, about to run for `client`, to the monitors (a
    /// script's commands as `lua`'s).
    pub(super) fn feed_monitors(&mut self, args: &[Vec<u8>], client: &ClientCtx, now_ms: u64) {
        if !self.pubsub.has_monitors() {
            return;
        }
        let who = match client.in_script {
            true => "lua",
            false => self.clients.get(client.id()).map_or("", |c| c.addr()),
        };
        let line = crate::monitor::line(now_ms, client.db, who, args);
        self.pubsub.feed_monitors(&line);
    }

    /// Counts a command that ran (`INFO commandstats`) and keeps it in the
    /// slow log if it was slow; a script's own commands are not logged
    /// (the script is, as a whole), as in Redis.
    fn finished(
        &mut self,
        spec: &table::Spec,
        kept: impl FnOnce() -> Vec<Vec<u8>>,
        client: &ClientCtx,
        now_ms: u64,
        started_us: u64,
        failed: bool,
    ) {
        let micros = (self.clock_us)().saturating_sub(started_us);
        self.stats.total_commands_processed += 1;
        let counters = self.stats.commands.entry(spec.name).or_default();
        counters.calls += 1;
        counters.usec += micros;
        counters.failed_calls += u64::from(failed);
        if self.config.latency_tracking {
            counters.latency.record(micros);
        }
        let threshold = self.config.latency_monitor_threshold;
        if threshold > 0 && micros / 1000 >= threshold {
            let event = match spec.flags & table::FAST {
                0 => "command",
                _ => "fast-command",
            };
            self.stats
                .latency_events
                .record(event, micros / 1000, now_ms / 1000);
        }
        if !client.in_script {
            let addr = self.clients.get(client.id()).map_or("", |c| c.addr());
            let caller = crate::slowlog::Caller {
                addr,
                name: client.name().unwrap_or_default(),
            };
            let max_len = usize::try_from(self.config.slowlog_max_len).unwrap_or(usize::MAX);
            let threshold = self.config.slowlog_log_slower_than;
            self.slowlog
                .record(kept, micros, threshold, max_len, now_ms / 1000, caller);
        }
    }

    /// Counts a known command turned away before it ran (`rejected_calls`
    /// in `INFO commandstats`); unknown commands have no counters.
    fn count_rejected(&mut self, args: &[Vec<u8>]) {
        let Some(top) = args.first().and_then(|name| table::lookup(name)) else {
            return;
        };
        let spec = match args.get(1) {
            Some(sub) if !top.subcommands.is_empty() => top.subcommand(sub).unwrap_or(top),
            _ => top,
        };
        self.stats
            .commands
            .entry(spec.name)
            .or_default()
            .rejected_calls += 1;
    }

    /// Installs what serves the other clients while a script runs past
    /// `busy-reply-threshold` (see `kvstore::busy`).
    pub fn set_busy_poll(&mut self, poll: alloc::boxed::Box<dyn crate::busy::BusyPoll>) {
        self.busy_poll.0 = Some(poll);
    }

    /// Sets the microsecond clock `INFO commandstats` times commands with
    /// (the server passes the kernel's monotonic clock; without one,
    /// commands are counted but take no time).
    pub fn set_clock_us(&mut self, clock: fn() -> u64) {
        self.clock_us = clock;
    }
}

/// The entry of `key` in database `db` of `dbs`, unless missing or
/// expired at `now`.
fn live_entry<'a>(dbs: &'a [Store], db: usize, key: &[u8], now: u64) -> Option<&'a Entry> {
    dbs.get(db)?.get(key).filter(|e| !e.is_expired(now))
}

/// The key arguments at the places the command's table entry gives (its
/// first, last and step), for the `new` keyspace event. Commands whose
/// keys follow a count or an option announce the keys they create
/// themselves (`SORT ... STORE`).
fn key_args<'a>(spec: &table::Spec, args: &'a [Vec<u8>]) -> impl Iterator<Item = &'a [u8]> {
    key_positions::fixed(spec.keys, args.len())
        .into_iter()
        .filter_map(move |i| args.get(i).map(Vec::as_slice))
}

/// Where each key of `args` is and whether the command reads and/or
/// writes it, from its key specifications (Redis: `access` reads;
/// `insert`, `delete`, `update` write), for ACL key permissions.
pub(crate) fn key_intents(spec: &table::Spec, args: &[Vec<u8>]) -> Vec<(usize, bool, bool)> {
    if !key_positions::has_keys(spec) {
        return Vec::new();
    }
    let keys = key_positions::key_positions(spec, args).unwrap_or_default();
    let flags = key_flags::of_keys(spec, args, &keys);
    let writes = key_flags::INSERT | key_flags::DELETE | key_flags::UPDATE;
    keys.iter()
        .zip(flags)
        .map(|(&at, f)| (at, f & key_flags::ACCESS != 0, f & writes != 0))
        .collect()
}
