//! Publish/subscribe commands: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE,
//! PUNSUBSCRIBE, PUBLISH and PUBSUB CHANNELS/NUMSUB/NUMPAT (see
//! [`crate::pubsub`] for who gets what). A client with subscriptions may
//! only run these, `PING` (answered `["pong", message]`), `QUIT` and
//! `RESET`, as in Redis's RESP2; a RESP3 client, whose messages arrive as
//! pushes apart from replies, may run anything, as in Redis.

use alloc::format;
use alloc::vec;
use alloc::vec::Vec;

use super::errors;
use super::exec::Exec;
use super::ClientCtx;
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

/// `SUBSCRIBE channel [channel ...]`.
pub(crate) fn subscribe(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let id = x.client.id();
    let replies = args[1..]
        .iter()
        .map(|channel| {
            x.pubsub.subscribe(id, channel);
            x.client.channels.insert(channel.clone());
            confirm("subscribe", Some(channel), x.client.subscriptions())
        })
        .collect();
    Reply::Sequence(replies)
}

/// `PSUBSCRIBE pattern [pattern ...]`.
pub(crate) fn psubscribe(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let id = x.client.id();
    let replies = args[1..]
        .iter()
        .map(|pattern| {
            x.pubsub.psubscribe(id, pattern);
            x.client.patterns.insert(pattern.clone());
            confirm("psubscribe", Some(pattern), x.client.subscriptions())
        })
        .collect();
    Reply::Sequence(replies)
}

/// `UNSUBSCRIBE [channel ...]`: the named channels, or all.
pub(crate) fn unsubscribe(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let id = x.client.id();
    let names: Vec<Vec<u8>> = match args.len() {
        1 => x.client.channels.iter().cloned().collect(),
        _ => args[1..].to_vec(),
    };
    if names.is_empty() {
        return confirm("unsubscribe", None, x.client.subscriptions());
    }
    let replies = names
        .iter()
        .map(|channel| {
            x.pubsub.unsubscribe(id, channel);
            x.client.channels.remove(channel);
            confirm("unsubscribe", Some(channel), x.client.subscriptions())
        })
        .collect();
    Reply::Sequence(replies)
}

/// `PUNSUBSCRIBE [pattern ...]`: the named patterns, or all.
pub(crate) fn punsubscribe(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let id = x.client.id();
    let names: Vec<Vec<u8>> = match args.len() {
        1 => x.client.patterns.iter().cloned().collect(),
        _ => args[1..].to_vec(),
    };
    if names.is_empty() {
        return confirm("punsubscribe", None, x.client.subscriptions());
    }
    let replies = names
        .iter()
        .map(|pattern| {
            x.pubsub.punsubscribe(id, pattern);
            x.client.patterns.remove(pattern);
            confirm("punsubscribe", Some(pattern), x.client.subscriptions())
        })
        .collect();
    Reply::Sequence(replies)
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
