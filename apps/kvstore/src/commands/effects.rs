//! What commands changed, as log records ready to append.

use alloc::vec::Vec;

use crate::aof::{encode_record_into, replay, HEADER};
use crate::Args;

/// The canonical commands describing changes to the dataset (see the table
/// in [`crate::commands`]), each already encoded as an append-only log
/// record: the engine encodes a change once, straight from the bytes it
/// has at hand, and the server appends [`records`](Effects::records) to the
/// log as they are.
///
/// ```
/// use kvstore::aof::{replay, HEADER};
/// use kvstore::commands::Effects;
///
/// let mut effects = Effects::default();
/// effects.push(["SET", "k", "v"]);
/// effects.push(["DEL", "k"]);
/// assert_eq!(effects.len(), 2);
/// let mut log = HEADER.to_vec();
/// log.extend_from_slice(effects.records());
/// let mut names = Vec::new();
/// replay(&log, |args| names.push(args[0].clone()));
/// assert_eq!(names, [b"SET".to_vec(), b"DEL".to_vec()]);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Effects {
    records: Vec<u8>,
    count: usize,
}

impl Effects {
    /// Adds one command, encoded as a log record.
    pub fn push<A: AsRef<[u8]>>(&mut self, args: impl AsRef<[A]>) {
        encode_record_into(args.as_ref(), &mut self.records);
        self.count += 1;
    }

    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// How many commands.
    pub fn len(&self) -> usize {
        self.count
    }

    /// The log records, in order.
    pub fn records(&self) -> &[u8] {
        &self.records
    }

    /// The commands, decoded again (for tests and tools).
    pub fn commands(&self) -> Vec<Args> {
        let mut log = HEADER.to_vec();
        log.extend_from_slice(&self.records);
        let mut commands = Vec::new();
        replay(&log, |args| commands.push(args));
        commands
    }
}
