//! `INFO [section ...]`: the server report monitoring tools and
//! `redis-cli` parse, in Redis's `field:value` format.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;

use super::exec::Exec;
use super::REDIS_VERSION;
use crate::resp::Reply;

/// Writes one section of the report.
type Section = fn(&Exec<'_>, &mut String);

/// The sections in report order, and whether each is in the default
/// report (`commandstats` is long, so only `all` and `everything` add it).
const SECTIONS: &[(&str, Section, bool)] = &[
    ("server", server, true),
    ("clients", clients, true),
    ("memory", memory, true),
    ("persistence", persistence, true),
    ("stats", stats, true),
    ("replication", replication, true),
    ("cpu", cpu, true),
    ("commandstats", commandstats, false),
    ("latencystats", latencystats, false),
    ("errorstats", errorstats, true),
    ("cluster", cluster, true),
    ("keyspace", keyspace, true),
];

/// `INFO [section ...]`: the named sections (any case, each once), the
/// default ones for none or `default`, every one for `all` or
/// `everything`. Unknown names are skipped.
pub(crate) fn info(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let wanted: Vec<Vec<u8>> = args[1..].iter().map(|a| a.to_ascii_lowercase()).collect();
    let named = |w: &[u8]| wanted.iter().any(|a| a.as_slice() == w);
    let all = named(b"all") || named(b"everything");
    let default = wanted.is_empty() || named(b"default");
    let mut out = String::new();
    for (name, write, in_default) in SECTIONS {
        if all || (default && *in_default) || named(name.as_bytes()) {
            if !out.is_empty() {
                out.push_str("\r\n");
            }
            write(x, &mut out);
        }
    }
    Reply::Verbatim(out.into())
}

/// Appends `name:value\r\n`.
fn field(out: &mut String, name: &str, value: impl core::fmt::Display) {
    // Writing to a String cannot fail.
    let _ = write!(out, "{name}:{value}\r\n");
}

fn server(x: &Exec<'_>, out: &mut String) {
    let uptime = x.now.saturating_sub(x.started_ms) / 1000;
    out.push_str("# Server\r\n");
    field(out, "redis_version", REDIS_VERSION);
    field(out, "redis_git_sha1", "00000000");
    field(out, "redis_git_dirty", 0);
    field(out, "redis_mode", "standalone");
    field(out, "os", "Faultline aarch64");
    field(out, "arch_bits", 64);
    field(out, "multiplexing_api", "faultline");
    field(out, "process_id", 1);
    field(out, "tcp_port", x.config.port);
    field(out, "server_time_usec", x.now.saturating_mul(1000));
    field(out, "uptime_in_seconds", uptime);
    field(out, "uptime_in_days", uptime / 86_400);
    field(out, "executable", "/kvstore");
    field(out, "config_file", "");
}

/// CPU time: the server's core, busy (not waiting for an interrupt).
/// Kernel and server are one program at one privilege level, so there is
/// no system time apart from it, and no children.
fn cpu(x: &Exec<'_>, out: &mut String) {
    let user = alloc::format!(
        "{}.{:06}",
        x.stats.used_cpu_us / 1_000_000,
        x.stats.used_cpu_us % 1_000_000
    );
    out.push_str("# CPU\r\n");
    field(out, "used_cpu_sys", "0.000000");
    field(out, "used_cpu_user", &user);
    field(out, "used_cpu_sys_children", "0.000000");
    field(out, "used_cpu_user_children", "0.000000");
    field(out, "used_cpu_sys_main_thread", "0.000000");
    field(out, "used_cpu_user_main_thread", &user);
}

fn clients(x: &Exec<'_>, out: &mut String) {
    out.push_str("# Clients\r\n");
    field(out, "connected_clients", x.stats.connected_clients);
    field(out, "blocked_clients", x.blocking.len());
    field(out, "tracking_clients", x.tracking.counts().0);
    field(out, "maxclients", x.config.maxclients);
}

fn memory(x: &Exec<'_>, out: &mut String) {
    let used = x.all_dbs().map(|(_, s)| s.used_memory()).sum::<usize>() as u64;
    let peak = x.stats.used_memory_peak.max(used);
    out.push_str("# Memory\r\n");
    field(out, "used_memory", used);
    field(out, "used_memory_human", human(used));
    field(out, "used_memory_peak", peak);
    field(out, "used_memory_peak_human", human(peak));
    field(out, "used_memory_lua", x.stats.used_memory_lua);
    field(out, "used_memory_lua_human", human(x.stats.used_memory_lua));
    field(out, "number_of_cached_scripts", x.stats.cached_scripts);
    field(out, "maxmemory", x.config.maxmemory);
    field(out, "maxmemory_human", human(x.config.maxmemory));
    field(out, "maxmemory_policy", x.config.maxmemory_policy.as_str());
    // Eviction compares used_memory itself (the log's buffers are not in
    // it), and values are freed at once, never lazily.
    field(out, "mem_not_counted_for_evict", 0);
    field(out, "mem_allocator", "faultline");
    field(out, "lazyfree_pending_objects", 0);
}

fn persistence(x: &Exec<'_>, out: &mut String) {
    let ok = |good: bool| if good { "ok" } else { "err" };
    out.push_str("# Persistence\r\n");
    field(out, "loading", u8::from(x.loading));
    field(out, "rdb_changes_since_last_save", x.stats.dirty);
    field(out, "rdb_bgsave_in_progress", 0);
    field(out, "rdb_last_save_time", x.started_ms / 1000);
    field(out, "rdb_last_bgsave_status", "ok");
    field(out, "aof_enabled", u8::from(x.config.appendonly));
    let s = &*x.stats;
    field(
        out,
        "aof_rewrite_in_progress",
        u8::from(s.aof_rewrite_in_progress),
    );
    field(
        out,
        "aof_rewrite_scheduled",
        u8::from(s.aof_rewrite_scheduled),
    );
    match s.aof_last_rewrite_ms {
        Some(ms) => field(out, "aof_last_rewrite_time_sec", ms / 1000),
        None => field(out, "aof_last_rewrite_time_sec", -1),
    }
    field(out, "aof_current_rewrite_time_sec", -1);
    field(out, "aof_last_bgrewrite_status", ok(s.aof_last_rewrite_ok));
    field(out, "aof_rewrites", x.stats.aof_rewrites);
    field(
        out,
        "aof_last_write_status",
        ok(x.stats.aof_write_error.is_none()),
    );
    if let Some(reason) = &x.stats.aof_write_error {
        field(out, "aof_last_write_error", reason);
    }
    if x.config.appendonly {
        field(out, "aof_current_size", x.stats.aof_current_size);
        field(out, "aof_base_size", x.stats.aof_base_size);
    }
}

fn stats(x: &Exec<'_>, out: &mut String) {
    let s = &*x.stats;
    out.push_str("# Stats\r\n");
    field(
        out,
        "total_connections_received",
        s.total_connections_received,
    );
    field(out, "total_commands_processed", s.total_commands_processed);
    field(out, "instantaneous_ops_per_sec", 0);
    field(out, "total_net_input_bytes", s.total_net_input_bytes);
    field(out, "total_net_output_bytes", s.total_net_output_bytes);
    field(out, "rejected_connections", s.rejected_connections);
    field(out, "expired_keys", s.expired_keys);
    field(out, "evicted_keys", s.evicted_keys);
    field(out, "keyspace_hits", s.keyspace_hits);
    field(out, "keyspace_misses", s.keyspace_misses);
    let (_, keys, items, prefixes) = x.tracking.counts();
    field(out, "tracking_total_keys", keys);
    field(out, "tracking_total_items", items);
    field(out, "tracking_total_prefixes", prefixes);
    field(out, "total_error_replies", s.total_error_replies);
}

/// kvstore has no replication (one server, its log on its own disk): it is
/// a primary with no replicas and an empty backlog.
fn replication(x: &Exec<'_>, out: &mut String) {
    out.push_str("# Replication\r\n");
    field(out, "role", "master");
    field(out, "connected_slaves", 0);
    if x.config.lacks_replicas() {
        field(out, "min_slaves_good_slaves", 0);
    }
    field(out, "master_failover_state", "no-failover");
    // A replication ID of this run, as Redis makes one per start.
    let id = x.started_ms.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let _ = write!(out, "master_replid:{id:040x}\r\n");
    field(
        out,
        "master_replid2",
        "0000000000000000000000000000000000000000",
    );
    field(out, "master_repl_offset", 0);
    field(out, "second_repl_offset", -1);
    field(out, "repl_backlog_active", 0);
    field(out, "repl_backlog_size", 0);
    field(out, "repl_backlog_first_byte_offset", 0);
    field(out, "repl_backlog_histlen", 0);
}

/// One line per command that was called since start (or `CONFIG
/// RESETSTAT`): calls, time, and refusals and failures.
/// Each command's run-time percentiles (`latency-tracking-info-percentiles`),
/// in microseconds, for the commands with a run in their histogram.
fn latencystats(x: &Exec<'_>, out: &mut String) {
    out.push_str("# Latencystats\r\n");
    let percentiles = &x.config.latency_tracking_info_percentiles.0;
    for (name, c) in &x.stats.commands {
        if c.latency.total() == 0 {
            continue;
        }
        let _ = write!(out, "latency_percentiles_usec_{name}:");
        for (i, &p) in percentiles.iter().enumerate() {
            let us = c.latency.percentile(p).unwrap_or(0);
            let comma = if i == 0 { "" } else { "," };
            let _ = write!(out, "{comma}p{p}={us}.000");
        }
        out.push_str("\r\n");
    }
}

fn commandstats(x: &Exec<'_>, out: &mut String) {
    out.push_str("# Commandstats\r\n");
    for (name, c) in &x.stats.commands {
        let per_call_hundredths = (c.usec * 100).checked_div(c.calls).unwrap_or(0);
        let _ = write!(
            out,
            "cmdstat_{name}:calls={},usec={},usec_per_call={}.{:02},rejected_calls={},failed_calls={}\r\n",
            c.calls,
            c.usec,
            per_call_hundredths / 100,
            per_call_hundredths % 100,
            c.rejected_calls,
            c.failed_calls
        );
    }
}

/// One line per error code answered since start (or `CONFIG RESETSTAT`).
fn errorstats(x: &Exec<'_>, out: &mut String) {
    out.push_str("# Errorstats\r\n");
    for (code, count) in &x.stats.error_codes {
        let _ = write!(out, "errorstat_{code}:count={count}\r\n");
    }
}

/// kvstore is never part of a Redis Cluster.
fn cluster(_x: &Exec<'_>, out: &mut String) {
    out.push_str("# Cluster\r\n");
    field(out, "cluster_enabled", 0);
}

fn keyspace(x: &Exec<'_>, out: &mut String) {
    out.push_str("# Keyspace\r\n");
    for (db, store) in x.all_dbs().filter(|(_, s)| !s.is_empty()) {
        let _ = write!(
            out,
            "db{db}:keys={},expires={},avg_ttl=0\r\n",
            store.len(),
            store.volatile_len()
        );
    }
}

/// Redis's human-readable sizes: `512B`, `1.50K`, `64.00M`, `2.00G`.
fn human(bytes: u64) -> String {
    const UNITS: [(u64, &str); 4] = [
        (1 << 40, "T"),
        (1 << 30, "G"),
        (1 << 20, "M"),
        (1 << 10, "K"),
    ];
    for (size, unit) in UNITS {
        if bytes >= size {
            let hundredths = u128::from(bytes) * 100 / u128::from(size);
            return alloc::format!("{}.{:02}{unit}", hundredths / 100, hundredths % 100);
        }
    }
    alloc::format!("{bytes}B")
}

#[cfg(test)]
mod tests {
    use super::human;

    #[test]
    fn human_sizes() {
        assert_eq!(human(0), "0B");
        assert_eq!(human(1023), "1023B");
        assert_eq!(human(1536), "1.50K");
        assert_eq!(human(64 << 20), "64.00M");
        assert_eq!(human(3 << 30), "3.00G");
    }
}
