//! The append-only log: how the dataset survives a restart.
//!
//! Every command that changes the dataset is logged in a canonical,
//! replay-safe form (see [`crate::commands::Outcome::effects`]) as one
//! checksummed record. On start the server [`replay`]s the log into a fresh
//! engine, truncates it at the first torn or corrupt record, and from time to
//! time [`rewrite`]s it to just the live data.

pub mod check;
mod fsync;
mod gather;
mod pace;
mod pieces;
mod policy;
mod record;
mod rewrite;
pub mod superblock;

pub use fsync::AppendFsync;
pub use gather::cut_gather;
pub use libos::checksum::{crc32c, crc32c_extend};
pub use pace::{RewritePace, IDLE_AFTER};
pub use pieces::{encode_record_pieces, most_bytes, Piece, RecordBuf};
pub use policy::{should_rewrite, RewritePolicy};
pub use record::{
    encode_record, encode_record_into, replay, ReplayReport, TailError, TailReason, HEADER, MAGIC,
    VERSION,
};
pub use rewrite::SET_MEMBERS_PER_RECORD;
pub use rewrite::{push_entry, rewrite, RewriteScan, HASH_FIELDS_PER_RECORD};
