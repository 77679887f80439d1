//! The engine thread of the device process: waits on the request queue's
//! kick, the completion queue's kick, the fabric socket and timers, and
//! moves work between the guest's rings, the protocol core and the fabric.
//!
//! ```text
//!  kick(TX) ─▶ pop [hdr][WorkRequest] ─▶ Engine::post ─┐
//!  UDP ─────────────────────────────▶ Engine::on_packet
//!  timer ───────────────────────────▶ Engine::tick     │
//!                  RoCEv2 packets ◀────────────────────┤
//!  RX buffers ◀─ [hdr][Completion] ◀─ completions ◀────┘ (held while RX is empty)
//! ```

use crate::engine::Engine;
use crate::fabric::Fabric;
use crate::frontend::{QueueConfig, Shared, QUEUES};
use crate::guest::{log, GuestDma, MissChannel};
use crate::ring::{RingError, SplitRing};
use crate::shares::{Shares, SMALL};
use crate::sys;
use hw::rdma::wire::{
    Completion, Opcode, WorkRequest, COMPLETION_QUEUE, NET_HDR_SIZE, REQUEST_QUEUE, WR_SIZE,
};
use std::collections::VecDeque;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

struct Queue {
    ring: SplitRing,
    layout: u64,
    kick: Arc<OwnedFd>,
    call: Option<Arc<OwnedFd>>,
    broken: bool,
    /// Whether the driver was asked to kick for new buffers (a fresh
    /// ring's flags say it is).
    kicks: bool,
}

/// Requests taken from the ring per loop turn (so the fabric is not starved).
const BATCH: usize = 64;

/// The device's engine thread.
pub struct Device {
    shared: Arc<Shared>,
    engine: Engine,
    dma: GuestDma,
    fabric: Fabric,
    queues: [Option<Queue>; QUEUES],
    seen: u64,
    pending: VecDeque<Completion>,
    start: Instant,
    rank: u16,
    verbose: bool,
    /// Where lone small WRITEs' round trips go (the exit summary).
    pub shares: Shares,
    /// When the loop last woke up.
    woke: Instant,
}

impl Device {
    /// The engine thread of node `rank`.
    pub fn new(
        shared: Arc<Shared>,
        engine: Engine,
        fabric: Fabric,
        rank: u16,
        verbose: bool,
    ) -> Self {
        let dma = GuestDma::new(shared.tr.clone(), None, shared.stats.clone(), verbose, rank);
        Self {
            shared,
            engine,
            dma,
            fabric,
            queues: [None, None],
            seen: u64::MAX,
            pending: VecDeque::new(),
            start: Instant::now(),
            rank,
            verbose,
            shares: Shares::default(),
            woke: Instant::now(),
        }
    }

    fn now(&self) -> u64 {
        self.start.elapsed().as_micros() as u64
    }

    /// Runs until QEMU hangs up.
    pub fn run(&mut self) {
        while !self.shared.done.load(Ordering::Acquire) {
            self.refresh();
            let mut fds = vec![self.shared.wake.as_raw_fd(), self.fabric.fd()];
            let mut queue_of = vec![None, None];
            for (i, q) in self.queues.iter().enumerate() {
                if let Some(q) = q {
                    fds.push(q.kick.as_raw_fd());
                    queue_of.push(Some(i));
                }
            }
            let timeout = if self.engine.busy() { 2 } else { 100 };
            let ready = match sys::poll_readable(&fds, timeout) {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("rdma-engine {}: poll failed: {e}", self.rank);
                    return;
                }
            };
            self.woke = Instant::now();
            self.shared.stats.wakes.fetch_add(1, Ordering::Relaxed);
            let mut packets = false;
            for ((fd, r), queue) in fds.iter().zip(&ready).zip(&queue_of) {
                if *fd == self.fabric.fd() {
                    packets = *r;
                } else if *r && sys::eventfd_drain(*fd) {
                    if let Some(i) = queue {
                        self.shared.stats.kicks[*i].fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            self.turn(packets);
        }
    }

    /// One pass over every source of work; `packets`: poll found the
    /// fabric socket readable (else receiving would only find it empty).
    fn turn(&mut self, packets: bool) {
        if packets {
            self.receive();
        }
        self.take_requests();
        let now = self.now();
        self.engine.tick(&mut self.dma, now);
        self.flush_datagrams();
        self.pending.extend(self.engine.take_completions());
        self.deliver_completions();
    }

    /// Takes what the fabric socket holds, a batch at a time, acknowledging
    /// batch by batch.
    fn receive(&mut self) {
        let now = self.now();
        loop {
            let n = self.fabric.recv_batch();
            self.shared
                .stats
                .packets_in
                .fetch_add(n as u64, Ordering::Relaxed);
            self.shared.stats.receives.fetch_add(1, Ordering::Relaxed);
            if n == 0 {
                self.shared
                    .stats
                    .empty_receives
                    .fetch_add(1, Ordering::Relaxed);
            } else {
                self.shares.received(self.woke);
            }
            // A lone packet answered by a lone packet: a latency probe.
            let answered = n == 1;
            for i in 0..n {
                let (path, d) = self.fabric.received(i);
                self.engine.on_datagram(path, d, &mut self.dma, now);
            }
            self.engine.acknowledge_batch();
            // Acknowledgements go out batch by batch: a sender that waits
            // for them (rxe stops at 128 unacknowledged PSNs) must not wait
            // until a steady stream has drained the socket.
            if self.flush_datagrams() == 1 && answered {
                self.shares.answered(self.woke);
            }
            if !self.fabric.more() {
                break;
            }
        }
    }

    /// Hands the engine's packets to the kernel; how many there were.
    fn flush_datagrams(&mut self) -> usize {
        let out = self.engine.take_packets();
        let n = out.len();
        self.shared
            .stats
            .packets_out
            .fetch_add(out.len() as u64, Ordering::Relaxed);
        for (peer, d) in out {
            if let Some(dst) = self.engine.peer_addr(peer) {
                self.fabric.send(dst, d);
            }
        }
        self.fabric.flush();
        n
    }

    /// Picks up what the frontend thread changed.
    fn refresh(&mut self) {
        let gen = self.shared.generation.load(Ordering::Acquire);
        if gen == self.seen {
            return;
        }
        self.seen = gen;
        if let Some(sock) = self
            .shared
            .backend
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            match MissChannel::new(sock) {
                Ok(ch) => self.dma.set_channel(Some(ch)),
                Err(e) => eprintln!("rdma-engine {}: backend channel unusable: {e}", self.rank),
            }
        }
        let cfgs: [QueueConfig; QUEUES] = self
            .shared
            .queues
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        for (i, cfg) in cfgs.iter().enumerate() {
            if !cfg.ready() {
                if self.queues[i].take().is_some() {
                    log(self.rank, self.verbose, &format!("queue {i} stopped"));
                }
                continue;
            }
            let (Some(addr), Some(kick)) = (cfg.addr, cfg.kick.clone()) else {
                continue;
            };
            match &mut self.queues[i] {
                Some(q) if q.layout == cfg.layout => {
                    q.kick = kick;
                    q.call = cfg.call.clone();
                }
                slot => {
                    match SplitRing::new(cfg.size, addr.desc, addr.avail, addr.used, cfg.base) {
                        Ok(ring) => {
                            log(
                            self.rank,
                            self.verbose,
                            &format!(
                                "queue {i} running: {} entries, desc {:#x} avail {:#x} used {:#x} (IOVAs)",
                                cfg.size, addr.desc, addr.avail, addr.used
                            ),
                        );
                            *slot = Some(Queue {
                                ring,
                                layout: cfg.layout,
                                kick,
                                call: cfg.call.clone(),
                                broken: false,
                                kicks: true,
                            });
                        }
                        Err(e) => eprintln!("rdma-engine {}: queue {i} refused: {e:?}", self.rank),
                    }
                }
            }
        }
    }

    fn publish(&self, i: usize) {
        if let Some(q) = &self.queues[i] {
            self.shared.next_avail[i]
                .store(0x1_0000 | u32::from(q.ring.next_avail()), Ordering::Release);
        }
    }

    fn interrupt(&mut self, i: usize) {
        if let Some(q) = &self.queues[i] {
            if let Some(call) = &q.call {
                if q.ring.wants_interrupt(&mut self.dma) {
                    let _ = sys::eventfd_signal(call.as_raw_fd());
                    self.shared.stats.interrupts[i].fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }

    fn ring_error(&mut self, i: usize, e: RingError) {
        eprintln!(
            "rdma-engine {}: queue {i}: bad ring access ({e:?}); the buffer is dropped",
            self.rank
        );
        if let (RingError::Fault(_), Some(q)) = (e, self.queues[i].as_mut()) {
            // The ring itself is not translatable: wait for the next kick.
            q.broken = true;
        }
    }

    /// Takes work requests from the request queue.
    fn take_requests(&mut self) {
        let i = REQUEST_QUEUE as usize;
        let mut used = false;
        for _ in 0..BATCH {
            let Some(q) = self.queues[i].as_mut() else {
                break;
            };
            q.broken = false;
            let chain = match q.ring.pop(&mut self.dma) {
                Ok(Some(c)) => c,
                Ok(None) => break,
                Err(e) => {
                    self.ring_error(i, e);
                    break;
                }
            };
            self.publish(i);
            let msg = chain.read(&mut self.dma, NET_HDR_SIZE + WR_SIZE);
            if let Some(q) = self.queues[i].as_mut() {
                if let Err(e) = q.ring.push(&mut self.dma, chain.head, 0) {
                    self.ring_error(i, e);
                    break;
                }
                used = true;
            }
            let wr = match msg {
                Ok(m) => WorkRequest::decode(m.get(NET_HDR_SIZE..).unwrap_or(&[])),
                Err(e) => {
                    self.ring_error(i, e);
                    continue;
                }
            };
            let Some(wr) = wr else {
                eprintln!("rdma-engine {}: a request buffer shorter than header + work request was dropped", self.rank);
                continue;
            };
            self.shared.stats.wrs.fetch_add(1, Ordering::Relaxed);
            log(self.rank, self.verbose, &format!("WR {:?}", wr));
            let now = self.now();
            self.engine.post(wr, &mut self.dma, now);
            let sent = self.flush_datagrams();
            if sent > 0 && wr.opcode == Opcode::Write as u8 && wr.len <= SMALL {
                self.shares.posted(self.woke);
            }
        }
        if used {
            self.interrupt(i);
        }
    }

    /// Writes held completions into receive buffers while there are some;
    /// asks the driver to kick for new buffers only while completions wait
    /// for one (else its kick after every completion it takes would wake
    /// this loop for nothing).
    fn deliver_completions(&mut self) {
        self.fill_completions();
        let i = COMPLETION_QUEUE as usize;
        let want = !self.pending.is_empty();
        let Some(q) = self.queues[i].as_mut() else {
            return;
        };
        if q.kicks == want {
            return;
        }
        q.kicks = want;
        if let Err(e) = q.ring.set_kicks(&mut self.dma, want) {
            self.ring_error(i, e);
            return;
        }
        if want {
            // A buffer given back before the driver saw the request.
            self.fill_completions();
        }
    }

    fn fill_completions(&mut self) {
        let i = COMPLETION_QUEUE as usize;
        let mut used = false;
        while let Some(c) = self.pending.front().copied() {
            let Some(q) = self.queues[i].as_mut() else {
                break;
            };
            let chain = match q.ring.pop(&mut self.dma) {
                Ok(Some(ch)) => ch,
                Ok(None) => break,
                Err(e) => {
                    self.ring_error(i, e);
                    break;
                }
            };
            self.publish(i);
            let mut buf = vec![0u8; NET_HDR_SIZE];
            buf.extend_from_slice(&c.encode());
            let written = match chain.write(&mut self.dma, &buf) {
                Ok(n) => n,
                Err(e) => {
                    self.ring_error(i, e);
                    0
                }
            };
            if let Some(q) = self.queues[i].as_mut() {
                if let Err(e) = q.ring.push(&mut self.dma, chain.head, written) {
                    self.ring_error(i, e);
                    break;
                }
                used = true;
            }
            if written as usize == buf.len() {
                log(self.rank, self.verbose, &format!("completion {:?}", c));
                self.shared
                    .stats
                    .completions
                    .fetch_add(1, Ordering::Relaxed);
                self.pending.pop_front();
            }
        }
        if used {
            self.interrupt(i);
            self.shares.interrupted();
        }
    }

    /// The engine's counters, for the exit summary.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }
}
