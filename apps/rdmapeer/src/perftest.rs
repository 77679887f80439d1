//! The far end of perftest's `ib_write_bw` and `ib_read_bw`, as Debian
//! ships them (`hw::rdma::exchange` has the exchange's messages).
//!
//! ```text
//!  Linux: ib_write_bw -d rxe0 -x 1 <faultline>          Faultline: perftest-server write
//!    TCP 18515: version, page and cache-line sizes, MTU ◀──▶ (the client writes first)
//!               QPN, PSN, R_Key, address, GID ×3     ◀──▶ buffer: never touched, exposed
//!    WRITEs (size bytes, iters times) ══ RoCEv2 ═══════▶ faults: RNR NAK, resolve, go on
//!               done ×1, the client's measurement, ×1, "done"
//!  perftest-client ADDR write|read: this node WRITEs/READs the Linux
//!  server's buffer and hands it its measurement.
//! ```
//!
//! perftest writes random bytes and checks nothing; this side checks what
//! it can: as server of `ib_write_bw` that the window the client writes
//! holds its bytes (no page left zero), as server of `ib_read_bw` that its
//! buffer is unchanged, as client that every request completed.

use crate::target::pattern;
use crate::tcp::{Conn, TcpError};
use alloc::vec::Vec;
use core::time::Duration;
use hw::rdma::exchange::{
    gid_ipv4, ipv4_gid, mtu_code, mtu_of_code, perftest_version, ExchangeError, PerftestDest,
    PerftestReport, PERFTEST_VERSION, PERFTEST_VERSION_LEN,
};
use libos::dma::Policy;
use libos::mm::Region;
use libos::net::Net;
use libos::rdma::{Access, PeerAddress, Rdma, RdmaError, RemoteAddr, Status, WorkId};
use libos::time;

/// perftest's TCP port.
const PORT: u16 = 18515;
/// How long one exchange step may take.
const STEP: Duration = Duration::from_secs(60);
/// How long a test run may take (the server waits for its end).
const RUN: Duration = Duration::from_secs(600);
/// perftest's "cycle buffer": the page size (its writes stay inside one
/// when they are at most half of it).
const CYCLE: usize = 4096;
/// perftest's cache line size.
const CACHE_LINE: u32 = 64;
/// READs this node takes outstanding (told to the peer).
const OUT_READS: u16 = 16;
/// Requests this node keeps in flight as a client.
const DEPTH: usize = 16;

/// Which test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Test {
    /// `ib_write_bw`: the client WRITEs into the server's buffer.
    WriteBw,
    /// `ib_read_bw`: the client READs the server's buffer.
    ReadBw,
}

/// The test's options, as given to both ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Which test.
    pub test: Test,
    /// `-s`: bytes per message.
    pub size: usize,
    /// `-n`: messages.
    pub iters: u32,
    /// `-m`: path MTU (the smaller of both ends' is used).
    pub mtu: u32,
}

/// Why a run failed.
#[derive(Debug)]
pub enum PerfError {
    /// The TCP exchange failed.
    Exchange(TcpError),
    /// A message of the peer is not perftest's.
    BadMessage(&'static str, ExchangeError),
    /// The peer's perftest is older than 5.70 (or not perftest).
    Version,
    /// The peer gave no IPv4 GID (give it `-x <IPv4 GID index>`).
    NoIpv4Gid,
    /// A verb or the memory for the test failed.
    Rdma(RdmaError),
    /// The memory for the test could not be had.
    Memory,
    /// A request ended with this status.
    Completion(Status),
    /// The data is not what it must be.
    Data(&'static str, usize),
}

impl core::fmt::Display for PerfError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Exchange(e) => write!(f, "the TCP exchange failed: {e:?}"),
            Self::BadMessage(what, e) => write!(f, "the peer's {what} is not perftest's: {e:?}"),
            Self::Version => write!(f, "the peer is not perftest 5.70 or later"),
            Self::NoIpv4Gid => write!(f, "the peer sent no IPv4 GID (give it -x <IPv4 GID index>)"),
            Self::Rdma(e) => write!(f, "a verb failed: {e:?}"),
            Self::Memory => write!(f, "no memory for the test buffer"),
            Self::Completion(s) => write!(f, "a request completed with {s:?}"),
            Self::Data(what, at) => write!(f, "{what} (at byte {at})"),
        }
    }
}

impl From<TcpError> for PerfError {
    fn from(e: TcpError) -> Self {
        Self::Exchange(e)
    }
}

impl From<RdmaError> for PerfError {
    fn from(e: RdmaError) -> Self {
        Self::Rdma(e)
    }
}

/// What a run measured: the client's report, and the faults this node
/// resolved for the peer meanwhile.
#[derive(Clone, Copy, Debug)]
pub struct Outcome {
    /// The peer's address.
    pub peer: [u8; 4],
    /// The client's measurement (this node's, when it was the client).
    pub report: PerftestReport,
    /// Pages this node made present for the peer's requests.
    pub faults: u64,
}

/// One exchange of `ours`, the same size each way: the client writes
/// first.
fn xchg(
    conn: &mut Conn<'_>,
    client: bool,
    ours: &[u8],
    limit: Duration,
) -> Result<Vec<u8>, TcpError> {
    if client {
        conn.write_all(ours, limit)?;
        conn.read_exact(ours.len(), limit)
    } else {
        let theirs = conn.read_exact(ours.len(), limit)?;
        conn.write_all(ours, limit)?;
        Ok(theirs)
    }
}

/// The exchange up to the queue pair numbers: returns the path MTU both
/// ends use.
fn preamble(conn: &mut Conn<'_>, client: bool, opts: &Options) -> Result<u32, PerfError> {
    let mut version = [0u8; PERFTEST_VERSION_LEN];
    version[..PERFTEST_VERSION.len()].copy_from_slice(PERFTEST_VERSION);
    let theirs = xchg(conn, client, &version, STEP)?;
    match perftest_version(&theirs) {
        Some(v) if v >= (5, 70) => {}
        _ => return Err(PerfError::Version),
    }
    xchg(conn, client, &(CYCLE as u32).to_be_bytes(), STEP)?;
    xchg(conn, client, &CACHE_LINE.to_be_bytes(), STEP)?;
    let code = mtu_code(opts.mtu).unwrap_or(3);
    let theirs = xchg(conn, client, &[b'0' + code, 0], STEP)?;
    let their_code = theirs[0].wrapping_sub(b'0');
    Ok(mtu_of_code(their_code).map_or(opts.mtu, |m| m.min(opts.mtu)))
}

/// Serves one `ib_write_bw` or `ib_read_bw` client.
pub fn serve(rdma: &Rdma, net: &mut Net, opts: &Options) -> Result<Outcome, PerfError> {
    let mut conn = Conn::accept(net, PORT, RUN)?;
    let mtu = preamble(&mut conn, false, opts)?;
    // The client's WRITEs stay within one cycle buffer, or cover `size`.
    let window = opts.size.max(CYCLE);
    let len = (2 * window).next_multiple_of(CYCLE);
    let mut region = Region::demand_zero(len).map_err(|_| PerfError::Memory)?;
    let access = match opts.test {
        // Never touched: the client's first WRITE to each page faults.
        Test::WriteBw => Access::REMOTE_WRITE,
        Test::ReadBw => {
            for (i, b) in region.as_mut_slice().iter_mut().enumerate() {
                *b = pattern(i, 31);
            }
            Access::REMOTE_READ
        }
    };
    // SAFETY: `region` outlives the exposure (dropped at the end of this
    // function, after it); Rust reads its bytes only after the client said
    // its test is over (the fourth exchange of numbers).
    let exposure = unsafe { rdma.expose(region.range(), access) }?;
    let faults_before = rdma.pages_ready();
    let qp = rdma.create_peer_qp()?;
    let ours = PerftestDest {
        lid: 0,
        out_reads: OUT_READS,
        qpn: qp.qpn(),
        psn: qp.first_psn(),
        rkey: exposure.remote().key as u32,
        vaddr: region.start() as u64,
        gid: ipv4_gid(rdma.address()),
        srqn: 0,
    };
    let theirs = xchg(&mut conn, false, &ours.encode(), STEP)?;
    let theirs = PerftestDest::decode(&theirs).map_err(|e| PerfError::BadMessage("address", e))?;
    let peer = gid_ipv4(&theirs.gid).ok_or(PerfError::NoIpv4Gid)?;
    let _to = qp.connect(&PeerAddress {
        addr: peer,
        qpn: theirs.qpn,
        psn: theirs.psn,
        mtu,
    })?;
    xchg(&mut conn, false, &ours.encode(), STEP)?;
    xchg(&mut conn, false, &ours.encode(), STEP)?;
    // The client runs its test; it comes back when done.
    xchg(&mut conn, false, &ours.encode(), RUN)?;
    let mut fields = [[0u8; 8]; 5];
    for f in fields.iter_mut() {
        let theirs = xchg(&mut conn, false, &[0u8; 8], STEP)?;
        f.copy_from_slice(&theirs);
    }
    xchg(&mut conn, false, &ours.encode(), STEP)?;
    conn.write_all(b"done\0", STEP)?;
    drop(exposure);
    let faults = rdma.pages_ready() - faults_before;
    let bytes = region.as_slice();
    match opts.test {
        Test::WriteBw => {
            // perftest's bytes are random: no page of the window it wrote
            // may still be all zero (nothing was there before).
            let written = window.min(opts.size.max(CYCLE));
            if let Some(page) = bytes[..written]
                .chunks(CYCLE)
                .position(|p| p.iter().all(|&b| b == 0))
            {
                return Err(PerfError::Data(
                    "a page the client wrote is still zero",
                    page * CYCLE,
                ));
            }
        }
        Test::ReadBw => {
            if let Some(at) = bytes
                .iter()
                .enumerate()
                .position(|(i, &b)| b != pattern(i, 31))
            {
                return Err(PerfError::Data("the buffer the client read changed", at));
            }
        }
    }
    Ok(Outcome {
        peer,
        report: PerftestReport::from_fields(&fields),
        faults,
    })
}

/// Runs `ib_write_bw`'s or `ib_read_bw`'s client against a Linux server
/// at `server`.
pub fn client(
    rdma: &Rdma,
    net: &mut Net,
    server: [u8; 4],
    opts: &Options,
) -> Result<Outcome, PerfError> {
    let mut conn = Conn::connect(net, server, PORT, RUN)?;
    let mtu = preamble(&mut conn, true, opts)?;
    // A WRITE's source (one buffer for all), or one slot per READ in
    // flight.
    let slots = if opts.test == Test::ReadBw { DEPTH } else { 1 };
    let mut local = Region::demand_zero(opts.size * slots).map_err(|_| PerfError::Memory)?;
    for (i, b) in local.as_mut_slice().iter_mut().enumerate() {
        *b = pattern(i, 37);
    }
    let _grant = rdma.grant(local.range(), libos::dma::Rights::ReadWrite)?;
    let qp = rdma.create_peer_qp()?;
    let ours = PerftestDest {
        lid: 0,
        out_reads: OUT_READS,
        qpn: qp.qpn(),
        psn: qp.first_psn(),
        rkey: 0,
        vaddr: local.start() as u64,
        gid: ipv4_gid(rdma.address()),
        srqn: 0,
    };
    let theirs = xchg(&mut conn, true, &ours.encode(), STEP)?;
    let theirs = PerftestDest::decode(&theirs).map_err(|e| PerfError::BadMessage("address", e))?;
    let to = qp.connect(&PeerAddress {
        addr: gid_ipv4(&theirs.gid).ok_or(PerfError::NoIpv4Gid)?,
        qpn: theirs.qpn,
        psn: theirs.psn,
        mtu,
    })?;
    xchg(&mut conn, true, &ours.encode(), STEP)?;
    xchg(&mut conn, true, &ours.encode(), STEP)?;
    let remote = RemoteAddr {
        key: u64::from(theirs.rkey),
        va: theirs.vaddr as usize,
    };
    let start = time::now();
    let mut in_flight: alloc::collections::VecDeque<WorkId> = alloc::collections::VecDeque::new();
    let mut posted = 0u32;
    let mut done = 0u32;
    while done < opts.iters {
        while in_flight.len() < DEPTH && posted < opts.iters {
            let slot = (posted as usize % slots) * opts.size;
            let range = local.start() + slot..local.start() + slot + opts.size;
            // SAFETY: `local` is granted to the engine and outlives every
            // request (all are waited for below); WRITEs only read it, and
            // each READ in flight has its own slot.
            let id = unsafe {
                match opts.test {
                    Test::WriteBw => to.write(range, remote, Policy::FaultAware),
                    Test::ReadBw => to.read(range, remote, Policy::FaultAware),
                }
            }?;
            in_flight.push_back(id);
            posted += 1;
        }
        let Some(id) = in_flight.pop_front() else {
            break;
        };
        let wc = rdma.wait_for(id, STEP)?;
        if wc.status != Status::Success {
            return Err(PerfError::Completion(wc.status));
        }
        done += 1;
    }
    let secs = start.elapsed().as_secs_f64().max(1e-9);
    let bytes = opts.size as f64 * f64::from(opts.iters);
    let bw = bytes / secs / f64::from(1u32 << 20);
    let report = PerftestReport {
        size: opts.size as u64,
        iters: u64::from(opts.iters),
        bw_peak: bw,
        bw_avg: bw,
        msg_rate: f64::from(opts.iters) / secs / 1e6,
    };
    xchg(&mut conn, true, &ours.encode(), STEP)?;
    for f in report.fields() {
        xchg(&mut conn, true, &f, STEP)?;
    }
    xchg(&mut conn, true, &ours.encode(), STEP)?;
    conn.write_all(b"done\0", STEP)?;
    if opts.test == Test::WriteBw {
        if let Some(at) = local
            .as_slice()
            .iter()
            .enumerate()
            .position(|(i, &b)| b != pattern(i, 37))
        {
            return Err(PerfError::Data("the WRITEs' source changed", at));
        }
    }
    Ok(Outcome {
        peer: server,
        report,
        faults: 0,
    })
}
