//! Lua 5.1 for Faultline.
//!
//! The interpreter is Lua 5.1.5 itself, compiled from the sources of the
//! lua-src crate by `build.rs` (with clang for the guest). This crate adds
//! what the guest lacks to run it, [`libc`], and a safe interface to a
//! state: [`State`] runs chunks in a memory budget, with Rust functions
//! callable from Lua. `unsafe` lives only at the C boundary: [`ffi`], the
//! guest's C library and [`state`].
#![no_std]

extern crate alloc;

pub mod ffi;
pub mod libc;
pub mod pool;
pub mod stack;
pub mod state;

pub use state::State;
