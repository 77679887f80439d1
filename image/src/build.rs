//! Building an app for a board: the guest `cargo build`, then the image files.
//!
//! Each board gets its own cargo target directory (`target/guest/<board>`), so building
//! for one board never invalidates the other's artifacts, and its own image directory
//! (`target/images/<board>`).

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::board::Board;
use crate::error::{Error, Result};
use crate::workspace::{check_app, display_relative};
use crate::{bootargs, raw, uimage};

/// The Rust target every guest is built for.
pub const GUEST_TARGET: &str = "aarch64-unknown-none";

/// What [`build`] produced: the image files and the facts needed to boot them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Built {
    /// The app's name.
    pub app: String,
    /// The board it was built for.
    pub board: Board,
    /// The ELF with the boot arguments patched in; what QEMU's `-kernel` loads.
    pub elf: PathBuf,
    /// The flat binary, for loaders that do not read ELF.
    pub bin: PathBuf,
    /// The U-Boot legacy image, for boards booted by U-Boot (both boards today).
    pub uimage: Option<PathBuf>,
    /// Physical address the flat binary must be loaded at.
    pub load_addr: u64,
    /// Entry point address.
    pub entry: u64,
}

impl Built {
    /// A `hello` build under /img, loaded and entered at `addr`: what the
    /// command-line tests of every loader start from.
    #[cfg(test)]
    pub(crate) fn hello(board: Board, uimage: Option<PathBuf>, addr: u64) -> Built {
        Built {
            app: "hello".into(),
            board,
            elf: PathBuf::from("/img/hello.elf"),
            bin: PathBuf::from("/img/hello.bin"),
            uimage,
            load_addr: addr,
            entry: addr,
        }
    }

    /// The produced files, each with a short kind label ("elf", "bin", "uimg").
    pub fn files(&self) -> Vec<(&'static str, &Path)> {
        let mut files = vec![("elf", self.elf.as_path()), ("bin", self.bin.as_path())];
        if let Some(u) = &self.uimage {
            files.push(("uimg", u.as_path()));
        }
        files
    }

    /// A human-readable report: one line per file with its size (paths shown relative to
    /// `root`), then the load address and entry point.
    pub fn summary(&self, root: &Path) -> String {
        let mut out = String::new();
        for (kind, path) in self.files() {
            let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
            out += &format!("{kind:<4} {}  {size} bytes\n", display_relative(root, path));
        }
        out += &format!("load {:#x}  entry {:#x}\n", self.load_addr, self.entry);
        out
    }
}

impl fmt::Display for Built {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} for {}", self.app, self.board)
    }
}

/// The cargo target directory for a board's guest builds.
pub fn target_dir(root: &Path, board: Board) -> PathBuf {
    root.join("target").join("guest").join(board.name())
}

/// The default directory a board's images are written to.
pub fn images_dir(root: &Path, board: Board) -> PathBuf {
    root.join("target").join("images").join(board.name())
}

/// Environment variables that would replace the guest's rustflags from
/// `.cargo/config.toml` (linker script, frame pointers) instead of adding to them.
pub const OVERRIDING_RUSTFLAGS: [&str; 2] = ["RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS"];

/// The `cargo build` command for `app` on `board`, to be run in `root`.
///
/// Uses `$CARGO` when set (as it is under `cargo run` and `cargo test`), so the guest is
/// built by the same cargo as the tool; `rust-toolchain.toml` selects the toolchain.
/// [`OVERRIDING_RUSTFLAGS`] are removed from its environment: set for a host build
/// (e.g. `RUSTFLAGS=-Dwarnings` in CI), they would drop the guest's linker script.
///
/// With `--locked` when `Cargo.lock` lists the app, so that a stale lock fails the
/// build instead of rewriting itself; a new app's first build adds it to the lock
/// (commit that with the app), as [`new_to_the_lock`] explains.
pub fn cargo_command(root: &Path, app: &str, board: Board) -> Command {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    for var in OVERRIDING_RUSTFLAGS {
        cmd.env_remove(var);
    }
    cmd.current_dir(root).arg("build");
    if !new_to_the_lock(root, app) {
        cmd.arg("--locked");
    }
    cmd.args(["--release", "-p", app, "--target", GUEST_TARGET])
        .arg("--features")
        .arg(format!("libos/{}", board.name()))
        .arg("--target-dir")
        .arg(target_dir(root, board));
    cmd
}

/// Whether `root`'s `Cargo.lock` has no package named `app`: the app was just
/// written (the workspace takes every crate under `apps/`), and its first build
/// must add it to the lock, which `--locked` forbids. Under `./run-qemu.sh`,
/// `cargo run` has already added it; this is for the tool run on its own.
fn new_to_the_lock(root: &Path, app: &str) -> bool {
    let Ok(lock) = std::fs::read_to_string(root.join("Cargo.lock")) else {
        return true;
    };
    let entry = format!("name = \"{app}\"");
    !lock.lines().any(|line| line.trim() == entry)
}

/// Renders a command for error messages (program and arguments, space-separated).
pub fn describe(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for arg in cmd.get_args() {
        s.push(' ');
        s += &arg.to_string_lossy();
    }
    s
}

/// Builds `app` for `board` and writes its images to `target/images/<board>/`.
///
/// Concurrent builds of the same app and board with different `args` overwrite each
/// other's files; callers that need that (parallel boot tests) should use [`build_to`]
/// with a directory of their own.
pub fn build(root: &Path, app: &str, board: Board, args: &[String]) -> Result<Built> {
    build_to(root, app, board, args, &images_dir(root, board))
}

/// Like [`build`], but writes the images to `out_dir`.
///
/// Runs cargo (its output goes to this process's stderr), then writes `<app>.elf` with
/// the boot arguments embedded, `<app>.bin`, and for U-Boot boards `<app>.uimg`.
pub fn build_to(
    root: &Path,
    app: &str,
    board: Board,
    args: &[String],
    out_dir: &Path,
) -> Result<Built> {
    check_app(root, app)?;
    // Check the arguments before spending time on the build.
    bootargs::command_line(args)?;
    crate::toolchain::ensure_guest_target(root)?;

    let mut cmd = cargo_command(root, app, board);
    cmd.stdin(Stdio::null()).stdout(std::io::stderr());
    let status = cmd
        .status()
        .map_err(|e| Error::io(format!("running `{}`", describe(&cmd)), e))?;
    if !status.success() {
        return Err(Error::Cargo {
            command: describe(&cmd),
            status,
        });
    }

    let cargo_elf = target_dir(root, board)
        .join(GUEST_TARGET)
        .join("release")
        .join(app);
    let elf_bytes = std::fs::read(&cargo_elf)
        .map_err(|e| Error::io(format!("reading {}", cargo_elf.display()), e))?;
    package(&elf_bytes, app, board, args, out_dir)
}

/// Turns a built ELF into the image files in `out_dir` (no cargo involved).
///
/// Exposed so the image formats can be produced from an ELF built some other way.
pub fn package(
    elf_bytes: &[u8],
    app: &str,
    board: Board,
    args: &[String],
    out_dir: &Path,
) -> Result<Built> {
    let elf_path = out_dir.join(format!("{app}.elf"));
    let bin_path = out_dir.join(format!("{app}.bin"));
    let uimg_path = out_dir.join(format!("{app}.uimg"));
    let in_file = |e: Error| match e {
        Error::Elf { reason, .. } => Error::elf(elf_path.clone(), reason),
        other => other,
    };

    let mut elf = elf_bytes.to_vec();
    bootargs::patch(&mut elf, args).map_err(in_file)?;
    let flat = raw::from_elf(&elf).map_err(in_file)?;
    let uimage = if board.wants_uimage() {
        let name = format!("faultline {app}");
        Some(uimage::build(&flat, &name, uimage::timestamp())?)
    } else {
        None
    };

    std::fs::create_dir_all(out_dir)
        .map_err(|e| Error::io(format!("creating {}", out_dir.display()), e))?;
    write_file(&elf_path, &elf)?;
    write_file(&bin_path, &flat.bytes)?;
    let uimage = match uimage {
        Some(bytes) => {
            write_file(&uimg_path, &bytes)?;
            Some(uimg_path)
        }
        None => {
            // Do not leave a stale image from an older build lying next to fresh ones.
            let _ = std::fs::remove_file(&uimg_path);
            None
        }
    };
    Ok(Built {
        app: app.to_string(),
        board,
        elf: elf_path,
        bin: bin_path,
        uimage,
        load_addr: flat.load_addr,
        entry: flat.entry,
    })
}

/// Writes a file through a temporary name and a rename, so a reader (QEMU started by a
/// concurrent test) never sees a half-written image.
fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp{}-{n}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, bytes).map_err(|e| Error::io(format!("writing {}", tmp.display()), e))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io(
            format!("renaming {} to {}", tmp.display(), path.display()),
            e,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{ElfSpec, Segment, TempDir};

    fn kernel() -> Vec<u8> {
        let mut data = vec![0x1f, 0x20, 0x03, 0xd5]; // nop
        data.resize(16 + bootargs::SECTION_SIZE, 0);
        ElfSpec {
            machine: 183,
            entry: 0x0010_0000,
            segments: vec![Segment {
                addr: 0x0010_0000,
                data,
                bss: 0x1000,
            }],
            sections: vec![(
                bootargs::SECTION.into(),
                0,
                16,
                bootargs::SECTION_SIZE as u64,
            )],
        }
        .to_bytes()
    }

    #[test]
    fn cargo_command_line() {
        let dir = TempDir::new("ws-lock");
        let root = dir.path();
        std::fs::write(
            root.join("Cargo.lock"),
            "[[package]]\nname = \"hello\"\nversion = \"0.1.0\"\n",
        )
        .unwrap();
        let cmd = cargo_command(root, "hello", Board::Zcu102);
        let args: Vec<_> = cmd.get_args().map(|a| a.to_str().unwrap()).collect();
        let target_dir = root.join("target/guest/zcu102");
        assert_eq!(
            args,
            [
                "build",
                "--locked",
                "--release",
                "-p",
                "hello",
                "--target",
                "aarch64-unknown-none",
                "--features",
                "libos/zcu102",
                "--target-dir",
                target_dir.to_str().unwrap(),
            ]
        );
        assert_eq!(cmd.get_current_dir(), Some(root));
        // An app the lock does not list yet (a new one) may add itself to it.
        let cmd = cargo_command(root, "myapp", Board::Zcu102);
        assert!(!cmd.get_args().any(|a| a == "--locked"));
        let removed: Vec<_> = cmd
            .get_envs()
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| k.to_str().unwrap())
            .collect();
        assert_eq!(removed, ["CARGO_ENCODED_RUSTFLAGS", "RUSTFLAGS"]);
    }

    #[test]
    fn packages_elf_bin_and_uimage_with_args() {
        let dir = TempDir::new("pkg");
        let args = vec!["n=2".to_string(), "fast".to_string()];
        let built = package(&kernel(), "hello", Board::Zcu102, &args, dir.path()).unwrap();
        assert_eq!(built.load_addr, 0x0010_0000);
        assert_eq!(built.entry, 0x0010_0000);
        assert_eq!(built.elf, dir.path().join("hello.elf"));

        // The patched arguments are in the ELF and in the flat binary at the same place.
        let bin = std::fs::read(&built.bin).unwrap();
        assert_eq!(bin.len(), 16 + bootargs::SECTION_SIZE);
        assert_eq!(bootargs::decode(&bin[16..]), Some("n=2 fast"));
        let elf = std::fs::read(&built.elf).unwrap();
        let raw = raw::from_elf(&elf).unwrap();
        assert_eq!(raw.bytes, bin);

        let uimg = std::fs::read(built.uimage.as_ref().unwrap()).unwrap();
        assert_eq!(&uimg[uimage::HEADER_SIZE..], &bin[..]);
        assert_eq!(&uimg[32..47], b"faultline hello");

        let summary = built.summary(dir.path());
        assert!(summary.contains("elf  hello.elf  "), "{summary}");
        assert!(summary.contains("uimg hello.uimg  "), "{summary}");
        assert!(
            summary.contains("load 0x100000  entry 0x100000"),
            "{summary}"
        );
    }

    #[test]
    fn qemu_virt_gets_a_uimage_too() {
        let dir = TempDir::new("pkg-virt");
        std::fs::write(dir.path().join("hello.uimg"), b"stale").unwrap();
        let built = package(&kernel(), "hello", Board::QemuVirt, &[], dir.path()).unwrap();
        assert_eq!(built.uimage, Some(dir.path().join("hello.uimg")));
        let uimg = std::fs::read(dir.path().join("hello.uimg")).unwrap();
        assert_eq!(&uimg[..4], &uimage::MAGIC.to_be_bytes());
        assert_eq!(built.files().len(), 3);
    }

    #[test]
    fn elf_errors_name_the_file() {
        let dir = TempDir::new("pkg-bad");
        let mut bytes = kernel();
        bytes[18] = 62; // x86-64
        let msg = package(&bytes, "hello", Board::QemuVirt, &[], dir.path())
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("hello.elf") && msg.contains("AArch64"),
            "{msg}"
        );
    }

    #[test]
    fn unknown_app_fails_before_cargo() {
        let dir = TempDir::new("ws-none");
        std::fs::create_dir_all(dir.path().join("apps/hello")).unwrap();
        std::fs::write(
            dir.path().join("apps/hello/Cargo.toml"),
            "[package]\nname = \"hello\"\n",
        )
        .unwrap();
        let msg = build(dir.path(), "nope", Board::QemuVirt, &[])
            .unwrap_err()
            .to_string();
        assert!(
            msg.starts_with("no app named `nope`: expected a crate apps/nope/ ")
                && msg.ends_with("apps: hello"),
            "{msg}"
        );
        let msg = build(dir.path(), "hello", Board::QemuVirt, &["a b".into()])
            .unwrap_err()
            .to_string();
        assert!(msg.contains("whitespace"), "{msg}");
    }
}
