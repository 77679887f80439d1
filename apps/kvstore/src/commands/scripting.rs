//! The engine's side of scripts (see `kvstore::scripting`): `EVAL`,
//! `EVALSHA`, `EVAL_RO`, `EVALSHA_RO` and `SCRIPT LOAD|EXISTS|FLUSH|KILL`,
//! and the commands a script (or a function, see `commands::functions`)
//! runs with `redis.call`. A script's shebang flags
//! (`#!lua flags=no-writes,allow-oom`) are checked as Redis 7.0 checks
//! them ([`Engine::run_script`]).
//!
//! A script's commands run as a client of their own that starts in the
//! caller's database (a `SELECT` in the script stays in the script). What
//! they change is logged as they change it, in order, as Redis 7.0
//! replicates scripts' effects: replaying the log never runs the script.

use alloc::vec::Vec;

use super::transaction::check;
use super::{table, ClientCtx, Effects, Engine, Outcome};
use crate::busy::{BusyScript, LOAD_TIMEOUT_MS};
use crate::resp::Reply;
use crate::scripting::flags::Flags;
use crate::scripting::Host;

/// The script being run: the client its commands run as, and what they
/// changed so far.
#[derive(Debug)]
pub(super) struct ScriptRun {
    client: ClientCtx,
    now: u64,
    /// `EVAL_RO`/`EVALSHA_RO`: write commands are refused.
    read_only: bool,
    /// What the commands changed, to log.
    effects: Effects,
    /// Replies reach the script in RESP3 (`redis.setresp(3)`).
    resp3: bool,
    /// When it started, on the engine's microsecond clock.
    started_us: u64,
    /// The function's name; `None` for an `EVAL` script.
    function: Option<alloc::string::String>,
    /// The command that runs it.
    command: Vec<Vec<u8>>,
    /// It ran past `busy-reply-threshold` (and was reported).
    busy: bool,
    /// `SCRIPT KILL`/`FUNCTION KILL`/`SHUTDOWN NOSAVE` stopped it.
    killed: bool,
}

/// The message of a write refused to a script for a log that cannot be
/// written.
const MISCONF_SCRIPT: &str = "MISCONF Redis is configured to persist data to AOF, but it's currently unable to persist to disk. Writable scripts are blocked. Use 'no-writes' flag for read only scripts. AOF error: ";

/// `SCRIPT HELP` (kvstore has no `SCRIPT DEBUG`: the Lua debugger).
pub(crate) fn help(_x: &mut super::exec::Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    Reply::help(&[
        "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "EXISTS <sha1> [<sha1> ...]",
        "    Return information about the existence of the scripts in the script cache.",
        "FLUSH [ASYNC|SYNC]",
        "    Flush the Lua scripts cache. Very dangerous on replicas.",
        "    When called without the optional mode argument, the behavior is determined by the",
        "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
        "    * ASYNC: Asynchronously flush the scripts cache.",
        "    * SYNC: Synchronously flush the scripts cache.",
        "KILL",
        "    Kill the currently executing Lua script.",
        "LOAD <script>",
        "    Load a script into the scripts cache without executing it.",
        "HELP",
        "    Prints this help.",
    ])
}

/// Whether a script may not run the command `name` (besides blocking ones
/// and those refused inside `MULTI`), by its top-level name or as
/// `command|subcommand`.
fn refused_in_scripts(name: &str) -> bool {
    matches!(
        name,
        "acl"
            | "auth"
            | "client"
            | "cluster|reset"
            | "discard"
            | "eval"
            | "eval_ro"
            | "evalsha"
            | "evalsha_ro"
            | "exec"
            | "fcall"
            | "fcall_ro"
            | "function"
            | "hello"
            | "monitor"
            | "multi"
            | "psubscribe"
            | "punsubscribe"
            | "quit"
            | "reset"
            | "script"
            | "shutdown"
            | "ssubscribe"
            | "subscribe"
            | "sunsubscribe"
            | "unsubscribe"
            | "unwatch"
            | "watch"
    )
}

/// The bytes Lua may use at least, however close `maxmemory` is.
const LEAST_LUA_MEMORY: usize = 1 << 20;

impl Engine {
    /// Runs `args` if `spec` is a script command; `None` otherwise.
    pub(super) fn script_command(
        &mut self,
        spec: &table::Spec,
        args: &[Vec<u8>],
        client: &mut ClientCtx,
        now: u64,
        loading: bool,
    ) -> Option<Outcome> {
        // Every command runs past here: the names below are compared only
        // for the scripting commands.
        if spec.acl & super::categories::SCRIPTING == 0 {
            return None;
        }
        let reply = Outcome::unchanged;
        Some(match spec.name {
            "eval" => self.eval(args, client, now, false, false),
            "evalsha" => self.eval(args, client, now, true, false),
            "eval_ro" => self.eval(args, client, now, false, true),
            "evalsha_ro" => self.eval(args, client, now, true, true),
            "script|load" => reply(match self.scripts.load(&args[2]) {
                Ok(sha) => Reply::bulk(sha),
                Err(refused) => refused.reply(),
            }),
            "script|exists" => reply(Reply::array(
                args[2..]
                    .iter()
                    .map(|sha| Reply::Integer(i64::from(self.scripts.exists(sha))))
                    .collect(),
            )),
            "script|flush" => reply(match args.get(2) {
                Some(mode)
                    if !mode.eq_ignore_ascii_case(b"sync")
                        && !mode.eq_ignore_ascii_case(b"async") =>
                {
                    Reply::error("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
                }
                _ => {
                    self.scripts.flush();
                    Reply::ok()
                }
            }),
            // Scripts run to their end before another command is read.
            "script|kill" => reply(Reply::error("NOTBUSY No scripts in execution right now.")),
            _ => return self.function_command(spec, args, client, now, loading),
        })
    }

    /// `EVAL script numkeys key... arg...` (`by_sha`: `EVALSHA sha1 ...`).
    fn eval(
        &mut self,
        args: &[Vec<u8>],
        client: &ClientCtx,
        now: u64,
        by_sha: bool,
        read_only: bool,
    ) -> Outcome {
        let refuse = Outcome::unchanged;
        let Some(numkeys) = crate::num::parse_i64(&args[2]) else {
            return refuse(Reply::error("ERR value is not an integer or out of range"));
        };
        if numkeys < 0 {
            return refuse(Reply::error("ERR Number of keys can't be negative"));
        }
        let rest = &args[3..];
        let Some(keys) = usize::try_from(numkeys).ok().and_then(|n| rest.get(..n)) else {
            return refuse(Reply::error(
                "ERR Number of keys can't be greater than number of args",
            ));
        };
        let argv = &rest[keys.len()..];
        let loaded;
        let sha = match by_sha {
            true => &args[1],
            false => match self.scripts.load(&args[1]) {
                Ok(sha) => {
                    loaded = sha;
                    loaded.as_bytes()
                }
                Err(refused) => return refuse(refused.reply()),
            },
        };
        self.scripts.set_memory_limit(self.lua_memory_limit());
        let flags = match self.scripts.flags(sha) {
            Some(flags) => flags,
            None => return refuse(crate::scripting::Refused::NoScript.reply()),
        };
        if let Some(refusal) = self.script_refusal(flags, read_only) {
            return refuse(refusal);
        }
        let mut prepared = match self.scripts.prepare(sha, keys, argv) {
            Ok(prepared) => prepared,
            Err(refused) => return refuse(refused.reply()),
        };
        let outcome = self.run_script(client, now, flags, read_only, (None, args), |engine| {
            prepared.run(engine)
        });
        self.scripts.restore(prepared);
        outcome
    }

    /// The bytes Lua may hold now: what `maxmemory` leaves, within bounds.
    pub(super) fn lua_memory_limit(&self) -> usize {
        match self.config.maxmemory {
            0 => crate::scripting::DEFAULT_MEMORY_LIMIT,
            max => (max.saturating_sub(self.data_memory() as u64) as usize)
                .clamp(LEAST_LUA_MEMORY, crate::scripting::DEFAULT_MEMORY_LIMIT),
        }
    }

    /// Why a script with `flags` may not start (as `FCALL_RO`/`EVAL_RO` if
    /// `read_only`), as Redis 7.0 checks before running one; a script
    /// without a shebang is not checked.
    pub(super) fn script_refusal(&self, flags: Flags, read_only: bool) -> Option<Reply> {
        if flags.has(Flags::COMPAT) {
            return None;
        }
        if flags.writes() {
            if let Some(reason) = &self.stats.aof_write_error {
                return Some(Reply::Error(alloc::format!("{MISCONF_SCRIPT}{reason}")));
            }
            if read_only {
                return Some(Reply::error(
                    "ERR Can not execute a script with write flag using *_ro command.",
                ));
            }
            if self.config.lacks_replicas() {
                return Some(super::errors::noreplicas());
            }
        }
        let max = self.config.maxmemory;
        let may_oom = flags.has(Flags::ALLOW_OOM) || flags.has(Flags::NO_WRITES);
        if max > 0 && self.used_memory() as u64 > max && !may_oom {
            return Some(Reply::error(
                "OOM allow-oom flag is not set on the script, can not run it when used memory > 'maxmemory'",
            ));
        }
        None
    }

    /// Runs a script or function (`run`, with the engine as its host) for
    /// `client`: its commands run as a client of their own, none blocks,
    /// writes are refused if `read_only` or its `flags` say `no-writes`,
    /// and `allow-oom` lets them past `maxmemory`.
    pub(super) fn run_script(
        &mut self,
        client: &ClientCtx,
        now: u64,
        flags: Flags,
        read_only: bool,
        (function, command): (Option<alloc::string::String>, &[Vec<u8>]),
        run: impl FnOnce(&mut Engine) -> Reply,
    ) -> Outcome {
        let mut user = core::mem::take(&mut self.script_user);
        user.clone_from(&client.user);
        let mut script_client = ClientCtx::with_user(client.id(), user);
        script_client.db = client.db;
        script_client.authenticated = true;
        script_client.in_script = true;
        let declared = !flags.has(Flags::COMPAT);
        self.script_run = Some(ScriptRun {
            client: script_client,
            now,
            read_only: read_only || !flags.writes(),
            effects: Effects::default(),
            resp3: false,
            started_us: (self.clock_us)(),
            // Only a function's command is shown (`FUNCTION STATS`).
            command: match function {
                Some(_) => command.to_vec(),
                None => Vec::new(),
            },
            function,
            busy: false,
            killed: false,
        });
        let allow_oom = core::mem::replace(
            &mut self.script_allows_oom,
            declared && flags.has(Flags::ALLOW_OOM),
        );
        // Nothing a script runs may block (as inside EXEC).
        let in_exec = core::mem::replace(&mut self.in_exec, true);
        let script_read = core::mem::replace(&mut self.script_read, false);
        let reply = run(self);
        if core::mem::replace(&mut self.script_read, script_read) {
            // As Redis: a script that read tracks its declared keys.
            let keys = declared_keys(command);
            self.tracking.remember(client.id(), keys);
        }
        self.in_exec = in_exec;
        self.script_allows_oom = allow_oom;
        let effects = match self.script_run.take() {
            Some(run) => {
                self.script_user = run.client.user;
                run.effects
            }
            None => Effects::default(),
        };
        Outcome { reply, effects }
    }

    /// Runs one command of the running script, as `run`.
    fn script_call(&mut self, args: &mut [Vec<u8>], run: &mut ScriptRun) -> Reply {
        let spec = match check(args) {
            Ok(spec) => spec,
            Err(_) if args.first().and_then(|name| table::lookup(name)).is_none() => {
                return Reply::error("ERR Unknown Redis command called from script");
            }
            Err(_) => {
                return Reply::error("ERR Wrong number of args calling Redis command from script")
            }
        };
        let top = spec.name.split('|').next().unwrap_or(spec.name);
        let streams = matches!(top, "xread" | "xreadgroup");
        if streams && blocks(args) {
            return Reply::error(alloc::format!(
                "ERR {top} command is not allowed with BLOCK option from scripts"
            ));
        }
        let blocking = spec.flags & table::BLOCKING != 0 && !streams;
        if blocking
            || spec.flags & table::NO_MULTI != 0
            || refused_in_scripts(top)
            || refused_in_scripts(spec.name)
        {
            self.count_rejected(args);
            return Reply::error("ERR This Redis command is not allowed from script");
        }
        if run.read_only && spec.flags & table::WRITE != 0 {
            self.count_rejected(args);
            return Reply::error("ERR Write commands are not allowed from read-only scripts.");
        }
        let outcome = self.run_checked(spec, args, &mut run.client, run.now, false);
        run.effects.append(outcome.effects);
        outcome.reply
    }
}

impl Host for Engine {
    fn lua_random(&mut self) -> &mut crate::scripting::random::Rand48 {
        &mut self.lua_random
    }

    fn cjson_settings(&mut self) -> &mut crate::scripting::cjson_settings::CjsonSettings {
        &mut self.cjson_settings
    }

    fn error_counted(&mut self) {
        self.reply_error_counted = true;
    }

    fn command(&mut self, args: &mut [Vec<u8>]) -> Reply {
        let Some(mut run) = self.script_run.take() else {
            return Reply::error("ERR no script is running");
        };
        let reply = self.script_call(args, &mut run);
        self.script_run = Some(run);
        if let Reply::Error(text) = &reply {
            self.stats.count_error(text);
        }
        reply
    }

    fn call_args(&mut self) -> &mut Vec<Vec<u8>> {
        &mut self.script_call_args
    }

    fn resp3(&self) -> bool {
        self.script_run.as_ref().is_some_and(|run| run.resp3)
    }

    fn acl_check(&mut self, args: &[Vec<u8>]) -> Option<bool> {
        let user = self.script_run.as_ref()?.client.user.clone();
        self.acl_allows(&user, args)
    }

    fn set_resp3(&mut self, on: bool) {
        if let Some(run) = &mut self.script_run {
            run.resp3 = on;
        }
    }

    /// A library's code past [`LOAD_TIMEOUT_MS`] is stopped; a script past
    /// `busy-reply-threshold` lets the server answer the others (see
    /// `kvstore::busy`), and is stopped if they kill it.
    fn tick(&mut self) -> Option<Vec<u8>> {
        let now = (self.clock_us)();
        if let Some(started) = self.library_load_started {
            let late = now.saturating_sub(started) > LOAD_TIMEOUT_MS * 1000;
            return late.then(|| b"FUNCTION LOAD timeout".to_vec());
        }
        let threshold = self.config.busy_reply_threshold;
        let run = self.script_run.as_mut()?;
        let elapsed_ms = now.saturating_sub(run.started_us) / 1000;
        if !run.killed && elapsed_ms >= threshold {
            if !run.busy {
                run.busy = true;
                log::warn!(
                    "Slow script detected: still in execution after {elapsed_ms} milliseconds. You can try killing the script using the {} KILL command.",
                    if run.function.is_some() { "FUNCTION" } else { "SCRIPT" }
                );
            }
            let mut script = BusyScript {
                function: run.function.clone(),
                command: run.command.clone(),
                elapsed_ms,
                wrote: !run.effects.is_empty(),
                kill: false,
                shutdown: false,
            };
            if let Some(mut poll) = self.busy_poll.0.take() {
                poll.poll(&mut script);
                self.busy_poll.0 = Some(poll);
            }
            let run = self.script_run.as_mut()?;
            run.killed = script.kill || script.shutdown;
            if script.shutdown {
                // Stopped half way: what it did is not logged, and the
                // server goes down (see `kvstore::busy`).
                run.effects = Effects::default();
                self.stats.shutdown_asked = Some(true);
            }
        }
        let run = self.script_run.as_ref()?;
        run.killed.then(|| match run.function {
            Some(_) => b"Script killed by user with FUNCTION KILL...".to_vec(),
            None => b"Script killed by user with SCRIPT KILL...".to_vec(),
        })
    }
}

/// Whether an `XREAD`/`XREADGROUP` has a `BLOCK` option (among the options
/// before `STREAMS`).
fn blocks(args: &[Vec<u8>]) -> bool {
    args[1..]
        .iter()
        .take_while(|a| !a.eq_ignore_ascii_case(b"streams"))
        .any(|a| a.eq_ignore_ascii_case(b"block"))
}

/// The keys a script or function call declares: `EVAL script numkeys
/// key ...` (and `EVALSHA`, `FCALL`, their `_RO` forms).
fn declared_keys(command: &[Vec<u8>]) -> impl Iterator<Item = &[u8]> {
    let count = command
        .get(2)
        .and_then(|n| crate::num::parse_i64(n))
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(0);
    command.iter().skip(3).take(count).map(Vec::as_slice)
}
