//! Random Redis commands for kvstore's two randomized tools: the fuzzer
//! (`fuzz/`) and the differential test against Redis
//! (`image/tests/kvstore_vs_redis.rs`). One generator ([`Gen`]) and one
//! table of commands and their argument shapes serve both; a
//! [`Profile`] decides which commands are drawn and how their arguments
//! are:
//!
//! - [`Profile::Hostile`], the fuzzer's: every command of kvstore's
//!   table, with hostile arguments (huge, negative and malformed numbers,
//!   1 MiB values, expiries around the session's clock, blocking
//!   timeouts, names in any case, an argument too few or too many), where
//!   only crashes and broken invariants count;
//! - [`Profile::Comparable`], the differential test's: the commands whose
//!   replies Redis must match, with the arguments that keep them
//!   comparable (expiries that never fall due while the test runs, no
//!   float past a double's precision, no blocking, ...), each with how
//!   its replies compare ([`Check`]).
//!
//! Choices come from [`choices::Choices`]: the fuzzer's bytes or a seeded
//! generator, so either tool can draw either profile.

pub mod choices;
mod draw;
mod families;
mod table;

pub use draw::{Check, Gen, Profile};
pub use table::names;

/// One command for the fuzzer: hostile arguments, expiries around `now`
/// (the session's clock, ms).
pub fn hostile_command(c: &mut dyn choices::Choices, now: u64) -> Vec<Vec<u8>> {
    Gen::new(c, Profile::Hostile { now }).command().0
}
