//! The command table: every command the generator knows (every one of
//! kvstore's command table), in families, each with how often the
//! differential test sends it, and [`Gen::command`], which draws one.
//!
//! The fuzzer draws any name, all alike likely; the differential test
//! draws a family by its weight, then a command of it by the command's
//! weight (0: never; each family module says why).

use crate::draw::{Check, Gen, Profile};
use crate::families::{acl, bits, geo, hashes, hll, keys, lists, scripts, server, sets, strings};
use crate::families::{streams, zsets};

/// A family's commands with their weights, and their arguments (`None`:
/// draw another command).
type Args = fn(&mut Gen, &str, &mut Vec<Vec<u8>>) -> Option<Check>;

/// One family: how often the differential test draws it, its commands,
/// their arguments.
struct Family {
    weight: usize,
    names: &'static [(&'static str, u8)],
    args: Args,
}

/// The sum of `names`' weights: a family whose commands the differential
/// test draws each on its own, as often as any other command.
const fn sum(names: &[(&str, u8)]) -> usize {
    let (mut i, mut sum) = (0, 0);
    while i < names.len() {
        sum += names[i].1 as usize;
        i += 1;
    }
    sum
}

/// Every family.
const FAMILIES: &[Family] = &[
    Family {
        weight: sum(strings::NAMES),
        names: strings::NAMES,
        args: |g, n, a| Some(strings::args(g, n, a)),
    },
    Family {
        weight: sum(keys::NAMES),
        names: keys::NAMES,
        args: keys::args,
    },
    Family {
        weight: sum(server::NAMES),
        names: server::NAMES,
        args: |g, n, a| Some(server::args(g, n, a)),
    },
    Family {
        weight: 1,
        names: server::TRANSACTIONS,
        args: |g, n, a| Some(server::args(g, n, a)),
    },
    Family {
        weight: 2,
        names: scripts::NAMES,
        args: |g, n, a| Some(scripts::args(g, n, a)),
    },
    Family {
        weight: 2,
        names: hashes::NAMES,
        args: |g, n, a| Some(hashes::args(g, n, a)),
    },
    Family {
        weight: 2,
        names: lists::NAMES,
        args: |g, n, a| Some(lists::args(g, n, a)),
    },
    Family {
        weight: 2,
        names: sets::NAMES,
        args: |g, n, a| Some(sets::args(g, n, a)),
    },
    Family {
        weight: 3,
        names: zsets::NAMES,
        args: |g, n, a| Some(zsets::args(g, n, a)),
    },
    Family {
        weight: 3,
        names: streams::NAMES,
        args: |g, n, a| Some(streams::args(g, n, a)),
    },
    Family {
        weight: 2,
        names: hll::NAMES,
        args: |g, n, a| Some(hll::args(g, n, a)),
    },
    Family {
        weight: 2,
        names: bits::NAMES,
        args: |g, n, a| Some(bits::args(g, n, a)),
    },
    Family {
        weight: 3,
        names: geo::NAMES,
        args: |g, n, a| Some(geo::args(g, n, a)),
    },
    Family {
        weight: 2,
        names: acl::NAMES,
        args: |g, n, a| Some(acl::args(g, n, a)),
    },
];

/// Every name the generator knows, each once (a family may list a
/// command of another's, as `GET` of a HyperLogLog).
pub fn names() -> Vec<&'static str> {
    let mut names: Vec<&str> = FAMILIES
        .iter()
        .flat_map(|f| f.names.iter().map(|(n, _)| *n))
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// The index of a weight's draw `at` (below the weights' sum).
fn weighted<T>(items: &[T], weight: impl Fn(&T) -> usize, mut at: usize) -> &T {
    for item in items {
        match at.checked_sub(weight(item)) {
            Some(rest) => at = rest,
            None => return item,
        }
    }
    unreachable!("a draw below the weights' sum")
}

impl Gen<'_> {
    /// The family and name of the next command.
    fn pick_command(&mut self) -> (&'static Family, &'static str) {
        if self.hostile() {
            let total = FAMILIES.iter().map(|f| f.names.len()).sum();
            let mut at = self.c.below(total);
            for family in FAMILIES {
                match family.names.get(at) {
                    Some((name, _)) => return (family, name),
                    None => at -= family.names.len(),
                }
            }
            unreachable!("a draw below the names' count");
        }
        let total = FAMILIES.iter().map(|f| f.weight).sum();
        let family = weighted(FAMILIES, |f| f.weight, self.c.below(total));
        let total = family.names.iter().map(|(_, w)| usize::from(*w)).sum();
        let (name, _) = weighted(family.names, |(_, w)| usize::from(*w), self.c.below(total));
        (family, name)
    }

    /// The next command and how its replies compare.
    ///
    /// Now and then it has an argument too few or too many, and its name
    /// in another case. For the differential test, inside a transaction
    /// only commands whose replies compare exactly are queued, so that
    /// `EXEC`'s array does too.
    pub fn command(&mut self) -> (Vec<Vec<u8>>, Check) {
        loop {
            let (family, name) = self.pick_command();
            let mut args = vec![self.word(name)];
            let Some(check) = (family.args)(self, name, &mut args) else {
                continue;
            };
            match self.profile {
                Profile::Hostile { .. } => match self.c.below(16) {
                    0 if args.len() > 1 => {
                        args.pop();
                    }
                    1 => args.push(self.value()),
                    _ => {}
                },
                Profile::Comparable { .. } => {
                    if self.c.chance(4) {
                        if self.c.chance(50) {
                            args.push(b"extra".to_vec());
                        } else if args.len() > 1 {
                            args.pop();
                        }
                    }
                    if self.c.chance(20) {
                        args[0] = args[0].to_ascii_lowercase();
                    }
                    if self.in_multi && check != Check::Exact {
                        continue;
                    }
                    match args[0].to_ascii_uppercase().as_slice() {
                        b"MULTI" => self.in_multi = true,
                        b"EXEC" | b"DISCARD" => self.in_multi = false,
                        _ => {}
                    }
                }
            }
            return (args, check);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use faultline_rng::Rng;

    #[test]
    fn every_family_weight_is_drawn_and_every_name_reachable() {
        for family in FAMILIES {
            assert!(family.weight > 0);
            assert!(family.names.iter().any(|(_, w)| *w > 0));
        }
        let mut seen = std::collections::BTreeSet::new();
        for profile in [
            Profile::Hostile {
                now: 1_700_000_000_000,
            },
            Profile::Comparable {
                start_s: 1_700_000_000,
            },
        ] {
            let mut rng = Rng::new(7);
            let mut g = Gen::new(&mut rng, profile);
            for _ in 0..20_000 {
                let (args, _) = g.command();
                seen.insert(args[0].to_ascii_uppercase());
            }
        }
        for name in names() {
            assert!(seen.contains(name.as_bytes()), "{name} never drawn");
        }
    }

    #[test]
    fn the_comparable_profile_leaves_out_what_redis_cannot_match() {
        let mut rng = Rng::new(3);
        let mut g = Gen::new(
            &mut rng,
            Profile::Comparable {
                start_s: 1_700_000_000,
            },
        );
        for _ in 0..20_000 {
            let (args, _) = g.command();
            let name = args[0].to_ascii_uppercase();
            for never in [
                &b"QUIT"[..],
                b"HELLO",
                b"SPOP",
                b"BLPOP",
                b"XINFO",
                b"SORT",
                b"COMMAND",
                b"BGREWRITEAOF",
            ] {
                assert_ne!(name, never);
            }
            assert!(!args.iter().any(|a| a.eq_ignore_ascii_case(b"BLOCK")));
        }
    }
}
