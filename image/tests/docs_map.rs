//! The map (`docs/ARCHITECTURE.md`) against the code that cites it: every
//! section a comment names exists, and every file the map names exists, so
//! neither can drift from the other unnoticed.
//!
//! A citation names its section in quotes, right before or after the map:
//! `"Locks" in docs/ARCHITECTURE.md` or `docs/ARCHITECTURE.md, "Locks"`.

use std::fs;
use std::path::{Path, PathBuf};

/// The workspace root (this crate is `image/`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn map() -> String {
    fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap()
}

/// The map's section titles (`## Locks` → `Locks`).
fn sections(map: &str) -> Vec<String> {
    map.lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| l.trim_start_matches('#').trim().to_string())
        .collect()
}

/// The source files below `dir` (`.rs` and `.sh`), build output and
/// hidden folders left out.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" {
                sources(&path, out);
            }
        } else if name.ends_with(".rs") || name.ends_with(".sh") {
            out.push(path);
        }
    }
}

/// A file's text with its comment markers dropped and its lines joined,
/// so that a citation broken over two comment lines reads as one.
fn joined(text: &str) -> String {
    let words: Vec<&str> = text
        .lines()
        .map(|l| l.trim_start().trim_start_matches(['/', '!', '#']))
        .flat_map(str::split_whitespace)
        .collect();
    words.join(" ")
}

/// The sections `text` cites: each quoted title just before
/// "in docs/ARCHITECTURE.md" or just after "docs/ARCHITECTURE.md,"; and
/// how many mentions of the map name none.
fn citations(text: &str) -> (Vec<String>, usize) {
    let mut cited = Vec::new();
    let mut unnamed = 0;
    for (at, _) in text.match_indices("ARCHITECTURE.md") {
        let before = text[..at].trim_end_matches("docs/").trim_end_matches('`');
        let after = text[at + "ARCHITECTURE.md".len()..].trim_start_matches('`');
        let mut found = false;
        if let Some(rest) = before.strip_suffix(" in ") {
            if let Some(title) = rest.strip_suffix('"').and_then(|r| r.rsplit_once('"')) {
                cited.push(title.1.to_string());
                found = true;
            }
        }
        if let Some(rest) = after.strip_prefix(", \"") {
            if let Some((title, _)) = rest.split_once('"') {
                cited.push(title.to_string());
                found = true;
            }
        }
        if !found {
            unnamed += 1;
        }
    }
    (cited, unnamed)
}

#[test]
fn every_section_the_code_cites_is_in_the_map() {
    let titles = sections(&map());
    let mut files = Vec::new();
    sources(&root(), &mut files);
    let mut checked = 0;
    let mut wrong = Vec::new();
    for file in files {
        if file.ends_with("image/tests/docs_map.rs") {
            continue; // this file, which quotes citations to test itself
        }
        let text = joined(&fs::read_to_string(&file).unwrap_or_default());
        let (cited, unnamed) = citations(&text);
        let shown = file.strip_prefix(root()).unwrap().display().to_string();
        if unnamed > 0 {
            wrong.push(format!("{shown}: cites the map without a section"));
        }
        for title in cited {
            checked += 1;
            if !titles.contains(&title) {
                wrong.push(format!("{shown}: \"{title}\" is no section of the map"));
            }
        }
    }
    assert!(checked > 0, "found no citation of the map at all");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_file_the_map_names_exists() {
    let map = map();
    let missing: Vec<&str> = map
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| {
            let ext = [".rs", ".md", ".sh", ".py"];
            s.contains('/') && !s.contains(' ') && ext.iter().any(|e| s.ends_with(e))
        })
        .filter(|s| !root().join(s).exists())
        .collect();
    assert!(
        missing.is_empty(),
        "the map names missing files: {missing:?}"
    );
}

/// The kernel's static locks: `static NAME: ...` lines of `libos/` whose
/// type is a lock (`IrqSpinLock`, `Mutex`, `RwLock`, `Once`), by name.
fn static_locks() -> Vec<(String, PathBuf)> {
    let mut files = Vec::new();
    sources(&root().join("libos"), &mut files);
    let mut locks = Vec::new();
    for file in files {
        for line in fs::read_to_string(&file).unwrap().lines() {
            let line = line.trim_start();
            let line = line.strip_prefix("pub(crate) ").unwrap_or(line);
            let line = line.strip_prefix("pub ").unwrap_or(line);
            let Some(rest) = line.strip_prefix("static ") else {
                continue;
            };
            let Some((name, ty)) = rest.split_once(':') else {
                continue;
            };
            let ty = ty.split('=').next().unwrap_or("");
            if ["IrqSpinLock", "Mutex", "RwLock", "Once"]
                .iter()
                .any(|l| ty.contains(l))
            {
                locks.push((name.trim().to_string(), file.clone()));
            }
        }
    }
    locks
}

#[test]
fn every_static_lock_of_the_kernel_is_in_the_lock_table() {
    let map = map();
    let table = map
        .split("\n## ")
        .find(|s| s.starts_with("Locks"))
        .expect("the map has a Locks section");
    let locks = static_locks();
    assert!(locks.len() >= 10, "found only {} static locks", locks.len());
    let missing: Vec<String> = locks
        .iter()
        .filter(|(name, _)| {
            ![
                format!("`{name}`"),
                format!(" {name}`"),
                format!("::{name}`"),
            ]
            .iter()
            .any(|form| table.contains(form.as_str()))
        })
        .map(|(name, file)| format!("{name} ({})", file.display()))
        .collect();
    assert!(
        missing.is_empty(),
        "static locks missing from the map's Locks table: {missing:?}"
    );
}

#[test]
fn citations_are_read_in_both_forms_and_across_lines() {
    let text = joined(
        "//! retry (see \"One device\n//! page fault\" in `docs/ARCHITECTURE.md`); see\n\
         /// `docs/ARCHITECTURE.md`, \"Locks\". And ARCHITECTURE.md alone.",
    );
    let (cited, unnamed) = citations(&text);
    assert_eq!(cited, ["One device page fault", "Locks"]);
    assert_eq!(unnamed, 1);
}
