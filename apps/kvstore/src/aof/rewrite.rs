//! Log compaction: a fresh log holding just the live data.

use alloc::vec::Vec;

use super::record::{encode_record_into, HEADER};
use crate::num::format_i64;
use crate::store::Store;

/// A complete log (header included) that recreates the keys live at
/// `now_ms`: one `SET key value` per key, with `PXAT <ms>` for keys that
/// expire. Keys already expired are left out. The server writes it to a new
/// file and swaps it in for the old log.
///
/// ```
/// use kvstore::aof::{replay, rewrite};
/// use kvstore::store::Store;
///
/// let mut store = Store::new();
/// store.set(b"k", b"v".to_vec(), Some(5_000));
/// store.set(b"gone", b"x".to_vec(), Some(10));
/// let mut commands = Vec::new();
/// replay(&rewrite(&store, 1_000), |args| commands.push(args));
/// let expected: Vec<Vec<u8>> = ["SET", "k", "v", "PXAT", "5000"].map(|s| s.as_bytes().to_vec()).to_vec();
/// assert_eq!(commands, [expected]);
/// ```
pub fn rewrite(store: &Store, now_ms: u64) -> Vec<u8> {
    let mut out = Vec::new();
    rewrite_each(store, now_ms, |bytes| out.extend_from_slice(bytes));
    out
}

/// [`rewrite`] in pieces: `emit` gets the header, then one record at a
/// time, so the server can copy the new log straight into its disk buffer
/// without holding a second copy of the whole thing.
pub fn rewrite_each(store: &Store, now_ms: u64, mut emit: impl FnMut(&[u8])) {
    emit(&HEADER);
    let mut record = Vec::new();
    for (key, entry) in store.iter() {
        if entry.is_expired(now_ms) {
            continue;
        }
        record.clear();
        match entry.expire_at() {
            Some(at) => {
                let at = format_i64(i64::try_from(at).unwrap_or(i64::MAX));
                encode_record_into(
                    &[&b"SET"[..], key, entry.value(), b"PXAT", &at],
                    &mut record,
                );
            }
            None => encode_record_into(&[&b"SET"[..], key, entry.value()], &mut record),
        }
        emit(&record);
    }
}
