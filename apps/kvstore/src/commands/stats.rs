//! Counters reported by `INFO`.

/// Server counters. The engine maintains the command and keyspace ones; the
/// server fills in what only it can see (connections, bytes on the wire,
/// the log file) through [`Engine::stats_mut`](super::Engine::stats_mut).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stats {
    /// CPU time the server's core has run since boot, in microseconds
    /// (server): the kernel and the server are one program, so all of it
    /// is reported as user time.
    pub used_cpu_us: u64,
    /// Clients connected now (server).
    pub connected_clients: u64,
    /// Connections accepted since start (server).
    pub total_connections_received: u64,
    /// Connections refused, e.g. over a client limit (server).
    pub rejected_connections: u64,
    /// Request bytes read (server).
    pub total_net_input_bytes: u64,
    /// Reply bytes written (server).
    pub total_net_output_bytes: u64,
    /// Current size of the append-only log (server).
    pub aof_current_size: u64,
    /// Size of the log after the last rewrite or load (server).
    pub aof_base_size: u64,
    /// Log rewrites done (server).
    pub aof_rewrites: u64,
    /// Why the log cannot be written, while it cannot (server, through
    /// [`Engine::log_write_failed`](super::Engine::log_write_failed)):
    /// write commands are refused with `-MISCONF` meanwhile.
    pub aof_write_error: Option<alloc::string::String>,
    /// `BGREWRITEAOF` asked for a rewrite the server has not started yet
    /// (engine sets, server clears).
    pub aof_rewrite_scheduled: bool,
    /// `SHUTDOWN` asked the server to stop, with `FORCE` or not (engine
    /// sets, server takes with `Engine::take_shutdown`).
    pub shutdown_asked: Option<bool>,
    /// A rewrite is running (server).
    pub aof_rewrite_in_progress: bool,
    /// Whether the last rewrite succeeded (server).
    pub aof_last_rewrite_ok: bool,
    /// How long the last rewrite took, in milliseconds (server).
    pub aof_last_rewrite_ms: Option<u64>,
    /// Commands executed (engine).
    pub total_commands_processed: u64,
    /// Error replies sent (engine).
    pub total_error_replies: u64,
    /// Reads that found their key (engine).
    pub keyspace_hits: u64,
    /// Reads that did not (engine).
    pub keyspace_misses: u64,
    /// Keys removed because they expired (engine).
    pub expired_keys: u64,
    /// Keys removed to make room under `maxmemory` (engine).
    pub evicted_keys: u64,
    /// Commands that changed the dataset (engine).
    pub dirty: u64,
    /// Highest memory estimate seen (engine).
    pub used_memory_peak: u64,
    /// Bytes the scripts' Lua state holds, as of the last script command
    /// (engine).
    pub used_memory_lua: u64,
    /// Bytes the function libraries' Lua state holds, as of the last
    /// script command (engine).
    pub used_memory_functions: u64,
    /// Scripts known (`SCRIPT LOAD`, `EVAL`), as of the last script
    /// command (engine).
    pub cached_scripts: u64,
    /// Per-command counters for `INFO commandstats` (engine).
    pub commands: CommandStats,
    /// Error replies by their code (`ERR`, `WRONGTYPE`, ...) for `INFO
    /// errorstats`, at most [`MAX_ERROR_CODES`] codes (engine).
    pub error_codes: alloc::collections::BTreeMap<alloc::string::String, u64>,
    /// The latency monitor's events (engine); `CONFIG RESETSTAT` keeps
    /// them, `LATENCY RESET` forgets them.
    pub latency_events: crate::latency::Events,
}

/// The most error codes `INFO errorstats` tracks: the codes come from
/// clients (scripts' `redis.error_reply`), so past this many a new code is
/// only counted in `total_error_replies`, as in Redis.
pub const MAX_ERROR_CODES: usize = 128;

/// What `INFO commandstats` reports for one command: how often it ran,
/// for how long, and how often it was turned away or failed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommandCounters {
    /// Times the command ran.
    pub calls: u64,
    /// Microseconds spent running it (on the clock given to
    /// [`Engine::set_clock_us`](super::Engine::set_clock_us)).
    pub usec: u64,
    /// Times it was refused before running: wrong number of arguments,
    /// not authenticated, out of memory, log not writable, or a queueing
    /// error inside `MULTI`.
    pub rejected_calls: u64,
    /// Times it ran and answered an error.
    pub failed_calls: u64,
    /// Its run times, while `latency-tracking` is on (`LATENCY
    /// HISTOGRAM`, `INFO latencystats`).
    pub latency: crate::latency::Histogram,
}

/// The counters of every command that was called, by its full name
/// (`get`, `config|set`), in name order as `INFO` lists them.
pub type CommandStats = alloc::collections::BTreeMap<&'static str, CommandCounters>;

impl Default for Stats {
    fn default() -> Self {
        Stats {
            used_cpu_us: 0,
            connected_clients: 0,
            total_connections_received: 0,
            rejected_connections: 0,
            total_net_input_bytes: 0,
            total_net_output_bytes: 0,
            aof_current_size: 0,
            aof_base_size: 0,
            aof_rewrites: 0,
            aof_write_error: None,
            aof_rewrite_scheduled: false,
            shutdown_asked: None,
            aof_rewrite_in_progress: false,
            aof_last_rewrite_ok: true,
            aof_last_rewrite_ms: None,
            total_commands_processed: 0,
            total_error_replies: 0,
            keyspace_hits: 0,
            keyspace_misses: 0,
            expired_keys: 0,
            dirty: 0,
            used_memory_peak: 0,
            used_memory_lua: 0,
            used_memory_functions: 0,
            cached_scripts: 0,
            evicted_keys: 0,
            commands: CommandStats::new(),
            error_codes: alloc::collections::BTreeMap::new(),
            latency_events: crate::latency::Events::default(),
        }
    }
}

impl Stats {
    /// Counts an error reply (its text without the leading `-`) in
    /// `total_error_replies` and under its code.
    pub fn count_error(&mut self, text: &str) {
        self.total_error_replies += 1;
        let code = text.split(' ').next().unwrap_or(text);
        if let Some(n) = self.error_codes.get_mut(code) {
            *n += 1;
        } else if self.error_codes.len() < MAX_ERROR_CODES {
            self.error_codes.insert(code.into(), 1);
        }
    }

    /// A blocked client's command (`args`) ends in the error `text`
    /// (`CLIENT UNBLOCK ... ERROR`, its stream gone): a failure of the
    /// call, counted when it blocked, and an error reply.
    pub fn count_blocked_failure(&mut self, args: &[alloc::vec::Vec<u8>], text: &str) {
        if let Some(spec) = args.first().and_then(|name| super::table::lookup(name)) {
            self.commands.entry(spec.name).or_default().failed_calls += 1;
        }
        self.count_error(text);
    }

    /// `CONFIG RESETSTAT`: zero the cumulative counters, keeping the ones
    /// that describe current state (clients connected, log sizes).
    pub fn reset(&mut self) {
        *self = Stats {
            connected_clients: self.connected_clients,
            aof_current_size: self.aof_current_size,
            aof_base_size: self.aof_base_size,
            aof_write_error: self.aof_write_error.clone(),
            aof_rewrite_scheduled: self.aof_rewrite_scheduled,
            aof_rewrite_in_progress: self.aof_rewrite_in_progress,
            aof_last_rewrite_ok: self.aof_last_rewrite_ok,
            aof_last_rewrite_ms: self.aof_last_rewrite_ms,
            dirty: self.dirty,
            used_memory_lua: self.used_memory_lua,
            used_memory_functions: self.used_memory_functions,
            cached_scripts: self.cached_scripts,
            latency_events: core::mem::take(&mut self.latency_events),
            ..Stats::default()
        };
    }
}
