//! The guest's Rust target, installed before a guest build that needs it.
//!
//! rustup installs the `targets` of `rust-toolchain.toml` only when it
//! installs the toolchain itself; a machine that already had the pinned
//! toolchain (or whose `stable` was that release) has no
//! `aarch64-unknown-none` standard library, and the guest build would fail
//! with "can't find crate for `core`". [`ensure_guest_target`] looks for it in
//! the toolchain's sysroot and otherwise runs `rustup toolchain install` in
//! the repository root, which reads the file and adds what is missing.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::build::{describe, GUEST_TARGET};
use crate::error::{Error, Result};

/// Makes sure the toolchain that builds guests in `root` has [`GUEST_TARGET`]'s
/// standard library, installing it with rustup (and saying so) when it does not.
pub fn ensure_guest_target(root: &Path) -> Result<()> {
    if sysroot_has_target(root)? {
        return Ok(());
    }
    eprintln!(
        "faultline-image: the {GUEST_TARGET} standard library is missing; installing the toolchain of rust-toolchain.toml with `rustup toolchain install`"
    );
    let mut cmd = rustup_install(root);
    let status = cmd.status().map_err(|e| {
        Error::Toolchain(format!(
            "could not run `{}` ({e}); install Rust with rustup (https://rustup.rs) and run it again",
            describe(&cmd)
        ))
    })?;
    if !status.success() {
        return Err(Error::Toolchain(format!(
            "`{}` failed ({status})",
            describe(&cmd)
        )));
    }
    if sysroot_has_target(root)? {
        Ok(())
    } else {
        Err(Error::Toolchain(format!(
            "`{}` ran, but the {GUEST_TARGET} standard library is still missing: is {GUEST_TARGET} in rust-toolchain.toml's targets?",
            describe(&cmd)
        )))
    }
}

/// `rustup toolchain install` in `root`. `RUSTUP_TOOLCHAIN`, which rustup's
/// proxies set for the processes they start (this tool under `cargo run`),
/// is removed so that rustup takes the toolchain, its targets and components
/// from `rust-toolchain.toml`.
fn rustup_install(root: &Path) -> Command {
    let mut cmd = Command::new("rustup");
    cmd.current_dir(root)
        .args(["toolchain", "install"])
        .env_remove("RUSTUP_TOOLCHAIN")
        .stdin(Stdio::null())
        .stdout(std::io::stderr());
    cmd
}

/// Whether the sysroot of the `rustc` that builds in `root` holds the guest
/// target's libraries.
fn sysroot_has_target(root: &Path) -> Result<bool> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let mut cmd = Command::new(rustc);
    cmd.current_dir(root).args(["--print", "sysroot"]);
    let out = cmd.output().map_err(|e| {
        Error::Toolchain(format!(
            "could not run `{}` ({e}); install Rust with rustup (https://rustup.rs)",
            describe(&cmd)
        ))
    })?;
    if !out.status.success() {
        // A pinned toolchain that is not installed at all: rustup says so on
        // stderr, and `rustup toolchain install` is the cure for that too.
        return Ok(false);
    }
    let sysroot = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    Ok(target_libs_present(&sysroot))
}

/// Whether `sysroot` has a non-empty `lib/rustlib/<guest target>/lib`.
fn target_libs_present(sysroot: &Path) -> bool {
    let libs = sysroot
        .join("lib")
        .join("rustlib")
        .join(GUEST_TARGET)
        .join("lib");
    std::fs::read_dir(libs).is_ok_and(|mut entries| entries.next().is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sysroot_without_the_target_directory_lacks_the_target() {
        let dir = std::env::temp_dir().join(format!("faultline-sysroot-{}", std::process::id()));
        let libs = dir.join("lib/rustlib").join(GUEST_TARGET).join("lib");
        std::fs::create_dir_all(&libs).unwrap();
        assert!(!target_libs_present(&dir), "an empty lib directory");
        std::fs::write(libs.join("libcore-0.rlib"), b"").unwrap();
        assert!(target_libs_present(&dir));
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(!target_libs_present(&dir), "no directory at all");
    }

    #[test]
    fn rustup_reads_the_file_not_the_proxy_choice() {
        let cmd = rustup_install(Path::new("/repo"));
        assert_eq!(describe(&cmd), "rustup toolchain install");
        assert_eq!(cmd.get_current_dir(), Some(Path::new("/repo")));
        assert!(cmd
            .get_envs()
            .any(|(k, v)| k == "RUSTUP_TOOLCHAIN" && v.is_none()));
    }
}
