//! Access control lists, as Redis 7.0 has them: named users, each with
//! passwords and the commands, keys and channels it may use; the check
//! every command passes before it runs; and the log of what was refused.
//!
//! ```text
//!  ACL SETUSER ─▶ users (rules)      AUTH/HELLO ─▶ accepts(user, password)
//!  any command ─▶ check(user, command, args) ─▶ Ok, or Denied ─▶ -NOPERM + log
//! ```
//!
//! Users survive restarts through the append-only log: `ACL SETUSER` is
//! logged as the user it left (passwords as hashes, never as given:
//! [`Acl::record`]), `ACL DELUSER` as given, and a rewritten log starts
//! with one `ACL SETUSER` per user ([`Acl::records`]).
//! `requirepass` is the `default` user's password, as in Redis.

pub mod commands;
pub mod log;
pub mod password;
pub mod selector;
pub mod user;

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use crate::commands::table::Spec;
use selector::Selector;
pub use user::User;

/// The user every connection starts as.
pub const DEFAULT_USER: &[u8] = b"default";

/// Why a command was refused, with the position in its arguments of the
/// key or channel refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Denied {
    /// The command (or subcommand) itself.
    Command,
    /// The key at this position.
    Key(usize),
    /// The channel at this position.
    Channel(usize),
}

impl Denied {
    /// The reason `ACL LOG` shows.
    pub fn reason(self) -> log::Reason {
        match self {
            Denied::Command => log::Reason::Command,
            Denied::Key(_) => log::Reason::Key,
            Denied::Channel(_) => log::Reason::Channel,
        }
    }

    /// The `-NOPERM` error a client gets.
    pub fn error_text(self, command: &str) -> alloc::string::String {
        match self {
            Denied::Command => alloc::format!(
                "NOPERM this user has no permissions to run the '{command}' command"
            ),
            Denied::Key(_) => "NOPERM this user has no permissions to access one of the keys used as arguments".into(),
            Denied::Channel(_) => "NOPERM this user has no permissions to access one of the channels used as arguments".into(),
        }
    }
}

/// The users and the log of refusals.
#[derive(Debug)]
pub struct Acl {
    users: BTreeMap<Vec<u8>, User>,
    /// What `ACL LOG` shows.
    pub log: log::Log,
    /// `ACL SETUSER default` was used: a rewritten log keeps the default
    /// user (else `requirepass` alone decides its password).
    default_changed: bool,
}

impl Default for Acl {
    fn default() -> Self {
        let mut users = BTreeMap::new();
        users.insert(DEFAULT_USER.to_vec(), User::default_user());
        Acl {
            users,
            log: log::Log::default(),
            default_changed: false,
        }
    }
}

/// Whether `name` may name a user: no spaces, no NUL bytes.
pub fn valid_name(name: &[u8]) -> bool {
    !name.iter().any(|&b| b == b' ' || b == 0)
}

impl Acl {
    /// The user `name`.
    pub fn user(&self, name: &[u8]) -> Option<&User> {
        self.users.get(name)
    }

    /// Every user, by name.
    pub fn users(&self) -> impl Iterator<Item = (&Vec<u8>, &User)> {
        self.users.iter()
    }

    /// Whether connections must log in before anything else: the default
    /// user has a password or is off.
    pub fn auth_required(&self) -> bool {
        self.user(DEFAULT_USER)
            .is_none_or(|u| !u.nopass || !u.enabled)
    }

    /// Whether `password` logs `name` in.
    pub fn accepts(&self, name: &[u8], password: &[u8]) -> bool {
        self.user(name).is_some_and(|u| u.accepts(password))
    }

    /// `ACL SETUSER name rules...`: every rule applies, or none (the
    /// error text, without its `ERR `). A new user starts as
    /// [`User::new`]. A selector may come split over several arguments
    /// (`(~k*` `+get)`), as in Redis.
    pub fn set_user(
        &mut self,
        name: &[u8],
        rules: &[Vec<u8>],
        all_channels: bool,
    ) -> Result<(), alloc::string::String> {
        let mut user = self
            .users
            .get(name)
            .cloned()
            .unwrap_or_else(|| User::new(all_channels));
        for rule in merge_selectors(rules)? {
            user.apply(&rule, all_channels).map_err(|why| {
                let rule = alloc::string::String::from_utf8_lossy(&rule);
                alloc::format!("Error in ACL SETUSER modifier '{rule}': {why}")
            })?;
        }
        if name == DEFAULT_USER {
            self.default_changed = true;
        }
        self.users.insert(name.to_vec(), user);
        Ok(())
    }

    /// Removes user `name`; `false` if there was none.
    pub fn delete_user(&mut self, name: &[u8]) -> bool {
        self.users.remove(name).is_some()
    }

    /// Makes `password` the default user's only one (`None`: `nopass`),
    /// as `requirepass` does.
    pub fn set_default_password(&mut self, password: Option<&[u8]>) {
        let user = self
            .users
            .entry(DEFAULT_USER.to_vec())
            .or_insert_with(User::default_user);
        let rule = match password {
            Some(p) => [b">".as_slice(), p].concat(),
            None => b"nopass".to_vec(),
        };
        let _ = user.apply(b"resetpass", false);
        let _ = user.apply(&rule, false);
    }

    /// The command that rebuilds user `name` as it is now, for the log:
    /// `ACL SETUSER name`, what empties it (as `reset` does, but leaving
    /// the payload flag as it is), then its rules, passwords as hashes.
    pub fn record(&self, name: &[u8]) -> Option<Vec<Vec<u8>>> {
        let user = self.users.get(name)?;
        let mut record = alloc::vec![b"ACL".to_vec(), b"SETUSER".to_vec(), name.to_vec()];
        for rule in [
            "resetpass",
            "resetkeys",
            "resetchannels",
            "nocommands",
            "clearselectors",
            "off",
        ] {
            record.push(rule.as_bytes().to_vec());
        }
        record.extend(user.rules());
        Some(record)
    }

    /// The commands that rebuild every user (the default one only if
    /// `ACL SETUSER` changed it), for the start of a rewritten log.
    pub fn records(&self) -> Vec<Vec<Vec<u8>>> {
        self.users
            .keys()
            .filter(|name| self.default_changed || name.as_slice() != DEFAULT_USER)
            .filter_map(|name| self.record(name))
            .collect()
    }
}

/// The rules, with each selector split over several arguments joined
/// into one (by spaces). As in Redis, an argument that starts with `(`
/// and does not end with `)` opens a selector, dropping one still open;
/// the arguments after it join it until one ends with `)`.
fn merge_selectors(rules: &[Vec<u8>]) -> Result<Vec<Vec<u8>>, alloc::string::String> {
    let mut merged = Vec::with_capacity(rules.len());
    // The selector being joined, and the argument that opened it (the one
    // an error names).
    let mut open: Option<(Vec<u8>, &[u8])> = None;
    for rule in rules {
        if rule.first() == Some(&b'(') && !rule.ends_with(b")") {
            open = Some((rule.clone(), rule));
            continue;
        }
        match open.as_mut() {
            Some((selector, _)) => {
                selector.push(b' ');
                selector.extend_from_slice(rule);
                if rule.ends_with(b")") {
                    merged.extend(open.take().map(|(selector, _)| selector));
                }
            }
            None => merged.push(rule.clone()),
        }
    }
    match open {
        Some((_, opened_by)) => Err(alloc::format!(
            "Unmatched parenthesis in acl selector starting at '{}'.",
            alloc::string::String::from_utf8_lossy(opened_by)
        )),
        None => Ok(merged),
    }
}

/// Whether `user` may run `spec` with `args`: its root selector or one of
/// its others must allow the command, then each key it touches (by what
/// it does to it), then each channel it publishes or subscribes to. When
/// none does, the refusal that got furthest is the one told (a channel
/// over a key over the command, a later argument over an earlier one),
/// as in Redis.
pub fn check(user: &User, spec: &Spec, args: &[Vec<u8>]) -> Result<(), Denied> {
    let mut worst: Option<Denied> = None;
    for selector in core::iter::once(&user.root).chain(&user.selectors) {
        match check_selector(selector, spec, args) {
            Ok(()) => return Ok(()),
            Err(denied) if worst.is_none_or(|w| rank(denied) >= rank(w)) => worst = Some(denied),
            Err(_) => {}
        }
    }
    Err(worst.unwrap_or(Denied::Command))
}

/// How far a refusal got, for [`check`] to tell the furthest.
fn rank(denied: Denied) -> (u8, usize) {
    match denied {
        Denied::Command => (1, 0),
        Denied::Key(at) => (2, at),
        Denied::Channel(at) => (4, at),
    }
}

/// [`check`] against one selector.
fn check_selector(selector: &Selector, spec: &Spec, args: &[Vec<u8>]) -> Result<(), Denied> {
    let no_auth = matches!(spec.name, "auth" | "hello" | "quit" | "reset");
    if !no_auth && !selector.commands.allows(spec, args) {
        return Err(Denied::Command);
    }
    if !selector.all_keys {
        for (at, read, write) in crate::commands::key_intents(spec, args) {
            let key = args.get(at).map_or(&[][..], Vec::as_slice);
            if !selector.may_touch(key, read, write) {
                return Err(Denied::Key(at));
            }
        }
    }
    if !selector.all_channels {
        let (from, is_pattern) = match spec.name {
            "publish" | "spublish" => (1, false),
            "subscribe" | "ssubscribe" => (1, false),
            "psubscribe" => (1, true),
            _ => return Ok(()),
        };
        let last = match spec.name {
            "publish" | "spublish" => 2.min(args.len()),
            _ => args.len(),
        };
        let channels = args.iter().enumerate().take(last).skip(from);
        if let Some((at, _)) = channels
            .into_iter()
            .find(|(_, c)| !selector.may_use_channel(c, is_pattern))
        {
            return Err(Denied::Channel(at));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::table::COMMANDS;

    #[test]
    fn checking_any_command_with_too_few_arguments_does_not_panic() {
        // `redis.acl_check_cmd` checks without the arity: key places past
        // the arguments given must not be read.
        let mut user = User::new(false);
        user.apply(b"+@all", false).unwrap();
        user.apply(b"~k*", false).unwrap();
        user.apply(b"(%R~j* +@read)", false).unwrap();
        for spec in COMMANDS
            .iter()
            .flat_map(|s| core::iter::once(s).chain(s.subcommands))
        {
            let name: Vec<Vec<u8>> = spec
                .name
                .split('|')
                .map(|w| w.as_bytes().to_vec())
                .collect();
            for extra in 0..4 {
                let mut args = name.clone();
                args.extend((0..extra).map(|i| alloc::format!("{i}").into_bytes()));
                let _ = check(&user, spec, &args);
            }
        }
    }

    #[test]
    fn selectors_allow_what_one_of_them_allows() {
        let mut acl = Acl::default();
        let rules: Vec<Vec<u8>> = [
            "on",
            "nopass",
            "+get",
            "~a*",
            "(~b* +set)",
            "(+del",
            "%R~c*)",
        ]
        .iter()
        .map(|r| r.as_bytes().to_vec())
        .collect();
        acl.set_user(b"sel", &rules, false).unwrap();
        let user = acl.user(b"sel").unwrap();
        let run = |line: &str| {
            let args: Vec<Vec<u8>> = line.split(' ').map(|w| w.as_bytes().to_vec()).collect();
            let spec = crate::acl::commands::lookup(&args[0]).unwrap();
            check(user, spec, &args)
        };
        assert_eq!(run("set b1 x"), Ok(()));
        assert_eq!(run("set a1 x"), Err(Denied::Key(1)));
        assert_eq!(run("del c1"), Err(Denied::Key(1)));
        assert_eq!(run("get a1"), Ok(()));
        assert_eq!(run("incr z"), Err(Denied::Command));
        let open = [b"(+get".to_vec()];
        assert_eq!(
            acl.set_user(b"sel", &open, false),
            Err("Unmatched parenthesis in acl selector starting at '(+get'.".into())
        );
    }

    #[test]
    fn a_record_rebuilds_the_user() {
        let mut acl = Acl::default();
        let rules: Vec<Vec<u8>> = [
            &b"on"[..],
            b">pw",
            b"~a\xff*",
            b"%R~r*",
            b"&ch",
            b"+@read",
            b"-get",
            b"+select|0",
            b"(~b* +set)",
        ]
        .iter()
        .map(|r| r.to_vec())
        .collect();
        acl.set_user(b"u", &rules, false).unwrap();
        let record = acl.record(b"u").unwrap();
        assert!(!record.iter().any(|r| r.as_slice() == b">pw"));
        let mut again = Acl::default();
        // Replayed over an older state of the user, too.
        again
            .set_user(b"u", &[b"allkeys".to_vec(), b"nopass".to_vec()], true)
            .unwrap();
        again.set_user(b"u", &record[3..], true).unwrap();
        assert_eq!(again.user(b"u"), acl.user(b"u"));
    }
}
