//! Counters of one engine process, printed as one line when it exits.

use crate::engine::Counters;
use std::sync::atomic::{AtomicU64, Ordering};

/// Shared counters of the device process (relaxed atomics: they are only
/// reported); the protocol's own are [`Counters`].
#[derive(Default, Debug)]
pub struct Stats {
    /// Work requests taken from the request queue (control ones included).
    pub wrs: AtomicU64,
    /// Completions delivered to the guest.
    pub completions: AtomicU64,
    /// IOTLB misses sent to QEMU.
    pub misses: AtomicU64,
    /// Microseconds spent waiting for miss replies.
    pub miss_us: AtomicU64,
    /// Misses QEMU answered with a fault (a guest-visible SMMU event).
    pub faults: AtomicU64,
    /// IOTLB updates received.
    pub updates: AtomicU64,
    /// IOTLB invalidations received.
    pub invalidations: AtomicU64,
    /// Packets sent and received on the fabric.
    pub packets_out: AtomicU64,
    /// Packets received from nodes.
    pub packets_in: AtomicU64,
    /// Outgoing packets dropped on purpose (`--loss`).
    pub dropped: AtomicU64,
    /// Outgoing packets held back behind the next one (`--reorder`).
    pub reordered: AtomicU64,
    /// Outgoing packets sent twice (`--duplicate`).
    pub duplicated: AtomicU64,
    /// Packets whose IPv4/UDP headers do not hold together, or cut short
    /// (dropped).
    pub bad_headers: AtomicU64,
    /// Times the device loop woke up (poll returned).
    pub wakes: AtomicU64,
    /// Receive calls on the fabric socket, and those that found it empty.
    pub receives: AtomicU64,
    /// Receive calls that found the fabric socket empty.
    pub empty_receives: AtomicU64,
    /// Kicks taken, per queue.
    pub kicks: [AtomicU64; 2],
    /// Used-buffer interrupts signalled, per queue.
    pub interrupts: [AtomicU64; 2],
}

impl Stats {
    /// The one-line summary, with the protocol's counters `c`.
    pub fn summary(&self, c: &Counters) -> String {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let misses = g(&self.misses);
        let avg = g(&self.miss_us).checked_div(misses).unwrap_or(0);
        format!(
            "{} WRs, {} completions, {} bytes, {} IOTLB misses (avg {} us), {} faults, {} updates, {} invalidations, {} packets out, {} in, {} retransmitted, {} RNR NAKs sent, {} received, {} NAKs received, {} duplicates answered, {} WRITE notices sent, {} taken; impaired: {} dropped, {} reordered, {} duplicated; dropped: {} from strangers, {} bad IP headers, {} malformed, {} bad ICRC, {} unknown QPN, {} PSN out of window, {} out of sequence, {} refused by the exposures; loop: {} wakes, {} receives ({} empty), interrupts {} completion / {} request, kicks {} completion / {} request",
            g(&self.wrs),
            g(&self.completions),
            c.bytes,
            misses,
            avg,
            g(&self.faults),
            g(&self.updates),
            g(&self.invalidations),
            g(&self.packets_out),
            g(&self.packets_in),
            c.retransmits,
            c.rnr_sent,
            c.rnr_received,
            c.naks_received,
            c.duplicates,
            c.notices_sent,
            c.notices_taken,
            g(&self.dropped),
            g(&self.reordered),
            g(&self.duplicated),
            c.strangers,
            g(&self.bad_headers),
            c.malformed,
            c.bad_icrc,
            c.unknown_qpn,
            c.psn_out_of_window,
            c.out_of_sequence,
            c.refused,
            g(&self.wakes),
            g(&self.receives),
            g(&self.empty_receives),
            g(&self.interrupts[0]),
            g(&self.interrupts[1]),
            g(&self.kicks[0]),
            g(&self.kicks[1]),
        )
    }
}
