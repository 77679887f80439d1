//! Sorted-set values: one key holding members, each with a score, kept
//! in order of (score, member) (`ZADD`, `ZRANGE`, `ZRANK`, ...).
//!
//! A small sorted set is kept compact: one vector of (member, score) in
//! order, so a rank is an index and a member is found by a scan that, for
//! a few dozen short members, costs less than a tree's nodes
//! (`OBJECT ENCODING` calls it `listpack`, as Redis does). Once it has more
//! members than `zset-max-listpack-entries`, or a member longer than
//! `zset-max-listpack-value` bytes, it becomes a counted tree for good
//! (`skiplist` in Redis's words; see the `tree` module):
//!
//! ```text
//!  compact  [(m1, 1.0) (m2, 1.5) (m3, 7.0) ...]   rank = index
//!     │ a member past the limits
//!     ▼
//!  tree     treap on (score, member), counts per subtree  rank in O(log n)
//!           + member → score map                            ZSCORE, ZSCAN
//! ```
//!
//! Scores are never NaN (commands refuse it before it gets here), so
//! comparing them is a total order; `-0` and `0` compare equal, as in
//! Redis.

mod tree;

use alloc::collections::TryReserveError;
use alloc::vec::Vec;

use super::CompactLimits;
use tree::Tree;

/// Estimated bytes one member costs beyond its bytes: its score, a tree
/// node, its share of the member map and allocator overhead (the member
/// is kept twice in the tree form: counted as its bytes again). An
/// estimate for `maxmemory`, and an upper bound of what a member costs
/// compact.
pub const ZSET_MEMBER_OVERHEAD: usize = 80;

/// Whether (score `a`, member `am`) comes before (`b`, `bm`) in a sorted
/// set's order (see also [`Zset::before`]).
pub(crate) fn before(a: f64, am: &[u8], b: f64, bm: &[u8]) -> bool {
    a < b || (a == b && am < bm)
}

/// The members and scores of one sorted-set key, with the memory they
/// use.
#[derive(Clone, Debug)]
pub struct Zset {
    form: Form,
    /// Estimated bytes of all members (see [`Zset::member_cost`]).
    size: usize,
}

/// The two ways a sorted set is kept (see the module's documentation).
#[derive(Clone, Debug)]
enum Form {
    Compact(Vec<(Vec<u8>, f64)>),
    Tree(Tree),
}

/// Two sorted sets are equal when they hold the same members with the
/// same scores, however they are kept.
impl PartialEq for Zset {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len()
            && self
                .iter()
                .zip(other.iter())
                .all(|((am, a), (bm, b))| am == bm && a.to_bits() == b.to_bits())
    }
}

impl Eq for Zset {}

impl Default for Zset {
    fn default() -> Self {
        Zset {
            form: Form::Compact(Vec::new()),
            size: 0,
        }
    }
}

impl Zset {
    /// An empty sorted set, compact (a key never holds one: the store
    /// removes a sorted-set key whose last member goes).
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty sorted set in the form a set of `len` members, the longest
    /// `longest` bytes, takes under `limits`: what commands that build a
    /// whole value (`ZUNIONSTORE`, `ZRANGESTORE`, the first `ZADD`) start
    /// from, as Redis picks the encoding up front.
    pub fn for_size(len: usize, longest: usize, limits: CompactLimits) -> Self {
        let mut zset = Self::new();
        if len > limits.entries || longest > limits.value {
            zset.form = Form::Tree(Tree::default());
        }
        zset
    }

    /// Whether (score `a`, member `am`) comes before (`b`, `bm`) in a
    /// sorted set's order: lower score first, equal scores by member
    /// bytes. What commands that order members themselves sort by.
    pub fn before(a: f64, am: &[u8], b: f64, bm: &[u8]) -> bool {
        before(a, am, b, bm)
    }

    /// Estimated memory one member of `len` bytes costs.
    pub fn member_cost(len: usize) -> usize {
        2 * len + ZSET_MEMBER_OVERHEAD
    }

    /// Number of members (`ZCARD`).
    pub fn len(&self) -> usize {
        match &self.form {
            Form::Compact(entries) => entries.len(),
            Form::Tree(tree) => tree.len(),
        }
    }

    /// Whether there are no members.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Estimated memory of the members, in bytes: what the sorted set adds
    /// to its key's cost in the store.
    pub fn size(&self) -> usize {
        self.size
    }

    /// `OBJECT ENCODING`'s name for the form the set is in.
    pub fn encoding(&self) -> &'static str {
        match self.form {
            Form::Compact(_) => "listpack",
            Form::Tree(_) => "skiplist",
        }
    }

    /// The score of `member`, if present (`ZSCORE`).
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        match &self.form {
            Form::Compact(entries) => entries
                .iter()
                .find(|(m, _)| m.as_slice() == member)
                .map(|&(_, s)| s),
            Form::Tree(tree) => tree.score(member),
        }
    }

    /// Sets `member`'s score (adding it if missing); returns whether it is
    /// new. A set that would outgrow `limits` becomes a tree first. Fails,
    /// changing nothing, if memory for it cannot be had.
    pub fn insert(
        &mut self,
        member: Vec<u8>,
        score: f64,
        limits: CompactLimits,
    ) -> Result<bool, TryReserveError> {
        let old = self.score(&member);
        if let Form::Compact(entries) = &mut self.form {
            let fits =
                member.len() <= limits.value && (old.is_some() || entries.len() < limits.entries);
            if fits {
                entries.try_reserve(1)?;
                if let Some(at) = entries.iter().position(|(m, _)| *m == member) {
                    entries.remove(at);
                    self.size -= Self::member_cost(member.len());
                }
                let at = entries.partition_point(|(m, s)| before(*s, m, score, &member));
                self.size += Self::member_cost(member.len());
                entries.insert(at, (member, score));
                return Ok(old.is_none());
            }
            self.convert_to_tree()?;
        }
        let Form::Tree(tree) = &mut self.form else {
            unreachable!("a sorted set past its compact limits is a tree");
        };
        if old.is_some() {
            tree.set_score(&member, score);
            return Ok(false);
        }
        let len = member.len();
        tree.insert_new(member, score)?;
        self.size += Self::member_cost(len);
        Ok(true)
    }

    /// Gives `member`, if present, the score `score`; returns whether it
    /// was there. Never allocates: what `ZADD` and `ZINCRBY` do to a
    /// member they find.
    pub fn set_score(&mut self, member: &[u8], score: f64) -> bool {
        match &mut self.form {
            Form::Compact(entries) => {
                let Some(from) = entries.iter().position(|(m, _)| m == member) else {
                    return false;
                };
                let entry = entries.remove(from);
                let to = entries.partition_point(|(m, s)| before(*s, m, score, member));
                entries.insert(to, (entry.0, score));
                true
            }
            Form::Tree(tree) => tree.set_score(member, score).is_some(),
        }
    }

    /// Removes `member`; returns whether it was there.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        let removed = match &mut self.form {
            Form::Compact(entries) => match entries.iter().position(|(m, _)| m == member) {
                Some(at) => {
                    entries.remove(at);
                    true
                }
                None => false,
            },
            Form::Tree(tree) => tree.remove(member).is_some(),
        };
        if removed {
            self.size -= Self::member_cost(member.len());
        }
        removed
    }

    /// Removes the member at `rank` (0 the lowest score) and hands it
    /// over with its score, without copying it: what pops and range
    /// removals take members out with.
    pub fn remove_at(&mut self, rank: usize) -> Option<(Vec<u8>, f64)> {
        let taken = match &mut self.form {
            Form::Compact(entries) => (rank < entries.len()).then(|| entries.remove(rank)),
            Form::Tree(tree) => tree.remove_at(rank),
        };
        if let Some((member, _)) = &taken {
            self.size -= Self::member_cost(member.len());
        }
        taken
    }

    /// The member and score at `rank` (0 the lowest score), if any.
    pub fn get(&self, rank: usize) -> Option<(&[u8], f64)> {
        match &self.form {
            Form::Compact(entries) => entries.get(rank).map(|(m, s)| (m.as_slice(), *s)),
            Form::Tree(tree) => tree.get(rank),
        }
    }

    /// The rank of `member` (0 the lowest score), if present (`ZRANK`).
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        match &self.form {
            Form::Compact(entries) => entries.iter().position(|(m, _)| m == member),
            Form::Tree(tree) => {
                let score = tree.score(member)?;
                Some(tree.count_while(&|s, m| before(s, m, score, member)))
            }
        }
    }

    /// How many members come before the first one `below` does not hold
    /// for. `below` must hold for a prefix of the order and nothing after
    /// it: "score under 5", "member before `c`" in a set of equal scores.
    /// Range commands turn their bounds into ranks with it.
    pub fn count_while(&self, below: &dyn Fn(f64, &[u8]) -> bool) -> usize {
        match &self.form {
            Form::Compact(entries) => entries.partition_point(|(m, s)| below(*s, m)),
            Form::Tree(tree) => tree.count_while(below),
        }
    }

    /// [`count_while`](Self::count_while) for a predicate on members that
    /// may not hold for a prefix only: a lex bound on members of different
    /// scores (Redis leaves the result unspecified there). It probes the
    /// same ranks in the same order in both forms, so the answer depends
    /// on the members and scores alone, never on the form: a log replayed
    /// into a set of the other form (a restart with other compact limits)
    /// removes the same members.
    pub fn count_while_by_rank(&self, below: &dyn Fn(&[u8]) -> bool) -> usize {
        let (mut low, mut high) = (0, self.len());
        while low < high {
            let mid = low + (high - low) / 2;
            match self.get(mid) {
                Some((member, _)) if below(member) => low = mid + 1,
                _ => high = mid,
            }
        }
        low
    }

    /// The members from rank `from` to rank `to` inclusive, lowest first.
    pub fn range(&self, from: usize, to: usize) -> impl DoubleEndedIterator<Item = (&[u8], f64)> {
        (from..to.saturating_add(1).min(self.len())).filter_map(move |rank| self.get(rank))
    }

    /// Every member and score, lowest score first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&[u8], f64)> {
        self.range(0, self.len())
    }

    /// One step of a cursor scan (`ZSCAN`): members from `cursor` on, at
    /// least `count` of them, and the cursor to continue from (0 when
    /// done), with `SCAN`'s guarantee; a compact set is returned whole.
    pub fn scan(&self, cursor: u64, count: usize) -> (u64, Vec<(&[u8], f64)>) {
        match &self.form {
            Form::Compact(_) => (0, self.iter().collect()),
            Form::Tree(tree) => {
                let (next, found) = tree.scan(cursor, count);
                (next, found.into_iter().map(|(m, &s)| (m, s)).collect())
            }
        }
    }

    /// Moves a compact set's members into the tree form.
    fn convert_to_tree(&mut self) -> Result<(), TryReserveError> {
        let Form::Compact(entries) = &mut self.form else {
            return Ok(());
        };
        let mut tree = Tree::default();
        for (member, score) in entries.iter() {
            let mut copy = Vec::new();
            copy.try_reserve_exact(member.len())?;
            copy.extend_from_slice(member);
            tree.insert_new(copy, *score)?;
        }
        self.form = Form::Tree(tree);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;

    const SMALL: CompactLimits = CompactLimits {
        entries: 4,
        value: 8,
    };

    fn members(z: &Zset) -> Vec<(Vec<u8>, f64)> {
        z.iter().map(|(m, s)| (m.to_vec(), s)).collect()
    }

    #[test]
    fn members_are_ordered_by_score_then_bytes_in_both_forms() {
        for limits in [CompactLimits::default(), SMALL] {
            let mut z = Zset::new();
            for (m, s) in [("c", 2.0), ("a", 2.0), ("b", 1.0), ("d", -1.0), ("e", 9.0)] {
                assert_eq!(z.insert(m.as_bytes().to_vec(), s, limits), Ok(true));
            }
            assert_eq!(z.insert(b"b".to_vec(), 3.0, limits), Ok(false), "an update");
            let order: Vec<_> = z.iter().map(|(m, _)| m[0]).collect();
            assert_eq!(order, b"dacbe");
            assert_eq!(z.rank(b"b"), Some(3));
            assert_eq!(z.get(1), Some((&b"a"[..], 2.0)));
            assert_eq!(z.score(b"e"), Some(9.0));
            assert_eq!(z.count_while(&|s, _| s < 2.5), 3);
            assert!(z.remove(b"a") && !z.remove(b"a"));
            assert_eq!(z.rank(b"c"), Some(1));
            assert_eq!(z.len(), 4);
        }
    }

    #[test]
    fn lex_bounds_on_mixed_scores_give_the_same_ranks_in_both_forms() {
        // Members out of lex order, as different scores put them.
        let entries = [
            ("y", 1.0),
            ("b", 2.0),
            ("x", 3.0),
            ("c", 4.0),
            ("w", 5.0),
            ("a", 6.0),
        ];
        let mut compact = Zset::new();
        let mut tree = Zset::new();
        for (m, s) in entries {
            compact
                .insert(m.into(), s, CompactLimits::default())
                .unwrap();
            tree.insert(m.into(), s, SMALL).unwrap();
        }
        assert_eq!(
            (compact.encoding(), tree.encoding()),
            ("listpack", "skiplist")
        );
        for bound in [&b"a"[..], b"c", b"w", b"x", b"z"] {
            assert_eq!(
                compact.count_while_by_rank(&|m| m < bound),
                tree.count_while_by_rank(&|m| m < bound),
                "bound {bound:?}"
            );
        }
    }

    #[test]
    fn outgrowing_the_limits_makes_a_tree_for_good() {
        let mut z = Zset::new();
        for i in 0..4 {
            z.insert(format!("m{i}").into_bytes(), i as f64, SMALL)
                .unwrap();
        }
        assert_eq!(z.encoding(), "listpack");
        let compact_size = z.size();
        z.insert(b"m4".to_vec(), 4.0, SMALL).unwrap();
        assert_eq!(z.encoding(), "skiplist");
        assert_eq!(z.size(), compact_size + Zset::member_cost(2));
        z.remove(b"m4");
        assert_eq!(z.encoding(), "skiplist", "no way back, as in Redis");
        let mut long = Zset::new();
        long.insert(b"a-long-member".to_vec(), 0.0, SMALL).unwrap();
        assert_eq!(long.encoding(), "skiplist");
        assert_eq!(Zset::for_size(5, 1, SMALL).encoding(), "skiplist");
        assert_eq!(Zset::for_size(4, 8, SMALL).encoding(), "listpack");
    }

    #[test]
    fn the_tree_agrees_with_a_sorted_vector_under_random_changes() {
        let tree_limits = CompactLimits {
            entries: 0,
            value: 0,
        };
        let (mut tree, mut flat) = (Zset::new(), Zset::new());
        let mut rng = faultline_rng::Rng::new(7);
        for _ in 0..3000 {
            let seed = rng.next_u64();
            let member = format!("{}", (seed >> 33) % 200).into_bytes();
            let score = ((seed >> 20) % 50) as f64;
            if seed >> 62 == 0 {
                assert_eq!(tree.remove(&member), flat.remove(&member));
            } else if seed >> 62 == 1 {
                assert_eq!(
                    tree.set_score(&member, score),
                    flat.set_score(&member, score)
                );
            } else {
                let unlimited = CompactLimits {
                    entries: usize::MAX,
                    value: usize::MAX,
                };
                assert_eq!(
                    tree.insert(member.clone(), score, tree_limits),
                    flat.insert(member, score, unlimited)
                );
            }
        }
        assert_eq!(tree.encoding(), "skiplist");
        assert_eq!(flat.encoding(), "listpack");
        // Taking members out by rank, from the middle and both ends.
        for rank in [3, 0, usize::MAX, 10] {
            let rank = rank.min(flat.len() - 1);
            assert_eq!(tree.remove_at(rank), flat.remove_at(rank));
        }
        assert_eq!(tree.remove_at(flat.len()), None);
        assert_eq!(members(&tree), members(&flat));
        assert_eq!(tree.size(), flat.size());
        for (rank, (member, _)) in members(&flat).iter().enumerate() {
            assert_eq!(tree.rank(member), Some(rank));
        }
        assert!(tree == flat);
    }

    #[test]
    fn a_tree_scan_returns_every_member() {
        let limits = CompactLimits {
            entries: 0,
            value: 0,
        };
        let mut z = Zset::new();
        for i in 0..500 {
            z.insert(format!("m{i}").into_bytes(), 0.0, limits).unwrap();
        }
        let (mut cursor, mut seen) = (0, 0);
        loop {
            let (next, found) = z.scan(cursor, 10);
            seen += found.len();
            if next == 0 {
                break;
            }
            cursor = next;
        }
        assert_eq!(seen, 500);
    }
}
