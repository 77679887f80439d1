//! The slow log (`SLOWLOG`): the last commands that took longer than
//! `slowlog-log-slower-than` microseconds, newest first, at most
//! `slowlog-max-len` of them, as Redis 7.0 keeps it. Each entry keeps a
//! trimmed copy of the command (at most [`MAX_ARGS`] arguments of at most
//! [`MAX_ARG_BYTES`] bytes), so a huge request costs the log little.

use alloc::collections::VecDeque;
use alloc::string::String;
use alloc::vec::Vec;

use crate::resp::Reply;

/// Arguments an entry keeps; the last kept one says how many more there
/// were.
pub const MAX_ARGS: usize = 32;
/// Bytes an argument keeps; the rest is said in words.
pub const MAX_ARG_BYTES: usize = 128;

/// One logged command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its place in the sequence of every entry since start (not reset by
    /// `SLOWLOG RESET`).
    pub id: u64,
    /// When it ran, in Unix seconds.
    pub unix_secs: u64,
    /// How long it ran, in microseconds.
    pub micros: u64,
    /// The command as trimmed (see the module's documentation).
    pub args: Vec<Vec<u8>>,
    /// The client's `ip:port`.
    pub client_addr: String,
    /// The client's name (empty if none).
    pub client_name: Vec<u8>,
}

/// The log.
#[derive(Debug, Default)]
pub struct SlowLog {
    entries: VecDeque<Entry>,
    next_id: u64,
}

/// Who ran a logged command.
pub struct Caller<'a> {
    /// `ip:port`.
    pub addr: &'a str,
    /// The connection's name (empty if none).
    pub name: &'a [u8],
}

impl SlowLog {
    /// Logs the command whose [`trimmed`] arguments `args` gives if it
    /// took at least `threshold` microseconds (negative: the log is off),
    /// keeping at most `max_len` entries.
    pub fn record(
        &mut self,
        args: impl FnOnce() -> Vec<Vec<u8>>,
        micros: u64,
        threshold: i64,
        max_len: usize,
        unix_secs: u64,
        caller: Caller<'_>,
    ) {
        if threshold < 0 || micros < threshold as u64 {
            return;
        }
        self.entries.push_front(Entry {
            id: self.next_id,
            unix_secs,
            micros,
            args: args(),
            client_addr: caller.addr.into(),
            client_name: caller.name.to_vec(),
        });
        self.next_id += 1;
        self.entries.truncate(max_len);
    }

    /// `SLOWLOG LEN`.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is logged.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// `SLOWLOG RESET`.
    pub fn reset(&mut self) {
        self.entries.clear();
    }

    /// `SLOWLOG GET [count]`: the newest `count` entries (all for `None`).
    pub fn newest(&self, count: Option<usize>) -> Reply {
        let count = count.unwrap_or(usize::MAX);
        Reply::array(self.entries.iter().take(count).map(entry_reply).collect())
    }
}

/// An entry as `SLOWLOG GET` answers it: id, time, duration, arguments,
/// client address, client name.
fn entry_reply(e: &Entry) -> Reply {
    Reply::array(alloc::vec![
        Reply::Integer(e.id as i64),
        Reply::Integer(e.unix_secs as i64),
        Reply::Integer(e.micros as i64),
        Reply::array(
            e.args
                .iter()
                .map(|a| Reply::Bulk(Some(a.clone())))
                .collect()
        ),
        Reply::Bulk(Some(e.client_addr.as_bytes().to_vec())),
        Reply::Bulk(Some(e.client_name.clone())),
    ])
}

/// What an entry keeps of a command's arguments.
pub fn trimmed(args: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let kept = if args.len() > MAX_ARGS {
        MAX_ARGS - 1
    } else {
        args.len()
    };
    let mut out: Vec<Vec<u8>> = args[..kept]
        .iter()
        .map(|a| match a.len() > MAX_ARG_BYTES {
            true => {
                let mut short = a[..MAX_ARG_BYTES].to_vec();
                let more = a.len() - MAX_ARG_BYTES;
                short.extend_from_slice(alloc::format!("... ({more} more bytes)").as_bytes());
                short
            }
            false => a.clone(),
        })
        .collect();
    if args.len() > kept {
        let more = args.len() - kept;
        out.push(alloc::format!("... ({more} more arguments)").into_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &str) -> Vec<Vec<u8>> {
        words.split(' ').map(|w| w.as_bytes().to_vec()).collect()
    }

    fn caller() -> Caller<'static> {
        Caller {
            addr: "10.0.2.2:5000",
            name: b"app",
        }
    }

    #[test]
    fn only_commands_at_or_past_the_threshold_are_logged_newest_first() {
        let mut log = SlowLog::default();
        log.record(|| trimmed(&args("GET a")), 99, 100, 128, 7, caller());
        log.record(|| trimmed(&args("SET a 1")), 100, 100, 128, 8, caller());
        log.record(|| trimmed(&args("PING")), 5, 0, 128, 9, caller());
        log.record(|| trimmed(&args("PING")), 1_000_000, -1, 128, 9, caller());
        assert_eq!(log.len(), 2);
        let Reply::Array(Some(entries)) = log.newest(None) else {
            panic!("not an array");
        };
        let expected_first = Reply::array(alloc::vec![
            Reply::Integer(1),
            Reply::Integer(9),
            Reply::Integer(5),
            Reply::array(alloc::vec![Reply::Bulk(Some(b"PING".to_vec()))]),
            Reply::Bulk(Some(b"10.0.2.2:5000".to_vec())),
            Reply::Bulk(Some(b"app".to_vec())),
        ]);
        assert_eq!(entries[0], expected_first);
        let Reply::Array(Some(one)) = log.newest(Some(1)) else {
            panic!("not an array");
        };
        assert_eq!(one.len(), 1);
    }

    #[test]
    fn the_log_keeps_max_len_entries_and_ids_go_on_after_reset() {
        let mut log = SlowLog::default();
        for _ in 0..100 {
            log.record(|| trimmed(&args("PING")), 0, 0, 10, 0, caller());
        }
        assert_eq!(log.len(), 10);
        log.reset();
        assert!(log.is_empty());
        log.record(|| trimmed(&args("PING")), 0, 0, 10, 0, caller());
        assert_eq!(log.entries[0].id, 100);
    }

    #[test]
    fn long_commands_and_arguments_are_trimmed_as_redis_trims_them() {
        let many: Vec<Vec<u8>> = (0..34)
            .map(|i| alloc::format!("{i}").into_bytes())
            .collect();
        let kept = trimmed(&many);
        assert_eq!(kept.len(), 32);
        assert_eq!(kept[31], b"... (3 more arguments)");
        assert_eq!(kept[30], b"30");
        let long = alloc::vec![b"SADD".to_vec(), alloc::vec![b'A'; 129]];
        let kept = trimmed(&long);
        let mut expected = alloc::vec![b'A'; 128];
        expected.extend_from_slice(b"... (1 more bytes)");
        assert_eq!(kept[1], expected);
    }
}
