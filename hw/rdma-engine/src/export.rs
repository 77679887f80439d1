//! Exporting this engine's guest memory to the other engines of the host:
//! a Unix socket `<dir>/fabric-<rank>.sock` next to the vhost-user socket
//! answers every connection *of an engine of the same cluster* with one
//! message: the current memory table (region handles and sizes) with the
//! memfds and the lease board attached (SCM_RIGHTS), then closes.
//!
//! Those files are the guest's RAM, read-write, so a connection must
//! first prove it belongs: the peer process has our uid (SO_PEERCRED), and
//! its first [`SECRET_LEN`] bytes are the cluster's [`Secret`] (the image
//! tool hands every engine of a cluster the same random one, in the
//! environment variable [`SECRET_ENV`]), compared in constant time.
//! Anything else is closed with nothing sent, and counted. Peers connect lazily, and again when a
//! request names a region handle they do not know (QEMU sent a new memory
//! table: handles are never reused).
//!
//! ```text
//!  0 magic u32 | 4 region count u32 | 8 board bytes u64
//! 16 regions: handle u32 | zero u32 | bytes u64      fds: board, regions...
//! ```

use crate::sys;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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
/// How long the exporter waits for a connection's secret.
const SECRET_TIMEOUT: Duration = Duration::from_millis(500);

/// The environment variable that carries the cluster secret (hex).
pub const SECRET_ENV: &str = "FAULTLINE_RDMA_SECRET";
/// Bytes of a cluster secret.
pub const SECRET_LEN: usize = 32;

/// What a connection to an export socket must send first: a random token
/// shared by the engines of one cluster.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret([u8; SECRET_LEN]);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl Secret {
    /// From its [`SECRET_LEN`] * 2 hex digits; None if it is not that.
    pub fn from_hex(hex: &str) -> Option<Self> {
        let hex = hex.trim().as_bytes();
        if hex.len() != 2 * SECRET_LEN {
            return None;
        }
        let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
        let mut b = [0u8; SECRET_LEN];
        for (i, pair) in hex.chunks_exact(2).enumerate() {
            b[i] = digit(pair[0])? << 4 | digit(pair[1])?;
        }
        Some(Self(b))
    }

    /// A fresh random secret from the OS (`/dev/urandom`).
    pub fn random() -> io::Result<Self> {
        let mut b = [0u8; SECRET_LEN];
        std::fs::File::open("/dev/urandom")?.read_exact(&mut b)?;
        Ok(Self(b))
    }

    /// The cluster's secret from [`SECRET_ENV`], if set and well formed.
    pub fn from_env() -> Option<Self> {
        Self::from_hex(&std::env::var(SECRET_ENV).ok()?)
    }

    /// Whether `other` is this secret, in time independent of where
    /// they differ.
    pub fn matches(&self, other: &[u8; SECRET_LEN]) -> bool {
        let diff = self
            .0
            .iter()
            .zip(other)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        std::hint::black_box(diff) == 0
    }
}

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

/// Asks the engine exporting at `path` for its memory table, proving
/// we belong to its cluster with `secret`.
pub fn fetch(path: &Path, secret: &Secret) -> io::Result<Table> {
    let sock = UnixStream::connect(path)?;
    sock.set_read_timeout(Some(FETCH_TIMEOUT))?;
    sock.set_write_timeout(Some(FETCH_TIMEOUT))?;
    (&sock).write_all(&secret.0)?;
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

/// Whether connection `c` comes from an engine of our cluster: same uid,
/// and its first bytes are `secret`.
fn admit(c: &UnixStream, secret: &Secret) -> bool {
    if !sys::peer_uid(c).is_ok_and(|uid| uid == sys::my_uid()) {
        return false;
    }
    let mut got = [0u8; SECRET_LEN];
    c.set_read_timeout(Some(SECRET_TIMEOUT)).is_ok()
        && c.set_write_timeout(Some(SECRET_TIMEOUT)).is_ok()
        && (&*c).read_exact(&mut got).is_ok()
        && secret.matches(&got)
}

/// The thread answering peers on the export socket; stops and removes the
/// socket when dropped.
pub struct Server {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    refused: Arc<AtomicU64>,
}

impl Server {
    /// Listens on `path` (replacing a stale socket file) and serves
    /// `exports` to connections that send `secret` first.
    pub fn start(path: PathBuf, exports: Arc<Exports>, secret: Secret) -> io::Result<Self> {
        if std::fs::symlink_metadata(&path).is_ok() {
            std::fs::remove_file(&path)?;
        }
        let listener = UnixListener::bind(&path)?;
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let refused = Arc::new(AtomicU64::new(0));
        let r = refused.clone();
        let thread = std::thread::Builder::new()
            .name("export".into())
            .spawn(move || {
                for conn in listener.incoming() {
                    if s.load(Ordering::Acquire) {
                        return;
                    }
                    // A peer that goes away early is its own problem.
                    if let Ok(c) = conn {
                        if admit(&c, &secret) {
                            let _ = exports.send(&c);
                        } else {
                            // Closed with nothing sent.
                            r.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            })?;
        Ok(Self {
            path,
            stop,
            thread: Some(thread),
            refused,
        })
    }

    /// Connections refused so far (wrong uid, no or wrong secret).
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
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
        let secret = Secret::random().unwrap();
        std::fs::create_dir_all(&dir).unwrap();
        let path = socket_path(&dir, 3);
        let ex = Arc::new(Exports::new(sys::memfd("board", 4096).unwrap(), 4096));
        let ram = Arc::new(sys::memfd("ram", 8192).unwrap());
        ex.set_table(vec![Exported {
            handle: 5,
            fd: ram.clone(),
            len: 8192,
        }]);
        let server = Server::start(path.clone(), ex.clone(), secret.clone()).unwrap();
        let t = fetch(&path, &secret).unwrap();
        assert_eq!(t.board.1, 4096);
        assert_eq!(sys::fd_size(&t.board.0).unwrap(), 4096);
        assert_eq!(t.regions.len(), 1);
        assert_eq!((t.regions[0].0, t.regions[0].2), (5, 8192));
        assert_eq!(sys::fd_size(&t.regions[0].1).unwrap(), 8192);
        ex.set_table(Vec::new());
        assert!(fetch(&path, &secret).unwrap().regions.is_empty());
        drop(server);
        assert!(fetch(&path, &secret).is_err(), "nobody exports any more");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_connection_without_the_cluster_secret_gets_nothing() {
        let dir = std::env::temp_dir().join(format!("fl-export-secret-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = socket_path(&dir, 0);
        let ex = Arc::new(Exports::new(sys::memfd("board", 4096).unwrap(), 4096));
        let secret = Secret::random().unwrap();
        let server = Server::start(path.clone(), ex, secret.clone()).unwrap();
        // A wrong secret.
        let other = Secret::random().unwrap();
        assert!(other != secret);
        assert!(fetch(&path, &other).is_err());
        // No secret at all: closed with nothing sent, no files.
        let c = UnixStream::connect(&path).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut b = [0u8; HDR];
        assert!(matches!(sys::recv_with_fds(&c, &mut b), Ok(None) | Err(_)));
        // Half a secret, then silence.
        let c = UnixStream::connect(&path).unwrap();
        (&c).write_all(&secret.0[..SECRET_LEN / 2]).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        assert!(matches!(sys::recv_with_fds(&c, &mut b), Ok(None) | Err(_)));
        assert_eq!(server.refused(), 3);
        // The right one still works.
        assert_eq!(fetch(&path, &secret).unwrap().board.1, 4096);
        assert_eq!(server.refused(), 3);
        drop(server);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn secrets_parse_from_hex_only() {
        let hex = "00ff".repeat(SECRET_LEN / 2);
        let s = Secret::from_hex(&hex).unwrap();
        let mut want = [0u8; SECRET_LEN];
        for (i, b) in want.iter_mut().enumerate() {
            *b = if i % 2 == 0 { 0 } else { 0xff };
        }
        assert!(s.matches(&want));
        want[31] = 0;
        assert!(!s.matches(&want));
        assert!(Secret::from_hex("abc").is_none());
        assert!(Secret::from_hex(&"zz".repeat(SECRET_LEN)).is_none());
        assert!(Secret::from_hex(&"0".repeat(2 * SECRET_LEN + 1)).is_none());
    }

    #[test]
    fn the_exported_board_cannot_be_truncated() {
        let board = sys::memfd("board", 8192).unwrap();
        assert!(sys::cannot_shrink(&board));
        let f = std::fs::File::from(board);
        assert!(f.set_len(4096).is_err(), "sealed against shrinking");
        assert!(f.set_len(16384).is_err(), "and growing");
        assert_eq!(f.metadata().unwrap().len(), 8192);
        assert!(!sys::cannot_shrink(
            &sys::memfd_unsealed("x", 4096).unwrap()
        ));
    }
}
