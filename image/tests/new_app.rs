//! Writing an app works as README says: the `Cargo.toml` and `main.rs` of
//! README's "Writing an app", put in `apps/myapp/` of a copy of the
//! workspace with no other edit, build and boot with `faultline-image run`.
//!
//! A copy, not the workspace itself: a new member there would change the
//! workspace under the tests running beside this one. The copy's `target/`
//! is kept in the system's temporary directory, so later runs build less.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use faultline_image::workspace_root;

const BIN: &str = env!("CARGO_BIN_EXE_faultline-image");

/// README's example app.
const APP: &str = "myapp";

/// The body of the first fenced block of language `lang` in `text`.
fn fenced<'a>(text: &'a str, lang: &str) -> &'a str {
    let open = format!("```{lang}\n");
    let start = text
        .find(&open)
        .unwrap_or_else(|| panic!("no ```{lang} block in:\n{text}"))
        + open.len();
    let len = text[start..].find("```").expect("the block ends");
    &text[start..start + len]
}

/// README's "Writing an app" section.
fn writing_an_app(readme: &str) -> &str {
    let start = readme
        .find("\n## Writing an app\n")
        .expect("README has a \"Writing an app\" section");
    let rest = &readme[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |e| e + 3);
    &rest[..end]
}

/// Copies the workspace's sources (not `target/`, not `.git`) from `from`
/// to `to`.
fn copy_sources(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name == "target" || name == ".git" {
            continue;
        }
        let (src, dst) = (entry.path(), to.join(&name));
        if entry.file_type().unwrap().is_dir() {
            copy_sources(&src, &dst);
        } else if entry.file_type().unwrap().is_file() {
            fs::copy(&src, &dst).unwrap();
        }
    }
}

/// A copy of the workspace's sources, removed when dropped (also when the
/// test panics). Its `target/` stays, so the next run builds less.
struct Copy {
    root: PathBuf,
}

impl Copy {
    fn new(into: PathBuf) -> Copy {
        let copy = Copy { root: into };
        copy.remove_sources();
        copy_sources(&workspace_root(), &copy.root);
        copy
    }

    fn remove_sources(&self) {
        let Ok(entries) = fs::read_dir(&self.root) else {
            return;
        };
        for entry in entries.flatten() {
            if entry.file_name() == "target" {
                continue;
            }
            let path = entry.path();
            let _ = match entry.file_type().map(|t| t.is_dir()) {
                Ok(true) => fs::remove_dir_all(&path),
                _ => fs::remove_file(&path),
            };
        }
    }
}

impl Drop for Copy {
    fn drop(&mut self) {
        self.remove_sources();
    }
}

#[test]
fn readmes_app_builds_and_boots_with_no_other_edit() {
    common::require_qemu();
    let real = workspace_root();
    assert!(
        !real.join("apps").join(APP).exists(),
        "the workspace has an apps/{APP} already; this test writes its own"
    );
    let readme = fs::read_to_string(real.join("README.md")).unwrap();
    let section = writing_an_app(&readme);
    let manifest = fenced(section, "toml");
    let main = fenced(section, "rust");
    assert!(
        manifest.contains(&format!("name = \"{APP}\"")),
        "README's Cargo.toml is not {APP}'s:\n{manifest}"
    );

    // Outside the workspace, whose .cargo/config.toml cargo would read too;
    // one per workspace, so that clones do not share it.
    let name: String = real
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let copy = Copy::new(std::env::temp_dir().join(format!("faultline-new-app{name}")));
    let app_dir = copy.root.join("apps").join(APP);
    fs::create_dir_all(app_dir.join("src")).unwrap();
    fs::write(app_dir.join("Cargo.toml"), manifest).unwrap();
    fs::write(app_dir.join("src/main.rs"), main).unwrap();

    let out = Command::new(BIN)
        .args(["run", APP, "--timeout", "240", "--", "hello"])
        .env("FAULTLINE_ROOT", &copy.root)
        .stdin(Stdio::null())
        .output()
        .expect("faultline-image starts");
    let stdout = String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let log = format!("stdout:\n{stdout}\nstderr:\n{stderr}");
    assert_eq!(out.status.code(), Some(0), "{log}");
    for line in ["core 0 says hi", "core 3 says hi"] {
        assert!(stdout.lines().any(|l| l == line), "no line {line:?}; {log}");
    }
    assert!(
        stdout.lines().any(|l| l.starts_with("args: ")
            && l.contains("hello")
            && l.ends_with("resident pages: 1")),
        "no args line with one resident page; {log}"
    );
}
