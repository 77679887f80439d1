//! Random Redis commands for kvstore's two randomized tools: the fuzzer
//! (`fuzz/`) and the differential test against Redis
//! (`image/tests/kvstore_vs_redis.rs`). Both draw from one source of
//! choices ([`choices::Choices`]: the fuzzer's bytes or a seeded
//! generator), so either tool can drive either generator:
//!
//! - [`any`]: every command of kvstore's table, with hostile arguments
//!   (huge, negative and malformed numbers, 1 MiB values, expiries around
//!   the session's clock, an argument too few or too many): what the
//!   fuzzer runs, where only crashes and broken invariants count;
//! - [`comparable`]: the commands whose replies Redis must match, with
//!   the arguments that keep them comparable (expiries that never fall
//!   due while the test runs, no float past a double's precision, ...),
//!   each with how its replies compare: what the differential test sends.

pub mod any;
pub mod choices;
pub mod comparable;
