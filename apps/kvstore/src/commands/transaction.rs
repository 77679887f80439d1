//! Transactions: `MULTI`, `EXEC`, `DISCARD`, `WATCH`, `UNWATCH`.
//!
//! ```text
//!  MULTI ──► each command checked (name, arity) and queued: +QUEUED,
//!            or an error that makes EXEC answer -EXECABORT
//!  EXEC  ──► a WATCHed key changed? ──yes──► nil, nothing runs
//!            └─no──► every queued command runs, back to back (the engine
//!                    serves one command at a time, so nothing interleaves),
//!                    replies in one array, effects logged as one batch
//! ```
//!
//! A watched key has changed when its entry's version differs from the
//! one `WATCH` saw (set, appended, expiry changed, deleted, or created).
//! A key created and deleted again between `WATCH` and `EXEC` reads as
//! unchanged (Redis aborts then); everything else matches Redis 7.

use alloc::vec::Vec;

use super::client::Multi;
use super::{errors, table, ClientCtx, Effects, Engine, Outcome};
use crate::resp::Reply;
use crate::Args;

/// Commands that act on the transaction itself instead of being queued
/// (`UNWATCH` is queued inside `MULTI`, as in Redis, and runs at `EXEC`).
const CONTROL: &[&str] = &["multi", "exec", "discard", "watch", "unwatch", "quit"];

impl Engine {
    /// Handles `args` if it belongs to a transaction (a control command, or
    /// any command while `MULTI` is open); `None` for a plain command.
    pub(super) fn transaction(
        &mut self,
        args: &mut Args,
        client: &mut ClientCtx,
        now: u64,
    ) -> Option<Outcome> {
        // Most commands are not transaction commands: find that out
        // without allocating.
        let typed = args.first()?;
        let name = *CONTROL
            .iter()
            .find(|c| typed.eq_ignore_ascii_case(c.as_bytes()))
            .unwrap_or(&"");
        // UNWATCH inside MULTI is queued, as in Redis.
        let queued_unwatch = name == "unwatch" && client.multi.is_some();
        let control = !name.is_empty() && !queued_unwatch;
        if client.multi.is_none() && !control {
            return None;
        }
        if client.multi.is_some() && !control {
            // Room is made before queueing, as before running.
            let db = client.db.min(self.databases().len() - 1);
            let evicted = match check(args) {
                Ok(spec) => self.evict_for(spec, args, db, now),
                Err(_) => Effects::default(),
            };
            return Some(Outcome {
                reply: self.queue(args, client, now),
                effects: evicted,
            });
        }
        // Name and arity errors, and authentication, as for any command.
        let spec = match check(args) {
            Ok(spec) => spec,
            Err(reply) => return Some(self.refuse_control(name, args, client, reply)),
        };
        if !self.acl.auth_required() {
            client.authenticated = true;
        } else if !client.authenticated && name != "quit" {
            self.count_rejected(args);
            return Some(Outcome::unchanged(Reply::error(
                "NOAUTH Authentication required.",
            )));
        }
        if let Some(refused) = self.acl_refusal(spec, args, client, now) {
            return Some(self.refuse_control(name, args, client, refused));
        }
        if name == "quit" {
            // QUIT inside MULTI ends the connection, as a plain QUIT does.
            client.multi = None;
            return None;
        }
        if name != "exec" {
            self.feed_monitors(args, client, now);
        }
        let started_us = (self.clock_us)();
        let outcome = self.control(name, args, client, now);
        let kept = || crate::slowlog::trimmed(args);
        let failed = outcome.reply.is_error();
        self.finished(spec, kept, client, now, started_us, failed);
        Some(outcome)
    }

    /// A malformed `MULTI`, `EXEC`, `DISCARD`, `WATCH` or `UNWATCH`
    /// (`reply` says how), counted as a rejected call. A malformed `EXEC`
    /// ends the transaction, if there is one, and says so either way, as
    /// Redis does; any other fails the open transaction.
    fn refuse_control(
        &mut self,
        name: &str,
        args: &[Vec<u8>],
        client: &mut ClientCtx,
        reply: Reply,
    ) -> Outcome {
        self.count_rejected(args);
        if name == "exec" {
            client.multi = None;
            client.watched.clear();
            let Reply::Error(text) = reply else {
                return Outcome::unchanged(reply);
            };
            let why = text.strip_prefix("ERR ").unwrap_or(&text);
            return Outcome::unchanged(Reply::Error(alloc::format!(
                "EXECABORT Transaction discarded because of: {why}"
            )));
        }
        if let Some(multi) = client.multi.as_mut() {
            multi.failed = true;
        }
        Outcome::unchanged(reply)
    }

    /// Runs the transaction command `name` (checked, and not `QUIT`).
    fn control(
        &mut self,
        name: &str,
        args: &[Vec<u8>],
        client: &mut ClientCtx,
        now: u64,
    ) -> Outcome {
        match name {
            "multi" if client.multi.is_some() => {
                Outcome::unchanged(Reply::error("ERR MULTI calls can not be nested"))
            }
            "multi" => {
                client.multi = Some(Multi::default());
                Outcome::unchanged(Reply::ok())
            }
            "discard" => match client.multi.take() {
                Some(_) => {
                    client.watched.clear();
                    Outcome::unchanged(Reply::ok())
                }
                None => Outcome::unchanged(Reply::error("ERR DISCARD without MULTI")),
            },
            "watch" if client.multi.is_some() => {
                Outcome::unchanged(Reply::error("ERR WATCH inside MULTI is not allowed"))
            }
            "watch" => {
                for key in &args[1..] {
                    let version = self.version_of(client.db, key, now);
                    client.watched.push((client.db, key.clone(), version));
                }
                Outcome::unchanged(Reply::ok())
            }
            "exec" => {
                // Shown after the commands it ran, as Redis shows it.
                let outcome = self.exec(client, now);
                self.feed_monitors(args, client, now);
                outcome
            }
            // UNWATCH, the last of them.
            _ => {
                client.watched.clear();
                Outcome::unchanged(Reply::ok())
            }
        }
    }

    /// `EXEC`: runs the queued commands unless the transaction failed or a
    /// watched key changed.
    fn exec(&mut self, client: &mut ClientCtx, now: u64) -> Outcome {
        let Some(multi) = client.multi.take() else {
            return Outcome::unchanged(Reply::error("ERR EXEC without MULTI"));
        };
        let watched = core::mem::take(&mut client.watched);
        if multi.failed {
            return Outcome::unchanged(Reply::error(
                "EXECABORT Transaction discarded because of previous errors.",
            ));
        }
        let changed = watched
            .iter()
            .any(|(db, key, version)| self.version_of(*db, key, now) != *version);
        if changed {
            return Outcome::unchanged(Reply::Array(None));
        }
        // The server may have run out of memory, or lost its log, since a
        // command was queued: then nothing runs, as in Redis.
        let db = client.db.min(self.databases().len() - 1);
        let mut effects = Effects::default();
        for args in &multi.queued {
            if let Ok(spec) = check(args) {
                effects.append(self.evict_for(spec, args, db, now));
            }
        }
        let refused = multi
            .queued
            .iter()
            .find_map(|args| self.refusal(check(args).ok()?, args, db));
        if let Some(Reply::Error(why)) = refused {
            return Outcome {
                reply: Reply::Error(alloc::format!(
                    "EXECABORT Transaction discarded because of: {why}"
                )),
                effects,
            };
        }
        let mut replies = Vec::with_capacity(multi.queued.len());
        // Blocking commands answer as their non-blocking forms here.
        self.in_exec = true;
        for mut args in multi.queued {
            let outcome = match self.transaction(&mut args, client, now) {
                Some(outcome) => outcome, // UNWATCH
                None => self.run(&mut args, client, now, false),
            };
            // Each error in the reply counts, as a reply of its own.
            self.count_reply_error(&outcome.reply);
            replies.push(outcome.reply);
            effects.append(outcome.effects);
        }
        self.in_exec = false;
        Outcome {
            reply: Reply::array(replies),
            effects,
        }
    }

    /// The version of `key`'s live entry in database `db`, `None` if it is
    /// missing or expired.
    fn version_of(&self, db: usize, key: &[u8], now: u64) -> Option<u64> {
        let entry = self.databases().get(db)?.get(key)?;
        (!entry.is_expired(now)).then(|| entry.version())
    }
}

/// Checks a command's name, subcommand and arity, as the engine does
/// before running it (see `Engine::run`).
pub(super) fn check(args: &[Vec<u8>]) -> Result<&'static table::Spec, Reply> {
    let Some(mut spec) = args.first().and_then(|name| table::lookup(name)) else {
        return Err(errors::unknown_command(args));
    };
    if !spec.arity_ok(args.len()) {
        return Err(errors::wrong_args(spec.name));
    }
    if !spec.subcommands.is_empty() && args.len() >= 2 {
        spec = spec
            .subcommand(&args[1])
            .ok_or_else(|| errors::unknown_subcommand(&args[0], &args[1]))?;
        if !spec.arity_ok(args.len()) {
            return Err(errors::wrong_args(spec.name));
        }
    }
    match spec.run {
        Some(_) => Ok(spec),
        None => Err(errors::wrong_args(spec.name)),
    }
}

impl Engine {
    /// Queues `args` in the open transaction: `+QUEUED`, or the error that
    /// will abort it (a malformed command, or one refused for the state
    /// the server is in now: see [`Engine::refusal`]).
    fn queue(&mut self, args: &mut Args, client: &mut ClientCtx, now: u64) -> Reply {
        let db = client.db.min(self.databases().len() - 1);
        let checked = check(args).and_then(|spec| {
            if let Some(refused) = self.acl_refusal(spec, args, client, now) {
                return Err(refused);
            }
            if spec.flags & table::NO_MULTI != 0 {
                return Err(Reply::error("ERR Command not allowed inside a transaction"));
            }
            match self.refusal(spec, args, db) {
                Some(refusal) => Err(refusal),
                None => Ok(()),
            }
        });
        let multi = client.multi.as_mut().expect("queue is called inside MULTI");
        match checked {
            Ok(()) => {
                multi.queued.push(core::mem::take(args));
                Reply::Simple("QUEUED".into())
            }
            Err(reply) => {
                multi.failed = true;
                self.count_rejected(args);
                reply
            }
        }
    }
}
