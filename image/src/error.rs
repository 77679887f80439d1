//! The one error type of the image tool.
//!
//! Every failure the tool can report is a variant here, so that callers (the CLI and
//! QEMU boot tests) can match on what went wrong and every message reads the same way.

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::process::ExitStatus;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while building or booting an image.
#[derive(Debug)]
pub enum Error {
    /// A board name that is not one of [`crate::Board::ALL`].
    UnknownBoard {
        /// The name that was asked for.
        name: String,
        /// The names that would have been accepted.
        valid: Vec<&'static str>,
    },
    /// An app name that is not a directory under `<root>/apps/`.
    UnknownApp {
        /// The name that was asked for.
        name: String,
        /// The apps found in the workspace.
        valid: Vec<String>,
    },
    /// A file system or process operation failed.
    Io {
        /// What the tool was doing, e.g. "reading target/x.elf".
        context: String,
        /// The underlying error.
        source: io::Error,
    },
    /// The guest build (`cargo build`) failed.
    Cargo {
        /// The command line that was run, for copy-paste.
        command: String,
        /// How cargo exited.
        status: ExitStatus,
    },
    /// The ELF is malformed or not something the tool can turn into an image.
    Elf {
        /// The file being read (empty when working on bytes in memory).
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The boot arguments cannot be embedded or passed to the guest.
    BootArgs(String),
    /// The image cannot be described by a U-Boot legacy header.
    UImage(String),
    /// The run options do not fit the board (e.g. `--smp` on zcu102).
    Options(String),
    /// The Rust toolchain cannot build guests and could not be installed.
    Toolchain(String),
}

impl Error {
    /// Wraps an I/O error with a description of what was being attempted.
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// Builds an [`Error::Elf`] for a file (or in-memory bytes, with an empty path).
    pub fn elf(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        Error::Elf {
            path: path.into(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::UnknownBoard { name, valid } => write!(
                f,
                "unknown board `{name}`; valid boards: {}",
                valid.join(", ")
            ),
            Error::UnknownApp { name, valid } => {
                write!(
                    f,
                    "no app named `{name}`: expected a crate apps/{name}/ (Cargo.toml with \
                     name = \"{name}\", src/main.rs; README, \"Writing an app\"); "
                )?;
                match valid.is_empty() {
                    true => write!(f, "there are no apps under apps/"),
                    false => write!(f, "apps: {}", valid.join(", ")),
                }
            }
            Error::Io { context, source } => write!(f, "{context}: {source}"),
            Error::Cargo { command, status } => {
                write!(f, "guest build failed ({status}): {command}")
            }
            Error::Elf { path, reason } if path.as_os_str().is_empty() => {
                write!(f, "bad ELF: {reason}")
            }
            Error::Elf { path, reason } => write!(f, "bad ELF {}: {reason}", path.display()),
            Error::BootArgs(msg) => write!(f, "boot arguments: {msg}"),
            Error::UImage(msg) => write!(f, "uImage: {msg}"),
            Error::Options(msg) => f.write_str(msg),
            Error::Toolchain(msg) => write!(f, "Rust toolchain: {msg}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_problem() {
        let e = Error::UnknownBoard {
            name: "pi".into(),
            valid: vec!["qemu-virt", "zcu102"],
        };
        assert_eq!(
            e.to_string(),
            "unknown board `pi`; valid boards: qemu-virt, zcu102"
        );
        let e = Error::elf("", "not 64-bit");
        assert_eq!(e.to_string(), "bad ELF: not 64-bit");
        let e = Error::elf("a/b.elf", "not 64-bit");
        assert_eq!(e.to_string(), "bad ELF a/b.elf: not 64-bit");
        let e = Error::io("reading x", io::Error::other("boom"));
        assert_eq!(e.to_string(), "reading x: boom");
        assert!(std::error::Error::source(&e).is_some());
    }
}
