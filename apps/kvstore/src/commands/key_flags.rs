//! How a command uses each of its keys, as Redis 7.0's key specifications
//! say (`RO access` for a read, `OW update` for an overwrite, `RM delete`
//! for a removal, ...): what `COMMAND GETKEYSANDFLAGS` reports, and what
//! ACL key permissions will check.

use alloc::vec::Vec;

use super::table::Spec;

/// A set of key flags, one bit each.
pub(crate) type KeyFlags = u16;

/// Read and write: the command may modify the value or its metadata.
pub(crate) const RW: KeyFlags = 1;
/// Read only.
pub(crate) const RO: KeyFlags = 1 << 1;
/// Overwrite: the old value is not read.
pub(crate) const OW: KeyFlags = 1 << 2;
/// Remove: the key is deleted.
pub(crate) const RM: KeyFlags = 1 << 3;
/// The user's data is returned or copied.
pub(crate) const ACCESS: KeyFlags = 1 << 4;
/// The value is updated or replaced.
pub(crate) const UPDATE: KeyFlags = 1 << 5;
/// Data is added, none changed.
pub(crate) const INSERT: KeyFlags = 1 << 6;
/// Data is removed.
pub(crate) const DELETE: KeyFlags = 1 << 7;
/// Placed as a key, but not one (a shard channel).
pub(crate) const NOT_KEY: KeyFlags = 1 << 8;
/// Not every key is found (`SORT`'s `BY` and `GET` patterns).
pub(crate) const INCOMPLETE: KeyFlags = 1 << 9;
/// The arguments decide the flags (`SET ... GET`, `BITFIELD`).
pub(crate) const VARIABLE_FLAGS: KeyFlags = 1 << 10;

/// Flag names in Redis's order.
pub(crate) const NAMES: &[(KeyFlags, &str)] = &[
    (RW, "RW"),
    (RO, "RO"),
    (OW, "OW"),
    (RM, "RM"),
    (ACCESS, "access"),
    (UPDATE, "update"),
    (INSERT, "insert"),
    (DELETE, "delete"),
    (NOT_KEY, "not_key"),
    (INCOMPLETE, "incomplete"),
    (VARIABLE_FLAGS, "variable_flags"),
];

/// The names of the flags in `flags`, in Redis's order.
pub(crate) fn names(flags: KeyFlags) -> impl Iterator<Item = &'static str> {
    NAMES
        .iter()
        .filter(move |(bit, _)| flags & bit != 0)
        .map(|(_, name)| *name)
}

/// The flags of each of a command's key specifications, in Redis's order
/// (redis-server 7.0.15's `COMMAND INFO`); none for a command without keys.
pub(crate) fn specs(name: &str) -> &'static [KeyFlags] {
    match name {
        "get"
        | "getrange"
        | "substr"
        | "getbit"
        | "bitcount"
        | "bitpos"
        | "bitfield_ro"
        | "lcs"
        | "mget"
        | "hget"
        | "hmget"
        | "hkeys"
        | "hvals"
        | "hgetall"
        | "hrandfield"
        | "hscan"
        | "lrange"
        | "lindex"
        | "lpos"
        | "smismember"
        | "smembers"
        | "srandmember"
        | "sinter"
        | "sintercard"
        | "sunion"
        | "sdiff"
        | "sscan"
        | "zscore"
        | "zmscore"
        | "zrank"
        | "zrevrank"
        | "zcount"
        | "zlexcount"
        | "zrange"
        | "zrevrange"
        | "zrangebyscore"
        | "zrevrangebyscore"
        | "zrangebylex"
        | "zrevrangebylex"
        | "zrandmember"
        | "zscan"
        | "zunion"
        | "zinter"
        | "zdiff"
        | "zintercard"
        | "geodist"
        | "geohash"
        | "geopos"
        | "georadius_ro"
        | "georadiusbymember_ro"
        | "geosearch"
        | "xrange"
        | "xrevrange"
        | "xread"
        | "xreadgroup"
        | "xpending"
        | "xinfo|stream"
        | "xinfo|groups"
        | "xinfo|consumers"
        | "ttl"
        | "pttl"
        | "expiretime"
        | "pexpiretime"
        | "eval_ro"
        | "evalsha_ro"
        | "fcall_ro" => &[RO | ACCESS],
        "watch" | "strlen" | "hexists" | "hlen" | "hstrlen" | "llen" | "scard" | "sismember"
        | "zcard" | "xlen" | "touch" | "exists" | "type" | "object|encoding"
        | "object|refcount" | "object|idletime" | "object|freq" | "memory|usage" => &[RO],
        "setrange" | "hset" | "hmset" | "lset" | "zadd" | "geoadd" | "xadd" | "xsetid" | "xack"
        | "xclaim" | "xgroup|setid" | "expire" | "pexpire" | "expireat" | "pexpireat"
        | "persist" => &[RW | UPDATE],
        "getset" | "incr" | "decr" | "incrby" | "decrby" | "getex" | "incrbyfloat" | "setbit"
        | "hincrby" | "hincrbyfloat" | "zincrby" | "move" | "eval" | "evalsha" | "fcall" => {
            &[RW | ACCESS | UPDATE]
        }
        "getdel" | "lpop" | "rpop" | "lmpop" | "blpop" | "brpop" | "blmpop" | "spop"
        | "zpopmin" | "zpopmax" | "zmpop" | "bzpopmin" | "bzpopmax" | "bzmpop" => {
            &[RW | ACCESS | DELETE]
        }
        "hdel" | "lrem" | "ltrim" | "srem" | "zrem" | "zremrangebyrank" | "zremrangebyscore"
        | "zremrangebylex" | "xdel" | "xtrim" | "xautoclaim" | "xgroup|destroy"
        | "xgroup|delconsumer" => &[RW | DELETE],
        "append"
        | "pfadd"
        | "hsetnx"
        | "lpush"
        | "rpush"
        | "lpushx"
        | "rpushx"
        | "linsert"
        | "sadd"
        | "xgroup|create"
        | "xgroup|createconsumer" => &[RW | INSERT],
        "bitop" | "sunionstore" | "sdiffstore" | "zrangestore" | "zunionstore" | "zinterstore"
        | "zdiffstore" | "geosearchstore" => &[OW | UPDATE, RO | ACCESS],
        "rpoplpush" | "lmove" | "brpoplpush" | "blmove" | "smove" => {
            &[RW | ACCESS | DELETE, RW | INSERT]
        }
        "ssubscribe" | "sunsubscribe" | "spublish" => &[NOT_KEY],
        "setex" | "psetex" | "mset" => &[OW | UPDATE],
        "set" | "bitfield" => &[RW | ACCESS | UPDATE | VARIABLE_FLAGS],
        "setnx" | "msetnx" => &[OW | INSERT],
        "pfcount" | "pfdebug" => &[RW | ACCESS],
        "georadius" | "georadiusbymember" => &[RO | ACCESS, OW | UPDATE, OW | UPDATE],
        "del" | "unlink" => &[RM | DELETE],
        "pfmerge" => &[RW | ACCESS | INSERT, RO | ACCESS],
        "sinterstore" => &[RW | UPDATE, RO | ACCESS],
        "sort" => &[RO | ACCESS, RO | ACCESS, OW | UPDATE],
        "sort_ro" => &[RO | ACCESS, RO | ACCESS],
        "rename" => &[RW | ACCESS | DELETE, OW | UPDATE],
        "renamenx" => &[RW | ACCESS | DELETE, OW | INSERT],
        "copy" => &[RO | ACCESS, OW | UPDATE],
        _ => &[],
    }
}

/// The flags of the keys at `keys` (positions in `args`, as
/// `key_positions` finds them). The n-th key has the n-th specification's
/// flags (the last one's past it), as the commands list their keys in the
/// order of their specifications; but `SORT`'s destination has the third
/// (the second is for its patterns), and `SET` and `BITFIELD` decide by
/// their arguments, as Redis's `setGetKeys` and `bitfieldGetKeys`.
pub(crate) fn of_keys(spec: &Spec, args: &[Vec<u8>], keys: &[usize]) -> Vec<KeyFlags> {
    let specs = specs(spec.name);
    (0..keys.len())
        .map(|nth| match spec.name {
            "set" => set_flags(args),
            "bitfield" => bitfield_flags(args),
            "sort" if nth > 0 => specs.get(2).copied().unwrap_or(0),
            _ => specs
                .get(nth.min(specs.len().saturating_sub(1)))
                .copied()
                .unwrap_or(0),
        })
        .collect()
}

/// `SET key value ... GET` reads the old value; without `GET` it is
/// overwritten.
fn set_flags(args: &[Vec<u8>]) -> KeyFlags {
    if args.iter().skip(3).any(|a| a.eq_ignore_ascii_case(b"get")) {
        RW | ACCESS | UPDATE
    } else {
        OW | UPDATE
    }
}

/// `BITFIELD` with only `GET` (and `OVERFLOW`) operations reads; any
/// other, or arguments it cannot parse, may write.
fn bitfield_flags(args: &[Vec<u8>]) -> KeyFlags {
    let mut at = 2;
    while at < args.len() {
        let left = args.len() - at - 1;
        let word = &args[at];
        if word.eq_ignore_ascii_case(b"get") && left >= 2 {
            at += 3;
        } else if word.eq_ignore_ascii_case(b"overflow") && left >= 1 {
            at += 2;
        } else {
            return RW | ACCESS | UPDATE;
        }
    }
    RO | ACCESS
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::key_positions::key_positions;
    use crate::commands::table::lookup;

    fn flags_of(words: &str) -> Vec<Vec<&'static str>> {
        let args: Vec<Vec<u8>> = words.split(' ').map(|w| w.as_bytes().to_vec()).collect();
        let spec = lookup(&args[0]).expect("a command");
        let keys = key_positions(spec, &args).expect("keys");
        of_keys(spec, &args, &keys)
            .into_iter()
            .map(|f| names(f).collect())
            .collect()
    }

    #[test]
    fn keys_take_their_specifications_flags() {
        assert_eq!(flags_of("get k"), [["RO", "access"]]);
        assert_eq!(flags_of("del a b"), [["RM", "delete"], ["RM", "delete"]]);
        assert_eq!(
            flags_of("lmove a b left right"),
            [&["RW", "access", "delete"][..], &["RW", "insert"]]
        );
        assert_eq!(
            flags_of("zunionstore d 2 a b"),
            [["OW", "update"], ["RO", "access"], ["RO", "access"]]
        );
        assert_eq!(
            flags_of("sort k1 store k2"),
            [["RO", "access"], ["OW", "update"]]
        );
    }

    #[test]
    fn set_and_bitfield_decide_by_their_arguments() {
        assert_eq!(flags_of("set k v"), [["OW", "update"]]);
        assert_eq!(flags_of("set k v get"), [["RW", "access", "update"]]);
        assert_eq!(flags_of("bitfield k get u8 0"), [["RO", "access"]]);
        assert_eq!(
            flags_of("bitfield k get u8 0 set u8 0 1"),
            [["RW", "access", "update"]]
        );
        assert_eq!(flags_of("bitfield k get u8"), [["RW", "access", "update"]]);
    }
}
