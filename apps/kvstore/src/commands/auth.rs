//! Authentication: `AUTH` and `HELLO`, and the rule that while the
//! `default` user has a password (`requirepass`) or is off, a client
//! answers nothing else before it logs in.
//!
//! A client logs in as an ACL user (see `kvstore::acl`); a failed attempt
//! is logged in `ACL LOG`. A connection already in stays so when a
//! password is set later, as in Redis.

use alloc::vec;
use alloc::vec::Vec;

use super::exec::Exec;
use super::{errors, REDIS_VERSION};
use crate::acl::log::{Context, Reason};
use crate::num::parse_i64;
use crate::resp::{Protocol, Reply};

/// Commands a client may send before authenticating.
pub(crate) const BEFORE_AUTH: &[&str] = &["auth", "hello", "quit"];

/// `-NOAUTH Authentication required.`
pub(crate) fn noauth() -> Reply {
    Reply::error("NOAUTH Authentication required.")
}

fn wrongpass() -> Reply {
    Reply::error("WRONGPASS invalid username-password pair or user is disabled.")
}

/// Checks `user`/`password` against the ACL users; logs the client in as
/// `user` on success, logs the refusal in `ACL LOG` on failure.
fn check(x: &mut Exec<'_>, user: &[u8], password: &[u8]) -> Result<(), Reply> {
    if !x.acl.accepts(user, password) {
        let line = super::acl_check::client_line(x.clients, x.tracking, x.client.id(), x.now);
        let context = match x.client.multi {
            Some(_) => Context::Multi,
            None => Context::Toplevel,
        };
        let max_len = x.config.acllog_max_len;
        super::acl_check::log_refusal(
            x.acl,
            max_len,
            Reason::Auth,
            context,
            b"AUTH",
            user,
            line,
            x.now,
        );
        return Err(wrongpass());
    }
    x.client.authenticated = true;
    x.client.user = user.to_vec();
    Ok(())
}

/// `AUTH password` or `AUTH username password`.
pub(crate) fn auth(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let (user, password): (&[u8], &[u8]) = match &*args {
        [_, password] => (b"default", password),
        [_, user, password] => (user, password),
        _ => return errors::syntax(),
    };
    let default_nopass = x
        .acl
        .user(crate::acl::DEFAULT_USER)
        .is_some_and(|u| u.nopass);
    if default_nopass && args.len() == 2 {
        return Reply::error(
            "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?",
        );
    }
    match check(x, user, password) {
        Ok(()) => Reply::ok(),
        Err(e) => e,
    }
}

/// `HELLO [protover [AUTH username password] [SETNAME name]]`: switches
/// the connection to RESP2 or RESP3 (before the reply, which is in the new
/// protocol), and describes the server as a map: a flat array in RESP2.
pub(crate) fn hello(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let mut protocol = None;
    if let Some(version) = args.get(1) {
        match parse_i64(version) {
            Some(2) => protocol = Some(Protocol::Resp2),
            Some(3) => protocol = Some(Protocol::Resp3),
            Some(_) => return Reply::error("NOPROTO unsupported protocol version"),
            None => return Reply::error("ERR Protocol version is not an integer or out of range"),
        }
    }
    let mut name = None;
    let mut i = 2;
    while i < args.len() {
        let option = args[i].to_ascii_lowercase();
        match option.as_slice() {
            b"auth" if i + 2 < args.len() => {
                if let Err(e) = check(x, &args[i + 1], &args[i + 2]) {
                    return e;
                }
                i += 3;
            }
            b"setname" if i + 1 < args.len() => {
                name = Some(args[i + 1].clone());
                i += 2;
            }
            _ => {
                return Reply::Error(alloc::format!(
                    "ERR Syntax error in HELLO option '{}'",
                    alloc::string::String::from_utf8_lossy(&args[i])
                ))
            }
        }
    }
    if x.acl.auth_required() && !x.client.authenticated {
        return Reply::error(
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time",
        );
    }
    if let Some(name) = name {
        // The rule of CLIENT SETNAME.
        if !name.iter().all(|b| (b'!'..=b'~').contains(b)) {
            return Reply::error(
                "ERR Client names cannot contain spaces, newlines or special characters.",
            );
        }
        x.client.name = (!name.is_empty()).then_some(name);
    }
    if let Some(protocol) = protocol {
        x.client.protocol = protocol;
    }
    let text = |s: &str| Reply::bulk(s.as_bytes());
    Reply::Map(vec![
        text("server"),
        text("redis"),
        text("version"),
        text(REDIS_VERSION),
        text("proto"),
        Reply::Integer(x.client.protocol.version()),
        text("id"),
        Reply::Integer(i64::try_from(x.client.id()).unwrap_or(i64::MAX)),
        text("mode"),
        text("standalone"),
        text("role"),
        text("master"),
        text("modules"),
        Reply::array(Vec::new()),
    ])
}
