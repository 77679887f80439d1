//! The few operating-system calls std does not offer: receiving file
//! descriptors over a Unix socket, mapping QEMU's memory fds, eventfds,
//! `poll`, and larger UDP socket buffers. Every `unsafe` of the crate that
//! is not a guest-memory copy lives here, each small and explained.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

/// Most fds one vhost-user message carries (the memory table's regions).
const MAX_FDS: usize = 8;

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

    /// First byte of the mapping.
    pub fn ptr(&self) -> *mut u8 {
        self.ptr
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
