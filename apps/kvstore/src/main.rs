//! `kvstore`: the Redis-protocol server, in the guest.
//!
//! ```text
//! ./run-qemu.sh kvstore --port 6379 -- appendfsync always maxclients 2000
//! redis-cli -p 6379 ping
//! ```
//!
//! The boot arguments are `name value` pairs of Redis settings (see
//! `kvstore::config::Config::from_args`).
#![cfg_attr(target_os = "none", no_std)]
#![cfg_attr(target_os = "none", no_main)]
#![forbid(unsafe_code)]

#[cfg(target_os = "none")]
mod disklog;
#[cfg(target_os = "none")]
mod listen;
#[cfg(target_os = "none")]
mod server;

#[cfg(target_os = "none")]
libos::main!(server::main);

/// The server runs in the guest only.
#[cfg(not(target_os = "none"))]
fn main() {
    eprintln!("kvstore is a Faultline guest app: see ./run-qemu.sh kvstore --help");
}
