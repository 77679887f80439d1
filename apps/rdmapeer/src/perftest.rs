//! The far end of perftest's `ib_write_bw`, `ib_read_bw`, `ib_send_bw`
//! and `ib_write_lat`, as Debian ships them (`hw::rdma::exchange` has the
//! exchange's messages).
//!
//! ```text
//!  Linux: ib_write_bw -d rxe0 -x 1 <faultline>          Faultline: perftest-server write
//!    TCP 18515: version, page and cache-line sizes, MTU ◀──▶ (the client writes first)
//!               QPN, PSN, R_Key, address, GID ×3     ◀──▶ buffer: never touched, exposed
//!    WRITEs (size bytes, iters times) ══ RoCEv2 ═══════▶ faults: RNR NAK, resolve, go on
//!               done ×1, the client's measurement, ×1, "done"
//!  perftest-client ADDR write|read: this node WRITEs/READs the Linux
//!  server's buffer and hands it its measurement.
//!  send: the client SENDs, the server RECVs (the numbers are exchanged
//!  once more before the run, so the RECVs are posted first; no report).
//!  lat: both WRITE `size` bytes into the other's buffer in turn, the
//!  server first, and watch their own buffer's last byte for the peer's
//!  count (no exchange after the run).
//! ```
//!
//! perftest writes random bytes and checks nothing; this side checks what
//! it can: as server of `ib_write_bw` that the window the client writes
//! holds its bytes (no page left zero), as server of `ib_read_bw` that its
//! buffer is unchanged, as client that every request completed.

use crate::target::pattern;
use crate::tcp::{Conn, Oob, TcpError, PORT};
use alloc::collections::VecDeque;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::cell::RefCell;
use core::time::Duration;
use hw::rdma::exchange::{
    gid_ipv4, ipv4_gid, mtu_code, mtu_of_code, perftest_version, ExchangeError, PerftestDest,
    PerftestReport, PERFTEST_VERSION, PERFTEST_VERSION_LEN,
};
use libos::dma::Policy;
use libos::mm::Region;
use libos::rdma::{
    Access, ExposedRegion, PeerAddress, PeerQp, QueuePair, Rdma, RdmaError, RemoteAddr, Status,
    WorkCompletion, WorkId,
};
use libos::time;

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
/// RECVs this node keeps posted as the server of `ib_send_bw`.
const RECV_DEPTH: usize = 64;

/// Which test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Test {
    /// `ib_write_bw`: the client WRITEs into the server's buffer.
    WriteBw,
    /// `ib_read_bw`: the client READs the server's buffer.
    ReadBw,
    /// `ib_send_bw`: the client SENDs, the server RECVs.
    SendBw,
    /// `ib_write_lat`: WRITE ping-pong.
    WriteLat,
}

impl Test {
    /// The name the steps use.
    pub fn name(self) -> &'static str {
        match self {
            Self::WriteBw => "write",
            Self::ReadBw => "read",
            Self::SendBw => "send",
            Self::WriteLat => "lat",
        }
    }
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

/// What a run measured: the client's report (this node's own measurement
/// for `send` and `lat`), and the faults this node resolved for the peer
/// meanwhile.
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

/// The connected end of one test: the TCP exchange, the numbers each side
/// gave, and the queue pair.
struct Session<'n> {
    conn: Conn<'n>,
    client: bool,
    ours: PerftestDest,
    theirs: PerftestDest,
    to: QueuePair,
    // Ends the queue pair when the session ends.
    _qp: PeerQp,
}

impl Session<'_> {
    /// One more exchange of the numbers (perftest's "hand shake").
    fn hand_shake(&mut self, limit: Duration) -> Result<(), PerfError> {
        let ours = self.ours.encode();
        xchg(&mut self.conn, self.client, &ours, limit)?;
        Ok(())
    }

    /// The closing: the numbers once more, then "done". Each side closes
    /// after writing its "done" without reading the other's, so this one
    /// may find the connection reset: the test is over either way.
    fn close(mut self) -> Result<(), PerfError> {
        self.hand_shake(STEP)?;
        let _ = self.conn.write_all(b"done\0", STEP);
        Ok(())
    }

    fn peer(&self) -> [u8; 4] {
        gid_ipv4(&self.theirs.gid).unwrap_or_default()
    }
}

/// Everything up to the run: the preamble, a queue pair, the numbers (with
/// `rkey` and `vaddr` of this side's buffer) exchanged and the queue pair
/// connected, and the exchanges perftest makes before its run.
fn connect<'n>(
    rdma: &Rdma,
    mut conn: Conn<'n>,
    client: bool,
    opts: &Options,
    rkey: u32,
    vaddr: u64,
) -> Result<Session<'n>, PerfError> {
    let mtu = preamble(&mut conn, client, opts)?;
    let qp = rdma.create_peer_qp()?;
    let ours = PerftestDest {
        lid: 0,
        out_reads: OUT_READS,
        qpn: qp.qpn(),
        psn: qp.first_psn(),
        rkey,
        vaddr,
        gid: ipv4_gid(rdma.address()),
        srqn: 0,
    };
    if opts.test == Test::WriteLat {
        // The latency test exchanges the numbers once more first.
        xchg(&mut conn, client, &ours.encode(), STEP)?;
    }
    let theirs = xchg(&mut conn, client, &ours.encode(), STEP)?;
    let theirs = PerftestDest::decode(&theirs).map_err(|e| PerfError::BadMessage("address", e))?;
    let to = qp.connect(&PeerAddress {
        addr: gid_ipv4(&theirs.gid).ok_or(PerfError::NoIpv4Gid)?,
        qpn: theirs.qpn,
        psn: theirs.psn,
        mtu,
    })?;
    let mut s = Session {
        conn,
        client,
        ours,
        theirs,
        to,
        _qp: qp,
    };
    s.hand_shake(STEP)?;
    s.hand_shake(STEP)?;
    Ok(s)
}

/// A region of `len` bytes: never touched, or filled with pattern `seed`.
fn region(len: usize, seed: Option<u8>) -> Result<Region, PerfError> {
    let mut r = Region::demand_zero(len.next_multiple_of(CYCLE)).map_err(|_| PerfError::Memory)?;
    if let Some(seed) = seed {
        for (i, b) in r.as_mut_slice().iter_mut().enumerate() {
            *b = pattern(i, seed);
        }
    }
    Ok(r)
}

/// Serves one Linux client of the test.
pub fn serve(rdma: &Rdma, oob: &mut Oob, opts: &Options) -> Result<Outcome, PerfError> {
    let conn = oob.accept(RUN)?;
    // The client's WRITEs and READs stay within one cycle buffer, or
    // cover `size`.
    let window = opts.size.max(CYCLE);
    let exposed = match opts.test {
        // Never touched: the client's first WRITE to each page faults.
        Test::WriteBw | Test::WriteLat => Some(expose(
            rdma,
            region(2 * window, None)?,
            Access::REMOTE_WRITE,
        )?),
        Test::ReadBw => Some(expose(
            rdma,
            region(2 * window, Some(31))?,
            Access::REMOTE_READ,
        )?),
        Test::SendBw => None,
    };
    let (rkey, vaddr) = exposed
        .as_ref()
        .map_or((0, 0), |e| (e.remote().key as u32, e.start() as u64));
    let faults_before = rdma.pages_ready();
    let mut s = connect(rdma, conn, false, opts, rkey, vaddr)?;
    let peer = s.peer();
    let report = match (&exposed, opts.test) {
        (_, Test::WriteBw | Test::ReadBw) => {
            // The client runs its test; it comes back when done, with its
            // measurement.
            s.hand_shake(RUN)?;
            let mut fields = [[0u8; 8]; 5];
            for f in fields.iter_mut() {
                f.copy_from_slice(&xchg(&mut s.conn, false, &[0u8; 8], STEP)?);
            }
            s.close()?;
            PerftestReport::from_fields(&fields)
        }
        (_, Test::SendBw) => {
            let recvs = receive_all(rdma, &mut s, opts)?;
            s.close()?;
            recvs
        }
        (Some(landing), Test::WriteLat) => {
            let r = ping_pong(rdma, &s, opts, landing)?;
            drop(s);
            r
        }
        (None, Test::WriteLat) => return Err(PerfError::Memory),
    };
    // The key revoked, the buffer is ours to read.
    let buffer = exposed.map(ExposedRegion::revoke);
    let faults = rdma.pages_ready() - faults_before;
    let bytes = buffer.as_ref().map_or(&[][..], |b| b.as_slice());
    match opts.test {
        Test::WriteBw => {
            // perftest's bytes are random: no page of the window it wrote
            // may still be all zero (nothing was there before).
            if let Some(page) = bytes[..window]
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
        Test::SendBw | Test::WriteLat => {}
    }
    Ok(Outcome {
        peer,
        report,
        faults,
    })
}

/// Exposes `region` with `access`.
fn expose(rdma: &Rdma, region: Region, access: Access) -> Result<ExposedRegion, PerfError> {
    rdma.expose_region(region, access)
        .map_err(|(e, _)| PerfError::Rdma(e))
}

/// Runs the test's client against a Linux server at `server`.
pub fn client(
    rdma: &Rdma,
    oob: &mut Oob,
    server: [u8; 4],
    opts: &Options,
) -> Result<Outcome, PerfError> {
    let conn = oob.connect(server, PORT, RUN)?;
    // The latency test's buffer the server writes into.
    let landing = match opts.test {
        Test::WriteLat => Some(expose(
            rdma,
            region(opts.size.max(CYCLE), None)?,
            Access::REMOTE_WRITE,
        )?),
        _ => None,
    };
    let source = Arc::new(region(opts.size, Some(37))?);
    let (rkey, vaddr) = landing.as_ref().map_or((0, source.start() as u64), |e| {
        (e.remote().key as u32, e.start() as u64)
    });
    let mut s = connect(rdma, conn, true, opts, rkey, vaddr)?;
    let report = match (&landing, opts.test) {
        (_, Test::WriteBw | Test::ReadBw) => {
            let report = transfer_all(&s, opts, &source)?;
            s.hand_shake(STEP)?;
            for f in report.fields() {
                xchg(&mut s.conn, true, &f, STEP)?;
            }
            s.close()?;
            report
        }
        (_, Test::SendBw) => {
            s.hand_shake(STEP)?;
            let data = &source.as_slice()[..opts.size];
            let report = pipeline(opts, |_| Ok(s.to.send(data)?), |id| finish(rdma, id))?;
            s.close()?;
            report
        }
        (Some(landing), Test::WriteLat) => {
            let r = ping_pong(rdma, &s, opts, landing)?;
            drop(s);
            r
        }
        (None, Test::WriteLat) => return Err(PerfError::Memory),
    };
    if let Some(at) = source
        .as_slice()
        .iter()
        .enumerate()
        .position(|(i, &b)| b != pattern(i, 37))
    {
        return Err(PerfError::Data("the source changed", at));
    }
    Ok(Outcome {
        peer: server,
        report,
        faults: 0,
    })
}

/// The measurement of `iters` messages of `size` bytes in `secs`.
fn measured(opts: &Options, secs: f64) -> PerftestReport {
    let secs = secs.max(1e-9);
    let bw = opts.size as f64 * f64::from(opts.iters) / secs / f64::from(1u32 << 20);
    PerftestReport {
        size: opts.size as u64,
        iters: u64::from(opts.iters),
        bw_peak: bw,
        bw_avg: bw,
        msg_rate: f64::from(opts.iters) / secs / 1e6,
    }
}

/// Posts `iters` requests with `post` (given the request's number),
/// [`DEPTH`] in flight, each ended in order by `done`; their measurement.
fn pipeline<T>(
    opts: &Options,
    mut post: impl FnMut(u32) -> Result<T, PerfError>,
    mut done: impl FnMut(T) -> Result<(), PerfError>,
) -> Result<PerftestReport, PerfError> {
    let start = time::now();
    let mut in_flight = VecDeque::new();
    let mut posted = 0u32;
    while posted < opts.iters || !in_flight.is_empty() {
        while in_flight.len() < DEPTH && posted < opts.iters {
            in_flight.push_back(post(posted)?);
            posted += 1;
        }
        if let Some(t) = in_flight.pop_front() {
            done(t)?;
        }
    }
    Ok(measured(opts, start.elapsed().as_secs_f64()))
}

/// A transfer's completion, or its error.
fn succeeded(wc: &WorkCompletion) -> Result<(), PerfError> {
    match wc.status {
        Status::Success => Ok(()),
        s => Err(PerfError::Completion(s)),
    }
}

/// WRITEs or READs `iters` times into the server's buffer: WRITEs share
/// the source; each READ in flight has a buffer of its own, which comes
/// back to the pool when it completes.
fn transfer_all(
    s: &Session<'_>,
    opts: &Options,
    source: &Arc<Region>,
) -> Result<PerftestReport, PerfError> {
    let remote = RemoteAddr {
        key: u64::from(s.theirs.rkey),
        va: s.theirs.vaddr as usize,
    };
    let policy = Policy::FaultAware;
    if opts.test == Test::WriteBw {
        return pipeline(
            opts,
            |_| {
                s.to.write_owned(source.clone(), 0..opts.size, remote, policy)
                    .map_err(|(e, _)| PerfError::Rdma(e))
            },
            |pending| {
                let (_, wc) = pending.wait().map_err(|(e, _)| PerfError::Rdma(e))?;
                succeeded(&wc)
            },
        );
    }
    let pool = RefCell::new(Vec::new());
    for _ in 0..DEPTH {
        pool.borrow_mut().push(region(opts.size, None)?);
    }
    pipeline(
        opts,
        |_| {
            let dest = pool.borrow_mut().pop().ok_or(PerfError::Memory)?;
            s.to.read_owned(dest, 0..opts.size, remote, policy)
                .map_err(|(e, _)| PerfError::Rdma(e))
        },
        |pending| {
            let (dest, wc) = pending.wait().map_err(|(e, _)| PerfError::Rdma(e))?;
            pool.borrow_mut().push(dest);
            succeeded(&wc)
        },
    )
}

/// RECVs `iters` messages of `size` bytes: RECVs are posted before the
/// exchange that lets the client start, and kept [`RECV_DEPTH`] ahead.
fn receive_all(
    rdma: &Rdma,
    s: &mut Session<'_>,
    opts: &Options,
) -> Result<PerftestReport, PerfError> {
    let mut posted = 0u32;
    let mut waiting = VecDeque::new();
    while posted < opts.iters && waiting.len() < RECV_DEPTH {
        waiting.push_back(rdma.post_recv(opts.size)?);
        posted += 1;
    }
    s.hand_shake(STEP)?;
    let start = time::now();
    while let Some(id) = waiting.pop_front() {
        let wc = rdma.wait_for(id, RUN)?;
        if wc.status != Status::Success {
            return Err(PerfError::Completion(wc.status));
        }
        if wc.data.len() != opts.size {
            return Err(PerfError::Data(
                "a message of another size came",
                wc.data.len(),
            ));
        }
        if posted < opts.iters {
            waiting.push_back(rdma.post_recv(opts.size)?);
            posted += 1;
        }
    }
    Ok(measured(opts, start.elapsed().as_secs_f64()))
}

/// How often the latency loop looks for the peer's WRITE.
const LOOK_EVERY: Duration = Duration::from_micros(10);

/// `ib_write_lat`'s ping-pong: `size` bytes each way, the count in the last
/// byte; the server writes first. Returns the measured round trips
/// (`bw_avg` holds the median round trip's half, in microseconds, as
/// perftest reports latency).
fn ping_pong(
    rdma: &Rdma,
    s: &Session<'_>,
    opts: &Options,
    landing: &ExposedRegion,
) -> Result<PerftestReport, PerfError> {
    let remote = RemoteAddr {
        key: u64::from(s.theirs.rkey),
        va: s.theirs.vaddr as usize,
    };
    // One message buffer for the whole run, granted to the engine for the
    // whole run: each WRITE's own grant then changes no translation (a
    // grant given and taken per message would cost the engine an IOTLB
    // miss, a round trip to QEMU, per message).
    let mut msg = Some(region(opts.size, None)?);
    let _grant = msg
        .as_ref()
        .map(|m| rdma.grant(m.range(), libos::dma::Rights::Read))
        .transpose()?;
    let mut rtts = Vec::with_capacity(opts.iters as usize);
    let wait_for_count = |k: u32| -> Result<(), PerfError> {
        let start = time::now();
        while landing.byte(opts.size - 1) != Some(k as u8) {
            if start.elapsed() > STEP {
                return Err(PerfError::Data(
                    "the peer's WRITE never came",
                    opts.size - 1,
                ));
            }
            // Not a spin: the vCPU sleeps between looks, leaving the host's
            // cores to the engine that places the WRITE.
            time::wait_for_interrupt_or(LOOK_EVERY);
        }
        Ok(())
    };
    let mut last = time::now();
    for k in 1..=opts.iters {
        if s.client {
            wait_for_count(k)?;
        }
        let mut m = msg.take().ok_or(PerfError::Memory)?;
        m.as_mut_slice()[opts.size - 1] = k as u8;
        let pending =
            s.to.write_owned(m, 0..opts.size, remote, Policy::FaultAware)
                .map_err(|(e, _)| PerfError::Rdma(e))?;
        let (m, wc) = pending.wait().map_err(|(e, _)| PerfError::Rdma(e))?;
        msg = Some(m);
        succeeded(&wc)?;
        if !s.client {
            wait_for_count(k)?;
        }
        let now = time::now();
        rtts.push(now.duration_since(last).as_secs_f64() * 1e6);
        last = now;
    }
    rtts.sort_by(f64::total_cmp);
    let median = rtts.get(rtts.len() / 2).copied().unwrap_or(0.0);
    Ok(PerftestReport {
        size: opts.size as u64,
        iters: u64::from(opts.iters),
        bw_peak: median / 2.0,
        bw_avg: median / 2.0,
        msg_rate: 0.0,
    })
}

/// Waits for request `id`; an error unless it succeeded.
fn finish(rdma: &Rdma, id: WorkId) -> Result<(), PerfError> {
    let wc = rdma.wait_for(id, STEP)?;
    match wc.status {
        Status::Success => Ok(()),
        s => Err(PerfError::Completion(s)),
    }
}
