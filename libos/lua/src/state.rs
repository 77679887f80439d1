//! A Lua state in a memory budget, driven from safe Rust.
//!
//! [`State`] owns a `lua_State` whose allocator counts every byte against a
//! limit: a script that goes past it gets Lua's "not enough memory" error,
//! and the kernel's heap never sees more than the limit from scripts. Rust
//! reaches the state through [`Stack`], whose operations check their
//! indexes and room, so no input can make them misuse the C interface.
//!
//! # Errors and the frames they jump over
//! Lua raises errors with `longjmp`, which must never jump over a Rust frame
//! that holds something to drop. So the limit is enforced only while Lua
//! code runs: whenever Rust drives the state (between calls, and inside a
//! [`Callback`]), allocations may pass it, and the operations Rust uses
//! raise no error (the state also has no `newproxy`, whose finalizers could
//! raise from any allocation). A callback raises its errors by returning
//! [`Raise`], after its frames are gone.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::alloc::Layout;
use core::ffi::{c_char, c_int, c_void};
use core::marker::PhantomData;
use core::ptr::NonNull;

use crate::ffi::*;

/// The first byte of a precompiled Lua chunk (`LUA_SIGNATURE`).
const BINARY_CHUNK_MARK: u8 = 0x1B;

/// A Rust function callable from Lua: it reads its arguments from the
/// stack (1 to [`Stack::top`]), pushes its results and returns how many
/// there are, or raises the value it pushed last. `H` is what the running
/// [`State::call`] was given.
pub type Callback<H> = fn(&mut Stack<'_>, &mut H) -> Result<usize, Raise>;

/// A function Lua calls every so many instructions while code runs (see
/// [`State::set_tick`]), with the host of the running call: `Some(message)`
/// stops the code with that error, `None` lets it go on.
pub type Tick<H> = fn(&mut H) -> Option<Vec<u8>>;

/// A callback's request to raise the value on top of the stack as a Lua
/// error; made by [`Stack::raise`] and [`Stack::raise_message`].
#[derive(Debug)]
pub struct Raise(());

/// A value kept in the registry by number (see [`State::slot_of`]):
/// found with one array lookup, where a name is hashed and compared first.
/// What a function called many times is called by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot(c_int);

/// What [`State::call`] calls, or uses as error handler: a registry key
/// or a slot.
#[derive(Clone, Copy)]
enum Callee<'a> {
    Named(&'a [u8]),
    Numbered(Slot),
}

/// Why a [`Stack`] operation did nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StackError {
    /// No room for another value (Lua's C stack limit).
    Full,
    /// The index names no value, or not a table where one was needed.
    BadIndex,
}

/// The type of a Lua value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// No value at that index.
    None,
    /// `nil`.
    Nil,
    /// `true` or `false`.
    Boolean,
    /// A number.
    Number,
    /// A string.
    String,
    /// A table.
    Table,
    /// A Lua or C function.
    Function,
    /// Userdata or a coroutine.
    Other,
}

/// How [`State::call`] ended; the value on top of the stack is the
/// function's first result or the error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The function returned (its first result is on top, `nil` if none).
    Returned,
    /// The function raised an error (the error value, as the handler made
    /// it, is on top).
    Raised,
    /// The script went past the memory limit (the message is on top).
    OutOfMemory,
}

/// What the allocator and the callbacks share with the [`State`].
struct Shared {
    /// Bytes Lua holds.
    used: usize,
    /// Bytes Lua may hold while Lua code runs.
    limit: usize,
    /// Whether Lua code is running (so the limit holds).
    strict: bool,
    /// The `H` of the running [`State::call`], or null.
    host: *mut c_void,
    /// The [`Tick<H>`] set, as a pointer, or null.
    tick: *const c_void,
    /// Where Lua's small blocks come from.
    pool: crate::pool::Pool,
}

/// Alignment of every block Lua gets (its largest type is a double).
const ALIGN: usize = crate::pool::CLASS;

/// Lua's allocator: blocks of up to [`crate::pool::SMALL_MAX`] bytes from
/// the state's pool, larger ones from the kernel's heap, all counted
/// against [`Shared::limit`].
unsafe extern "C" fn allocate(
    ud: *mut c_void,
    ptr: *mut c_void,
    osize: usize,
    nsize: usize,
) -> *mut c_void {
    // SAFETY: ud is the State's Shared, which outlives its lua_State.
    let shared = unsafe { &mut *ud.cast::<Shared>() };
    let old = NonNull::new(ptr.cast::<u8>());
    if nsize == 0 {
        if let Some(old) = old {
            // SAFETY: old is a live block of osize bytes from this function.
            unsafe { release(&mut shared.pool, old, osize) };
            shared.used -= osize;
        }
        return core::ptr::null_mut();
    }
    let after = shared.used - if old.is_none() { 0 } else { osize } + nsize;
    if shared.strict && nsize > osize && after > shared.limit {
        return core::ptr::null_mut();
    }
    let fresh = match old {
        None => obtain(&mut shared.pool, nsize),
        // SAFETY: old is a live block of osize bytes from this function.
        Some(old) => unsafe { resize(&mut shared.pool, old, osize, nsize) },
    };
    match fresh {
        Some(block) => {
            shared.used = after;
            block.as_ptr().cast()
        }
        None => core::ptr::null_mut(),
    }
}

/// A block of `size` (not zero) bytes, aligned to [`ALIGN`].
fn obtain(pool: &mut crate::pool::Pool, size: usize) -> Option<NonNull<u8>> {
    if size <= crate::pool::SMALL_MAX {
        return pool.take(size);
    }
    let layout = Layout::from_size_align(size, ALIGN).ok()?;
    // SAFETY: size is not zero.
    NonNull::new(unsafe { alloc::alloc::alloc(layout) })
}

/// Gives back `block`, of `size` bytes.
///
/// # Safety
/// `block` is a live block [`obtain`] or [`resize`] gave for `size`
/// bytes, not used after.
unsafe fn release(pool: &mut crate::pool::Pool, block: NonNull<u8>, size: usize) {
    if size <= crate::pool::SMALL_MAX {
        pool.give(block, size);
    } else {
        // SAFETY: a large block came from the heap with this layout.
        unsafe {
            alloc::alloc::dealloc(
                block.as_ptr(),
                Layout::from_size_align_unchecked(size, ALIGN),
            )
        };
    }
}

/// `block` (of `osize` bytes) resized to `nsize` (not zero) bytes, moved
/// if need be; `None`, with the block untouched, when there is no room.
///
/// # Safety
/// As [`release`], for `osize`.
unsafe fn resize(
    pool: &mut crate::pool::Pool,
    block: NonNull<u8>,
    osize: usize,
    nsize: usize,
) -> Option<NonNull<u8>> {
    use crate::pool::{class_of, SMALL_MAX};
    if osize > SMALL_MAX && nsize > SMALL_MAX {
        // SAFETY: a large block came from the heap with this layout;
        // nsize is not zero.
        let moved = unsafe {
            alloc::alloc::realloc(
                block.as_ptr(),
                Layout::from_size_align_unchecked(osize, ALIGN),
                nsize,
            )
        };
        return NonNull::new(moved);
    }
    if class_of(osize).is_some() && class_of(osize) == class_of(nsize) {
        return Some(block);
    }
    let fresh = obtain(pool, nsize)?;
    // SAFETY: both blocks are live, distinct, and hold at least the
    // bytes copied; the old one is given back once.
    unsafe {
        core::ptr::copy_nonoverlapping(block.as_ptr(), fresh.as_ptr(), osize.min(nsize));
        release(pool, block, osize);
    }
    Some(fresh)
}

/// The [`Shared`] of the state `l` belongs to.
///
/// # Safety
/// `l` is a live state made by [`State::new`].
unsafe fn shared_of<'a>(l: *mut lua_State) -> &'a mut Shared {
    let mut ud = core::ptr::null_mut();
    // SAFETY: l is live; its allocator's ud is its State's Shared.
    unsafe {
        lua_getallocf(l, &mut ud);
        &mut *ud.cast::<Shared>()
    }
}

/// The C function every [`Callback`] is called through: its upvalue is the
/// callback. Raises (with `lua_error`) only after `run_callback`, and every
/// Rust value it made, is gone.
unsafe extern "C" fn trampoline<H>(l: *mut lua_State) -> c_int {
    // SAFETY: Lua calls this with a live state of a State<H>, the callback
    // as upvalue 1 (see State::set_function).
    match unsafe { run_callback::<H>(l) } {
        Some(n) => n,
        // SAFETY: the error value is on top; nothing here needs dropping.
        None => unsafe { lua_error(l) },
    }
}

/// Runs the callback of the closure Lua is calling, with the limit lifted;
/// `None` when it raises.
///
/// # Safety
/// As [`trampoline`].
unsafe fn run_callback<H>(l: *mut lua_State) -> Option<c_int> {
    // SAFETY: upvalue 1 is the light userdata State::set_function made from
    // a Callback<H>, a function pointer.
    let f: Callback<H> = unsafe { core::mem::transmute(lua_touserdata(l, lua_upvalueindex(1))) };
    // SAFETY: l belongs to a State (the caller's promise).
    let shared = unsafe { shared_of(l) };
    let mut stack = Stack::new(l);
    if shared.host.is_null() {
        let _ = stack.raise_message(b"a Rust function was called outside of a script run");
        return None;
    }
    let was_strict = core::mem::replace(&mut shared.strict, false);
    // SAFETY: host is the &mut H State::call was given, which it does not
    // touch while Lua runs; no other reference to it exists now.
    let host = unsafe { &mut *shared.host.cast::<H>() };
    let result = f(&mut stack, host);
    // SAFETY: as above; the callback's borrows have ended.
    unsafe { shared_of(l) }.strict = was_strict;
    match result {
        Ok(n) => Some(n.min(stack.top() as usize) as c_int),
        Err(Raise(())) => None,
    }
}

/// The count hook [`State::set_tick`] installs: runs the tick and raises
/// its error (with `lua_error`) only after `run_tick`, and every Rust value
/// it made, is gone.
unsafe extern "C" fn hook<H>(l: *mut lua_State, _ar: *mut c_void) {
    // SAFETY: Lua calls the hook with a live state of a State<H>.
    if unsafe { run_tick::<H>(l) } {
        // SAFETY: the error message is on top; nothing here needs
        // dropping. Lua 5.1 lets a count hook raise.
        unsafe { lua_error(l) };
    }
}

/// Runs the state's tick with the limit lifted; whether it pushed an error
/// to raise.
///
/// # Safety
/// As [`hook`].
unsafe fn run_tick<H>(l: *mut lua_State) -> bool {
    // SAFETY: l belongs to a State (the caller's promise).
    let shared = unsafe { shared_of(l) };
    if shared.host.is_null() || shared.tick.is_null() {
        return false;
    }
    // SAFETY: tick was made from a Tick<H> by State::set_tick.
    let tick: Tick<H> = unsafe { core::mem::transmute(shared.tick) };
    let was_strict = core::mem::replace(&mut shared.strict, false);
    // SAFETY: host is the &mut H State::call was given, which it does not
    // touch while Lua runs; no other reference to it exists now (a hook
    // does not run inside a callback).
    let host = unsafe { &mut *shared.host.cast::<H>() };
    let stop = tick(host);
    // SAFETY: as above; the tick's borrows have ended.
    unsafe { shared_of(l) }.strict = was_strict;
    match stop {
        Some(message) => {
            let mut stack = Stack::new(l);
            let _ = stack.raise_message(&message);
            true
        }
        None => false,
    }
}

/// A Lua state whose callbacks get an `&mut H` from [`State::call`].
pub struct State<H> {
    l: NonNull<lua_State>,
    shared: Box<Shared>,
    /// What Lua parses and runs on (see [`crate::stack`]).
    script_stack: crate::stack::ScriptStack,
    _host: PhantomData<fn(&mut H)>,
}

impl<H> State<H> {
    /// A new state with Lua's base, table, string, math and debug libraries
    /// (the base one without `newproxy`), in which Lua code may hold at most
    /// `limit` bytes. `None` when the heap has no room for it.
    pub fn new(limit: usize) -> Option<Self> {
        let mut shared = Box::new(Shared {
            used: 0,
            limit,
            strict: false,
            host: core::ptr::null_mut(),
            tick: core::ptr::null(),
            pool: crate::pool::Pool::new(),
        });
        let ud: *mut Shared = &mut *shared;
        // SAFETY: allocate is a lua_Alloc; ud stays valid as long as the
        // state (it is dropped after lua_close).
        let l = NonNull::new(unsafe { lua_newstate(allocate, ud.cast()) })?;
        let mut state = State {
            l,
            shared,
            script_stack: crate::stack::ScriptStack::new(),
            _host: PhantomData,
        };
        let libs: [lua_CFunction; 5] = [
            luaopen_base,
            luaopen_table,
            luaopen_string,
            luaopen_math,
            luaopen_debug,
        ];
        for open in libs {
            // SAFETY: the state is live; each opener is a Lua C function,
            // run in protected mode.
            if unsafe { lua_cpcall(state.raw(), open, core::ptr::null_mut()) } != LUA_OK {
                return None;
            }
        }
        state.stack().clear();
        state.remove_global(b"newproxy");
        Some(state)
    }

    fn raw(&self) -> *mut lua_State {
        self.l.as_ptr()
    }

    /// The stack, for Rust to read and write between calls.
    pub fn stack(&mut self) -> Stack<'_> {
        Stack::new(self.raw())
    }

    /// Bytes Lua holds now.
    pub fn used(&self) -> usize {
        self.shared.used
    }

    /// Sets the bytes Lua code may hold.
    pub fn set_limit(&mut self, limit: usize) {
        self.shared.limit = limit;
    }

    /// Has Lua call `tick` with the running call's host every `every`
    /// instructions while code runs (a script's time limit, a server that
    /// must answer others meanwhile); `None` stops the calls.
    pub fn set_tick(&mut self, every: u32, tick: Option<Tick<H>>) {
        let every = c_int::try_from(every.max(1)).unwrap_or(c_int::MAX);
        self.shared.tick = tick.map_or(core::ptr::null(), |t| t as *const c_void);
        let f: Option<lua_Hook> = tick.map(|_| hook::<H> as lua_Hook);
        let mask = if tick.is_some() { LUA_MASKCOUNT } else { 0 };
        // SAFETY: the state is live; the hook reads only Shared, which
        // outlives it.
        unsafe { lua_sethook(self.raw(), f, mask, every) };
    }

    /// Runs a full garbage collection.
    pub fn collect(&mut self) {
        // SAFETY: the state is live; collecting raises no error (it has no
        // finalizers: no newproxy).
        unsafe { lua_gc(self.raw(), LUA_GCCOLLECT, 0) };
    }

    /// Runs the incremental collector for about `kilobytes` of allocation's
    /// worth of work: what a state that runs many short calls needs to
    /// keep its garbage small between full collections.
    pub fn collect_step(&mut self, kilobytes: u16) {
        // SAFETY: as in collect.
        unsafe { lua_gc(self.raw(), LUA_GCSTEP, c_int::from(kilobytes)) };
    }

    /// Removes the global `name`.
    pub fn remove_global(&mut self, name: &[u8]) {
        let mut s = self.stack();
        if s.push_globals().is_ok() {
            let _ = s.push_nil().and_then(|()| s.set_field(-2, name));
        }
        s.clear();
    }

    /// Sets the global `name` to an array of strings (e.g. `KEYS`).
    pub fn set_global_strings(&mut self, name: &[u8], items: &[Vec<u8>]) -> Result<(), StackError> {
        let mut s = self.stack();
        let r = (|| {
            s.push_globals()?;
            s.push_table(items.len(), 0)?;
            for (i, item) in items.iter().enumerate() {
                s.push_bytes(item)?;
                s.set_index(-2, i + 1)?;
            }
            s.set_field(-2, name)
        })();
        s.clear();
        r
    }

    /// Makes `f` the Lua function `table.name`, creating the global table
    /// `table` if needed.
    pub fn set_function(
        &mut self,
        table: &[u8],
        name: &[u8],
        f: Callback<H>,
    ) -> Result<(), StackError> {
        self.set_in_global_table(table, name, |s| {
            s.room(1)?;
            // SAFETY: the room was checked; the upvalue is the callback's
            // function pointer, which trampoline::<H> turns back into it.
            unsafe {
                lua_pushlightuserdata(s.l, f as *mut c_void);
                lua_pushcclosure(s.l, trampoline::<H>, 1);
            }
            Ok(())
        })
    }

    /// Sets `table.name` (the global table `table`, made if needed) to the
    /// value `push` leaves on top of the stack.
    fn set_in_global_table(
        &mut self,
        table: &[u8],
        name: &[u8],
        push: impl FnOnce(&mut Stack<'_>) -> Result<(), StackError>,
    ) -> Result<(), StackError> {
        let mut s = self.stack();
        let r = (|| {
            s.push_globals()?;
            if s.get_field(-1, table)? != Kind::Table {
                s.pop(1);
                s.push_table(0, 0)?;
                s.push_value(-1)?;
                s.set_field(-3, table)?;
            }
            push(&mut s)?;
            s.set_field(-2, name)
        })();
        s.clear();
        r
    }

    /// Compiles `code` (Lua text: a precompiled chunk is refused, since
    /// Lua 5.1 trusts its bytes), naming its chunk `chunkname` in messages (`@name`
    /// reads `name:LINE:`), and keeps the function in the registry under
    /// `key`. The error is Lua's message.
    pub fn load(&mut self, key: &[u8], chunkname: &[u8], code: &[u8]) -> Result<(), Vec<u8>> {
        if code.first() == Some(&BINARY_CHUNK_MARK) {
            // Lua would run a precompiled chunk without verifying it: text
            // only, and the parser's own message for the first byte.
            let shown = chunkname
                .strip_prefix(b"@")
                .or(chunkname.strip_prefix(b"="));
            let mut msg = Vec::from(shown.unwrap_or(chunkname));
            msg.extend_from_slice(b":1: unexpected symbol near '<\\27>'");
            return Err(msg);
        }
        let mut name = Vec::from(chunkname);
        name.push(0);
        self.stack().clear();
        let l = self.raw();
        // SAFETY: the state is live with an empty stack (room for the
        // result); code and name are valid for the call; loading is
        // protected (an error is returned, not raised).
        let status = self.script_stack.run(|| unsafe {
            luaL_loadbuffer(l, code.as_ptr().cast(), code.len(), name.as_ptr().cast())
        });
        let mut s = self.stack();
        if status != LUA_OK {
            let msg = s
                .bytes(-1)
                .unwrap_or_else(|| b"error loading the script".to_vec());
            s.clear();
            return Err(msg);
        }
        let r = s.push_registry().and_then(|()| {
            s.push_value(-2)?;
            s.set_field(-2, key)
        });
        s.clear();
        r.map_err(|_| b"no room to keep the script".to_vec())
    }

    /// Sets `table.name` (a global table, made if needed) to the light
    /// userdata holding a null pointer: a value scripts can compare and pass
    /// around but not make, as lua-cjson's `cjson.null` is.
    pub fn set_null_pointer(&mut self, table: &[u8], name: &[u8]) -> Result<(), StackError> {
        self.set_in_global_table(table, name, |s| s.push_null_pointer())
    }

    /// Keeps the global `name`'s value in the registry under `key` too
    /// (where scripts cannot change it); whether there was one.
    pub fn keep_global(&mut self, name: &[u8], key: &[u8]) -> bool {
        let mut s = self.stack();
        let kept = (|| {
            s.push_registry()?;
            s.push_globals()?;
            if s.get_field(-1, name)? == Kind::Nil {
                return Ok(false);
            }
            s.set_field(-3, key)?;
            Ok::<_, StackError>(true)
        })();
        s.clear();
        kept == Ok(true)
    }

    /// Keeps the registry's value under `key` in a new slot too, where
    /// [`State::call_slot`] finds it faster; `None` if there is none. The
    /// slot lives as long as the state.
    pub fn slot_of(&mut self, key: &[u8]) -> Option<Slot> {
        let mut s = self.stack();
        let found = s.push_registry().and_then(|()| s.get_field(-1, key));
        let slot = match found {
            Ok(Kind::Nil) | Err(_) => None,
            // SAFETY: the registry is below the value on top, which
            // luaL_ref pops into a new integer key of the registry.
            Ok(_) => Some(Slot(unsafe { luaL_ref(s.l, LUA_REGISTRYINDEX) })),
        };
        s.clear();
        slot
    }

    /// Whether the registry holds a function under `key`.
    pub fn has(&mut self, key: &[u8]) -> bool {
        let mut s = self.stack();
        let found = s.push_registry().and_then(|()| s.get_field(-1, key)) == Ok(Kind::Function);
        s.clear();
        found
    }

    /// Forgets the function under `key`.
    pub fn unload(&mut self, key: &[u8]) {
        let mut s = self.stack();
        let _ = s.push_registry().and_then(|()| {
            s.push_nil()?;
            s.set_field(-2, key)
        });
        s.clear();
    }

    /// Calls the function kept under `key` with no arguments and, if given,
    /// the function kept in the registry under `handler` as error handler
    /// (see [`State::keep_global`]; it gets the error and
    /// returns what [`Outcome::Raised`] shows). Lua code runs within the
    /// memory limit; its callbacks get `host`. `read` gets the stack with the
    /// result or error on top, and `host` back; the stack is emptied after.
    pub fn call<R>(
        &mut self,
        key: &[u8],
        handler: Option<&[u8]>,
        host: &mut H,
        read: impl FnOnce(&mut Stack<'_>, Outcome, &mut H) -> R,
    ) -> R {
        let host: *mut H = host;
        let handler = handler.map(Callee::Named);
        self.invoke(Callee::Named(key), handler, host.cast(), |s, outcome| {
            // SAFETY: host came from the caller's &mut H, which nothing
            // else uses now: the callbacks' borrows ended with the call.
            read(s, outcome, unsafe { &mut *host })
        })
    }

    /// [`State::call`] of the function in `slot`, with the one in
    /// `handler` (if given) as error handler (see [`State::slot_of`]).
    pub fn call_slot<R>(
        &mut self,
        slot: Slot,
        handler: Option<Slot>,
        host: &mut H,
        read: impl FnOnce(&mut Stack<'_>, Outcome, &mut H) -> R,
    ) -> R {
        let host: *mut H = host;
        let handler = handler.map(Callee::Numbered);
        self.invoke_with(
            Callee::Numbered(slot),
            handler,
            &[],
            host.cast(),
            |s, outcome| {
                // SAFETY: as in State::call.
                read(s, outcome, unsafe { &mut *host })
            },
        )
    }

    /// [`State::call`] with arguments: strings, or arrays of strings
    /// (see [`Arg`]), pushed in order. Arguments that do not fit the stack
    /// make the call end [`Outcome::Raised`] without running the function.
    pub fn call_with<R>(
        &mut self,
        key: &[u8],
        handler: Option<&[u8]>,
        args: &[Arg<'_>],
        host: &mut H,
        read: impl FnOnce(&mut Stack<'_>, Outcome, &mut H) -> R,
    ) -> R {
        let host: *mut H = host;
        let (key, handler) = (Callee::Named(key), handler.map(Callee::Named));
        self.invoke_with(key, handler, args, host.cast(), |s, outcome| {
            // SAFETY: as in State::call.
            read(s, outcome, unsafe { &mut *host })
        })
    }

    /// Calls the function kept under `key` with no host (a callback it calls
    /// raises an error), e.g. to set the state up. The error is Lua's
    /// message.
    pub fn call_without_host(&mut self, key: &[u8]) -> Result<(), Vec<u8>> {
        self.invoke(
            Callee::Named(key),
            None,
            core::ptr::null_mut(),
            |s, outcome| match outcome {
                Outcome::Returned => Ok(()),
                _ => Err(s.bytes(-1).unwrap_or_default()),
            },
        )
    }

    fn invoke<R>(
        &mut self,
        key: Callee<'_>,
        handler: Option<Callee<'_>>,
        host: *mut c_void,
        read: impl FnOnce(&mut Stack<'_>, Outcome) -> R,
    ) -> R {
        self.invoke_with(key, handler, &[], host, read)
    }

    fn invoke_with<R>(
        &mut self,
        key: Callee<'_>,
        handler: Option<Callee<'_>>,
        args: &[Arg<'_>],
        host: *mut c_void,
        read: impl FnOnce(&mut Stack<'_>, Outcome) -> R,
    ) -> R {
        let mut s = self.stack();
        s.clear();
        let handler_index = match handler {
            Some(callee) => match s.push_registered(callee) {
                Ok(Kind::Function) => 1,
                _ => {
                    s.clear();
                    0
                }
            },
            None => 0,
        };
        if s.push_registered(key) != Ok(Kind::Function) {
            s.clear();
            let _ = s.push_bytes(b"no such function");
            let r = read(&mut s, Outcome::Raised);
            s.clear();
            return r;
        }
        if args.iter().try_for_each(|arg| arg.push(&mut s)).is_err() {
            s.clear();
            let _ = s.push_bytes(b"no room for the arguments");
            let r = read(&mut s, Outcome::Raised);
            s.clear();
            return r;
        }
        let nargs = args.len() as c_int;
        self.shared.host = host;
        self.shared.strict = true;
        let l = self.raw();
        let status = self.script_stack.run(|| {
            // SAFETY: the state is live, the function with its nargs
            // arguments on top, the handler (if any) at index 1; the call is
            // protected. host is null or the caller's &mut H, unused by it
            // until the call returns.
            unsafe { lua_pcall(l, nargs, 1, handler_index) }
        });
        self.shared.strict = false;
        self.shared.host = core::ptr::null_mut();
        let outcome = match status {
            LUA_OK => Outcome::Returned,
            LUA_ERRMEM => Outcome::OutOfMemory,
            _ => Outcome::Raised,
        };
        let mut s = self.stack();
        let r = read(&mut s, outcome);
        s.clear();
        r
    }
}

impl<H> Drop for State<H> {
    fn drop(&mut self) {
        // SAFETY: the state is live and closed once; Shared is dropped after.
        unsafe { lua_close(self.raw()) };
    }
}

/// An argument [`State::call_with`] passes to a Lua function.
#[derive(Clone, Copy, Debug)]
pub enum Arg<'a> {
    /// A string.
    Bytes(&'a [u8]),
    /// An array of strings (a table indexed from 1).
    Strings(&'a [Vec<u8>]),
}

impl Arg<'_> {
    fn push(&self, s: &mut Stack<'_>) -> Result<(), StackError> {
        match self {
            Arg::Bytes(b) => s.push_bytes(b),
            Arg::Strings(items) => {
                s.push_table(items.len(), 0)?;
                for (i, item) in items.iter().enumerate() {
                    s.push_bytes(item)?;
                    s.set_index(-2, i + 1)?;
                }
                Ok(())
            }
        }
    }
}

/// The stack of a state, with checked operations. Indexes are Lua's: 1 is
/// the bottom, -1 the top. A stack may show only the values above a floor
/// (see [`Stack::pairs`]): those below cannot be reached through it.
pub struct Stack<'a> {
    l: *mut lua_State,
    /// How many values at the bottom this view does not show.
    floor: c_int,
    _state: PhantomData<&'a mut ()>,
}

impl Stack<'_> {
    fn new(l: *mut lua_State) -> Self {
        Stack {
            l,
            floor: 0,
            _state: PhantomData,
        }
    }

    /// The state's own top, counting the values under the floor.
    fn abs_top(&self) -> c_int {
        // SAFETY: the state is live.
        unsafe { lua_gettop(self.l) }
    }

    /// How many values are on the stack (above the floor).
    pub fn top(&self) -> i32 {
        self.abs_top() - self.floor
    }

    /// `idx` as an absolute index, if it names a value above the floor.
    fn slot(&self, idx: i32) -> Result<c_int, StackError> {
        let top = self.top();
        if (1..=top).contains(&idx) {
            Ok(self.floor + idx)
        } else if (-top..=-1).contains(&idx) {
            Ok(self.abs_top() + 1 + idx)
        } else {
            Err(StackError::BadIndex)
        }
    }

    /// Calls `visit` with each key and value of the table at `idx` (raw,
    /// in Lua's order), pushed for it on a view of the stack that shows
    /// only them and what it pushes; it returns whether to go on. The
    /// traversal's own key is out of its reach, so the next step is always
    /// valid.
    pub fn pairs(
        &mut self,
        idx: i32,
        mut visit: impl FnMut(&mut Stack<'_>) -> bool,
    ) -> Result<(), StackError> {
        let t = self.slot(idx)?;
        if self.kind(idx) != Kind::Table {
            return Err(StackError::BadIndex);
        }
        self.room(4)?;
        // SAFETY: there is room; nil starts a traversal.
        unsafe { lua_pushnil(self.l) };
        let key = self.abs_top();
        // SAFETY: the key lua_next last gave (or nil) is on top, at `key`;
        // t is a table; lua_next pushes two values where it popped one, and
        // room for them and the copies was checked.
        while unsafe { lua_next(self.l, t) } != 0 {
            if self.room(2).is_err() {
                // SAFETY: key - 1 was the top before the traversal.
                unsafe { lua_settop(self.l, key - 1) };
                return Err(StackError::Full);
            }
            // SAFETY: key and key + 1 hold the key and value; room checked.
            unsafe {
                lua_pushvalue(self.l, key);
                lua_pushvalue(self.l, key + 1);
            }
            let mut view = Stack {
                l: self.l,
                floor: key + 1,
                _state: PhantomData,
            };
            let go = visit(&mut view);
            // SAFETY: the view cannot go below its floor, so the key is
            // still at `key`; this drops the value and what visit left.
            unsafe { lua_settop(self.l, key) };
            if !go {
                // SAFETY: as above; the key goes too.
                unsafe { lua_settop(self.l, key - 1) };
                return Ok(());
            }
        }
        Ok(())
    }

    fn room(&mut self, n: c_int) -> Result<(), StackError> {
        // SAFETY: the state is live; lua_checkstack raises no error (the
        // limit is not enforced while Rust drives the state).
        if unsafe { lua_checkstack(self.l, n) } != 0 {
            Ok(())
        } else {
            Err(StackError::Full)
        }
    }

    /// The type of the value at `idx`.
    pub fn kind(&self, idx: i32) -> Kind {
        let Ok(i) = self.slot(idx) else {
            return Kind::None;
        };
        // SAFETY: i names a value.
        match unsafe { lua_type(self.l, i) } {
            LUA_TNIL => Kind::Nil,
            LUA_TBOOLEAN => Kind::Boolean,
            LUA_TNUMBER => Kind::Number,
            LUA_TSTRING => Kind::String,
            LUA_TTABLE => Kind::Table,
            LUA_TFUNCTION => Kind::Function,
            LUA_TNONE => Kind::None,
            _ => Kind::Other,
        }
    }

    /// The string at `idx`, or the number there as Lua writes it (`%.14g`).
    pub fn bytes(&mut self, idx: i32) -> Option<Vec<u8>> {
        match self.kind(idx) {
            // Read in place: a full stack (a C function called with
            // LUAI_MAXCSTACK arguments) has no room for a copy.
            Kind::String => {
                let i = self.slot(idx).ok()?;
                self.string_at(i)
            }
            // A copy is converted, so a number stays a number (and a key in
            // a traversal stays valid).
            Kind::Number => {
                self.push_value(idx).ok()?;
                let out = self.string_at(-1);
                self.pop(1);
                out
            }
            _ => None,
        }
    }

    /// Replaces `out`'s bytes with the string at `idx` (a string only, no
    /// conversion), keeping its buffer: what reads many strings one after
    /// another without allocating for each. Whether there was a string.
    pub fn string_into(&self, idx: i32, out: &mut Vec<u8>) -> bool {
        out.clear();
        let Some(i) = self
            .slot(idx)
            .ok()
            .filter(|_| self.kind(idx) == Kind::String)
        else {
            return false;
        };
        let mut len = 0;
        // SAFETY: i names a string; the pointer is valid for len bytes
        // while it is on the stack, and they are copied at once.
        unsafe {
            let p = lua_tolstring(self.l, i, &mut len);
            if p.is_null() {
                return false;
            }
            out.extend_from_slice(core::slice::from_raw_parts(p.cast::<u8>(), len));
        }
        true
    }

    /// The bytes of the string at stack index `i` (a string or a number,
    /// which Lua converts there).
    fn string_at(&mut self, i: c_int) -> Option<Vec<u8>> {
        let mut len = 0;
        // SAFETY: i names a string or number; the pointer is valid for len
        // bytes while that value is on the stack, and it is copied at once.
        unsafe {
            let p = lua_tolstring(self.l, i, &mut len);
            (!p.is_null()).then(|| core::slice::from_raw_parts(p.cast::<u8>(), len).to_vec())
        }
    }

    /// The number at `idx` (only a number: no conversion from strings).
    pub fn number(&self, idx: i32) -> Option<f64> {
        // SAFETY: the slot holds a number.
        (self.kind(idx) == Kind::Number)
            .then(|| unsafe { lua_tonumber(self.l, self.slot(idx).unwrap_or(1)) })
    }

    /// The number at `idx`, or the string there read as one (as Lua's
    /// arithmetic and `tonumber` read it); `None` for anything else.
    pub fn to_number(&self, idx: i32) -> Option<f64> {
        let i = self.slot(idx).ok()?;
        // SAFETY: i names a value; neither call changes the stack.
        unsafe { (lua_isnumber(self.l, i) != 0).then(|| lua_tonumber(self.l, i)) }
    }

    /// Where the Lua code that called the running function is, as Lua's
    /// own library functions start their error messages (`chunk:line: `;
    /// empty when a C function called it).
    pub fn caller_position(&mut self) -> Vec<u8> {
        if self.room(1).is_err() {
            return Vec::new();
        }
        // SAFETY: there is room for the string luaL_where pushes.
        unsafe { luaL_where(self.l, 1) };
        let at = self.bytes(-1).unwrap_or_default();
        self.pop(1);
        at
    }

    /// The name Lua's messages give the type at `idx` (`no value` when
    /// there is none).
    pub fn type_name(&self, idx: i32) -> &'static str {
        match self.kind(idx) {
            Kind::None => "no value",
            Kind::Nil => "nil",
            Kind::Boolean => "boolean",
            Kind::Number => "number",
            Kind::String => "string",
            Kind::Table => "table",
            Kind::Function => "function",
            Kind::Other => "userdata",
        }
    }

    /// Whether the value at `idx` is true to Lua (neither `nil` nor `false`).
    pub fn truthy(&self, idx: i32) -> bool {
        // SAFETY: the slot names a value.
        self.slot(idx)
            .is_ok_and(|i| unsafe { lua_toboolean(self.l, i) } != 0)
    }

    /// Removes the top `n` values (all if there are fewer).
    pub fn pop(&mut self, n: i32) {
        let n = n.clamp(0, self.top());
        // SAFETY: at least n values are on the stack.
        unsafe { lua_settop(self.l, -n - 1) };
    }

    /// Empties the stack (down to its floor).
    pub fn clear(&mut self) {
        // SAFETY: the floor is at most the top.
        unsafe { lua_settop(self.l, self.floor) };
    }

    /// Removes the value at `idx`, moving those above it down.
    pub fn remove(&mut self, idx: i32) {
        if let Ok(i) = self.slot(idx) {
            // SAFETY: i names a value.
            unsafe { lua_remove(self.l, i) };
        }
    }

    /// Pushes `nil`.
    pub fn push_nil(&mut self) -> Result<(), StackError> {
        self.room(1)?;
        // SAFETY: there is room.
        unsafe { lua_pushnil(self.l) };
        Ok(())
    }

    /// Pushes a boolean.
    pub fn push_bool(&mut self, b: bool) -> Result<(), StackError> {
        self.room(1)?;
        // SAFETY: there is room.
        unsafe { lua_pushboolean(self.l, c_int::from(b)) };
        Ok(())
    }

    /// Pushes a number.
    pub fn push_number(&mut self, n: f64) -> Result<(), StackError> {
        self.room(1)?;
        // SAFETY: there is room.
        unsafe { lua_pushnumber(self.l, n) };
        Ok(())
    }

    /// Pushes a string.
    pub fn push_bytes(&mut self, b: &[u8]) -> Result<(), StackError> {
        self.room(1)?;
        // SAFETY: there is room; b is valid for its length (Lua copies it).
        unsafe { lua_pushlstring(self.l, b.as_ptr().cast::<c_char>(), b.len()) };
        Ok(())
    }

    /// Pushes the light userdata holding a null pointer (see
    /// [`State::set_null_pointer`]).
    pub fn push_null_pointer(&mut self) -> Result<(), StackError> {
        self.room(1)?;
        // SAFETY: there is room; Lua never dereferences a light userdata.
        unsafe { lua_pushlightuserdata(self.l, core::ptr::null_mut()) };
        Ok(())
    }

    /// Whether the value at `idx` is the light userdata holding a null
    /// pointer.
    pub fn is_null_pointer(&self, idx: i32) -> bool {
        // SAFETY: i names a value; reading its type and pointer changes
        // nothing.
        self.slot(idx).is_ok_and(|i| unsafe {
            lua_type(self.l, i) == LUA_TLIGHTUSERDATA && lua_touserdata(self.l, i).is_null()
        })
    }

    /// Whether the value at `idx` is a coroutine (of [`Kind::Other`]).
    pub fn is_thread(&self, idx: i32) -> bool {
        // SAFETY: i names a value.
        self.slot(idx)
            .is_ok_and(|i| unsafe { lua_type(self.l, i) } == LUA_TTHREAD)
    }

    /// Pushes a new table with room for `narr` array and `nrec` other items.
    pub fn push_table(&mut self, narr: usize, nrec: usize) -> Result<(), StackError> {
        self.room(1)?;
        let clamp = |n: usize| n.min(1 << 24) as c_int;
        // SAFETY: there is room.
        unsafe { lua_createtable(self.l, clamp(narr), clamp(nrec)) };
        Ok(())
    }

    /// Pushes a copy of the value at `idx`.
    pub fn push_value(&mut self, idx: i32) -> Result<(), StackError> {
        let i = self.slot(idx)?;
        self.room(1)?;
        // SAFETY: i names a value; there is room.
        unsafe { lua_pushvalue(self.l, i) };
        Ok(())
    }

    fn push_globals(&mut self) -> Result<(), StackError> {
        self.room(1)?;
        // SAFETY: a pseudo-index; there is room.
        unsafe { lua_pushvalue(self.l, LUA_GLOBALSINDEX) };
        Ok(())
    }

    fn push_registry(&mut self) -> Result<(), StackError> {
        self.room(1)?;
        // SAFETY: a pseudo-index; there is room.
        unsafe { lua_pushvalue(self.l, LUA_REGISTRYINDEX) };
        Ok(())
    }

    /// Pushes the registry's value under `callee`; returns its type.
    fn push_registered(&mut self, callee: Callee<'_>) -> Result<Kind, StackError> {
        match callee {
            Callee::Named(key) => {
                self.push_registry()?;
                let kind = self.get_field(-1, key)?;
                self.remove(-2);
                Ok(kind)
            }
            Callee::Numbered(Slot(n)) => {
                self.room(1)?;
                // SAFETY: a pseudo-index; there is room.
                unsafe { lua_rawgeti(self.l, LUA_REGISTRYINDEX, n) };
                Ok(self.kind(-1))
            }
        }
    }

    /// The absolute index of the table at `idx`.
    fn table(&self, idx: i32) -> Result<c_int, StackError> {
        match self.kind(idx) {
            Kind::Table => self.slot(idx),
            _ => Err(StackError::BadIndex),
        }
    }

    /// Pushes `t[n]` of the table at `idx`, without metamethods; returns its
    /// type.
    pub fn get_index(&mut self, idx: i32, n: usize) -> Result<Kind, StackError> {
        let t = self.table(idx)?;
        let n = c_int::try_from(n).map_err(|_| StackError::BadIndex)?;
        self.room(1)?;
        // SAFETY: t is a table; there is room.
        unsafe { lua_rawgeti(self.l, t, n) };
        Ok(self.kind(-1))
    }

    /// Pushes `t[name]` of the table at `idx`, without metamethods; returns
    /// its type.
    pub fn get_field(&mut self, idx: i32, name: &[u8]) -> Result<Kind, StackError> {
        let t = self.table(idx)?;
        self.push_bytes(name)?;
        // SAFETY: t is a table; the key is on top.
        unsafe { lua_rawget(self.l, t) };
        Ok(self.kind(-1))
    }

    /// Pops the top value into `t[n]` of the table at `idx`.
    pub fn set_index(&mut self, idx: i32, n: usize) -> Result<(), StackError> {
        let t = self.table(idx)?;
        let n = c_int::try_from(n).map_err(|_| StackError::BadIndex)?;
        if self.abs_top() <= t {
            return Err(StackError::BadIndex);
        }
        // SAFETY: t is a table below the value on top.
        unsafe { lua_rawseti(self.l, t, n) };
        Ok(())
    }

    /// Pops the top value into `t[name]` of the table at `idx`.
    pub fn set_field(&mut self, idx: i32, name: &[u8]) -> Result<(), StackError> {
        let t = self.table(idx)?;
        if self.abs_top() <= t {
            return Err(StackError::BadIndex);
        }
        self.push_bytes(name)?;
        // SAFETY: the key is on top, the value below it, the table below
        // both; a string key is never nil or NaN.
        unsafe {
            lua_insert(self.l, -2);
            lua_rawset(self.l, t);
        }
        Ok(())
    }

    /// Pops a key (below) and a value (on top) into the table at `idx`,
    /// without metamethods. A `nil` or NaN key (which Lua refuses with an
    /// error) is refused here, and both are popped.
    pub fn set_pair(&mut self, idx: i32) -> Result<(), StackError> {
        let t = self.table(idx)?;
        if self.abs_top() < t + 2 {
            return Err(StackError::BadIndex);
        }
        let bad_key = match self.kind(-2) {
            Kind::Nil => true,
            Kind::Number => self.number(-2).is_some_and(f64::is_nan),
            _ => false,
        };
        if bad_key {
            self.pop(2);
            return Err(StackError::BadIndex);
        }
        // SAFETY: t is a table below the key and value, and the key is
        // neither nil nor NaN.
        unsafe { lua_rawset(self.l, t) };
        Ok(())
    }

    /// Raises the value on top of the stack (for a [`Callback`] to return).
    pub fn raise(&mut self) -> Raise {
        Raise(())
    }

    /// Pushes `msg` and raises it (for a [`Callback`] to return).
    pub fn raise_message(&mut self, msg: &[u8]) -> Raise {
        if self.push_bytes(msg).is_err() {
            // No room: the value on top is raised instead.
            self.pop(1);
            let _ = self.push_bytes(msg);
        }
        Raise(())
    }
}

#[cfg(test)]
mod tests;
