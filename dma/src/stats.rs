//! Counters and times per transfer and per policy: the numbers the
//! benchmarks print side by side to compare the policies.

use core::fmt;

/// Plain counters; the scheduler keeps one per transfer and one sum per
/// [`Policy`](crate::Policy). All byte counts are in bytes, times in ns of
/// [`Memory::now`](crate::Memory::now).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Transfers finished (done or failed).
    pub transfers: u64,
    /// Transfers that failed.
    pub failures: u64,
    /// Bytes the transfers asked for.
    pub bytes_requested: u64,
    /// Bytes the engines reported moved, retransmissions included.
    pub bytes_moved: u64,
    /// Segments the transfers were cut into (first attempts started).
    pub segments: u64,
    /// Faulted pages: one per (segment attempt, page), after dedup.
    pub faults: u64,
    /// Raw fault events matched to the transfers, duplicates included.
    pub fault_events: u64,
    /// Pages made resident ahead of need by the prefetcher.
    pub pages_prefetched: u64,
    /// Pages a cold `FaultAwarePrefetch` transfer made resident right before
    /// the segment holding them started (see [`crate::prefetch`]).
    pub pages_prepared: u64,
    /// Pages made resident by the `Pin`/`Prefault` setup.
    pub pages_setup: u64,
    /// Retransmissions started.
    pub retransmissions: u64,
    /// Bytes those retransmissions covered.
    pub retransmitted_bytes: u64,
    /// Stalled segments resumed (engines with `can_resume`).
    pub resumes: u64,
    /// In-flight segments treated as faulted because fault events were lost.
    pub lost_event_segments: u64,
    /// Time spent before the first segment starts: `Pin`/`Prefault` setup,
    /// or the preparation of a cold `FaultAwarePrefetch` transfer's first
    /// segment (waiting for a busy engine not included).
    pub setup_ns: u64,
    /// Time from the start of setup to the end of the transfer.
    pub total_ns: u64,
}

impl Stats {
    /// Adds every counter of `other` to `self` (for per-policy sums).
    pub fn add(&mut self, other: &Stats) {
        self.transfers += other.transfers;
        self.failures += other.failures;
        self.bytes_requested += other.bytes_requested;
        self.bytes_moved += other.bytes_moved;
        self.segments += other.segments;
        self.faults += other.faults;
        self.fault_events += other.fault_events;
        self.pages_prefetched += other.pages_prefetched;
        self.pages_prepared += other.pages_prepared;
        self.pages_setup += other.pages_setup;
        self.retransmissions += other.retransmissions;
        self.retransmitted_bytes += other.retransmitted_bytes;
        self.resumes += other.resumes;
        self.lost_event_segments += other.lost_event_segments;
        self.setup_ns += other.setup_ns;
        self.total_ns += other.total_ns;
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "transfers {} (failed {}), requested {} B, moved {} B, segments {}, \
             faults {} ({} events), prefetched {} pages, prepared {} pages, setup {} pages, \
             retransmitted {} B in {}, resumes {}, lost-event segments {}, \
             setup {} ns, total {} ns",
            self.transfers,
            self.failures,
            self.bytes_requested,
            self.bytes_moved,
            self.segments,
            self.faults,
            self.fault_events,
            self.pages_prefetched,
            self.pages_prepared,
            self.pages_setup,
            self.retransmitted_bytes,
            self.retransmissions,
            self.resumes,
            self.lost_event_segments,
            self.setup_ns,
            self.total_ns
        )
    }
}
