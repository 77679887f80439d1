//! The far end of rdma-core's `ibv_rc_pingpong`, as Debian ships it.
//!
//! ```text
//!  Linux: ibv_rc_pingpong -d rxe0 -g 1 [-c] <faultline>    Faultline: pingpong-server
//!         TCP 18515: its LID:QPN:PSN:GID ─────────────────▶ PeerQp made, connected
//!                    ◀──────────────── ours (GID ::ffff:engine address)
//!                    "done" ──────────────────────────────▶
//!         SEND (size bytes) ──────── RoCEv2 RC ──────────▶ RECV: every byte checked
//!                    ◀──────────────────────────────────── SEND back
//!         … iters times; the roles swap with pingpong-client <linux>
//! ```
//!
//! Both programs send from the buffer they receive into, so every message
//! of a run carries the same bytes: rc_pingpong's fill (0x7b), and with
//! `-c` a zero at the start of each 4 KiB page, which the Linux server
//! checks at the end. This side checks every byte of every message.

use crate::tcp::{Oob, TcpError, PORT};
use alloc::vec;
use alloc::vec::Vec;
use core::time::Duration;
use hw::rdma::exchange::{gid_ipv4, ipv4_gid, PingpongDest, PINGPONG_DONE, PINGPONG_MSG_LEN};
use libos::rdma::{PeerAddress, PeerQp, Rdma, RdmaError, Status, WorkId};
use libos::time;

/// How long one exchange step or one message may take (the Linux side
/// runs under emulation too).
const STEP: Duration = Duration::from_secs(60);
/// The page size of the Linux side (`-c` marks each page's first byte).
const LINUX_PAGE: usize = 4096;

/// rc_pingpong's options, as given to both ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// `-s`: bytes per message.
    pub size: usize,
    /// `-n`: exchanges.
    pub iters: u32,
    /// `-m`: path MTU.
    pub mtu: u32,
    /// `-c`: the Linux side checks its buffer (page starts zeroed).
    pub check: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            size: 4096,
            iters: 1000,
            mtu: 1024,
            check: false,
        }
    }
}

/// Why a run failed.
#[derive(Debug)]
pub enum PingpongError {
    /// The TCP exchange failed.
    Exchange(TcpError),
    /// The peer's address message could not be read.
    BadMessage(hw::rdma::exchange::ExchangeError),
    /// The peer gave no IPv4 GID (run it with `-g <IPv4 GID index>`).
    NoIpv4Gid,
    /// A verb failed.
    Rdma(RdmaError),
    /// A message ended with this status.
    Completion(Status),
    /// Message `iter` differs from what was sent at byte `at`.
    Data {
        /// Which message.
        iter: u32,
        /// Where.
        at: usize,
        /// What came.
        got: u8,
    },
}

impl core::fmt::Display for PingpongError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Exchange(e) => write!(f, "the TCP exchange failed: {e:?}"),
            Self::BadMessage(e) => {
                write!(f, "the peer's address message is not rc_pingpong's: {e:?}")
            }
            Self::NoIpv4Gid => write!(f, "the peer sent no IPv4 GID (give it -g <IPv4 GID index>)"),
            Self::Rdma(e) => write!(f, "a verb failed: {e:?}"),
            Self::Completion(s) => write!(f, "a message completed with {s:?}"),
            Self::Data { iter, at, got } => {
                write!(f, "message {iter} differs at byte {at}: {got:#04x} came")
            }
        }
    }
}

impl From<TcpError> for PingpongError {
    fn from(e: TcpError) -> Self {
        Self::Exchange(e)
    }
}

impl From<RdmaError> for PingpongError {
    fn from(e: RdmaError) -> Self {
        Self::Rdma(e)
    }
}

/// What a run did.
#[derive(Clone, Copy, Debug)]
pub struct Report {
    /// The peer's address.
    pub peer: [u8; 4],
    /// Exchanges done (each checked).
    pub iters: u32,
    /// Round trip per exchange, in microseconds.
    pub us_per_iter: u64,
}

/// The bytes every message of a run carries.
pub fn message(opts: &Options) -> Vec<u8> {
    let mut m = vec![0x7bu8; opts.size];
    if opts.check {
        m.iter_mut().step_by(LINUX_PAGE).for_each(|b| *b = 0);
    }
    m
}

fn ours(rdma: &Rdma, qp: &PeerQp) -> PingpongDest {
    PingpongDest {
        lid: 0,
        qpn: qp.qpn(),
        psn: qp.first_psn(),
        gid: ipv4_gid(rdma.address()),
    }
}

fn connect(
    qp: &PeerQp,
    theirs: &PingpongDest,
    opts: &Options,
) -> Result<libos::rdma::QueuePair, PingpongError> {
    let addr = gid_ipv4(&theirs.gid).ok_or(PingpongError::NoIpv4Gid)?;
    Ok(qp.connect(&PeerAddress {
        addr,
        qpn: theirs.qpn,
        psn: theirs.psn,
        mtu: opts.mtu,
    })?)
}

/// Waits for the Linux client on [`PORT`], then answers its messages.
pub fn serve(rdma: &Rdma, oob: &mut Oob, opts: &Options) -> Result<Report, PingpongError> {
    let qp = rdma.create_peer_qp()?;
    let mut recv = rdma.post_recv(opts.size)?;
    let (to_peer, peer) = {
        let mut conn = oob.accept(STEP * 5)?;
        let msg = conn.read_exact(PINGPONG_MSG_LEN, STEP)?;
        let theirs = PingpongDest::decode(&msg).map_err(PingpongError::BadMessage)?;
        let to_peer = connect(&qp, &theirs, opts)?;
        conn.write_all(&ours(rdma, &qp).encode(), STEP)?;
        conn.read_exact(PINGPONG_DONE.len(), STEP)?;
        (to_peer, gid_ipv4(&theirs.gid).unwrap_or_default())
    };
    let expected = message(opts);
    let start = time::now();
    for iter in 0..opts.iters {
        // The next RECV is posted before the answer goes, so the peer's
        // next message finds it; none is left over after the last.
        let last = iter + 1 == opts.iters;
        let next = take(rdma, recv, &expected, iter, opts, !last)?;
        let sent = to_peer.send(&expected)?;
        finish(rdma, sent)?;
        match next {
            Some(n) => recv = n,
            None => break,
        }
    }
    Ok(report(peer, opts, start))
}

/// Connects to a Linux `ibv_rc_pingpong` server at `server`, then sends
/// first.
pub fn client(
    rdma: &Rdma,
    oob: &mut Oob,
    server: [u8; 4],
    opts: &Options,
) -> Result<Report, PingpongError> {
    let qp = rdma.create_peer_qp()?;
    let mut recv = rdma.post_recv(opts.size)?;
    let to_peer = {
        let mut conn = oob.connect(server, PORT, STEP * 5)?;
        conn.write_all(&ours(rdma, &qp).encode(), STEP)?;
        let msg = conn.read_exact(PINGPONG_MSG_LEN, STEP)?;
        let theirs = PingpongDest::decode(&msg).map_err(PingpongError::BadMessage)?;
        let to_peer = connect(&qp, &theirs, opts)?;
        conn.write_all(PINGPONG_DONE, STEP)?;
        to_peer
    };
    let expected = message(opts);
    let start = time::now();
    for iter in 0..opts.iters {
        let sent = to_peer.send(&expected)?;
        finish(rdma, sent)?;
        let last = iter + 1 == opts.iters;
        match take(rdma, recv, &expected, iter, opts, !last)? {
            Some(n) => recv = n,
            None => break,
        }
    }
    Ok(report(server, opts, start))
}

/// Waits for the message in RECV `recv`, checks it, and (if `more`)
/// posts the next RECV, returned.
fn take(
    rdma: &Rdma,
    recv: WorkId,
    expected: &[u8],
    iter: u32,
    opts: &Options,
    more: bool,
) -> Result<Option<WorkId>, PingpongError> {
    let wc = rdma.wait_for(recv, STEP)?;
    if wc.status != Status::Success {
        return Err(PingpongError::Completion(wc.status));
    }
    let next = if more {
        Some(rdma.post_recv(opts.size)?)
    } else {
        None
    };
    if let Some(at) =
        (0..expected.len().max(wc.data.len())).find(|&i| wc.data.get(i) != expected.get(i))
    {
        return Err(PingpongError::Data {
            iter,
            at,
            got: wc.data.get(at).copied().unwrap_or(0),
        });
    }
    Ok(next)
}

fn finish(rdma: &Rdma, id: WorkId) -> Result<(), PingpongError> {
    let wc = rdma.wait_for(id, STEP)?;
    match wc.status {
        Status::Success => Ok(()),
        s => Err(PingpongError::Completion(s)),
    }
}

fn report(peer: [u8; 4], opts: &Options, start: time::Instant) -> Report {
    let us = start.elapsed().as_micros() as u64;
    Report {
        peer,
        iters: opts.iters,
        us_per_iter: us / u64::from(opts.iters.max(1)),
    }
}
