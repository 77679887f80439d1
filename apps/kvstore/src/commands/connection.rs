//! Connection commands: `PING`, `ECHO`, `QUIT`, `SELECT`, and `CLIENT
//! SETNAME|GETNAME|ID|SETINFO`.

use alloc::format;
use alloc::vec::Vec;

use super::errors;
use super::exec::Exec;
use crate::resp::Reply;

/// `PING [message]`: `+PONG`, or the message as a bulk string.
pub(crate) fn ping(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    match args {
        [_] => Reply::Simple("PONG".into()),
        [_, message] => Reply::bulk(message.as_slice()),
        _ => errors::wrong_args(x.fullname),
    }
}

/// `ECHO message`.
pub(crate) fn echo(_x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    Reply::bulk(args[1].as_slice())
}

/// `TIME`: the server's Unix time, seconds and microseconds (the clock
/// counts milliseconds, so the last three digits are zero).
pub(crate) fn time(x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    Reply::array(alloc::vec![
        Reply::bulk(alloc::format!("{}", x.now / 1000)),
        Reply::bulk(alloc::format!("{}", (x.now % 1000) * 1000)),
    ])
}

/// `QUIT`: `+OK`, and the connection is marked for closing.
/// `MONITOR`: from now on the connection receives a line for every
/// command the server runs (see `kvstore::monitor`).
pub(crate) fn monitor(x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    x.pubsub.monitor(x.client.id());
    Reply::ok()
}

pub(crate) fn quit(x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    x.client.quit = true;
    Reply::ok()
}

/// `RESET`: answered by the engine before dispatch (it is not queued in a
/// transaction and is allowed while subscribed); listed here for `COMMAND`.
pub(crate) fn reset(_x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    Reply::Simple("RESET".into())
}

/// `SELECT index`: the database this connection works in from now on. The
/// index must be a 32-bit integer, with Redis's error for one that is not.
pub(crate) fn select(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    match errors::db_index(&args[1]) {
        Ok(n) if (0..x.config.databases as i64).contains(&n) => {
            x.client.db = n as usize;
            Reply::ok()
        }
        Ok(_) => Reply::error("ERR DB index is out of range"),
        Err(reply) => reply,
    }
}

/// `CLIENT SETNAME name`: an empty name clears it.
pub(crate) fn client_setname(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let name = &args[2];
    if !name.iter().all(|b| (b'!'..=b'~').contains(b)) {
        return Reply::error(
            "ERR Client names cannot contain spaces, newlines or special characters.",
        );
    }
    x.client.name = (!name.is_empty()).then(|| name.clone());
    Reply::ok()
}

/// `CLIENT GETNAME`: the name, or nil.
pub(crate) fn client_getname(x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    Reply::Bulk(x.client.name.clone())
}

/// `CLIENT ID`.
pub(crate) fn client_id(x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    Reply::Integer(i64::try_from(x.client.id()).unwrap_or(i64::MAX))
}

/// `CLIENT REPLY ON|OFF|SKIP`: replies on, off until turned on again, or
/// off for this command and the next. Only `ON` is answered.
pub(crate) fn client_reply(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    match args[2].to_ascii_uppercase().as_slice() {
        b"ON" => {
            x.client.replies_off = false;
            x.client.replies_to_skip = 0;
            Reply::ok()
        }
        b"OFF" => {
            x.client.replies_off = true;
            Reply::ok()
        }
        b"SKIP" => {
            x.client.replies_to_skip = 2;
            Reply::ok()
        }
        _ => errors::syntax(),
    }
}

/// `CLIENT SETINFO LIB-NAME|LIB-VER value`: accepted (client libraries send
/// it on connect) and not otherwise used.
pub(crate) fn client_setinfo(_x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let attr = &args[2];
    if attr.eq_ignore_ascii_case(b"lib-name") || attr.eq_ignore_ascii_case(b"lib-ver") {
        Reply::ok()
    } else {
        Reply::Error(format!("ERR Unrecognized option '{}'", errors::lossy(attr)))
    }
}

/// `CLIENT LIST [TYPE normal|pubsub|master|replica|slave] [ID id ...]`:
/// one line per connection.
pub(crate) fn client_list(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let mut kind: Option<bool> = None; // Some(true): pub/sub only
    let mut ids: Option<Vec<u64>> = None;
    let mut i = 2;
    while i < args.len() {
        let word = &args[i];
        if word.eq_ignore_ascii_case(b"type") && i + 1 < args.len() {
            let t = &args[i + 1];
            kind = Some(if t.eq_ignore_ascii_case(b"pubsub") {
                true
            } else if t.eq_ignore_ascii_case(b"normal") {
                false
            } else if [&b"master"[..], b"replica", b"slave"]
                .iter()
                .any(|k| t.eq_ignore_ascii_case(k))
            {
                // No replication: none of those.
                return Reply::bulk(Vec::new());
            } else {
                return Reply::Error(format!("ERR Unknown client type '{}'", errors::lossy(t)));
            });
            i += 2;
        } else if word.eq_ignore_ascii_case(b"id") && i + 1 < args.len() {
            let mut list = Vec::new();
            for id in &args[i + 1..] {
                match crate::num::parse_i64(id) {
                    Some(n) if n > 0 => list.push(n as u64),
                    _ => return Reply::error("ERR Invalid client ID"),
                }
            }
            ids = Some(list);
            i = args.len();
        } else {
            return errors::syntax();
        }
    }
    let now = x.now;
    let mut out = alloc::string::String::new();
    for info in x.clients.all() {
        if kind.is_some_and(|pubsub| pubsub != info.is_pubsub()) {
            continue;
        }
        if ids.as_ref().is_some_and(|ids| !ids.contains(&info.id())) {
            continue;
        }
        let id = info.id();
        out += &info.line(now, (x.tracking.list_flags(id), x.tracking.redirect(id)));
        out.push('\n');
    }
    Reply::Verbatim(out.into_bytes())
}

/// `CLIENT HELP`: the subcommands kvstore has, in Redis's words.
pub(crate) fn client_help(_x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    Reply::help(&[
        "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "GETNAME",
        "    Return the name of the current connection.",
        "ID",
        "    Return the ID of the current connection.",
        "INFO",
        "    Return information about the current client connection.",
        "KILL <ip:port>",
        "    Kill connection made from <ip:port>.",
        "KILL <option> <value> [<option> <value> [...]]",
        "    Kill connections. Options are:",
        "    * ADDR (<ip:port>|<unixsocket>:0)",
        "      Kill connections made from the specified address",
        "    * ID <client-id>",
        "      Kill the connection with this ID.",
        "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
        "      Kill connections by type.",
        "    * SKIPME (YES|NO)",
        "      Skip killing current connection (default: yes).",
        "LIST [options ...]",
        "    Return information about client connections. Options:",
        "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
        "      Return clients of specified type.",
        "REPLY (ON|OFF|SKIP)",
        "    Control the replies sent to the current connection.",
        "SETNAME <name>",
        "    Assign the name <name> to the current connection.",
        "SETINFO <LIB-NAME|LIB-VER> <value>",
        "    Set the client's library name or version.",
        "UNBLOCK <clientid> [TIMEOUT|ERROR]",
        "    Unblock the specified blocked client.",
        "NO-EVICT (ON|OFF)",
        "    Protect current client connection from eviction.",
        "HELP",
        "    Prints this help.",
    ])
}

/// `CLIENT INFO`: this connection's line.
pub(crate) fn client_info(x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    match x.clients.get(x.client.id()) {
        Some(info) => {
            let id = info.id();
            let tracking = (x.tracking.list_flags(id), x.tracking.redirect(id));
            let mut line = info.line(x.now, tracking);
            line.push('\n');
            Reply::Verbatim(line.into_bytes())
        }
        None => Reply::Verbatim(Vec::new()),
    }
}

/// `CLIENT NO-EVICT on|off`: recorded (and shown as flag `e`); this server
/// evicts no clients.
pub(crate) fn client_no_evict(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let on = if args[2].eq_ignore_ascii_case(b"on") {
        true
    } else if args[2].eq_ignore_ascii_case(b"off") {
        false
    } else {
        return errors::syntax();
    };
    x.clients.set_no_evict(x.client.id(), on);
    Reply::ok()
}

/// `CLIENT KILL ip:port` (the old form: `+OK`, or an error if no such
/// client), or `CLIENT KILL [ID id] [ADDR ip:port] [TYPE t] [USER u] [SKIPME yes|no]`
/// (filters, all of which must match; answers how many were killed).
pub(crate) fn client_kill(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let me = x.client.id();
    if args.len() == 3 {
        let addr = errors::lossy(&args[2]);
        let found = x.clients.all().find(|c| c.addr() == addr).map(|c| c.id());
        return match found {
            Some(id) => {
                kill(x, id);
                Reply::ok()
            }
            None => Reply::error("ERR No such client"),
        };
    }
    let (mut id, mut addr, mut pubsub, mut skipme) = (None, None, None, true);
    let (mut laddr, mut user) = (None, None);
    let mut i = 2;
    while i + 1 < args.len() {
        let (key, value) = (&args[i], &args[i + 1]);
        if key.eq_ignore_ascii_case(b"id") {
            match crate::num::parse_i64(value) {
                Some(n) if n > 0 => id = Some(n as u64),
                _ => return Reply::error("ERR client-id should be greater than 0"),
            }
        } else if key.eq_ignore_ascii_case(b"addr") {
            addr = Some(errors::lossy(value));
        } else if key.eq_ignore_ascii_case(b"type") {
            // kvstore has no replicas and no primary: those types match
            // no one.
            pubsub = match value.to_ascii_lowercase().as_slice() {
                b"normal" => Some(Some(false)),
                b"pubsub" => Some(Some(true)),
                b"master" | b"slave" | b"replica" => Some(None),
                _ => {
                    return Reply::Error(alloc::format!(
                        "ERR Unknown client type '{}'",
                        errors::lossy(value)
                    ))
                }
            };
        } else if key.eq_ignore_ascii_case(b"user") {
            if x.acl.user(value).is_none() {
                return Reply::Error(alloc::format!(
                    "ERR No such user '{}'",
                    errors::lossy(value)
                ));
            }
            user = Some(value.clone());
        } else if key.eq_ignore_ascii_case(b"laddr") {
            laddr = Some(errors::lossy(value));
        } else if key.eq_ignore_ascii_case(b"skipme") {
            skipme = if value.eq_ignore_ascii_case(b"yes") {
                true
            } else if value.eq_ignore_ascii_case(b"no") {
                false
            } else {
                return errors::syntax();
            };
        } else {
            return errors::syntax();
        }
        i += 2;
    }
    if i != args.len() {
        return errors::syntax();
    }
    let victims: Vec<u64> = x
        .clients
        .all()
        .filter(|c| addr.as_deref().is_none_or(|a| a == c.addr()))
        .filter(|c| pubsub.is_none_or(|p| p == Some(c.is_pubsub())))
        .filter(|c| user.as_deref().is_none_or(|u| u == c.user()))
        .filter(|_| {
            laddr
                .as_deref()
                .is_none_or(|a| a == crate::clients::LOCAL_ADDR)
        })
        .map(|c| c.id())
        .filter(|&c| id.is_none_or(|want| want == c))
        .filter(|&c| !(skipme && c == me))
        .collect();
    for &v in &victims {
        kill(x, v);
    }
    Reply::Integer(victims.len() as i64)
}

/// Has the server close client `id`: at once for another client, after
/// this reply for the client asking (as `QUIT`, and as in Redis).
fn kill(x: &mut Exec<'_>, id: u64) {
    match id == x.client.id() {
        true => x.client.quit = true,
        false => x.clients.kill(id),
    }
}
