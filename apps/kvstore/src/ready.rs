//! Which connections have news, so the server visits only those.
//!
//! smoltcp wakes a socket's registered waker when data arrives, room frees
//! up in its send buffer, or its state changes (smoltcp's `async`
//! feature). Each connection's waker puts the connection's slot number on
//! one shared queue; the server drains the queue after polling the
//! interface instead of walking every socket. A registration fires once,
//! so the queue holds at most two entries per connection (receive and
//! send) between drains; an entry left by a slot's earlier connection is
//! recognised by its client id and dropped. The order of the entries is
//! the order the server serves in (see [`Ready::take`]).

extern crate alloc;

use alloc::sync::Arc;
use alloc::task::Wake;
use alloc::vec::Vec;
use core::task::Waker;
use libos::sync::IrqSpinLock;

/// What queued a slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cause {
    /// Bytes (or a FIN) arrived: these entries are in arrival order.
    Received,
    /// Room in the send buffer, or the server's own request.
    Other,
}

/// A queued slot: which connection (slot and client id, so an entry left
/// by a slot's previous connection is recognised) and why.
type Entry = (usize, u64, Cause);
type Queue = Arc<IrqSpinLock<Vec<Entry>>>;

/// The shared queue of slots to visit.
pub struct Ready {
    queue: Queue,
}

impl Default for Ready {
    /// An empty queue.
    fn default() -> Self {
        Ready {
            queue: Arc::new(IrqSpinLock::new(Vec::new())),
        }
    }
}

/// What a connection's waker does: queue its slot.
struct SlotWaker {
    entry: Entry,
    queue: Queue,
}

impl Wake for SlotWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.queue.lock().push(self.entry);
    }
}

/// The wakers of one connection.
pub struct Wakers {
    /// For `register_recv_waker`: fires when bytes arrive.
    pub receive: Waker,
    /// For `register_send_waker`: fires when the send buffer has room.
    pub send: Waker,
}

impl Ready {
    /// The wakers of client `id` in `slot`.
    pub fn wakers(&self, slot: usize, id: u64) -> Wakers {
        let waker = |cause| {
            Waker::from(Arc::new(SlotWaker {
                entry: (slot, id, cause),
                queue: self.queue.clone(),
            }))
        };
        Wakers {
            receive: waker(Cause::Received),
            send: waker(Cause::Other),
        }
    }

    /// Queues client `id`'s `slot` by hand (a new connection may hold data
    /// already; a paused one may read again).
    pub fn push(&self, slot: usize, id: u64) {
        self.queue.lock().push((slot, id, Cause::Other));
    }

    /// Whether any slot is queued.
    pub fn is_empty(&self) -> bool {
        self.queue.lock().is_empty()
    }

    /// Moves the queued slots into `into` (emptied first), each once, in
    /// the order a server should serve them: the slots that received
    /// bytes in the order the bytes arrived, then the others. Redis reads
    /// its clients in the order their requests came, and clients rely on
    /// it: of two clients blocked on one list, the one that asked first is
    /// served first; a command sent before another client's write runs
    /// before it. `current(slot)` is the id of the client in `slot` now;
    /// entries of an earlier client there are dropped.
    pub fn take(&self, into: &mut Vec<usize>, current: impl Fn(usize) -> Option<u64>) {
        let entries = core::mem::take(&mut *self.queue.lock());
        into.clear();
        for cause in [Cause::Received, Cause::Other] {
            for &(slot, id, why) in &entries {
                if why == cause && current(slot) == Some(id) && !into.contains(&slot) {
                    into.push(slot);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_that_received_come_first_in_arrival_order_each_once() {
        let ready = Ready::default();
        let (a, b, c) = (
            ready.wakers(0, 10),
            ready.wakers(1, 11),
            ready.wakers(2, 12),
        );
        // b's send buffer drained first, then bytes came for c, then a,
        // then c again.
        b.send.wake_by_ref();
        c.receive.wake_by_ref();
        a.receive.wake_by_ref();
        c.receive.wake_by_ref();
        let mut order = Vec::new();
        ready.take(&mut order, |slot| Some(10 + slot as u64));
        assert_eq!(order, [2, 0, 1]);
        assert!(ready.is_empty());
    }

    #[test]
    fn an_entry_of_a_slots_earlier_client_is_dropped() {
        let ready = Ready::default();
        let old = ready.wakers(3, 7);
        old.receive.wake_by_ref();
        ready.push(4, 8);
        let mut order = Vec::new();
        // Slot 3 now holds client 9.
        ready.take(&mut order, |slot| Some(if slot == 3 { 9 } else { 8 }));
        assert_eq!(order, [4]);
    }
}
