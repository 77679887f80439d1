//! `kvstore`: the pure, host-testable core of Faultline's Redis-protocol
//! key-value store.
//!
//! Nothing here touches the network, a disk or a clock: bytes go in, bytes
//! come out, and time is a number of milliseconds the caller passes in. That
//! keeps every rule testable on the host; the guest binary glues it to
//! sockets, a log file and the board's clock.
//!
//! The pieces, in the order a request meets them:
//!
//! - [`resp`]: the wire protocol (RESP2, and RESP3 after `HELLO 3`), an incremental request
//!   [`Parser`](resp::Parser) and the [`Reply`](resp::Reply) encoder.
//! - [`commands`]: the [`Engine`](commands::Engine) that executes one
//!   command against the dataset and says what to log.
//! - [`store`]: the keyspace itself, with expiry and a memory estimate.
//! - [`aof`]: the append-only log: records, replay with torn-tail
//!   detection, and compaction.
//! - [`session`]: one connection's protocol state and the limits that
//!   keep one client from stalling the others.
//! - [`blocking`]: clients waiting on keys (`BLPOP`, ...) and who is
//!   served first when a key gets data.
//! - [`scripting`]: Lua scripts (`EVAL`, `SCRIPT`), with Lua 5.1 from
//!   faultline-lua.
//! - [`config`], [`glob`], [`num`]: settings, Redis glob patterns and
//!   Redis's strict integer syntax, shared by the above.
//!
//! ```
//! use kvstore::commands::{ClientCtx, Engine};
//! use kvstore::config::Config;
//! use kvstore::resp::{Parser, Reply};
//!
//! let mut engine = Engine::new(Config::default(), 0);
//! let mut client = ClientCtx::new(1);
//! let mut parser = Parser::new();
//! parser.feed(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\nGET k\r\n");
//! let mut out = Vec::new();
//! while let Some(args) = parser.next_command().unwrap() {
//!     engine.execute(&args, &mut client, 1_000).reply.encode(&mut out);
//! }
//! assert_eq!(out, b"+OK\r\n$1\r\nv\r\n");
//! ```
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

pub(crate) mod acl;
pub mod aof;
pub mod blocking;
pub mod busy;
pub mod clients;
pub mod commands;
pub mod config;
pub mod eviction;
pub mod geo;
pub mod glob;
pub mod hll;
pub mod latency;
pub mod monitor;
pub mod notify;
pub mod num;
pub mod output;
pub mod pause;
pub mod pubsub;
pub mod rdb;
pub mod ready;
pub mod resp;
pub mod scripting;
pub mod session;
pub mod slowlog;
pub mod store;
pub mod tracking;

/// One command as it travels through the system: the command name followed
/// by its arguments, each an arbitrary byte string.
pub type Args = alloc::vec::Vec<alloc::vec::Vec<u8>>;
