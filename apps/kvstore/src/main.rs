//! `kvstore`: the Redis-protocol server, in the guest.
//!
//! ```text
//! ./run-qemu.sh kvstore --qemu-arg -netdev --qemu-arg user,id=n0,hostfwd=tcp:127.0.0.1:6379-:6379 \
//!                       --qemu-arg -device --qemu-arg virtio-net-pci,netdev=n0
//! redis-cli -p 6379 ping
//! ```
#![cfg_attr(target_os = "none", no_std)]
#![cfg_attr(target_os = "none", no_main)]

#[cfg(target_os = "none")]
mod disklog;
#[cfg(target_os = "none")]
mod server;

/// The server runs in the guest only.
#[cfg(not(target_os = "none"))]
fn main() {
    eprintln!("kvstore is a Faultline guest app: see ./run-qemu.sh kvstore --help");
}
