//! `CLIENT TRACKING`, `CLIENT CACHING`, `CLIENT GETREDIR` and `CLIENT
//! TRACKINGINFO`: the commands of client-side caching (the state and its
//! rules live in `kvstore::tracking`), with Redis 7.0's replies.

use alloc::vec::Vec;

use super::errors;
use super::exec::Exec;
use crate::num::parse_i64;
use crate::resp::Reply;
use crate::tracking::Mode;

/// `CLIENT TRACKING on|off [REDIRECT id] [PREFIX p ...] [BCAST] [OPTIN]
/// [OPTOUT] [NOLOOP]`.
pub(crate) fn client_tracking(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let mut mode = Mode::default();
    let mut prefixes = Vec::new();
    let mut i = 3;
    while i < args.len() {
        let word = args[i].to_ascii_lowercase();
        let more = i + 1 < args.len();
        match word.as_slice() {
            b"redirect" if more => {
                i += 1;
                if mode.redirect != 0 {
                    return Reply::error("ERR A client can only redirect to a single other client");
                }
                let Some(id) = parse_i64(&args[i]) else {
                    return errors::not_integer();
                };
                let known = u64::try_from(id)
                    .ok()
                    .filter(|&id| x.clients.get(id).is_some());
                let Some(id) = known else {
                    return Reply::error("ERR The client ID you want redirect to does not exist");
                };
                mode.redirect = id;
            }
            b"bcast" => mode.bcast = true,
            b"optin" => mode.optin = true,
            b"optout" => mode.optout = true,
            b"noloop" => mode.noloop = true,
            b"prefix" if more => {
                i += 1;
                prefixes.push(args[i].clone());
            }
            _ => return errors::syntax(),
        }
        i += 1;
    }
    let id = x.client.id();
    match args[2].to_ascii_lowercase().as_slice() {
        b"on" => match x.tracking.enable(id, mode, &prefixes) {
            Ok(()) => Reply::ok(),
            Err(text) => Reply::error(alloc::format!("ERR {text}")),
        },
        b"off" => {
            x.tracking.disable(id);
            Reply::ok()
        }
        _ => errors::syntax(),
    }
}

/// `CLIENT CACHING yes|no`: whether the next command's reads are tracked
/// (OPTIN/OPTOUT modes).
pub(crate) fn client_caching(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let id = x.client.id();
    if !x.tracking.is_on(id) {
        // Checked before the argument, as in Redis.
        return Reply::error(
            "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled",
        );
    }
    let yes = match args[2].to_ascii_lowercase().as_slice() {
        b"yes" => true,
        b"no" => false,
        _ => return errors::syntax(),
    };
    match x.tracking.caching(id, yes) {
        Ok(()) => Reply::ok(),
        Err(text) => Reply::error(alloc::format!("ERR {text}")),
    }
}

/// `CLIENT GETREDIR`: the redirect target, 0 without one, -1 when off.
pub(crate) fn client_getredir(x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    Reply::Integer(x.tracking.redirect(x.client.id()))
}

/// `CLIENT TRACKINGINFO`: flags (a set), redirect and prefixes.
pub(crate) fn client_trackinginfo(x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    let id = x.client.id();
    let flags = x.tracking.flags(id).into_iter().map(Reply::bulk).collect();
    let prefixes = x
        .tracking
        .prefixes_of(id)
        .into_iter()
        .map(Reply::bulk)
        .collect();
    Reply::fields([
        ("flags", Reply::Set(flags)),
        ("redirect", Reply::Integer(x.tracking.redirect(id))),
        ("prefixes", Reply::array(prefixes)),
    ])
}
