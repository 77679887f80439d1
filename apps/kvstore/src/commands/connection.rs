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

/// `QUIT`: `+OK`, and the connection is marked for closing.
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
