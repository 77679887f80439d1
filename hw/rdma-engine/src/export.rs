//! Exporting this engine's guest memory to the other engines of the host:
//! a Unix socket `<dir>/fabric-<rank>.sock` next to the vhost-user socket
//! answers every connection with one message: the current memory table
//! (region handles and sizes) with the memfds and the lease board attached
//! (SCM_RIGHTS), then closes. Peers connect lazily, and again when a
//! request names a region handle they do not know (QEMU sent a new memory
//! table: handles are never reused).
//!
//! ```text
//!  0 magic u32 | 4 region count u32 | 8 board bytes u64
//! 16 regions: handle u32 | zero u32 | bytes u64      fds: board, regions...
//! ```

use crate::sys;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

const MAGIC: u32 = 0xfa17_e4a0;
const HDR: usize = 16;
const REGION: usize = 16;
/// Most regions exported (a vhost-user memory table has at most 8).
pub const MAX_REGIONS: usize = sys::MAX_FDS - 1;
/// How long a peer waits for the table.
const FETCH_TIMEOUT: Duration = Duration::from_secs(1);

/// The socket where node `rank` exports its memory, in `dir`.
pub fn socket_path(dir: &Path, rank: u16) -> PathBuf {
    dir.join(format!("fabric-{rank}.sock"))
}

/// One exported region: the handle extents name it by, its file, its size.
#[derive(Clone)]
pub struct Exported {
    /// Handle, unique over the engine's life.
    pub handle: u32,
    /// The memfd QEMU gave us.
    pub fd: Arc<OwnedFd>,
    /// Bytes of the file a peer may map (from offset 0).
    pub len: u64,
}

/// What this engine exports: its lease board and its current memory table.
pub struct Exports {
    board: OwnedFd,
    board_len: u64,
    table: Mutex<Vec<Exported>>,
}

impl Exports {
    /// Exports `board` (`board_len` bytes) and, for now, no memory.
    pub fn new(board: OwnedFd, board_len: u64) -> Self {
        Self {
            board,
            board_len,
            table: Mutex::new(Vec::new()),
        }
    }

    /// Replaces the memory table (a new SET_MEM_TABLE).
    pub fn set_table(&self, table: Vec<Exported>) {
        *self.table.lock().unwrap_or_else(|p| p.into_inner()) = table;
    }

    /// Sends the table on `sock`.
    fn send(&self, sock: &UnixStream) -> io::Result<()> {
        let table = self.table.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let table = &table[..table.len().min(MAX_REGIONS)];
        let mut b = Vec::with_capacity(HDR + REGION * table.len());
        b.extend_from_slice(&MAGIC.to_le_bytes());
        b.extend_from_slice(&(table.len() as u32).to_le_bytes());
        b.extend_from_slice(&self.board_len.to_le_bytes());
        let mut fds = vec![self.board.as_raw_fd()];
        for r in table {
            b.extend_from_slice(&r.handle.to_le_bytes());
            b.extend_from_slice(&[0; 4]);
            b.extend_from_slice(&r.len.to_le_bytes());
            fds.push(r.fd.as_raw_fd());
        }
        sys::send_with_fds(sock, &b, &fds)
    }
}

/// A peer's exported memory as received, not mapped yet.
pub struct Table {
    /// The lease board's file and size.
    pub board: (OwnedFd, u64),
    /// (handle, file, size) of each region.
    pub regions: Vec<(u32, OwnedFd, u64)>,
}

fn bad(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("peer memory table: {what}"),
    )
}

/// Asks the engine exporting at `path` for its memory table.
pub fn fetch(path: &Path) -> io::Result<Table> {
    let sock = UnixStream::connect(path)?;
    sock.set_read_timeout(Some(FETCH_TIMEOUT))?;
    let mut hdr = [0u8; HDR];
    let mut fds = sys::recv_with_fds(&sock, &mut hdr)?.ok_or_else(|| bad("empty"))?;
    let u32_at = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4"));
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8"));
    if u32_at(&hdr, 0) != MAGIC {
        return Err(bad("magic"));
    }
    let n = u32_at(&hdr, 4) as usize;
    if n > MAX_REGIONS || fds.len() != n + 1 {
        return Err(bad("region or fd count"));
    }
    let mut body = vec![0u8; REGION * n];
    (&sock).read_exact(&mut body)?;
    let board = fds.remove(0);
    let regions = fds
        .into_iter()
        .enumerate()
        .map(|(i, fd)| (u32_at(&body, REGION * i), fd, u64_at(&body, REGION * i + 8)))
        .collect();
    Ok(Table {
        board: (board, u64_at(&hdr, 8)),
        regions,
    })
}

/// The thread answering peers on the export socket; stops and removes the
/// socket when dropped.
pub struct Server {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Listens on `path` (replacing a stale socket file) and serves `exports`.
    pub fn start(path: PathBuf, exports: Arc<Exports>) -> io::Result<Self> {
        if std::fs::symlink_metadata(&path).is_ok() {
            std::fs::remove_file(&path)?;
        }
        let listener = UnixListener::bind(&path)?;
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::Builder::new()
            .name("export".into())
            .spawn(move || {
                for conn in listener.incoming() {
                    if s.load(Ordering::Acquire) {
                        return;
                    }
                    // A peer that goes away early is its own problem.
                    if let Ok(c) = conn {
                        let _ = exports.send(&c);
                    }
                }
            })?;
        Ok(Self {
            path,
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Wake the accept.
        let _ = UnixStream::connect(&self.path);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_fetches_the_table_with_its_files_and_sees_it_change() {
        let dir = std::env::temp_dir().join(format!("fl-export-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = socket_path(&dir, 3);
        let ex = Arc::new(Exports::new(sys::memfd("board", 4096).unwrap(), 4096));
        let ram = Arc::new(sys::memfd("ram", 8192).unwrap());
        ex.set_table(vec![Exported {
            handle: 5,
            fd: ram.clone(),
            len: 8192,
        }]);
        let server = Server::start(path.clone(), ex.clone()).unwrap();
        let t = fetch(&path).unwrap();
        assert_eq!(t.board.1, 4096);
        assert_eq!(sys::fd_size(&t.board.0).unwrap(), 4096);
        assert_eq!(t.regions.len(), 1);
        assert_eq!((t.regions[0].0, t.regions[0].2), (5, 8192));
        assert_eq!(sys::fd_size(&t.regions[0].1).unwrap(), 8192);
        ex.set_table(Vec::new());
        assert!(fetch(&path).unwrap().regions.is_empty());
        drop(server);
        assert!(fetch(&path).is_err(), "nobody exports any more");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
