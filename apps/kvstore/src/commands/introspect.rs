//! Introspection: `COMMAND` (and `COUNT`, `DOCS`, `GETKEYS`, `INFO`,
//! `LIST`) and
//! `CONFIG GET|SET|RESETSTAT`. Enough for `redis-cli` and
//! `redis-benchmark` to start up.

use alloc::string::String;
use alloc::vec::Vec;

use super::errors;
use super::exec::Exec;
use super::key_positions::{has_keys, key_positions};
use super::table::{self, Spec, COMMANDS, FLAG_NAMES};
use crate::resp::Reply;

/// `COMMAND`: a description of every command.
pub(crate) fn command(_x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    Reply::array(COMMANDS.iter().map(describe).collect())
}

/// `COMMAND COUNT`.
pub(crate) fn command_count(_x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    Reply::Integer(COMMANDS.len() as i64)
}

/// `COMMAND DOCS [name ...]`: no documentation is shipped; an empty reply
/// makes `redis-cli` fall back to its built-in help.
pub(crate) fn command_docs(_x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    // A map of name to docs in RESP3: an empty one.
    Reply::Map(Vec::new())
}

/// `COMMAND GETKEYS command [arg ...]`: the keys that command would
/// touch, found where the server itself looks for them; Redis's errors for
/// an unknown command, one without keys, a wrong number of arguments, and
/// arguments that do not say where the keys are.
pub(crate) fn command_getkeys(_x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let command = &args[2..];
    let Some(top) = table::lookup(&command[0]) else {
        return Reply::error("ERR Invalid command specified");
    };
    let spec = match command.get(1) {
        Some(sub) if !top.subcommands.is_empty() => match top.subcommand(sub) {
            Some(spec) => spec,
            None => return Reply::error("ERR Invalid command specified"),
        },
        _ => top,
    };
    if !has_keys(spec) {
        return Reply::error("ERR The command has no key arguments");
    }
    if !spec.arity_ok(command.len()) {
        return Reply::error("ERR Invalid number of arguments specified for command");
    }
    match key_positions(spec, command) {
        Some(keys) if !keys.is_empty() => Reply::array(
            keys.into_iter()
                .map(|i| Reply::bulk(command[i].as_slice()))
                .collect(),
        ),
        _ => Reply::error("ERR Invalid arguments specified for command"),
    }
}

/// `COMMAND INFO [name ...]`: descriptions of the named commands (nil for
/// unknown ones), or of all commands if none are named.
pub(crate) fn command_info(_x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    if args.len() == 2 {
        return Reply::array(COMMANDS.iter().map(describe).collect());
    }
    Reply::array(
        args[2..]
            .iter()
            .map(|name| table::lookup(name).map_or(Reply::Array(None), describe))
            .collect(),
    )
}

/// `COMMAND LIST`: every command name.
pub(crate) fn command_list(_x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    if args.len() > 2 {
        return errors::syntax();
    }
    Reply::array(COMMANDS.iter().map(|s| Reply::bulk(s.name)).collect())
}

/// One `COMMAND` entry in Redis 7's shape: name, arity, flags, first key,
/// last key, step, ACL categories, tips, key specs, subcommands (flags,
/// categories and tips are sets in RESP3).
fn describe(spec: &Spec) -> Reply {
    let flags = FLAG_NAMES
        .iter()
        .filter(|(bit, _)| spec.flags & bit != 0)
        .map(|(_, name)| Reply::Simple(String::from(*name)))
        .collect();
    let (first, last, step) = spec.keys;
    Reply::array(alloc::vec![
        Reply::bulk(spec.name),
        Reply::Integer(spec.arity.into()),
        Reply::Set(flags),
        Reply::Integer(first.into()),
        Reply::Integer(last.into()),
        Reply::Integer(step.into()),
        Reply::Set(Vec::new()),
        Reply::Set(Vec::new()),
        Reply::array(Vec::new()),
        Reply::array(spec.subcommands.iter().map(describe).collect()),
    ])
}

/// `CONFIG GET pattern [pattern ...]`: name/value pairs, flattened.
pub(crate) fn config_get(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let mut seen: Vec<&str> = Vec::new();
    let mut pairs = Vec::new();
    for pattern in &args[2..] {
        for (name, value) in x.config.matching(pattern) {
            if !seen.contains(&name) {
                seen.push(name);
                pairs.push(Reply::bulk(name));
                pairs.push(Reply::bulk(value));
            }
        }
    }
    Reply::Map(pairs)
}

/// `CONFIG SET name value [name value ...]`: all or nothing. A name
/// without its value is a syntax error, as in Redis 7.
pub(crate) fn config_set(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    if !args.len().is_multiple_of(2) {
        return errors::syntax();
    }
    // Every name first, as Redis: an unknown, fixed or repeated one is the
    // error whatever the values.
    let mut names: Vec<Vec<u8>> = Vec::new();
    for pair in args[2..].chunks(2) {
        let typed = errors::lossy(&pair[0]);
        if let Err(err) = x.config.settable_at_runtime(&typed, &pair[1]) {
            return Reply::Error(err.message());
        }
        let name = pair[0].to_ascii_lowercase();
        if names.contains(&name) {
            return Reply::Error(alloc::format!(
                "ERR CONFIG SET failed (possibly related to argument '{typed}') - duplicate parameter"
            ));
        }
        names.push(name);
    }
    let mut updated = x.config.clone();
    for pair in args[2..].chunks(2) {
        let name = errors::lossy(&pair[0]);
        if let Err(err) = updated.set_at_runtime(&name, &pair[1]) {
            return Reply::Error(err.message());
        }
    }
    *x.config = updated;
    Reply::ok()
}

/// `CONFIG RESETSTAT`: zero the `INFO` counters.
pub(crate) fn config_resetstat(x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    x.stats.reset();
    Reply::ok()
}
