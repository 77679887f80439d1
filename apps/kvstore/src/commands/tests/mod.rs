//! Command tests, written as sessions: commands typed as `redis-cli` would
//! send them, and the replies Redis 7 gives, as `redis-cli` shows them
//! ([`Session::transcript`]); where a reply is computed by the test, as
//! pairs of a command and its [`Reply`] ([`Session::expect`]).

mod acl;
mod auth;
mod bitops;
mod bits;
mod databases;
mod dump;
mod eviction;
mod expiry;
mod families_random;
mod geo;
mod hashes;
mod hyperloglog;
mod introspection;
mod keys;
mod lists;
mod memory;
mod notify;
mod pause;
mod persistence;
mod pubsub;
mod resp3;
mod server;
mod sets;
mod sort;
mod streams;
mod strings;
mod tracking;
mod transactions;
mod zsets;

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::{ClientCtx, Effects, Engine, Outcome};
use crate::aof::{replay, HEADER};
use crate::config::Config;
use crate::resp::{split_args, Reply};
use crate::store::{Data, Entry, Store};
use crate::Args;

/// Commands whose keys only their arguments tell (`movablekeys`).
pub(crate) const MOVABLE: [&str; 6] = [
    "zunionstore",
    "xread",
    "eval",
    "sort",
    "sort_ro",
    "georadius",
];

/// Commands whose keys stand where the table says, some of them
/// variadic or with options (`lmove`, `bitfield`).
pub(crate) const NOT_MOVABLE: [&str; 12] = [
    "set",
    "get",
    "mset",
    "bitfield",
    "lmove",
    "lpop",
    "blpop",
    "ping",
    "memory",
    "memory|usage",
    "rename",
    "georadius_ro",
];

/// The error every command gives a key holding another type.
pub(super) const WRONGTYPE: &str =
    "WRONGTYPE Operation against a key holding the wrong kind of value";

/// The error every write gets that would take memory past `maxmemory`.
pub(super) const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";

/// A fresh engine loaded from `log` at `now`: what a restart sees (the
/// persistence tests of every type). Every logged command must load, and
/// the log must end on a whole record.
pub(super) fn load(log: &[u8], now: u64) -> Engine {
    load_with(Config::default(), log, now)
}

/// [`load`] into a server started with `config`.
pub(super) fn load_with(config: Config, log: &[u8], now: u64) -> Engine {
    let mut engine = Engine::new(config, now);
    let report = replay(log, |args| {
        if let Err(e) = engine.load(args.clone(), now) {
            panic!("{} failed to load: {e:?}", show(&args));
        }
    });
    assert_eq!(report.torn_tail, None);
    engine
}

/// The live dataset of the current database at `now`: key -> (value of
/// any type, expiry).
pub(super) fn live(engine: &Engine, now: u64) -> BTreeMap<Vec<u8>, (Data, Option<u64>)> {
    engine
        .store()
        .iter()
        .filter(|(_, e)| !e.is_expired(now))
        .map(|(k, e)| (k.to_vec(), (e.data().clone(), e.expire_at())))
        .collect()
}

/// Every entry of the current database, expired or not, in key order
/// (entries compare by value and expiry).
pub(super) fn entries(engine: &Engine) -> Vec<(Vec<u8>, Entry)> {
    engine
        .store()
        .iter()
        .map(|(k, e)| (k.to_vec(), e.clone()))
        .collect()
}

/// One client talking to one engine, with a clock the test moves.
pub(super) struct Session {
    pub engine: Engine,
    pub client: ClientCtx,
    pub now: u64,
}

impl Session {
    /// A fresh server at time 1 000 000 ms.
    pub fn new() -> Self {
        Self::with_config(Config::default())
    }

    pub fn with_config(config: Config) -> Self {
        Session {
            engine: Engine::new(config, 1_000_000),
            client: ClientCtx::new(7),
            now: 1_000_000,
        }
    }

    /// A server (set up by `config`) holding one key of two items, which
    /// `fill` adds, with `maxmemory` leaving no room for more: where every
    /// type's out-of-memory test starts. `item` is one item's estimated
    /// cost.
    #[track_caller]
    pub fn full(config: Config, item: usize, fill: &str) -> Self {
        let full = Store::cost(1, 2 * item);
        let mut s = Session::with_config(Config {
            maxmemory: full as u64,
            ..config
        });
        s.expect(&[(fill, int(2))]);
        assert_eq!(s.engine.store().used_memory(), full);
        s
    }

    /// A fresh server after `line` ran: where a file's tests start from.
    pub fn after(line: &str) -> Self {
        let mut s = Self::new();
        s.run(line);
        s
    }

    /// Runs `line` (split with `redis-cli` quoting) and returns the outcome.
    pub fn exec(&mut self, line: &str) -> Outcome {
        let args = split_args(line.as_bytes()).expect("balanced quotes");
        self.engine.execute(&args, &mut self.client, self.now)
    }

    /// Runs `line` as `client`, another client of the same engine.
    pub fn exec_as(&mut self, client: &mut ClientCtx, line: &str) -> Outcome {
        let args = split_args(line.as_bytes()).expect("balanced quotes");
        self.engine.execute(&args, client, self.now)
    }

    /// Runs `line` and returns just the reply.
    pub fn run(&mut self, line: &str) -> Reply {
        self.exec(line).reply
    }

    /// Runs each command of `transcript` in order and checks the reply it
    /// gets: a session written as the exchange `redis-cli` would show. A
    /// wrong reply stops the test naming the step, its command, and the
    /// reply expected and got.
    #[track_caller]
    pub fn expect(&mut self, transcript: &[(&str, Reply)]) {
        for (step, (line, expected)) in transcript.iter().enumerate() {
            let actual = self.run(line);
            if actual != *expected {
                panic!(
                    "step {step} `{line}`: wrong reply\n  \
                     expected: {expected:?}\n  actual:   {actual:?}"
                );
            }
        }
    }

    /// Runs the exchange `transcript` shows, as `redis-cli` shows it: each
    /// `> ` line is a command, the lines after it the reply it must get
    /// (see [`cli`]), `//` lines are comments, blank lines and the common
    /// indentation are passed over. A wrong reply stops the test naming
    /// the step, its command, and the reply expected and got.
    ///
    /// ```text
    /// > HSET h a 1 b 2
    /// (integer) 2
    /// > HGET h a
    /// "1"
    /// > HMGET h a nope
    /// 1) "1"
    /// 2) (nil)
    /// ```
    #[track_caller]
    pub fn transcript(&mut self, transcript: &str) {
        for (step, (line, expected)) in steps(transcript).into_iter().enumerate() {
            let expected = expected.join("\n");
            let actual = cli(&self.run(line));
            if actual != expected {
                panic!(
                    "step {step} `{line}`: wrong reply\n  \
                     expected:\n{expected}\n  actual:\n{actual}"
                );
            }
        }
    }

    /// Runs each command of `transcript`, written as for
    /// [`Session::transcript`], and checks what it logs instead of its
    /// reply: the lines after a `> ` line are the commands it logs, one a
    /// line, or `(nothing)`. A wrong log stops the test naming the step,
    /// its command, and the log expected and got.
    ///
    /// ```text
    /// > SET k v NX GET
    /// SET k v
    /// // did not write
    /// > SET k w NX
    /// (nothing)
    /// ```
    #[track_caller]
    pub fn logs(&mut self, transcript: &str) {
        for (step, (line, mut expected)) in steps(transcript).into_iter().enumerate() {
            if expected == ["(nothing)"] {
                expected.clear();
            }
            let actual = self.logged(line);
            if actual != expected {
                panic!(
                    "step {step} `{line}`: wrong log\n  \
                     expected: {expected:?}\n  actual:   {actual:?}"
                );
            }
        }
    }

    /// Runs each command of `transcript` and checks the reply as it goes
    /// on the wire (see [`Session::wire`]); written as for
    /// [`wire_transcript`].
    #[track_caller]
    pub fn wire_transcript(&mut self, transcript: &str) {
        wire_transcript(transcript, |line| self.wire(line));
    }

    /// Asserts that each of `lines` is refused with [`WRONGTYPE`]: what a
    /// command gives a key of another type, whichever way round.
    #[track_caller]
    pub fn refuses_wrong_type(&mut self, lines: &[&str]) {
        for line in lines {
            assert_eq!(self.run(line), err(WRONGTYPE), "{line}");
        }
    }

    /// Runs `line` and returns the reply as it goes on the wire, in the
    /// protocol the client speaks (`HELLO 3` switches it).
    pub fn wire(&mut self, line: &str) -> String {
        let reply = self.run(line);
        String::from_utf8_lossy(&reply.to_bytes_as(self.client.protocol())).into_owned()
    }

    /// Runs `line` and returns what it logged, one string per command.
    pub fn logged(&mut self, line: &str) -> Vec<String> {
        shown(&self.exec(line).effects)
    }

    /// Runs each command of `commands`, one a line (blank lines and `//`
    /// comments passed over, as in a transcript), and returns the log
    /// they write, header first.
    pub fn log_lines(&mut self, commands: &str) -> Vec<u8> {
        let mut log = HEADER.to_vec();
        for line in commands.lines().map(str::trim) {
            if !line.is_empty() && !line.starts_with("//") {
                log.extend(self.exec(line).effects.to_bytes());
            }
        }
        log
    }

    /// Asserts that `log`, loaded now into a fresh server, gives this
    /// session's current database, entry for entry, and its memory use.
    pub fn assert_reloads(&self, log: &[u8]) {
        let loaded = load(log, self.now);
        assert_eq!(entries(&loaded), entries(&self.engine));
        assert_eq!(loaded.used_memory(), self.engine.used_memory());
    }

    /// Asserts that `log`, loaded at `at` (now or later), gives the live
    /// dataset this server has at `at`; `context` names the case.
    pub fn assert_log_gives(&self, log: &[u8], at: u64, context: &str) {
        assert_eq!(
            live(&load(log, at), at),
            live(&self.engine, at),
            "{context}"
        );
    }

    /// Moves the clock forward.
    pub fn advance(&mut self, ms: u64) {
        self.now += ms;
    }

    /// Compacts the log as the server does, and returns the new log: a
    /// rewrite in steps of about `keys` keys, with `between` called after
    /// each step but the last, as clients are served between steps; what
    /// `between` returns (their records) goes into the new log there.
    pub fn rewrite(
        &mut self,
        keys: usize,
        mut between: impl FnMut(&mut Session) -> Effects,
    ) -> Vec<u8> {
        self.engine.aof_rewrite_started(self.now);
        let mut new_log = Vec::new();
        while !self.engine.aof_rewrite_step(keys, &mut new_log) {
            new_log.extend(between(self).to_bytes());
        }
        self.engine.aof_rewrite_finished(Some(0), 0);
        new_log
    }
}

/// The steps of a transcript (see [`Session::transcript`]): each `> `
/// line's command with the lines after it; `//` lines, blank lines and the
/// common indentation passed over.
fn steps(transcript: &str) -> Vec<(&str, Vec<&str>)> {
    let lines: Vec<&str> = transcript
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with("//"))
        .collect();
    let indent = lines
        .iter()
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut steps: Vec<(&str, Vec<&str>)> = Vec::new();
    for line in lines.iter().map(|l| &l[indent..]) {
        match (line.strip_prefix("> "), steps.last_mut()) {
            (Some(command), _) => steps.push((command, Vec::new())),
            (None, Some((_, reply))) => reply.push(line),
            (None, None) => panic!("a reply before any command: {line}"),
        }
    }
    steps
}

/// Checks the bytes `wire` sends for each command of `transcript`, written
/// as for [`Session::transcript`] but with the reply's protocol lines, as
/// `nc` shows them: one line each, without their `\r\n`.
///
/// ```text
/// > SMEMBERS s
/// ~1
/// $1
/// a
/// ```
#[track_caller]
pub(super) fn wire_transcript(transcript: &str, mut wire: impl FnMut(&str) -> String) {
    for (step, (line, expected)) in steps(transcript).into_iter().enumerate() {
        let expected: String = expected.iter().map(|l| format!("{l}\r\n")).collect();
        let actual = wire(line);
        if actual != expected {
            panic!(
                "step {step} `{line}`: wrong reply\n  \
                 expected: {expected:?}\n  actual:   {actual:?}"
            );
        }
    }
}

/// Runs `transcript` (see [`Session::transcript`]) on a fresh server: a
/// test that is one session from the start.
#[track_caller]
pub(super) fn transcript(transcript: &str) {
    Session::new().transcript(transcript);
}

/// A command as one readable line: `SET k v PXAT 5`.
pub(super) fn show(args: &Args) -> String {
    let words: Vec<String> = args
        .iter()
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    words.join(" ")
}

/// The commands `effects` log, each as one readable line (see [`show`]).
pub(super) fn shown(effects: &Effects) -> Vec<String> {
    effects.commands().iter().map(show).collect()
}

/// `reply` as `redis-cli` shows it, from the RESP2 it encodes to (two
/// replies are equal when they encode the same): `(integer) 3`, `"text"`
/// (bytes other than printable ASCII escaped), `(nil)`, `OK`,
/// `(error) ERR ...`, `(empty array)`, and arrays as numbered lines,
/// nested ones indented.
/// A null array shows as `(nil array)`, so it is not taken for a null
/// string; several replies to one command follow one another.
pub(super) fn cli(reply: &Reply) -> String {
    let wire = reply.to_bytes();
    let mut rest = &wire[..];
    let mut lines = Vec::new();
    while !rest.is_empty() {
        lines.extend(cli_lines(&mut rest));
    }
    lines.join("\n")
}

/// The lines `redis-cli` shows for the one reply `wire` starts with,
/// which is left after it.
fn cli_lines(wire: &mut &[u8]) -> Vec<String> {
    let end = wire
        .windows(2)
        .position(|w| w == b"\r\n")
        .expect("a whole reply");
    let head = String::from_utf8_lossy(&wire[1..end]).into_owned();
    let kind = wire[0];
    *wire = &wire[end + 2..];
    let length = || head.parse::<i64>().expect("a length");
    match kind {
        b'+' => vec![head],
        b'-' => vec![format!("(error) {head}")],
        b':' => vec![format!("(integer) {head}")],
        b'$' if length() < 0 => vec!["(nil)".into()],
        b'$' => {
            let (text, after) = wire.split_at(length() as usize);
            *wire = &after[2..];
            vec![quoted(text)]
        }
        b'*' if length() < 0 => vec!["(nil array)".into()],
        b'*' if length() == 0 => vec!["(empty array)".into()],
        b'*' => {
            let count = length() as usize;
            let width = count.to_string().len();
            let mut lines = Vec::new();
            for item in 1..=count {
                for (n, line) in cli_lines(wire).into_iter().enumerate() {
                    lines.push(match n {
                        0 => format!("{item:>width$}) {line}"),
                        _ => format!("{:width$}  {line}", ""),
                    });
                }
            }
            lines
        }
        other => panic!("not a RESP2 reply: {}", other as char),
    }
}

/// `bytes` quoted as `redis-cli` quotes a string: printable ASCII as it
/// is, quotes and backslashes escaped, anything else as `\n`, `\xff`...
fn quoted(bytes: &[u8]) -> String {
    let mut out = String::from("\"");
    for &b in bytes {
        match b {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(b as char);
            }
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            b' '..=b'~' => out.push(b as char),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out.push('"');
    out
}

pub(super) fn ok() -> Reply {
    Reply::ok()
}

pub(super) fn int(n: i64) -> Reply {
    Reply::Integer(n)
}

pub(super) fn bulk(s: &str) -> Reply {
    Reply::bulk(s.as_bytes())
}

pub(super) fn nil() -> Reply {
    Reply::nil()
}

pub(super) fn err(text: &str) -> Reply {
    Reply::error(text)
}

pub(super) fn array(items: &[Reply]) -> Reply {
    Reply::array(items.to_vec())
}

pub(super) fn bulks(items: &[&str]) -> Reply {
    Reply::array(items.iter().map(|s| bulk(s)).collect())
}

/// Asserts that `reply` is one of the bulk strings `choices`: what a
/// random pick of one must be.
#[track_caller]
pub(super) fn assert_one_of(reply: Reply, choices: &[&str]) {
    assert!(
        choices.iter().any(|c| reply == bulk(c)),
        "{reply:?} is none of {choices:?}"
    );
}

/// The bulk strings of an array reply, in order (`nil` for a missing
/// value).
pub(super) fn words(reply: Reply) -> Vec<String> {
    let Some(items) = reply.clone().into_items() else {
        panic!("not an array: {reply:?}");
    };
    items
        .into_iter()
        .map(|item| match item {
            Reply::Bulk(Some(b)) => String::from_utf8(b).unwrap(),
            Reply::Bulk(None) => "nil".into(),
            other => panic!("not a bulk string: {other:?}"),
        })
        .collect()
}

/// The sorted bulk strings of an array reply.
pub(super) fn sorted(reply: Reply) -> Vec<String> {
    let mut out = words(reply);
    out.sort();
    out
}

/// The integers of an integer reply array, in order.
pub(super) fn ints(reply: Reply) -> Vec<i64> {
    let Some(items) = reply.clone().into_items() else {
        panic!("not an array: {reply:?}");
    };
    items
        .into_iter()
        .map(|item| match item {
            Reply::Integer(n) => n,
            other => panic!("not an integer: {other:?}"),
        })
        .collect()
}

/// Every word a whole `SCAN`-family iteration returns: `command` (`SCAN`,
/// `HSCAN key`, ...) runs with each cursor and `options` until the cursor
/// comes back to 0, and `between` runs before every call after the first.
pub(super) fn full_scan(
    s: &mut Session,
    command: &str,
    options: &str,
    mut between: impl FnMut(&mut Session, usize),
) -> Vec<String> {
    let mut cursor = String::from("0");
    let mut seen = Vec::new();
    for call in 0.. {
        if call > 0 {
            between(s, call);
        }
        let Reply::Array(Some(reply)) = s.run(&format!("{command} {cursor} {options}")) else {
            panic!("{command} must reply with an array");
        };
        let [Reply::Bulk(Some(next)), batch] = &reply[..] else {
            panic!("bad {command} reply {reply:?}");
        };
        seen.extend(words(batch.clone()));
        cursor = String::from_utf8(next.clone()).unwrap();
        if cursor == "0" {
            return seen;
        }
        assert!(call < 10_000, "{command} must terminate");
    }
    unreachable!()
}
