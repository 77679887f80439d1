//! The large form of a sorted set: a treap (a binary search tree whose
//! nodes also carry random priorities, kept in heap order, which keeps
//! it balanced in expectation) ordered by (score, member), each node
//! counting the nodes below it, so the rank of an entry and the entry at
//! a rank are found in O(log n) without scanning. Members are also kept
//! in a map to their scores, ordered like keys in the keyspace, so
//! `ZSCORE` is a lookup and `ZSCAN` has a stable cursor.
//!
//! Nodes live in one vector and point at each other by index (no
//! `unsafe`, no reference counting); removed slots are reused.

use alloc::collections::{BTreeMap, TryReserveError};
use alloc::vec::Vec;

use super::before;
use crate::store::key::{self, KeyView, Probe, StoredKey};
use faultline_rng::XorShift64Star;

/// No node: the empty subtree.
const NIL: u32 = u32::MAX;

#[derive(Clone, Debug)]
struct Node {
    member: Vec<u8>,
    score: f64,
    left: u32,
    right: u32,
    priority: u32,
    /// Nodes in this subtree, this one included.
    count: u32,
}

/// Entries ordered by (score, member) with ranks; see the module's
/// documentation.
#[derive(Clone, Debug)]
pub struct Tree {
    nodes: Vec<Node>,
    free: Vec<u32>,
    root: u32,
    /// Where priorities come from (faultline-rng's xorshift64*):
    /// balance, not secrecy.
    priorities: XorShift64Star,
    scores: BTreeMap<StoredKey, f64>,
}

impl Default for Tree {
    fn default() -> Self {
        Tree {
            nodes: Vec::new(),
            free: Vec::new(),
            root: NIL,
            priorities: XorShift64Star::new(0x9e37_79b9_7f4a_7c15),
            scores: BTreeMap::new(),
        }
    }
}

impl Tree {
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.scores.len()
    }

    /// The score of `member`, if present.
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.scores
            .get(&Probe::new(member) as &dyn KeyView)
            .copied()
    }

    /// Adds `member` (not yet present) with `score`. Fails, changing
    /// nothing, if memory for it cannot be had.
    pub fn insert_new(&mut self, member: Vec<u8>, score: f64) -> Result<(), TryReserveError> {
        let mut copy = Vec::new();
        copy.try_reserve_exact(member.len())?;
        copy.extend_from_slice(&member);
        if self.free.is_empty() {
            self.nodes.try_reserve(1)?;
            // Room to free every slot later without allocating.
            self.free.try_reserve(self.nodes.len() + 1)?;
        }
        let priority = self.next_priority();
        let node = Node {
            member,
            score,
            left: NIL,
            right: NIL,
            priority,
            count: 1,
        };
        let at = match self.free.pop() {
            Some(at) => {
                self.nodes[at as usize] = node;
                at
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        };
        self.root = self.insert_node(self.root, at, score, &copy);
        self.scores.insert(StoredKey::from_vec(copy), score);
        Ok(())
    }

    /// Gives `member`, if present, the score `score`, and returns its old
    /// score: its node moves to its new place, nothing is allocated.
    pub fn set_score(&mut self, member: &[u8], score: f64) -> Option<f64> {
        let stored = self.scores.get_mut(&Probe::new(member) as &dyn KeyView)?;
        let old = core::mem::replace(stored, score);
        let (root, at) = self.remove_node(self.root, old, member);
        debug_assert!(at != NIL, "the map and the tree hold the same members");
        let node = &mut self.nodes[at as usize];
        (node.score, node.left, node.right, node.count) = (score, NIL, NIL, 1);
        self.root = self.insert_node(root, at, score, member);
        Some(old)
    }

    /// Removes `member`; returns it (the tree's own copy) and its score if
    /// it was there.
    pub fn remove(&mut self, member: &[u8]) -> Option<(Vec<u8>, f64)> {
        let score = self.scores.remove(&Probe::new(member) as &dyn KeyView)?;
        let (root, found) = self.remove_node(self.root, score, member);
        debug_assert!(found != NIL, "the map and the tree hold the same members");
        let mut taken = Vec::new();
        if found != NIL {
            taken = core::mem::take(&mut self.nodes[found as usize].member);
            // Reserved when the slot was made.
            self.free.push(found);
        }
        self.root = root;
        if self.root == NIL {
            *self = Tree::default();
        }
        Some((taken, score))
    }

    /// Removes the entry at `rank` (0 the lowest) and returns it, if there
    /// is one.
    pub fn remove_at(&mut self, rank: usize) -> Option<(Vec<u8>, f64)> {
        let rank = u32::try_from(rank)
            .ok()
            .filter(|&r| r < self.count(self.root))?;
        let (left, rest) = self.split_count(self.root, rank);
        let (found, right) = self.split_count(rest, 1);
        let node = &mut self.nodes[found as usize];
        let (member, score) = (core::mem::take(&mut node.member), node.score);
        // Reserved when the slot was made.
        self.free.push(found);
        self.scores.remove(&Probe::new(&member) as &dyn KeyView);
        self.root = self.merge(left, right);
        if self.root == NIL {
            *self = Tree::default();
        }
        Some((member, score))
    }

    /// The entry at `rank` (0 the lowest), if there is one.
    pub fn get(&self, rank: usize) -> Option<(&[u8], f64)> {
        let mut rank = u32::try_from(rank).ok()?;
        let mut at = self.root;
        while at != NIL {
            let node = &self.nodes[at as usize];
            let left = self.count(node.left);
            if rank < left {
                at = node.left;
            } else if rank == left {
                return Some((&node.member, node.score));
            } else {
                rank -= left + 1;
                at = node.right;
            }
        }
        None
    }

    /// How many entries `below` holds for: `below` must hold for a prefix
    /// of the order (every entry before some point) and for nothing after.
    pub fn count_while(&self, below: &dyn Fn(f64, &[u8]) -> bool) -> usize {
        let (mut total, mut at) = (0, self.root);
        while at != NIL {
            let node = &self.nodes[at as usize];
            if below(node.score, &node.member) {
                total += self.count(node.left) as usize + 1;
                at = node.right;
            } else {
                at = node.left;
            }
        }
        total
    }

    /// Members and scores, in the member map's order, for a cursor scan.
    pub fn scan(&self, cursor: u64, count: usize) -> (u64, Vec<(&[u8], &f64)>) {
        key::scan(&self.scores, cursor, count)
    }

    fn count(&self, at: u32) -> u32 {
        match at {
            NIL => 0,
            at => self.nodes[at as usize].count,
        }
    }

    fn update(&mut self, at: u32) {
        let node = &self.nodes[at as usize];
        let count = self.count(node.left) + self.count(node.right) + 1;
        self.nodes[at as usize].count = count;
    }

    fn next_priority(&mut self) -> u32 {
        (self.priorities.next_u64() >> 32) as u32
    }

    /// Puts the lone node `new`, holding (`score`, `member`), into the
    /// subtree at `at`; returns the subtree's root. It goes down to where
    /// its priority belongs, and the subtree found there is split around
    /// it: a node's priority is random, so that is near the bottom and the
    /// split short, in expectation.
    fn insert_node(&mut self, at: u32, new: u32, score: f64, member: &[u8]) -> u32 {
        if at == NIL {
            return new;
        }
        let node = &self.nodes[at as usize];
        if self.nodes[new as usize].priority > node.priority {
            let (left, right) = self.split(at, &|s, m| before(s, m, score, member));
            let new_node = &mut self.nodes[new as usize];
            (new_node.left, new_node.right) = (left, right);
            self.update(new);
            return new;
        }
        if before(node.score, &node.member, score, member) {
            let right = self.insert_node(node.right, new, score, member);
            self.nodes[at as usize].right = right;
        } else {
            let left = self.insert_node(node.left, new, score, member);
            self.nodes[at as usize].left = left;
        }
        self.nodes[at as usize].count += 1;
        at
    }

    /// Takes the node holding (`score`, `member`) out of the subtree at
    /// `at`, its children joined in its place; returns the subtree's root
    /// and the node (`NIL` if it is not there).
    fn remove_node(&mut self, at: u32, score: f64, member: &[u8]) -> (u32, u32) {
        if at == NIL {
            return (NIL, NIL);
        }
        let node = &self.nodes[at as usize];
        let (removed, root) = if before(node.score, &node.member, score, member) {
            let (right, removed) = self.remove_node(node.right, score, member);
            self.nodes[at as usize].right = right;
            (removed, at)
        } else if before(score, member, node.score, &node.member) {
            let (left, removed) = self.remove_node(node.left, score, member);
            self.nodes[at as usize].left = left;
            (removed, at)
        } else {
            let (left, right) = (node.left, node.right);
            return (self.merge(left, right), at);
        };
        if removed != NIL {
            self.nodes[at as usize].count -= 1;
        }
        (root, removed)
    }

    /// Splits the subtree at `at` into the entries `below` holds for and
    /// the rest (see [`count_while`](Tree::count_while)).
    fn split(&mut self, at: u32, below: &dyn Fn(f64, &[u8]) -> bool) -> (u32, u32) {
        if at == NIL {
            return (NIL, NIL);
        }
        let node = &self.nodes[at as usize];
        if below(node.score, &node.member) {
            let (left, right) = self.split(node.right, below);
            self.nodes[at as usize].right = left;
            self.update(at);
            (at, right)
        } else {
            let (left, right) = self.split(node.left, below);
            self.nodes[at as usize].left = right;
            self.update(at);
            (left, at)
        }
    }

    /// Splits the subtree at `at` into its first `n` entries and the rest.
    fn split_count(&mut self, at: u32, n: u32) -> (u32, u32) {
        if at == NIL {
            return (NIL, NIL);
        }
        let left_count = self.count(self.nodes[at as usize].left);
        if n <= left_count {
            let (left, right) = self.split_count(self.nodes[at as usize].left, n);
            self.nodes[at as usize].left = right;
            self.update(at);
            (left, at)
        } else {
            let right_of = self.nodes[at as usize].right;
            let (left, right) = self.split_count(right_of, n - left_count - 1);
            self.nodes[at as usize].right = left;
            self.update(at);
            (at, right)
        }
    }

    /// Joins two subtrees, every entry of `a` before every entry of `b`.
    fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        if self.nodes[a as usize].priority > self.nodes[b as usize].priority {
            let right = self.merge(self.nodes[a as usize].right, b);
            self.nodes[a as usize].right = right;
            self.update(a);
            a
        } else {
            let left = self.merge(a, self.nodes[b as usize].left);
            self.nodes[b as usize].left = left;
            self.update(b);
            b
        }
    }
}
