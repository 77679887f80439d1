//! ACL commands: users made, described, tried and removed.
//!
//! The differential test changes users `alice` and `bob` only, never the
//! one its connection is (`default`): Redis closes the connections of a
//! user it deletes or resets, which would end the test's. It leaves out
//! `ACL LOG` (entries name each server's client, address and age) and
//! compares `ACL GENPASS` by kind (random), the categories `ACL CAT`
//! lists in any order, and a category's commands by kind (Redis lists
//! its own, kvstore its own: `LOLWUT`, `MIGRATE` and `SCRIPT DEBUG` are
//! Redis's only). A user's description (`ACL GETUSER`, `ACL LIST`) is
//! compared by kind: where rules leave single commands added or removed
//! on top of categories, Redis lists them in its hash table's order (and
//! names its own commands among them); what the rules allow is compared
//! exactly by `ACL DRYRUN` instead, which the test sends as often as
//! `SETUSER`. The fuzzer sends any rule to any user, `default` included.

use crate::draw::{Check, Gen};

/// The ACL commands, each with how often the differential test sends it.
pub(crate) const NAMES: &[(&str, u8)] = &[("ACL", 1)];

/// Rules of `ACL SETUSER`, good and bad.
const RULES: &[&str] = &[
    "on",
    "off",
    "nopass",
    ">pw1",
    ">pw2",
    "<pw1",
    "#a6b0e0d0c5d9c6e5c9a5b3c9f0e2d4c6b8a7e9d1c3f5b7a9e2d4c6b8a0e1d3c5",
    "!a6b0e0d0c5d9c6e5c9a5b3c9f0e2d4c6b8a7e9d1c3f5b7a9e2d4c6b8a0e1d3c5",
    "#tooshort",
    "resetpass",
    "~k*",
    "~*",
    "%R~r*",
    "%W~w*",
    "%RW~rw*",
    "%X~bad",
    "allkeys",
    "resetkeys",
    "&chan*",
    "allchannels",
    "resetchannels",
    "+@all",
    "-@all",
    "+@read",
    "-@write",
    "+@string",
    "-@dangerous",
    "+@nosuch",
    "+get",
    "-set",
    "+config|get",
    "-client|kill",
    "+nosuch",
    "allcommands",
    "nocommands",
    "reset",
    "(~sel* +get)",
    "(%R~x* +@read)",
    "(bad",
    "clearselectors",
    "bogus",
];

/// Users the rules are given to.
fn user(g: &mut Gen) -> Vec<u8> {
    match g.hostile() {
        true => g.pick_str(&["default", "alice", "bob", "", "a b"]),
        false => g.pick_str(&["alice", "bob", "carol"]),
    }
}

/// A command for `ACL DRYRUN` to try, with its arguments: reads, writes
/// and both, of keys the rules' patterns match (`k*`, `r*`, `w*`, `rw*`,
/// `sel*`) or not, channels, and commands the rules name one by one.
fn tried(g: &mut Gen, args: &mut Vec<Vec<u8>>) {
    let key = |g: &mut Gen| match g.hostile() {
        true => g.key(),
        false => g.pick_str(&["k1", "r1", "w1", "rw1", "sel1", "other"]),
    };
    match g.below(10) {
        0 => args.extend([b"GET".to_vec(), key(g)]),
        1 => args.extend([b"SET".to_vec(), key(g), b"v".to_vec()]),
        2 => args.extend([b"COPY".to_vec(), key(g), key(g)]),
        3 => args.extend([b"LPUSH".to_vec(), key(g), b"e".to_vec()]),
        4 => args.extend([b"MGET".to_vec(), key(g), key(g)]),
        5 => args.extend([b"CONFIG".to_vec(), b"GET".to_vec(), b"maxmemory".to_vec()]),
        6 => args.extend([
            b"PUBLISH".to_vec(),
            g.pick_str(&["chan1", "news"]),
            b"m".to_vec(),
        ]),
        7 => args.extend([b"SUBSCRIBE".to_vec(), g.pick_str(&["chan1", "news"])]),
        8 => args.extend([
            b"CLIENT".to_vec(),
            b"KILL".to_vec(),
            b"ID".to_vec(),
            b"999".to_vec(),
        ]),
        _ => args.push(b"NOSUCH".to_vec()),
    }
}

/// `ACL` subcommands the differential test sends (see the module's
/// comment for `LOG`), as often as they appear.
const COMPARED: &[&str] = &[
    "SETUSER", "SETUSER", "SETUSER", "GETUSER", "DELUSER", "LIST", "USERS", "WHOAMI", "CAT",
    "DRYRUN", "DRYRUN", "DRYRUN", "GENPASS", "LOAD", "SAVE", "nosuch",
];

/// The arguments of `ACL`.
pub(crate) fn args(g: &mut Gen, _name: &str, args: &mut Vec<Vec<u8>>) -> Check {
    let sub = match g.hostile() && g.chance(10) {
        true => "LOG",
        false => g.pick(COMPARED),
    };
    args.push(g.word(sub));
    match sub {
        "SETUSER" => {
            args.push(user(g));
            for _ in 0..g.below(5) {
                let rule = g.pick(RULES);
                args.push(rule.into());
            }
            Check::Exact
        }
        "GETUSER" => match g.chance(20) {
            // The test's own user, whose rules it never changes.
            true => {
                args.push(b"default".to_vec());
                Check::Exact
            }
            false => {
                args.push(user(g));
                Check::Kind
            }
        },
        "LIST" => Check::Kind,
        "DELUSER" => {
            for _ in 0..1 + g.below(2) {
                let who = match g.chance(10) {
                    true => b"default".to_vec(),
                    false => user(g),
                };
                args.push(who);
            }
            Check::Exact
        }
        "CAT" => match g.chance(60) {
            true => {
                args.push(g.pick_str(&["read", "write", "scripting", "stream", "nosuch"]));
                Check::Kind
            }
            false => Check::AnyOrder,
        },
        "DRYRUN" => {
            args.push(user(g));
            tried(g, args);
            Check::Exact
        }
        "GENPASS" => {
            if g.chance(50) {
                args.push(g.pick_str(&["1", "64", "256", "5000", "-1", "x"]));
            }
            Check::Kind
        }
        "LOG" => {
            // The fuzzer's only (see the module's comment).
            if g.chance(50) {
                args.push(g.pick_str(&["RESET", "2", "-1", "x"]));
            }
            Check::Kind
        }
        _ => Check::Exact,
    }
}
