//! Busy scripts: what the server answers other clients while a script
//! runs past `busy-reply-threshold` (alias `lua-time-limit`), as Redis
//! 7.0 answers them.
//!
//! The server is one loop, and a script runs inside it (in the engine,
//! inside the command that started it), so nothing else is served while
//! it runs, unless the script lets it. Lua calls the engine back every
//! [`TICK_EVERY`] instructions (a count hook, `faultline_lua::State::
//! set_tick`). Once the script has run past the threshold, each tick hands
//! a [`BusyScript`] to the [`BusyPoll`] the server installed
//! (`Engine::set_busy_poll`): the server then polls the network, reads
//! what the *other* connections sent (the one running the script is out
//! of its table while its command runs) and answers each request with
//! [`answer`], sends the replies, and returns to the script:
//!
//! ```text
//!  server loop ─► session.run ─► engine: EVAL/FCALL ─► Lua ─┐ every TICK_EVERY
//!                                                           ▼ instructions
//!             engine tick: past the threshold? ─► BusyPoll::poll(&mut BusyScript)
//!                                    (server: read the others, answer()
//!                                     -BUSY / SCRIPT KILL / FUNCTION KILL /
//!                                     FUNCTION STATS / SHUTDOWN NOSAVE, send)
//!             kill asked? ─► the tick raises the "killed" error, the script ends
//! ```
//!
//! A script that has written cannot be killed (`-UNKILLABLE`): its effects
//! are half done. `SHUTDOWN NOSAVE` stops it anyway and shuts the server
//! down without logging what it did.

use alloc::string::String;
use alloc::vec::Vec;

use crate::commands::ClientCtx;
use crate::commands::Multi;
use crate::resp::Reply;

/// Lua instructions between two calls back into the engine (Redis's
/// count hook runs every 100000).
pub const TICK_EVERY: u32 = 100_000;

/// Longest a library's code may run when `FUNCTION LOAD` runs it (it
/// should only register functions), in milliseconds, as in Redis.
pub const LOAD_TIMEOUT_MS: u64 = 500;

/// What the server installs for the engine to call while a script is
/// busy: it serves the other clients with [`answer`] and returns.
pub trait BusyPoll {
    /// Reads what other clients sent and answers it (see [`answer`]).
    fn poll(&mut self, script: &mut BusyScript);
}

/// The script running past the threshold, as the answers need it, and
/// what they asked of it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BusyScript {
    /// The function's name, or `None` for an `EVAL` script.
    pub function: Option<String>,
    /// The command that runs it (for `FUNCTION STATS`).
    pub command: Vec<Vec<u8>>,
    /// How long it has run.
    pub elapsed_ms: u64,
    /// Whether it has written (it cannot be killed then).
    pub wrote: bool,
    /// `SCRIPT KILL`/`FUNCTION KILL` asked to stop it.
    pub kill: bool,
    /// `SHUTDOWN NOSAVE` asked to stop it and the server.
    pub shutdown: bool,
}

/// `-BUSY` for an `EVAL` script.
const BUSY_EVAL: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
/// `-BUSY` for a function.
const BUSY_FUNCTION: &str =
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";

/// The reply to request `args` from `client`, another client than the
/// script's, while `script` is busy. As in Redis 7.0, `MULTI`, `DISCARD`
/// and `QUIT` work on the client's own state; a refused command marks its
/// transaction failed and an `EXEC` is refused with the transaction
/// (`EXECABORT`); inside a transaction the commands allowed while busy are
/// queued. The rest is [`answer`]'s. (`WATCH`, `UNWATCH`, `RESET`, `AUTH`
/// and `HELLO`, which Redis also runs while busy, need the engine, which
/// the script holds: they are answered `-BUSY`.)
pub fn answer_client(script: &mut BusyScript, client: &mut ClientCtx, args: &[Vec<u8>]) -> Reply {
    let name = args
        .first()
        .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
        .unwrap_or_default();
    match (name.as_str(), args.len()) {
        ("multi", 1) if client.multi.is_some() => Reply::error("ERR MULTI calls can not be nested"),
        ("multi", 1) => {
            client.multi = Some(Multi::default());
            Reply::ok()
        }
        ("discard", 1) => match client.multi.take() {
            Some(_) => {
                client.watched.clear();
                Reply::ok()
            }
            None => Reply::error("ERR DISCARD without MULTI"),
        },
        ("quit", _) => {
            client.multi = None;
            client.quit = true;
            Reply::ok()
        }
        ("exec", 1) if client.multi.is_some() => {
            client.multi = None;
            client.watched.clear();
            let Reply::Error(why) = answer(script, args) else {
                return Reply::error("ERR EXEC while busy");
            };
            Reply::Error(alloc::format!(
                "EXECABORT Transaction discarded because of: {why}"
            ))
        }
        _ => {
            let allowed = matches!(
                (name.as_str(), args.len()),
                ("script" | "function" | "shutdown", 2)
            );
            if let (Some(multi), true) = (client.multi.as_mut(), allowed) {
                multi.queued.push(args.to_vec());
                return Reply::Simple("QUEUED".into());
            }
            let reply = answer(script, args);
            if let (Some(multi), true) = (client.multi.as_mut(), reply.is_error()) {
                multi.failed = true;
            }
            reply
        }
    }
}

/// The reply to a request `args` from another client while `script` is
/// busy; `SCRIPT KILL`, `FUNCTION KILL` and `SHUTDOWN NOSAVE` set what
/// they ask in `script`.
pub fn answer(script: &mut BusyScript, args: &[Vec<u8>]) -> Reply {
    let word = |i: usize| {
        args.get(i)
            .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
            .unwrap_or_default()
    };
    let busy = || match script.function {
        Some(_) => Reply::error(BUSY_FUNCTION),
        None => Reply::error(BUSY_EVAL),
    };
    match (word(0).as_str(), word(1).as_str(), args.len()) {
        ("script", "kill", 2) | ("function", "kill", 2) => {
            let by_script = word(0) == "script";
            if script.wrote {
                return Reply::error(
                    "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.",
                );
            }
            if by_script == script.function.is_some() {
                // SCRIPT KILL does not stop a function, nor FUNCTION KILL
                // a script.
                return busy();
            }
            script.kill = true;
            Reply::ok()
        }
        ("function", "stats", 2) => match &script.function {
            None => busy(),
            Some(name) => {
                let bulk = |s: &str| Reply::bulk(s.as_bytes());
                Reply::Map(alloc::vec![
                    bulk("running_script"),
                    Reply::Map(alloc::vec![
                        bulk("name"),
                        bulk(name),
                        bulk("command"),
                        Reply::array(
                            script
                                .command
                                .iter()
                                .map(|a| Reply::bulk(a.as_slice()))
                                .collect()
                        ),
                        bulk("duration_ms"),
                        Reply::Integer(script.elapsed_ms as i64),
                    ]),
                    bulk("engines"),
                    Reply::Map(alloc::vec![bulk("LUA"), Reply::Map(Vec::new())]),
                ])
            }
        },
        ("shutdown", "nosave", 2) => {
            script.shutdown = true;
            Reply::ok()
        }
        _ => busy(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<Vec<u8>> {
        line.split(' ').map(|w| w.as_bytes().to_vec()).collect()
    }

    fn error_of(reply: Reply) -> String {
        match reply {
            Reply::Error(e) => e,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn others_are_told_busy_and_may_kill_a_script_that_has_not_written() {
        let mut eval = BusyScript::default();
        assert!(error_of(answer(&mut eval, &words("PING"))).starts_with("BUSY"));
        assert_eq!(
            error_of(answer(&mut eval, &words("FUNCTION KILL"))),
            BUSY_EVAL
        );
        assert_eq!(
            error_of(answer(&mut eval, &words("FUNCTION STATS"))),
            BUSY_EVAL
        );
        assert!(!eval.kill);
        assert_eq!(answer(&mut eval, &words("script kill")), Reply::ok());
        assert!(eval.kill);

        let mut function = BusyScript {
            function: Some("f".into()),
            command: words("FCALL f 0"),
            ..BusyScript::default()
        };
        assert_eq!(
            error_of(answer(&mut function, &words("SCRIPT KILL"))),
            BUSY_FUNCTION
        );
        assert!(
            matches!(answer(&mut function, &words("FUNCTION STATS")), Reply::Map(m) if m.len() == 4)
        );
        assert_eq!(answer(&mut function, &words("FUNCTION KILL")), Reply::ok());
        assert!(function.kill);
    }

    #[test]
    fn a_transaction_meeting_a_busy_script_is_aborted() {
        let mut script = BusyScript::default();
        let mut client = ClientCtx::new(7);
        assert_eq!(
            answer_client(&mut script, &mut client, &words("MULTI")),
            Reply::ok()
        );
        assert!(
            error_of(answer_client(&mut script, &mut client, &words("INCR x"))).starts_with("BUSY")
        );
        assert_eq!(
            answer_client(&mut script, &mut client, &words("SCRIPT KILL")),
            Reply::Simple("QUEUED".into())
        );
        assert!(!script.kill, "queued, not run");
        assert_eq!(
            error_of(answer_client(&mut script, &mut client, &words("EXEC"))),
            alloc::format!("EXECABORT Transaction discarded because of: {BUSY_EVAL}")
        );
        assert!(client.multi.is_none());
        // A transaction begun while busy fails at its EXEC after the script.
        answer_client(&mut script, &mut client, &words("MULTI"));
        answer_client(&mut script, &mut client, &words("GET x"));
        assert!(client.multi.as_ref().is_some_and(|m| m.failed));
        assert_eq!(
            answer_client(&mut script, &mut client, &words("DISCARD")),
            Reply::ok()
        );
        assert_eq!(
            answer_client(&mut script, &mut client, &words("QUIT")),
            Reply::ok()
        );
        assert!(client.should_close());
    }

    #[test]
    fn a_script_that_wrote_is_unkillable_but_shutdown_nosave_stops_it() {
        let mut wrote = BusyScript {
            wrote: true,
            ..BusyScript::default()
        };
        assert!(error_of(answer(&mut wrote, &words("SCRIPT KILL"))).starts_with("UNKILLABLE"));
        assert!(!wrote.kill);
        assert!(error_of(answer(&mut wrote, &words("SHUTDOWN"))).starts_with("BUSY"));
        assert_eq!(answer(&mut wrote, &words("SHUTDOWN NOSAVE")), Reply::ok());
        assert!(wrote.shutdown);
    }
}
