//! Which connections have news, so the server visits only those.
//!
//! smoltcp wakes a socket's registered waker when data arrives, room frees
//! up in its send buffer, or its state changes (smoltcp's `async`
//! feature). Each connection's waker puts the connection's slot number on
//! one shared queue; the server drains the queue after polling the
//! interface instead of walking every socket. A registration fires once,
//! so the queue holds at most two entries per connection (receive and
//! send) between drains; a stale entry for a slot reused since is a
//! harmless extra visit.

extern crate alloc;

use alloc::sync::Arc;
use alloc::task::Wake;
use alloc::vec::Vec;
use core::task::Waker;
use libos::sync::IrqSpinLock;

type Queue = Arc<IrqSpinLock<Vec<usize>>>;

/// The shared queue of slots to visit.
pub struct Ready {
    queue: Queue,
}

/// What a connection's waker does: queue its slot.
struct SlotWaker {
    slot: usize,
    queue: Queue,
}

impl Wake for SlotWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.queue.lock().push(self.slot);
    }
}

impl Ready {
    /// An empty queue.
    pub fn new() -> Ready {
        Ready {
            queue: Arc::new(IrqSpinLock::new(Vec::new())),
        }
    }

    /// A waker that queues `slot`, for a socket's receive and send wakers.
    pub fn waker(&self, slot: usize) -> Waker {
        Waker::from(Arc::new(SlotWaker {
            slot,
            queue: self.queue.clone(),
        }))
    }

    /// Queues `slot` by hand (a new connection may hold data already).
    pub fn push(&self, slot: usize) {
        self.queue.lock().push(slot);
    }

    /// Whether any slot is queued.
    pub fn is_empty(&self) -> bool {
        self.queue.lock().is_empty()
    }

    /// Moves the queued slots into `into` (emptied first), leaving the
    /// queue empty; swapping keeps both vectors' allocations.
    pub fn take(&self, into: &mut Vec<usize>) {
        into.clear();
        core::mem::swap(&mut *self.queue.lock(), into);
    }
}
