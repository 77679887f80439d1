//! Clients blocked on keys (`BLPOP`, `BLMOVE`, ...): who waits for which
//! key, in what order, until when, and what they are answered.
//!
//! The machinery knows nothing of lists: a waiter names the keys it waits
//! on (per database), the type of value that can serve it, the command to
//! run again when one of them gets such a value, and what to answer if
//! its time runs out. Sorted sets (`BZPOPMIN`) can wait the same way.
//!
//! ```text
//!  a blocking command finds nothing ──► Blocking::block (the client waits;
//!                                       its session sends nothing)
//!  a command creates a waited key   ──► Blocking::signal: the key is ready
//!  after that command               ──► the engine runs each waiter's command
//!                                       again, first come first served, while
//!                                       the key holds a value of its type;
//!                                       the replies go to take_unblocked
//!  a deadline passes, CLIENT UNBLOCK──► the waiter's timeout reply (or an error)
//!  the connection closes            ──► Blocking::forget
//! ```
//!
//! Only keys somebody waits on are ever signalled, so clients that never
//! block cost one map lookup per created key.

use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec::Vec;

use crate::resp::Reply;
use crate::Args;

/// What a blocking command asks for when it finds nothing to serve it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wait {
    /// The keys to wait on, in the client's database (duplicates allowed).
    pub keys: Vec<Vec<u8>>,
    /// The type of value that serves it (`Data::type_name`: `"list"`).
    pub kind: &'static str,
    /// When to give up, in the engine's clock (milliseconds); `None`:
    /// never.
    pub deadline: Option<u64>,
    /// The answer when it gives up (a null array or a null bulk string).
    pub timeout_reply: Reply,
    /// `XREADGROUP`'s consumer group; `None` for every other command.
    /// Such a client waits in its group, not for its keys: the key going
    /// away or holding another type answers it `-UNBLOCKED`, the group
    /// going away `-NOGROUP`, as in Redis (see
    /// [`Blocking::signal_lost_groups`]).
    pub group: Option<Vec<u8>>,
}

/// One blocked client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Waiter {
    /// The database its keys are in.
    pub db: usize,
    /// The command to run again when a key is ready.
    pub args: Args,
    /// What it waits for.
    pub wait: Wait,
}

/// A key in a database: what waiters queue on.
type DbKey = (usize, Vec<u8>);

/// Every blocked client, the queues of waiters per key, and the keys that
/// got data since the engine last served.
#[derive(Debug, Default)]
pub struct Blocking {
    waiters: BTreeMap<u64, Waiter>,
    /// Per key, the ids of the clients waiting on it, oldest first.
    queues: BTreeMap<DbKey, VecDeque<u64>>,
    /// Keys signalled since the last serve, in signal order, once each.
    ready: VecDeque<DbKey>,
    /// Replies for clients no longer blocked, for the server to deliver.
    unblocked: Vec<(u64, Reply)>,
    /// How many waiters wait in a consumer group ([`Wait::group`]).
    in_groups: usize,
}

impl Blocking {
    /// Number of blocked clients (`INFO`'s `blocked_clients`).
    pub fn len(&self) -> usize {
        self.waiters.len()
    }

    /// Whether no client is blocked.
    pub fn is_empty(&self) -> bool {
        self.waiters.is_empty()
    }

    /// Client `id` waits in database `db` for `wait`, to run `args` again;
    /// it joins the end of each key's queue.
    pub fn block(&mut self, id: u64, db: usize, args: Args, wait: Wait) {
        self.forget(id);
        for key in &wait.keys {
            let queue = self.queues.entry((db, key.clone())).or_default();
            if !queue.contains(&id) {
                queue.push_back(id);
            }
        }
        self.in_groups += usize::from(wait.group.is_some());
        self.waiters.insert(id, Waiter { db, args, wait });
    }

    /// Whether client `id` is blocked.
    pub fn is_blocked(&self, id: u64) -> bool {
        self.waiters.contains_key(&id)
    }

    /// Client `id`'s wait, if it is blocked.
    pub fn waiter(&self, id: u64) -> Option<&Waiter> {
        self.waiters.get(&id)
    }

    /// `key` of database `db` was created or got data: if anyone waits on
    /// it, the engine tries to serve them after the current command.
    pub fn signal(&mut self, db: usize, key: &[u8]) {
        if self.waiters.is_empty() {
            return;
        }
        let probe = (db, key.to_vec());
        if self.queues.contains_key(&probe) && !self.ready.contains(&probe) {
            self.ready.push_back(probe);
        }
    }

    /// Signals every waited key of database `db` (its contents were
    /// replaced wholesale: `SWAPDB`).
    pub fn signal_db(&mut self, db: usize) {
        let keys: Vec<DbKey> = self
            .queues
            .keys()
            .filter(|(d, _)| *d == db)
            .cloned()
            .collect();
        for key in keys {
            if !self.ready.contains(&key) {
                self.ready.push_back(key);
            }
        }
    }

    /// Signals each key a client waits on in a consumer group
    /// ([`Wait::group`]) where `holds(db, key, group)` says that database
    /// `db`'s `key` holds no longer a stream with that group. The engine
    /// asks after every command, so whatever took the stream or the group
    /// (a deletion, a write of another type, a flush, `SWAPDB`, expiry,
    /// eviction, `XGROUP DESTROY`) answers the client, as Redis does where
    /// each of them happens. Costs nothing while no client waits in a
    /// group.
    pub fn signal_lost_groups(&mut self, mut holds: impl FnMut(usize, &[u8], &[u8]) -> bool) {
        if self.in_groups == 0 {
            return;
        }
        let mut lost = Vec::new();
        for waiter in self.waiters.values() {
            let Some(group) = &waiter.wait.group else {
                continue;
            };
            for key in &waiter.wait.keys {
                if !holds(waiter.db, key, group) {
                    lost.push((waiter.db, key.clone()));
                }
            }
        }
        for (db, key) in lost {
            self.signal(db, &key);
        }
    }

    /// The clients waiting on `key` of `db`, oldest first.
    pub fn waiters_on(&self, db: usize, key: &[u8]) -> Vec<u64> {
        self.queues
            .get(&(db, key.to_vec()))
            .map_or_else(Vec::new, |queue| queue.iter().copied().collect())
    }

    /// The clients waiting on `key` of `db` in a consumer group
    /// ([`Wait::group`]), oldest first.
    pub fn group_waiters_on(&self, db: usize, key: &[u8]) -> Vec<u64> {
        if self.in_groups == 0 {
            return Vec::new();
        }
        let mut ids = self.waiters_on(db, key);
        ids.retain(|id| self.waiters[id].wait.group.is_some());
        ids
    }

    /// The next ready key to serve, oldest signal first.
    pub fn next_ready(&mut self) -> Option<(usize, Vec<u8>)> {
        self.ready.pop_front()
    }

    /// The client waiting longest on `key` of `db`.
    pub fn first_waiter(&self, db: usize, key: &[u8]) -> Option<u64> {
        // Keys are few per waiter; the clone is the price of a tuple key.
        self.queues.get(&(db, key.to_vec()))?.front().copied()
    }

    /// Client `id` stops waiting and is answered `reply`. Returns whether
    /// it was blocked.
    pub fn unblock(&mut self, id: u64, reply: Reply) -> bool {
        if !self.forget(id) {
            return false;
        }
        self.unblocked.push((id, reply));
        true
    }

    /// Client `id` stops waiting, unanswered (its connection closed).
    /// Returns whether it was blocked.
    pub fn forget(&mut self, id: u64) -> bool {
        let Some(waiter) = self.waiters.remove(&id) else {
            return false;
        };
        self.in_groups -= usize::from(waiter.wait.group.is_some());
        for key in waiter.wait.keys {
            let db_key = (waiter.db, key);
            if let Some(queue) = self.queues.get_mut(&db_key) {
                queue.retain(|&w| w != id);
                if queue.is_empty() {
                    self.queues.remove(&db_key);
                }
            }
        }
        true
    }

    /// Answers every client whose deadline is at or before `now` with its
    /// timeout reply.
    pub fn expire(&mut self, now: u64) {
        let due: Vec<u64> = self
            .waiters
            .iter()
            .filter(|(_, w)| w.wait.deadline.is_some_and(|at| at <= now))
            .map(|(&id, _)| id)
            .collect();
        for id in due {
            let reply = self.waiters[&id].wait.timeout_reply.clone();
            self.unblock(id, reply);
        }
    }

    /// The earliest deadline of a blocked client: when the server must
    /// wake up at the latest.
    pub fn next_deadline(&self) -> Option<u64> {
        self.waiters.values().filter_map(|w| w.wait.deadline).min()
    }

    /// The replies for clients unblocked since the last call: (client id,
    /// reply), in the order they were unblocked.
    pub fn take_unblocked(&mut self) -> Vec<(u64, Reply)> {
        core::mem::take(&mut self.unblocked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn wait(keys: &[&str], deadline: Option<u64>) -> Wait {
        Wait {
            keys: keys.iter().map(|k| k.as_bytes().to_vec()).collect(),
            kind: "list",
            deadline,
            timeout_reply: Reply::Array(None),
            group: None,
        }
    }

    #[test]
    fn waiters_queue_per_key_in_arrival_order() {
        let mut b = Blocking::default();
        b.block(1, 0, vec![b"BLPOP".to_vec()], wait(&["a", "b", "a"], None));
        b.block(2, 0, vec![b"BLPOP".to_vec()], wait(&["a"], None));
        assert_eq!(b.len(), 2);
        assert_eq!(b.first_waiter(0, b"a"), Some(1));
        assert_eq!(b.first_waiter(1, b"a"), None, "another database");
        b.signal(0, b"zzz");
        assert_eq!(b.next_ready(), None, "nobody waits on it");
        b.signal(0, b"a");
        b.signal(0, b"a");
        assert_eq!(b.next_ready(), Some((0, b"a".to_vec())));
        assert_eq!(b.next_ready(), None, "signalled once");
        assert!(b.unblock(1, Reply::nil()));
        assert!(!b.unblock(1, Reply::nil()));
        assert_eq!(b.first_waiter(0, b"a"), Some(2));
        assert_eq!(b.first_waiter(0, b"b"), None, "its queue went with it");
        assert_eq!(b.take_unblocked(), [(1, Reply::nil())]);
    }

    #[test]
    fn deadlines_answer_with_the_timeout_reply() {
        let mut b = Blocking::default();
        b.block(1, 0, Vec::new(), wait(&["a"], Some(100)));
        b.block(2, 0, Vec::new(), wait(&["a"], None));
        b.block(3, 0, Vec::new(), wait(&["a"], Some(50)));
        assert_eq!(b.next_deadline(), Some(50));
        b.expire(99);
        assert_eq!(b.take_unblocked(), [(3, Reply::Array(None))]);
        b.expire(100);
        assert_eq!(b.take_unblocked(), [(1, Reply::Array(None))]);
        assert_eq!(b.next_deadline(), None);
        assert!(b.forget(2));
        assert!(b.is_empty() && b.take_unblocked().is_empty());
        assert_eq!(b.first_waiter(0, b"a"), None);
    }

    #[test]
    fn keys_whose_group_is_lost_are_signalled() {
        let mut b = Blocking::default();
        let mut in_group = wait(&["s", "t"], None);
        in_group.group = Some(b"g".to_vec());
        b.block(1, 0, Vec::new(), wait(&["s"], None));
        b.signal_lost_groups(|_, _, _| panic!("nobody waits in a group"));
        b.block(2, 0, Vec::new(), in_group);
        b.block(3, 0, Vec::new(), wait(&["s"], None));
        b.signal_lost_groups(|db, key, group| db == 0 && key == b"s" && group == b"g");
        assert_eq!(b.next_ready(), Some((0, b"t".to_vec())), "t lost g");
        assert_eq!(b.next_ready(), None);
        assert_eq!(b.waiters_on(0, b"s"), [1, 2, 3]);
        assert_eq!(b.group_waiters_on(0, b"s"), [2]);
        assert!(b.forget(2));
        assert!(b.group_waiters_on(0, b"s").is_empty());
        b.signal_lost_groups(|_, _, _| panic!("nobody waits in a group"));
    }
}
