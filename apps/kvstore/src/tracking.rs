//! Client-side caching (`CLIENT TRACKING`): which client may cache which
//! key, and the invalidation messages a change to a key leaves for them,
//! as Redis 7.0 sends them.
//!
//! ```text
//!  default mode: GET k by client 7  → table["k"] ∋ 7
//!                SET k (anyone)     → outbox: (7, invalidate [k]); "k" leaves the table
//!  BCAST:        PREFIX "a:" by 9   → prefixes["a:"] ∋ 9
//!                SET a:1            → prefixes["a:"].pending ∋ a:1
//!                end of the pass    → outbox: (9, invalidate [a:1 ...])
//!  FLUSHALL/DB                      → (every tracking client, invalidate nil)
//!  take(exists): REDIRECT 12 → the message goes to 12, or, 12 gone,
//!                (7, tracking-redir-broken 12)
//! ```
//!
//! The engine calls [`Tracking::invalidate`] from its one "key changed"
//! path, the keyspace-notification hook (`Exec::notify_in`), and from
//! expiry and eviction; the server delivers what [`Tracking::take`]
//! returns through each target's session, which encodes it for the
//! target's protocol (see `Session::push_tracking`). As in Redis, the
//! table keeps the ids of clients that turned tracking off (they are
//! skipped when a key changes), and keys are not told apart by database.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec::Vec;

/// The options of `CLIENT TRACKING on`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mode {
    /// `REDIRECT id`: messages go to this client (0: to the client itself).
    pub redirect: u64,
    /// `BCAST`: told about every key under its prefixes, read or not.
    pub bcast: bool,
    /// `OPTIN`: only keys read right after `CLIENT CACHING yes` are tracked.
    pub optin: bool,
    /// `OPTOUT`: keys read right after `CLIENT CACHING no` are not tracked.
    pub optout: bool,
    /// `NOLOOP`: not told about its own changes.
    pub noloop: bool,
}

/// One tracking client.
#[derive(Clone, Debug, Default)]
struct Client {
    mode: Mode,
    /// `CLIENT CACHING yes|no` for the next command.
    caching: bool,
    /// Its redirect target went away.
    broken: bool,
    /// Its BCAST prefixes.
    prefixes: BTreeSet<Vec<u8>>,
}

/// One BCAST prefix: its clients, and the keys under it changed since the
/// last [`Tracking::take`], each with the client that changed it first.
#[derive(Clone, Debug, Default)]
struct Prefix {
    clients: BTreeSet<u64>,
    pending: BTreeMap<Vec<u8>, Option<u64>>,
}

/// A message for one client, which its session encodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Push {
    /// `invalidate` with these keys, or nil (`None`: everything, after a
    /// flush). `redirected`: sent on behalf of another client (a RESP2
    /// target receives it only as a `__redis__:invalidate` message, and
    /// only while subscribed).
    Invalidate {
        /// The keys, or `None` for all of them.
        keys: Option<Vec<Vec<u8>>>,
        /// Whether it reaches the client through another's `REDIRECT`.
        redirected: bool,
    },
    /// The client's redirect target (this id) is gone (RESP3 only).
    RedirBroken(u64),
}

/// Every tracking client, the keys they read, and the messages not yet
/// delivered (see the module's diagram).
#[derive(Debug, Default)]
pub struct Tracking {
    clients: BTreeMap<u64, Client>,
    table: BTreeMap<Vec<u8>, BTreeSet<u64>>,
    prefixes: BTreeMap<Vec<u8>, Prefix>,
    /// (tracking client, message) before redirection.
    outbox: Vec<(u64, Push)>,
}

/// Why `CLIENT TRACKING on` was refused: Redis 7.0's error text.
pub type Refusal = alloc::string::String;

impl Tracking {
    /// `CLIENT TRACKING on` for `client` with `mode` and BCAST `prefixes`;
    /// the error Redis gives for incompatible options.
    pub fn enable(&mut self, client: u64, mode: Mode, prefixes: &[Vec<u8>]) -> Result<(), Refusal> {
        if !mode.bcast && !prefixes.is_empty() {
            return Err("PREFIX option requires BCAST mode to be enabled".into());
        }
        let old = self.clients.get(&client);
        if old.is_some_and(|c| c.mode.bcast != mode.bcast) {
            return Err("You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.".into());
        }
        if mode.bcast && (mode.optin || mode.optout) {
            return Err("OPTIN and OPTOUT are not compatible with BCAST".into());
        }
        if mode.optin && mode.optout {
            return Err("You can't specify both OPTIN mode and OPTOUT mode".into());
        }
        if old.is_some_and(|c| (mode.optin && c.mode.optout) || (mode.optout && c.mode.optin)) {
            return Err("You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.".into());
        }
        if mode.bcast {
            check_prefixes(old.map(|c| &c.prefixes), prefixes)?;
        }
        let entry = self.clients.entry(client).or_default();
        entry.mode = mode;
        entry.broken = false;
        if entry.mode.bcast {
            let new: Vec<Vec<u8>> = match prefixes.is_empty() {
                true => alloc::vec![Vec::new()],
                false => prefixes.to_vec(),
            };
            for p in new {
                self.prefixes
                    .entry(p.clone())
                    .or_default()
                    .clients
                    .insert(client);
                entry.prefixes.insert(p);
            }
        }
        Ok(())
    }

    /// `CLIENT TRACKING off`, or the client went away: it is told nothing
    /// more (its ids in the table are skipped from now on).
    pub fn disable(&mut self, client: u64) {
        if let Some(c) = self.clients.remove(&client) {
            for p in c.prefixes {
                if let Some(state) = self.prefixes.get_mut(&p) {
                    state.clients.remove(&client);
                    if state.clients.is_empty() {
                        self.prefixes.remove(&p);
                    }
                }
            }
        }
        self.outbox.retain(|(c, _)| *c != client);
    }

    /// Whether `client` tracks keys.
    pub fn is_on(&self, client: u64) -> bool {
        self.clients.contains_key(&client)
    }

    /// Whether any client tracks keys (so that changes are worth looking at).
    pub fn any(&self) -> bool {
        !self.clients.is_empty()
    }

    /// `CLIENT CACHING yes|no`: `Err` with Redis's text when the mode does
    /// not allow it.
    pub fn caching(&mut self, client: u64, yes: bool) -> Result<(), &'static str> {
        let Some(c) = self.clients.get_mut(&client) else {
            return Err("CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled");
        };
        match yes {
            true if !c.mode.optin => {
                Err("CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
            }
            false if !c.mode.optout => {
                Err("CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
            }
            _ => {
                c.caching = true;
                Ok(())
            }
        }
    }

    /// A command other than `CLIENT ...` ran outside a transaction: a
    /// `CLIENT CACHING` is spent.
    pub fn command_done(&mut self, client: u64) {
        if let Some(c) = self.clients.get_mut(&client) {
            c.caching = false;
        }
    }

    /// `client` read `keys`: remembered if it tracks them (default mode,
    /// and OPTIN/OPTOUT allow it).
    pub fn remember<'k>(&mut self, client: u64, keys: impl Iterator<Item = &'k [u8]>) {
        let Some(c) = self.clients.get(&client) else {
            return;
        };
        // OPTIN tracks only after CACHING yes, OPTOUT all but after CACHING no.
        let skipped = match (c.mode.optin, c.mode.optout) {
            (true, _) => !c.caching,
            (_, true) => c.caching,
            _ => false,
        };
        if c.mode.bcast || skipped {
            return;
        }
        for key in keys {
            match self.table.get_mut(key) {
                Some(set) => {
                    set.insert(client);
                }
                None => {
                    self.table.insert(key.to_vec(), BTreeSet::from([client]));
                }
            }
        }
    }

    /// `key` changed (written, deleted, expired, evicted) by client
    /// `modifier` (`None`: by the server itself): its readers are told,
    /// and it is noted for the BCAST prefixes it is under.
    pub fn invalidate(&mut self, key: &[u8], modifier: Option<u64>) {
        if self.clients.is_empty() && self.table.is_empty() {
            return;
        }
        for (prefix, state) in self.prefixes.iter_mut() {
            if key.starts_with(prefix) {
                state.pending.entry(key.to_vec()).or_insert(modifier);
            }
        }
        self.tell_readers(key, modifier);
    }

    /// Takes `key` out of the table and tells the clients that read it
    /// (not those in BCAST mode, nor `modifier` itself under NOLOOP).
    fn tell_readers(&mut self, key: &[u8], modifier: Option<u64>) {
        let Some(readers) = self.table.remove(key) else {
            return;
        };
        for id in readers {
            let Some(c) = self.clients.get(&id) else {
                continue;
            };
            if c.mode.bcast || (c.mode.noloop && modifier == Some(id)) {
                continue;
            }
            let keys = Some(alloc::vec![key.to_vec()]);
            self.outbox.push((
                id,
                Push::Invalidate {
                    keys,
                    redirected: false,
                },
            ));
        }
    }

    /// `FLUSHALL`/`FLUSHDB`: every tracking client is told "all keys"
    /// (nil), and the table is emptied.
    pub fn flushed(&mut self) {
        for &id in self.clients.keys() {
            self.outbox.push((
                id,
                Push::Invalidate {
                    keys: None,
                    redirected: false,
                },
            ));
        }
        self.table.clear();
    }

    /// Keeps the table at most `max_keys` keys long
    /// (`tracking-table-max-keys`; 0: no limit): the keys over it are
    /// forgotten, their readers told as if they changed.
    pub fn limit(&mut self, max_keys: u64) {
        let max = usize::try_from(max_keys).unwrap_or(usize::MAX);
        while max > 0 && self.table.len() > max {
            let Some(key) = self.table.keys().next().cloned() else {
                break;
            };
            // Forgotten, not changed: the BCAST prefixes hear nothing.
            self.tell_readers(&key, None);
        }
    }

    /// The messages to deliver now: (client, message), the BCAST ones of
    /// this pass included, after redirection; `exists` says whether a
    /// client is still connected.
    pub fn take(&mut self, exists: impl Fn(u64) -> bool) -> Vec<(u64, Push)> {
        for state in self.prefixes.values_mut() {
            if state.pending.is_empty() {
                continue;
            }
            let pending = core::mem::take(&mut state.pending);
            for &id in &state.clients {
                let noloop = self.clients.get(&id).is_some_and(|c| c.mode.noloop);
                let keys: Vec<Vec<u8>> = pending
                    .iter()
                    .filter(|(_, by)| !(noloop && **by == Some(id)))
                    .map(|(k, _)| k.clone())
                    .collect();
                if !keys.is_empty() {
                    let keys = Some(keys);
                    self.outbox.push((
                        id,
                        Push::Invalidate {
                            keys,
                            redirected: false,
                        },
                    ));
                }
            }
        }
        let mut out = Vec::with_capacity(self.outbox.len());
        for (id, push) in core::mem::take(&mut self.outbox) {
            let Some(c) = self.clients.get_mut(&id) else {
                continue;
            };
            match (c.mode.redirect, push) {
                (0, push) => out.push((id, push)),
                (to, _) if !exists(to) => {
                    c.broken = true;
                    out.push((id, Push::RedirBroken(to)));
                }
                (to, Push::Invalidate { keys, .. }) => out.push((
                    to,
                    Push::Invalidate {
                        keys,
                        redirected: true,
                    },
                )),
                (_, push) => out.push((id, push)),
            }
        }
        out
    }

    /// Whether messages wait for [`take`](Tracking::take).
    pub fn has_pending(&self) -> bool {
        !self.outbox.is_empty() || self.prefixes.values().any(|p| !p.pending.is_empty())
    }

    /// `CLIENT GETREDIR`: the redirect target, 0 without, -1 when off.
    pub fn redirect(&self, client: u64) -> i64 {
        self.clients
            .get(&client)
            .map_or(-1, |c| i64::try_from(c.mode.redirect).unwrap_or(i64::MAX))
    }

    /// `CLIENT TRACKINGINFO`'s flags, in Redis's order.
    pub fn flags(&self, client: u64) -> Vec<&'static str> {
        let Some(c) = self.clients.get(&client) else {
            return alloc::vec!["off"];
        };
        let mut flags = alloc::vec!["on"];
        let m = &c.mode;
        for (on, name) in [
            (m.bcast, "bcast"),
            (m.optin, "optin"),
            (m.optin && c.caching, "caching-yes"),
            (m.optout, "optout"),
            (m.optout && c.caching, "caching-no"),
            (m.noloop, "noloop"),
            (c.broken, "broken_redirect"),
        ] {
            if on {
                flags.push(name);
            }
        }
        flags
    }

    /// `CLIENT LIST`'s tracking flags: `t`, `R` (broken redirect), `B`.
    pub fn list_flags(&self, client: u64) -> &'static str {
        match self.clients.get(&client) {
            None => "",
            Some(c) => match (c.broken, c.mode.bcast) {
                (false, false) => "t",
                (true, false) => "tR",
                (false, true) => "tB",
                (true, true) => "tRB",
            },
        }
    }

    /// `CLIENT TRACKINGINFO`'s prefixes.
    pub fn prefixes_of(&self, client: u64) -> Vec<Vec<u8>> {
        self.clients
            .get(&client)
            .map(|c| c.prefixes.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// `INFO`: tracking clients, keys in the table, (key, client) items
    /// and BCAST prefixes.
    pub fn counts(&self) -> (usize, usize, usize, usize) {
        let items = self.table.values().map(BTreeSet::len).sum();
        (
            self.clients.len(),
            self.table.len(),
            items,
            self.prefixes.len(),
        )
    }
}

/// Refuses prefixes that overlap each other or the client's own (two
/// prefixes would report the same key), with Redis's text.
fn check_prefixes(old: Option<&BTreeSet<Vec<u8>>>, new: &[Vec<u8>]) -> Result<(), Refusal> {
    let overlap = |a: &[u8], b: &[u8]| a.starts_with(b) || b.starts_with(a);
    let show = |p: &[u8]| alloc::string::String::from_utf8_lossy(p).into_owned();
    for (i, p) in new.iter().enumerate() {
        if let Some(existing) = old.into_iter().flatten().find(|e| overlap(e, p)) {
            return Err(alloc::format!(
                "Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a single client must not overlap.",
                show(p),
                show(existing)
            ));
        }
        if let Some(other) = new[i + 1..].iter().find(|o| overlap(o, p)) {
            return Err(alloc::format!(
                "Prefix '{}' overlaps with another provided prefix '{}'. Prefixes for a single client must not overlap.",
                show(p),
                show(other)
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inv(keys: &[&str], redirected: bool) -> Push {
        Push::Invalidate {
            keys: Some(keys.iter().map(|k| k.as_bytes().to_vec()).collect()),
            redirected,
        }
    }

    #[test]
    fn a_read_key_is_invalidated_once_for_its_readers() {
        let mut t = Tracking::default();
        t.enable(7, Mode::default(), &[]).unwrap();
        t.remember(7, [&b"a"[..], b"b"].into_iter());
        t.remember(8, [&b"a"[..]].into_iter()); // 8 does not track
        assert_eq!(t.counts(), (1, 2, 2, 0));
        t.invalidate(b"a", Some(9));
        t.invalidate(b"a", Some(9)); // told once until read again
        assert_eq!(t.take(|_| true), [(7, inv(&["a"], false))]);
        t.flushed();
        let none = Push::Invalidate {
            keys: None,
            redirected: false,
        };
        assert_eq!(t.take(|_| true), [(7, none)]);
        assert_eq!(t.counts(), (1, 0, 0, 0));
    }

    #[test]
    fn noloop_optin_optout_and_redirection() {
        let mut t = Tracking::default();
        let mode = Mode {
            noloop: true,
            redirect: 5,
            ..Mode::default()
        };
        t.enable(7, mode, &[]).unwrap();
        t.remember(7, [&b"a"[..], b"b"].into_iter());
        t.invalidate(b"a", Some(7));
        t.invalidate(b"b", Some(1));
        assert_eq!(t.take(|_| true), [(5, inv(&["b"], true))]);
        t.remember(7, [&b"c"[..]].into_iter());
        t.invalidate(b"c", None);
        assert_eq!(t.take(|id| id != 5), [(7, Push::RedirBroken(5))]);
        assert_eq!(t.flags(7), ["on", "noloop", "broken_redirect"]);
        assert_eq!(t.list_flags(7), "tR");
        t.disable(7);
        assert_eq!((t.flags(7), t.redirect(7)), (vec!["off"], -1));

        t.enable(
            8,
            Mode {
                optin: true,
                ..Mode::default()
            },
            &[],
        )
        .unwrap();
        t.remember(8, [&b"x"[..]].into_iter());
        assert_eq!(t.counts().1, 0, "OPTIN without CACHING yes");
        t.caching(8, true).unwrap();
        assert_eq!(t.flags(8), ["on", "optin", "caching-yes"]);
        t.remember(8, [&b"x"[..]].into_iter());
        t.command_done(8);
        t.remember(8, [&b"y"[..]].into_iter());
        assert_eq!(t.counts().1, 1);
        assert_eq!(
            t.caching(8, false),
            Err("CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
        );
        let err = t.enable(
            8,
            Mode {
                optout: true,
                ..Mode::default()
            },
            &[],
        );
        assert!(err
            .unwrap_err()
            .starts_with("You can't switch OPTIN/OPTOUT"));
    }

    #[test]
    fn bcast_reports_keys_under_prefixes_per_prefix() {
        let mut t = Tracking::default();
        let bcast = Mode {
            bcast: true,
            noloop: true,
            ..Mode::default()
        };
        t.enable(3, bcast.clone(), &[b"a:".to_vec(), b"b:".to_vec()])
            .unwrap();
        t.invalidate(b"a:1", Some(1));
        t.invalidate(b"a:2", Some(3)); // its own: NOLOOP
        t.invalidate(b"b:1", None);
        t.invalidate(b"c:1", None);
        assert!(t.has_pending());
        assert_eq!(
            t.take(|_| true),
            [(3, inv(&["a:1"], false)), (3, inv(&["b:1"], false))]
        );
        assert_eq!(t.prefixes_of(3), [b"a:".to_vec(), b"b:".to_vec()]);
        let err = t.enable(3, bcast.clone(), &[b"a".to_vec()]).unwrap_err();
        assert_eq!(err, "Prefix 'a' overlaps with an existing prefix 'a:'. Prefixes for a single client must not overlap.");
        let err = t
            .enable(4, bcast, &[b"FOOBAR".to_vec(), b"FOO".to_vec()])
            .unwrap_err();
        assert_eq!(err, "Prefix 'FOOBAR' overlaps with another provided prefix 'FOO'. Prefixes for a single client must not overlap.");
        assert!(t
            .enable(3, Mode::default(), &[])
            .unwrap_err()
            .starts_with("You can't switch BCAST"));
    }

    #[test]
    fn the_table_is_kept_under_its_limit() {
        let mut t = Tracking::default();
        t.enable(1, Mode::default(), &[]).unwrap();
        t.remember(1, [&b"a"[..], b"b", b"c"].into_iter());
        t.limit(1);
        assert_eq!(t.counts().1, 1);
        assert_eq!(t.take(|_| true).len(), 2);
        t.limit(0);
        assert_eq!(t.counts().1, 1);
    }
}
