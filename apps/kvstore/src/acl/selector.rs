//! A selector: keys, channels and commands a user may use together. A
//! user has its root selector and, with Redis 7.0's `(...)` rules, more
//! of them; a command passes if one of them allows all of it.

use alloc::string::String;
use alloc::vec::Vec;

use super::commands::{CommandPerms, RuleError};

/// A key pattern and what it lets a user do to the keys it matches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyPattern {
    /// The glob keys are matched with.
    pub pattern: Vec<u8>,
    /// Reading (`%R~`, or `~`).
    pub read: bool,
    /// Writing (`%W~`, or `~`).
    pub write: bool,
}

/// Keys, channels and commands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selector {
    /// Every key (`allkeys`, `~*`).
    pub all_keys: bool,
    /// The key patterns, in the order given.
    pub keys: Vec<KeyPattern>,
    /// Every channel (`allchannels`, `&*`).
    pub all_channels: bool,
    /// The channel patterns, in the order given.
    pub channels: Vec<Vec<u8>>,
    /// The commands.
    pub commands: CommandPerms,
}

/// What `ACL SETUSER` says of a rule that is not one.
pub const SYNTAX: &str = "Syntax error";

/// Why a command rule was refused, as Redis words it.
pub fn rule_error_text(e: RuleError) -> &'static str {
    match e {
        RuleError::Unknown => "Unknown command or category name in ACL",
        RuleError::FirstArgOfSubcommand => "Allowing first-arg of a subcommand is not supported",
        RuleError::Syntax => SYNTAX,
    }
}

impl Selector {
    /// No keys, no commands; every channel if `all_channels` (the
    /// `acl-pubsub-default` setting), else none.
    pub fn new(all_channels: bool) -> Self {
        Selector {
            all_keys: false,
            keys: Vec::new(),
            all_channels,
            channels: Vec::new(),
            commands: CommandPerms::default(),
        }
    }

    /// Applies one key, channel or command rule; `Ok(false)` if `rule`
    /// is none of those.
    pub fn apply(&mut self, rule: &[u8]) -> Result<bool, &'static str> {
        let lower = rule.to_ascii_lowercase();
        match lower.as_slice() {
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
            _ => match rule.split_first() {
                Some((b'~', rest)) => self.add_keys(rest, true, true)?,
                Some((b'%', rest)) => {
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
                Some((b'&', rest)) => self.add_channel(rest)?,
                Some((b'+' | b'-', _)) => self.commands.apply(rule).map_err(rule_error_text)?,
                _ => return Ok(false),
            },
        }
        Ok(true)
    }

    fn allow_all_keys(&mut self) {
        self.all_keys = true;
        self.keys.clear();
    }

    fn add_keys(&mut self, pattern: &[u8], read: bool, write: bool) -> Result<(), &'static str> {
        // `~*` is `allkeys`, whatever came before (as in Redis).
        if pattern == b"*" && read && write {
            self.allow_all_keys();
            return Ok(());
        }
        if self.all_keys {
            return Err("Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns");
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
        // `&*` is `allchannels`, whatever came before (as in Redis).
        if pattern == b"*" {
            self.allow_all_channels();
            return Ok(());
        }
        if self.all_channels {
            return Err("Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels");
        }
        if !self.channels.iter().any(|c| c == pattern) {
            self.channels.push(pattern.to_vec());
        }
        Ok(())
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

    /// The rules that rebuild this selector, one per argument: keys,
    /// channels, commands (what `ACL LIST` shows, and the log keeps).
    pub fn rules(&self) -> Vec<Vec<u8>> {
        let mut rules = Vec::new();
        if self.all_keys {
            rules.push(b"~*".to_vec());
        }
        for k in &self.keys {
            let how: &[u8] = match (k.read, k.write) {
                (true, true) => b"~",
                (true, false) => b"%R~",
                _ => b"%W~",
            };
            rules.push([how, &k.pattern].concat());
        }
        if self.all_channels {
            rules.push(b"&*".to_vec());
        } else {
            rules.push(b"resetchannels".to_vec());
        }
        rules.extend(self.channels.iter().map(|c| [b"&", c.as_slice()].concat()));
        let commands = self.commands.describe();
        rules.extend(commands.split(' ').map(|w| w.as_bytes().to_vec()));
        rules
    }

    /// Whether the selector lets a command read (`read`) and/or write
    /// (`write`) `key`.
    pub fn may_touch(&self, key: &[u8], read: bool, write: bool) -> bool {
        self.all_keys
            || self.keys.iter().any(|k| {
                (k.read || !read) && (k.write || !write) && crate::glob::matches(&k.pattern, key)
            })
    }

    /// Whether the selector lets a command publish or subscribe to
    /// `channel`; a pattern (`PSUBSCRIBE`) must be one of its patterns,
    /// letter for letter.
    pub fn may_use_channel(&self, channel: &[u8], is_pattern: bool) -> bool {
        self.all_channels
            || self.channels.iter().any(|c| match is_pattern {
                true => c == channel,
                false => crate::glob::matches(c, channel),
            })
    }
}
