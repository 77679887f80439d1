//! The few operating-system calls std does not offer: receiving file
//! descriptors over a Unix socket, mapping QEMU's memory fds, eventfds,
//! `poll`, UDP socket options and batched sends and receives, memfds and
//! bounds-checked copies in and out of mappings. Every `unsafe` of the crate lives here, each small
//! and explained.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

/// Most fds one message may carry: a vhost-user memory table has 8
/// regions (one more is room to spare).
pub const MAX_FDS: usize = 9;

/// Reads exactly `buf.len()` bytes from `sock`, collecting any file
/// descriptors sent along (SCM_RIGHTS). Ok(None) at end of stream before
/// any byte.
pub fn recv_with_fds(sock: &UnixStream, buf: &mut [u8]) -> io::Result<Option<Vec<OwnedFd>>> {
    let mut fds = Vec::new();
    let mut got = 0;
    while got < buf.len() {
        let mut iov = libc::iovec {
            iov_base: buf[got..].as_mut_ptr().cast(),
            iov_len: buf.len() - got,
        };
        // u64 storage keeps the control buffer aligned for cmsghdr.
        let mut cbuf = [0u64; 32];
        // SAFETY: msghdr is plain old data; all-zero is a valid empty value.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&cbuf) as _;
        // SAFETY: iov points into `buf` (in bounds, writable), msg_control
        // into `cbuf`; both outlive the call.
        let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        // SAFETY: the kernel filled msg_control/msg_controllen; the CMSG
        // macros walk only inside it, and SCM_RIGHTS data is an array of
        // ints whose count follows from cmsg_len.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                    let data = libc::CMSG_DATA(c).cast::<RawFd>();
                    let bytes = (*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                    for i in 0..bytes / std::mem::size_of::<RawFd>() {
                        let fd = std::ptr::read_unaligned(data.add(i));
                        fds.push(OwnedFd::from_raw_fd(fd));
                    }
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        if n == 0 {
            if got == 0 {
                return Ok(None);
            }
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "socket closed inside a message",
            ));
        }
        got += n as usize;
        if fds.len() > MAX_FDS {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "too many file descriptors in one message",
            ));
        }
    }
    Ok(Some(fds))
}

/// A shared, read-write mapping of `len` bytes of an fd (QEMU's guest RAM).
pub struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain shared memory; who may touch which bytes when
// is governed by the IOTLB and the virtio protocol, not by thread identity.
unsafe impl Send for Mapping {}
// SAFETY: as above; the pointer itself is never changed after creation.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `len` bytes of `fd` from offset 0.
    pub fn new(fd: &OwnedFd, len: u64) -> io::Result<Self> {
        let len = usize::try_from(len)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "mapping too large"))?;
        // SAFETY: a fresh shared mapping chosen by the kernel; it aliases no
        // Rust object. Failure is checked below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Self { ptr: p.cast(), len })
    }

    /// Whether `off..off+n` lies inside the mapping.
    fn covers(&self, off: usize, n: usize) -> bool {
        off.checked_add(n).is_some_and(|end| end <= self.len)
    }

    /// Copies `buf.len()` bytes from offset `off` of the mapping into
    /// `buf`; false (nothing copied) when the range is outside it.
    pub fn read_at(&self, off: usize, buf: &mut [u8]) -> bool {
        if !self.covers(off, buf.len()) {
            return false;
        }
        // SAFETY: `off..off+len` is inside the live mapping (checked above);
        // `buf` is a distinct Rust buffer, never part of a mapping.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.add(off), buf.as_mut_ptr(), buf.len()) };
        true
    }

    /// Copies `data` to offset `off` of the mapping; false (nothing copied)
    /// when the range is outside it.
    pub fn write_at(&self, off: usize, data: &[u8]) -> bool {
        if !self.covers(off, data.len()) {
            return false;
        }
        // SAFETY: as in `read_at`, with the roles swapped.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr.add(off), data.len()) };
        true
    }

    /// Bytes mapped.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is mapped (never true for a created mapping).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly what `new` mapped; no reference into it
        // outlives the Mapping (users hold an Arc to it while copying).
        unsafe {
            libc::munmap(self.ptr.cast(), self.len);
        }
    }
}

/// A new memory file of `len` zero bytes (the self-benchmark's "guest
/// RAM"), sealed against shrinking and growing, as QEMU seals its guest
/// RAM: nobody can make a mapping of it touch a page past its end (SIGBUS).
pub fn memfd(name: &str, len: u64) -> io::Result<OwnedFd> {
    let fd = memfd_unsealed(name, len)?;
    let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;
    // SAFETY: plain fcntl on a descriptor we own; the result is checked.
    if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, seals) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

/// A memory file of `len` zero bytes that may be sealed, not sealed yet.
pub fn memfd_unsealed(name: &str, len: u64) -> io::Result<OwnedFd> {
    let name = std::ffi::CString::new(name).map_err(|_| io::Error::other("memfd name"))?;
    // SAFETY: `name` is a NUL-terminated string alive during the call; the
    // result is checked.
    let fd =
        unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor nobody else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let len = libc::off_t::try_from(len).map_err(|_| io::Error::other("memfd too large"))?;
    // SAFETY: plain syscall on a descriptor we own.
    if unsafe { libc::ftruncate(fd.as_raw_fd(), len) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

/// Signals an eventfd (QEMU's call fd, or our own wake-up fd).
pub fn eventfd_signal(fd: RawFd) -> io::Result<()> {
    let one: u64 = 1;
    // SAFETY: writes 8 bytes from a local u64.
    let n = unsafe { libc::write(fd, (&one as *const u64).cast(), 8) };
    if n == 8 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Consumes an eventfd's count (after poll said it is readable); returns
/// whether it had been signalled.
pub fn eventfd_drain(fd: RawFd) -> bool {
    let mut v: u64 = 0;
    // SAFETY: reads at most 8 bytes into a local u64; the fd is nonblocking.
    let n = unsafe { libc::read(fd, (&mut v as *mut u64).cast(), 8) };
    n == 8
}

/// A new nonblocking eventfd.
pub fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: plain syscall; the result is checked and owned at once.
    let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Makes an fd nonblocking (kick fds from QEMU may be blocking).
pub fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor we own; flags are read then extended.
    let r = unsafe {
        let fl = libc::fcntl(fd, libc::F_GETFL);
        if fl < 0 {
            fl
        } else {
            libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK)
        }
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Waits until one of `fds` is readable or `timeout_ms` passes; returns
/// which ones are readable (or hung up).
pub fn poll_readable(fds: &[RawFd], timeout_ms: i32) -> io::Result<Vec<bool>> {
    let mut p: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: `p` is a valid array of p.len() pollfd for the call's duration.
    let n = unsafe { libc::poll(p.as_mut_ptr(), p.len() as libc::nfds_t, timeout_ms) };
    if n < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(vec![false; fds.len()]);
        }
        return Err(e);
    }
    Ok(p.iter()
        .map(|x| x.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0)
        .collect())
}

/// Asks for `bytes` of socket buffer each way (forced past the sysctl limit
/// when we may), so bursts of large datagrams are not dropped on loopback.
pub fn set_socket_buffers(fd: RawFd, bytes: i32) {
    for (force, plain) in [
        (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF),
        (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF),
    ] {
        for opt in [force, plain] {
            // SAFETY: setsockopt reads one int from a local.
            let r = unsafe {
                libc::setsockopt(
                    fd,
                    libc::SOL_SOCKET,
                    opt,
                    (&bytes as *const i32).cast(),
                    std::mem::size_of::<i32>() as _,
                )
            };
            if r == 0 {
                break;
            }
        }
    }
}

/// Makes every datagram of UDP socket `fd` go with IPv4's Don't Fragment
/// bit and never be fragmented (IP_PMTUDISC_DO): a RoCE packet must fit the
/// path, and its ICRC covers the IPv4 header as sent (see `roce::packet`).
pub fn set_dont_fragment(fd: RawFd) -> io::Result<()> {
    let v: i32 = libc::IP_PMTUDISC_DO;
    // SAFETY: setsockopt reads one int from a local.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_IP,
            libc::IP_MTU_DISCOVER,
            (&v as *const i32).cast(),
            std::mem::size_of::<i32>() as _,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Makes UDP socket `fd` take no datagram into its receive queue (a
/// socket filter that accepts nothing): the port stays bound, so no
/// "port unreachable" goes back, while another socket reads the packets.
pub fn drop_all_input(fd: RawFd) -> io::Result<()> {
    // One classic BPF instruction: return 0 (keep no byte).
    let mut drop_all = [libc::sock_filter {
        code: (libc::BPF_RET | libc::BPF_K) as u16,
        jt: 0,
        jf: 0,
        k: 0,
    }];
    let prog = libc::sock_fprog {
        len: 1,
        filter: drop_all.as_mut_ptr(),
    };
    // SAFETY: setsockopt reads the program and its one instruction, both
    // locals that outlive the call; the kernel copies them.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ATTACH_FILTER,
            (&prog as *const libc::sock_fprog).cast(),
            std::mem::size_of::<libc::sock_fprog>() as _,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// A nonblocking raw IPv4 socket bound to `addr` that receives every UDP
/// packet for that address with its IPv4 header (needs CAP_NET_RAW).
pub fn raw_udp_receiver(addr: std::net::Ipv4Addr) -> io::Result<OwnedFd> {
    // SAFETY: socket takes constants and returns a new descriptor or -1.
    let fd = unsafe {
        libc::socket(
            libc::AF_INET,
            libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            libc::IPPROTO_UDP,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd was just returned by socket and is owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let sa = sockaddr_v4(&std::net::SocketAddrV4::new(addr, 0));
    // SAFETY: bind reads one sockaddr_in from a local.
    let r = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&sa as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as _,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

/// One `mmsghdr` per address and iovec, pointing at them (for sendmmsg
/// and recvmmsg; both vectors must outlive the call).
fn message_headers(
    addrs: &mut [libc::sockaddr_in],
    iovs: &mut [libc::iovec],
) -> Vec<libc::mmsghdr> {
    addrs
        .iter_mut()
        .zip(iovs.iter_mut())
        .map(|(a, iov)| {
            // SAFETY: mmsghdr is plain old data; all-zero is a valid empty value.
            let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
            h.msg_hdr.msg_name = (a as *mut libc::sockaddr_in).cast();
            h.msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as _;
            h.msg_hdr.msg_iov = iov;
            h.msg_hdr.msg_iovlen = 1;
            h
        })
        .collect()
}

fn sockaddr_v4(a: &std::net::SocketAddrV4) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: a.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes(a.ip().octets()),
        },
        sin_zero: [0; 8],
    }
}

/// Sends `msgs` (destination, bytes) on UDP socket `fd` with as few
/// `sendmmsg` calls as it takes; returns how many went. A full socket
/// buffer stops it early: the rest are lost packets, as for `send_to`.
pub fn send_many(fd: RawFd, msgs: &[(std::net::SocketAddrV4, Vec<u8>)]) -> usize {
    const CHUNK: usize = 64;
    let mut sent = 0;
    while sent < msgs.len() {
        let part = &msgs[sent..msgs.len().min(sent + CHUNK)];
        let mut addrs: Vec<libc::sockaddr_in> = part.iter().map(|(a, _)| sockaddr_v4(a)).collect();
        let mut iovs: Vec<libc::iovec> = part
            .iter()
            .map(|(_, b)| libc::iovec {
                iov_base: b.as_ptr() as *mut libc::c_void,
                iov_len: b.len(),
            })
            .collect();
        let mut hdrs = message_headers(&mut addrs, &mut iovs);
        // SAFETY: every header points at an address and an iovec that live
        // in `addrs` and `iovs` until the call returns, and each iovec at
        // bytes of `msgs`, which the kernel only reads.
        let n = unsafe { libc::sendmmsg(fd, hdrs.as_mut_ptr(), hdrs.len() as _, 0) };
        if n <= 0 {
            break;
        }
        sent += n as usize;
    }
    sent
}

/// One datagram [`recv_many`] received: its length (the rest of its slot
/// is stale), whether it was longer than the slot, and its sender.
#[derive(Clone, Copy, Debug)]
pub struct Received {
    /// Bytes in the slot.
    pub len: usize,
    /// The datagram did not fit its slot (cut short).
    pub truncated: bool,
    /// Who sent it (None for a sender that is not IPv4).
    pub from: Option<std::net::SocketAddrV4>,
}

/// Receives up to `slots.len() / slot` datagrams from nonblocking UDP
/// socket `fd` in one `recvmmsg` call, each into its `slot`-byte piece of
/// `slots`; fills `out` and returns how many came (0: none waiting).
pub fn recv_many(fd: RawFd, slots: &mut [u8], slot: usize, out: &mut Vec<Received>) -> usize {
    out.clear();
    let count = slots.len() / slot.max(1);
    if count == 0 {
        return 0;
    }
    // SAFETY: sockaddr_in is plain old data; all-zero is a valid value.
    let mut addrs: Vec<libc::sockaddr_in> = vec![unsafe { std::mem::zeroed() }; count];
    let mut iovs: Vec<libc::iovec> = slots
        .chunks_exact_mut(slot)
        .map(|s| libc::iovec {
            iov_base: s.as_mut_ptr().cast(),
            iov_len: s.len(),
        })
        .collect();
    let mut hdrs = message_headers(&mut addrs, &mut iovs);
    // SAFETY: every header points at an address buffer and an iovec that
    // live until the call returns, each iovec at its own slot of `slots`;
    // MSG_DONTWAIT: the call never blocks; no timeout pointer.
    let n = unsafe {
        libc::recvmmsg(
            fd,
            hdrs.as_mut_ptr(),
            count as _,
            libc::MSG_DONTWAIT,
            std::ptr::null_mut(),
        )
    };
    if n <= 0 {
        return 0;
    }
    for (h, a) in hdrs.iter().zip(&addrs).take(n as usize) {
        let from = (a.sin_family == libc::AF_INET as libc::sa_family_t).then(|| {
            std::net::SocketAddrV4::new(
                std::net::Ipv4Addr::from(a.sin_addr.s_addr.to_ne_bytes()),
                u16::from_be(a.sin_port),
            )
        });
        out.push(Received {
            len: (h.msg_len as usize).min(slot),
            truncated: h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0,
            from,
        });
    }
    n as usize
}
