//! Publish/subscribe commands: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE,
//! PUNSUBSCRIBE, PUBLISH, their sharded forms SSUBSCRIBE, SUNSUBSCRIBE and
//! SPUBLISH, and PUBSUB CHANNELS/NUMSUB/NUMPAT/SHARDCHANNELS/SHARDNUMSUB
//! (see [`crate::pubsub`] for who gets what). A client with subscriptions
//! of any kind may only run the (un)subscribing commands, `PING`
//! (answered `["pong", message]`), `QUIT` and `RESET`, as in Redis's
//! RESP2; a RESP3 client, whose messages arrive as pushes apart from
//! replies, may run anything, as in Redis.

use alloc::collections::BTreeSet;
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;

use super::errors;
use super::exec::Exec;
use super::table;
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

/// One of the three kinds of subscription: its commands' names, the
/// client's own list of them, the count its confirmations tell, and the
/// server's side of joining and leaving.
struct Kind {
    subscribe: &'static str,
    unsubscribe: &'static str,
    mine: fn(&mut ClientCtx) -> &mut BTreeSet<Vec<u8>>,
    /// Redis counts channels and patterns together, shard channels apart.
    count: fn(&ClientCtx) -> usize,
    join: fn(&mut PubSub, u64, &[u8]) -> bool,
    leave: fn(&mut PubSub, u64, &[u8]) -> bool,
}

fn my_channels(client: &mut ClientCtx) -> &mut BTreeSet<Vec<u8>> {
    &mut client.channels
}

fn my_patterns(client: &mut ClientCtx) -> &mut BTreeSet<Vec<u8>> {
    &mut client.patterns
}

fn my_shard_channels(client: &mut ClientCtx) -> &mut BTreeSet<Vec<u8>> {
    &mut client.shard_channels
}

fn channels_and_patterns(client: &ClientCtx) -> usize {
    client.channels.len() + client.patterns.len()
}

fn shard_channels(client: &ClientCtx) -> usize {
    client.shard_channels.len()
}

/// Channels, named exactly.
const CHANNELS: Kind = Kind {
    subscribe: "subscribe",
    unsubscribe: "unsubscribe",
    mine: my_channels,
    count: channels_and_patterns,
    join: PubSub::subscribe,
    leave: PubSub::unsubscribe,
};

/// Glob patterns over channel names.
const PATTERNS: Kind = Kind {
    subscribe: "psubscribe",
    unsubscribe: "punsubscribe",
    mine: my_patterns,
    count: channels_and_patterns,
    join: PubSub::psubscribe,
    leave: PubSub::punsubscribe,
};

/// Shard channels (Redis 7's sharded pub/sub), named exactly.
const SHARD_CHANNELS: Kind = Kind {
    subscribe: "ssubscribe",
    unsubscribe: "sunsubscribe",
    mine: my_shard_channels,
    count: shard_channels,
    join: PubSub::ssubscribe,
    leave: PubSub::sunsubscribe,
};

/// Subscribes to each name of `args` of `kind`, confirming each.
fn join(x: &mut Exec<'_>, args: &[Vec<u8>], kind: &Kind) -> Reply {
    let id = x.client.id();
    let replies = args[1..]
        .iter()
        .map(|name| {
            (kind.join)(x.pubsub, id, name);
            (kind.mine)(x.client).insert(name.clone());
            confirm(kind.subscribe, Some(name), (kind.count)(x.client))
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
        return confirm(kind.unsubscribe, None, (kind.count)(x.client));
    }
    let replies = names
        .iter()
        .map(|name| {
            (kind.leave)(x.pubsub, id, name);
            (kind.mine)(x.client).remove(name);
            confirm(kind.unsubscribe, Some(name), (kind.count)(x.client))
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

/// `SSUBSCRIBE shardchannel [shardchannel ...]`. Refused where a reply
/// per command is expected (inside `EXEC`), as Redis refuses it to a
/// client that may not block; `SUBSCRIBE` runs there, as in Redis.
pub(crate) fn ssubscribe(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    if !x.may_block {
        return Reply::error("ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client");
    }
    join(x, args, &SHARD_CHANNELS)
}

/// `SUNSUBSCRIBE [shardchannel ...]`: the named shard channels, or all.
pub(crate) fn sunsubscribe(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    leave(x, args, &SHARD_CHANNELS)
}

/// `PUBLISH channel message`: how many subscriptions received it.
pub(crate) fn publish(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    Reply::Integer(x.pubsub.publish(&args[1], &args[2]) as i64)
}

/// `SPUBLISH shardchannel message`: how many shard subscribers received it.
pub(crate) fn spublish(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    Reply::Integer(x.pubsub.spublish(&args[1], &args[2]) as i64)
}

/// The channels of one kind with subscribers, matching a pattern if given
/// ([`PubSub::active_channels`], [`PubSub::active_shard_channels`]).
type Active = fn(&PubSub, Option<&[u8]>) -> Vec<Vec<u8>>;

/// `PUBSUB CHANNELS|SHARDCHANNELS [pattern]`: the names `active` gives;
/// more than one pattern is refused as Redis words it.
fn list_channels(x: &mut Exec<'_>, args: &[Vec<u8>], active: Active) -> Reply {
    if args.len() > 3 {
        return Reply::Error(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try PUBSUB HELP.",
            errors::lossy(&args[1])
        ));
    }
    let pattern = args.get(2).map(Vec::as_slice);
    let names = active(x.pubsub, pattern);
    Reply::array(names.into_iter().map(Reply::bulk).collect())
}

/// `PUBSUB NUMSUB|SHARDNUMSUB [channel ...]`: each channel and the count
/// `subscribers` gives.
fn count_subscribers(
    x: &mut Exec<'_>,
    args: &[Vec<u8>],
    subscribers: fn(&PubSub, &[u8]) -> usize,
) -> Reply {
    let mut items = Vec::new();
    for channel in &args[2..] {
        items.push(Reply::bulk(channel.as_slice()));
        items.push(Reply::Integer(subscribers(x.pubsub, channel) as i64));
    }
    Reply::array(items)
}

/// `PUBSUB CHANNELS [pattern]`.
pub(crate) fn channels(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    list_channels(x, args, PubSub::active_channels)
}

/// `PUBSUB SHARDCHANNELS [pattern]`.
pub(crate) fn shardchannels(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    list_channels(x, args, PubSub::active_shard_channels)
}

/// `PUBSUB NUMSUB [channel ...]`: each channel and its subscribers.
pub(crate) fn numsub(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    count_subscribers(x, args, PubSub::subscribers)
}

/// `PUBSUB SHARDNUMSUB [shardchannel ...]`: each shard channel and its
/// subscribers.
pub(crate) fn shardnumsub(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    count_subscribers(x, args, PubSub::shard_subscribers)
}

/// `PUBSUB NUMPAT`.
pub(crate) fn numpat(x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    Reply::Integer(x.pubsub.pattern_count() as i64)
}

/// A subscribed client's command that RESP2 does not allow, or its `PING`:
/// the reply to give instead of running the command (`None`: run it). An
/// unknown command, or one with the wrong number of arguments, runs to
/// get its own error, as Redis checks those first.
pub(crate) fn subscribed_gate(args: &[Vec<u8>], client: &ClientCtx) -> Option<Reply> {
    if client.subscriptions() == 0 || client.protocol() == Protocol::Resp3 {
        return None;
    }
    let mut spec = table::lookup(args.first()?)?;
    if !spec.subcommands.is_empty() {
        spec = spec.subcommand(args.get(1)?)?;
    }
    if !spec.arity_ok(args.len()) {
        return None;
    }
    match spec.name {
        "ping" => match args {
            [_] => Some(pong(Vec::new())),
            [_, message] => Some(pong(message.clone())),
            _ => None,
        },
        "subscribe" | "psubscribe" | "ssubscribe" | "unsubscribe" | "punsubscribe"
        | "sunsubscribe" | "quit" | "reset" => None,
        name => Some(Reply::error(format!(
            "ERR Can't execute '{name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
        ))),
    }
}

/// A subscribed RESP2 client's `PING`: `["pong", message]`.
fn pong(message: Vec<u8>) -> Reply {
    Reply::array(vec![Reply::bulk(&b"pong"[..]), Reply::bulk(message)])
}
