//! ACL categories: the groups (`@read`, `@string`, `@dangerous`, ...) a
//! command belongs to, as Redis 7.0 names them. `COMMAND INFO` shows them
//! and `COMMAND LIST FILTERBY ACLCAT` selects by them; ACL rules will
//! allow or deny by them.
//!
//! A command's categories are a [`Categories`] bit set: the command table
//! names the ones that say what a command works on, and adds the ones its
//! flags imply, as Redis does.

/// A set of ACL categories, one bit each.
pub(crate) type Categories = u32;

/// No category named in the table (the flags may still imply some).
pub(crate) const NONE: Categories = 0;
pub(crate) const KEYSPACE: Categories = 1;
pub(crate) const READ: Categories = 1 << 1;
pub(crate) const WRITE: Categories = 1 << 2;
pub(crate) const SET: Categories = 1 << 3;
pub(crate) const SORTEDSET: Categories = 1 << 4;
pub(crate) const LIST: Categories = 1 << 5;
pub(crate) const HASH: Categories = 1 << 6;
pub(crate) const STRING: Categories = 1 << 7;
pub(crate) const BITMAP: Categories = 1 << 8;
pub(crate) const HYPERLOGLOG: Categories = 1 << 9;
pub(crate) const GEO: Categories = 1 << 10;
pub(crate) const STREAM: Categories = 1 << 11;
pub(crate) const PUBSUB: Categories = 1 << 12;
pub(crate) const ADMIN: Categories = 1 << 13;
pub(crate) const FAST: Categories = 1 << 14;
pub(crate) const SLOW: Categories = 1 << 15;
pub(crate) const BLOCKING: Categories = 1 << 16;
pub(crate) const DANGEROUS: Categories = 1 << 17;
pub(crate) const CONNECTION: Categories = 1 << 18;
pub(crate) const TRANSACTION: Categories = 1 << 19;
pub(crate) const SCRIPTING: Categories = 1 << 20;

/// Category names in Redis's order (the order `COMMAND INFO` lists them).
pub(crate) const NAMES: &[(Categories, &str)] = &[
    (KEYSPACE, "keyspace"),
    (READ, "read"),
    (WRITE, "write"),
    (SET, "set"),
    (SORTEDSET, "sortedset"),
    (LIST, "list"),
    (HASH, "hash"),
    (STRING, "string"),
    (BITMAP, "bitmap"),
    (HYPERLOGLOG, "hyperloglog"),
    (GEO, "geo"),
    (STREAM, "stream"),
    (PUBSUB, "pubsub"),
    (ADMIN, "admin"),
    (FAST, "fast"),
    (SLOW, "slow"),
    (BLOCKING, "blocking"),
    (DANGEROUS, "dangerous"),
    (CONNECTION, "connection"),
    (TRANSACTION, "transaction"),
    (SCRIPTING, "scripting"),
];

/// The category called `name` (without the `@`), any case.
pub(crate) fn by_name(name: &[u8]) -> Option<Categories> {
    NAMES
        .iter()
        .find(|(_, known)| known.as_bytes().eq_ignore_ascii_case(name))
        .map(|(bit, _)| *bit)
}

/// The names of the categories in `set`, in Redis's order.
pub(crate) fn names(set: Categories) -> impl Iterator<Item = &'static str> {
    NAMES
        .iter()
        .filter(move |(bit, _)| set & bit != 0)
        .map(|(_, name)| *name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_bits_agree() {
        for (bit, name) in NAMES {
            assert_eq!(by_name(name.as_bytes()), Some(*bit));
            assert_eq!(names(*bit).collect::<alloc::vec::Vec<_>>(), [*name]);
        }
        assert_eq!(by_name(b"SCRIPTING"), Some(SCRIPTING));
        assert_eq!(by_name(b"non_existing_category"), None);
        assert_eq!(
            names(STRING | READ | FAST).collect::<alloc::vec::Vec<_>>(),
            ["read", "string", "fast"]
        );
    }
}
