//! The engine's side of function libraries (see
//! `kvstore::scripting::functions`): `FUNCTION
//! LOAD|DELETE|FLUSH|LIST|DUMP|RESTORE|STATS|KILL|HELP`, `FCALL` and
//! `FCALL_RO`.
//!
//! Libraries are data: they survive a restart through the log. A change is
//! logged as `FUNCTION LOAD REPLACE <code>`, `FUNCTION DELETE <library>`
//! and `FUNCTION FLUSH` (a `RESTORE` as those it amounts to), records that
//! hold in any database; a log rewrite starts with a `FUNCTION LOAD` of
//! each library ([`Engine::function_records`]). Replaying the log runs
//! each library's code again, which only registers functions, and so
//! gives the same libraries.

use alloc::vec::Vec;

use super::{table, ClientCtx, Effects, Engine, Outcome};
use crate::resp::Reply;
use crate::scripting::functions::Functions;
use crate::scripting::payload;

impl Engine {
    /// Runs `args` if `spec` is a `FUNCTION` subcommand or `FCALL`;
    /// `None` otherwise.
    pub(super) fn function_command(
        &mut self,
        spec: &table::Spec,
        args: &[Vec<u8>],
        client: &ClientCtx,
        now: u64,
        loading: bool,
    ) -> Option<Outcome> {
        let reply = Outcome::unchanged;
        Some(match spec.name {
            "fcall" => self.fcall(args, client, now, false),
            "fcall_ro" => self.fcall(args, client, now, true),
            "function|load" => self.function_load(args, loading),
            "function|delete" => self.function_delete(&args[2]),
            "function|flush" => match args.get(2) {
                _ if args.len() > 3 => reply(subcommand_syntax("flush")),
                Some(mode)
                    if !mode.eq_ignore_ascii_case(b"sync")
                        && !mode.eq_ignore_ascii_case(b"async") =>
                {
                    reply(Reply::error(
                        "ERR FUNCTION FLUSH only supports SYNC|ASYNC option",
                    ))
                }
                _ => {
                    self.functions.flush();
                    Outcome {
                        reply: Reply::ok(),
                        effects: logged(&[b"FUNCTION", b"FLUSH"]),
                    }
                }
            },
            "function|list" => reply(self.function_list(args)),
            "function|dump" => reply(Reply::Bulk(Some(payload::dump(
                self.functions.libraries().map(|lib| lib.code.as_slice()),
            )))),
            "function|restore" => self.function_restore(args),
            "function|stats" => reply(self.function_stats()),
            // Functions run to their end before another command is read.
            "function|kill" => reply(Reply::error("NOTBUSY No scripts in execution right now.")),
            "function|help" => reply(help()),
            _ => return None,
        })
    }

    /// The records that recreate the libraries, for a log rewrite.
    pub(super) fn function_records(&self) -> Vec<Vec<Vec<u8>>> {
        self.functions
            .libraries()
            .map(|lib| alloc::vec![b"FUNCTION".to_vec(), b"LOAD".to_vec(), lib.code.clone()])
            .collect()
    }

    /// Calls `f` with the libraries and their Lua state taken out of the
    /// engine (Lua's callbacks need the engine itself); `None` when there
    /// is no memory for a state.
    fn with_functions<R>(
        &mut self,
        f: impl FnOnce(&mut Functions<Engine>, &mut faultline_lua::State<Engine>, &mut Engine) -> R,
    ) -> Option<R> {
        let mut functions = core::mem::take(&mut self.functions);
        functions.set_memory_limit(self.lua_memory_limit());
        let Some(mut state) = functions.take_state() else {
            self.functions = functions;
            return None;
        };
        let result = f(&mut functions, &mut state, self);
        functions.put_state(state);
        self.functions = functions;
        Some(result)
    }

    /// `FUNCTION LOAD [REPLACE] code`.
    /// The library's code may run [`crate::busy::LOAD_TIMEOUT_MS`] at
    /// most, unless the log is `loading`.
    fn function_load(&mut self, args: &[Vec<u8>], loading: bool) -> Outcome {
        let mut replace = false;
        let (code, options) = args[2..].split_last().expect("arity is checked");
        for option in options {
            if !option.eq_ignore_ascii_case(b"replace") {
                return Outcome::unchanged(Reply::Error(alloc::format!(
                    "ERR Unknown option given: {}",
                    crate::scripting::convert::one_line(option)
                )));
            }
            replace = true;
        }
        if !loading {
            self.library_load_started = Some((self.clock_us)());
        }
        let loaded = self.with_functions(|functions, state, engine| {
            functions.load(state, engine, code, replace)
        });
        self.library_load_started = None;
        match loaded {
            None => Outcome::unchanged(super::errors::oom()),
            Some(Err(reply)) => Outcome::unchanged(reply),
            Some(Ok(name)) => Outcome {
                reply: Reply::Bulk(Some(name)),
                effects: logged(&[b"FUNCTION", b"LOAD", b"REPLACE", code]),
            },
        }
    }

    /// `FUNCTION DELETE library`.
    fn function_delete(&mut self, name: &[u8]) -> Outcome {
        match self.with_functions(|functions, state, engine| functions.delete(state, engine, name))
        {
            Some(true) => Outcome {
                reply: Reply::ok(),
                effects: logged(&[b"FUNCTION", b"DELETE", name]),
            },
            Some(false) => Outcome::unchanged(Reply::error("ERR Library not found")),
            None => Outcome::unchanged(super::errors::oom()),
        }
    }

    /// `FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE]`.
    fn function_list(&self, args: &[Vec<u8>]) -> Reply {
        let (mut with_code, mut pattern) = (false, None);
        let mut rest = args[2..].iter();
        while let Some(arg) = rest.next() {
            if !with_code && arg.eq_ignore_ascii_case(b"withcode") {
                with_code = true;
            } else if pattern.is_none() && arg.eq_ignore_ascii_case(b"libraryname") {
                match rest.next() {
                    Some(p) => pattern = Some(p),
                    None => return Reply::error("ERR library name argument was not given"),
                }
            } else {
                return Reply::Error(alloc::format!(
                    "ERR Unknown argument {}",
                    crate::scripting::convert::one_line(arg)
                ));
            }
        }
        let bulk = |s: &str| Reply::bulk(s.as_bytes());
        let libraries = self
            .functions
            .libraries()
            .filter(|lib| pattern.is_none_or(|p| crate::glob::matches_nocase(p, &lib.name)))
            .map(|lib| {
                let functions = lib
                    .functions
                    .iter()
                    .map(|f| {
                        Reply::fields([
                            ("name", bulk(&f.name)),
                            ("description", Reply::Bulk(f.description.clone())),
                            (
                                "flags",
                                Reply::Set(
                                    f.flags
                                        .names()
                                        .into_iter()
                                        .map(|n| Reply::Simple(n.into()))
                                        .collect(),
                                ),
                            ),
                        ])
                    })
                    .collect();
                let mut fields = alloc::vec![
                    bulk("library_name"),
                    Reply::bulk(lib.name.as_slice()),
                    bulk("engine"),
                    bulk("LUA"),
                    bulk("functions"),
                    Reply::array(functions),
                ];
                if with_code {
                    fields.push(bulk("library_code"));
                    fields.push(Reply::bulk(lib.code.as_slice()));
                }
                Reply::Map(fields)
            })
            .collect();
        Reply::array(libraries)
    }

    /// `FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE]`: the libraries of
    /// a `FUNCTION DUMP` (see `scripting::payload`). All of them are
    /// loaded aside first: a payload that fails to load, or collides with
    /// what is here, changes nothing.
    fn function_restore(&mut self, args: &[Vec<u8>]) -> Outcome {
        #[derive(PartialEq)]
        enum Policy {
            Flush,
            Append,
            Replace,
        }
        if args.len() > 4 {
            return Outcome::unchanged(subcommand_syntax("restore"));
        }
        let policy = match args.get(3) {
            None => Policy::Append,
            Some(p) if p.eq_ignore_ascii_case(b"append") => Policy::Append,
            Some(p) if p.eq_ignore_ascii_case(b"replace") => Policy::Replace,
            Some(p) if p.eq_ignore_ascii_case(b"flush") => Policy::Flush,
            Some(_) => return Outcome::unchanged(Reply::error(
                "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
            )),
        };
        let codes = match payload::restore(&args[2]) {
            Ok(codes) => codes,
            Err(why) => return Outcome::unchanged(Reply::Error(alloc::format!("ERR {why}"))),
        };
        // Loaded aside: errors in the payload itself.
        let mut aside = Functions::<Engine>::default();
        aside.set_memory_limit(self.lua_memory_limit());
        let Some(mut state) = aside.take_state() else {
            return Outcome::unchanged(super::errors::oom());
        };
        for code in &codes {
            if let Err(reply) = aside.load(&mut state, self, code, false) {
                return Outcome::unchanged(reply);
            }
        }
        let mut effects = Effects::default();
        effects.mark_db_independent();
        if policy == Policy::Flush {
            aside.put_state(state);
            self.functions = aside;
            effects.push([&b"FUNCTION"[..], b"FLUSH"]);
        } else {
            drop(state);
            let mut replaced = Vec::new();
            for lib in aside.libraries() {
                if self.functions.library(&lib.name).is_some() {
                    if policy == Policy::Append {
                        return Outcome::unchanged(Reply::Error(alloc::format!(
                            "ERR Library {} already exists",
                            alloc::string::String::from_utf8_lossy(&lib.name)
                        )));
                    }
                    replaced.push(lib.name.clone());
                }
            }
            for f in aside.libraries().flat_map(|lib| &lib.functions) {
                if let Some((owner, _)) = self.functions.function(f.name.as_bytes()) {
                    if !replaced.contains(&owner.name) {
                        return Outcome::unchanged(Reply::Error(alloc::format!(
                            "ERR Function {} already exists",
                            f.name
                        )));
                    }
                }
            }
            let done = self.with_functions(|functions, state, engine| {
                for name in &replaced {
                    functions.delete(state, engine, name);
                }
                for code in &codes {
                    functions.load(state, engine, code, false)?;
                }
                Ok(())
            });
            match done {
                None => return Outcome::unchanged(super::errors::oom()),
                Some(Err(reply)) => return Outcome::unchanged(reply),
                Some(Ok(())) => {}
            }
            for name in &replaced {
                effects.push([&b"FUNCTION"[..], b"DELETE", name]);
            }
        }
        for code in &codes {
            effects.push([&b"FUNCTION"[..], b"LOAD", code]);
        }
        Outcome {
            reply: Reply::ok(),
            effects,
        }
    }

    /// `FUNCTION STATS`: no function is ever running when a command is
    /// read; the one engine, Lua, and what it holds.
    fn function_stats(&self) -> Reply {
        let bulk = |s: &str| Reply::bulk(s.as_bytes());
        let lua = Reply::fields([
            (
                "libraries_count",
                Reply::Integer(self.functions.libraries().count() as i64),
            ),
            (
                "functions_count",
                Reply::Integer(self.functions.function_count() as i64),
            ),
        ]);
        Reply::fields([
            ("running_script", Reply::nil()),
            ("engines", Reply::Map(alloc::vec![bulk("LUA"), lua])),
        ])
    }

    /// `FCALL function numkeys key... arg...` (`read_only`: `FCALL_RO`).
    fn fcall(
        &mut self,
        args: &[Vec<u8>],
        client: &ClientCtx,
        now: u64,
        read_only: bool,
    ) -> Outcome {
        let Some((library, function)) = self.functions.function(&args[1]) else {
            return Outcome::unchanged(Reply::error("ERR Function not found"));
        };
        let (library, name, flags) = (library.name.clone(), function.name.clone(), function.flags);
        let Some(numkeys) = crate::num::parse_i64(&args[2]) else {
            return Outcome::unchanged(Reply::error("ERR Bad number of keys provided"));
        };
        let rest = &args[3..];
        if numkeys > rest.len() as i64 {
            return Outcome::unchanged(Reply::error(
                "ERR Number of keys can't be greater than number of args",
            ));
        }
        let Ok(numkeys) = usize::try_from(numkeys) else {
            return Outcome::unchanged(Reply::error("ERR Number of keys can't be negative"));
        };
        let (keys, argv) = rest.split_at(numkeys);
        if let Some(refusal) = self.script_refusal(flags, read_only) {
            return Outcome::unchanged(refusal);
        }
        let ran = self.with_functions(|_, state, engine| {
            let who = (Some(name.clone()), args);
            engine.run_script(client, now, flags, read_only, who, |engine| {
                Functions::call(state, engine, &library, &name, keys, argv)
            })
        });
        ran.unwrap_or_else(|| Outcome::unchanged(super::errors::oom()))
    }
}

/// One record that holds in any database.
fn logged(record: &[&[u8]]) -> Effects {
    let mut effects = Effects::default();
    effects.mark_db_independent();
    effects.push(record);
    effects
}

/// Redis's answer to a `FUNCTION` subcommand with the wrong arguments.
fn subcommand_syntax(sub: &str) -> Reply {
    Reply::Error(alloc::format!(
        "ERR unknown subcommand or wrong number of arguments for '{sub}'. Try FUNCTION HELP."
    ))
}

/// `FUNCTION HELP`.
fn help() -> Reply {
    Reply::help(&[
        "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "LOAD [REPLACE] <FUNCTION CODE>",
        "    Create a new library with the given library name and code.",
        "DELETE <LIBRARY NAME>",
        "    Delete the given library.",
        "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
        "    Return general information on all the libraries.",
        "STATS",
        "    Return information about the current function running, and the engines.",
        "KILL",
        "    Kill the current running function.",
        "FLUSH [ASYNC|SYNC]",
        "    Delete all the libraries.",
        "DUMP",
        "    Return a serialized payload representing the current libraries.",
        "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
        "    Restore the libraries represented by the given payload (default APPEND).",
        "HELP",
        "    Print this help.",
    ])
}
