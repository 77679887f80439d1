//! The command table: names, arity, flags and handlers, in one place.
//!
//! Dispatch, argument-count errors, `-OOM` checks and the `COMMAND` reply
//! all read this table, so they cannot disagree.

use super::categories::{self as cat, Categories};
use super::exec::Exec;
use super::hashes::{self, hincr_growth, hset_growth};
use super::hyperloglog::{self, hll_growth};
use super::list_moves::{self, lmove_growth};
use super::lists::{self, linsert_growth, lset_growth, push_growth};
use super::sets::{self, sadd_growth, smove_growth, store_growth};
use super::{
    acl, auth, bitfield, bitop, bits, cluster, connection, expire, hll_debug, info, introspect,
    keys, lcs, memory, object, persistence, pubsub, sort, string_ops, strings, unblock,
};
use super::{client_pause, dump, geo, geo_search, latency, slowlog, tracking};
use super::{stream_groups as groups, streams, zset_algebra, zset_pops, zset_ranges, zsets};
use crate::config::Config;
use crate::resp::Reply;
use crate::store::Store;

/// Runs one command; `args[0]` is the command name (or, for subcommands,
/// `args[1]` is the subcommand name).
pub(crate) type Handler = fn(&mut Exec<'_>, &mut [alloc::vec::Vec<u8>]) -> Reply;

/// How many bytes a write may add to the dataset, for `maxmemory`. A
/// write its own checks refuse (a size past `proto-max-bulk-len`) adds
/// nothing, so that it gets its own error rather than `-OOM`.
pub(crate) type Growth = fn(&Store, &Config, &[alloc::vec::Vec<u8>]) -> usize;

/// Flag bits, reported by `COMMAND` under Redis's names.
pub(crate) const WRITE: u16 = 1;
pub(crate) const READONLY: u16 = 2;
pub(crate) const DENYOOM: u16 = 4;
pub(crate) const FAST: u16 = 8;
pub(crate) const ADMIN: u16 = 16;
pub(crate) const LOADING: u16 = 32;
pub(crate) const STALE: u16 = 64;
/// Refused inside `MULTI` (the transaction then fails).
pub(crate) const NO_MULTI: u16 = 128;
/// May make the client wait for a key (`BLPOP`, ...; see
/// `kvstore::blocking`).
pub(crate) const BLOCKING: u16 = 256;
/// Where the keys are depends on the arguments (a key count, an option
/// such as `STORE`): `COMMAND GETKEYS` parses them (see
/// `key_positions`). Set by the table itself, from the command's name.
pub(crate) const MOVABLEKEYS: u16 = 512;

/// Flag names in `COMMAND` order.
pub(crate) const FLAG_NAMES: &[(u16, &str)] = &[
    (WRITE, "write"),
    (READONLY, "readonly"),
    (DENYOOM, "denyoom"),
    (ADMIN, "admin"),
    (LOADING, "loading"),
    (STALE, "stale"),
    (FAST, "fast"),
    (NO_MULTI, "no_multi"),
    (MOVABLEKEYS, "movablekeys"),
    (BLOCKING, "blocking"),
];

/// One command or subcommand.
pub(crate) struct Spec {
    /// Lowercase full name: `get`, or `config|get` for a subcommand.
    pub name: &'static str,
    /// Redis arity: exact argument count including the name if positive,
    /// minimum if negative.
    pub arity: i32,
    /// `WRITE`, `READONLY`, ... bits, for `COMMAND`.
    pub flags: u16,
    /// ACL categories: those the table names and those the flags imply.
    pub acl: Categories,
    /// First key, last key (negative: from the end) and step, as `COMMAND`
    /// reports them.
    pub keys: (i32, i32, i32),
    /// `None` for containers such as `CONFIG` that need a subcommand.
    pub run: Option<Handler>,
    /// Memory growth estimate; only `DENYOOM` commands have one.
    pub growth: Option<Growth>,
    pub subcommands: &'static [Spec],
}

impl Spec {
    /// Whether `argc` arguments (name included) satisfy the arity.
    pub fn arity_ok(&self, argc: usize) -> bool {
        let argc = i64::try_from(argc).unwrap_or(i64::MAX);
        let arity = i64::from(self.arity);
        if arity >= 0 {
            argc == arity
        } else {
            argc >= -arity
        }
    }

    /// The name as typed after the `|`, for matching subcommands.
    pub fn short_name(&self) -> &'static str {
        self.name.rsplit('|').next().unwrap_or(self.name)
    }

    /// Finds a subcommand by name, any case.
    pub fn subcommand(&self, name: &[u8]) -> Option<&'static Spec> {
        find(self.subcommands, name)
    }
}

/// Looks a command up by name, any case: the name is lowercased and
/// hashed in one pass, then found in [`BY_HASH`] (it runs for every
/// request, and for every command a script calls: usually one probe and
/// one comparison).
pub(crate) fn lookup(name: &[u8]) -> Option<&'static Spec> {
    let mut buffer = [0u8; LONGEST_NAME];
    // Longer than every name: no such command.
    let lowered = buffer.get_mut(..name.len())?;
    let mut hash = HASH_START;
    for (to, from) in lowered.iter_mut().zip(name) {
        *to = from.to_ascii_lowercase();
        hash = hash_step(hash, *to);
    }
    let lowered = &*lowered;
    let mut slot = hash as usize;
    loop {
        slot &= SLOTS - 1;
        let spec = TABLE.get(usize::from(BY_HASH[slot]))?;
        if spec.name.as_bytes() == lowered {
            return Some(spec);
        }
        slot += 1;
    }
}

/// The full name of the command `args` call (`get`, `client|list`; a
/// container without its subcommand is itself), `None` if there is no
/// such command or subcommand.
pub(crate) fn full_name(args: &[alloc::vec::Vec<u8>]) -> Option<&'static str> {
    let spec = lookup(args.first()?)?;
    match args.get(1) {
        Some(sub) if !spec.subcommands.is_empty() => spec.subcommand(sub).map(|s| s.name),
        _ => Some(spec.name),
    }
}

/// The bytes of `args` as a request in RESP (`*2\r\n$6\r\nclient...`).
pub(crate) fn request_len(args: &[alloc::vec::Vec<u8>]) -> usize {
    let digits = |n: usize| n.checked_ilog10().unwrap_or(0) as usize + 1;
    let header = 1 + digits(args.len()) + 2;
    header
        + args
            .iter()
            .map(|a| 1 + digits(a.len()) + 2 + a.len() + 2)
            .sum::<usize>()
}

/// The longest command name.
const LONGEST_NAME: usize = longest_name(TABLE);

const fn longest_name(table: &[Spec]) -> usize {
    let (mut i, mut longest) = (0, 0);
    while i < table.len() {
        if table[i].name.len() > longest {
            longest = table[i].name.len();
        }
        i += 1;
    }
    longest
}

/// Slots of [`BY_HASH`]: a power of two, at most half of them used, so
/// that probes stay short.
const SLOTS: usize = (TABLE.len() * 2).next_power_of_two();

/// Indexes of [`TABLE`] by the hash of their names (open addressing,
/// probing the next slot), built at compile time; an empty slot holds an
/// index past the table.
static BY_HASH: [u16; SLOTS] = hashed(TABLE);

/// FNV-1a, 32 bits: a few instructions a byte, and spreads short names.
const HASH_START: u32 = 0x811c_9dc5;

const fn hash_step(hash: u32, byte: u8) -> u32 {
    (hash ^ byte as u32).wrapping_mul(0x0100_0193)
}

const fn hashed<const N: usize>(table: &[Spec]) -> [u16; N] {
    assert!(table.len() < u16::MAX as usize, "indexes fit a u16");
    let mut slots = [u16::MAX; N];
    let mut i = 0;
    while i < table.len() {
        let name = table[i].name.as_bytes();
        let (mut hash, mut at) = (HASH_START, 0);
        while at < name.len() {
            hash = hash_step(hash, name[at]);
            at += 1;
        }
        let mut slot = hash as usize & (N - 1);
        while slots[slot] != u16::MAX {
            slot = (slot + 1) & (N - 1);
        }
        slots[slot] = i as u16;
        i += 1;
    }
    slots
}

fn find(specs: &'static [Spec], name: &[u8]) -> Option<&'static Spec> {
    specs
        .iter()
        .find(|spec| spec.short_name().as_bytes().eq_ignore_ascii_case(name))
}

/// A command: `categories` are the ACL categories its flags do not imply
/// (what it works on: `cat::STRING`, `cat::KEYSPACE`, ...; `cat::DANGEROUS`
/// for a non-admin command Redis counts as dangerous).
const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u16,
    categories: Categories,
    keys: (i32, i32, i32),
    run: Handler,
) -> Spec {
    let flags = if crate::commands::key_positions::movable(name) {
        flags | MOVABLEKEYS
    } else {
        flags
    };
    Spec {
        name,
        arity,
        flags,
        acl: implied(categories, flags),
        keys,
        run: Some(run),
        growth: None,
        subcommands: &[],
    }
}

const fn grows(mut spec: Spec, growth: Growth) -> Spec {
    spec.flags |= DENYOOM;
    spec.growth = Some(growth);
    spec
}

/// `categories`, as with [`cmd`], plus what the flags imply, as Redis's
/// `setImplicitACLCategories`: `write` is `@write`, `readonly` `@read`
/// (unless it is `@scripting`), `admin` `@admin` and `@dangerous`,
/// `blocking` `@blocking`, and every command is `@fast` or `@slow`.
const fn implied(categories: Categories, flags: u16) -> Categories {
    let mut set = categories;
    if flags & WRITE != 0 {
        set |= cat::WRITE;
    }
    if flags & READONLY != 0 && categories & cat::SCRIPTING == 0 {
        set |= cat::READ;
    }
    if flags & ADMIN != 0 {
        set |= cat::ADMIN | cat::DANGEROUS;
    }
    if flags & BLOCKING != 0 {
        set |= cat::BLOCKING;
    }
    set | if flags & FAST != 0 {
        cat::FAST
    } else {
        cat::SLOW
    }
}

/// A command that only groups subcommands (`CONFIG`, `CLIENT`, ...).
const fn container(
    name: &'static str,
    categories: Categories,
    subcommands: &'static [Spec],
) -> Spec {
    Spec {
        name,
        arity: -2,
        flags: 0,
        acl: implied(categories, 0),
        keys: (0, 0, 0),
        run: None,
        growth: None,
        subcommands,
    }
}

/// The handler of commands the engine runs itself, because they need more
/// than one command's context: `SWAPDB` (every database) and the
/// transaction commands (a client's queue, see `commands::transaction`).
/// The engine intercepts them before dispatch, so this answers only if
/// that ever failed to happen.
fn in_engine(x: &mut Exec<'_>, _args: &mut [alloc::vec::Vec<u8>]) -> Reply {
    Reply::Error(alloc::format!(
        "ERR '{}' cannot run here (an engine command)",
        x.fullname
    ))
}

const NO_KEYS: (i32, i32, i32) = (0, 0, 0);
const ONE_KEY: (i32, i32, i32) = (1, 1, 1);
const ALL_KEYS: (i32, i32, i32) = (1, -1, 1);

/// Growth of `FUNCTION LOAD ... code` and `FUNCTION RESTORE payload`:
/// the code kept (Lua's share is counted once it is loaded).
fn code_growth(_store: &Store, _limits: &Config, args: &[alloc::vec::Vec<u8>]) -> usize {
    args.get(2..)
        .map_or(0, |rest| rest.iter().map(alloc::vec::Vec::len).sum())
}

/// Growth of setting `args[1]` to `args[2]`.
fn set_growth(store: &Store, _limits: &Config, args: &[alloc::vec::Vec<u8>]) -> usize {
    store.growth_if_set(&args[1], args[2].len())
}

/// Growth of `MSET k1 v1 k2 v2 ...` (repeated keys counted each time).
fn mset_growth(store: &Store, _limits: &Config, args: &[alloc::vec::Vec<u8>]) -> usize {
    args[1..]
        .chunks(2)
        .filter(|pair| pair.len() == 2)
        .map(|pair| store.growth_if_set(&pair[0], pair[1].len()))
        .sum()
}

/// Growth of `SETEX key seconds value` (and `PSETEX`).
fn setex_growth(store: &Store, _limits: &Config, args: &[alloc::vec::Vec<u8>]) -> usize {
    store.growth_if_set(&args[1], args[3].len())
}

/// Growth of `SETRANGE key offset value`: up to the offset plus the value.
fn setrange_growth(store: &Store, limits: &Config, args: &[alloc::vec::Vec<u8>]) -> usize {
    let offset = crate::num::parse_i64(&args[2]).unwrap_or(0).max(0) as u64;
    let end = offset.saturating_add(args[3].len() as u64);
    if end > limits.proto_max_bulk_len {
        return 0;
    }
    let end = end as usize;
    match store.get(&args[1]) {
        Some(entry) => end.saturating_sub(entry.value().len()),
        None => Store::cost(args[1].len(), end),
    }
}

/// Growth of `COPY source destination`: the source's value again.
fn copy_growth(store: &Store, _limits: &Config, args: &[alloc::vec::Vec<u8>]) -> usize {
    store
        .get(&args[1])
        .map_or(0, |e| store.growth_if_set(&args[2], e.data().size()))
}

/// Growth of `RESTORE key ttl payload`: the payload's size stands for
/// the value's (Redis's own estimate is no finer before it decodes).
fn restore_growth(store: &Store, _limits: &Config, args: &[alloc::vec::Vec<u8>]) -> usize {
    store.growth_if_set(&args[1], args[3].len())
}

/// Growth of `APPEND key suffix`.
fn append_growth(store: &Store, _limits: &Config, args: &[alloc::vec::Vec<u8>]) -> usize {
    match store.get(&args[1]) {
        Some(_) => args[2].len(),
        None => Store::cost(args[1].len(), args[2].len()),
    }
}

/// Growth of an `INCR`-family command: at most a 20-digit number.
fn counter_growth(store: &Store, _limits: &Config, args: &[alloc::vec::Vec<u8>]) -> usize {
    store.growth_if_set(&args[1], 20)
}

/// Growth of `XGROUP CREATE|CREATECONSUMER`: a group or consumer, and
/// the key if `MKSTREAM` creates it.
fn group_growth(store: &Store, _limits: &Config, args: &[alloc::vec::Vec<u8>]) -> usize {
    let names: usize = args[3..].iter().map(alloc::vec::Vec::len).sum();
    let group = crate::store::GROUP_OVERHEAD + names;
    match store.get(&args[2]) {
        Some(_) => group,
        None => Store::cost(args[2].len(), group),
    }
}

const W: u16 = WRITE;
const R: u16 = READONLY;
const RF: u16 = READONLY | FAST;
const WF: u16 = WRITE | FAST;
const WB: u16 = WRITE | BLOCKING;
const CONN: u16 = FAST | LOADING | STALE;
const NO_FLAGS: u16 = 0;
const PUBSUB: u16 = LOADING | STALE;
/// Runs while loading and on a stale replica, not `@fast` (help texts,
/// `CLIENT SETNAME`, ...).
const HELP: u16 = LOADING | STALE;
/// An administrator's command that runs at any time (`CONFIG GET`,
/// `CLIENT LIST`, ...).
const ADM: u16 = ADMIN | LOADING | STALE;
/// Keys from the second to the one before the last (`BLPOP`'s).
const ALL_BUT_LAST: (i32, i32, i32) = (1, -2, 1);
/// Every argument after the name: the shard channels of `SSUBSCRIBE`,
/// which `COMMAND` places as keys (for cluster routing) though they are
/// not keys (see `key_positions::has_keys`).
const CHANNELS: (i32, i32, i32) = (1, -1, 1);
/// Source and destination (`LMOVE`'s).
const TWO_KEYS: (i32, i32, i32) = (1, 2, 1);

/// Every command, in the order `COMMAND` lists them.
pub(crate) static COMMANDS: &[Spec] = TABLE;

/// One line a command: name, arity, flags, the ACL categories the flags
/// do not imply, key places, handler (and memory growth for `grows`).
#[rustfmt::skip]
const TABLE: &[Spec] = &[
    cmd("ping", -1, CONN, cat::CONNECTION, NO_KEYS, connection::ping),
    cmd("echo", 2, CONN, cat::CONNECTION, NO_KEYS, connection::echo),
    cmd("time", 1, CONN, cat::NONE, NO_KEYS, connection::time),
    cmd("quit", -1, CONN, cat::CONNECTION, NO_KEYS, connection::quit),
    cmd("monitor", 1, ADMIN | LOADING | STALE | NO_MULTI, cat::NONE, NO_KEYS, connection::monitor),
    cmd("reset", 1, CONN, cat::CONNECTION, NO_KEYS, connection::reset),
    cmd("subscribe", -2, PUBSUB, cat::PUBSUB, NO_KEYS, pubsub::subscribe),
    cmd("psubscribe", -2, PUBSUB, cat::PUBSUB, NO_KEYS, pubsub::psubscribe),
    cmd("unsubscribe", -1, PUBSUB, cat::PUBSUB, NO_KEYS, pubsub::unsubscribe),
    cmd("punsubscribe", -1, PUBSUB, cat::PUBSUB, NO_KEYS, pubsub::punsubscribe),
    cmd("publish", 3, PUBSUB | FAST, cat::PUBSUB, NO_KEYS, pubsub::publish),
    cmd("ssubscribe", -2, PUBSUB, cat::PUBSUB, CHANNELS, pubsub::ssubscribe),
    cmd("sunsubscribe", -1, PUBSUB, cat::PUBSUB, CHANNELS, pubsub::sunsubscribe),
    cmd("spublish", 3, PUBSUB | FAST, cat::PUBSUB, (1, 1, 1), pubsub::spublish),
    container("pubsub", cat::NONE, &[
        cmd("pubsub|channels", -2, PUBSUB, cat::PUBSUB, NO_KEYS, pubsub::channels),
        cmd("pubsub|numsub", -2, PUBSUB, cat::PUBSUB, NO_KEYS, pubsub::numsub),
        cmd("pubsub|numpat", 2, PUBSUB, cat::PUBSUB, NO_KEYS, pubsub::numpat),
        cmd("pubsub|shardchannels", -2, PUBSUB, cat::PUBSUB, NO_KEYS, pubsub::shardchannels),
        cmd("pubsub|shardnumsub", -2, PUBSUB, cat::PUBSUB, NO_KEYS, pubsub::shardnumsub),
    ]),
    cmd("auth", -2, CONN, cat::CONNECTION, NO_KEYS, auth::auth),
    cmd("hello", -1, CONN, cat::CONNECTION, NO_KEYS, auth::hello),
    cmd("select", 2, CONN, cat::CONNECTION, NO_KEYS, connection::select),
    cmd("multi", 1, FAST | LOADING | STALE, cat::TRANSACTION, NO_KEYS, in_engine),
    cmd("exec", 1, LOADING | STALE, cat::TRANSACTION, NO_KEYS, in_engine),
    cmd("discard", 1, FAST | LOADING | STALE, cat::TRANSACTION, NO_KEYS, in_engine),
    cmd("watch", -2, FAST | LOADING | STALE, cat::TRANSACTION, (1, -1, 1), in_engine),
    cmd("unwatch", 1, FAST | LOADING | STALE, cat::TRANSACTION, NO_KEYS, in_engine),
    container("client", cat::NONE, &[
        cmd("client|setname", 3, HELP, cat::CONNECTION, NO_KEYS, connection::client_setname),
        cmd("client|getname", 2, HELP, cat::CONNECTION, NO_KEYS, connection::client_getname),
        cmd("client|id", 2, HELP, cat::CONNECTION, NO_KEYS, connection::client_id),
        cmd("client|tracking", -3, HELP, cat::CONNECTION, NO_KEYS, tracking::client_tracking),
        cmd("client|caching", 3, HELP, cat::CONNECTION, NO_KEYS, tracking::client_caching),
        cmd("client|pause", -3, ADMIN | LOADING | STALE, cat::CONNECTION, NO_KEYS, client_pause::client_pause),
        cmd("client|unpause", 2, ADMIN | LOADING | STALE, cat::CONNECTION, NO_KEYS, client_pause::client_unpause),
        cmd("client|getredir", 2, HELP, cat::CONNECTION, NO_KEYS, tracking::client_getredir),
        cmd("client|trackinginfo", 2, HELP, cat::CONNECTION, NO_KEYS, tracking::client_trackinginfo),
        cmd("client|reply", 3, HELP, cat::CONNECTION, NO_KEYS, connection::client_reply),
        cmd("client|list", -2, ADM, cat::CONNECTION, NO_KEYS, connection::client_list),
        cmd("client|info", 2, HELP, cat::CONNECTION, NO_KEYS, connection::client_info),
        cmd("client|kill", -3, ADM, cat::CONNECTION, NO_KEYS, connection::client_kill),
        cmd("client|no-evict", 3, ADM, cat::CONNECTION, NO_KEYS, connection::client_no_evict),
        cmd("client|unblock", -3, ADM, cat::CONNECTION, NO_KEYS, unblock::client_unblock),
        cmd("client|setinfo", 4, HELP, cat::CONNECTION, NO_KEYS, connection::client_setinfo),
        cmd("client|help", 2, HELP, cat::CONNECTION, NO_KEYS, connection::client_help),
    ]),
    cmd("get", 2, RF, cat::STRING, ONE_KEY, strings::get),
    grows(cmd("set", -3, W, cat::STRING, ONE_KEY, strings::set), set_growth),
    grows(cmd("getset", 3, WF, cat::STRING, ONE_KEY, strings::getset), set_growth),
    grows(cmd("setnx", 3, WF, cat::STRING, ONE_KEY, strings::setnx), set_growth),
    grows(cmd("incr", 2, WF, cat::STRING, ONE_KEY, strings::incr), counter_growth),
    grows(cmd("decr", 2, WF, cat::STRING, ONE_KEY, strings::decr), counter_growth),
    grows(cmd("incrby", 3, WF, cat::STRING, ONE_KEY, strings::incrby), counter_growth),
    grows(cmd("decrby", 3, WF, cat::STRING, ONE_KEY, strings::decrby), counter_growth),
    grows(cmd("append", 3, WF, cat::STRING, ONE_KEY, strings::append), append_growth),
    cmd("strlen", 2, RF, cat::STRING, ONE_KEY, strings::strlen),
    grows(cmd("setex", 4, W, cat::STRING, ONE_KEY, string_ops::setex), setex_growth),
    grows(cmd("psetex", 4, W, cat::STRING, ONE_KEY, string_ops::psetex), setex_growth),
    cmd("getdel", 2, WF, cat::STRING, ONE_KEY, string_ops::getdel),
    cmd("getex", -2, WF, cat::STRING, ONE_KEY, string_ops::getex),
    grows(cmd("incrbyfloat", 3, WF, cat::STRING, ONE_KEY, string_ops::incrbyfloat), counter_growth),
    grows(cmd("msetnx", -3, W, cat::STRING, (1, -1, 2), string_ops::msetnx), mset_growth),
    cmd("getrange", 4, R, cat::STRING, ONE_KEY, string_ops::getrange),
    cmd("substr", 4, R, cat::STRING, ONE_KEY, string_ops::getrange),
    grows(cmd("setrange", 4, W, cat::STRING, ONE_KEY, string_ops::setrange), setrange_growth),
    grows(cmd("setbit", 4, W, cat::BITMAP, ONE_KEY, bits::setbit), bits::setbit_growth),
    cmd("getbit", 3, RF, cat::BITMAP, ONE_KEY, bits::getbit),
    cmd("bitcount", -2, R, cat::BITMAP, ONE_KEY, bits::bitcount),
    grows(cmd("bitop", -4, W, cat::BITMAP, (2, -1, 1), bitop::bitop), bitop::bitop_growth),
    cmd("bitpos", -3, R, cat::BITMAP, ONE_KEY, bitop::bitpos),
    grows(cmd("bitfield", -2, W, cat::BITMAP, ONE_KEY, bitfield::bitfield), bitfield::bitfield_growth),
    cmd("bitfield_ro", -2, RF, cat::BITMAP, ONE_KEY, bitfield::bitfield_ro),
    cmd("lcs", -3, R, cat::STRING, (1, 2, 1), lcs::lcs),
    grows(cmd("pfadd", -2, WF, cat::HYPERLOGLOG, ONE_KEY, hyperloglog::pfadd), hll_growth),
    cmd("pfcount", -2, R, cat::HYPERLOGLOG, ALL_KEYS, hyperloglog::pfcount),
    grows(cmd("pfmerge", -2, W, cat::HYPERLOGLOG, ALL_KEYS, hyperloglog::pfmerge), hll_growth),
    grows(cmd("pfdebug", 3, W | ADMIN, cat::HYPERLOGLOG, (2, 2, 1), hll_debug::pfdebug), hll_debug::pfdebug_growth),
    cmd("pfselftest", 1, ADMIN, cat::HYPERLOGLOG, NO_KEYS, hll_debug::pfselftest),
    cmd("mget", -2, RF, cat::STRING, ALL_KEYS, strings::mget),
    grows(cmd("mset", -3, W, cat::STRING, (1, -1, 2), strings::mset), mset_growth),
    grows(cmd("hset", -4, WF, cat::HASH, ONE_KEY, hashes::hset), hset_growth),
    grows(cmd("hsetnx", 4, WF, cat::HASH, ONE_KEY, hashes::hsetnx), hset_growth),
    grows(cmd("hmset", -4, WF, cat::HASH, ONE_KEY, hashes::hmset), hset_growth),
    cmd("hget", 3, RF, cat::HASH, ONE_KEY, hashes::hget),
    cmd("hmget", -3, RF, cat::HASH, ONE_KEY, hashes::hmget),
    cmd("hdel", -3, WF, cat::HASH, ONE_KEY, hashes::hdel),
    cmd("hexists", 3, RF, cat::HASH, ONE_KEY, hashes::hexists),
    cmd("hlen", 2, RF, cat::HASH, ONE_KEY, hashes::hlen),
    cmd("hstrlen", 3, RF, cat::HASH, ONE_KEY, hashes::hstrlen),
    cmd("hkeys", 2, R, cat::HASH, ONE_KEY, hashes::hkeys),
    cmd("hvals", 2, R, cat::HASH, ONE_KEY, hashes::hvals),
    cmd("hgetall", 2, R, cat::HASH, ONE_KEY, hashes::hgetall),
    grows(cmd("hincrby", 4, WF, cat::HASH, ONE_KEY, hashes::hincrby), hincr_growth),
    grows(cmd("hincrbyfloat", 4, WF, cat::HASH, ONE_KEY, hashes::hincrbyfloat), hincr_growth),
    cmd("hrandfield", -2, R, cat::HASH, ONE_KEY, hashes::hrandfield),
    cmd("hscan", -3, R, cat::HASH, ONE_KEY, hashes::hscan),
    grows(cmd("lpush", -3, WF, cat::LIST, ONE_KEY, lists::lpush), push_growth),
    grows(cmd("rpush", -3, WF, cat::LIST, ONE_KEY, lists::rpush), push_growth),
    grows(cmd("lpushx", -3, WF, cat::LIST, ONE_KEY, lists::lpushx), push_growth),
    grows(cmd("rpushx", -3, WF, cat::LIST, ONE_KEY, lists::rpushx), push_growth),
    cmd("lpop", -2, WF, cat::LIST, ONE_KEY, lists::lpop),
    cmd("rpop", -2, WF, cat::LIST, ONE_KEY, lists::rpop),
    cmd("llen", 2, RF, cat::LIST, ONE_KEY, lists::llen),
    cmd("lrange", 4, R, cat::LIST, ONE_KEY, lists::lrange),
    cmd("lindex", 3, R, cat::LIST, ONE_KEY, lists::lindex),
    grows(cmd("lset", 4, W, cat::LIST, ONE_KEY, lists::lset), lset_growth),
    grows(cmd("linsert", 5, W, cat::LIST, ONE_KEY, lists::linsert), linsert_growth),
    cmd("lrem", 4, W, cat::LIST, ONE_KEY, lists::lrem),
    cmd("ltrim", 4, W, cat::LIST, ONE_KEY, lists::ltrim),
    cmd("lpos", -3, R, cat::LIST, ONE_KEY, lists::lpos),
    grows(cmd("rpoplpush", 3, W, cat::LIST, TWO_KEYS, list_moves::rpoplpush), lmove_growth),
    grows(cmd("lmove", 5, W, cat::LIST, TWO_KEYS, list_moves::lmove), lmove_growth),
    cmd("lmpop", -4, W, cat::LIST, NO_KEYS, list_moves::lmpop),
    cmd("blpop", -3, WB, cat::LIST, ALL_BUT_LAST, list_moves::blpop),
    cmd("brpop", -3, WB, cat::LIST, ALL_BUT_LAST, list_moves::brpop),
    grows(cmd("brpoplpush", 4, WB, cat::LIST, TWO_KEYS, list_moves::brpoplpush), lmove_growth),
    grows(cmd("blmove", 6, WB, cat::LIST, TWO_KEYS, list_moves::blmove), lmove_growth),
    cmd("blmpop", -5, WB, cat::LIST, NO_KEYS, list_moves::blmpop),
    grows(cmd("sadd", -3, WF, cat::SET, ONE_KEY, sets::sadd), sadd_growth),
    cmd("srem", -3, WF, cat::SET, ONE_KEY, sets::srem),
    cmd("scard", 2, RF, cat::SET, ONE_KEY, sets::scard),
    cmd("sismember", 3, RF, cat::SET, ONE_KEY, sets::sismember),
    cmd("smismember", -3, RF, cat::SET, ONE_KEY, sets::smismember),
    cmd("smembers", 2, R, cat::SET, ONE_KEY, sets::smembers),
    cmd("srandmember", -2, R, cat::SET, ONE_KEY, sets::srandmember),
    cmd("spop", -2, WF, cat::SET, ONE_KEY, sets::spop),
    grows(cmd("smove", 4, WF, cat::SET, TWO_KEYS, sets::smove), smove_growth),
    cmd("sinter", -2, R, cat::SET, ALL_KEYS, sets::sinter),
    cmd("sintercard", -3, R, cat::SET, NO_KEYS, sets::sintercard),
    grows(cmd("sinterstore", -3, W, cat::SET, ALL_KEYS, sets::sinterstore), store_growth),
    cmd("sunion", -2, R, cat::SET, ALL_KEYS, sets::sunion),
    grows(cmd("sunionstore", -3, W, cat::SET, ALL_KEYS, sets::sunionstore), store_growth),
    cmd("sdiff", -2, R, cat::SET, ALL_KEYS, sets::sdiff),
    grows(cmd("sdiffstore", -3, W, cat::SET, ALL_KEYS, sets::sdiffstore), store_growth),
    cmd("sscan", -3, R, cat::SET, ONE_KEY, sets::sscan),
    grows(cmd("sort", -2, W, cat::SET | cat::SORTEDSET | cat::LIST | cat::DANGEROUS, ONE_KEY, sort::sort), sort::sort_growth),
    cmd("sort_ro", -2, R, cat::SET | cat::SORTEDSET | cat::LIST | cat::DANGEROUS, ONE_KEY, sort::sort_ro),
    grows(cmd("zadd", -4, WF, cat::SORTEDSET, ONE_KEY, zsets::zadd), zsets::zadd_growth),
    grows(cmd("zincrby", 4, WF, cat::SORTEDSET, ONE_KEY, zsets::zincrby), zsets::zadd_growth),
    cmd("zrem", -3, WF, cat::SORTEDSET, ONE_KEY, zsets::zrem),
    cmd("zcard", 2, RF, cat::SORTEDSET, ONE_KEY, zsets::zcard),
    cmd("zscore", 3, RF, cat::SORTEDSET, ONE_KEY, zsets::zscore),
    cmd("zmscore", -3, RF, cat::SORTEDSET, ONE_KEY, zsets::zmscore),
    cmd("zrank", 3, RF, cat::SORTEDSET, ONE_KEY, zsets::zrank),
    cmd("zrevrank", 3, RF, cat::SORTEDSET, ONE_KEY, zsets::zrevrank),
    cmd("zcount", 4, RF, cat::SORTEDSET, ONE_KEY, zset_ranges::zcount),
    cmd("zlexcount", 4, RF, cat::SORTEDSET, ONE_KEY, zset_ranges::zlexcount),
    cmd("zrange", -4, R, cat::SORTEDSET, ONE_KEY, zset_ranges::zrange),
    cmd("zrevrange", -4, R, cat::SORTEDSET, ONE_KEY, zset_ranges::zrevrange),
    cmd("zrangebyscore", -4, R, cat::SORTEDSET, ONE_KEY, zset_ranges::zrangebyscore),
    cmd("zrevrangebyscore", -4, R, cat::SORTEDSET, ONE_KEY, zset_ranges::zrevrangebyscore),
    cmd("zrangebylex", -4, R, cat::SORTEDSET, ONE_KEY, zset_ranges::zrangebylex),
    cmd("zrevrangebylex", -4, R, cat::SORTEDSET, ONE_KEY, zset_ranges::zrevrangebylex),
    grows(cmd("zrangestore", -5, W, cat::SORTEDSET, TWO_KEYS, zset_ranges::zrangestore), zset_ranges::zrangestore_growth),
    cmd("zremrangebyrank", 4, W, cat::SORTEDSET, ONE_KEY, zset_ranges::zremrangebyrank),
    cmd("zremrangebyscore", 4, W, cat::SORTEDSET, ONE_KEY, zset_ranges::zremrangebyscore),
    cmd("zremrangebylex", 4, W, cat::SORTEDSET, ONE_KEY, zset_ranges::zremrangebylex),
    cmd("zpopmin", -2, WF, cat::SORTEDSET, ONE_KEY, zsets::zpopmin),
    cmd("zpopmax", -2, WF, cat::SORTEDSET, ONE_KEY, zsets::zpopmax),
    cmd("zrandmember", -2, R, cat::SORTEDSET, ONE_KEY, zsets::zrandmember),
    cmd("zscan", -3, R, cat::SORTEDSET, ONE_KEY, zsets::zscan),
    cmd("zunion", -3, R, cat::SORTEDSET, NO_KEYS, zset_algebra::zunion),
    cmd("zinter", -3, R, cat::SORTEDSET, NO_KEYS, zset_algebra::zinter),
    cmd("zdiff", -3, R, cat::SORTEDSET, NO_KEYS, zset_algebra::zdiff),
    cmd("zintercard", -3, R, cat::SORTEDSET, NO_KEYS, zset_algebra::zintercard),
    grows(cmd("zunionstore", -4, W, cat::SORTEDSET, ONE_KEY, zset_algebra::zunionstore), zset_algebra::zstore_growth),
    grows(cmd("zinterstore", -4, W, cat::SORTEDSET, ONE_KEY, zset_algebra::zinterstore), zset_algebra::zstore_growth),
    grows(cmd("zdiffstore", -4, W, cat::SORTEDSET, ONE_KEY, zset_algebra::zdiffstore), zset_algebra::zstore_growth),
    cmd("zmpop", -4, W, cat::SORTEDSET, NO_KEYS, zset_pops::zmpop),
    grows(cmd("geoadd", -5, W, cat::GEO, ONE_KEY, geo::geoadd), zsets::zadd_growth),
    cmd("geodist", -4, R, cat::GEO, ONE_KEY, geo::geodist),
    cmd("geohash", -2, R, cat::GEO, ONE_KEY, geo::geohash),
    cmd("geopos", -2, R, cat::GEO, ONE_KEY, geo::geopos),
    grows(cmd("georadius", -6, W, cat::GEO, ONE_KEY, geo_search::georadius), geo_search::store_growth),
    cmd("georadius_ro", -6, R, cat::GEO, ONE_KEY, geo_search::georadius_ro),
    grows(cmd("georadiusbymember", -5, W, cat::GEO, ONE_KEY, geo_search::georadiusbymember), geo_search::store_growth),
    cmd("georadiusbymember_ro", -5, R, cat::GEO, ONE_KEY, geo_search::georadiusbymember_ro),
    cmd("geosearch", -7, R, cat::GEO, ONE_KEY, geo_search::geosearch),
    grows(cmd("geosearchstore", -8, W, cat::GEO, TWO_KEYS, geo_search::geosearchstore), geo_search::store_growth),
    cmd("bzpopmin", -3, WB | FAST, cat::SORTEDSET, ALL_BUT_LAST, zset_pops::bzpopmin),
    cmd("bzpopmax", -3, WB | FAST, cat::SORTEDSET, ALL_BUT_LAST, zset_pops::bzpopmax),
    cmd("bzmpop", -5, WB, cat::SORTEDSET, NO_KEYS, zset_pops::bzmpop),
    grows(cmd("xadd", -5, WF, cat::STREAM, ONE_KEY, streams::xadd), streams::xadd_growth),
    cmd("xlen", 2, RF, cat::STREAM, ONE_KEY, streams::xlen),
    cmd("xrange", -4, R, cat::STREAM, ONE_KEY, streams::xrange),
    cmd("xrevrange", -4, R, cat::STREAM, ONE_KEY, streams::xrevrange),
    cmd("xdel", -3, WF, cat::STREAM, ONE_KEY, streams::xdel),
    cmd("xtrim", -4, W, cat::STREAM, ONE_KEY, streams::xtrim),
    cmd("xsetid", -3, WF, cat::STREAM, ONE_KEY, streams::xsetid),
    cmd("xread", -4, R | BLOCKING, cat::STREAM, NO_KEYS, streams::xread),
    cmd("xreadgroup", -7, W | BLOCKING, cat::STREAM, NO_KEYS, groups::xreadgroup),
    cmd("xack", -4, WF, cat::STREAM, ONE_KEY, groups::xack),
    cmd("xpending", -3, R, cat::STREAM, ONE_KEY, groups::xpending),
    cmd("xclaim", -6, WF, cat::STREAM, ONE_KEY, groups::xclaim),
    cmd("xautoclaim", -6, WF, cat::STREAM, ONE_KEY, groups::xautoclaim),
    container("xgroup", cat::NONE, &[
        grows(cmd("xgroup|create", -5, W, cat::STREAM, (2, 2, 1), groups::xgroup_create), group_growth),
        cmd("xgroup|setid", -5, W, cat::STREAM, (2, 2, 1), groups::xgroup_setid),
        cmd("xgroup|destroy", 4, W, cat::STREAM, (2, 2, 1), groups::xgroup_destroy),
        grows(cmd("xgroup|createconsumer", 5, W, cat::STREAM, (2, 2, 1), groups::xgroup_createconsumer), group_growth),
        cmd("xgroup|delconsumer", 5, W, cat::STREAM, (2, 2, 1), groups::xgroup_delconsumer),
        cmd("xgroup|help", 2, HELP, cat::STREAM, NO_KEYS, groups::xgroup_help),
    ]),
    container("xinfo", cat::NONE, &[
        cmd("xinfo|stream", -3, R, cat::STREAM, (2, 2, 1), groups::xinfo_stream),
        cmd("xinfo|groups", 3, R, cat::STREAM, (2, 2, 1), groups::xinfo_groups),
        cmd("xinfo|consumers", 4, R, cat::STREAM, (2, 2, 1), groups::xinfo_consumers),
        cmd("xinfo|help", 2, HELP, cat::STREAM, NO_KEYS, groups::xinfo_help),
    ]),
    cmd("del", -2, W, cat::KEYSPACE, ALL_KEYS, keys::del),
    cmd("unlink", -2, WF, cat::KEYSPACE, ALL_KEYS, keys::del),
    cmd("move", 3, WF, cat::KEYSPACE, ONE_KEY, keys::move_to_db),
    cmd("swapdb", 3, WF, cat::KEYSPACE | cat::DANGEROUS, NO_KEYS, in_engine),
    cmd("touch", -2, RF, cat::KEYSPACE, ALL_KEYS, keys::touch),
    cmd("randomkey", 1, R, cat::KEYSPACE, NO_KEYS, keys::randomkey),
    cmd("rename", 3, W, cat::KEYSPACE, (1, 2, 1), keys::rename),
    cmd("renamenx", 3, WF, cat::KEYSPACE, (1, 2, 1), keys::renamenx),
    grows(cmd("copy", -3, W, cat::KEYSPACE, (1, 2, 1), keys::copy), copy_growth),
    cmd("dump", 2, R, cat::KEYSPACE, ONE_KEY, dump::dump),
    grows(cmd("restore", -4, W, cat::KEYSPACE | cat::DANGEROUS, ONE_KEY, dump::restore), restore_growth),
    cmd("exists", -2, RF, cat::KEYSPACE, ALL_KEYS, keys::exists),
    cmd("type", 2, RF, cat::KEYSPACE, ONE_KEY, keys::type_of),
    cmd("keys", 2, R, cat::KEYSPACE | cat::DANGEROUS, NO_KEYS, keys::keys),
    cmd("scan", -2, R, cat::KEYSPACE, NO_KEYS, keys::scan),
    cmd("dbsize", 1, RF, cat::KEYSPACE, NO_KEYS, keys::dbsize),
    cmd("flushall", -1, W, cat::KEYSPACE | cat::DANGEROUS, NO_KEYS, keys::flush),
    cmd("flushdb", -1, W, cat::KEYSPACE | cat::DANGEROUS, NO_KEYS, keys::flush),
    cmd("expire", -3, WF, cat::KEYSPACE, ONE_KEY, expire::expire),
    cmd("pexpire", -3, WF, cat::KEYSPACE, ONE_KEY, expire::pexpire),
    cmd("expireat", -3, WF, cat::KEYSPACE, ONE_KEY, expire::expireat),
    cmd("pexpireat", -3, WF, cat::KEYSPACE, ONE_KEY, expire::pexpireat),
    cmd("ttl", 2, RF, cat::KEYSPACE, ONE_KEY, expire::ttl),
    cmd("pttl", 2, RF, cat::KEYSPACE, ONE_KEY, expire::pttl),
    cmd("persist", 2, WF, cat::KEYSPACE, ONE_KEY, expire::persist),
    cmd("expiretime", 2, RF, cat::KEYSPACE, ONE_KEY, expire::expiretime),
    cmd("pexpiretime", 2, RF, cat::KEYSPACE, ONE_KEY, expire::pexpiretime),
    container("object", cat::NONE, &[
        cmd("object|encoding", 3, R, cat::KEYSPACE, (2, 2, 1), object::encoding),
        cmd("object|refcount", 3, R, cat::KEYSPACE, (2, 2, 1), object::refcount),
        cmd("object|idletime", 3, R, cat::KEYSPACE, (2, 2, 1), object::idletime),
        cmd("object|freq", 3, R, cat::KEYSPACE, (2, 2, 1), object::freq),
        cmd("object|help", 2, HELP, cat::KEYSPACE, NO_KEYS, object::object_help),
    ]),
    container("memory", cat::NONE, &[
        cmd("memory|usage", -3, R, cat::NONE, (2, 2, 1), object::memory_usage),
        cmd("memory|stats", 2, NO_FLAGS, cat::NONE, NO_KEYS, memory::stats),
        cmd("memory|doctor", 2, NO_FLAGS, cat::NONE, NO_KEYS, memory::doctor),
        cmd("memory|malloc-stats", 2, NO_FLAGS, cat::NONE, NO_KEYS, memory::malloc_stats),
        cmd("memory|purge", 2, NO_FLAGS, cat::NONE, NO_KEYS, memory::purge),
        cmd("memory|help", 2, HELP, cat::NONE, NO_KEYS, object::memory_help),
    ]),
    cmd("eval", -3, STALE, cat::SCRIPTING, NO_KEYS, in_engine),
    cmd("evalsha", -3, STALE, cat::SCRIPTING, NO_KEYS, in_engine),
    cmd("eval_ro", -3, READONLY | STALE, cat::SCRIPTING, NO_KEYS, in_engine),
    cmd("evalsha_ro", -3, READONLY | STALE, cat::SCRIPTING, NO_KEYS, in_engine),
    container("script", cat::NONE, &[
        cmd("script|load", 3, STALE, cat::SCRIPTING, NO_KEYS, in_engine),
        cmd("script|exists", -3, STALE, cat::SCRIPTING, NO_KEYS, in_engine),
        cmd("script|flush", -2, STALE, cat::SCRIPTING, NO_KEYS, in_engine),
        cmd("script|kill", 2, STALE, cat::SCRIPTING, NO_KEYS, in_engine),
        cmd("script|help", 2, HELP, cat::SCRIPTING, NO_KEYS, super::scripting::help),
    ]),
    cmd("fcall", -3, STALE, cat::SCRIPTING, NO_KEYS, in_engine),
    cmd("fcall_ro", -3, READONLY | STALE, cat::SCRIPTING, NO_KEYS, in_engine),
    container("function", cat::NONE, &[
        grows(cmd("function|load", -3, W, cat::SCRIPTING, NO_KEYS, in_engine), code_growth),
        cmd("function|delete", 3, W, cat::SCRIPTING, NO_KEYS, in_engine),
        cmd("function|flush", -2, W, cat::SCRIPTING, NO_KEYS, in_engine),
        cmd("function|list", -2, NO_FLAGS, cat::SCRIPTING, NO_KEYS, in_engine),
        cmd("function|dump", 2, NO_FLAGS, cat::SCRIPTING, NO_KEYS, in_engine),
        grows(cmd("function|restore", -3, W, cat::SCRIPTING, NO_KEYS, in_engine), code_growth),
        cmd("function|stats", 2, STALE, cat::SCRIPTING, NO_KEYS, in_engine),
        cmd("function|kill", 2, STALE, cat::SCRIPTING, NO_KEYS, in_engine),
        cmd("function|help", 2, HELP, cat::SCRIPTING, NO_KEYS, in_engine),
    ]),
    cmd("info", -1, LOADING | STALE, cat::DANGEROUS, NO_KEYS, info::info),
    cmd("bgrewriteaof", 1, ADMIN, cat::NONE, NO_KEYS, persistence::bgrewriteaof),
    cmd("lastsave", 1, LOADING | STALE | FAST, cat::ADMIN | cat::DANGEROUS, NO_KEYS, persistence::lastsave),
    cmd("role", 1, LOADING | STALE | FAST, cat::ADMIN | cat::DANGEROUS, NO_KEYS, persistence::role),
    cmd("shutdown", -1, ADMIN | LOADING | STALE | NO_MULTI, cat::NONE, NO_KEYS, persistence::shutdown),
    container("latency", cat::NONE, &[
        cmd("latency|histogram", -2, ADM, cat::NONE, NO_KEYS, latency::histogram),
        cmd("latency|latest", 2, ADM, cat::NONE, NO_KEYS, latency::latest),
        cmd("latency|history", 3, ADM, cat::NONE, NO_KEYS, latency::history),
        cmd("latency|reset", -2, ADM, cat::NONE, NO_KEYS, latency::reset),
        cmd("latency|graph", 3, ADM, cat::NONE, NO_KEYS, latency::graph),
        cmd("latency|doctor", 2, ADM, cat::NONE, NO_KEYS, latency::doctor),
        cmd("latency|help", 2, HELP, cat::NONE, NO_KEYS, latency::help),
    ]),
    container("acl", cat::NONE, &[
        cmd("acl|cat", -2, HELP, cat::NONE, NO_KEYS, acl::cat),
        cmd("acl|deluser", -3, ADM, cat::NONE, NO_KEYS, acl::deluser),
        cmd("acl|dryrun", -4, ADM, cat::NONE, NO_KEYS, acl::dryrun),
        cmd("acl|genpass", -2, HELP, cat::NONE, NO_KEYS, acl::genpass),
        cmd("acl|getuser", 3, ADM, cat::NONE, NO_KEYS, acl::getuser),
        cmd("acl|help", 2, HELP, cat::NONE, NO_KEYS, acl::help),
        cmd("acl|list", 2, ADM, cat::NONE, NO_KEYS, acl::list),
        cmd("acl|load", 2, ADM, cat::NONE, NO_KEYS, acl::no_file),
        cmd("acl|log", -2, ADM, cat::NONE, NO_KEYS, acl::log),
        cmd("acl|save", 2, ADM, cat::NONE, NO_KEYS, acl::no_file),
        cmd("acl|setuser", -3, ADM, cat::NONE, NO_KEYS, acl::setuser),
        cmd("acl|users", 2, ADM, cat::NONE, NO_KEYS, acl::users),
        cmd("acl|whoami", 2, HELP, cat::NONE, NO_KEYS, acl::whoami),
    ]),
    container("slowlog", cat::NONE, &[
        cmd("slowlog|get", -2, ADM, cat::NONE, NO_KEYS, slowlog::get),
        cmd("slowlog|len", 2, ADM, cat::NONE, NO_KEYS, slowlog::len),
        cmd("slowlog|reset", 2, ADM, cat::NONE, NO_KEYS, slowlog::reset),
        cmd("slowlog|help", 2, LOADING | STALE, cat::NONE, NO_KEYS, slowlog::help),
    ]),
    cmd("readonly", 1, CONN, cat::CONNECTION, NO_KEYS, cluster::disabled),
    cmd("readwrite", 1, CONN, cat::CONNECTION, NO_KEYS, cluster::disabled),
    container("cluster", cat::NONE, &[
        cmd("cluster|addslots", -3, ADMIN | STALE, cat::NONE, NO_KEYS, cluster::disabled),
        cmd("cluster|addslotsrange", -4, ADMIN | STALE, cat::NONE, NO_KEYS, cluster::disabled),
        cmd("cluster|bumpepoch", 2, ADMIN | STALE, cat::NONE, NO_KEYS, cluster::disabled),
        cmd("cluster|count-failure-reports", 3, ADMIN | STALE, cat::NONE, NO_KEYS, cluster::disabled),
        cmd("cluster|countkeysinslot", 3, STALE, cat::NONE, NO_KEYS, cluster::disabled),
        cmd("cluster|delslots", -3, ADMIN | STALE, cat::NONE, NO_KEYS, cluster::disabled),
        cmd("cluster|delslotsrange", -4, ADMIN | STALE, cat::NONE, NO_KEYS, cluster::disabled),
        cmd("cluster|failover", -2, ADMIN | STALE, cat::NONE, NO_KEYS, cluster::disabled),
        cmd("cluster|flushslots", 2, ADMIN | STALE, cat::NONE, NO_KEYS, cluster::disabled),
        cmd("cluster|forget", 3, ADMIN | STALE, cat::NONE, NO_KEYS, cluster::disabled),
        cmd("cluster|getkeysinslot", 4, STALE, cat::NONE, NO_KEYS, cluster::disabled),
        cmd("cluster|help", 2, LOADING | STALE, cat::NONE, NO_KEYS, cluster::disabled),
        cmd("cluster|info", 2, STALE, cat::NONE, NO_KEYS, cluster::disabled),
        cmd("cluster|keyslot", 3, STALE, cat::NONE, NO_KEYS, cluster::disabled),
        cmd("cluster|links", 2, STALE, cat::NONE, NO_KEYS, cluster::disabled),
        cmd("cluster|meet", -4, ADMIN | STALE, cat::NONE, NO_KEYS, cluster::disabled),
        cmd("cluster|myid", 2, STALE, cat::NONE, NO_KEYS, cluster::disabled),
        cmd("cluster|nodes", 2, STALE, cat::NONE, NO_KEYS, cluster::disabled),
        cmd("cluster|replicas", 3, ADMIN | STALE, cat::NONE, NO_KEYS, cluster::disabled),
        cmd("cluster|replicate", 3, ADMIN | STALE, cat::NONE, NO_KEYS, cluster::disabled),
        cmd("cluster|reset", -2, ADMIN | STALE, cat::NONE, NO_KEYS, cluster::disabled),
        cmd("cluster|saveconfig", 2, ADMIN | STALE, cat::NONE, NO_KEYS, cluster::disabled),
        cmd("cluster|set-config-epoch", 3, ADMIN | STALE, cat::NONE, NO_KEYS, cluster::disabled),
        cmd("cluster|setslot", -4, ADMIN | STALE, cat::NONE, NO_KEYS, cluster::disabled),
        cmd("cluster|shards", 2, STALE, cat::NONE, NO_KEYS, cluster::disabled),
        cmd("cluster|slaves", 3, ADMIN | STALE, cat::NONE, NO_KEYS, cluster::disabled),
        cmd("cluster|slots", 2, STALE, cat::NONE, NO_KEYS, cluster::disabled),
    ]),
    container("config", cat::NONE, &[
        cmd("config|get", -3, ADM, cat::NONE, NO_KEYS, introspect::config_get),
        cmd("config|set", -4, ADM, cat::NONE, NO_KEYS, introspect::config_set),
        cmd("config|resetstat", 2, ADM, cat::NONE, NO_KEYS, introspect::config_resetstat),
        cmd("config|rewrite", 2, ADM, cat::NONE, NO_KEYS, introspect::config_rewrite),
        cmd("config|help", 2, HELP, cat::NONE, NO_KEYS, introspect::config_help),
    ]),
    Spec {
        name: "command",
        arity: -1,
        flags: LOADING | STALE,
        acl: implied(cat::CONNECTION, LOADING | STALE),
        keys: NO_KEYS,
        run: Some(introspect::command),
        growth: None,
        subcommands: &[
        cmd("command|count", 2, LOADING | STALE, cat::CONNECTION, NO_KEYS, introspect::command_count),
        cmd("command|docs", -2, LOADING | STALE, cat::CONNECTION, NO_KEYS, introspect::command_docs),
        cmd("command|getkeys", -3, LOADING | STALE, cat::CONNECTION, NO_KEYS, introspect::command_getkeys),
        cmd("command|getkeysandflags", -4, LOADING | STALE, cat::CONNECTION, NO_KEYS, introspect::command_getkeysandflags),
        cmd("command|info", -2, LOADING | STALE, cat::CONNECTION, NO_KEYS, introspect::command_info),
        cmd("command|list", -2, LOADING | STALE, cat::CONNECTION, NO_KEYS, introspect::command_list),
        ],
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_is_found_by_its_name_in_any_case() {
        for spec in COMMANDS {
            assert_eq!(
                spec.name,
                spec.name.to_ascii_lowercase(),
                "names are lowercase"
            );
            let upper = spec.name.to_ascii_uppercase();
            let found = lookup(upper.as_bytes()).map(|s| s.name);
            assert_eq!(found, Some(spec.name));
            assert_eq!(
                lookup(spec.name.as_bytes()).map(|s| s.name),
                Some(spec.name)
            );
        }
    }

    #[test]
    fn unknown_and_partial_names_are_not_found() {
        for name in [&b""[..], b"se", b"sett", b"zzz", b"config|get", b"\xff"] {
            assert!(lookup(name).is_none(), "{name:?}");
        }
    }

    #[test]
    fn names_are_unique() {
        let mut names: alloc::vec::Vec<_> = COMMANDS.iter().map(|s| s.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), COMMANDS.len());
    }
}
