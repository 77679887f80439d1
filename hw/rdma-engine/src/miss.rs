//! IOTLB misses on the backend channel, several at once.
//!
//! QEMU serves the backend channel one message at a time, in the order the
//! messages arrive: it reads one whole message, resolves it (for a MISS:
//! walks the guest SMMU, sends the UPDATE on the main socket and waits for
//! our frontend thread's ack), writes the reply, and only then looks at the
//! socket again. So MISS messages written back to back are answered in
//! order, and the replies can be matched to the pages by position. Sending
//! a window of them at once turns `n` round trips (each with a wake-up of
//! QEMU's main loop and of the engine thread) into one.
//!
//! ```text
//!  engine thread                      QEMU main loop          frontend thread
//!  MISS p, p+1 … p+k ───(one write)─▶ MISS p: walk ─ UPDATE p ──▶ insert, ack
//!                                     ◀─ reply p ────────────────────┘
//!                                     MISS p+1: walk (fault: guest event)
//!                                     ◀─ reply p+1 = 1
//!                                     …
//!  read k+1 replies, in order ◀────── reply p+k
//! ```
//!
//! A reply is matched to its request by position only: QEMU's reply
//! carries no address. Any deviation (a reply to another request, a short
//! message, a closed socket, a timeout) breaks the channel for good; the
//! caller turns that into a fatal fault, never a guess.

use crate::iotlb::Perm;
use crate::vhost_msg::{
    self, IotlbMsg, BACKEND_IOTLB_MSG, FLAG_NEED_REPLY, FLAG_REPLY, HEADER_SIZE, IOTLB_MISS,
    IOTLB_SIZE,
};
use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// Most MISS messages in flight at once (pages asked for ahead of the one
/// an access stopped at, plus that one).
///
/// Why 32: every page QEMU cannot translate becomes a record in the
/// guest's SMMU event queue, so a window is also a burst of up to this many
/// fault events. The libOS runs that queue with 2^15 records (2^3 in the
/// overflow self-test, which recovers from lost events by design) and
/// keeps 1024 distinct faults per drain, so 32 leaves room for both nodes'
/// other devices. QEMU holds its main loop ~40 us per miss, so a window is
/// ~1.3 ms of QEMU time, short against the libOS's timers. And 32 pages
/// (128 KiB) are half of a 256 KiB segment: past that the fixed cost of a
/// round trip is already spread thin.
pub const MISS_WINDOW: usize = 32;

/// How long we wait for QEMU to answer a miss before calling it broken.
const MISS_TIMEOUT: Duration = Duration::from_secs(5);

/// Bytes of QEMU's answer to one miss: a header and a u64 (0: translated).
const REPLY_SIZE: usize = vhost_msg::REPLY_U64_SIZE;

/// The engine's side of the backend channel: asks QEMU to translate.
pub struct MissChannel {
    sock: UnixStream,
    /// The encoded requests of one window (kept to avoid reallocating).
    out: Vec<u8>,
    /// Reply bytes received and not yet parsed.
    inbuf: Vec<u8>,
}

fn broken(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

impl MissChannel {
    /// Wraps the socket QEMU gave with SET_BACKEND_REQ_FD.
    pub fn new(sock: UnixStream) -> io::Result<Self> {
        sock.set_read_timeout(Some(MISS_TIMEOUT))?;
        Ok(Self {
            sock,
            out: Vec::with_capacity(MISS_WINDOW * (HEADER_SIZE + IOTLB_SIZE)),
            inbuf: Vec::with_capacity(MISS_WINDOW * REPLY_SIZE),
        })
    }

    /// Sends one IOTLB MISS per page of `pages` (at most [`MISS_WINDOW`])
    /// back to back, then reads QEMU's verdicts in order into `verdicts`:
    /// true translated (the UPDATE is already in the IOTLB), false the guest
    /// SMMU faulted (an event is in the guest's queue). Err: the channel is
    /// unusable (the verdicts read so far are in `verdicts`).
    pub fn miss_all(
        &mut self,
        pages: &[u64],
        perm: Perm,
        verdicts: &mut Vec<bool>,
    ) -> io::Result<()> {
        verdicts.clear();
        if pages.len() > MISS_WINDOW {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "more misses than the window",
            ));
        }
        self.out.clear();
        for &iova in pages {
            let m = IotlbMsg {
                iova,
                perm,
                kind: IOTLB_MISS,
                ..IotlbMsg::default()
            };
            vhost_msg::encode_into(
                &mut self.out,
                BACKEND_IOTLB_MSG,
                FLAG_NEED_REPLY,
                &m.encode(),
            );
        }
        self.sock.write_all(&self.out)?;
        while verdicts.len() < pages.len() {
            verdicts.push(self.next_verdict()?);
        }
        Ok(())
    }

    /// One reply: parsed from bytes already received, or read for.
    fn next_verdict(&mut self) -> io::Result<bool> {
        loop {
            if let Some((verdict, used)) = parse_reply(&self.inbuf)? {
                self.inbuf.drain(..used);
                return Ok(verdict);
            }
            let have = self.inbuf.len();
            self.inbuf.resize(have + MISS_WINDOW * REPLY_SIZE, 0);
            let n = match self.sock.read(&mut self.inbuf[have..]) {
                Ok(n) => n,
                Err(e) => {
                    self.inbuf.truncate(have);
                    return Err(e);
                }
            };
            self.inbuf.truncate(have + n);
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "QEMU closed the backend channel with misses unanswered",
                ));
            }
        }
    }
}

/// The verdict of the reply at the start of `b` and its length, None if
/// `b` does not hold a whole reply yet; Err if it is not a reply to a miss.
fn parse_reply(b: &[u8]) -> io::Result<Option<(bool, usize)>> {
    if b.len() < HEADER_SIZE {
        return Ok(None);
    }
    let h = vhost_msg::Header::decode(b).map_err(|e| broken(e.to_string()))?;
    if h.request != BACKEND_IOTLB_MSG || h.flags & FLAG_REPLY == 0 {
        return Err(broken(format!(
            "expected the reply to an IOTLB miss, got request {} flags {:#x}",
            h.request, h.flags
        )));
    }
    let len = HEADER_SIZE + h.size as usize;
    if b.len() < len {
        return Ok(None);
    }
    let v = vhost_msg::decode_u64(&b[HEADER_SIZE..len]).map_err(|e| broken(e.to_string()))?;
    Ok(Some((v == 0, len)))
}
