//! Scripts: Lua 5.1 (the faultline-lua crate) run as Redis 7.0 runs them
//! for `EVAL`, `EVALSHA` and `SCRIPT`, and function libraries for
//! `FUNCTION` and `FCALL` ([`functions`]). A script may declare
//! [`flags`] in a shebang line (`#!lua flags=no-writes`).
//!
//! One Lua state serves every script, as in Redis. It is made on first use
//! and set up by `sandbox.lua`: only Redis's globals stay, new globals are
//! refused, and `redis.call`/`redis.pcall` ([`api`]) run commands through
//! the [`Host`] (the engine, see `commands::scripting`). Lua's memory is
//! limited ([`Scripts::set_memory_limit`]): a script that allocates without
//! bound fails with an error, and the server goes on. Values convert as
//! [`convert`] says.

mod api;
mod bit;
mod cjson;
pub mod cjson_settings;
mod cmsgpack;
pub mod convert;
pub mod flags;
pub mod functions;
mod lua_struct;
pub mod payload;
pub mod random;
mod sandbox;
pub mod sha1;

use alloc::collections::{btree_map, BTreeMap};
use alloc::string::String;
use alloc::vec::Vec;

use faultline_lua::state::{Outcome, Slot};
use faultline_lua::State;

use crate::resp::Reply;

/// What a script's `redis.call` reaches.
pub trait Host {
    /// Runs one command for the running script and returns its reply (an
    /// error reply for a command scripts may not run).
    fn command(&mut self, args: &mut [Vec<u8>]) -> Reply;

    /// Where the arguments of `redis.call` are read, kept between calls so
    /// that reading them does not allocate each time (empty at first).
    fn call_args(&mut self) -> &mut Vec<Vec<u8>>;

    /// `redis.acl_check_cmd(...)`: whether the script's user may run
    /// `args`; `None` if they name no command.
    fn acl_check(&mut self, args: &[Vec<u8>]) -> Option<bool>;

    /// Whether the running script chose RESP3 (`redis.setresp(3)`).
    fn resp3(&self) -> bool;

    /// `redis.setresp`: the protocol replies reach the script in.
    fn set_resp3(&mut self, on: bool);

    /// Called every [`crate::busy::TICK_EVERY`] Lua instructions while a
    /// script (or a library's code) runs: `Some(message)` stops it with
    /// that error (killed, timed out).
    fn tick(&mut self) -> Option<Vec<u8>>;

    /// The server's generator for `math.random` (see [`random`]).
    fn lua_random(&mut self) -> &mut random::Rand48;

    /// The settings of scripts' `cjson` library.
    fn cjson_settings(&mut self) -> &mut cjson_settings::CjsonSettings;

    /// The error the finished script answers is one a command it ran
    /// answered, which `INFO errorstats` counted then: not to be counted
    /// again.
    fn error_counted(&mut self);
}

/// The bytes Lua may hold when nothing else says: beyond this a script gets
/// an out-of-memory error.
pub const DEFAULT_MEMORY_LIMIT: usize = 64 << 20;

/// How many scripts run between two steps of Lua's collector.
const RUNS_PER_STEP: u32 = 50;

/// How much work each step does, in Lua's unit (kilobytes of allocation):
/// enough to keep the garbage of many small scripts far below what Redis's
/// suite allows (100 KiB), little enough to cost only what they throw away
/// (a step of 50, as Redis takes, ran a whole cycle each time).
const STEP_KIB: u16 = 4;

/// The registry key of scripts' error handler (`__redis__err__handler`).
const ERROR_HANDLER: &[u8] = b"faultline.error_handler";

/// The scripts the server knows (by SHA-1) and the Lua state that runs them.
pub struct Scripts<H> {
    /// Made on first use; taken out while a script runs (see [`Scripts::run`]).
    state: Option<State<H>>,
    /// How many states were made: a script compiled in an older one must
    /// be compiled again.
    generation: u64,
    /// Each script, by its SHA-1.
    scripts: BTreeMap<Sha, Script>,
    memory_limit: usize,
    /// Scripts run since the collector last stepped (see
    /// [`Scripts::restore`]).
    runs_since_step: u32,
    /// The current state's error handler, by slot.
    handler: Option<Slot>,
}

/// A script's SHA-1 in lowercase hexadecimal, as scripts are named.
type Sha = [u8; 40];

/// A script the server knows.
struct Script {
    body: Vec<u8>,
    /// What its shebang declares.
    flags: flags::Flags,
    /// Where its Lua code starts (after the shebang line).
    code_at: usize,
    /// The [`Scripts::generation`] of the state it was compiled in.
    compiled_in: u64,
    /// Where that state keeps the compiled function (`None` if it could
    /// not be kept: the script is refused as out of memory).
    slot: Option<Slot>,
}

impl<H> core::fmt::Debug for Scripts<H> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Scripts")
            .field("scripts", &self.scripts.len())
            .field("lua_memory", &self.lua_memory())
            .finish()
    }
}

impl<H> Default for Scripts<H> {
    fn default() -> Self {
        Scripts {
            state: None,
            generation: 0,
            scripts: BTreeMap::new(),
            memory_limit: DEFAULT_MEMORY_LIMIT,
            runs_since_step: 0,
            handler: None,
        }
    }
}

/// Why a script could not be run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refused {
    /// `EVALSHA` of a script the server does not know.
    NoScript,
    /// The body does not compile: Lua's message.
    Compile(String),
    /// No memory for a Lua state.
    NoMemory,
    /// The shebang line is wrong: Redis's message.
    Shebang(String),
}

impl Refused {
    /// The error reply Redis gives.
    pub fn reply(&self) -> Reply {
        match self {
            Refused::NoScript => Reply::error("NOSCRIPT No matching script. Please use EVAL."),
            Refused::Compile(msg) => Reply::error(alloc::format!(
                "ERR Error compiling script (new function): {msg}"
            )),
            Refused::NoMemory => {
                Reply::error("OOM command not allowed when used memory > 'maxmemory'.")
            }
            Refused::Shebang(msg) => Reply::Error(alloc::format!("ERR {msg}")),
        }
    }
}

impl<H> Scripts<H> {
    /// Bytes the Lua state holds (0 before the first script).
    pub fn lua_memory(&self) -> usize {
        self.state.as_ref().map_or(0, State::used)
    }
}

impl<H: Host> Scripts<H> {
    /// Sets the bytes Lua may hold while a script runs.
    pub fn set_memory_limit(&mut self, limit: usize) {
        self.memory_limit = limit;
        if let Some(state) = &mut self.state {
            state.set_limit(limit);
        }
    }

    /// How many scripts are known.
    pub fn len(&self) -> usize {
        self.scripts.len()
    }

    /// Whether no script is known.
    pub fn is_empty(&self) -> bool {
        self.scripts.is_empty()
    }

    /// Whether the script named `sha` (any case) is known.
    pub fn exists(&self, sha: &[u8]) -> bool {
        sha_of(sha).is_some_and(|sha| self.scripts.contains_key(&sha))
    }

    /// Forgets every script (`SCRIPT FLUSH`), and the Lua state with them.
    pub fn flush(&mut self) {
        self.scripts.clear();
        self.state = None;
    }

    /// Compiles `body` and keeps it (`SCRIPT LOAD`, and `EVAL` first);
    /// returns its SHA-1.
    pub fn load(&mut self, body: &[u8]) -> Result<String, Refused> {
        let sha = sha1::sha1_hex(body);
        let key = sha_of(sha.as_bytes()).ok_or(Refused::NoScript)?;
        if let btree_map::Entry::Vacant(entry) = self.scripts.entry(key) {
            let (flags, code_at) = flags::eval_shebang(body).map_err(Refused::Shebang)?;
            entry.insert(Script {
                body: body.to_vec(),
                flags,
                code_at,
                compiled_in: 0,
                slot: None,
            });
        }
        self.compiled(&key)?;
        Ok(sha)
    }

    /// The script named `sha`, compiled in the current state (made now if
    /// there is none). A new script that does not compile is forgotten.
    fn compiled(&mut self, sha: &Sha) -> Result<&Script, Refused> {
        if self.state.is_none() {
            let mut state =
                sandbox::new_state(self.memory_limit, false).ok_or(Refused::NoMemory)?;
            self.handler = state.slot_of(ERROR_HANDLER);
            self.state = Some(state);
            self.generation += 1;
        }
        let state = self.state.as_mut().ok_or(Refused::NoMemory)?;
        let script = self.scripts.get_mut(sha).ok_or(Refused::NoScript)?;
        if script.compiled_in != self.generation {
            let code = &script.body[script.code_at..];
            let key = function_key(sha);
            match state.load(&key, b"@user_script", code) {
                Ok(()) => {
                    script.compiled_in = self.generation;
                    script.slot = state.slot_of(&key);
                }
                Err(msg) => {
                    if script.compiled_in == 0 {
                        self.scripts.remove(sha);
                    }
                    let msg = String::from_utf8_lossy(&msg).into_owned();
                    return Err(Refused::Compile(msg));
                }
            }
        }
        self.scripts.get(sha).ok_or(Refused::NoScript)
    }

    /// Takes the state out to run the script named `sha` with `keys` and
    /// `argv`: `host` cannot hold the scripts while they run. Give the
    /// result to [`Scripts::run`].
    pub fn prepare(
        &mut self,
        sha: &[u8],
        keys: &[Vec<u8>],
        argv: &[Vec<u8>],
    ) -> Result<Prepared<H>, Refused> {
        let sha = sha_of(sha).ok_or(Refused::NoScript)?;
        let script = self.compiled(&sha)?;
        let (flags, slot) = (script.flags, script.slot.ok_or(Refused::NoMemory)?);
        let handler = self.handler;
        let state = self.state.as_mut().ok_or(Refused::NoMemory)?;
        state
            .set_global_strings(b"KEYS", keys)
            .map_err(|_| Refused::NoMemory)?;
        state
            .set_global_strings(b"ARGV", argv)
            .map_err(|_| Refused::NoMemory)?;
        let state = self.state.take().ok_or(Refused::NoMemory)?;
        Ok(Prepared {
            state,
            sha,
            slot,
            handler,
            flags,
        })
    }

    /// The flags the script named `sha` declares in its shebang.
    pub fn flags(&self, sha: &[u8]) -> Option<flags::Flags> {
        Some(self.scripts.get(&sha_of(sha)?)?.flags)
    }

    /// Gives back the state [`Scripts::prepare`] took out. Every
    /// [`RUNS_PER_STEP`] scripts the collector takes a step, so the garbage
    /// of many small scripts stays small (`used_memory_lua` reports it).
    pub fn restore(&mut self, mut prepared: Prepared<H>) {
        self.runs_since_step += 1;
        if self.runs_since_step >= RUNS_PER_STEP {
            self.runs_since_step = 0;
            prepared.state.collect_step(STEP_KIB);
        }
        if self.state.is_none() {
            self.state = Some(prepared.state);
        }
    }
}

/// A script ready to run, holding the Lua state.
pub struct Prepared<H> {
    state: State<H>,
    sha: Sha,
    /// Where the state keeps the script's function, and the error handler.
    slot: Slot,
    handler: Option<Slot>,
    /// The flags its shebang declares.
    pub flags: flags::Flags,
}

impl<H: Host> Prepared<H> {
    /// Runs the script with `host` and returns the reply Redis would give.
    pub fn run(&mut self, host: &mut H) -> Reply {
        let sha = core::str::from_utf8(&self.sha).unwrap_or_default();
        let (reply, outcome) =
            self.state
                .call_slot(self.slot, self.handler, host, |s, outcome, host| {
                    (finished_reply(s, outcome, host, sha), outcome)
                });
        if outcome == Outcome::OutOfMemory {
            // Lua 5.1 collects no garbage when an allocation fails: what
            // the failed script left would fail the next ones.
            self.state.collect();
        }
        reply
    }
}

/// The field of an error table that says a command's error reply, counted
/// when the command answered it, is in it.
const COUNTED: &[u8] = b"ignore_error_stats_update";

/// The reply of a finished script or function (`name`), from what its call
/// left on top of the stack: its value, or its error.
pub(crate) fn finished_reply<H: Host>(
    s: &mut faultline_lua::state::Stack<'_>,
    outcome: Outcome,
    host: &mut H,
    name: &str,
) -> Reply {
    let counted = outcome != Outcome::OutOfMemory
        && s.kind(-1) == faultline_lua::state::Kind::Table
        && s.get_field(-1, COUNTED).is_ok()
        && {
            let marked = s.truthy(-1);
            s.pop(1);
            marked
        };
    let reply = match outcome {
        Outcome::Returned => convert::to_reply(s, -1, host.resp3()),
        Outcome::Raised => error_reply(s, name),
        Outcome::OutOfMemory => Reply::error(alloc::format!(
            "ERR Error running script {name}, not enough memory for Lua"
        )),
    };
    if counted && reply.is_error() {
        host.error_counted();
    }
    reply
}

/// The reply for the error on top of the stack, as the error handler made
/// it: `{err = text, source = ..., line = ...}`.
pub(crate) fn error_reply(s: &mut faultline_lua::state::Stack<'_>, sha: &str) -> Reply {
    use faultline_lua::state::Kind;
    let field = |s: &mut faultline_lua::state::Stack<'_>, name: &[u8]| {
        let kind = s.get_field(-1, name).ok();
        let value = matches!(kind, Some(Kind::String | Kind::Number))
            .then(|| s.bytes(-1))
            .flatten();
        if kind.is_some() {
            s.pop(1);
        }
        value
    };
    if s.kind(-1) != Kind::Table {
        let text = s.bytes(-1).unwrap_or_else(|| b"execution failure".to_vec());
        return Reply::error(alloc::format!(
            "ERR Error running script {sha}, {}",
            convert::one_line(&text)
        ));
    }
    let text = field(s, b"err").unwrap_or_default();
    let mut msg = convert::one_line(&text);
    if let (Some(source), Some(line)) = (field(s, b"source"), field(s, b"line")) {
        msg = alloc::format!(
            "{msg} script: {sha}, on {}:{}.",
            convert::one_line(&source),
            convert::one_line(&line)
        );
    }
    Reply::Error(msg)
}

/// The registry key of the compiled script `sha`: `f_` and the SHA-1.
fn function_key(sha: &Sha) -> [u8; 42] {
    let mut key = [0; 42];
    key[..2].copy_from_slice(b"f_");
    key[2..].copy_from_slice(sha);
    key
}

/// `sha` (any case) as scripts are named; `None` if it cannot name one.
fn sha_of(sha: &[u8]) -> Option<Sha> {
    let mut lowered: Sha = sha.try_into().ok()?;
    lowered.make_ascii_lowercase();
    Some(lowered)
}

#[cfg(test)]
mod function_tests;
#[cfg(test)]
mod library_tests;
#[cfg(test)]
mod tests;
