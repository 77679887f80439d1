//! Which commands a user may run: Redis 7.0's command rules (`+get`,
//! `-@string`, `+client|id`, `+select|0`, `allcommands`, ...) applied to a
//! set of allowed commands, and the shortest description that rebuilds
//! the same set (what `ACL GETUSER` and `ACL LIST` show).
//!
//! As in Redis, a rule on a command covers its subcommands; a rule on a
//! category covers every command and subcommand in it; `+@all` also
//! allows commands added later (it is remembered, and described first);
//! and `+cmd|arg` for a command without subcommands allows it only with
//! that first argument (Redis's deprecated "first-arg" rules).

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::string::String;
use alloc::vec::Vec;

use crate::commands::categories::{self as cat, Categories};
use crate::commands::table::{self, Spec};

/// Why a command rule was refused (the text Redis gives).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleError {
    /// No such command, subcommand or category.
    Unknown,
    /// `+config|get|x`: first arguments of subcommands.
    FirstArgOfSubcommand,
    /// Not a rule (`+debug|`).
    Syntax,
}

/// The commands one user may run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommandPerms {
    /// Full names (`get`, `client|id`) of the commands allowed.
    allowed: BTreeSet<&'static str>,
    /// `+@all` was the last word on every command: commands the table
    /// gains later are allowed too, and the description starts `+@all`.
    future: bool,
    /// Nothing was taken away since `+@all`: no need to look further.
    all: bool,
    /// First arguments allowed for commands not allowed themselves.
    first_args: BTreeMap<&'static str, Vec<Vec<u8>>>,
}

/// Every command and subcommand, containers before their subcommands.
fn every_spec() -> impl Iterator<Item = &'static Spec> {
    table::COMMANDS
        .iter()
        .flat_map(|spec| core::iter::once(spec).chain(spec.subcommands.iter()))
}

/// The command or subcommand `name` (`get`, `config|get`), any case.
pub(crate) fn lookup(name: &[u8]) -> Option<&'static Spec> {
    let mut parts = name.split(|&b| b == b'|');
    let top = table::lookup(parts.next()?)?;
    match (parts.next(), parts.next()) {
        (None, _) => Some(top),
        (Some(sub), None) if !top.subcommands.is_empty() => top.subcommand(sub),
        _ => None,
    }
}

impl CommandPerms {
    /// Whether `spec` may run with `args` (`args[0]` its name).
    pub fn allows(&self, spec: &Spec, args: &[Vec<u8>]) -> bool {
        if self.all || self.allowed.contains(spec.name) {
            return true;
        }
        // A first argument allowed on its own (`+select|0`).
        let at = if spec.name.contains('|') { 2 } else { 1 };
        match (self.first_args.get(spec.name), args.get(at)) {
            (Some(firsts), Some(arg)) => firsts.iter().any(|f| f.eq_ignore_ascii_case(arg)),
            _ => false,
        }
    }

    /// Allows or denies `spec` and its subcommands; forgets the first
    /// arguments allowed for it.
    fn change(&mut self, spec: &'static Spec, allow: bool) {
        for one in core::iter::once(spec).chain(spec.subcommands.iter()) {
            self.set(one, allow);
        }
        self.first_args.remove(spec.name);
    }

    fn set(&mut self, spec: &'static Spec, allow: bool) {
        if allow {
            self.allowed.insert(spec.name);
        } else {
            self.allowed.remove(spec.name);
            self.all = false;
        }
    }

    /// `+@all` (`allow`) or `-@all`.
    pub fn set_all(&mut self, allow: bool) {
        self.allowed.clear();
        if allow {
            self.allowed.extend(every_spec().map(|s| s.name));
        }
        self.future = allow;
        self.all = allow;
        self.first_args.clear();
    }

    /// `+@category` or `-@category`.
    fn set_category(&mut self, category: Categories, allow: bool) {
        for spec in every_spec() {
            if spec.acl & category != 0 {
                self.change(spec, allow);
            }
        }
    }

    /// Applies one rule that starts with `+` or `-`.
    pub fn apply(&mut self, rule: &[u8]) -> Result<(), RuleError> {
        let (allow, what) = match rule.split_first() {
            Some((b'+', what)) => (true, what),
            Some((b'-', what)) => (false, what),
            _ => return Err(RuleError::Syntax),
        };
        if let Some(name) = what.strip_prefix(b"@") {
            if name.eq_ignore_ascii_case(b"all") {
                self.set_all(allow);
                return Ok(());
            }
            let category = cat::by_name(name).ok_or(RuleError::Unknown)?;
            self.set_category(category, allow);
            return Ok(());
        }
        if !allow || !what.contains(&b'|') {
            let spec = lookup(what).ok_or(RuleError::Unknown)?;
            self.change(spec, allow);
            return Ok(());
        }
        // `+command|sub` or `+command|first-arg`.
        let split = what.iter().rposition(|&b| b == b'|').unwrap_or(0);
        let (base, arg) = (&what[..split], &what[split + 1..]);
        let spec = lookup(base).ok_or(RuleError::Unknown)?;
        if spec.name.contains('|') {
            return Err(RuleError::FirstArgOfSubcommand);
        }
        if arg.is_empty() {
            return Err(RuleError::Syntax);
        }
        if spec.subcommands.is_empty() {
            let firsts = self.first_args.entry(spec.name).or_default();
            if !firsts.iter().any(|f| f.eq_ignore_ascii_case(arg)) {
                firsts.push(arg.to_vec());
            }
        } else {
            let sub = spec.subcommand(arg).ok_or(RuleError::Unknown)?;
            self.change(sub, true);
        }
        Ok(())
    }

    /// How many commands of `category` are allowed, and how many not
    /// (commands, not subcommands, as Redis counts).
    fn count(&self, category: Categories) -> (usize, usize) {
        table::COMMANDS
            .iter()
            .filter(|spec| spec.acl & category != 0)
            .fold((0, 0), |(on, off), spec| {
                match self.allowed.contains(spec.name) {
                    true => (on + 1, off),
                    false => (on, off + 1),
                }
            })
    }

    /// The rules that rebuild this set: `+@all` or `-@all`, then the
    /// categories that bring it closer (best fit first), then
    /// single commands and subcommands, then first arguments; Redis's way
    /// of describing, so `ACL GETUSER` reads the same.
    pub fn describe(&self) -> String {
        let mut rules: Vec<String> = Vec::new();
        let mut fake = CommandPerms::default();
        let additive = !self.future;
        fake.set_all(!additive);
        rules.push(String::from(if additive { "-@all" } else { "+@all" }));
        // What the categories chosen so far leave to explain. Each round
        // takes the category that fits best: more of its commands agree
        // than differ, the fewest differ, then the most agree.
        let mut left = self.clone();
        loop {
            let mut best: Option<(Categories, &str, usize, usize)> = None;
            for (category, name) in cat::NAMES {
                let (on, off) = left.count(*category);
                let (same, diff) = if additive { (on, off) } else { (off, on) };
                let better = match best {
                    None => true,
                    Some((_, _, best_diff, best_same)) => {
                        diff < best_diff || (diff == best_diff && same > best_same)
                    }
                };
                if same > diff && better {
                    best = Some((*category, name, diff, same));
                }
            }
            let Some((category, name, _, _)) = best else {
                break;
            };
            fake.set_category(category, additive);
            left.set_category(category, !additive);
            rules.push(alloc::format!("{}@{name}", sign(additive)));
        }
        for spec in table::COMMANDS {
            let mine = self.allowed.contains(spec.name);
            if mine != fake.allowed.contains(spec.name) {
                rules.push(alloc::format!("{}{}", sign(mine), spec.name));
                fake.change(spec, mine);
            }
            for sub in spec.subcommands {
                let mine = self.allowed.contains(sub.name);
                if mine != fake.allowed.contains(sub.name) {
                    rules.push(alloc::format!("{}{}", sign(mine), sub.name));
                    fake.set(sub, mine);
                }
            }
            if let (false, Some(firsts)) = (mine, self.first_args.get(spec.name)) {
                for first in firsts {
                    let first = String::from_utf8_lossy(first);
                    rules.push(alloc::format!("+{}|{first}", spec.name));
                }
            }
        }
        rules.join(" ")
    }
}

fn sign(allow: bool) -> char {
    if allow {
        '+'
    } else {
        '-'
    }
}

/// The commands and subcommands of `category`, by full name, for
/// `ACL CAT category`.
pub fn in_category(category: Categories) -> Vec<&'static str> {
    every_spec()
        .filter(|spec| spec.acl & category != 0)
        .map(|spec| spec.name)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn perms(rules: &str) -> CommandPerms {
        let mut p = CommandPerms::default();
        for rule in rules.split(' ') {
            p.apply(rule.as_bytes()).unwrap();
        }
        p
    }

    fn args(words: &str) -> Vec<Vec<u8>> {
        words.split(' ').map(|w| w.as_bytes().to_vec()).collect()
    }

    fn allows(p: &CommandPerms, words: &str) -> bool {
        let a = args(words);
        let top = table::lookup(&a[0]).unwrap();
        let spec = match a.get(1) {
            Some(sub) if !top.subcommands.is_empty() => top.subcommand(sub).unwrap(),
            _ => top,
        };
        p.allows(spec, &a)
    }

    #[test]
    fn descriptions_match_redis() {
        // What redis-server 7.0.15 describes for the same rules.
        for (rules, described) in [
            ("+@all +client|id", "+@all"),
            ("+@all -client|id", "+@all -client|id"),
            ("+@all -client +client|id", "+@all -client +client|id"),
            ("-@all +get +get", "-@all +get"),
            ("-@all +get -get", "-@all"),
            ("-@all +@string -get +get", "-@all +@string"),
            ("-@all +get -@string", "-@all"),
            ("-@all +@string +@list -@string", "-@all +@list"),
            ("-@all +set +@set", "-@all +@set +set"),
            ("-@all +select|0 +select|1", "-@all +select|0 +select|1"),
            ("-@all +select|0 +select", "-@all +select"),
            ("-@all +memory|doctor", "-@all +memory|doctor"),
            ("-@all +@hash -hset +@write", "-@all +@write +@hash"),
            ("-@all +@read +@write", "-@all +@write +@read"),
            ("-@all +@hash -hset +@list", "-@all +@list +@hash -hset"),
            ("-@all +@write -set", "-@all +@write -set"),
            ("+@all -@read -@write", "+@all -@write -@read"),
            ("-@all +@connection -ping", "-@all +@connection -ping"),
        ] {
            assert_eq!(perms(rules).describe(), described, "{rules}");
        }
    }

    #[test]
    fn every_single_category_describes_itself() {
        for (_, name) in cat::NAMES {
            let p = perms(&alloc::format!("+@all -@{name}"));
            assert_eq!(p.describe(), alloc::format!("+@all -@{name}"));
            let p = perms(&alloc::format!("-@all +@{name}"));
            assert_eq!(p.describe(), alloc::format!("-@all +@{name}"));
        }
    }

    #[test]
    fn rules_allow_and_deny() {
        let p = perms("-@all +@set +client|id +select|0");
        assert!(allows(&p, "sadd s a"));
        assert!(!allows(&p, "get k"));
        assert!(allows(&p, "client id"));
        assert!(!allows(&p, "client kill x"));
        assert!(allows(&p, "select 0"));
        assert!(!allows(&p, "select 1"));
        let p = perms("+@all -config|set");
        assert!(allows(&p, "config get x"));
        assert!(!allows(&p, "config set x y"));
    }

    #[test]
    fn bad_rules_are_refused() {
        let mut p = CommandPerms::default();
        assert_eq!(p.apply(b"+nosuch"), Err(RuleError::Unknown));
        assert_eq!(p.apply(b"+config|asdf"), Err(RuleError::Unknown));
        assert_eq!(p.apply(b"-config|asdf"), Err(RuleError::Unknown));
        assert_eq!(p.apply(b"+get|a|b"), Err(RuleError::Unknown));
        assert_eq!(p.apply(b"-select|0"), Err(RuleError::Unknown));
        assert_eq!(
            p.apply(b"+config|get|appendonly"),
            Err(RuleError::FirstArgOfSubcommand)
        );
        assert_eq!(p.apply(b"+@nosuch"), Err(RuleError::Unknown));
        assert_eq!(p.apply(b"get"), Err(RuleError::Syntax));
    }
}
