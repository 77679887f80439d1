//! One ACL user: whether it may log in and with which passwords, and the
//! selectors (keys, channels, commands) it may use; the rules of `ACL
//! SETUSER` that change it, and the words `ACL LIST` and `ACL GETUSER`
//! describe it with (Redis 7.0's, so that what one prints the other takes
//! back).

use alloc::string::String;
use alloc::vec::Vec;

use super::password::{self, Hash};
use super::selector::{Selector, SYNTAX};

/// One user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    /// Allowed to log in (`on`).
    pub enabled: bool,
    /// Any password logs in (`nopass`).
    pub nopass: bool,
    /// SHA-256 of each password, in the order they were added.
    pub passwords: Vec<Hash>,
    /// `skip-sanitize-payload` (`Some(false)`) or `sanitize-payload`
    /// (`Some(true)`), shown as flags; kvstore always checks payloads.
    pub sanitize: Option<bool>,
    /// The keys, channels and commands of the user's plain rules.
    pub root: Selector,
    /// Those of its `(...)` rules, each a set of its own.
    pub selectors: Vec<Selector>,
}

impl User {
    /// A user as `ACL SETUSER` creates it: off, no passwords, no keys,
    /// no commands; every channel if `all_channels` (the
    /// `acl-pubsub-default` setting), else none.
    pub fn new(all_channels: bool) -> Self {
        User {
            enabled: false,
            nopass: false,
            passwords: Vec::new(),
            sanitize: None,
            root: Selector::new(all_channels),
            selectors: Vec::new(),
        }
    }

    /// The `default` user a server starts with: on, no password, every
    /// key, channel and command.
    pub fn default_user() -> Self {
        let mut user = User::new(true);
        user.enabled = true;
        user.nopass = true;
        user.root.all_keys = true;
        user.root.commands.set_all(true);
        user
    }

    /// Whether `password` logs this user in (it must be on).
    pub fn accepts(&self, password: &[u8]) -> bool {
        if !self.enabled {
            return false;
        }
        let hash = password::hash(password);
        // Every stored hash is compared, in constant time each.
        let matched = self
            .passwords
            .iter()
            .fold(false, |found, h| found | password::same(h, &hash));
        self.nopass || matched
    }

    /// Applies one `ACL SETUSER` rule (a `(...)` selector is one rule);
    /// `all_channels` is what new selectors and `reset` start with
    /// (`acl-pubsub-default`).
    pub fn apply(&mut self, rule: &[u8], all_channels: bool) -> Result<(), &'static str> {
        let lower = rule.to_ascii_lowercase();
        match lower.as_slice() {
            b"on" => self.enabled = true,
            b"off" => self.enabled = false,
            b"nopass" => {
                self.nopass = true;
                self.passwords.clear();
            }
            b"resetpass" => {
                self.nopass = false;
                self.passwords.clear();
            }
            b"skip-sanitize-payload" => self.sanitize = Some(false),
            b"sanitize-payload" => self.sanitize = Some(true),
            b"clearselectors" => self.selectors.clear(),
            b"reset" => {
                *self = User::new(all_channels);
                self.sanitize = Some(true);
            }
            _ => return self.apply_prefixed(rule, all_channels),
        }
        Ok(())
    }

    /// Password rules (`>`, `<`, `#`, `!`), selectors (`(...)`), and the
    /// root selector's rules.
    fn apply_prefixed(&mut self, rule: &[u8], all_channels: bool) -> Result<(), &'static str> {
        match rule.split_first() {
            Some((b'>', rest)) => self.add_password(password::hash(rest)),
            Some((b'#', rest)) => self.add_password(password::parse_hex(rest).ok_or(BAD_HASH)?),
            Some((b'<', rest)) => self.remove_password(&password::hash(rest))?,
            Some((b'!', rest)) => {
                self.remove_password(&password::parse_hex(rest).ok_or(BAD_HASH)?)?
            }
            Some((b'(', rest)) => {
                let inner = rest.strip_suffix(b")").ok_or(SYNTAX)?;
                let mut selector = Selector::new(all_channels);
                for word in inner.split(|&b| b == b' ').filter(|w| !w.is_empty()) {
                    if !selector.apply(word)? {
                        return Err(SYNTAX);
                    }
                }
                self.selectors.push(selector);
            }
            _ => {
                if !self.root.apply(rule)? {
                    return Err(SYNTAX);
                }
            }
        }
        Ok(())
    }

    fn add_password(&mut self, hash: Hash) {
        self.nopass = false;
        if !self.passwords.contains(&hash) {
            self.passwords.push(hash);
        }
    }

    fn remove_password(&mut self, hash: &Hash) -> Result<(), &'static str> {
        let before = self.passwords.len();
        self.passwords.retain(|h| h != hash);
        if self.passwords.len() == before {
            return Err("The password you are trying to remove from the user does not exist");
        }
        Ok(())
    }

    /// The flags `ACL GETUSER` lists, in Redis's order.
    pub fn flags(&self) -> Vec<&'static str> {
        let mut flags = alloc::vec![if self.enabled { "on" } else { "off" }];
        if self.nopass {
            flags.push("nopass");
        }
        match self.sanitize {
            Some(false) => flags.push("skip-sanitize-payload"),
            Some(true) => flags.push("sanitize-payload"),
            None => {}
        }
        flags
    }

    /// The rules that rebuild this user from `reset`, one per argument:
    /// flags, password hashes, its root selector's rules, its selectors.
    pub fn rules(&self) -> Vec<Vec<u8>> {
        let mut rules: Vec<Vec<u8>> = self.flags().iter().map(|f| f.as_bytes().to_vec()).collect();
        rules.extend(
            self.passwords
                .iter()
                .map(|h| alloc::format!("#{}", password::hex(h)).into_bytes()),
        );
        rules.extend(self.root.rules());
        for selector in &self.selectors {
            rules.push([&b"("[..], &selector.rules().join(&b' '), b")"].concat());
        }
        rules
    }

    /// [`rules`](User::rules) as one line, as `ACL LIST` shows them after
    /// the name.
    pub fn describe(&self) -> String {
        String::from_utf8_lossy(&self.rules().join(&b' ')).into_owned()
    }

    /// Whether one of the user's selectors lets it publish or subscribe
    /// to `channel` (a pattern, if `is_pattern`).
    pub fn may_use_channel(&self, channel: &[u8], is_pattern: bool) -> bool {
        core::iter::once(&self.root)
            .chain(&self.selectors)
            .any(|s| s.may_use_channel(channel, is_pattern))
    }
}

const BAD_HASH: &str = "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters";

#[cfg(test)]
mod tests {
    use super::*;

    fn user(rules: &str) -> User {
        let mut u = User::new(false);
        for rule in rules.split(' ') {
            u.apply(rule.as_bytes(), false).unwrap();
        }
        u
    }

    #[test]
    fn passwords_log_in_only_when_on() {
        let mut u = user(">p1 >p2");
        assert!(!u.accepts(b"p1"));
        u.apply(b"on", false).unwrap();
        assert!(u.accepts(b"p1") && u.accepts(b"p2") && !u.accepts(b"p3"));
        u.apply(b"<p1", false).unwrap();
        assert!(!u.accepts(b"p1"));
        assert!(u.apply(b"<p1", false).is_err());
        u.apply(b"nopass", false).unwrap();
        assert!(u.accepts(b"anything"));
    }

    #[test]
    fn hashes_are_checked() {
        let hash = "34344e4d60c2b6d639b7bd22e18f2b0b91bc34bf0ac5f9952744435093cfb4e6";
        let u = user(&alloc::format!("on #{hash}"));
        assert!(u.accepts(b"passwd4"));
        let mut u = User::new(false);
        let short = alloc::format!("#{}", &hash[..63]);
        assert!(u.apply(short.as_bytes(), false).is_err());
        assert!(u
            .apply(
                b"#34344e4d60c2b6d639b7bd22e18f2b0b91bc34bf0ac5f9952744435093cfb4eq",
                false
            )
            .is_err());
    }

    #[test]
    fn descriptions_match_redis() {
        let u = user("on >abc ~foo* %R~r* %W~w* %RW~rw* &ch* +get");
        assert_eq!(
            u.describe(),
            "on #ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad ~foo* %R~r* %W~w* ~rw* resetchannels &ch* -@all +get"
        );
        assert_eq!(
            user("allkeys resetkeys ~a allchannels").describe(),
            "off ~a &* -@all"
        );
        assert_eq!(
            user("reset").describe(),
            "off sanitize-payload resetchannels -@all"
        );
        assert_eq!(User::default_user().describe(), "on nopass ~* &* +@all");
    }

    #[test]
    fn keys_and_channels_are_checked_by_intent() {
        let u = user("%R~r* %W~w* ~rw*");
        let r = &u.root;
        assert!(r.may_touch(b"r1", true, false) && !r.may_touch(b"r1", false, true));
        assert!(r.may_touch(b"w1", false, true) && !r.may_touch(b"w1", true, false));
        assert!(r.may_touch(b"rw1", true, true) && !r.may_touch(b"x", false, false));
        let u = user("&foo:1 &bar:*");
        assert!(u.may_use_channel(b"bar:2", false));
        assert!(u.may_use_channel(b"bar:*", true));
        assert!(!u.may_use_channel(b"bar:baz", true));
        assert!(user("allkeys").apply(b"~x", false).is_err());
        assert!(user("on").apply(b"(on)", false).is_err());
        let mut u = user("~a* +get");
        u.apply(b"(~b* +set)", false).unwrap();
        u.apply(b"(%R~c*  +del)", false).unwrap();
        assert_eq!(
            u.describe(),
            "off ~a* resetchannels -@all +get (~b* resetchannels -@all +set) (%R~c* resetchannels -@all +del)"
        );
        u.apply(b"clearselectors", false).unwrap();
        assert_eq!(u.selectors.len(), 0);
        assert!(user("allchannels").apply(b"&x", false).is_err());
    }
}
