//! Publish/subscribe: who listens to which channels, patterns and shard
//! channels, and the messages a `PUBLISH` or `SPUBLISH` leaves for them.
//! The engine keeps one [`PubSub`]; the server takes the messages after
//! each command and appends them to the subscribers' outputs (each message
//! is a complete RESP reply).
//!
//! ```text
//!  SUBSCRIBE news        → channels["news"] ∋ client 7
//!  PSUBSCRIBE n*         → patterns["n*"]   ∋ client 9
//!  SSUBSCRIBE news       → shard_channels["news"] ∋ client 5
//!  PUBLISH news hi  → 2  → outbox: (7, *3 message news hi)
//!                                  (9, *4 pmessage n* news hi)
//!  SPUBLISH news hi → 1  → outbox: (5, *3 smessage news hi)
//!  server: take_messages() → each subscriber's output
//! ```
//!
//! Shard channels are Redis 7's sharded pub/sub: a namespace of their own,
//! which patterns do not see. Redis keeps them per cluster shard; this
//! server is one shard, so every shard channel lives here.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec::Vec;

use crate::glob::matches as glob_match;
use crate::resp::Reply;

/// Subscriptions of every client, and messages not yet delivered.
#[derive(Debug, Default)]
pub struct PubSub {
    channels: BTreeMap<Vec<u8>, BTreeSet<u64>>,
    patterns: BTreeMap<Vec<u8>, BTreeSet<u64>>,
    /// Shard channels (`SSUBSCRIBE`), apart from the others.
    shard_channels: BTreeMap<Vec<u8>, BTreeSet<u64>>,
    /// Clients that said `MONITOR` (see `kvstore::monitor`).
    monitors: BTreeSet<u64>,
    outbox: Vec<(u64, Vec<u8>)>,
}

/// Adds `client` to the listeners of `name` in `map`; whether it was new.
fn add(map: &mut BTreeMap<Vec<u8>, BTreeSet<u64>>, name: &[u8], client: u64) -> bool {
    map.entry(name.to_vec()).or_default().insert(client)
}

/// A set of client ids under a name; the name's entry goes when empty.
fn remove(map: &mut BTreeMap<Vec<u8>, BTreeSet<u64>>, name: &[u8], client: u64) -> bool {
    let Some(set) = map.get_mut(name) else {
        return false;
    };
    let removed = set.remove(&client);
    if set.is_empty() {
        map.remove(name);
    }
    removed
}

/// Leaves the message `parts` for each of `clients` in `outbox`; how many.
fn deliver(outbox: &mut Vec<(u64, Vec<u8>)>, clients: &BTreeSet<u64>, parts: &[&[u8]]) -> usize {
    let bytes = Reply::array(parts.iter().map(|&p| Reply::bulk(p)).collect()).to_bytes();
    for &c in clients {
        outbox.push((c, bytes.clone()));
    }
    clients.len()
}

/// The names in `map`, matching `pattern` if given.
fn names(map: &BTreeMap<Vec<u8>, BTreeSet<u64>>, pattern: Option<&[u8]>) -> Vec<Vec<u8>> {
    map.keys()
        .filter(|c| pattern.is_none_or(|p| glob_match(p, c)))
        .cloned()
        .collect()
}

/// How many listen to `name` in `map`.
fn listeners(map: &BTreeMap<Vec<u8>, BTreeSet<u64>>, name: &[u8]) -> usize {
    map.get(name).map_or(0, BTreeSet::len)
}

impl PubSub {
    /// `client` listens to `channel`; whether it was new.
    pub fn subscribe(&mut self, client: u64, channel: &[u8]) -> bool {
        add(&mut self.channels, channel, client)
    }

    /// `client` stops listening to `channel`; whether it did.
    pub fn unsubscribe(&mut self, client: u64, channel: &[u8]) -> bool {
        remove(&mut self.channels, channel, client)
    }

    /// `client` listens to channels matching `pattern`; whether it was new.
    pub fn psubscribe(&mut self, client: u64, pattern: &[u8]) -> bool {
        add(&mut self.patterns, pattern, client)
    }

    /// `client` stops listening to `pattern`; whether it did.
    pub fn punsubscribe(&mut self, client: u64, pattern: &[u8]) -> bool {
        remove(&mut self.patterns, pattern, client)
    }

    /// `client` listens to the shard channel `channel`; whether it was new.
    pub fn ssubscribe(&mut self, client: u64, channel: &[u8]) -> bool {
        add(&mut self.shard_channels, channel, client)
    }

    /// `client` stops listening to the shard channel `channel`; whether it did.
    pub fn sunsubscribe(&mut self, client: u64, channel: &[u8]) -> bool {
        remove(&mut self.shard_channels, channel, client)
    }

    /// Leaves `message` on `channel` for every listener (once per
    /// subscription, as Redis counts); how many receive it.
    pub fn publish(&mut self, channel: &[u8], message: &[u8]) -> usize {
        let mut receivers = 0;
        if let Some(clients) = self.channels.get(channel) {
            receivers += deliver(&mut self.outbox, clients, &[b"message", channel, message]);
        }
        for (pattern, clients) in &self.patterns {
            if glob_match(pattern, channel) {
                let parts: [&[u8]; 4] = [b"pmessage", pattern, channel, message];
                receivers += deliver(&mut self.outbox, clients, &parts);
            }
        }
        receivers
    }

    /// Leaves `message` on the shard channel `channel` for its listeners
    /// (patterns do not see shard channels); how many receive it.
    pub fn spublish(&mut self, channel: &[u8], message: &[u8]) -> usize {
        match self.shard_channels.get(channel) {
            Some(clients) => deliver(&mut self.outbox, clients, &[b"smessage", channel, message]),
            None => 0,
        }
    }

    /// `client` receives a line for every command run from now on.
    pub fn monitor(&mut self, client: u64) {
        self.monitors.insert(client);
    }

    /// Whether any client monitors (so that lines are worth making).
    pub fn has_monitors(&self) -> bool {
        !self.monitors.is_empty()
    }

    /// Leaves `line` (a complete RESP reply) for every monitor.
    pub fn feed_monitors(&mut self, line: &[u8]) {
        for &c in &self.monitors {
            self.outbox.push((c, line.to_vec()));
        }
    }

    /// The channels, patterns and shard channels `client` is subscribed
    /// to (for ACL: who loses a permission is disconnected).
    pub fn subscriptions_of(&self, client: u64) -> [Vec<Vec<u8>>; 3] {
        let of = |map: &BTreeMap<Vec<u8>, BTreeSet<u64>>| {
            map.iter()
                .filter(|(_, ids)| ids.contains(&client))
                .map(|(name, _)| name.clone())
                .collect()
        };
        [
            of(&self.channels),
            of(&self.patterns),
            of(&self.shard_channels),
        ]
    }

    /// Forgets every subscription of `client` and its monitoring (it
    /// disconnected, or said `RESET`).
    pub fn forget(&mut self, client: u64) {
        self.monitors.remove(&client);
        for map in [
            &mut self.channels,
            &mut self.patterns,
            &mut self.shard_channels,
        ] {
            map.retain(|_, set| {
                set.remove(&client);
                !set.is_empty()
            });
        }
        self.outbox.retain(|(c, _)| *c != client);
    }

    /// How many messages wait for delivery: a mark for [`move_back`](PubSub::move_back).
    pub fn pending(&self) -> usize {
        self.outbox.len()
    }

    /// Moves the messages published since mark `from` back to mark `to`
    /// (an earlier one), ahead of those published in between.
    pub fn move_back(&mut self, from: usize, to: usize) {
        if to < from && from <= self.outbox.len() {
            let moved = self.outbox.len() - from;
            self.outbox[to..].rotate_right(moved);
        }
    }

    /// The messages published since the last call: (client, RESP bytes).
    pub fn take_messages(&mut self) -> Vec<(u64, Vec<u8>)> {
        core::mem::take(&mut self.outbox)
    }

    /// Channels with at least one subscriber, matching `pattern` if given.
    pub fn active_channels(&self, pattern: Option<&[u8]>) -> Vec<Vec<u8>> {
        names(&self.channels, pattern)
    }

    /// Subscribers of `channel` (patterns not counted, as in Redis).
    pub fn subscribers(&self, channel: &[u8]) -> usize {
        listeners(&self.channels, channel)
    }

    /// Shard channels with at least one subscriber, matching `pattern` if
    /// given.
    pub fn active_shard_channels(&self, pattern: Option<&[u8]>) -> Vec<Vec<u8>> {
        names(&self.shard_channels, pattern)
    }

    /// Subscribers of the shard channel `channel`.
    pub fn shard_subscribers(&self, channel: &[u8]) -> usize {
        listeners(&self.shard_channels, channel)
    }

    /// Patterns subscribed to, by anyone.
    pub fn pattern_count(&self) -> usize {
        self.patterns.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_reaches_channel_and_pattern_subscribers_once_each() {
        let mut ps = PubSub::default();
        assert!(ps.subscribe(7, b"news"));
        assert!(!ps.subscribe(7, b"news"), "already subscribed");
        assert!(ps.psubscribe(9, b"n*"));
        assert!(ps.psubscribe(7, b"x*"));
        assert_eq!(ps.publish(b"news", b"hi"), 2);
        let got = ps.take_messages();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].0, 7);
        assert_eq!(
            got[0].1,
            b"*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$2\r\nhi\r\n"
        );
        assert_eq!(got[1].0, 9);
        assert_eq!(
            got[1].1,
            b"*4\r\n$8\r\npmessage\r\n$2\r\nn*\r\n$4\r\nnews\r\n$2\r\nhi\r\n"
        );
        assert!(ps.take_messages().is_empty());
        assert_eq!(ps.publish(b"weather", b"rain"), 0);
    }

    #[test]
    fn introspection_and_a_departing_client() {
        let mut ps = PubSub::default();
        ps.subscribe(1, b"a");
        ps.subscribe(2, b"a");
        ps.subscribe(2, b"b");
        ps.psubscribe(2, b"*");
        assert_eq!(ps.active_channels(None), vec![b"a".to_vec(), b"b".to_vec()]);
        assert_eq!(ps.active_channels(Some(b"b*")), vec![b"b".to_vec()]);
        assert_eq!((ps.subscribers(b"a"), ps.pattern_count()), (2, 1));
        ps.publish(b"a", b"x");
        ps.forget(2);
        assert_eq!(ps.take_messages().len(), 1, "2's pending messages go too");
        assert_eq!((ps.subscribers(b"a"), ps.pattern_count()), (1, 0));
        assert_eq!(ps.active_channels(None), vec![b"a".to_vec()]);
        assert!(ps.unsubscribe(1, b"a"));
        assert!(!ps.unsubscribe(1, b"a"));
        assert!(ps.active_channels(None).is_empty());
    }

    #[test]
    fn shard_channels_are_a_namespace_of_their_own() {
        let mut ps = PubSub::default();
        assert!(ps.ssubscribe(5, b"news"));
        assert!(!ps.ssubscribe(5, b"news"), "already subscribed");
        ps.ssubscribe(6, b"news");
        ps.ssubscribe(6, b"sport");
        ps.subscribe(7, b"news");
        ps.psubscribe(9, b"*");
        assert_eq!(ps.spublish(b"news", b"hi"), 2, "patterns do not see it");
        let got = ps.take_messages();
        assert_eq!(got.iter().map(|(c, _)| *c).collect::<Vec<_>>(), vec![5, 6]);
        assert_eq!(
            got[0].1,
            b"*3\r\n$8\r\nsmessage\r\n$4\r\nnews\r\n$2\r\nhi\r\n"
        );
        assert_eq!(ps.publish(b"news", b"hi"), 2, "channel 7 and pattern 9");
        ps.take_messages();
        assert_eq!(
            ps.active_shard_channels(Some(b"s*")),
            vec![b"sport".to_vec()]
        );
        assert_eq!(
            (ps.shard_subscribers(b"news"), ps.subscribers(b"news")),
            (2, 1)
        );
        ps.spublish(b"sport", b"x");
        ps.forget(6);
        assert!(ps.take_messages().is_empty(), "6's pending messages go too");
        assert_eq!(ps.active_shard_channels(None), vec![b"news".to_vec()]);
        assert!(ps.sunsubscribe(5, b"news"));
        assert!(!ps.sunsubscribe(5, b"news"));
        assert_eq!(ps.spublish(b"news", b"hi"), 0);
    }
}
