//! A Lua state set up for scripts: the `redis` functions and the sandbox of
//! `sandbox.lua`.

use faultline_lua::state::Callback;
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

/// A library's functions, each with its Lua name.
type Functions<'a, H> = &'a [(&'a [u8], Callback<H>)];

/// A new state for scripts, in which Lua may hold `limit` bytes, with the
/// function library machinery if `libraries`; `None` when there is no
/// memory for it.
pub fn new_state<H: Host>(limit: usize, libraries: bool) -> Option<State<H>> {
    let mut state = State::new(limit)?;
    // Each function under the name of the Rust function that does it.
    macro_rules! functions {
        ($module:ident: $($name:ident),+) => {
            &[$((stringify!($name).as_bytes(), $module::$name::<H> as Callback<H>)),+]
        };
    }
    let natives: [(&[u8], Functions<H>); 8] = [
        (
            b"redis",
            functions!(api: call, pcall, sha1hex, acl_check_cmd, log, set_repl,
                replicate_commands, setresp),
        ),
        (
            b"bit",
            functions!(bit: tobit, tohex, bnot, band, bor, bxor, lshift, rshift, arshift,
                rol, ror, bswap),
        ),
        (b"cjson", functions!(cjson: encode, decode)),
        (
            b"cjson",
            functions!(cjson_settings: encode_max_depth, decode_max_depth,
                encode_number_precision, encode_keep_buffer, encode_invalid_numbers,
                decode_invalid_numbers, encode_sparse_array),
        ),
        (
            b"cmsgpack",
            functions!(cmsgpack: pack, unpack, unpack_one, unpack_limit),
        ),
        (b"struct", functions!(lua_struct: pack, unpack, size)),
        (b"__faultline", functions!(api: stopped)),
        (b"math", functions!(random: random, randomseed)),
    ];
    for (table, functions) in natives {
        for &(name, f) in functions {
            state.set_function(table, name, f).ok()?;
        }
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
