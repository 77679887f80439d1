//! Publish/subscribe commands: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE,
//! PUNSUBSCRIBE, PUBLISH and PUBSUB CHANNELS/NUMSUB/NUMPAT (see
//! [`crate::pubsub`] for who gets what). A client with subscriptions may
//! only run these, `PING` (answered `["pong", message]`), `QUIT` and
//! `RESET`, as in Redis's RESP2; a RESP3 client, whose messages arrive as
//! pushes apart from replies, may run anything, as in Redis.

use alloc::collections::BTreeSet;
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;

use super::errors;
use super::exec::Exec;
use super::ClientCtx;
use crate::pubsub::PubSub;
use crate::resp::{Protocol, Reply};

/// The confirmation Redis sends per channel: `[kind, name, count]`, a
/// push in RESP3 like the messages that follow it.
fn confirm(kind: &str, name: Option<&[u8]>, count: usize) -> Reply {
    Reply::Push(vec![
        Reply::bulk(kind.as_bytes()),
        match name {
            Some(n) => Reply::bulk(n),
            None => Reply::nil(),
        },
        Reply::Integer(count as i64),
    ])
}

/// One of the two kinds of subscription: its commands' names, the
/// client's own list of them and the server's side of joining and leaving.
struct Kind {
    subscribe: &'static str,
    unsubscribe: &'static str,
    mine: fn(&mut ClientCtx) -> &mut BTreeSet<Vec<u8>>,
    join: fn(&mut PubSub, u64, &[u8]) -> bool,
    leave: fn(&mut PubSub, u64, &[u8]) -> bool,
}

fn my_channels(client: &mut ClientCtx) -> &mut BTreeSet<Vec<u8>> {
    &mut client.channels
}

fn my_patterns(client: &mut ClientCtx) -> &mut BTreeSet<Vec<u8>> {
    &mut client.patterns
}

/// Channels, named exactly.
const CHANNELS: Kind = Kind {
    subscribe: "subscribe",
    unsubscribe: "unsubscribe",
    mine: my_channels,
    join: PubSub::subscribe,
    leave: PubSub::unsubscribe,
};

/// Glob patterns over channel names.
const PATTERNS: Kind = Kind {
    subscribe: "psubscribe",
    unsubscribe: "punsubscribe",
    mine: my_patterns,
    join: PubSub::psubscribe,
    leave: PubSub::punsubscribe,
};

/// Subscribes to each name of `args` of `kind`, confirming each.
fn join(x: &mut Exec<'_>, args: &[Vec<u8>], kind: &Kind) -> Reply {
    let id = x.client.id();
    let replies = args[1..]
        .iter()
        .map(|name| {
            (kind.join)(x.pubsub, id, name);
            (kind.mine)(x.client).insert(name.clone());
            confirm(kind.subscribe, Some(name), x.client.subscriptions())
        })
        .collect();
    Reply::Sequence(replies)
}

/// Unsubscribes from each name of `args` of `kind`, or from all of that
/// kind without names, confirming each (once, with no name, if none).
fn leave(x: &mut Exec<'_>, args: &[Vec<u8>], kind: &Kind) -> Reply {
    let id = x.client.id();
    let names: Vec<Vec<u8>> = match args.len() {
        1 => (kind.mine)(x.client).iter().cloned().collect(),
        _ => args[1..].to_vec(),
    };
    if names.is_empty() {
        return confirm(kind.unsubscribe, None, x.client.subscriptions());
    }
    let replies = names
        .iter()
        .map(|name| {
            (kind.leave)(x.pubsub, id, name);
            (kind.mine)(x.client).remove(name);
            confirm(kind.unsubscribe, Some(name), x.client.subscriptions())
        })
        .collect();
    Reply::Sequence(replies)
}

/// `SUBSCRIBE channel [channel ...]`.
pub(crate) fn subscribe(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    join(x, args, &CHANNELS)
}

/// `PSUBSCRIBE pattern [pattern ...]`.
pub(crate) fn psubscribe(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    join(x, args, &PATTERNS)
}

/// `UNSUBSCRIBE [channel ...]`: the named channels, or all.
pub(crate) fn unsubscribe(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    leave(x, args, &CHANNELS)
}

/// `PUNSUBSCRIBE [pattern ...]`: the named patterns, or all.
pub(crate) fn punsubscribe(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    leave(x, args, &PATTERNS)
}

/// `PUBLISH channel message`: how many subscriptions received it.
pub(crate) fn publish(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    Reply::Integer(x.pubsub.publish(&args[1], &args[2]) as i64)
}

/// `PUBSUB CHANNELS [pattern]`.
pub(crate) fn channels(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    if args.len() > 3 {
        return errors::wrong_args(x.fullname);
    }
    let pattern = args.get(2).map(Vec::as_slice);
    let names = x.pubsub.active_channels(pattern);
    Reply::array(names.into_iter().map(Reply::bulk).collect())
}

/// `PUBSUB NUMSUB [channel ...]`: each channel and its subscribers.
pub(crate) fn numsub(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let mut items = Vec::new();
    for channel in &args[2..] {
        items.push(Reply::bulk(channel.as_slice()));
        items.push(Reply::Integer(x.pubsub.subscribers(channel) as i64));
    }
    Reply::array(items)
}

/// `PUBSUB NUMPAT`.
pub(crate) fn numpat(x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    Reply::Integer(x.pubsub.pattern_count() as i64)
}

/// A subscribed client's command that RESP2 does not allow, or its `PING`:
/// the reply to give instead of running the command (`None`: run it).
pub(crate) fn subscribed_gate(args: &[Vec<u8>], client: &ClientCtx) -> Option<Reply> {
    if client.subscriptions() == 0 || client.protocol() == Protocol::Resp3 {
        return None;
    }
    let name = args.first()?;
    let is = |n: &str| name.eq_ignore_ascii_case(n.as_bytes());
    if is("ping") {
        let message = args.get(1).cloned().unwrap_or_default();
        return Some(Reply::array(vec![
            Reply::bulk(&b"pong"[..]),
            Reply::bulk(message),
        ]));
    }
    let allowed = [
        "subscribe",
        "psubscribe",
        "unsubscribe",
        "punsubscribe",
        "quit",
        "reset",
    ];
    if allowed.iter().any(|n| is(n)) {
        return None;
    }
    Some(Reply::error(format!(
        "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
        alloc::string::String::from_utf8_lossy(name).to_lowercase()
    )))
}
