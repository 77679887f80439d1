//! A Lua state set up for scripts: the `redis` functions and the sandbox of
//! `sandbox.lua`.

use faultline_lua::State;

use super::{api, Host};

/// The setup chunk, run once in each new state.
const SETUP: &str = include_str!("sandbox.lua");

/// A new state for scripts, in which Lua may hold `limit` bytes; `None`
/// when there is no memory for it.
pub fn new_state<H: Host>(limit: usize) -> Option<State<H>> {
    let mut state = State::new(limit)?;
    let functions: [(&[u8], faultline_lua::state::Callback<H>); 4] = [
        (b"call", api::call::<H>),
        (b"pcall", api::pcall::<H>),
        (b"sha1hex", api::sha1hex::<H>),
        (b"log", api::log::<H>),
    ];
    for (name, f) in functions {
        state.set_function(b"redis", name, f).ok()?;
    }
    state.load(b"setup", b"=sandbox", SETUP.as_bytes()).ok()?;
    let done = state.call_without_host(b"setup");
    state.unload(b"setup");
    done.ok().map(|()| state)
}
