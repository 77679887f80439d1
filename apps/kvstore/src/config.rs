//! Server settings, by their Redis names.
//!
//! One struct holds every knob the core obeys, so the server can build it
//! from boot arguments (`Config::set("maxmemory", "64mb")`), commands can
//! read it, and `CONFIG GET` can list it under the names clients expect
//! (`redis-benchmark` asks for `save` and `appendonly` on start).

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use crate::aof::{AppendFsync, RewritePolicy};
use crate::glob;
use crate::num::{parse_i64, parse_memory};
use crate::resp::Limits;
use crate::store::CompactLimits;

/// Settings the engine and the server obey. Defaults are Redis's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// TCP port the server listens on (`port`); reported by `INFO`.
    pub port: u16,
    /// Memory limit in bytes for the dataset estimate; 0 = unlimited.
    /// Writes that would exceed it evict keys by `maxmemory_policy`, or
    /// fail with `-OOM` when nothing may go.
    pub maxmemory: u64,
    /// Which keys go when memory is past `maxmemory` (`maxmemory-policy`,
    /// `noeviction` by default).
    pub maxmemory_policy: crate::eviction::Policy,
    /// Keys drawn per database per round of eviction
    /// (`maxmemory-samples`, 5, from 1 to 64).
    pub maxmemory_samples: usize,
    /// How access frequencies count for the LFU policies (`lfu-log-factor`,
    /// 10, and `lfu-decay-time` in minutes, 1).
    pub lfu: crate::store::LfuTuning,
    /// Largest value or request argument, in bytes (`proto-max-bulk-len`).
    pub proto_max_bulk_len: u64,
    /// Whether the server keeps an append-only log (`appendonly`).
    pub appendonly: bool,
    /// When the server syncs the log to stable storage (`appendfsync`).
    pub appendfsync: AppendFsync,
    /// When the server compacts the log (`auto-aof-rewrite-*`).
    pub aof_rewrite: RewritePolicy,
    /// Most clients connected at once (`maxclients`); one more is told
    /// `-ERR max number of clients reached` and disconnected.
    pub maxclients: u64,
    /// Most bytes one request may hold while it is received
    /// (`client-query-buffer-limit`); past it the client is closed.
    pub client_query_buffer_limit: u64,
    /// Most reply bytes a normal client may have waiting
    /// (`client-output-buffer-limit normal <hard> 0 0`); past it the client
    /// is closed. 0: no limit (the server still stops executing a client's
    /// requests while 1 MiB of its replies is unsent).
    pub client_output_hard_limit: u64,
    /// Which key changes are published, as `kvstore::notify` flags
    /// (`notify-keyspace-events`; none by default).
    pub notify_keyspace_events: u16,
    /// Most keys the client-side caching table holds
    /// (`tracking-table-max-keys`, 1000000; 0: no limit): past it, keys
    /// are forgotten and their readers told to drop them.
    pub tracking_table_max_keys: u64,
    /// Number of databases (`databases`, 16): `SELECT` takes 0 to this - 1.
    /// Set at start only.
    pub databases: usize,
    /// The password clients must give with `AUTH` before any other
    /// command (`requirepass`); `None` (the empty string) asks for none.
    pub requirepass: Option<Vec<u8>>,
    /// Up to what size a hash is kept compact (`hash-max-listpack-entries`
    /// and `hash-max-listpack-value`, alias `hash-max-ziplist-*`); applies
    /// to hashes as they next grow, as in Redis.
    pub hash_compact: CompactLimits,
    /// Redis's list node size (`list-max-listpack-size`, alias
    /// `list-max-ziplist-size`): kept and answered so clients and test
    /// suites that tune it work, but kvstore's lists have no nodes (see
    /// `store::List`), so it changes nothing.
    pub list_max_listpack_size: i64,
    /// Redis's list compression depth (`list-compress-depth`): kept and
    /// answered like `list_max_listpack_size`; kvstore does not compress.
    pub list_compress_depth: u64,
    /// Most members a set of integers keeps as an `intset`
    /// (`set-max-intset-entries`, 512); applies to sets as they next grow.
    pub set_max_intset_entries: usize,
    /// Up to what size a sorted set is kept compact
    /// (`zset-max-listpack-entries` and `zset-max-listpack-value`, alias
    /// `zset-max-ziplist-*`); applies to sets as they next grow.
    pub zset_compact: CompactLimits,
    /// Most entries one node of a stream holds (`stream-node-max-entries`,
    /// 100; 0: no limit): streams keep Redis's node boundaries because
    /// approximate trimming (`MAXLEN ~`) removes whole nodes only.
    pub stream_node_max_entries: u64,
    /// Most bytes one node of a stream holds (`stream-node-max-bytes`,
    /// 4096; 0: no limit), estimated from its fields and values.
    pub stream_node_max_bytes: u64,
    /// Longest a HyperLogLog may grow in its sparse form before it turns
    /// dense (`hll-sparse-max-bytes`, 3000, header included), as in Redis.
    pub hll_sparse_max_bytes: u64,
    /// Seconds a client may stay idle before the server closes its
    /// connection (`timeout`, settable at run time); 0: never. Subscribers
    /// and clients blocked on keys are never closed for it, as in Redis.
    pub timeout: u64,
    /// Milliseconds a script runs before the server answers other clients
    /// `-BUSY` and lets them kill it (`busy-reply-threshold`, alias
    /// `lua-time-limit`, 5000; 0: at once).
    pub busy_reply_threshold: u64,
    /// Writes need this many replicas in sync (`min-replicas-to-write`,
    /// alias `min-slaves-to-write`, 0: none). kvstore never has replicas,
    /// so any other value refuses writes (`-NOREPLICAS`), as a Redis
    /// primary without replicas does.
    pub min_replicas_to_write: u64,
    /// Seconds of lag that still make a replica in sync
    /// (`min-replicas-max-lag`, alias `min-slaves-max-lag`, 10; 0: the
    /// check above is off).
    pub min_replicas_max_lag: u64,
    /// Commands that take at least this many microseconds are kept in the
    /// slow log (`slowlog-log-slower-than`, 10000; 0: every command;
    /// negative: none).
    pub slowlog_log_slower_than: i64,
    /// Entries the slow log keeps (`slowlog-max-len`, 128).
    pub slowlog_max_len: u64,
    /// Entries the ACL log keeps (`acllog-max-len`, 128).
    pub acllog_max_len: u64,
    /// New users (and `reset` ones) may use every channel
    /// (`acl-pubsub-default allchannels`) or none (`resetchannels`, the
    /// default).
    pub acl_pubsub_all: bool,
    /// Run times the latency monitor records as events, in milliseconds
    /// (`latency-monitor-threshold`; 0, the default: none).
    pub latency_monitor_threshold: u64,
    /// Whether each command's run times are kept in its histogram
    /// (`latency-tracking`, on by default).
    pub latency_tracking: bool,
    /// The percentiles `INFO latencystats` shows
    /// (`latency-tracking-info-percentiles`, `50 99 99.9`).
    pub latency_tracking_info_percentiles: Percentiles,
}

impl Config {
    /// Whether writes are refused for want of replicas (see
    /// [`Config::min_replicas_to_write`]).
    pub fn lacks_replicas(&self) -> bool {
        self.min_replicas_to_write > 0 && self.min_replicas_max_lag > 0
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            port: 6379,
            maxmemory: 0,
            maxmemory_policy: crate::eviction::Policy::NoEviction,
            maxmemory_samples: 5,
            lfu: crate::store::LfuTuning::default(),
            proto_max_bulk_len: 512 * 1024 * 1024,
            appendonly: false,
            appendfsync: AppendFsync::EverySec,
            aof_rewrite: RewritePolicy::default(),
            maxclients: 10_000,
            requirepass: None,
            databases: 16,
            client_query_buffer_limit: 1 << 30,
            client_output_hard_limit: 0,
            notify_keyspace_events: 0,
            tracking_table_max_keys: 1_000_000,
            hash_compact: CompactLimits::default(),
            list_max_listpack_size: -2,
            list_compress_depth: 0,
            set_max_intset_entries: 512,
            zset_compact: CompactLimits::default(),
            stream_node_max_entries: 100,
            stream_node_max_bytes: 4096,
            hll_sparse_max_bytes: 3000,
            timeout: 0,
            busy_reply_threshold: 5000,
            min_replicas_to_write: 0,
            min_replicas_max_lag: 10,
            slowlog_log_slower_than: 10_000,
            slowlog_max_len: 128,
            acllog_max_len: 128,
            acl_pubsub_all: false,
            latency_monitor_threshold: 0,
            latency_tracking: true,
            latency_tracking_info_percentiles: Percentiles(alloc::vec![50.0, 99.0, 99.9]),
        }
    }
}

/// Why a setting could not be changed; [`ConfigError::message`] words it as
/// Redis's `CONFIG SET` does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// No parameter by that name.
    Unknown(String),
    /// The value does not parse; carries the parameter and what it expects.
    Invalid(String, &'static str),
    /// The parameter cannot be changed while running.
    Immutable(String),
}

impl ConfigError {
    /// The error text for a `-ERR` reply.
    pub fn message(&self) -> String {
        match self {
            ConfigError::Unknown(name) => {
                alloc::format!("ERR Unknown option or number of arguments for CONFIG SET - '{name}'")
            }
            ConfigError::Invalid(name, why) => {
                alloc::format!("ERR CONFIG SET failed (possibly related to argument '{name}') - {why}")
            }
            ConfigError::Immutable(name) => alloc::format!(
                "ERR CONFIG SET failed (possibly related to argument '{name}') - can't set immutable config"
            ),
        }
    }
}

/// Whether and when a parameter may change, and how it is set from its
/// text form (`Err`: Redis's words for what the value must be).
#[derive(Clone, Copy)]
enum Change {
    /// A fact about this server: `CONFIG GET` answers it, nothing sets it.
    Fixed,
    /// Set at start only (boot arguments); `CONFIG SET` refuses it.
    AtStart(Setter),
    /// Set at start or by `CONFIG SET` on a running server.
    AtRunTime(Setter),
}

/// Sets a parameter from its text form.
type Setter = fn(&mut Config, &[u8]) -> Result<(), &'static str>;

/// One parameter: its name (an alias is a row of its own), how
/// `CONFIG GET` renders it from a [`Config`], and how it may change. Its
/// default is its field's in `Config::default`.
struct Param {
    name: &'static str,
    get: fn(&Config) -> String,
    change: Change,
}

use Change::{AtRunTime, AtStart, Fixed};

/// `busy-reply-threshold` and its alias `lua-time-limit`.
fn set_busy_reply_threshold(c: &mut Config, v: &[u8]) -> Result<(), &'static str> {
    c.busy_reply_threshold = integer(v, 0, i64::MAX, UP_TO_I64)? as u64;
    Ok(())
}

/// `min-replicas-to-write` and its alias `min-slaves-to-write`.
fn set_min_replicas_to_write(c: &mut Config, v: &[u8]) -> Result<(), &'static str> {
    c.min_replicas_to_write = integer(v, 0, i32::MAX.into(), UP_TO_I32)? as u64;
    Ok(())
}

/// `min-replicas-max-lag` and its alias `min-slaves-max-lag`.
fn set_min_replicas_max_lag(c: &mut Config, v: &[u8]) -> Result<(), &'static str> {
    c.min_replicas_max_lag = integer(v, 0, i32::MAX.into(), UP_TO_I32)? as u64;
    Ok(())
}

/// Redis's words for an integer parameter from 0 to 2^31 - 1.
const UP_TO_I32: &str = "argument must be between 0 and 2147483647 inclusive";
/// Redis's words for an integer parameter from 0 to 2^63 - 1.
const UP_TO_I64: &str = "argument must be between 0 and 9223372036854775807 inclusive";
/// Redis's words for a memory parameter that does not parse.
const MEMORY: &str = "argument must be a memory value";

/// Every parameter, in the order `CONFIG GET` lists them: adding one is a
/// row here (and its field in [`Config`]).
const PARAMS: &[Param] = &[
    Param {
        name: "port",
        get: |c| c.port.to_string(),
        change: AtStart(|c, v| {
            c.port = integer(
                v,
                0,
                65535,
                "argument must be between 0 and 65535 inclusive",
            )? as u16;
            Ok(())
        }),
    },
    Param {
        name: "maxmemory",
        get: |c| c.maxmemory.to_string(),
        change: AtRunTime(|c, v| {
            c.maxmemory = parse_memory(v).ok_or(MEMORY)?;
            Ok(())
        }),
    },
    Param {
        name: "proto-max-bulk-len",
        get: |c| c.proto_max_bulk_len.to_string(),
        change: AtRunTime(|c, v| {
            let len = parse_memory(v).ok_or(MEMORY)?;
            if !(1 << 20..=i64::MAX as u64).contains(&len) {
                return Err("argument must be between 1048576 and 9223372036854775807 inclusive");
            }
            c.proto_max_bulk_len = len;
            Ok(())
        }),
    },
    Param {
        name: "appendonly",
        get: |c| String::from(if c.appendonly { "yes" } else { "no" }),
        change: AtStart(|c, v| {
            c.appendonly = yes_or_no(v)?;
            Ok(())
        }),
    },
    Param {
        name: "appendfsync",
        get: |c| c.appendfsync.as_str().to_string(),
        change: AtRunTime(|c, v| {
            c.appendfsync = AppendFsync::parse(v)
                .ok_or("argument(s) must be one of the following: everysec, always, no")?;
            Ok(())
        }),
    },
    Param {
        name: "auto-aof-rewrite-percentage",
        get: |c| c.aof_rewrite.percentage.to_string(),
        change: AtRunTime(|c, v| {
            c.aof_rewrite.percentage = integer(v, 0, i32::MAX.into(), UP_TO_I32)? as u64;
            Ok(())
        }),
    },
    Param {
        name: "auto-aof-rewrite-min-size",
        get: |c| c.aof_rewrite.min_size.to_string(),
        change: AtRunTime(|c, v| {
            c.aof_rewrite.min_size = parse_memory(v).ok_or(MEMORY)?;
            Ok(())
        }),
    },
    // No RDB snapshots: "" (none) is the only schedule there is, and
    // setting it (as test suites do) is fine.
    Param {
        name: "save",
        get: |_| String::new(),
        change: AtRunTime(|_, v| {
            match v.iter().all(u8::is_ascii_whitespace) {
            true => Ok(()),
            false => Err("kvstore takes no RDB snapshots (its persistence is the append-only log); only \"\" is accepted"),
        }
        }),
    },
    Param {
        name: "maxmemory-policy",
        get: |c| String::from(c.maxmemory_policy.as_str()),
        change: AtRunTime(|c, v| {
            c.maxmemory_policy =
                crate::eviction::Policy::parse(v).ok_or(crate::eviction::POLICY_ERROR)?;
            Ok(())
        }),
    },
    Param {
        name: "databases",
        get: |c| c.databases.to_string(),
        change: AtStart(|c, v| {
            c.databases =
                integer(v, 1, 1024, "argument must be between 1 and 1024 inclusive")? as usize;
            Ok(())
        }),
    },
    Param {
        name: "timeout",
        get: |c| c.timeout.to_string(),
        change: AtRunTime(|c, v| {
            c.timeout = integer(v, 0, i32::MAX.into(), UP_TO_I32)? as u64;
            Ok(())
        }),
    },
    Param {
        name: "busy-reply-threshold",
        get: |c| c.busy_reply_threshold.to_string(),
        change: AtRunTime(set_busy_reply_threshold),
    },
    Param {
        name: "lua-time-limit",
        get: |c| c.busy_reply_threshold.to_string(),
        change: AtRunTime(set_busy_reply_threshold),
    },
    Param {
        name: "slowlog-log-slower-than",
        get: |c| c.slowlog_log_slower_than.to_string(),
        change: AtRunTime(|c, v| {
            c.slowlog_log_slower_than = integer(
                v,
                -1,
                i64::MAX,
                "argument must be between -1 and 9223372036854775807 inclusive",
            )?;
            Ok(())
        }),
    },
    Param {
        name: "tracking-table-max-keys",
        get: |c| c.tracking_table_max_keys.to_string(),
        change: AtRunTime(|c, v| {
            c.tracking_table_max_keys = integer(v, 0, i64::MAX, UP_TO_I64)? as u64;
            Ok(())
        }),
    },
    Param {
        name: "slowlog-max-len",
        get: |c| c.slowlog_max_len.to_string(),
        change: AtRunTime(|c, v| {
            c.slowlog_max_len = integer(v, 0, i64::MAX, UP_TO_I64)? as u64;
            Ok(())
        }),
    },
    Param {
        name: "acllog-max-len",
        get: |c| c.acllog_max_len.to_string(),
        change: AtRunTime(|c, v| {
            c.acllog_max_len = integer(v, 0, i64::MAX, UP_TO_I64)? as u64;
            Ok(())
        }),
    },
    Param {
        name: "acl-pubsub-default",
        get: |c| {
            String::from(if c.acl_pubsub_all {
                "allchannels"
            } else {
                "resetchannels"
            })
        },
        change: AtRunTime(|c, v| {
            c.acl_pubsub_all = match v.to_ascii_lowercase().as_slice() {
                b"allchannels" => true,
                b"resetchannels" => false,
                _ => {
                    return Err(
                        "argument(s) must be one of the following: allchannels, resetchannels",
                    )
                }
            };
            Ok(())
        }),
    },
    Param {
        name: "latency-monitor-threshold",
        get: |c| c.latency_monitor_threshold.to_string(),
        change: AtRunTime(|c, v| {
            c.latency_monitor_threshold = integer(v, 0, i64::MAX, UP_TO_I64)? as u64;
            Ok(())
        }),
    },
    Param {
        name: "latency-tracking",
        get: |c| String::from(if c.latency_tracking { "yes" } else { "no" }),
        change: AtRunTime(|c, v| {
            c.latency_tracking = yes_or_no(v)?;
            Ok(())
        }),
    },
    Param {
        name: "latency-tracking-info-percentiles",
        get: |c| {
            let shown: Vec<String> = c
                .latency_tracking_info_percentiles
                .0
                .iter()
                .map(|p| p.to_string())
                .collect();
            shown.join(" ")
        },
        change: AtRunTime(|c, v| {
            c.latency_tracking_info_percentiles = Percentiles(percentiles(v)?);
            Ok(())
        }),
    },
    Param {
        name: "min-replicas-to-write",
        get: |c| c.min_replicas_to_write.to_string(),
        change: AtRunTime(set_min_replicas_to_write),
    },
    Param {
        name: "min-slaves-to-write",
        get: |c| c.min_replicas_to_write.to_string(),
        change: AtRunTime(set_min_replicas_to_write),
    },
    Param {
        name: "min-replicas-max-lag",
        get: |c| c.min_replicas_max_lag.to_string(),
        change: AtRunTime(set_min_replicas_max_lag),
    },
    Param {
        name: "min-slaves-max-lag",
        get: |c| c.min_replicas_max_lag.to_string(),
        change: AtRunTime(set_min_replicas_max_lag),
    },
    Param {
        name: "bind",
        get: |_| String::from("* -::*"),
        change: Fixed,
    },
    Param {
        name: "maxclients",
        get: |c| c.maxclients.to_string(),
        change: AtRunTime(|c, v| {
            c.maxclients = integer(
                v,
                1,
                u32::MAX.into(),
                "argument must be between 1 and 4294967295 inclusive",
            )? as u64;
            Ok(())
        }),
    },
    Param {
        name: "appendfilename",
        get: |_| String::from("appendonly.aof"),
        change: Fixed,
    },
    Param {
        name: "dir",
        get: |_| String::from("/"),
        change: Fixed,
    },
    Param {
        name: "requirepass",
        get: |c| String::from_utf8_lossy(c.requirepass.as_deref().unwrap_or_default()).into_owned(),
        change: AtRunTime(|c, v| {
            c.requirepass = (!v.is_empty()).then(|| v.to_vec());
            Ok(())
        }),
    },
    Param {
        name: "client-query-buffer-limit",
        get: |c| c.client_query_buffer_limit.to_string(),
        change: AtRunTime(|c, v| {
            c.client_query_buffer_limit = parse_memory(v)
                .filter(|&n| n >= 1024 * 1024)
                .ok_or("argument must be a memory value of at least 1mb")?;
            Ok(())
        }),
    },
    Param {
        name: "client-output-buffer-limit",
        get: |c| {
            alloc::format!(
                "normal {} 0 0 replica 268435456 67108864 60 pubsub 33554432 8388608 60",
                c.client_output_hard_limit
            )
        },
        change: AtRunTime(|c, v| {
            c.client_output_hard_limit = parse_output_limit(v, c.client_output_hard_limit).ok_or(
                "argument must be 'class hard soft seconds' with class normal, replica or pubsub",
            )?;
            Ok(())
        }),
    },
    Param {
        name: "notify-keyspace-events",
        get: |c| crate::notify::format(c.notify_keyspace_events),
        change: AtRunTime(|c, v| {
            c.notify_keyspace_events = crate::notify::parse(v)
                .ok_or("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")?;
            Ok(())
        }),
    },
    Param {
        name: "hash-max-listpack-entries",
        get: |c| c.hash_compact.entries.to_string(),
        change: AtRunTime(|c, v| set_compact(&mut c.hash_compact.entries, v)),
    },
    Param {
        name: "hash-max-listpack-value",
        get: |c| c.hash_compact.value.to_string(),
        change: AtRunTime(|c, v| set_compact(&mut c.hash_compact.value, v)),
    },
    Param {
        name: "hash-max-ziplist-entries",
        get: |c| c.hash_compact.entries.to_string(),
        change: AtRunTime(|c, v| set_compact(&mut c.hash_compact.entries, v)),
    },
    Param {
        name: "hash-max-ziplist-value",
        get: |c| c.hash_compact.value.to_string(),
        change: AtRunTime(|c, v| set_compact(&mut c.hash_compact.value, v)),
    },
    Param {
        name: "list-max-listpack-size",
        get: |c| c.list_max_listpack_size.to_string(),
        change: AtRunTime(set_list_size),
    },
    Param {
        name: "list-max-ziplist-size",
        get: |c| c.list_max_listpack_size.to_string(),
        change: AtRunTime(set_list_size),
    },
    Param {
        name: "list-compress-depth",
        get: |c| c.list_compress_depth.to_string(),
        change: AtRunTime(|c, v| {
            c.list_compress_depth = integer(v, 0, i32::MAX.into(), UP_TO_I32)? as u64;
            Ok(())
        }),
    },
    Param {
        name: "set-max-intset-entries",
        get: |c| c.set_max_intset_entries.to_string(),
        change: AtRunTime(|c, v| {
            c.set_max_intset_entries = integer(v, 0, i64::MAX, UP_TO_I64)? as usize;
            Ok(())
        }),
    },
    Param {
        name: "zset-max-listpack-entries",
        get: |c| c.zset_compact.entries.to_string(),
        change: AtRunTime(|c, v| set_compact(&mut c.zset_compact.entries, v)),
    },
    Param {
        name: "zset-max-listpack-value",
        get: |c| c.zset_compact.value.to_string(),
        change: AtRunTime(|c, v| set_compact(&mut c.zset_compact.value, v)),
    },
    Param {
        name: "zset-max-ziplist-entries",
        get: |c| c.zset_compact.entries.to_string(),
        change: AtRunTime(|c, v| set_compact(&mut c.zset_compact.entries, v)),
    },
    Param {
        name: "zset-max-ziplist-value",
        get: |c| c.zset_compact.value.to_string(),
        change: AtRunTime(|c, v| set_compact(&mut c.zset_compact.value, v)),
    },
    Param {
        name: "stream-node-max-entries",
        get: |c| c.stream_node_max_entries.to_string(),
        change: AtRunTime(|c, v| {
            c.stream_node_max_entries = integer(v, 0, i64::MAX, UP_TO_I64)? as u64;
            Ok(())
        }),
    },
    Param {
        name: "stream-node-max-bytes",
        get: |c| c.stream_node_max_bytes.to_string(),
        change: AtRunTime(|c, v| {
            c.stream_node_max_bytes = compact_limit(v)? as u64;
            Ok(())
        }),
    },
    Param {
        name: "hll-sparse-max-bytes",
        get: |c| c.hll_sparse_max_bytes.to_string(),
        change: AtRunTime(|c, v| {
            c.hll_sparse_max_bytes = compact_limit(v)? as u64;
            Ok(())
        }),
    },
    Param {
        name: "maxmemory-samples",
        get: |c| c.maxmemory_samples.to_string(),
        change: AtRunTime(|c, v| {
            c.maxmemory_samples =
                integer(v, 1, 64, "argument must be between 1 and 64 inclusive")? as usize;
            Ok(())
        }),
    },
    Param {
        name: "lfu-log-factor",
        get: |c| c.lfu.log_factor.to_string(),
        change: AtRunTime(|c, v| {
            c.lfu.log_factor = integer(v, 0, i32::MAX.into(), UP_TO_I32)? as u64;
            Ok(())
        }),
    },
    Param {
        name: "lfu-decay-time",
        get: |c| c.lfu.decay_minutes.to_string(),
        change: AtRunTime(|c, v| {
            c.lfu.decay_minutes = integer(v, 0, i32::MAX.into(), UP_TO_I32)? as u64;
            Ok(())
        }),
    },
];

/// The row of parameter `name` (lowercase).
fn param(name: &str) -> Option<&'static Param> {
    PARAMS.iter().find(|p| p.name == name)
}

impl Config {
    /// Parser limits matching these settings (`proto-max-bulk-len`), so a
    /// request is refused before it is buffered, not after.
    pub fn parser_limits(&self) -> Limits {
        Limits {
            max_bulk_len: self.proto_max_bulk_len,
            max_query_buffer: self.client_query_buffer_limit,
            ..Limits::default()
        }
    }

    /// The current value of parameter `name` (lowercase), as text.
    pub fn get(&self, name: &str) -> Option<String> {
        param(name).map(|p| (p.get)(self))
    }

    /// `(name, value)` for every parameter whose name matches the glob
    /// `pattern`, ignoring case: what `CONFIG GET pattern` returns.
    pub fn matching(&self, pattern: &[u8]) -> Vec<(&'static str, String)> {
        PARAMS
            .iter()
            .filter(|p| glob::matches_nocase(pattern, p.name.as_bytes()))
            .map(|p| (p.name, (p.get)(self)))
            .collect()
    }

    /// Sets parameter `name` (any case) from its text form, as a config
    /// file or boot argument would: every [`Config`] field can be set.
    pub fn set(&mut self, name: &str, value: &[u8]) -> Result<(), ConfigError> {
        let lower = name.to_ascii_lowercase();
        let set = match param(&lower).map(|p| p.change) {
            Some(AtStart(set) | AtRunTime(set)) => set,
            Some(Fixed) => return Err(ConfigError::Immutable(lower)),
            None => return Err(ConfigError::Unknown(lower)),
        };
        set(self, value).map_err(|why| ConfigError::Invalid(lower, why))
    }

    /// Settings from a command line of `name value` pairs, as
    /// `redis-server --port 7000 --appendfsync always` takes them (the
    /// leading `--` is optional): the guest's boot arguments. Starts from
    /// the defaults; the first bad pair is the error.
    ///
    /// ```
    /// use kvstore::config::Config;
    ///
    /// let config = Config::from_args(["appendfsync", "always", "--maxclients", "2000"]).unwrap();
    /// assert_eq!(config.maxclients, 2000);
    /// assert!(Config::from_args(["maxclients"]).is_err());
    /// ```
    pub fn from_args<'a>(args: impl IntoIterator<Item = &'a str>) -> Result<Config, ConfigError> {
        let mut config = Config::default();
        let mut args = args.into_iter();
        while let Some(name) = args.next() {
            let name = name.strip_prefix("--").unwrap_or(name);
            let Some(value) = args.next() else {
                return Err(ConfigError::Invalid(
                    name.to_ascii_lowercase(),
                    "a value must follow the name",
                ));
            };
            config.set(name, value.as_bytes())?;
        }
        Ok(config)
    }

    /// Whether `CONFIG SET` may set parameter `name` (any case) to `value`
    /// on a running server: if not, [`ConfigError::Unknown`] or
    /// [`ConfigError::Immutable`], naming the parameter as typed (Redis
    /// checks every name of a `CONFIG SET` this way before any value). A
    /// parameter fixed at start may be "set" to the value it has: nothing
    /// changes.
    ///
    /// ```
    /// use kvstore::config::{Config, ConfigError};
    ///
    /// let config = Config::default();
    /// assert_eq!(config.settable_at_runtime("MaxMemory", b"1mb"), Ok(()));
    /// assert_eq!(config.settable_at_runtime("Port", b"6379"), Ok(()));
    /// assert_eq!(config.settable_at_runtime("Port", b"7000"), Err(ConfigError::Immutable("Port".into())));
    /// assert_eq!(config.settable_at_runtime("NoSuch", b"1"), Err(ConfigError::Unknown("NoSuch".into())));
    /// ```
    pub fn settable_at_runtime(&self, name: &str, value: &[u8]) -> Result<(), ConfigError> {
        let unchanged = match param(&name.to_ascii_lowercase()).map(|p| (p.change, p.get)) {
            Some((AtRunTime(_), _)) => return Ok(()),
            Some((AtStart(set), _)) => {
                let mut changed = self.clone();
                set(&mut changed, value).is_ok() && changed == *self
            }
            Some((Fixed, get)) => get(self).as_bytes() == value,
            None => return Err(ConfigError::Unknown(name.into())),
        };
        match unchanged {
            true => Ok(()),
            false => Err(ConfigError::Immutable(name.into())),
        }
    }

    /// Like [`set`](Config::set), for `CONFIG SET` on a running server:
    /// only what [`Config::settable_at_runtime`] allows.
    pub fn set_at_runtime(&mut self, name: &str, value: &[u8]) -> Result<(), ConfigError> {
        self.settable_at_runtime(name, value)?;
        match param(&name.to_ascii_lowercase()).map(|p| p.change) {
            Some(AtRunTime(_)) => self.set(name, value),
            // The value it already has.
            _ => Ok(()),
        }
    }
}

/// Sets a compact-form limit (`hash-max-listpack-entries` and the like).
fn set_compact(limit: &mut usize, value: &[u8]) -> Result<(), &'static str> {
    *limit = compact_limit(value)?;
    Ok(())
}

/// Sets `list-max-listpack-size` (alias `list-max-ziplist-size`).
fn set_list_size(config: &mut Config, value: &[u8]) -> Result<(), &'static str> {
    config.list_max_listpack_size = integer(
        value,
        i32::MIN.into(),
        i32::MAX.into(),
        "argument must be between -2147483648 and 2147483647 inclusive",
    )?;
    Ok(())
}

/// A compact-form limit (`hash-max-listpack-*`): a count or size from 0
/// to 2^63 - 1, written as a number or a memory value (`64`, `1kb`).
fn compact_limit(value: &[u8]) -> Result<usize, &'static str> {
    parse_memory(value)
        .filter(|&n| n <= i64::MAX as u64)
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
        .ok_or("argument must be a memory value")
}

/// The `normal` class's hard limit from a `client-output-buffer-limit`
/// value (`class hard soft seconds`, repeated): `current` if the value sets
/// other classes only (this server has no replicas or subscribers); `None`
/// if it does not parse.
fn parse_output_limit(value: &[u8], current: u64) -> Option<u64> {
    let text = core::str::from_utf8(value).ok()?;
    let words: Vec<&str> = text.split_ascii_whitespace().collect();
    if words.is_empty() || !words.len().is_multiple_of(4) {
        return None;
    }
    let mut normal = current;
    for group in words.chunks(4) {
        let [class, hard, soft, seconds] = group else {
            return None;
        };
        let hard = parse_memory(hard.as_bytes())?;
        parse_memory(soft.as_bytes())?;
        parse_i64(seconds.as_bytes()).filter(|&s| s >= 0)?;
        match class.to_ascii_lowercase().as_str() {
            "normal" => normal = hard,
            "replica" | "slave" | "pubsub" => {}
            _ => return None,
        }
    }
    Some(normal)
}

/// An integer setting as Redis reads one: a strict integer (else "couldn't
/// be parsed"), within `min..=max` (else `range`, which says so).
/// Percentiles, each from 0 to 100 (never NaN, so they compare as equal
/// when their bits do).
#[derive(Clone, Debug, Default)]
pub struct Percentiles(pub Vec<f64>);

impl PartialEq for Percentiles {
    fn eq(&self, other: &Self) -> bool {
        self.0.len() == other.0.len()
            && self
                .0
                .iter()
                .zip(&other.0)
                .all(|(a, b)| a.to_bits() == b.to_bits())
    }
}

impl Eq for Percentiles {}

/// A boolean setting's value: `yes` or `no`, any case.
fn yes_or_no(value: &[u8]) -> Result<bool, &'static str> {
    match value.to_ascii_lowercase().as_slice() {
        b"yes" => Ok(true),
        b"no" => Ok(false),
        _ => Err("argument must be 'yes' or 'no'"),
    }
}

/// Percentiles separated by spaces, each from 0 to 100 (none is fine).
fn percentiles(value: &[u8]) -> Result<Vec<f64>, &'static str> {
    value
        .split(|&b| b == b' ')
        .filter(|word| !word.is_empty())
        .map(|word| {
            let p = core::str::from_utf8(word)
                .ok()
                .and_then(|w| w.parse::<f64>().ok())
                .filter(|p| p.is_finite())
                .ok_or("Invalid latency-tracking-info-percentiles parameters")?;
            match (0.0..=100.0).contains(&p) {
                true => Ok(p),
                false => Err(
                    "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]",
                ),
            }
        })
        .collect()
}

fn integer(value: &[u8], min: i64, max: i64, range: &'static str) -> Result<i64, &'static str> {
    let n = parse_i64(value).ok_or("argument couldn't be parsed into an integer")?;
    if (min..=max).contains(&n) {
        Ok(n)
    } else {
        Err(range)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_by_pattern_like_config_get() {
        let config = Config::default();
        assert_eq!(config.matching(b"save"), vec![("save", String::new())]);
        assert_eq!(
            config.matching(b"APPENDONLY"),
            vec![("appendonly", String::from("no"))]
        );
        let maxmemory: Vec<_> = config.matching(b"maxmemory*");
        assert_eq!(
            maxmemory,
            vec![
                ("maxmemory", String::from("0")),
                ("maxmemory-policy", String::from("noeviction")),
                ("maxmemory-samples", String::from("5")),
            ]
        );
        assert!(config.matching(b"no-such-thing").is_empty());
    }

    #[test]
    fn every_parameter_reads_back_what_config_get_renders() {
        let mut config = Config::default();
        config.set("maxmemory", b"1mb").unwrap();
        config.set("notify-keyspace-events", b"KEA").unwrap();
        config.set("requirepass", b"secret").unwrap();
        for param in PARAMS {
            let shown = config.get(param.name).unwrap();
            let mut again = config.clone();
            match param.change {
                Fixed => assert_eq!(
                    again.set(param.name, shown.as_bytes()),
                    Err(ConfigError::Immutable(param.name.into()))
                ),
                _ => {
                    again.set(param.name, shown.as_bytes()).unwrap();
                    assert_eq!(again, config, "{} {shown}", param.name);
                }
            }
        }
    }

    #[test]
    fn list_tuning_is_kept_and_answered_under_both_names() {
        let mut config = Config::default();
        assert_eq!(config.get("list-max-ziplist-size").as_deref(), Some("-2"));
        config.set("list-max-ziplist-size", b"5").unwrap();
        assert_eq!(config.get("list-max-listpack-size").as_deref(), Some("5"));
        config.set("list-compress-depth", b"2").unwrap();
        assert_eq!(
            config.matching(b"list-compress-depth"),
            vec![("list-compress-depth", String::from("2"))]
        );
        assert!(config.set("list-compress-depth", b"-1").is_err());
        assert_eq!(config.set_at_runtime("list-max-ziplist-size", b"4"), Ok(()));
        assert_eq!(
            config.set_at_runtime("save", b""),
            Ok(()),
            "no snapshots, as asked"
        );
        assert!(config.set_at_runtime("save", b"3600 1").is_err());
    }

    #[test]
    fn eviction_settings_are_settable_at_run_time() {
        use crate::eviction::Policy;
        let mut config = Config::from_args(["maxmemory-policy", "allkeys-lru"]).unwrap();
        assert_eq!(config.maxmemory_policy, Policy::AllKeysLru);
        for (name, value) in [
            ("maxmemory-policy", "Volatile-TTL"),
            ("maxmemory-samples", "10"),
            ("lfu-log-factor", "0"),
            ("lfu-decay-time", "0"),
        ] {
            assert_eq!(config.set_at_runtime(name, value.as_bytes()), Ok(()));
        }
        assert_eq!(
            config.get("maxmemory-policy").as_deref(),
            Some("volatile-ttl")
        );
        assert_eq!(config.maxmemory_samples, 10);
        assert_eq!((config.lfu.log_factor, config.lfu.decay_minutes), (0, 0));
        assert_eq!(
            config.set("maxmemory-policy", b"lru").unwrap_err().message(),
            "ERR CONFIG SET failed (possibly related to argument 'maxmemory-policy') - argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction"
        );
        assert!(config.set("maxmemory-samples", b"0").is_err());
        assert!(config.set("maxmemory-samples", b"65").is_err());
        assert!(config.set("lfu-decay-time", b"-1").is_err());
        assert_eq!(config.maxmemory_policy, Policy::VolatileTtl, "unchanged");
    }

    #[test]
    fn set_max_intset_entries_is_settable_at_run_time() {
        let mut config = Config::default();
        assert_eq!(config.get("set-max-intset-entries").as_deref(), Some("512"));
        assert_eq!(
            config.set_at_runtime("set-max-intset-entries", b"0"),
            Ok(())
        );
        assert_eq!(config.set_max_intset_entries, 0);
        assert!(config.set("set-max-intset-entries", b"-1").is_err());
        assert!(config.set("set-max-intset-entries", b"many").is_err());
        assert_eq!(
            config.matching(b"set-max-*"),
            vec![("set-max-intset-entries", String::from("0"))]
        );
    }

    #[test]
    fn set_parses_redis_value_syntax() {
        let mut config = Config::default();
        config.set("maxmemory", b"64mb").unwrap();
        assert_eq!(config.maxmemory, 64 << 20);
        config.set("AppendOnly", b"yes").unwrap();
        assert!(config.appendonly);
        config.set("appendfsync", b"always").unwrap();
        assert_eq!(config.appendfsync, AppendFsync::Always);
        config.set("auto-aof-rewrite-min-size", b"1gb").unwrap();
        assert_eq!(config.aof_rewrite.min_size, 1 << 30);
        config.set("port", b"7000").unwrap();
        assert_eq!(config.get("port").as_deref(), Some("7000"));
    }

    #[test]
    fn from_args_reads_name_value_pairs() {
        let config = Config::from_args([
            "--appendfsync",
            "no",
            "auto-aof-rewrite-min-size",
            "1mb",
            "maxclients",
            "5",
        ])
        .unwrap();
        assert_eq!(config.appendfsync, AppendFsync::No);
        assert_eq!(config.aof_rewrite.min_size, 1 << 20);
        assert_eq!(config.maxclients, 5);
        assert_eq!(config.get("maxclients").as_deref(), Some("5"));
        assert_eq!(Config::from_args([]).unwrap(), Config::default());
        assert!(matches!(
            Config::from_args(["maxclients", "0"]),
            Err(ConfigError::Invalid(..))
        ));
        assert!(matches!(
            Config::from_args(["bogus", "1"]),
            Err(ConfigError::Unknown(..))
        ));
        assert!(matches!(
            Config::from_args(["appendfsync"]),
            Err(ConfigError::Invalid(..))
        ));
    }

    #[test]
    fn set_errors_read_like_redis() {
        let mut config = Config::default();
        assert_eq!(
            config.set("maxmemory", b"lots").unwrap_err().message(),
            "ERR CONFIG SET failed (possibly related to argument 'maxmemory') - argument must be a memory value"
        );
        // Redis 7's words for integer and memory settings, found by the
        // differential test against redis-server.
        for (name, value, why) in [
            (
                "maxclients",
                "lots",
                "argument couldn't be parsed into an integer",
            ),
            (
                "maxclients",
                "0",
                "argument must be between 1 and 4294967295 inclusive",
            ),
            (
                "maxclients",
                "-1",
                "argument must be between 1 and 4294967295 inclusive",
            ),
            (
                "maxclients",
                "4294967296",
                "argument must be between 1 and 4294967295 inclusive",
            ),
            (
                "port",
                "70000",
                "argument must be between 0 and 65535 inclusive",
            ),
            (
                "auto-aof-rewrite-percentage",
                "-1",
                "argument must be between 0 and 2147483647 inclusive",
            ),
            (
                "proto-max-bulk-len",
                "100",
                "argument must be between 1048576 and 9223372036854775807 inclusive",
            ),
            (
                "proto-max-bulk-len",
                "lots",
                "argument must be a memory value",
            ),
            (
                "appendfsync",
                "sometimes",
                "argument(s) must be one of the following: everysec, always, no",
            ),
        ] {
            assert_eq!(
                config.set(name, value.as_bytes()),
                Err(ConfigError::Invalid(name.into(), why)),
                "{name} {value}"
            );
        }
        assert_eq!(
            config.set("nope", b"1").unwrap_err().message(),
            "ERR Unknown option or number of arguments for CONFIG SET - 'nope'"
        );
        assert_eq!(
            config.set_at_runtime("port", b"1").unwrap_err(),
            ConfigError::Immutable(String::from("port"))
        );
        assert_eq!(
            config.set_at_runtime("databases", b"32").unwrap_err(),
            ConfigError::Immutable(String::from("databases"))
        );
        // What it already is: nothing to change.
        assert_eq!(config.set_at_runtime("databases", b"16"), Ok(()));
        assert_eq!(
            config.set_at_runtime("appendfilename", b"appendonly.aof"),
            Ok(())
        );
        assert_eq!(config.get("lua-time-limit").as_deref(), Some("5000"));
        assert_eq!(config.set_at_runtime("busy-reply-threshold", b"10"), Ok(()));
        assert_eq!(config.get("lua-time-limit").as_deref(), Some("10"));
        assert!(config.set_at_runtime("lua-time-limit", b"-1").is_err());
        assert_eq!(config.set_at_runtime("timeout", b"30"), Ok(()));
        assert_eq!(config.get("timeout").as_deref(), Some("30"));
        assert!(config.set_at_runtime("timeout", b"-1").is_err());
        assert!(config.set("databases", b"0").is_err());
        assert!(
            config.set("databases", b"32").is_ok(),
            "at start it may be set"
        );
    }

    #[test]
    fn client_output_buffer_limit_takes_the_normal_class() {
        let mut config = Config::default();
        config
            .set(
                "client-output-buffer-limit",
                b"normal 10mb 0 0 pubsub 32mb 8mb 60",
            )
            .unwrap();
        assert_eq!(config.client_output_hard_limit, 10 << 20);
        config
            .set("client-output-buffer-limit", b"replica 1 1 1")
            .unwrap();
        assert_eq!(
            config.client_output_hard_limit,
            10 << 20,
            "other classes only"
        );
        for bad in [&b"normal 1mb 0"[..], b"vip 1 1 1", b"normal x 0 0", b""] {
            assert!(config.set("client-output-buffer-limit", bad).is_err());
        }
        assert!(config
            .get("client-output-buffer-limit")
            .unwrap()
            .starts_with("normal 10485760 0 0"));
    }
}
