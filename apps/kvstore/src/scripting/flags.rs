//! Script flags (`#!lua flags=no-writes,...` on an `EVAL` script, `flags`
//! of `redis.register_function`) and what they allow, as Redis 7.0 reads
//! them.

use alloc::string::String;
use alloc::vec::Vec;

/// A script's flags. A script without a shebang line runs as scripts did
/// before flags ([`Flags::COMPAT`]): none of the checks below apply.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flags(u8);

impl Flags {
    /// `no-writes`: the script may not run write commands.
    pub const NO_WRITES: Flags = Flags(1);
    /// `allow-oom`: the script runs (and writes) past `maxmemory`.
    pub const ALLOW_OOM: Flags = Flags(2);
    /// `allow-stale`: accepted (kvstore has no replicas to be stale).
    pub const ALLOW_STALE: Flags = Flags(4);
    /// `no-cluster`: accepted (kvstore is never a cluster).
    pub const NO_CLUSTER: Flags = Flags(8);
    /// `allow-cross-slot-keys`: accepted (no cluster, no slots).
    pub const ALLOW_CROSS_SLOT: Flags = Flags(16);
    /// An `EVAL` script without a shebang: no flags declared.
    pub const COMPAT: Flags = Flags(128);

    /// Each flag's name, in the order Redis lists them.
    pub const NAMES: [(Flags, &'static str); 5] = [
        (Flags::NO_WRITES, "no-writes"),
        (Flags::ALLOW_OOM, "allow-oom"),
        (Flags::ALLOW_STALE, "allow-stale"),
        (Flags::NO_CLUSTER, "no-cluster"),
        (Flags::ALLOW_CROSS_SLOT, "allow-cross-slot-keys"),
    ];

    /// Whether every flag of `other` is set.
    pub fn has(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }

    /// The flag named `name` (case matters, as in Redis).
    pub fn named(name: &[u8]) -> Option<Flags> {
        Flags::NAMES
            .iter()
            .find(|(_, n)| n.as_bytes() == name)
            .map(|(f, _)| *f)
    }

    /// The names of the flags set, in Redis's order.
    pub fn names(self) -> Vec<&'static str> {
        Flags::NAMES
            .iter()
            .filter(|(f, _)| self.has(*f))
            .map(|(_, n)| *n)
            .collect()
    }

    /// Whether the script may run write commands: not `no-writes`.
    pub fn writes(self) -> bool {
        self.has(Flags::COMPAT) || !self.has(Flags::NO_WRITES)
    }
}

impl core::ops::BitOr for Flags {
    type Output = Flags;
    fn bitor(self, other: Flags) -> Flags {
        Flags(self.0 | other.0)
    }
}

/// An `EVAL` script's shebang (`#!lua flags=a,b` up to the first line
/// feed): its flags and the length of the line (0 without one; the script
/// compiles from there, so its line numbers stay). The error is Redis's
/// message, without the `ERR`.
pub fn eval_shebang(body: &[u8]) -> Result<(Flags, usize), String> {
    if !body.starts_with(b"#!") {
        return Ok((Flags::COMPAT, 0));
    }
    let Some(len) = body.iter().position(|&b| b == b'\n') else {
        return Err("Invalid script shebang".into());
    };
    let parts = words(&body[..len]);
    let Some(engine) = parts.first() else {
        return Err("Invalid engine in script shebang".into());
    };
    if engine != b"#!lua" {
        return Err(alloc::format!(
            "Unexpected engine in script shebang: {}",
            String::from_utf8_lossy(engine)
        ));
    }
    let mut flags = Flags::default();
    for part in &parts[1..] {
        let Some(list) = part.strip_prefix(b"flags=") else {
            return Err(alloc::format!(
                "Unknown lua shebang option: {}",
                String::from_utf8_lossy(part)
            ));
        };
        if list.is_empty() {
            continue;
        }
        for name in list.split(|&b| b == b',') {
            match Flags::named(name) {
                Some(flag) => flags = flags | flag,
                None => {
                    return Err(alloc::format!(
                        "Unexpected flag in script shebang: {}",
                        String::from_utf8_lossy(name)
                    ))
                }
            }
        }
    }
    Ok((flags, len))
}

/// A library's shebang (`#!lua name=lib`): its engine, its name and the
/// length of the line. The error is Redis's message, without the `ERR`.
pub fn library_shebang(code: &[u8]) -> Result<(Vec<u8>, Vec<u8>, usize), String> {
    if !code.starts_with(b"#!") {
        return Err("Missing library metadata".into());
    }
    let Some(len) = code.iter().position(|&b| b == b'\n') else {
        return Err("Invalid library metadata".into());
    };
    let parts = words(&code[..len]);
    let Some(engine) = parts.first() else {
        return Err("Invalid library metadata".into());
    };
    let engine = engine[2..].to_vec();
    let mut name = None;
    for part in &parts[1..] {
        if part.len() >= 5 && part[..5].eq_ignore_ascii_case(b"name=") {
            if name.is_some() {
                return Err(
                    "Invalid metadata value, name argument was given multiple times".into(),
                );
            }
            name = Some(part[5..].to_vec());
            continue;
        }
        return Err(alloc::format!(
            "Invalid metadata value given: {}",
            String::from_utf8_lossy(part)
        ));
    }
    match name {
        Some(name) => Ok((engine, name, len)),
        None => Err("Library name was not given".into()),
    }
}

/// The line split at spaces and tabs into the shebang's words, double
/// quotes taken away (Redis splits it as a configuration line, so
/// `name="foo"` names `foo`; a name or flag can hold no quote anyway).
fn words(line: &[u8]) -> Vec<Vec<u8>> {
    line.split(|b| b.is_ascii_whitespace())
        .filter(|w| !w.is_empty())
        .map(|w| w.iter().copied().filter(|&b| b != b'"').collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_without_shebang_declares_nothing() {
        assert_eq!(eval_shebang(b"return 1"), Ok((Flags::COMPAT, 0)));
        assert!(Flags::COMPAT.writes());
    }

    #[test]
    fn shebang_flags_are_read() {
        let (flags, len) = eval_shebang(b"#!lua flags=no-writes,allow-oom\nreturn 1").unwrap();
        assert_eq!(len, 31);
        assert!(flags.has(Flags::NO_WRITES) && flags.has(Flags::ALLOW_OOM));
        assert!(!flags.writes());
        assert_eq!(flags.names(), ["no-writes", "allow-oom"]);
        let (flags, _) = eval_shebang(b"#!lua\nreturn 1").unwrap();
        assert_eq!(flags, Flags::default());
        assert!(flags.writes());
    }

    #[test]
    fn bad_shebangs_are_refused_as_redis_words_it() {
        let err = |s: &[u8]| eval_shebang(s).unwrap_err();
        assert_eq!(err(b"#!lua"), "Invalid script shebang");
        assert_eq!(err(b"#!js\n"), "Unexpected engine in script shebang: #!js");
        assert_eq!(err(b"#!lua x=1\n"), "Unknown lua shebang option: x=1");
        assert_eq!(
            err(b"#!lua flags=no-writes,bad\n"),
            "Unexpected flag in script shebang: bad"
        );
    }

    #[test]
    fn library_shebang_names_engine_and_library() {
        let (engine, name, len) = library_shebang(b"#!lua name=mylib\ncode").unwrap();
        assert_eq!(
            (engine.as_slice(), name.as_slice(), len),
            (&b"lua"[..], &b"mylib"[..], 16)
        );
        let err = |s: &[u8]| library_shebang(s).unwrap_err();
        assert_eq!(err(b"return 1"), "Missing library metadata");
        assert_eq!(err(b"#!lua name=x"), "Invalid library metadata");
        assert_eq!(err(b"#!lua\n"), "Library name was not given");
        assert_eq!(
            err(b"#!lua name=a name=b\n"),
            "Invalid metadata value, name argument was given multiple times"
        );
        assert_eq!(err(b"#!lua foo=b\n"), "Invalid metadata value given: foo=b");
        assert_eq!(library_shebang(b"#!lua name=\"q\"\n").unwrap().1, b"q");
    }
}
