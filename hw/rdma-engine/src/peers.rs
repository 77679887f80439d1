//! The other engines' memories as this engine maps them (the borrower side
//! of the direct data path): fetched from a peer's export socket the first
//! time a request of it names its memory, fetched again when a request
//! names a region handle not seen yet (the peer's memory table changed), and
//! refused for a while after a peer could not be reached, so a peer without
//! an export socket costs one connect per second, not one per request.

use crate::dma::{DirectError, Lent};
use crate::export::{self, Secret, Table};
use crate::sys::{self, Mapping};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a peer that could not be mapped is not asked again.
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// One peer's memory, mapped here.
pub struct PeerMemory {
    /// Its lease board.
    pub board: Mapping,
    regions: HashMap<u32, Mapping>,
}

impl PeerMemory {
    /// Maps a fetched table; every file must be as large as announced.
    pub fn map(t: Table) -> std::io::Result<Self> {
        let map = |fd: &std::os::fd::OwnedFd, len: u64| {
            if len == 0 || sys::fd_size(fd)? < len {
                return Err(std::io::Error::other("peer file smaller than announced"));
            }
            // A file that could shrink under our mapping would SIGBUS us.
            if !sys::cannot_shrink(fd) {
                return Err(std::io::Error::other(
                    "peer file not sealed against shrinking",
                ));
            }
            Mapping::new(fd, len)
        };
        let board = map(&t.board.0, t.board.1)?;
        let mut regions = HashMap::new();
        for (handle, fd, len) in &t.regions {
            regions.insert(*handle, map(fd, *len)?);
        }
        Ok(Self { board, regions })
    }

    /// The mapping of region `handle`.
    pub fn region(&self, handle: u32) -> Option<&Mapping> {
        self.regions.get(&handle)
    }

    /// Whether every extent of `lent` names a known region (Some(false):
    /// one is unknown), and lies inside it (None: one does not).
    fn knows(&self, lent: &Lent) -> Option<bool> {
        for e in &lent.extents {
            let Some(m) = self.regions.get(&e.region) else {
                return Some(false);
            };
            let end = e.offset.checked_add(e.len)?;
            if end > m.len() as u64 {
                return None;
            }
        }
        Some(true)
    }
}

/// The peers' memories mapped so far.
pub struct Peers {
    dir: PathBuf,
    rank: u16,
    mapped: HashMap<u16, Arc<PeerMemory>>,
    refused: HashMap<u16, Instant>,
    secret: Secret,
}

impl Peers {
    /// Peers export in `dir` (the directory of our own vhost-user socket)
    /// to engines that know the cluster's `secret`.
    pub fn new(dir: PathBuf, rank: u16, secret: Secret) -> Self {
        Self {
            dir,
            rank,
            mapped: HashMap::new(),
            refused: HashMap::new(),
            secret,
        }
    }

    /// Peer `peer`'s memory holding everything `lent` names.
    pub fn get(&mut self, peer: u16, lent: &Lent) -> Result<Arc<PeerMemory>, DirectError> {
        if let Some(m) = self.mapped.get(&peer) {
            match m.knows(lent) {
                Some(true) => return Ok(m.clone()),
                None => return Err(DirectError::Invalid),
                Some(false) => {} // a new table: fetch it
            }
        }
        if self
            .refused
            .get(&peer)
            .is_some_and(|t| t.elapsed() < RETRY_AFTER)
        {
            return Err(DirectError::Unshared);
        }
        let path = export::socket_path(&self.dir, peer);
        let m = match export::fetch(&path, &self.secret).and_then(PeerMemory::map) {
            Ok(m) => Arc::new(m),
            Err(e) => {
                eprintln!(
                    "rdma-engine {}: cannot map node {peer}'s memory ({}: {e}); datagrams instead",
                    self.rank,
                    path.display()
                );
                self.mapped.remove(&peer);
                self.refused.insert(peer, Instant::now());
                return Err(DirectError::Unshared);
            }
        };
        self.refused.remove(&peer);
        self.mapped.insert(peer, m.clone());
        match m.knows(lent) {
            Some(true) => Ok(m),
            // The peer no longer exports that region: the lease is stale.
            Some(false) => Err(DirectError::Revoked { done: 0 }),
            None => Err(DirectError::Invalid),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_file_that_could_shrink_is_not_mapped() {
        let sealed = Table {
            board: (sys::memfd("board", 4096).unwrap(), 4096),
            regions: vec![(1, sys::memfd("ram", 8192).unwrap(), 8192)],
        };
        assert!(PeerMemory::map(sealed).is_ok());
        let unsealed_ram = Table {
            board: (sys::memfd("board", 4096).unwrap(), 4096),
            regions: vec![(1, sys::memfd_unsealed("ram", 8192).unwrap(), 8192)],
        };
        assert!(PeerMemory::map(unsealed_ram).is_err());
        let unsealed_board = Table {
            board: (sys::memfd_unsealed("board", 4096).unwrap(), 4096),
            regions: Vec::new(),
        };
        assert!(PeerMemory::map(unsealed_board).is_err());
    }
}
