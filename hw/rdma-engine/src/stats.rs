//! Counters of one engine process, printed as one line when it exits.

use std::sync::atomic::{AtomicU64, Ordering};

/// Shared counters (relaxed atomics: they are only reported).
#[derive(Default, Debug)]
pub struct Stats {
    /// Work requests taken from the request queue (control ones included).
    pub wrs: AtomicU64,
    /// Completions delivered to the guest.
    pub completions: AtomicU64,
    /// Payload bytes moved (copied, written, read, sent).
    pub bytes: AtomicU64,
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
    /// Datagrams sent again (loss, remote fault).
    pub retransmits: AtomicU64,
    /// Outgoing datagrams dropped on purpose (`--loss`).
    pub dropped: AtomicU64,
    /// Bytes this engine copied on the direct path (as a target).
    pub direct_bytes: AtomicU64,
    /// Lent ranges taken back by IOTLB invalidations or a new memory table.
    pub revoked: AtomicU64,
    /// Datagrams from an address that is no node's (dropped).
    pub strangers: AtomicU64,
    /// Datagrams claiming another sender than the node they came from.
    pub forged_src: AtomicU64,
    /// Malformed datagrams.
    pub malformed: AtomicU64,
    /// Answers naming no transfer outstanding to their sender.
    pub unknown_xfer: AtomicU64,
    /// Requests dropped past the per-transfer and per-page bounds.
    pub over_bounds: AtomicU64,
    /// Incoming transfers forgotten for newer ones of the same peer.
    pub forgotten: AtomicU64,
    /// Remote requests refused by the exposures (key, range or rights).
    pub refused: AtomicU64,
    /// Export-socket connections refused (wrong uid or secret).
    pub export_refused: AtomicU64,
}

impl Stats {
    /// The one-line summary.
    pub fn summary(&self) -> String {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let misses = g(&self.misses);
        let avg = g(&self.miss_us).checked_div(misses).unwrap_or(0);
        format!(
            "{} WRs, {} completions, {} bytes, {} IOTLB misses (avg {} us), {} faults, {} updates, {} invalidations, {} retransmits, {} datagrams dropped, {} bytes copied directly, {} lent ranges revoked, dropped: {} from strangers, {} forged sender, {} malformed, {} late or unknown transfer, {} over bounds, {} old transfers forgotten, {} refused by the exposures; {} export connections refused",
            g(&self.wrs),
            g(&self.completions),
            g(&self.bytes),
            misses,
            avg,
            g(&self.faults),
            g(&self.updates),
            g(&self.invalidations),
            g(&self.retransmits),
            g(&self.dropped),
            g(&self.direct_bytes),
            g(&self.revoked),
            g(&self.strangers),
            g(&self.forged_src),
            g(&self.malformed),
            g(&self.unknown_xfer),
            g(&self.over_bounds),
            g(&self.forgotten),
            g(&self.refused),
            g(&self.export_refused)
        )
    }
}
