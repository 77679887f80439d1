//! The target's side: an arena of never-touched memory and the commands the
//! initiator sends it (each a SEND of little-endian words, answered by one).

extern crate alloc;

use alloc::vec::Vec;
use core::time::Duration;
use libos::mm::Region;
use libos::println;
use libos::rdma::{Access, Op, QueuePair, Rdma, Status};

/// Virtual size of each side's arena (frames are used only as touched).
pub const ARENA: usize = 8 << 30;

/// Commands, the first word of a message. `[HELLO, arena, key]` (target
/// to initiator): the arena's address and the remote key that exposes it.
pub const HELLO: u64 = 1;
/// `[PIN, offset, len]` → `[setup ns]`.
pub const PIN: u64 = 2;
/// `[FREE, offset, len]`: unpin (if pinned) and discard → `[0]`.
pub const FREE: u64 = 3;
/// `[TOUCH, offset, len]`: make resident → `[setup ns]`.
pub const TOUCH: u64 = 4;
/// `[EVICT, offset, len]` → `[pages]`.
pub const EVICT: u64 = 5;
/// `[STATS]` → `[kernel busy ns, faults resolved for the engine]`.
pub const STATS: u64 = 6;
/// `[QUIT]` → `[0]`, then the target exits.
pub const QUIT: u64 = 7;

/// Encodes words for a SEND.
pub fn encode(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// Decodes a message's words.
pub fn decode(data: &[u8]) -> Vec<u64> {
    data.chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        .collect()
}

/// Waits for the next RECV completion from `node` (reposting the buffer).
pub fn recv(rdma: &Rdma, node: u16) -> Option<Vec<u64>> {
    let start = libos::time::now();
    loop {
        if let Some(wc) = rdma.poll() {
            if wc.op == Op::Recv && wc.node == node && wc.status == Status::Success {
                let _ = rdma.post_recv(64);
                return Some(decode(&wc.data));
            }
            continue;
        }
        if start.elapsed() > Duration::from_secs(300) {
            return None;
        }
        libos::time::wait_for_interrupt_or(Duration::from_millis(1));
    }
}

/// Sends `words` and waits for the SEND to complete.
pub fn send(rdma: &Rdma, qp: &QueuePair, words: &[u64]) -> bool {
    qp.send(&encode(words))
        .ok()
        .and_then(|id| rdma.wait(id).ok())
        .is_some_and(|wc| wc.status == Status::Success)
}

/// Node 1: serves commands until QUIT.
pub fn serve(rdma: &Rdma) -> i32 {
    let Ok(arena) = Region::demand_zero_huge(ARENA) else {
        println!("rdmabench: no room for the arena");
        return 1;
    };
    let Ok(qp) = rdma.queue_pair(0) else {
        return 1;
    };
    let rw = Access::REMOTE_READ | Access::REMOTE_WRITE;
    // The arena moves into its exposure: this node never reads or writes
    // its bytes, it only pins, populates, evicts and discards its pages.
    let mut arena = match rdma.expose_region(arena, rw) {
        Ok(x) => x,
        Err((e, _)) => {
            println!("rdmabench: cannot expose the arena: {e:?}");
            return 1;
        }
    };
    for _ in 0..8 {
        let _ = rdma.post_recv(64);
    }
    send(
        rdma,
        &qp,
        &[HELLO, arena.start() as u64, arena.remote().key],
    );
    loop {
        let Some(cmd) = recv(rdma, 0) else {
            println!("rdmabench target: initiator silent for 300 s");
            return 1;
        };
        let range = |c: &[u64]| -> Option<core::ops::Range<usize>> {
            let (off, len) = (*c.get(1)? as usize, *c.get(2)? as usize);
            (off.checked_add(len)? <= ARENA).then_some(off..off + len)
        };
        let t = libos::time::now();
        let reply = match (cmd.first().copied(), range(&cmd)) {
            (Some(PIN), Some(r)) => arena.pin(r).map(|_| t.elapsed().as_nanos() as u64),
            (Some(TOUCH), Some(r)) => arena.populate(r).map(|_| t.elapsed().as_nanos() as u64),
            (Some(EVICT), Some(r)) => arena.evict(r).map(|n| n as u64),
            (Some(FREE), Some(r)) => {
                // Not every range was pinned: unpin what is, then free.
                let _ = arena.unpin(r.clone());
                arena.discard(r).map(|_| 0)
            }
            (Some(STATS), _) => Ok(libos::dma::fault_counters().busy.as_nanos() as u64),
            (Some(QUIT), _) => {
                send(rdma, &qp, &[0]);
                println!(
                    "rdmabench target: {} faults resolved for the engine",
                    rdma.pages_ready()
                );
                return 0;
            }
            _ => {
                println!("rdmabench target: bad command {cmd:?}");
                return 1;
            }
        };
        let words = match reply {
            Ok(v) => [v, rdma.pages_ready()],
            Err(e) => {
                println!("rdmabench target: {cmd:?}: {e:?}");
                [u64::MAX, 0]
            }
        };
        if !send(rdma, &qp, &words) {
            println!("rdmabench target: reply failed");
            return 1;
        }
    }
}
