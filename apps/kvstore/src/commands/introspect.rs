//! Introspection: `COMMAND` (and `COUNT`, `DOCS`, `GETKEYS`,
//! `GETKEYSANDFLAGS`, `INFO`, `LIST`) and
//! `CONFIG GET|SET|RESETSTAT|REWRITE|HELP`. Enough for `redis-cli` and
//! `redis-benchmark` to start up.

use alloc::string::String;
use alloc::vec::Vec;

use super::exec::Exec;
use super::key_positions::{has_keys, key_positions, keys_optional};
use super::table::{self, Spec, COMMANDS, FLAG_NAMES};
use super::{categories, errors, key_flags};
use crate::glob;
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
/// touch, found where the server itself looks for them.
pub(crate) fn command_getkeys(_x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let command = &args[2..];
    match keys_of(command) {
        Ok((_, keys)) => Reply::array(
            keys.into_iter()
                .map(|i| Reply::bulk(command[i].as_slice()))
                .collect(),
        ),
        Err(error) => error,
    }
}

/// `COMMAND GETKEYSANDFLAGS command [arg ...]`: each key with how the
/// command uses it (`RO access`, `OW update`, ...).
pub(crate) fn command_getkeysandflags(_x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let command = &args[2..];
    let (spec, keys) = match keys_of(command) {
        Ok(found) => found,
        Err(error) => return error,
    };
    let flags = key_flags::of_keys(spec, command, &keys);
    Reply::array(
        keys.into_iter()
            .zip(flags)
            .map(|(i, flags)| {
                let names = key_flags::names(flags)
                    .map(|name| Reply::Simple(String::from(name)))
                    .collect();
                Reply::array(alloc::vec![
                    Reply::bulk(command[i].as_slice()),
                    Reply::Set(names)
                ])
            })
            .collect(),
    )
}

/// The command `command` names and the places of its keys; Redis's errors
/// for an unknown command, one without keys, a wrong number of arguments,
/// and arguments that do not say where the keys are (none for a script
/// or function, which may have no keys).
fn keys_of(command: &[Vec<u8>]) -> Result<(&'static Spec, Vec<usize>), Reply> {
    let Some(top) = table::lookup(&command[0]) else {
        return Err(Reply::error("ERR Invalid command specified"));
    };
    let spec = match command.get(1) {
        Some(sub) if !top.subcommands.is_empty() => match top.subcommand(sub) {
            Some(spec) => spec,
            None => return Err(Reply::error("ERR Invalid command specified")),
        },
        _ => top,
    };
    if !has_keys(spec) {
        return Err(Reply::error("ERR The command has no key arguments"));
    }
    if !spec.arity_ok(command.len()) {
        return Err(Reply::error(
            "ERR Invalid number of arguments specified for command",
        ));
    }
    match key_positions(spec, command) {
        Some(keys) if !keys.is_empty() => Ok((spec, keys)),
        _ if keys_optional(spec) => Ok((spec, Vec::new())),
        _ => Err(Reply::error("ERR Invalid arguments specified for command")),
    }
}

/// `COMMAND INFO [name ...]`: descriptions of the named commands or
/// subcommands (`config|get`; nil for unknown ones), or of all commands if
/// none are named.
pub(crate) fn command_info(_x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    if args.len() == 2 {
        return Reply::array(COMMANDS.iter().map(describe).collect());
    }
    Reply::array(
        args[2..]
            .iter()
            .map(|name| by_full_name(name).map_or(Reply::Array(None), describe))
            .collect(),
    )
}

/// A command by its name, or a subcommand by `parent|sub` (one level:
/// `config|get|key` is no command).
fn by_full_name(name: &[u8]) -> Option<&'static Spec> {
    let mut parts = name.splitn(2, |&b| b == b'|');
    let top = table::lookup(parts.next()?)?;
    match parts.next() {
        None => Some(top),
        Some(sub) => top.subcommand(sub),
    }
}

/// `COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN
/// pattern]`: the names of the commands and subcommands (`client|list`)
/// that pass the filter. kvstore loads no modules: a module has none.
pub(crate) fn command_list(_x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let keep: &dyn Fn(&Spec) -> bool = match &args[2..] {
        [] => &|_| true,
        [filterby, kind, value] if filterby.eq_ignore_ascii_case(b"filterby") => {
            if kind.eq_ignore_ascii_case(b"module") {
                &|_| false
            } else if kind.eq_ignore_ascii_case(b"aclcat") {
                match categories::by_name(value) {
                    Some(bit) => &move |spec: &Spec| spec.acl & bit != 0,
                    None => &|_| false,
                }
            } else if kind.eq_ignore_ascii_case(b"pattern") {
                &|spec: &Spec| glob::matches_nocase(value, spec.name.as_bytes())
            } else {
                return errors::syntax();
            }
        }
        _ => return errors::syntax(),
    };
    let names = COMMANDS
        .iter()
        .flat_map(|spec| core::iter::once(spec).chain(spec.subcommands))
        .filter(|spec| keep(spec))
        .map(|spec| Reply::bulk(spec.name))
        .collect();
    Reply::array(names)
}

/// One `COMMAND` entry in Redis 7's shape: name, arity, flags, first key,
/// last key, step, ACL categories, tips (none), key specs (none), subcommands (flags,
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
        Reply::Set(
            categories::names(spec.acl)
                .map(|name| Reply::Simple(alloc::format!("@{name}")))
                .collect()
        ),
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

/// `CONFIG REWRITE`: kvstore reads no configuration file (its settings
/// come from the boot arguments and `CONFIG SET`), so there is none to
/// rewrite: Redis's answer when it started without one.
pub(crate) fn config_rewrite(_x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    Reply::error("ERR The server is running without a config file")
}

/// `CONFIG HELP`.
pub(crate) fn config_help(_x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    Reply::help(&[
        "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "GET <pattern>",
        "    Return parameters matching the glob-like <pattern> and their values.",
        "SET <directive> <value>",
        "    Set the configuration <directive> to <value>.",
        "RESETSTAT",
        "    Reset statistics reported by the INFO command.",
        "REWRITE",
        "    Rewrite the configuration file.",
        "HELP",
        "    Prints this help.",
    ])
}

/// `CONFIG RESETSTAT`: zero the `INFO` counters.
pub(crate) fn config_resetstat(x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    x.stats.reset();
    Reply::ok()
}
