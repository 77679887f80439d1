//! Connection, transaction and server commands.
//!
//! Left out of the differential test, deliberately:
//! - `QUIT`: it ends the connection (the test sends it once, at the end);
//! - `HELLO`: it switches the connection's protocol;
//! - `BGREWRITEAOF`: its reply depends on whether a rewrite is still
//!   running, which differs by timing (and Redis runs without a log);
//! - `CLIENT SETINFO`: Redis 7.2's, absent from Debian's Redis 7.0;
//!   `CLIENT UNBLOCK`: connection ids are each server's own;
//! - `CONFIG SET` and `CONFIG GET` of most parameters: the servers'
//!   settings differ (ports, `appendonly`), some are fixed in kvstore
//!   (`maxmemory-policy`), and kvstore's `maxmemory` applies to an
//!   estimate of its data, not to the process, so `-OOM` comes at other
//!   sizes (a few settings both take alike are compared);
//! - `COMMAND`: kvstore describes its own, smaller command set;
//! - Redis commands kvstore does not have: it answers them as unknown;
//!   unknown commands are sent by names neither server knows, with
//!   printable arguments (Redis quotes arguments in its error with C's
//!   "%s", which stops at a NUL byte; kvstore shows them whole).

use crate::draw::{Check, Gen};

/// The connection and server commands, each with how often the
/// differential test sends it (0: never).
pub(crate) const NAMES: &[(&str, u8)] = &[
    ("PING", 1),
    ("ECHO", 1),
    ("SELECT", 1),
    ("AUTH", 1),
    ("CLIENT", 1),
    ("INFO", 1),
    ("CONFIG", 1),
    ("NOSUCH", 1),
    ("QUIT", 0),
    ("HELLO", 0),
    ("BGREWRITEAOF", 0),
    ("COMMAND", 0),
];

/// Transactions: `MULTI`, `EXEC`, `DISCARD`, `WATCH`, `UNWATCH`, each with
/// how often the differential test sends it.
pub(crate) const TRANSACTIONS: &[(&str, u8)] = &[
    ("MULTI", 2),
    ("EXEC", 1),
    ("DISCARD", 1),
    ("WATCH", 1),
    ("UNWATCH", 1),
];

/// Parameters for `CONFIG SET` that both servers take alike, and bad
/// ones: the differential test's.
const COMPARABLE_SETTINGS: &[(&str, &str)] = &[
    ("maxclients", "10000"),
    ("MaxClients", "10000"),
    ("maxclients", "lots"),
    ("maxclients", "0"),
    ("maxclients", "-1"),
    ("appendfsync", "everysec"),
    ("appendfsync", "sometimes"),
    ("auto-aof-rewrite-percentage", "100"),
    ("auto-aof-rewrite-percentage", "-1"),
    ("proto-max-bulk-len", "536870912"),
    ("proto-max-bulk-len", "100"),
    ("proto-max-bulk-len", "lots"),
    ("databases", "3"),
    ("hll-sparse-max-bytes", "3000"),
    ("hll-sparse-max-bytes", "200"),
    ("NoSuch", "1"),
];

/// Parameters that change what commands do, and values of them all: the
/// fuzzer's, any with any.
const SETTINGS: &[&str] = &[
    "maxmemory",
    "proto-max-bulk-len",
    "appendfsync",
    "maxclients",
    "auto-aof-rewrite-percentage",
    "auto-aof-rewrite-min-size",
    "port",
    "save",
    "set-max-intset-entries",
    "zset-max-listpack-entries",
    "zset-max-ziplist-value",
    "maxmemory-policy",
    "maxmemory-samples",
    "lfu-log-factor",
    "lfu-decay-time",
    "hll-sparse-max-bytes",
    "bogus",
];
const VALUES: &[&str] = &[
    "0",
    "1000",
    "1mb",
    "2mb",
    "100",
    "64kb",
    "always",
    "no",
    "yes",
    "-1",
    "abc",
    "allkeys-lru",
    "volatile-lru",
    "allkeys-lfu",
    "volatile-lfu",
    "allkeys-random",
    "volatile-random",
    "volatile-ttl",
    "noeviction",
    "5",
];

/// The arguments of connection, transaction or server command `name`.
pub(crate) fn args(g: &mut Gen, name: &str, args: &mut Vec<Vec<u8>>) -> Check {
    match name {
        "PING" => {
            for _ in 0..g.below(3) {
                args.push(g.value());
            }
        }
        "ECHO" => args.push(g.value()),
        "SELECT" => {
            let db = match g.hostile() && g.chance(50) {
                true => g.number(),
                false => g.pick_str(&["0", "1", "15", "-1", "16", "abc", "99999999999", ""]),
            };
            args.push(db);
        }
        "AUTH" => {
            if g.hostile() {
                for _ in 0..1 + g.below(2) {
                    args.push(g.value());
                }
            } else {
                // No password is set: AUTH <password> is refused, the
                // default user takes any, other users none.
                let user = g.pick_str(&["default", "someone", "DEFAULT"]);
                match g.below(3) {
                    0 => args.push(b"secret".to_vec()),
                    _ => args.extend([user, b"secret".to_vec()]),
                }
            }
        }
        "WATCH" => g.some_keys(args, 3),
        "CLIENT" => return client(g, args),
        "INFO" => {
            let sections: &[&str] = match g.hostile() {
                true => &[
                    "memory",
                    "keyspace",
                    "server",
                    "stats",
                    "persistence",
                    "clients",
                    "all",
                    "nosuch",
                ],
                false => &["memory", "keyspace", "server", "nosuch"],
            };
            for _ in 0..g.below(if g.hostile() { 3 } else { 2 }) {
                args.push(g.pick_word(sections));
            }
            return Check::Kind;
        }
        "CONFIG" => config(g, args),
        "COMMAND" => match g.below(6) {
            0 => {}
            1 => args.push(g.word("COUNT")),
            2 => args.push(g.word("DOCS")),
            3 => {
                let name = g.pick(super::strings::NAMES).0;
                args.extend([g.word("INFO"), g.word(name)]);
            }
            4 => args.push(g.word("LIST")),
            _ => args.push(g.word("NOSUCH")),
        },
        "HELLO" if g.chance(50) => args.push(g.pick_str(&["2", "3", "1", "x"])),
        "NOSUCH" => {
            args[0] = g.pick_str(&["NOSUCH", "nosuchcmd", "x"]);
            for _ in 0..g.below(3) {
                let arg = match g.hostile() {
                    true => g.value(),
                    false => format!("a{}", g.below(100)).into_bytes(),
                };
                args.push(arg);
            }
        }
        _ => {} // QUIT, BGREWRITEAOF, MULTI, EXEC, DISCARD, UNWATCH
    }
    Check::Exact
}

/// `CLIENT` and a subcommand; `CLIENT ID` compares by kind.
fn client(g: &mut Gen, args: &mut Vec<Vec<u8>>) -> Check {
    let sub = match g.hostile() {
        true => g.pick(&["SETNAME", "GETNAME", "ID", "NOSUCH", "SETINFO", "UNBLOCK"]),
        false => g.pick(&["SETNAME", "GETNAME", "ID", "NOSUCH"]),
    };
    args.push(g.word(sub));
    match sub {
        "SETNAME" => {
            let name = match g.hostile() {
                true => g.value(),
                false => g.pick_str(&["fuzz", "", "has space", "new\nline", "x"]),
            };
            args.push(name);
        }
        "ID" => return Check::Kind,
        "SETINFO" => {
            let attr = g.pick_str(&["LIB-NAME", "lib-ver", "bogus"]);
            args.extend([attr, g.value()]);
        }
        "UNBLOCK" => {
            args.push(g.pick_str(&["1", "2", "3", "0", "x"]));
            if g.chance(50) {
                args.push(g.pick_word(&["TIMEOUT", "ERROR", "LATER"]));
            }
        }
        _ => {}
    }
    Check::Exact
}

/// `CONFIG GET|SET|RESETSTAT`, and a subcommand that does not exist.
fn config(g: &mut Gen, args: &mut Vec<Vec<u8>>) {
    match g.below(4) {
        0 => {
            let name = match g.hostile() {
                true => g.pattern(),
                false => g.pick_str(&["maxmemory", "maxmemory-policy", "nosuch"]),
            };
            args.extend([g.word("GET"), name]);
        }
        1 => args.push(g.word("RESETSTAT")),
        2 => {
            args.push(g.word("SET"));
            for _ in 0..1 + g.below(2) {
                let (name, value) = match g.hostile() {
                    true => (g.pick(SETTINGS), g.pick(VALUES)),
                    false => g.pick(COMPARABLE_SETTINGS),
                };
                args.extend([g.word(name), value.into()]);
            }
            if g.chance(10) {
                args.push(b"maxclients".to_vec()); // a name without a value
            }
        }
        _ => args.push(g.word("NOSUCH")),
    }
}
