//! Serves QEMU's main vhost-user socket on its own thread: feature
//! negotiation, the memory table, vring setup and, above all, IOTLB
//! updates and invalidations, which QEMU sends while the engine thread may
//! be blocked waiting for the answer to a miss (QEMU sends the UPDATE and
//! waits for our ack before it answers the miss, so this thread must never
//! wait for the engine thread).
//!
//! What the engine thread needs (queue configuration, the backend channel)
//! is published in [`Shared`] with a generation number and a wake-up fd.

use crate::guest::{log, Region, Regions, Translation};
use crate::stats::Stats;
use crate::sys::{self, Mapping};
use crate::vhost_msg::{self as msg, req, Header, IotlbMsg, MsgError, VringAddr, VringState};
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Number of queues of the device (completion queue 0, request queue 1).
pub const QUEUES: usize = 2;

/// What QEMU told us about one queue.
#[derive(Clone, Default)]
pub struct QueueConfig {
    /// Entries (SET_VRING_NUM).
    pub size: u16,
    /// IOVAs of the ring parts (SET_VRING_ADDR).
    pub addr: Option<VringAddr>,
    /// First avail index to take (SET_VRING_BASE).
    pub base: u16,
    /// The driver's doorbell (SET_VRING_KICK).
    pub kick: Option<Arc<OwnedFd>>,
    /// Our interrupt line to the driver (SET_VRING_CALL).
    pub call: Option<Arc<OwnedFd>>,
    /// SET_VRING_ENABLE (rings start disabled with protocol features).
    pub enabled: bool,
    /// Bumped whenever size, addresses or base change: the ring restarts.
    pub layout: u64,
}

impl QueueConfig {
    /// Whether the engine may use the queue.
    pub fn ready(&self) -> bool {
        self.enabled && self.size > 0 && self.addr.is_some() && self.kick.is_some()
    }
}

/// State shared between the frontend thread and the engine thread.
pub struct Shared {
    /// IOTLB and memory table.
    pub tr: Arc<Translation>,
    /// Queue configuration.
    pub queues: Mutex<[QueueConfig; QUEUES]>,
    /// Bumped on every change the engine thread must pick up.
    pub generation: AtomicU64,
    /// A new backend channel, waiting for the engine thread to take it.
    pub backend: Mutex<Option<UnixStream>>,
    /// Next avail index of each queue as the engine thread last left it
    /// (bit 16 set once the engine has run the queue).
    pub next_avail: [AtomicU32; QUEUES],
    /// Signalled to wake the engine thread.
    pub wake: OwnedFd,
    /// Counters.
    pub stats: Arc<Stats>,
    /// Set when QEMU hung up: the engine thread ends.
    pub done: AtomicBool,
}

impl Shared {
    /// Fresh state with its wake-up eventfd.
    pub fn new(stats: Arc<Stats>) -> io::Result<Self> {
        Ok(Self {
            tr: Arc::new(Translation::default()),
            queues: Mutex::new(Default::default()),
            generation: AtomicU64::new(0),
            backend: Mutex::new(None),
            next_avail: [AtomicU32::new(0), AtomicU32::new(0)],
            wake: sys::eventfd()?,
            stats,
            done: AtomicBool::new(false),
        })
    }

    /// Tells the engine thread that something changed.
    pub fn changed(&self) {
        self.generation.fetch_add(1, Ordering::Release);
        let _ = sys::eventfd_signal(self.wake.as_raw_fd());
    }
}

fn bad(e: MsgError) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.to_string())
}

/// The main-socket protocol of one QEMU connection.
pub struct Frontend {
    sock: UnixStream,
    shared: Arc<Shared>,
    rank: u16,
    verbose: bool,
    features: u64,
}

impl Frontend {
    /// Serves `sock` (QEMU's connection).
    pub fn new(sock: UnixStream, shared: Arc<Shared>, rank: u16, verbose: bool) -> Self {
        Self {
            sock,
            shared,
            rank,
            verbose,
            features: 0,
        }
    }

    /// Handles messages until QEMU hangs up (Ok) or breaks the protocol.
    pub fn serve(&mut self) -> io::Result<()> {
        loop {
            let mut hdr = [0u8; msg::HEADER_SIZE];
            let Some(fds) = sys::recv_with_fds(&self.sock, &mut hdr)? else {
                return Ok(());
            };
            let h = Header::decode(&hdr).map_err(bad)?;
            let mut payload = vec![0u8; h.size as usize];
            self.sock.read_exact(&mut payload)?;
            let ok = match self.handle(&h, &payload, fds) {
                Ok(reply) => {
                    if let Some(r) = reply {
                        self.sock.write_all(&r)?;
                        continue;
                    }
                    true
                }
                Err(e) => {
                    eprintln!(
                        "rdma-engine {}: {} refused: {e}",
                        self.rank,
                        msg::name(h.request)
                    );
                    false
                }
            };
            if h.need_reply() {
                self.sock
                    .write_all(&msg::reply_u64(h.request, u64::from(!ok)))?;
            }
        }
    }

    fn queue(&self, index: u32) -> io::Result<usize> {
        let i = index as usize;
        if i >= QUEUES {
            return Err(bad(MsgError::Field("queue index", u64::from(index))));
        }
        Ok(i)
    }

    /// One message; Ok(Some(reply)) for requests that answer with data.
    fn handle(&mut self, h: &Header, p: &[u8], fds: Vec<OwnedFd>) -> io::Result<Option<Vec<u8>>> {
        let verbose = self.verbose;
        if verbose && h.request != req::IOTLB_MSG {
            log(
                self.rank,
                true,
                &format!("vhost-user {}", msg::name(h.request)),
            );
        }
        match h.request {
            req::GET_FEATURES => return Ok(Some(msg::reply_u64(h.request, msg::OFFERED_FEATURES))),
            req::GET_PROTOCOL_FEATURES => {
                return Ok(Some(msg::reply_u64(
                    h.request,
                    msg::OFFERED_PROTOCOL_FEATURES,
                )))
            }
            req::SET_FEATURES => {
                self.features = msg::decode_u64(p).map_err(bad)?;
                if self.features & msg::F_IOMMU_PLATFORM == 0 {
                    eprintln!(
                        "rdma-engine {}: the driver did not accept VIRTIO_F_ACCESS_PLATFORM; addresses will not be translated by the SMMU",
                        self.rank
                    );
                }
            }
            req::SET_PROTOCOL_FEATURES | req::SET_OWNER | req::RESET_OWNER => {}
            req::SET_MEM_TABLE => self.set_mem_table(p, fds)?,
            req::SET_VRING_NUM => {
                let s = VringState::decode(p).map_err(bad)?;
                let i = self.queue(s.index)?;
                if s.num == 0 || s.num > u32::from(crate::ring::MAX_QUEUE_SIZE) {
                    return Err(bad(MsgError::Field("queue size", u64::from(s.num))));
                }
                self.update(i, |q| {
                    q.size = s.num as u16;
                    q.layout += 1;
                });
            }
            req::SET_VRING_ADDR => {
                let a = VringAddr::decode(p).map_err(bad)?;
                let i = self.queue(a.index)?;
                self.update(i, |q| {
                    q.addr = Some(a);
                    q.layout += 1;
                });
            }
            req::SET_VRING_BASE => {
                let s = VringState::decode(p).map_err(bad)?;
                let i = self.queue(s.index)?;
                self.update(i, |q| {
                    q.base = s.num as u16;
                    q.layout += 1;
                });
            }
            req::GET_VRING_BASE => {
                let s = VringState::decode(p).map_err(bad)?;
                let i = self.queue(s.index)?;
                let base = {
                    let q = self.shared.queues.lock().unwrap_or_else(|e| e.into_inner());
                    let published = self.shared.next_avail[i].load(Ordering::Acquire);
                    if published & 0x1_0000 != 0 {
                        published as u16
                    } else {
                        q[i].base
                    }
                };
                // Stops the ring: the engine drops it at its next look.
                self.update(i, |q| {
                    q.kick = None;
                    q.enabled = false;
                    q.base = base;
                });
                self.shared.next_avail[i].store(0, Ordering::Release);
                let st = VringState {
                    index: s.index,
                    num: u32::from(base),
                };
                return Ok(Some(msg::encode(h.request, msg::FLAG_REPLY, &st.encode())));
            }
            req::SET_VRING_KICK | req::SET_VRING_CALL | req::SET_VRING_ERR => {
                let v = msg::decode_u64(p).map_err(bad)?;
                let i = self.queue((v & 0xff) as u32)?;
                let fd = if v & msg::VRING_NOFD != 0 {
                    None
                } else {
                    fds.into_iter().next().map(Arc::new)
                };
                if let Some(fd) = &fd {
                    sys::set_nonblocking(fd.as_raw_fd())?;
                }
                match h.request {
                    req::SET_VRING_KICK => self.update(i, |q| q.kick = fd),
                    req::SET_VRING_CALL => self.update(i, |q| q.call = fd),
                    _ => {}
                }
            }
            req::SET_VRING_ENABLE => {
                let s = VringState::decode(p).map_err(bad)?;
                let i = self.queue(s.index)?;
                self.update(i, |q| q.enabled = s.num != 0);
            }
            req::SET_BACKEND_REQ_FD => {
                let fd = fds
                    .into_iter()
                    .next()
                    .ok_or_else(|| bad(MsgError::Field("backend fd", 0)))?;
                *self
                    .shared
                    .backend
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()) = Some(UnixStream::from(fd));
                self.shared.changed();
            }
            req::IOTLB_MSG => self.iotlb(p)?,
            other => return Err(bad(MsgError::Field("request", u64::from(other)))),
        }
        Ok(None)
    }

    fn update(&self, i: usize, f: impl FnOnce(&mut QueueConfig)) {
        f(&mut self.shared.queues.lock().unwrap_or_else(|e| e.into_inner())[i]);
        self.shared.changed();
    }

    fn set_mem_table(&mut self, p: &[u8], fds: Vec<OwnedFd>) -> io::Result<()> {
        let regions = msg::decode_mem_table(p).map_err(bad)?;
        if regions.len() != fds.len() {
            return Err(bad(MsgError::Field("fd count", fds.len() as u64)));
        }
        let mut out = Vec::new();
        for (r, fd) in regions.iter().zip(fds) {
            let map = Mapping::new(&fd, r.mmap_offset + r.size)?;
            log(
                self.rank,
                self.verbose,
                &format!(
                    "memory: guest {:#x}+{:#x} at QEMU {:#x}",
                    r.guest_phys, r.size, r.uaddr
                ),
            );
            out.push(Region {
                uaddr: r.uaddr,
                size: r.size,
                map,
                offset: r.mmap_offset,
            });
        }
        let tr = &self.shared.tr;
        *tr.regions.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(Regions(out));
        // Old translations named addresses of the old table.
        tr.iotlb
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .invalidate(0, 0);
        Ok(())
    }

    fn iotlb(&mut self, p: &[u8]) -> io::Result<()> {
        let m = IotlbMsg::decode(p).map_err(bad)?;
        self.iotlb_table(&m)
    }

    fn iotlb_table(&mut self, m: &IotlbMsg) -> io::Result<()> {
        let mut tlb = self
            .shared
            .tr
            .iotlb
            .write()
            .unwrap_or_else(|e| e.into_inner());
        match m.kind {
            msg::IOTLB_UPDATE => {
                self.shared.stats.updates.fetch_add(1, Ordering::Relaxed);
                log(
                    self.rank,
                    self.verbose,
                    &format!(
                        "IOTLB update iova={:#x} size={:#x} perm={}",
                        m.iova, m.size, m.perm
                    ),
                );
                let perm = {
                    let asked = self.shared.tr.asked.lock();
                    let asked = asked.unwrap_or_else(|p| p.into_inner());
                    crate::iotlb::granted(m.perm, m.iova, m.size, &asked)
                };
                if !tlb.insert(m.iova, m.size, m.uaddr, perm) {
                    return Err(bad(MsgError::Field("IOTLB update size", m.size)));
                }
            }
            msg::IOTLB_INVALIDATE => {
                self.shared
                    .stats
                    .invalidations
                    .fetch_add(1, Ordering::Relaxed);
                let n = tlb.invalidate(m.iova, m.size);
                log(
                    self.rank,
                    self.verbose,
                    &format!(
                        "IOTLB invalidate iova={:#x} size={:#x}: {n} entries",
                        m.iova, m.size
                    ),
                );
            }
            other => return Err(bad(MsgError::Field("IOTLB message type", u64::from(other)))),
        }
        Ok(())
    }
}
