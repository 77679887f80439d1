//! The C interface of Lua 5.1 (`lua.h`, `lauxlib.h`, `lualib.h`): the
//! declarations this crate calls, with the constants they take.
#![allow(non_camel_case_types, missing_docs)]

use core::ffi::{c_char, c_int, c_void};

/// A Lua state (opaque).
#[repr(C)]
pub struct lua_State {
    _opaque: [u8; 0],
}

/// A function Lua can call.
pub type lua_CFunction = unsafe extern "C" fn(l: *mut lua_State) -> c_int;
/// The allocator of a state.
pub type lua_Alloc = unsafe extern "C" fn(
    ud: *mut c_void,
    ptr: *mut c_void,
    osize: usize,
    nsize: usize,
) -> *mut c_void;
/// A debug hook.
pub type lua_Hook = unsafe extern "C" fn(l: *mut lua_State, ar: *mut c_void);

pub const LUA_REGISTRYINDEX: c_int = -10000;
pub const LUA_GLOBALSINDEX: c_int = -10002;
/// The pseudo-index of a C closure's upvalue `i`.
pub const fn lua_upvalueindex(i: c_int) -> c_int {
    LUA_GLOBALSINDEX - i
}

pub const LUA_MULTRET: c_int = -1;

pub const LUA_OK: c_int = 0;
pub const LUA_ERRRUN: c_int = 2;
pub const LUA_ERRSYNTAX: c_int = 3;
pub const LUA_ERRMEM: c_int = 4;
pub const LUA_ERRERR: c_int = 5;

pub const LUA_TNONE: c_int = -1;
pub const LUA_TNIL: c_int = 0;
pub const LUA_TBOOLEAN: c_int = 1;
pub const LUA_TLIGHTUSERDATA: c_int = 2;
pub const LUA_TNUMBER: c_int = 3;
pub const LUA_TSTRING: c_int = 4;
pub const LUA_TTABLE: c_int = 5;
pub const LUA_TFUNCTION: c_int = 6;
pub const LUA_TUSERDATA: c_int = 7;
pub const LUA_TTHREAD: c_int = 8;

pub const LUA_GCCOLLECT: c_int = 2;
pub const LUA_GCCOUNT: c_int = 3;
pub const LUA_GCSTEP: c_int = 5;

pub const LUA_MASKCOUNT: c_int = 1 << 3;

/// Slots a C function may use without asking (`LUA_MINSTACK`).
pub const LUA_MINSTACK: c_int = 20;

extern "C" {
    pub fn lua_newstate(f: lua_Alloc, ud: *mut c_void) -> *mut lua_State;
    pub fn lua_close(l: *mut lua_State);
    pub fn lua_gettop(l: *mut lua_State) -> c_int;
    pub fn lua_settop(l: *mut lua_State, idx: c_int);
    pub fn lua_pushvalue(l: *mut lua_State, idx: c_int);
    pub fn lua_remove(l: *mut lua_State, idx: c_int);
    pub fn lua_insert(l: *mut lua_State, idx: c_int);
    pub fn lua_checkstack(l: *mut lua_State, sz: c_int) -> c_int;
    pub fn lua_type(l: *mut lua_State, idx: c_int) -> c_int;
    pub fn lua_tonumber(l: *mut lua_State, idx: c_int) -> f64;
    pub fn lua_isnumber(l: *mut lua_State, idx: c_int) -> c_int;
    pub fn lua_toboolean(l: *mut lua_State, idx: c_int) -> c_int;
    pub fn lua_tolstring(l: *mut lua_State, idx: c_int, len: *mut usize) -> *const c_char;
    pub fn lua_touserdata(l: *mut lua_State, idx: c_int) -> *mut c_void;
    pub fn lua_pushnil(l: *mut lua_State);
    pub fn lua_pushnumber(l: *mut lua_State, n: f64);
    pub fn lua_pushlstring(l: *mut lua_State, s: *const c_char, len: usize);
    pub fn lua_pushcclosure(l: *mut lua_State, f: lua_CFunction, n: c_int);
    pub fn lua_pushboolean(l: *mut lua_State, b: c_int);
    pub fn lua_pushlightuserdata(l: *mut lua_State, p: *mut c_void);
    pub fn lua_gettable(l: *mut lua_State, idx: c_int);
    pub fn lua_rawget(l: *mut lua_State, idx: c_int);
    pub fn lua_rawgeti(l: *mut lua_State, idx: c_int, n: c_int);
    pub fn lua_createtable(l: *mut lua_State, narr: c_int, nrec: c_int);
    pub fn lua_rawset(l: *mut lua_State, idx: c_int);
    pub fn lua_rawseti(l: *mut lua_State, idx: c_int, n: c_int);
    pub fn lua_setmetatable(l: *mut lua_State, idx: c_int) -> c_int;
    pub fn lua_call(l: *mut lua_State, nargs: c_int, nresults: c_int);
    pub fn lua_pcall(l: *mut lua_State, nargs: c_int, nresults: c_int, errfunc: c_int) -> c_int;
    pub fn lua_cpcall(l: *mut lua_State, f: lua_CFunction, ud: *mut c_void) -> c_int;
    pub fn lua_error(l: *mut lua_State) -> c_int;
    pub fn lua_next(l: *mut lua_State, idx: c_int) -> c_int;
    pub fn lua_gc(l: *mut lua_State, what: c_int, data: c_int) -> c_int;
    pub fn lua_sethook(l: *mut lua_State, f: Option<lua_Hook>, mask: c_int, count: c_int) -> c_int;
    pub fn lua_getallocf(l: *mut lua_State, ud: *mut *mut c_void) -> lua_Alloc;

    pub fn luaL_where(l: *mut lua_State, lvl: c_int);
    pub fn luaL_ref(l: *mut lua_State, t: c_int) -> c_int;
    pub fn luaL_loadbuffer(
        l: *mut lua_State,
        buf: *const c_char,
        sz: usize,
        name: *const c_char,
    ) -> c_int;

    pub fn luaopen_base(l: *mut lua_State) -> c_int;
    pub fn luaopen_table(l: *mut lua_State) -> c_int;
    pub fn luaopen_string(l: *mut lua_State) -> c_int;
    pub fn luaopen_math(l: *mut lua_State) -> c_int;
    pub fn luaopen_debug(l: *mut lua_State) -> c_int;
}
