//! A Lua state set up for scripts: the `redis` functions and the sandbox of
//! `sandbox.lua`.

use faultline_lua::State;

use super::{api, bit, cjson, cjson_settings, cmsgpack, lua_struct, random, Host, ERROR_HANDLER};

/// The setup chunks, run once in each new state: the environment, then
/// the locks on it.
const SETUP: &str = include_str!("sandbox.lua");
const LOCKDOWN: &str = include_str!("lockdown.lua");

/// The chunk that gives a state function libraries (see `functions`).
const LIBRARY: &str = include_str!("library.lua");
/// The globals [`LIBRARY`] defines for Rust to call, each kept in the
/// registry under its own name and taken out of the globals.
pub const LIBRARY_ENTRIES: [&[u8]; 4] = [
    b"__redis__load",
    b"__redis__commit",
    b"__redis__drop",
    b"__redis__fcall",
];

/// A new state for scripts, in which Lua may hold `limit` bytes, with the
/// function library machinery if `libraries`; `None` when there is no
/// memory for it.
pub fn new_state<H: Host>(limit: usize, libraries: bool) -> Option<State<H>> {
    let mut state = State::new(limit)?;
    let functions: [(&[u8], faultline_lua::state::Callback<H>); 8] = [
        (b"call", api::call::<H>),
        (b"pcall", api::pcall::<H>),
        (b"sha1hex", api::sha1hex::<H>),
        (b"acl_check_cmd", api::acl_check_cmd::<H>),
        (b"log", api::log::<H>),
        (b"set_repl", api::set_repl::<H>),
        (b"replicate_commands", api::replicate_commands::<H>),
        (b"setresp", api::setresp::<H>),
    ];
    for (name, f) in functions {
        state.set_function(b"redis", name, f).ok()?;
    }
    let bits: [(&[u8], faultline_lua::state::Callback<H>); 12] = [
        (b"tobit", bit::tobit::<H>),
        (b"tohex", bit::tohex::<H>),
        (b"bnot", bit::bnot::<H>),
        (b"band", bit::band::<H>),
        (b"bor", bit::bor::<H>),
        (b"bxor", bit::bxor::<H>),
        (b"lshift", bit::lshift::<H>),
        (b"rshift", bit::rshift::<H>),
        (b"arshift", bit::arshift::<H>),
        (b"rol", bit::rol::<H>),
        (b"ror", bit::ror::<H>),
        (b"bswap", bit::bswap::<H>),
    ];
    for (name, f) in bits {
        state.set_function(b"bit", name, f).ok()?;
    }
    let natives: [(&[u8], &[u8], faultline_lua::state::Callback<H>); 19] = [
        (b"cjson", b"encode", cjson::encode::<H>),
        (b"cjson", b"decode", cjson::decode::<H>),
        (
            b"cjson",
            b"encode_max_depth",
            cjson_settings::encode_max_depth::<H>,
        ),
        (
            b"cjson",
            b"decode_max_depth",
            cjson_settings::decode_max_depth::<H>,
        ),
        (
            b"cjson",
            b"encode_number_precision",
            cjson_settings::encode_number_precision::<H>,
        ),
        (
            b"cjson",
            b"encode_keep_buffer",
            cjson_settings::encode_keep_buffer::<H>,
        ),
        (
            b"cjson",
            b"encode_invalid_numbers",
            cjson_settings::encode_invalid_numbers::<H>,
        ),
        (
            b"cjson",
            b"decode_invalid_numbers",
            cjson_settings::decode_invalid_numbers::<H>,
        ),
        (
            b"cjson",
            b"encode_sparse_array",
            cjson_settings::encode_sparse_array::<H>,
        ),
        (b"cmsgpack", b"pack", cmsgpack::pack::<H>),
        (b"cmsgpack", b"unpack", cmsgpack::unpack::<H>),
        (b"cmsgpack", b"unpack_one", cmsgpack::unpack_one::<H>),
        (b"cmsgpack", b"unpack_limit", cmsgpack::unpack_limit::<H>),
        (b"struct", b"pack", lua_struct::pack::<H>),
        (b"struct", b"unpack", lua_struct::unpack::<H>),
        (b"struct", b"size", lua_struct::size::<H>),
        (b"__faultline", b"stopped", api::stopped::<H>),
        (b"math", b"random", random::random::<H>),
        (b"math", b"randomseed", random::randomseed::<H>),
    ];
    for (table, name, f) in natives {
        state.set_function(table, name, f).ok()?;
    }
    state.set_null_pointer(b"cjson", b"null").ok()?;
    if libraries {
        // Before SETUP: it needs setfenv, which SETUP removes.
        state.load(b"setup", b"=sandbox", LIBRARY.as_bytes()).ok()?;
        let done = state.call_without_host(b"setup");
        state.unload(b"setup");
        done.ok()?;
        for name in LIBRARY_ENTRIES {
            if !state.keep_global(name, name) {
                return None;
            }
            state.remove_global(name);
        }
    }
    state.set_tick(crate::busy::TICK_EVERY, Some(H::tick));
    for code in [SETUP, LOCKDOWN] {
        state.load(b"setup", b"=sandbox", code.as_bytes()).ok()?;
        let done = state.call_without_host(b"setup");
        state.unload(b"setup");
        done.ok()?;
        if code == SETUP && !state.keep_global(b"__redis__err__handler", ERROR_HANDLER) {
            return None;
        }
    }
    Some(state)
}
