//! `ACL SETUSER`, `GETUSER`, `DELUSER`, `LIST`, `USERS`, `WHOAMI`, `CAT`,
//! `GENPASS`, `LOG`, `DRYRUN`, `LOAD`, `SAVE` and `HELP`: the commands
//! over `kvstore::acl`. `SETUSER` is logged as the user it left and
//! `DELUSER` as given, so users survive restarts through the append-only
//! log; `LOAD` and `SAVE`
//! answer as a Redis without an ACL file does.

use alloc::string::String;
use alloc::vec::Vec;

use super::categories as cat;
use super::exec::Exec;
use crate::acl::{self, Denied};
use crate::resp::Reply;

fn text(s: &str) -> Reply {
    Reply::bulk(s.as_bytes())
}

/// `-ERR unknown subcommand or wrong number of arguments for 'X'`.
fn wrong_use(args: &[Vec<u8>]) -> Reply {
    Reply::Error(alloc::format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try ACL HELP.",
        super::errors::lossy(&args[1])
    ))
}

/// Logs the command as given, in no particular database.
fn log_as_given(x: &mut Exec<'_>, args: &[Vec<u8>]) {
    x.effects.push(args);
    x.effects.mark_db_independent();
}

/// `ACL SETUSER name rule ...`.
pub(crate) fn setuser(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let name = &args[2];
    if !acl::valid_name(name) {
        return Reply::error("ERR Usernames can't contain spaces or null characters");
    }
    let all_channels = x.config.acl_pubsub_all;
    if let Err(why) = x.acl.set_user(name, &args[3..], all_channels) {
        return Reply::Error(alloc::format!("ERR {why}"));
    }
    if !x.loading {
        let name = args[2].clone();
        kill_lost_subscribers(x, &name);
        // The user as it is now: passwords as hashes, not as given.
        if let Some(record) = x.acl.record(&name) {
            x.effects.push(&record);
            x.effects.mark_db_independent();
        }
    }
    Reply::ok()
}

/// Closes the connections of user `name` subscribed to a channel or
/// pattern it may no longer use, as Redis does.
fn kill_lost_subscribers(x: &mut Exec<'_>, name: &[u8]) {
    let Some(user) = x.acl.user(name).cloned() else {
        return;
    };
    if user.root.all_channels {
        return;
    }
    let ids: Vec<u64> = x
        .clients
        .all()
        .filter(|c| c.user() == name)
        .map(|c| c.id())
        .collect();
    for id in ids {
        let [channels, patterns, shard] = x.pubsub.subscriptions_of(id);
        let lost = channels
            .iter()
            .chain(&shard)
            .any(|c| !user.may_use_channel(c, false))
            || patterns.iter().any(|p| !user.may_use_channel(p, true));
        if lost {
            close(x, id);
        }
    }
}

/// Closes connection `id`: the caller's own after its reply, as Redis.
fn close(x: &mut Exec<'_>, id: u64) {
    match id == x.client.id() {
        true => x.client.quit = true,
        false => x.clients.kill(id),
    }
}

/// `ACL DELUSER name ...`: how many were removed; their connections are
/// closed.
pub(crate) fn deluser(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    // Refused whole, before any user goes (as Redis).
    if args[2..]
        .iter()
        .any(|name| name.as_slice() == acl::DEFAULT_USER)
    {
        return Reply::error("ERR The 'default' user cannot be removed");
    }
    let mut removed = 0;
    for name in &args[2..] {
        if x.acl.delete_user(name) {
            removed += 1;
            let ids: Vec<u64> = x
                .clients
                .all()
                .filter(|c| c.user() == name.as_slice())
                .map(|c| c.id())
                .collect();
            for id in ids {
                close(x, id);
            }
        }
    }
    if removed > 0 && !x.loading {
        log_as_given(x, args);
    }
    Reply::Integer(removed)
}

/// `ACL GETUSER name`: its flags, password hashes, commands, keys,
/// channels and selectors (each its commands, keys and channels).
pub(crate) fn getuser(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let Some(user) = x.acl.user(&args[2]) else {
        return Reply::nil();
    };
    let flags = user.flags().into_iter().map(text).collect();
    let passwords = user
        .passwords
        .iter()
        .map(|h| text(&acl::password::hex(h)))
        .collect();
    let selectors = user
        .selectors
        .iter()
        .map(|selector| Reply::Map(describe_selector(selector)))
        .collect();
    let mut fields = alloc::vec![
        text("flags"),
        Reply::Set(flags),
        text("passwords"),
        Reply::array(passwords),
    ];
    fields.extend(describe_selector(&user.root));
    fields.extend([text("selectors"), Reply::array(selectors)]);
    Reply::Map(fields)
}

/// A selector's `commands`, `keys` and `channels`, for `ACL GETUSER`.
fn describe_selector(selector: &crate::acl::selector::Selector) -> Vec<Reply> {
    alloc::vec![
        text("commands"),
        text(&selector.commands.describe()),
        text("keys"),
        text(&selector.describe_keys()),
        text("channels"),
        text(&selector.describe_channels()),
    ]
}

/// `ACL LIST`: each user as the rules that rebuild it.
pub(crate) fn list(x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    let lines = x
        .acl
        .users()
        .map(|(name, user)| {
            let name = String::from_utf8_lossy(name);
            text(&alloc::format!("user {name} {}", user.describe()))
        })
        .collect();
    Reply::array(lines)
}

/// `ACL USERS`: the names, sorted.
pub(crate) fn users(x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    Reply::array(x.acl.users().map(|(n, _)| Reply::bulk(n.clone())).collect())
}

/// `ACL WHOAMI`.
pub(crate) fn whoami(x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    Reply::bulk(x.client.user.clone())
}

/// `ACL CAT [category]`: the categories, or the commands of one.
pub(crate) fn cat(_x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    match args.len() {
        2 => Reply::array(cat::NAMES.iter().map(|(_, n)| text(n)).collect()),
        3 => match cat::by_name(&args[2]) {
            Some(category) => Reply::array(
                crate::acl::commands::in_category(category)
                    .into_iter()
                    .map(text)
                    .collect(),
            ),
            None => Reply::Error(alloc::format!(
                "ERR Unknown category '{}'",
                super::errors::lossy(&args[2])
            )),
        },
        _ => wrong_use(args),
    }
}

/// `ACL GENPASS [bits]`: a random password of `bits` (256) bits, in
/// hexadecimal.
pub(crate) fn genpass(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let bits = match args.get(2) {
        None => 256,
        Some(arg) => match crate::num::parse_i64(arg) {
            Some(n) if (1..=4096).contains(&n) => n as usize,
            Some(_) => return Reply::error("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096"),
            None => return super::errors::not_integer(),
        },
    };
    if args.len() > 3 {
        return wrong_use(args);
    }
    let digits = bits.div_ceil(4);
    let mut out = String::with_capacity(digits);
    while out.len() < digits {
        // Each draw goes through SHA-256 with the time, so that the
        // generator's state cannot be read back from the passwords.
        let mut seed = x.random.next_u64().to_le_bytes().to_vec();
        seed.extend_from_slice(&x.now.to_le_bytes());
        out.push_str(&acl::password::hex(&acl::password::hash(&seed)));
    }
    out.truncate(digits);
    Reply::bulk(out.into_bytes())
}

/// `ACL LOG [count | RESET]`: the newest entries (10 by default).
pub(crate) fn log(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let count = match args.get(2) {
        None => 10,
        Some(_) if args.len() > 3 => return wrong_use(args),
        Some(arg) if arg.eq_ignore_ascii_case(b"reset") => {
            x.acl.log.clear();
            return Reply::ok();
        }
        Some(arg) => match crate::num::parse_i64(arg) {
            Some(n) => usize::try_from(n).unwrap_or(0),
            None => return super::errors::not_integer(),
        },
    };
    let now = x.now;
    let entries = x
        .acl
        .log
        .newest(count)
        .map(|e| {
            let age = now.saturating_sub(e.last_ms) as f64 / 1000.0;
            Reply::Map(alloc::vec![
                text("count"),
                Reply::Integer(i64::try_from(e.count).unwrap_or(i64::MAX)),
                text("reason"),
                text(e.reason.name()),
                text("context"),
                text(e.context.name()),
                text("object"),
                Reply::bulk(e.object.clone()),
                text("username"),
                Reply::bulk(e.username.clone()),
                text("age-seconds"),
                Reply::Double(crate::scripting::convert::double_text(age)),
                text("client-info"),
                text(&e.client_info),
            ])
        })
        .collect();
    Reply::array(entries)
}

/// `ACL DRYRUN user command [arg ...]`: whether `user` could run the
/// command, without running it or logging.
pub(crate) fn dryrun(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let Some(user) = x.acl.user(&args[2]) else {
        return Reply::Error(alloc::format!(
            "ERR User '{}' not found",
            super::errors::lossy(&args[2])
        ));
    };
    let command = &args[3..];
    let Some(top) = super::table::lookup(&command[0]) else {
        return Reply::Error(alloc::format!(
            "ERR Command '{}' not found",
            super::errors::lossy(&command[0])
        ));
    };
    let spec = match super::transaction::check(command) {
        Ok(spec) => spec,
        Err(_) if !top.arity_ok(command.len()) => return super::errors::wrong_args(top.name),
        Err(e) => return e,
    };
    let object = |at: usize| super::errors::lossy(&command[at]);
    match acl::check(user, spec, command) {
        Ok(()) => Reply::ok(),
        Err(Denied::Command) => text(&alloc::format!(
            "This user has no permissions to run the '{}' command",
            spec.name
        )),
        Err(Denied::Key(at)) => text(&alloc::format!(
            "This user has no permissions to access the '{}' key",
            object(at)
        )),
        Err(Denied::Channel(at)) => text(&alloc::format!(
            "This user has no permissions to access the '{}' channel",
            object(at)
        )),
    }
}

/// `ACL LOAD` and `ACL SAVE`: kvstore keeps users in its append-only log,
/// not in an ACL file.
pub(crate) fn no_file(_x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    Reply::error("ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.")
}

/// `ACL HELP`.
pub(crate) fn help(_x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    Reply::help(&[
        "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CAT [<category>]",
        "    List all commands that belong to <category>, or all command categories",
        "    when no category is specified.",
        "DELUSER <username> [<username> ...]",
        "    Delete a list of users.",
        "DRYRUN <username> <command> [<arg> ...]",
        "    Returns whether the user can execute the given command without executing the command.",
        "GETUSER <username>",
        "    Get the user's details.",
        "GENPASS [<bits>]",
        "    Generate a secure 256-bit user password. The optional `bits` argument can",
        "    be used to specify a different size.",
        "LIST",
        "    Show users details in config file format.",
        "LOAD",
        "    Reload users from the ACL file.",
        "LOG [<count> | RESET]",
        "    Show the ACL log entries.",
        "SAVE",
        "    Save the current config to the ACL file.",
        "SETUSER <username> <attribute> [<attribute> ...]",
        "    Create or modify a user with the specified attributes.",
        "USERS",
        "    List all the registered usernames.",
        "WHOAMI",
        "    Return the current connection username.",
        "HELP",
        "    Prints this help.",
    ])
}
