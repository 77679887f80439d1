//! Where the Faultline workspace is and which apps it holds.
//!
//! Every function takes the workspace root as a parameter, so tests can point them at a
//! temporary directory; [`workspace_root`] is only the default the CLI uses.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Environment variable that overrides the workspace root found at compile time.
pub const ROOT_ENV: &str = "FAULTLINE_ROOT";

/// The workspace root: `$FAULTLINE_ROOT` if set and non-empty, else the parent of this
/// crate's directory as it was when the tool was compiled.
pub fn workspace_root() -> PathBuf {
    match std::env::var_os(ROOT_ENV) {
        Some(root) if !root.is_empty() => PathBuf::from(root),
        _ => compiled_root(),
    }
}

/// The parent of `image/` at compile time.
fn compiled_root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.parent().unwrap_or(manifest_dir).to_path_buf()
}

/// The apps of a workspace: directories under `<root>/apps/` holding a `Cargo.toml`,
/// sorted by name. By convention each app's package name equals its directory name.
pub fn list_apps(root: &Path) -> Result<Vec<String>> {
    let apps_dir = root.join("apps");
    let entries = std::fs::read_dir(&apps_dir)
        .map_err(|e| Error::io(format!("listing {}", apps_dir.display()), e))?;
    let mut apps = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(format!("listing {}", apps_dir.display()), e))?;
        let path = entry.path();
        if !path.join("Cargo.toml").is_file() {
            continue;
        }
        // A name that is not UTF-8 cannot be passed to `cargo -p`, so it is not an app.
        if let Some(name) = entry.file_name().to_str() {
            apps.push(name.to_string());
        }
    }
    apps.sort();
    Ok(apps)
}

/// Checks that `app` is an app cargo can build: a directory `apps/<app>/`
/// whose `Cargo.toml` names its package `app` (the workspace takes every
/// crate under `apps/`). The errors say what is missing, so that writing a
/// new app (README, "Writing an app") needs no guessing.
pub fn check_app(root: &Path, app: &str) -> Result<()> {
    let apps = list_apps(root)?;
    if !apps.iter().any(|a| a == app) {
        return Err(Error::UnknownApp {
            name: app.to_string(),
            valid: apps,
        });
    }
    let manifest = root.join("apps").join(app).join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest)
        .map_err(|e| Error::io(format!("reading {}", manifest.display()), e))?;
    let fix = format!(
        "an app's Cargo.toml starts with [package] and name = \"{app}\", its directory's name \
         (README, \"Writing an app\", shows a whole one)"
    );
    match package_name(&text) {
        Some(name) if name == app => Ok(()),
        Some(name) => Err(Error::Options(format!(
            "apps/{app}/Cargo.toml names its package `{name}`: {fix}"
        ))),
        None => Err(Error::Options(format!(
            "apps/{app}/Cargo.toml has no package name: {fix}"
        ))),
    }
}

/// The `name` of a manifest's `[package]` table, read line by line (enough
/// for the plain manifests apps have).
fn package_name(manifest: &str) -> Option<&str> {
    let mut in_package = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if let Some((key, value)) = line.split_once('=') {
            if in_package && key.trim() == "name" {
                return value.trim().strip_prefix('"')?.split('"').next();
            }
        }
    }
    None
}

/// Renders `path` relative to `root` when it lies inside it, for shorter messages.
pub fn display_relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::TempDir;
    use std::fs;

    fn fake_workspace() -> TempDir {
        let dir = TempDir::new("ws");
        for app in ["kvstore", "hello", "selftest"] {
            let d = dir.path().join("apps").join(app);
            fs::create_dir_all(&d).unwrap();
            fs::write(
                d.join("Cargo.toml"),
                format!("[package]\nname = \"{app}\"\n"),
            )
            .unwrap();
        }
        // Not apps: a directory without a manifest and a stray file.
        fs::create_dir_all(dir.path().join("apps/notes")).unwrap();
        fs::write(dir.path().join("apps/README.md"), "hi").unwrap();
        dir
    }

    #[test]
    fn lists_directories_with_a_manifest_sorted() {
        let ws = fake_workspace();
        assert_eq!(
            list_apps(ws.path()).unwrap(),
            vec!["hello", "kvstore", "selftest"]
        );
    }

    #[test]
    fn unknown_app_lists_valid_apps() {
        let ws = fake_workspace();
        check_app(ws.path(), "hello").unwrap();
        let msg = check_app(ws.path(), "notes").unwrap_err().to_string();
        assert_eq!(
            msg,
            "no app named `notes`: expected a crate apps/notes/ (Cargo.toml with \
             name = \"notes\", src/main.rs; README, \"Writing an app\"); apps: hello, \
             kvstore, selftest"
        );
    }

    #[test]
    fn an_app_whose_package_is_misnamed_is_explained() {
        let ws = fake_workspace();
        let manifest = ws.path().join("apps/hello/Cargo.toml");
        fs::write(&manifest, "[package]\nname = \"hallo\"\n").unwrap();
        let msg = check_app(ws.path(), "hello").unwrap_err().to_string();
        assert!(
            msg.starts_with("apps/hello/Cargo.toml names its package `hallo`: ")
                && msg.contains("name = \"hello\""),
            "{msg}"
        );
        fs::write(&manifest, "[dependencies]\nname = \"hello\"\n").unwrap();
        let msg = check_app(ws.path(), "hello").unwrap_err().to_string();
        assert!(msg.contains("has no package name"), "{msg}");
    }

    #[test]
    fn package_names_are_read_from_the_package_table() {
        let manifest = "[workspace]\nname = \"x\"\n\n[package]\n  name= \"myapp\" # the app\n";
        assert_eq!(package_name(manifest), Some("myapp"));
        assert_eq!(package_name("[package]\nversion = \"1\"\n"), None);
    }

    #[test]
    fn missing_apps_dir_is_an_io_error() {
        let dir = TempDir::new("empty");
        let err = list_apps(dir.path()).unwrap_err();
        assert!(matches!(err, Error::Io { .. }), "{err}");
        assert!(err.to_string().contains("apps"), "{err}");
    }

    #[test]
    fn compiled_root_is_the_workspace() {
        let root = compiled_root();
        assert!(root.join("image").join("Cargo.toml").is_file());
        assert!(root.join("Cargo.toml").is_file());
    }

    #[test]
    fn relative_display() {
        let root = Path::new("/w");
        assert_eq!(
            display_relative(root, Path::new("/w/target/a.elf")),
            "target/a.elf"
        );
        assert_eq!(display_relative(root, Path::new("/x/a.elf")), "/x/a.elf");
    }
}
