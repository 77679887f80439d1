//! The ACL log (`ACL LOG`): the commands, keys, channels and logins
//! refused, newest first. A refusal like one already logged (same reason,
//! context, object and user) less than a minute ago adds to its count and
//! moves it to the front instead of taking a new entry, as in Redis.

use alloc::collections::VecDeque;
use alloc::string::String;
use alloc::vec::Vec;

/// Refusals this close together (ms) that are alike share an entry.
const GROUPING_MS: u64 = 60_000;

/// What was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// A command not allowed.
    Command,
    /// A key not allowed.
    Key,
    /// A channel not allowed.
    Channel,
    /// A failed login.
    Auth,
}

impl Reason {
    /// The name `ACL LOG` shows.
    pub fn name(self) -> &'static str {
        match self {
            Reason::Command => "command",
            Reason::Key => "key",
            Reason::Channel => "channel",
            Reason::Auth => "auth",
        }
    }
}

/// Where the refused command ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Context {
    /// Sent by the client.
    Toplevel,
    /// Queued in `MULTI`, or run by `EXEC`.
    Multi,
    /// Called by a script.
    Lua,
}

impl Context {
    /// The name `ACL LOG` shows.
    pub fn name(self) -> &'static str {
        match self {
            Context::Toplevel => "toplevel",
            Context::Multi => "multi",
            Context::Lua => "lua",
        }
    }
}

/// One entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub count: u64,
    pub reason: Reason,
    pub context: Context,
    /// The command (`get`, `client|kill`), key, channel, or `AUTH`.
    pub object: Vec<u8>,
    pub username: Vec<u8>,
    /// When it last happened (ms).
    pub last_ms: u64,
    /// The client's `CLIENT INFO` line then.
    pub client_info: String,
}

/// The entries, newest first.
#[derive(Debug, Default)]
pub struct Log {
    entries: VecDeque<Entry>,
}

impl Log {
    /// Records `entry` (its count is ignored), keeping at most `max_len`
    /// entries.
    pub fn add(&mut self, mut entry: Entry, max_len: usize) {
        let alike = self.entries.iter().position(|e| {
            e.reason == entry.reason
                && e.context == entry.context
                && e.object == entry.object
                && e.username == entry.username
                && entry.last_ms.saturating_sub(e.last_ms) < GROUPING_MS
        });
        entry.count = 1;
        if let Some(at) = alike {
            if let Some(old) = self.entries.remove(at) {
                entry.count = old.count + 1;
            }
        }
        self.entries.push_front(entry);
        self.entries.truncate(max_len);
    }

    /// The newest `count` entries.
    pub fn newest(&self, count: usize) -> impl Iterator<Item = &Entry> {
        self.entries.iter().take(count)
    }

    /// `ACL LOG RESET`.
    pub fn clear(&mut self) {
        self.entries.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(object: &str, at: u64) -> Entry {
        Entry {
            count: 0,
            reason: Reason::Command,
            context: Context::Toplevel,
            object: object.as_bytes().to_vec(),
            username: b"u".to_vec(),
            last_ms: at,
            client_info: String::new(),
        }
    }

    #[test]
    fn alike_refusals_share_an_entry_for_a_minute() {
        let mut log = Log::default();
        log.add(entry("get", 0), 10);
        log.add(entry("set", 1), 10);
        log.add(entry("get", 2), 10);
        let counts: Vec<_> = log
            .newest(10)
            .map(|e| (e.object.clone(), e.count))
            .collect();
        assert_eq!(counts, [(b"get".to_vec(), 2), (b"set".to_vec(), 1)]);
        log.add(entry("get", 70_000), 10);
        assert_eq!(log.newest(10).count(), 3);
        log.add(entry("x", 70_001), 2);
        assert_eq!(log.newest(10).count(), 2);
        log.clear();
        assert_eq!(log.newest(10).count(), 0);
    }
}
