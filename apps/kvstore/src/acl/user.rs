//! One ACL user: whether it may log in and with which passwords, and the
//! keys, channels and commands it may use; the rules of `ACL SETUSER`
//! that change it, and the words `ACL LIST` and `ACL GETUSER` describe it
//! with (Redis 7.0's, so that what one prints the other takes back).

use alloc::string::String;
use alloc::vec::Vec;

use super::commands::{CommandPerms, RuleError};
use super::password::{self, Hash};

/// A key pattern and what it lets a user do to the keys it matches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyPattern {
    pub pattern: Vec<u8>,
    pub read: bool,
    pub write: bool,
}

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
    /// Every key (`allkeys`, `~*`).
    pub all_keys: bool,
    pub keys: Vec<KeyPattern>,
    /// Every channel (`allchannels`, `&*`).
    pub all_channels: bool,
    pub channels: Vec<Vec<u8>>,
    pub commands: CommandPerms,
}

/// Why a rule was refused: the text after `ERR Error in ACL SETUSER
/// modifier '...': `, as Redis words it.
pub fn rule_error_text(e: RuleError) -> &'static str {
    match e {
        RuleError::Unknown => "Unknown command or category name in ACL",
        RuleError::FirstArgOfSubcommand => "Allowing first-arg of a subcommand is not supported",
        RuleError::Syntax => SYNTAX,
    }
}

const SYNTAX: &str = "Syntax error";

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
            all_keys: false,
            keys: Vec::new(),
            all_channels,
            channels: Vec::new(),
            commands: CommandPerms::default(),
        }
    }

    /// The `default` user a server starts with: on, no password, every
    /// key, channel and command.
    pub fn default_user() -> Self {
        let mut user = User::new(true);
        user.enabled = true;
        user.nopass = true;
        user.all_keys = true;
        user.commands.set_all(true);
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

    /// Applies one `ACL SETUSER` rule; `all_channels` is what `reset`
    /// leaves the channels at (`acl-pubsub-default`).
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
            b"allkeys" => self.allow_all_keys(),
            b"resetkeys" => {
                self.all_keys = false;
                self.keys.clear();
            }
            b"allchannels" => self.allow_all_channels(),
            b"resetchannels" => {
                self.all_channels = false;
                self.channels.clear();
            }
            b"allcommands" => self.commands.set_all(true),
            b"nocommands" => self.commands.set_all(false),
            b"clearselectors" => {}
            b"reset" => {
                *self = User::new(all_channels);
                self.sanitize = Some(true);
            }
            _ => return self.apply_prefixed(rule),
        }
        Ok(())
    }

    /// Rules that start with a sign: `>`, `<`, `#`, `!`, `~`, `%`, `&`,
    /// `+`, `-`.
    fn apply_prefixed(&mut self, rule: &[u8]) -> Result<(), &'static str> {
        let Some((&first, rest)) = rule.split_first() else {
            return Err(SYNTAX);
        };
        match first {
            b'>' => self.add_password(password::hash(rest)),
            b'#' => self.add_password(password::parse_hex(rest).ok_or(BAD_HASH)?),
            b'<' => self.remove_password(&password::hash(rest))?,
            b'!' => self.remove_password(&password::parse_hex(rest).ok_or(BAD_HASH)?)?,
            b'~' => self.add_keys(rest, true, true)?,
            b'%' => {
                let tilde = rest.iter().position(|&b| b == b'~').ok_or(SYNTAX)?;
                let (mut read, mut write) = (false, false);
                for &b in &rest[..tilde] {
                    match b.to_ascii_uppercase() {
                        b'R' if !read => read = true,
                        b'W' if !write => write = true,
                        _ => return Err(SYNTAX),
                    }
                }
                self.add_keys(&rest[tilde + 1..], read, write)?;
            }
            b'&' => self.add_channel(rest)?,
            b'+' | b'-' => self.commands.apply(rule).map_err(rule_error_text)?,
            b'(' => return Err("Selectors are not supported by this server"),
            _ => return Err(SYNTAX),
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

    fn allow_all_keys(&mut self) {
        self.all_keys = true;
        self.keys.clear();
    }

    fn add_keys(&mut self, pattern: &[u8], read: bool, write: bool) -> Result<(), &'static str> {
        if self.all_keys {
            return Err("Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns");
        }
        if pattern == b"*" && read && write {
            self.allow_all_keys();
            return Ok(());
        }
        match self.keys.iter_mut().find(|k| k.pattern == pattern) {
            Some(known) => {
                known.read |= read;
                known.write |= write;
            }
            None => self.keys.push(KeyPattern {
                pattern: pattern.to_vec(),
                read,
                write,
            }),
        }
        Ok(())
    }

    fn allow_all_channels(&mut self) {
        self.all_channels = true;
        self.channels.clear();
    }

    fn add_channel(&mut self, pattern: &[u8]) -> Result<(), &'static str> {
        if self.all_channels {
            return Err("Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels");
        }
        if pattern == b"*" {
            self.allow_all_channels();
        } else if !self.channels.iter().any(|c| c == pattern) {
            self.channels.push(pattern.to_vec());
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

    /// The key patterns as `ACL GETUSER` shows them (`~*`, or `~a %R~b`).
    pub fn describe_keys(&self) -> String {
        if self.all_keys {
            return String::from("~*");
        }
        let words: Vec<String> = self
            .keys
            .iter()
            .map(|k| {
                let how = match (k.read, k.write) {
                    (true, true) => "~",
                    (true, false) => "%R~",
                    _ => "%W~",
                };
                alloc::format!("{how}{}", String::from_utf8_lossy(&k.pattern))
            })
            .collect();
        words.join(" ")
    }

    /// The channel patterns as `ACL GETUSER` shows them (`&*`, or `&a &b`).
    pub fn describe_channels(&self) -> String {
        if self.all_channels {
            return String::from("&*");
        }
        let words: Vec<String> = self
            .channels
            .iter()
            .map(|c| alloc::format!("&{}", String::from_utf8_lossy(c)))
            .collect();
        words.join(" ")
    }

    /// The rules that rebuild this user from `reset`, as `ACL LIST` words
    /// them after the name.
    pub fn describe(&self) -> String {
        let mut words: Vec<String> = self.flags().into_iter().map(String::from).collect();
        words.extend(
            self.passwords
                .iter()
                .map(|h| alloc::format!("#{}", password::hex(h))),
        );
        let keys = self.describe_keys();
        if !keys.is_empty() {
            words.push(keys);
        }
        if self.all_channels {
            words.push(String::from("&*"));
        } else {
            words.push(String::from("resetchannels"));
            let channels = self.describe_channels();
            if !channels.is_empty() {
                words.push(channels);
            }
        }
        words.push(self.commands.describe());
        words.join(" ")
    }

    /// Whether the user may read (`read`) and/or write (`write`) `key`.
    pub fn may_touch(&self, key: &[u8], read: bool, write: bool) -> bool {
        self.all_keys
            || self.keys.iter().any(|k| {
                (k.read || !read) && (k.write || !write) && crate::glob::matches(&k.pattern, key)
            })
    }

    /// Whether the user may publish or subscribe to `channel`; a pattern
    /// (`PSUBSCRIBE`) must be one of the user's patterns, letter for
    /// letter.
    pub fn may_use_channel(&self, channel: &[u8], is_pattern: bool) -> bool {
        self.all_channels
            || self.channels.iter().any(|c| match is_pattern {
                true => c == channel,
                false => crate::glob::matches(c, channel),
            })
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
        assert!(u.may_touch(b"r1", true, false) && !u.may_touch(b"r1", false, true));
        assert!(u.may_touch(b"w1", false, true) && !u.may_touch(b"w1", true, false));
        assert!(u.may_touch(b"rw1", true, true) && !u.may_touch(b"x", false, false));
        let u = user("&foo:1 &bar:*");
        assert!(u.may_use_channel(b"bar:2", false));
        assert!(u.may_use_channel(b"bar:*", true));
        assert!(!u.may_use_channel(b"bar:baz", true));
        assert!(user("allkeys").apply(b"~x", false).is_err());
        assert!(user("allchannels").apply(b"&x", false).is_err());
    }
}
