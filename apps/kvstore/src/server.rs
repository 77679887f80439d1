//! The guest side: smoltcp TCP connections on port 6379, one
//! [`Session`] each, one command engine for all, the log on NVMe.
//!
//! ```text
//!  loop:  receive frames ──► collect handshakes (listeners refilled per frame)
//!         ──► visit the connections whose wakers fired: read, execute
//!         ──► flush the log (appendfsync) ──► release replies held for it
//!         ──► a step of its rewrite, if due
//!         ──► queue replies ──► transmit (each reply carries the ACK of
//!             its request) ──► sleep in WFI until the NIC's interrupt,
//!             smoltcp's next timer, the log's flush or the expiry tick
//! ```
//!
//! Nothing is acknowledged that the log does not have. Under
//! `appendfsync always` a write's reply is held in its session until the
//! flush that makes its record durable; if the flush fails, the reply
//! becomes a `-MISCONF` error. Once the log cannot be written — full, or
//! the disk failed — write commands are refused with `-MISCONF` and reads
//! go on ([`LogFailure`]): a full log asks for a rewrite at once, a disk
//! error is retried every second, and either ends when a flush or a
//! rewrite succeeds.
//!
//! Connections live in slots; a closed connection's socket leaves the
//! socket set (its buffers are freed) and its slot is reused.
//!
//! A script that runs past `busy-reply-threshold` calls back into the
//! server ([`BusyServer`], see `kvstore::busy`): the network and the
//! connection table are shared with it ([`Io`]), and the connection whose
//! command runs the script is out of the table while its commands run, so
//! the callback reads and answers only the others (`-BUSY`, `SCRIPT
//! KILL`, ...).

extern crate alloc;

use alloc::boxed::Box;
use alloc::rc::Rc;
use alloc::string::ToString;
use alloc::vec::Vec;
use core::cell::RefCell;
use core::time::Duration;
use kvstore::aof;
use kvstore::commands::Engine;
use kvstore::config::Config;
use kvstore::resp::Reply;
use kvstore::session::{Logged, Session};
use libos::net::smoltcp::iface::SocketHandle;
use libos::net::smoltcp::socket::tcp;
use libos::net::Net;
use libos::println;
use libos::time::{self, Instant};

use crate::disklog::DiskLog;
use crate::listen::Listeners;
use kvstore::aof::RewritePace;
use kvstore::ready::{Ready, Wakers};

/// Replies kept per connection before the server stops executing its
/// requests (and so stops reading from it).
const OUTPUT_LIMIT: usize = 1 << 20;
/// How often expired keys are swept, and how many keys a sweep examines.
const EXPIRE_EVERY: Duration = Duration::from_millis(100);
const EXPIRE_BUDGET: usize = 20;
/// How long a closing connection may wait for the peer's FIN or ACK.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(10);
/// A log flush slower than this is reported on the console.
const SLOW_FLUSH: Duration = Duration::from_millis(500);
/// Longest a pass of the loop spends on a log rewrite.
const REWRITE_STEP: Duration = Duration::from_millis(2);
/// Longest sleep when nothing else bounds it.
const IDLE_SLEEP: Duration = Duration::from_secs(1);
/// How often a log that failed to write is tried again.
const RETRY_LOG: Duration = Duration::from_secs(1);

/// Why the log cannot be written now, and what ends that.
enum LogFailure {
    /// Records did not fit: a rewrite to the live data can make room.
    Full,
    /// A write to the disk failed: trying again may succeed.
    Disk {
        /// When it was last tried.
        tried: Instant,
    },
}

fn now_ms() -> u64 {
    time::unix_time_ms()
}

/// One client connection.
struct Conn {
    handle: SocketHandle,
    session: Session,
    wakers: Wakers,
    /// Counted in `connected_clients` (a refused connection is not).
    client: bool,
    /// `close()` was called; the socket finishes the TCP close.
    fin_sent: bool,
}

/// The network and the connections, shared with the [`BusyServer`] the
/// engine calls while a script is busy.
struct Io {
    net: Net,
    conns: Vec<Option<Conn>>,
}

impl Io {
    /// The slot of the client connection whose engine id is `client`.
    fn slot_of(&self, client: u64) -> Option<usize> {
        self.conns.iter().position(|c| {
            c.as_ref()
                .is_some_and(|c| c.client && c.session.client().id() == client)
        })
    }
}

/// What answers the other clients while a script is busy (see
/// `kvstore::busy`): reads what they sent, answers each request without
/// running it, and sends the replies. New connections wait for the
/// script's end.
struct BusyServer {
    io: Rc<RefCell<Io>>,
}

impl kvstore::busy::BusyPoll for BusyServer {
    fn poll(&mut self, script: &mut kvstore::busy::BusyScript) {
        let Ok(mut io) = self.io.try_borrow_mut() else {
            return;
        };
        let io = &mut *io;
        io.net.receive(|_| {});
        for conn in io.conns.iter_mut().flatten() {
            if !conn.client || conn.fin_sent {
                continue;
            }
            let socket = io.net.sockets.get_mut::<tcp::Socket>(conn.handle);
            while conn.session.wants_input() && socket.can_recv() {
                let session = &mut conn.session;
                let _ = socket.recv(|data| {
                    session.feed(data);
                    (data.len(), ())
                });
                conn.session
                    .run_busy(|client, args| kvstore::busy::answer_client(script, client, args));
            }
            if socket.can_send() {
                send_output(socket, &mut conn.session);
            }
            if conn.session.has_output() {
                socket.register_send_waker(&conn.wakers.send);
            }
            socket.register_recv_waker(&conn.wakers.receive);
        }
        io.net.transmit();
    }
}

/// Everything the loop works on.
pub struct Server {
    io: Rc<RefCell<Io>>,
    engine: Engine,
    log: Option<DiskLog>,
    listeners: Listeners,
    free: Vec<usize>,
    ready: Ready,
    /// Slots with replies to send once the log is flushed.
    replied: Vec<usize>,
    /// Slots whose sessions hold replies for the log.
    holding: Vec<usize>,
    /// Slots whose sessions hold a command for a `CLIENT PAUSE` to end.
    paused: Vec<usize>,
    /// Set while the log cannot be written.
    log_failure: Option<LogFailure>,
    /// The host's stop request (SIGINT/SIGTERM) was acted on.
    stop_tried: bool,
    next_id: u64,
    last_expire: Instant,
    /// The log rewrite in progress (its scan is the engine's): when it
    /// started and the log's size then.
    rewrite: Option<(Instant, u64)>,
    /// How much of the core the rewrite takes.
    pace: RewritePace,
}

impl Server {
    /// A server listening on `config.port`, with the dataset already
    /// loaded into `engine` from `log`.
    pub fn new(mut net: Net, mut engine: Engine, log: Option<DiskLog>) -> Server {
        let port = engine.config().port;
        let listeners = Listeners::new(&mut net.sockets, port);
        let io = Rc::new(RefCell::new(Io {
            net,
            conns: Vec::new(),
        }));
        engine.set_busy_poll(Box::new(BusyServer { io: Rc::clone(&io) }));
        Server {
            io,
            engine,
            log,
            listeners,
            free: Vec::new(),
            ready: Ready::default(),
            replied: Vec::new(),
            holding: Vec::new(),
            paused: Vec::new(),
            log_failure: None,
            stop_tried: false,
            next_id: 1,
            last_expire: time::now(),
            rewrite: None,
            pace: RewritePace::new(REWRITE_STEP),
        }
    }

    /// Serves forever.
    pub fn run(mut self) -> ! {
        let mut visiting = Vec::new();
        loop {
            let pass = time::now();
            let listeners = &mut self.listeners;
            self.io
                .borrow_mut()
                .net
                .receive(|sockets| listeners.refill(sockets));
            self.engine.stats_mut().used_cpu_us = time::busy_time().as_micros() as u64;
            self.accept();
            {
                let io = self.io.borrow();
                self.ready.take(&mut visiting, |slot| {
                    let conn = io.conns.get(slot)?.as_ref()?;
                    Some(conn.session.client().id())
                });
            }
            for &slot in &visiting {
                self.visit(slot);
            }
            self.resume_paused();
            self.deliver_messages();
            self.engine.unblock_timed_out(now_ms());
            self.deliver_unblocked();
            // After the unblocked clients' answers, which Redis sends
            // before the invalidations their commands caused.
            self.deliver_invalidations();
            self.kill_clients();
            if let Some(force) = self.engine.take_shutdown() {
                self.shutdown(force);
            }
            self.expire();
            self.flush_log();
            for slot in core::mem::take(&mut self.replied) {
                self.send(slot);
            }
            // Replies leave with the acknowledgement of their requests.
            self.io.borrow_mut().net.transmit();
            // After the replies left: the clients work meanwhile.
            let urgent = self.log.as_ref().is_some_and(DiskLog::nearly_full);
            let now = time::now().since_boot();
            let budget = self
                .pace
                .budget(now, pass.elapsed(), !visiting.is_empty(), urgent);
            self.compact_log(budget);
            if !self.ready.is_empty() || (self.rewrite.is_some() && !budget.is_zero()) {
                // Requests wait that were not read yet; a rewrite takes its
                // next step.
                continue;
            }
            let slept = time::now();
            self.sleep();
            if self.rewrite.is_some() {
                self.pace.slept(slept.elapsed());
            }
        }
    }

    /// `SHUTDOWN`: makes the log durable and stops the machine (status 0).
    /// If the log cannot be flushed the server goes on, and the client gets
    /// the error its command queued, unless `force`.
    fn shutdown(&mut self, force: bool) {
        let flushed = match self.log.as_mut() {
            Some(log) if log.dirty() => log.flush().map(|()| log.durable_bytes()),
            Some(log) => Ok(log.durable_bytes()),
            None => Ok(0),
        };
        match flushed {
            Ok(bytes) => {
                println!("kvstore: shutting down: the log is durable ({bytes} bytes); bye");
                libos::exit(0)
            }
            Err(e) if force => {
                println!(
                    "kvstore: shutting down (FORCE) although the log could not be flushed: {e}"
                );
                libos::exit(0)
            }
            Err(e) => {
                println!("kvstore: SHUTDOWN refused: the log could not be flushed: {e}");
                self.engine.log_write_failed(&e);
                self.log_failure = Some(LogFailure::Disk { tried: time::now() });
            }
        }
    }

    /// Sleeps in WFI until the NIC interrupts or the earliest deadline.
    fn sleep(&mut self) {
        let now = time::now();
        let delay = self.io.borrow_mut().net.poll_delay();
        let mut limit = delay.unwrap_or(IDLE_SLEEP).min(IDLE_SLEEP);
        let expire_at = self.last_expire.after(EXPIRE_EVERY);
        limit = limit.min(expire_at.duration_since(now));
        if let Some(at) = self.log.as_ref().and_then(|l| l.flush_deadline()) {
            limit = limit.min(at.duration_since(now));
        }
        if self.rewrite.is_some() {
            // A rewrite waiting for its share: it takes whole steps once
            // the server counts as idle.
            limit = limit.min(self.pace.until_idle(now.since_boot()));
        }
        if let Some(at) = self.engine.pause_deadline(now_ms()) {
            // The end of a CLIENT PAUSE: what waited runs then.
            limit = limit.min(Duration::from_millis(at.saturating_sub(now_ms())));
        }
        if let Some(at) = self.engine.next_block_deadline() {
            // A blocked client's timeout (on the Unix clock, in ms).
            limit = limit.min(Duration::from_millis(at.saturating_sub(now_ms())));
        }
        if !limit.is_zero() {
            self.io.borrow().net.wait(limit);
        }
    }

    /// Turns completed handshakes into connections; drops failed ones.
    fn accept(&mut self) {
        let mut i = 0;
        while i < self.listeners.handshakes.len() {
            let handle = self.listeners.handshakes[i];
            let state = self
                .io
                .borrow()
                .net
                .sockets
                .get::<tcp::Socket>(handle)
                .state();
            match state {
                tcp::State::SynReceived => i += 1,
                tcp::State::Established | tcp::State::CloseWait => {
                    self.listeners.handshakes.swap_remove(i);
                    self.open(handle);
                }
                // Reset during the handshake (smoltcp returns the socket to
                // LISTEN), timed out, or anything else unexpected.
                _ => {
                    self.listeners.handshakes.swap_remove(i);
                    self.io.borrow_mut().net.sockets.remove(handle);
                }
            }
        }
        self.listeners.refill(&mut self.io.borrow_mut().net.sockets);
    }

    fn open(&mut self, handle: SocketHandle) {
        let mut io = self.io.borrow_mut();
        let io = &mut *io;
        let slot = self.free.pop().unwrap_or_else(|| {
            io.conns.push(None);
            io.conns.len() - 1
        });
        let stats = self.engine.stats_mut();
        let client = stats.connected_clients < self.engine.config().maxclients;
        let mut session = if client {
            let stats = self.engine.stats_mut();
            stats.connected_clients += 1;
            stats.total_connections_received += 1;
            self.next_id += 1;
            let addr = io
                .net
                .sockets
                .get::<tcp::Socket>(handle)
                .remote_endpoint()
                .map(|e| alloc::format!("{}:{}", e.addr, e.port))
                .unwrap_or_default();
            self.engine
                .client_connected(self.next_id - 1, addr, now_ms());
            Session::new(self.next_id - 1, self.engine.config(), OUTPUT_LIMIT)
        } else {
            self.engine.stats_mut().rejected_connections += 1;
            Session::refuse(&Reply::error("ERR max number of clients reached"))
        };
        let socket = io.net.sockets.get_mut::<tcp::Socket>(handle);
        socket.set_timeout(None);
        session.touch(now_ms());
        let id = session.client().id();
        io.conns[slot] = Some(Conn {
            handle,
            session,
            wakers: self.ready.wakers(slot, id),
            client,
            fin_sent: false,
        });
        // Requests may have arrived with the handshake's last ACK.
        self.ready.push(slot, id);
    }

    /// Once no `CLIENT PAUSE` holds, runs again the sessions whose
    /// commands waited for it.
    fn resume_paused(&mut self) {
        if self.paused.is_empty() || self.engine.pause_deadline(now_ms()).is_some() {
            return;
        }
        let io = self.io.borrow();
        for slot in core::mem::take(&mut self.paused) {
            if let Some(conn) = io.conns.get(slot).and_then(Option::as_ref) {
                if conn.session.is_paused() {
                    self.ready.push(slot, conn.session.client().id());
                }
            }
        }
    }

    /// Closes the connections `CLIENT KILL` named (see [`hang_up`](Self::hang_up)).
    fn kill_clients(&mut self) {
        for id in self.engine.take_kills() {
            let slot = self.io.borrow().slot_of(id);
            if let Some(slot) = slot {
                self.hang_up(slot);
            }
        }
    }

    /// Closes the connections idle past `timeout` (`CONFIG SET timeout`;
    /// see [`Session::idle_past`]), as Redis does: without a word.
    fn close_idle(&mut self) {
        let timeout = self.engine.config().timeout;
        if timeout == 0 {
            return;
        }
        let now = now_ms();
        let slots = self.io.borrow().conns.len();
        for slot in 0..slots {
            let idle = self.io.borrow().conns[slot]
                .as_ref()
                .is_some_and(|c| c.client && c.session.idle_past(timeout, now));
            if idle {
                self.hang_up(slot);
            }
        }
    }

    /// Closes a client's connection at once: its unsent replies are
    /// dropped and a FIN goes out, so that even an idle client (a
    /// subscriber waiting for messages) reads the end of the stream. The
    /// socket stays in the set until the close completes (`visit` removes
    /// it then, as after `QUIT`): removing it at once would drop what it
    /// still has to send. For the engine the client is gone now (not
    /// listed, no more messages).
    fn hang_up(&mut self, slot: usize) {
        let mut io = self.io.borrow_mut();
        let io = &mut *io;
        let Some(conn) = io.conns[slot].as_mut().filter(|c| c.client) else {
            return;
        };
        let id = conn.session.client().id();
        conn.session.discard_output();
        conn.session.input_ended();
        let socket = io.net.sockets.get_mut::<tcp::Socket>(conn.handle);
        socket.close();
        socket.set_timeout(Some(CLOSE_TIMEOUT.into()));
        socket.register_recv_waker(&conn.wakers.receive);
        conn.fin_sent = true;
        conn.client = false;
        self.engine.client_gone(id);
        self.engine.stats_mut().connected_clients -= 1;
    }

    /// Appends what `PUBLISH` left for each subscriber to its output.
    fn deliver_messages(&mut self) {
        let messages = self.engine.take_messages();
        let mut io = self.io.borrow_mut();
        for (client, message) in messages {
            let Some(slot) = io.slot_of(client) else {
                continue;
            };
            if let Some(conn) = io.conns[slot].as_mut() {
                conn.session.push_message(&message);
                self.replied.push(slot);
            }
        }
    }

    /// Hands the client-side caching messages (`CLIENT TRACKING`) to the
    /// sessions of their targets, which encode them for their protocol.
    fn deliver_invalidations(&mut self) {
        let pushes = self.engine.take_invalidations();
        if pushes.is_empty() {
            return;
        }
        let mut io = self.io.borrow_mut();
        for (client, push) in pushes {
            let Some(slot) = io.slot_of(client) else {
                continue;
            };
            if let Some(conn) = io.conns[slot].as_mut() {
                conn.session.push_tracking(&push);
                self.replied.push(slot);
            }
        }
    }

    /// Hands the engine's answers to blocked clients (served, timed out,
    /// `CLIENT UNBLOCK`) to their sessions, and runs what they pipelined
    /// behind the blocking command. Under `appendfsync always` an answer
    /// waits for the log to be durable up to its end: a served command's
    /// records were appended with the command that served it.
    fn deliver_unblocked(&mut self) {
        let unblocked = self.engine.take_unblocked();
        if unblocked.is_empty() {
            return;
        }
        let hold = match (&self.log, self.engine.config().appendfsync) {
            (Some(log), aof::AppendFsync::Always) => Some(log.end()),
            _ => None,
        };
        let mut io = self.io.borrow_mut();
        for (client, reply) in unblocked {
            let Some(slot) = io.slot_of(client) else {
                continue;
            };
            if let Some(conn) = io.conns[slot].as_mut() {
                conn.session.unblock(&reply, hold);
                // It is answered now: its idle time starts here, not when
                // it blocked (or `timeout` would close it before the
                // answer leaves).
                conn.session.touch(now_ms());
                if conn.session.is_holding() && !self.holding.contains(&slot) {
                    self.holding.push(slot);
                }
                self.replied.push(slot);
                self.ready.push(slot, client);
            }
        }
    }

    fn close(&mut self, slot: usize) {
        let mut io = self.io.borrow_mut();
        if let Some(conn) = io.conns[slot].take() {
            self.engine.client_gone(conn.session.client().id());
            io.net.sockets.remove(conn.handle);
            if conn.client {
                self.engine.stats_mut().connected_clients -= 1;
            }
            self.free.push(slot);
        }
    }

    /// Reads and executes what a woken connection sent. The connection is
    /// out of the table while its commands run (see [`BusyServer`]).
    fn visit(&mut self, slot: usize) {
        let conn = {
            let mut io = self.io.borrow_mut();
            let io = &mut *io;
            let Some(conn) = io.conns.get_mut(slot).and_then(Option::as_mut) else {
                return; // woken after it closed
            };
            let socket = io.net.sockets.get_mut::<tcp::Socket>(conn.handle);
            if socket.is_open() && conn.fin_sent {
                socket.register_recv_waker(&conn.wakers.receive);
                return;
            }
            if socket.is_open() {
                io.conns[slot].take()
            } else {
                None
            }
        };
        let Some(mut conn) = conn else {
            self.close(slot);
            return;
        };
        let now = now_ms();
        let (engine, log) = (&mut self.engine, &mut self.log);
        let hold = engine.config().appendfsync == aof::AppendFsync::Always;
        let mut full = None;
        loop {
            conn.session.run(engine, now, |effects| {
                let Some(log) = log.as_mut() else {
                    return Logged::Answer;
                };
                match log.append(effects) {
                    Ok(end) if hold => Logged::HoldUntil(end),
                    Ok(_) => Logged::Answer,
                    Err(e) => {
                        let reply = kvstore::commands::misconf(&e.to_string());
                        full = Some(e);
                        Logged::Refuse(reply)
                    }
                }
            });
            if !conn.session.wants_input() {
                break;
            }
            let mut io = self.io.borrow_mut();
            let socket = io.net.sockets.get_mut::<tcp::Socket>(conn.handle);
            if !socket.can_recv() {
                break;
            }
            let session = &mut conn.session;
            let read = socket
                .recv(|data| {
                    session.feed(data);
                    (data.len(), data.len())
                })
                .unwrap_or(0);
            drop(io);
            engine.stats_mut().total_net_input_bytes += read as u64;
            if read > 0 {
                conn.session.touch(now_ms());
            }
        }
        {
            let mut io = self.io.borrow_mut();
            let io = &mut *io;
            let socket = io.net.sockets.get_mut::<tcp::Socket>(conn.handle);
            if !socket.may_recv() && !socket.can_recv() {
                conn.session.input_ended();
            }
            if conn.session.has_output() || conn.session.done() {
                self.replied.push(slot);
            }
            if conn.session.is_holding() && !self.holding.contains(&slot) {
                self.holding.push(slot);
            }
            if conn.session.is_paused() && !self.paused.contains(&slot) {
                self.paused.push(slot);
            }
            socket.register_recv_waker(&conn.wakers.receive);
            io.conns[slot] = Some(conn);
        }
        if let Some(e) = full {
            self.log_full(&e);
        }
    }

    /// Records did not fit the log: refuse writes, and rewrite the log to
    /// the live data to make room.
    fn log_full(&mut self, e: &crate::disklog::LogFull) {
        if self.log_failure.is_none() {
            println!(
                "kvstore: {e}; write commands are refused (-MISCONF) while a log rewrite makes room; if the live data does not fit either, restart on a bigger disk (./run-qemu.sh kvstore --disk-size SIZE)"
            );
        }
        self.engine.log_write_failed(&e.to_string());
        self.engine.schedule_aof_rewrite();
        self.log_failure = Some(LogFailure::Full);
    }

    /// The log is written again: accept writes.
    fn log_recovered(&mut self, how: &str) {
        if self.log_failure.take().is_some() {
            println!("kvstore: {how}; write commands are accepted again");
        }
        self.engine.log_write_recovered();
    }

    /// Sends the replies the log no longer holds back: every session's up
    /// to `durable`, and with `failed` the rest as the log's error.
    fn release_held(&mut self, durable: u64, failed: bool) {
        let error = self.engine.log_error_reply();
        self.replied.extend_from_slice(&self.holding);
        let mut io = self.io.borrow_mut();
        self.holding.retain(|&slot| {
            let Some(conn) = io.conns.get_mut(slot).and_then(Option::as_mut) else {
                return false;
            };
            match failed {
                true => conn.session.not_durable(durable, &error),
                false => conn.session.durable(durable),
            }
            conn.session.is_holding()
        });
    }

    /// Queues what fits of a connection's replies in its socket; closes
    /// it once it is done.
    fn send(&mut self, slot: usize) {
        let mut io = self.io.borrow_mut();
        let io = &mut *io;
        let Some(conn) = io.conns.get_mut(slot).and_then(Option::as_mut) else {
            return;
        };
        let socket = io.net.sockets.get_mut::<tcp::Socket>(conn.handle);
        let paused = !conn.session.wants_input();
        if socket.can_send() {
            let sent = send_output(socket, &mut conn.session);
            self.engine.stats_mut().total_net_output_bytes += sent as u64;
            if sent > 0 {
                conn.session.touch(now_ms());
            }
        }
        if conn.session.has_output() {
            if socket.may_send() {
                socket.register_send_waker(&conn.wakers.send);
            } else {
                conn.session.discard_output(); // nobody left to read it
            }
        }
        if conn.session.done() && !conn.fin_sent {
            socket.close();
            socket.set_timeout(Some(CLOSE_TIMEOUT.into()));
            conn.fin_sent = true;
            if conn.client {
                // Gone for the engine now, as in Redis once the last reply
                // is written (a client redirecting its invalidations here
                // is told at once), not when the TCP close completes.
                conn.client = false;
                self.engine.client_gone(conn.session.client().id());
                self.engine.stats_mut().connected_clients -= 1;
            }
            socket.register_recv_waker(&conn.wakers.receive);
            return;
        }
        if paused && conn.session.wants_input() {
            // Requests were left waiting for room in the output.
            self.ready.push(slot, conn.session.client().id());
        }
    }

    fn expire(&mut self) {
        if self.last_expire.elapsed() < EXPIRE_EVERY {
            return;
        }
        self.last_expire = time::now();
        if !self.stop_tried && libos::console::stop_requested() {
            // SIGINT or SIGTERM to run-qemu.sh: as SHUTDOWN (once: if the
            // log cannot be flushed, the host kills QEMU after its grace).
            self.stop_tried = true;
            println!("kvstore: the host asks to stop");
            self.shutdown(false);
        }
        self.close_idle();
        let deleted = self.engine.active_expire(now_ms(), EXPIRE_BUDGET);
        if let Some(Err(e)) = self.log.as_mut().map(|log| log.append(&deleted)) {
            self.log_full(&e);
        }
        // Clients blocked in the consumer group of a stream that expired.
        self.deliver_unblocked();
        // Clients caching keys that expired.
        self.deliver_invalidations();
    }

    /// Flushes the log when the policy says so (following `CONFIG SET
    /// appendfsync`), then releases the replies that waited for it.
    /// Replies to writes leave only after this under appendfsync always,
    /// so no acknowledged write can be lost.
    fn flush_log(&mut self) {
        let Some(log) = self.log.as_mut() else {
            return;
        };
        log.set_fsync(self.engine.config().appendfsync);
        let retry = match &self.log_failure {
            Some(LogFailure::Disk { tried }) => tried.elapsed() >= RETRY_LOG,
            // What fitted before the log filled is flushed as usual.
            Some(LogFailure::Full) | None => log.flush_due(),
        };
        if retry && log.dirty() {
            let started = time::now();
            let before = log.durable_bytes();
            let result = log.flush();
            let took = started.elapsed();
            if took >= SLOW_FLUSH {
                // Like Redis's warning about a slow fsync: clients waited.
                println!(
                    "kvstore: log flush of {} bytes took {} ms",
                    log.durable_bytes().saturating_sub(before),
                    took.as_millis()
                );
            }
            self.engine.stats_mut().aof_current_size = log.durable_bytes();
            match result {
                Ok(()) if matches!(self.log_failure, Some(LogFailure::Disk { .. })) => {
                    self.log_recovered("the log was written again")
                }
                Ok(()) => {}
                Err(e) => {
                    if self.log_failure.is_none() {
                        println!(
                            "kvstore: log write failed: {e}; write commands are refused (-MISCONF) and the write is tried again every second"
                        );
                    }
                    self.engine.log_write_failed(&e);
                    self.log_failure = Some(LogFailure::Disk { tried: time::now() });
                }
            }
        }
        if !self.holding.is_empty() {
            let durable = self.log.as_ref().map_or(u64::MAX, |l| l.durable_bytes());
            self.release_held(durable, self.log_failure.is_some());
        }
    }

    /// Rewrites the log from the live data when `BGREWRITEAOF` asked or it
    /// outgrew the `auto-aof-rewrite-*` rule: one step of at most `budget`
    /// (and at least one batch of keys; none for a zero budget) per pass of
    /// the loop, so clients are served while it runs (see [`RewritePace`]).
    fn compact_log(&mut self, budget: Duration) {
        if self.rewrite.is_none() {
            if !self.engine.aof_rewrite_wanted() {
                return;
            }
            self.engine.aof_rewrite_started(now_ms());
            let started = match self.log.as_mut() {
                Some(log) => log.start_rewrite(),
                None => Err("persistence is off".into()),
            };
            if let Err(e) = started {
                println!("kvstore: log rewrite failed: {e}");
                self.engine.aof_rewrite_finished(None, 0);
                return;
            }
            let before = self.engine.stats().aof_current_size;
            self.rewrite = Some((time::now(), before));
        }
        let (Some((started, before)), Some(log)) = (self.rewrite, self.log.as_mut()) else {
            // Persistence went off mid-rewrite.
            self.rewrite = None;
            self.engine.aof_rewrite_finished(None, 0);
            return;
        };
        if budget.is_zero() {
            return;
        }
        let step = time::now();
        let stepped = loop {
            // The records go straight into the new log's buffer, a large
            // key a record at a time.
            let done = match log.rewrite_buf() {
                Some(new_log) => self.engine.aof_rewrite_step(64, new_log),
                None => true,
            };
            if let Err(e) = log.rewrite_checked() {
                break Err(e);
            }
            if done {
                break Ok(true);
            }
            if step.elapsed() >= budget {
                break Ok(false);
            }
        };
        self.pace.spent(step.elapsed());
        if stepped == Ok(false) {
            return;
        }
        self.rewrite = None;
        let result = stepped.and_then(|_| log.finish_rewrite());
        let took = started.elapsed().as_millis() as u64;
        match &result {
            Ok(size) => println!("kvstore: log rewritten: {before} -> {size} bytes in {took} ms"),
            Err(e) => println!("kvstore: log rewrite failed: {e}"),
        }
        let ok = result.is_ok();
        self.engine.aof_rewrite_finished(result.ok(), took);
        if ok {
            // The new log holds everything up to now, held replies' records
            // included (their positions were in the old log).
            self.release_held(u64::MAX, false);
            self.log_recovered("the log rewrite made room");
        } else if matches!(self.log_failure, Some(LogFailure::Full)) {
            println!(
                "kvstore: the live data does not fit beside the log; write commands stay refused. Restart on a bigger disk (./run-qemu.sh kvstore --disk-size SIZE) to accept writes again"
            );
        }
    }
}

/// `maxmemory` when the boot arguments do not set it: 3/8 of the guest's
/// RAM. The dataset is not all the server holds: a log rewrite copies the
/// live data once more, a value being received or sent is a copy too, and
/// the kernel, its page tables and the connections' buffers need their
/// share. Past this the server answers writes `-OOM` instead of running
/// the machine out of memory.
fn default_maxmemory() -> u64 {
    let stats = libos::mm::stats();
    (stats.total_frames * libos::mm::FRAME_SIZE) as u64 / 8 * 3
}

/// Builds the settings from the boot arguments, opens the network and the
/// log, and serves.
pub fn main(args: libos::Args) -> i32 {
    let mut config = match Config::from_args(args.iter()) {
        Ok(config) => config,
        Err(e) => {
            println!("kvstore: {}", e.message());
            println!("usage: kvstore [name value]...  (e.g. appendfsync always maxclients 2000)");
            return 2;
        }
    };
    if !args
        .iter()
        .any(|a| a.trim_start_matches('-').eq_ignore_ascii_case("maxmemory"))
    {
        config.maxmemory = default_maxmemory();
    }
    // The log's checksum runs on the CPU's CRC32C instructions in the guest
    // (see `libos::checksum`), which host tests cannot reach: check a
    // known answer before trusting it with the log, and that its word-wise
    // path (aligned words in the middle) agrees with its byte-wise one.
    let pattern: Vec<u8> = (0..=255u8).collect();
    let words_agree = (0..8).all(|at| {
        let part = &pattern[at..];
        let bytewise = part.iter().fold(0, |crc, b| {
            kvstore::aof::crc32c_extend(crc, core::slice::from_ref(b))
        });
        kvstore::aof::crc32c(part) == bytewise
    });
    if kvstore::aof::crc32c(b"123456789") != 0xe306_9283 || !words_agree {
        println!("kvstore: CRC-32C self-check failed; the log would be unreadable");
        return 1;
    }
    let net = match libos::net::init() {
        Ok(net) => net,
        Err(e) => {
            println!("kvstore: no network: {e:?}");
            return 1;
        }
    };
    let fsync = config.appendfsync;
    // The disk: an NVMe namespace (qemu-virt) or the SD card (zcu102).
    let log = match libos::dma::nvme().or_else(|_| libos::dma::sd()) {
        Ok((nvme, info)) => {
            let now = now_ms();
            let mut loaded = Engine::new(config.clone(), now);
            let opened = DiskLog::open(nvme, info, fsync, |cmd| {
                if let Err(e) = loaded.load(cmd, now) {
                    println!("kvstore: log record not replayable: {e:?}");
                }
            });
            match opened {
                Ok((log, opened)) => {
                    if let Some(slot) = opened.unreadable_slot {
                        println!(
                            "kvstore: superblock slot {slot} is unreadable (a torn superblock write, or damage); the previous generation in the other slot is in force"
                        );
                    }
                    println!(
                        "kvstore: log replayed: {} records, {} bytes, {} keys",
                        opened.records,
                        opened.bytes,
                        loaded.key_count()
                    );
                    if log.shares_values() {
                        println!(
                            "kvstore: log writes values of {} bytes or more from their own memory",
                            kvstore::commands::SHARE_FROM
                        );
                    }
                    config.appendonly = true;
                    Some((log, loaded))
                }
                Err(e) => {
                    println!("kvstore: refusing to start: {e}");
                    println!(
                        "kvstore: the data on the disk is kept as it is. `cargo run -p faultline-image -- kv-check <app>.disk` reports what it holds; with --fix it cuts the log at the damage (everything after it is lost)"
                    );
                    return 1;
                }
            }
        }
        Err(e) => {
            println!("kvstore: no disk (NVMe or SD: {e:?}); persistence is off");
            None
        }
    };
    let (mut engine, log) = match log {
        Some((log, mut engine)) => {
            *engine.config_mut() = config;
            let stats = engine.stats_mut();
            stats.aof_current_size = log.durable_bytes();
            stats.aof_base_size = log.durable_bytes();
            (engine, Some(log))
        }
        None => (Engine::new(config, now_ms()), None),
    };
    engine.set_clock_us(|| time::uptime().as_micros() as u64);
    let server = Server::new(net, engine, log);
    println!(
        "kvstore: ready on port {} ({} ms after boot)",
        server.engine.config().port,
        libos::time::uptime().as_millis()
    );
    server.run()
}

/// Sends what of `session`'s output `socket` takes now, the replies as they
/// lie (encoded bytes, and large values from the store's memory); the bytes
/// sent, which leave the output.
fn send_output(socket: &mut tcp::Socket<'_>, session: &mut Session) -> usize {
    let mut sent = 0;
    for piece in session.output_pieces() {
        let n = socket.send_slice(piece).unwrap_or(0);
        sent += n;
        if n < piece.len() {
            break;
        }
    }
    session.consume(sent);
    sent
}
