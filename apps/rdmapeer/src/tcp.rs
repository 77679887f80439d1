//! One TCP connection at a time, with deadlines: what the out-of-band
//! exchanges of Linux's RDMA programs need (a few dozen bytes each way).
//! smoltcp under it; the app sleeps in WFI between polls.
//!
//! [`Oob`] keeps a listening socket on its port at all times, armed again
//! the moment a connection takes it: a Linux program that connects while
//! the app is still finishing the step before finds a listener (smoltcp
//! has no accept queue; without one, QEMU's forward would take the
//! connection and then drop it).

use alloc::vec;
use alloc::vec::Vec;
use core::time::Duration;
use libos::net::smoltcp::iface::SocketHandle;
use libos::net::smoltcp::socket::tcp;
use libos::net::smoltcp::wire::{IpAddress, Ipv4Address};
use libos::net::Net;
use libos::time;

/// The TCP port of the out-of-band exchanges: rdma-core's examples,
/// perftest and verbs_probe all use it (one step at a time).
pub const PORT: u16 = 18515;

/// How long one connection attempt may wait for an answer.
const ATTEMPT: Duration = Duration::from_secs(3);

/// Why a connection could not do what was asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpError {
    /// Nothing happened before the deadline.
    TimedOut,
    /// The peer closed or reset the connection.
    Closed,
}

/// An open connection; it is aborted when dropped.
pub struct Conn<'a> {
    net: &'a mut Net,
    handle: SocketHandle,
}

fn socket() -> tcp::Socket<'static> {
    let mut s = tcp::Socket::new(
        tcp::SocketBuffer::new(vec![0; 4096]),
        tcp::SocketBuffer::new(vec![0; 4096]),
    );
    s.set_nagle_enabled(false);
    s
}

/// Polls `net` until `done` says so or `limit` passes.
fn poll_until(
    net: &mut Net,
    limit: Duration,
    mut done: impl FnMut(&mut Net) -> bool,
) -> Result<(), TcpError> {
    let start = time::now();
    loop {
        net.poll();
        if done(net) {
            return Ok(());
        }
        if start.elapsed() > limit {
            return Err(TcpError::TimedOut);
        }
        let wait = net
            .poll_delay()
            .unwrap_or(Duration::from_millis(10))
            .min(Duration::from_millis(10));
        net.wait(wait);
    }
}

/// The network, and the listener on the out-of-band port.
pub struct Oob {
    /// The interface and its sockets.
    pub net: Net,
    port: u16,
    listener: SocketHandle,
}

fn listener(net: &mut Net, port: u16) -> SocketHandle {
    let mut s = socket();
    // A fresh socket on a nonzero port always listens.
    let _ = s.listen(port);
    net.sockets.add(s)
}

impl Oob {
    /// Starts listening on `port` at once.
    pub fn new(mut net: Net, port: u16) -> Self {
        let listener = listener(&mut net, port);
        Self {
            net,
            port,
            listener,
        }
    }

    /// Waits up to `limit` for one peer to have connected (it may have
    /// before this is called), and listens again.
    pub fn accept(&mut self, limit: Duration) -> Result<Conn<'_>, TcpError> {
        let h = self.listener;
        poll_until(&mut self.net, limit, |n| {
            let st = n.sockets.get::<tcp::Socket>(h).state();
            st == tcp::State::Established || st == tcp::State::CloseWait
        })?;
        self.listener = listener(&mut self.net, self.port);
        Ok(Conn {
            net: &mut self.net,
            handle: h,
        })
    }

    /// [`Conn::connect`] on this network.
    pub fn connect(
        &mut self,
        addr: [u8; 4],
        port: u16,
        limit: Duration,
    ) -> Result<Conn<'_>, TcpError> {
        Conn::connect(&mut self.net, addr, port, limit)
    }
}

impl<'a> Conn<'a> {
    /// Connects to `addr:port`, trying again while the peer refuses (it
    /// may not listen yet), for up to `limit`.
    pub fn connect(
        net: &'a mut Net,
        addr: [u8; 4],
        port: u16,
        limit: Duration,
    ) -> Result<Self, TcpError> {
        let start = time::now();
        let mut local_port = 49152 + (time::uptime().as_micros() % 8192) as u16;
        loop {
            let mut s = socket();
            let remote = (
                IpAddress::Ipv4(Ipv4Address::new(addr[0], addr[1], addr[2], addr[3])),
                port,
            );
            local_port = if local_port >= 65000 {
                49152
            } else {
                local_port + 1
            };
            if s.connect(net.iface.context(), remote, local_port).is_err() {
                return Err(TcpError::Closed);
            }
            let handle = net.sockets.add(s);
            // One attempt waits a few seconds: a SYN to an address nobody
            // has yet (the peer still booting) gets no answer at all.
            let left = limit.saturating_sub(start.elapsed()).min(ATTEMPT);
            let settled = poll_until(net, left, |n| {
                let st = n.sockets.get::<tcp::Socket>(handle).state();
                st == tcp::State::Established || st == tcp::State::Closed
            });
            let state = net.sockets.get::<tcp::Socket>(handle).state();
            if settled.is_ok() && state == tcp::State::Established {
                return Ok(Conn { net, handle });
            }
            net.sockets.get_mut::<tcp::Socket>(handle).abort();
            net.poll();
            net.sockets.remove(handle);
            if start.elapsed() > limit {
                return Err(TcpError::TimedOut);
            }
            // Refused: the peer is not listening yet.
            let pause = time::now();
            while pause.elapsed() < Duration::from_millis(200) {
                net.poll();
                net.wait(Duration::from_millis(20));
            }
        }
    }

    /// Reads exactly `n` bytes.
    pub fn read_exact(&mut self, n: usize, limit: Duration) -> Result<Vec<u8>, TcpError> {
        let mut got = Vec::with_capacity(n);
        let h = self.handle;
        let mut closed = false;
        poll_until(self.net, limit, |net| {
            let s = net.sockets.get_mut::<tcp::Socket>(h);
            let mut buf = [0u8; 256];
            while got.len() < n && s.can_recv() {
                let want = (n - got.len()).min(buf.len());
                match s.recv_slice(&mut buf[..want]) {
                    Ok(k) if k > 0 => got.extend_from_slice(&buf[..k]),
                    _ => break,
                }
            }
            closed = got.len() < n && !s.may_recv();
            got.len() == n || closed
        })?;
        if closed {
            return Err(TcpError::Closed);
        }
        Ok(got)
    }

    /// Reads one line (without its `\n`), of at most `max` bytes.
    pub fn read_line(&mut self, max: usize, limit: Duration) -> Result<Vec<u8>, TcpError> {
        let mut line = Vec::new();
        let h = self.handle;
        let mut closed = false;
        let mut ended = false;
        poll_until(self.net, limit, |net| {
            let s = net.sockets.get_mut::<tcp::Socket>(h);
            let mut b = [0u8; 1];
            while !ended && line.len() <= max && s.can_recv() {
                match s.recv_slice(&mut b) {
                    Ok(1) if b[0] == b'\n' => ended = true,
                    Ok(1) => line.push(b[0]),
                    _ => break,
                }
            }
            closed = !ended && !s.may_recv();
            ended || closed || line.len() > max
        })?;
        if ended {
            Ok(line)
        } else {
            Err(TcpError::Closed)
        }
    }

    /// Writes all of `data` and waits until the peer acknowledged it.
    pub fn write_all(&mut self, data: &[u8], limit: Duration) -> Result<(), TcpError> {
        let h = self.handle;
        let mut sent = 0;
        let mut closed = false;
        poll_until(self.net, limit, |net| {
            let s = net.sockets.get_mut::<tcp::Socket>(h);
            if !s.may_send() {
                closed = true;
                return true;
            }
            if sent < data.len() {
                sent += s.send_slice(&data[sent..]).unwrap_or(0);
            }
            sent == data.len() && s.send_queue() == 0
        })?;
        if closed {
            return Err(TcpError::Closed);
        }
        Ok(())
    }
}

impl Drop for Conn<'_> {
    fn drop(&mut self) {
        let s = self.net.sockets.get_mut::<tcp::Socket>(self.handle);
        s.close();
        // Let the FIN go out; the socket is dropped either way.
        let _ = poll_until(self.net, Duration::from_millis(200), |n| {
            n.sockets.get::<tcp::Socket>(self.handle).send_queue() == 0
        });
        self.net.sockets.remove(self.handle);
    }
}
