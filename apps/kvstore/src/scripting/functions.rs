//! Function libraries (`FUNCTION LOAD`, `FCALL`), as Redis 7.0 keeps them.
//!
//! A library is Lua code that starts `#!lua name=<lib>` and, when loaded,
//! registers functions with `redis.register_function`. The libraries run
//! in a Lua state of their own (not the one `EVAL` uses, so `SCRIPT
//! FLUSH` leaves them), set up by `library.lua` before the sandbox:
//! loading runs the code with only `redis.register_function` and
//! `redis.log` in reach, and its functions then run with the globals
//! scripts have, getting `KEYS` and `ARGV` as arguments. What each
//! library registered (names, descriptions, flags) and its code are kept
//! here, in Rust, for `FUNCTION LIST` and `DUMP` and for the log (see
//! `commands::scripting`); Lua keeps the functions themselves.
//!
//! Calls into Lua need the host (a library's `redis.log`, a function's
//! `redis.call`), which holds these libraries: the caller takes the state
//! out with [`Functions::take_state`], calls with it, and gives it back.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;

use faultline_lua::state::{Arg, Kind, Outcome};
use faultline_lua::State;

use super::flags::{self, Flags};
use super::{sandbox, Host, ERROR_HANDLER};
use crate::resp::Reply;

/// One registered function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Function {
    /// Its name as registered (`FCALL` finds it in any case).
    pub name: String,
    /// `description` of `redis.register_function`, if given.
    pub description: Option<Vec<u8>>,
    /// Its flags.
    pub flags: Flags,
}

/// One loaded library.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Library {
    /// Its name (from the shebang).
    pub name: Vec<u8>,
    /// Its code, shebang included, as loaded.
    pub code: Vec<u8>,
    /// Its functions, in the order it registered them.
    pub functions: Vec<Function>,
}

/// The libraries, and the Lua state that holds their functions.
pub struct Functions<H> {
    state: Option<State<H>>,
    /// By name.
    libraries: BTreeMap<Vec<u8>, Library>,
    /// Each function's library, by the function's name in lowercase.
    owners: BTreeMap<String, Vec<u8>>,
    memory_limit: usize,
}

impl<H> core::fmt::Debug for Functions<H> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Functions")
            .field("libraries", &self.libraries.len())
            .finish()
    }
}

impl<H> Default for Functions<H> {
    fn default() -> Self {
        Functions {
            state: None,
            libraries: BTreeMap::new(),
            owners: BTreeMap::new(),
            memory_limit: super::DEFAULT_MEMORY_LIMIT,
        }
    }
}

/// Redis's error for a name that is not `[A-Za-z0-9_]+`.
const BAD_NAME: &str = "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long";

impl<H> Functions<H> {
    /// Bytes the functions' Lua state holds.
    pub fn lua_memory(&self) -> usize {
        self.state.as_ref().map_or(0, State::used)
    }

    /// The libraries, by name.
    pub fn libraries(&self) -> impl Iterator<Item = &Library> {
        self.libraries.values()
    }

    /// How many functions all libraries have.
    pub fn function_count(&self) -> usize {
        self.owners.len()
    }

    /// The library `name`.
    pub fn library(&self, name: &[u8]) -> Option<&Library> {
        self.libraries.get(name)
    }

    /// The function `name` (any case) and its library.
    pub fn function(&self, name: &[u8]) -> Option<(&Library, &Function)> {
        let key = String::from_utf8_lossy(name).to_ascii_lowercase();
        let library = self.libraries.get(self.owners.get(&key)?)?;
        let function = library
            .functions
            .iter()
            .find(|f| f.name.eq_ignore_ascii_case(&key))?;
        Some((library, function))
    }

    /// Forgets every library (`FUNCTION FLUSH`), and their Lua state.
    pub fn flush(&mut self) {
        self.libraries.clear();
        self.owners.clear();
        self.state = None;
    }

    /// Gives back the state [`Functions::take_state`] took.
    pub fn put_state(&mut self, state: State<H>) {
        if self.state.is_none() {
            self.state = Some(state);
        }
    }
}

impl<H: Host> Functions<H> {
    /// Sets the bytes Lua may hold while a function or a library's code runs.
    pub fn set_memory_limit(&mut self, limit: usize) {
        self.memory_limit = limit;
        if let Some(state) = &mut self.state {
            state.set_limit(limit);
        }
    }

    /// Takes the state out (made on first use) for a call into Lua.
    pub fn take_state(&mut self) -> Option<State<H>> {
        match self.state.take() {
            Some(state) => Some(state),
            None => sandbox::new_state(self.memory_limit, true),
        }
    }

    /// `FUNCTION LOAD [REPLACE] code`, in `state` with `host`: the
    /// library's name, or the error reply. On an error nothing changed.
    pub fn load(
        &mut self,
        state: &mut State<H>,
        host: &mut H,
        code: &[u8],
        replace: bool,
    ) -> Result<Vec<u8>, Reply> {
        let (engine, name, _) = flags::library_shebang(code).map_err(err)?;
        if !valid_name(&name) {
            return Err(Reply::error(BAD_NAME));
        }
        if !engine.eq_ignore_ascii_case(b"lua") {
            return Err(err(alloc::format!(
                "Engine '{}' not found",
                String::from_utf8_lossy(&engine)
            )));
        }
        if self.libraries.contains_key(&name) && !replace {
            return Err(err(alloc::format!(
                "Library '{}' already exists",
                String::from_utf8_lossy(&name)
            )));
        }
        let functions = compile(state, host, code)?;
        if functions.is_empty() {
            return Err(Reply::error("ERR No functions registered"));
        }
        for f in &functions {
            let owner = self.owners.get(&f.name.to_ascii_lowercase());
            if owner.is_some_and(|owner| *owner != name) {
                return Err(err(alloc::format!("Function {} already exists", f.name)));
            }
        }
        call(state, host, b"__redis__commit", &[Arg::Bytes(&name)]);
        self.remove(&name);
        for f in &functions {
            self.owners
                .insert(f.name.to_ascii_lowercase(), name.clone());
        }
        self.libraries.insert(
            name.clone(),
            Library {
                name: name.clone(),
                code: code.to_vec(),
                functions,
            },
        );
        Ok(name)
    }

    /// `FUNCTION DELETE name`, in `state`: whether the library was there.
    pub fn delete(&mut self, state: &mut State<H>, host: &mut H, name: &[u8]) -> bool {
        if !self.libraries.contains_key(name) {
            return false;
        }
        call(state, host, b"__redis__drop", &[Arg::Bytes(name)]);
        self.remove(name);
        true
    }

    fn remove(&mut self, name: &[u8]) {
        if let Some(old) = self.libraries.remove(name) {
            for f in old.functions {
                self.owners.remove(&f.name.to_ascii_lowercase());
            }
        }
    }

    /// Runs the function `name` of library `library` with `keys` and
    /// `args`, in `state` with `host`; the reply Redis gives.
    pub fn call(
        state: &mut State<H>,
        host: &mut H,
        library: &[u8],
        name: &str,
        keys: &[Vec<u8>],
        args: &[Vec<u8>],
    ) -> Reply {
        let call_args = [
            Arg::Bytes(library),
            Arg::Bytes(name.as_bytes()),
            Arg::Strings(keys),
            Arg::Strings(args),
        ];
        let (reply, outcome) = state.call_with(
            b"__redis__fcall",
            Some(ERROR_HANDLER),
            &call_args,
            host,
            |s, outcome, host| (super::finished_reply(s, outcome, host, name), outcome),
        );
        if outcome == Outcome::OutOfMemory {
            state.collect();
        }
        reply
    }
}

/// Runs a library's code: what it registered, or the error reply.
fn compile<H: Host>(
    state: &mut State<H>,
    host: &mut H,
    code: &[u8],
) -> Result<Vec<Function>, Reply> {
    // The shebang line is left out, its line feed kept (line numbers stay).
    let start = code.iter().position(|&b| b == b'\n').unwrap_or(code.len());
    let body = &code[start..];
    let result = state.call_with(
        b"__redis__load",
        None,
        &[Arg::Bytes(body)],
        host,
        |s, outcome, _| match outcome {
            Outcome::Returned => Ok(registered(s)),
            Outcome::Raised => Err(match s.kind(-1) {
                Kind::Table => match s.get_field(-1, b"err") {
                    Ok(Kind::String) => {
                        Reply::Error(super::convert::one_line(&s.bytes(-1).unwrap_or_default()))
                    }
                    _ => Reply::error("ERR Error registering functions"),
                },
                _ => Reply::Error(alloc::format!(
                    "ERR Error registering functions: {}",
                    super::convert::one_line(&s.bytes(-1).unwrap_or_default())
                )),
            }),
            Outcome::OutOfMemory => Err(Reply::error(
                "ERR Error registering functions: not enough memory for Lua",
            )),
        },
    );
    if result.is_err() {
        state.collect();
    }
    result
}

/// The functions `__redis__load` returned: `{name, description or false,
/// 'flag,flag', ...}` on top of the stack.
fn registered(s: &mut faultline_lua::state::Stack<'_>) -> Vec<Function> {
    let mut functions = Vec::new();
    let field = |s: &mut faultline_lua::state::Stack<'_>, i: usize| {
        let value = match s.get_index(-1, i) {
            Ok(Kind::String) => s.bytes(-1),
            _ => None,
        };
        s.pop(1);
        value
    };
    for i in (1..).step_by(3) {
        let Some(name) = field(s, i) else {
            break;
        };
        let description = field(s, i + 1);
        let flags = field(s, i + 2)
            .unwrap_or_default()
            .split(|&b| b == b',')
            .filter_map(Flags::named)
            .fold(Flags::default(), |all, f| all | f);
        functions.push(Function {
            name: String::from_utf8_lossy(&name).into_owned(),
            description,
            flags,
        });
    }
    functions
}

/// Calls one of `library.lua`'s entries that returns nothing to read.
fn call<H: Host>(state: &mut State<H>, host: &mut H, entry: &[u8], args: &[Arg<'_>]) {
    state.call_with(entry, None, args, host, |_, _, _| ());
}

fn valid_name(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_')
}

fn err(text: impl Into<String>) -> Reply {
    Reply::Error(alloc::format!("ERR {}", text.into()))
}
