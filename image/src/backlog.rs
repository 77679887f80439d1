//! A wider listen backlog for QEMU's forwarded port.
//!
//! QEMU 7.2's user networking (libslirp) listens on a `hostfwd` port with a
//! backlog of 1. A client that opens many connections at once, like
//! `redis-benchmark` with its 50, has most handshakes dropped by the host
//! kernel and stalls in SYN retransmission for seconds or minutes, whatever
//! the guest does. So when QEMU forwards a port, the image tool preloads a
//! small shared object into it (`image/listen-backlog.c`, built here with
//! the host's C compiler on first use) that raises every `listen` backlog
//! to at least 128. Without a C compiler QEMU runs as it is, with a warning.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// The preload object for QEMU, built if missing or older than its source;
/// `None` (after a warning) if it cannot be built.
pub fn preload(root: &Path) -> Option<PathBuf> {
    let source = root.join("image/listen-backlog.c");
    let object = root.join("target/host/listen-backlog.so");
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    if let (Some(built), Some(written)) = (modified(&object), modified(&source)) {
        if built >= written {
            return Some(object);
        }
    }
    // Built under a private name (process id and a count: threads of one
    // process, like parallel tests, build at once too) and renamed into
    // place, so that QEMUs started at the same moment (tests, --nodes)
    // never load half a file.
    let dir = object.parent()?;
    static BUILDS: AtomicU32 = AtomicU32::new(0);
    let partial = dir.join(format!(
        "listen-backlog.{}.{}.so",
        std::process::id(),
        BUILDS.fetch_add(1, Ordering::Relaxed)
    ));
    let built = std::fs::create_dir_all(dir).is_ok()
        && Command::new("cc")
            .args(["-shared", "-fPIC", "-O2", "-o"])
            .arg(&partial)
            .arg(&source)
            .arg("-ldl")
            .status()
            .is_ok_and(|s| s.success())
        && std::fs::rename(&partial, &object).is_ok();
    if built {
        Some(object)
    } else {
        let _ = std::fs::remove_file(&partial);
        eprintln!(
            "faultline-image: could not build {} with cc; QEMU's forwarded port keeps a listen backlog of 1, so many simultaneous connections will stall",
            source.display()
        );
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_preload_object_is_built_once_and_reused() {
        let root = crate::workspace_root();
        let first = preload(&root).expect(
            "the shim builds with cc: run ./run-tests.sh, which installs gcc when cc is missing",
        );
        let built = std::fs::metadata(&first).unwrap().modified().unwrap();
        let again = preload(&root).unwrap();
        assert_eq!(first, again);
        assert_eq!(
            std::fs::metadata(&again).unwrap().modified().unwrap(),
            built
        );
    }
}
