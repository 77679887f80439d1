//! Where a command's keys are among its arguments: what `COMMAND
//! GETKEYS` answers.
//!
//! Most commands keep their keys at fixed places, described by the table's
//! first/last/step triple. A few say how many keys follow a count
//! (`ZUNIONSTORE dest 2 a b`, `LMPOP 2 a b LEFT`), and `SORT` and
//! `GEORADIUS` name a destination after `STORE`, `XREAD` names its streams
//! after `STREAMS`; for those the places depend on the arguments (Redis
//! flags them `movablekeys`), and are found here.

use alloc::vec::Vec;

use super::table::Spec;
use crate::num::parse_i64;

/// The indices of the keys in `args` (`args[0]` is the command name, or
/// for a subcommand `args[1]` its name), in order; `None` when the
/// arguments cannot say (a key count that is not a number, is negative, or
/// counts past the last argument).
pub(crate) fn key_positions(spec: &Spec, args: &[Vec<u8>]) -> Option<Vec<usize>> {
    if let Some((count_at, destination)) = counted_keys(spec.name) {
        return counted(args, count_at, destination);
    }
    match spec.name {
        "sort" => Some(sort_keys(args)),
        "xread" | "xreadgroup" => Some(stream_keys(args)),
        "georadius" => Some(georadius_keys(args, 6)),
        "georadiusbymember" => Some(georadius_keys(args, 5)),
        _ => Some(fixed(spec.keys, args.len())),
    }
}

/// Whether a command has keys at all: fixed ones, or keys that follow a
/// count or an option. The sharded pub/sub commands place their channels
/// as keys in `COMMAND` (a cluster routes them by slot), but a channel is
/// no key: `COMMAND GETKEYS` finds none, as in Redis.
pub(crate) fn has_keys(spec: &Spec) -> bool {
    let channels = matches!(spec.name, "spublish" | "ssubscribe" | "sunsubscribe");
    !channels && (spec.keys.0 > 0 || movable(spec.name))
}

/// The commands whose keys are found by parsing their arguments: those
/// `COMMAND INFO` flags `movablekeys`.
const MOVABLE: &[&str] = &[
    "lmpop",
    "blmpop",
    "sintercard",
    "sort",
    "sort_ro",
    "zunion",
    "zinter",
    "zdiff",
    "zintercard",
    "zunionstore",
    "zinterstore",
    "zdiffstore",
    "zmpop",
    "bzmpop",
    "georadius",
    "georadiusbymember",
    "xread",
    "xreadgroup",
    "eval",
    "evalsha",
    "eval_ro",
    "evalsha_ro",
    "fcall",
    "fcall_ro",
];

/// Whether the command called `name` is in [`MOVABLE`] (a `const fn`: the
/// command table sets its flag when it is built).
pub(crate) const fn movable(name: &str) -> bool {
    let mut i = 0;
    while i < MOVABLE.len() {
        if same(MOVABLE[i].as_bytes(), name.as_bytes()) {
            return true;
        }
        i += 1;
    }
    false
}

const fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Whether a command may run without keys: scripts and functions, whose
/// key count may be 0 (`COMMAND GETKEYS` then answers an empty list, as
/// Redis does for its `no_mandatory_keys` commands).
pub(crate) fn keys_optional(spec: &Spec) -> bool {
    matches!(
        spec.name,
        "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro"
    )
}

/// For the commands whose keys follow a count: the count's index, and
/// whether a destination key comes first, at index 1.
fn counted_keys(name: &str) -> Option<(usize, bool)> {
    match name {
        "zunionstore" | "zinterstore" | "zdiffstore" => Some((2, true)),
        "zunion" | "zinter" | "zdiff" | "zintercard" | "sintercard" | "lmpop" | "zmpop" => {
            Some((1, false))
        }
        // After the timeout.
        "blmpop" | "bzmpop" => Some((2, false)),
        // After the script, its SHA or the function's name.
        "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro" => Some((2, false)),
        _ => None,
    }
}

/// The keys after the count at `count_at`, behind the destination at 1 if
/// there is one.
fn counted(args: &[Vec<u8>], count_at: usize, destination: bool) -> Option<Vec<usize>> {
    let count = usize::try_from(parse_i64(args.get(count_at)?)?).ok()?;
    let first = count_at + 1;
    if count > args.len().saturating_sub(first) {
        return None;
    }
    let mut keys = Vec::new();
    if destination {
        keys.push(1);
    }
    keys.extend(first..first + count);
    Some(keys)
}

/// `SORT key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC]
/// [ALPHA] [STORE destination]`: the sorted key, and the destination of
/// the last `STORE` (the one that counts, as in `SORT` itself). Options
/// are skipped with their arguments so that a pattern or a number named
/// `store` is not taken for the option; any other word is looked at as an
/// option of its own.
fn sort_keys(args: &[Vec<u8>]) -> Vec<usize> {
    let mut destination = None;
    let mut at = 2;
    while at < args.len() {
        let word = args[at].to_ascii_lowercase();
        match word.as_slice() {
            b"by" | b"get" => at += 1,
            b"limit" => at += 2,
            // The destination is looked at as a word too: `STORE a STORE
            // b` stores into `b`.
            b"store" if at + 1 < args.len() => destination = Some(at + 1),
            _ => {}
        }
        at += 1;
    }
    let mut keys = alloc::vec![1];
    keys.extend(destination);
    keys
}

/// `XREAD [COUNT n] [BLOCK ms] STREAMS key ... id ...` (and `XREADGROUP
/// GROUP g c ...`): the first half of what follows the first `STREAMS`
/// (rounded down, as Redis's key specification finds them).
fn stream_keys(args: &[Vec<u8>]) -> Vec<usize> {
    let Some(at) = (1..args.len()).find(|&i| args[i].eq_ignore_ascii_case(b"streams")) else {
        return Vec::new();
    };
    let first = at + 1;
    let count = (args.len() - first) / 2;
    (first..first + count).collect()
}

/// `GEORADIUS key lon lat radius unit ... [STORE dest] [STOREDIST dest]`
/// (and `GEORADIUSBYMEMBER`, whose options start one argument earlier):
/// the searched key, then the key after the first `STORE` and the one
/// after the first `STOREDIST` among the options, as Redis 7.0's key
/// specifications find them.
fn georadius_keys(args: &[Vec<u8>], options_at: usize) -> Vec<usize> {
    let after = |word: &[u8]| {
        let at = (options_at..args.len()).find(|&i| args[i].eq_ignore_ascii_case(word))?;
        (at + 1 < args.len()).then_some(at + 1)
    };
    let mut keys = alloc::vec![1];
    keys.extend(after(b"store"));
    keys.extend(after(b"storedist"));
    keys
}

/// The keys at the places the table's first/last/step triple gives (a
/// negative last counts from the end; none when first is 0).
pub(crate) fn fixed((first, last, step): (i32, i32, i32), len: usize) -> Vec<usize> {
    let len = i32::try_from(len).unwrap_or(i32::MAX);
    let last = if last < 0 {
        len + last
    } else {
        last.min(len - 1)
    };
    if first <= 0 || last < first {
        return Vec::new();
    }
    (first..=last)
        .step_by(step.max(1) as usize)
        .filter_map(|i| usize::try_from(i).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::table::lookup;

    fn keys_of(words: &str) -> Option<Vec<usize>> {
        let args: Vec<Vec<u8>> = words.split(' ').map(|w| w.as_bytes().to_vec()).collect();
        key_positions(lookup(&args[0]).expect("a command"), &args)
    }

    #[test]
    fn fixed_places_come_from_the_table() {
        assert_eq!(keys_of("get k"), Some(alloc::vec![1]));
        assert_eq!(keys_of("mset a 1 b 2"), Some(alloc::vec![1, 3]));
        assert_eq!(keys_of("del a b c"), Some(alloc::vec![1, 2, 3]));
        assert_eq!(keys_of("blpop a b 0"), Some(alloc::vec![1, 2]));
        assert_eq!(keys_of("ping"), Some(Vec::new()));
    }

    #[test]
    fn counted_keys_follow_their_count() {
        assert_eq!(keys_of("zunionstore d 2 a b"), Some(alloc::vec![1, 3, 4]));
        assert_eq!(keys_of("zinter 2 a b WEIGHTS 1 2"), Some(alloc::vec![2, 3]));
        assert_eq!(keys_of("lmpop 1 a LEFT"), Some(alloc::vec![2]));
        assert_eq!(keys_of("bzmpop 0 2 a b MIN"), Some(alloc::vec![3, 4]));
        // A count that is not a number, or counts past the end.
        assert_eq!(keys_of("zunion x a"), None);
        assert_eq!(keys_of("zunion 3 a b"), None);
        assert_eq!(keys_of("zunion -1 a"), None);
    }

    #[test]
    fn sort_names_the_last_stores_destination() {
        assert_eq!(keys_of("sort abc store def"), Some(alloc::vec![1, 3]));
        assert_eq!(
            keys_of("sort abc store invalid store stillbad store def"),
            Some(alloc::vec![1, 7])
        );
        // An option's argument is never taken for STORE.
        assert_eq!(keys_of("sort abc by store get store"), Some(alloc::vec![1]));
        assert_eq!(keys_of("sort abc limit 0 store"), Some(alloc::vec![1]));
        assert_eq!(keys_of("sort_ro abc"), Some(alloc::vec![1]));
    }

    #[test]
    fn georadius_names_its_stores_destination() {
        assert_eq!(
            keys_of("georadius src 1 2 3 km STOREDIST b STORE a"),
            Some(alloc::vec![1, 9, 7])
        );
        assert_eq!(
            keys_of("georadius src 1 2 3 km STORE a STORE b"),
            Some(alloc::vec![1, 7])
        );
        assert_eq!(
            keys_of("georadius src 1 2 STORE km x y"),
            Some(alloc::vec![1])
        );
        assert_eq!(
            keys_of("georadius src 1 2 3 km COUNT 3 STORE"),
            Some(alloc::vec![1])
        );
        assert_eq!(
            keys_of("georadiusbymember src m 3 km"),
            Some(alloc::vec![1])
        );
        assert_eq!(
            keys_of("geosearchstore dst src FROMLONLAT 1 2"),
            Some(alloc::vec![1, 2])
        );
    }

    #[test]
    fn scripts_and_stream_reads_name_their_keys() {
        assert_eq!(keys_of("eval r 1 key"), Some(alloc::vec![3]));
        assert_eq!(keys_of("evalsha_ro sha 2 a b x"), Some(alloc::vec![3, 4]));
        assert_eq!(keys_of("eval r 0"), Some(Vec::new()));
        assert_eq!(keys_of("xread streams a b 0 0"), Some(alloc::vec![2, 3]));
        assert_eq!(keys_of("xread count 2 streams a 0"), Some(alloc::vec![4]));
        assert_eq!(keys_of("xread streams a b 0"), Some(alloc::vec![2]));
        assert_eq!(
            keys_of("xreadgroup group g c streams a b 0 0"),
            Some(alloc::vec![5, 6])
        );
    }

    #[test]
    fn movable_commands_are_flagged_so_in_the_table() {
        use crate::commands::table::{COMMANDS, MOVABLEKEYS};
        use crate::commands::tests::{MOVABLE, NOT_MOVABLE};
        for spec in COMMANDS {
            assert_eq!(
                spec.flags & MOVABLEKEYS != 0,
                movable(spec.name),
                "{}",
                spec.name
            );
        }
        for name in MOVABLE {
            assert!(movable(name), "{name}");
        }
        for name in NOT_MOVABLE {
            assert!(!movable(name), "{name}");
        }
    }

    #[test]
    fn only_commands_with_keys_say_they_have_some() {
        for (name, expected) in [
            ("get", true),
            ("zunion", true),
            ("sort", true),
            ("eval", true),
            ("xread", true),
            ("ping", false),
            ("spublish", false),
        ] {
            let spec = lookup(name.as_bytes()).expect("a command");
            assert_eq!(has_keys(spec), expected, "{name}");
        }
    }
}
