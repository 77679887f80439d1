//! Adaptive prefetch for the `FaultAwarePrefetch` policy (the paper's
//! proposed future work): cold transfers are prepared segment by segment
//! ahead of the device, and faults widen a prefetch window.
//!
//! # Cold transfers on an aborting SMMU: prepare, do not fault
//!
//! ```text
//!  first poll of the transfer (the probe, O(pages of one segment)):
//!     every page of segment 0 resident?  yes: warm, run as FaultAware + the
//!                                             fault window below (no cost)
//!                                        no:  cold
//!  cold, poll, for each new segment i the window has room for:
//!     make resident the pages of i (unless already prepared), start i
//!  cold, the window is full (or the engine busy):
//!     make resident the pages of the next segment (one ahead), start later
//!  warm, a fault (a page that was not resident after all):  now cold
//!
//!  time ─►   prepare 0 │ prepare 1 │ prepare 2 │ ...   (CPU, in poll)
//!                      │ DMA 0     │ DMA 1     │ DMA 2 (device)
//!            └─setup──┘  setup_ns = segment 0's pages only, whatever the size
//! ```
//!
//! "Make resident" is [`Memory::make_resident`](crate::Memory::make_resident),
//! exactly what a fault on the page would call, preceded by the cheap
//! `is_resident`; the pages are counted in
//! [`Stats::pages_prepared`](crate::Stats::pages_prepared). Work per poll is
//! bounded by the engine's free window slots plus one segment, so
//! completions keep flowing and the device is never left waiting for a
//! buffer-sized setup. An error fails the transfer with the memory
//! manager's reason, as the device's fault on that page would. Nothing
//! depends on the preparation for correctness: a prepared page evicted
//! before the device reaches it faults and goes through the fault path (and
//! the window below) like any other.
//!
//! Why: behind an aborting SMMU a fault does not delay the device, it spoils
//! the data. Every fault costs a retransmission of the spoiled span, a trip
//! through the event queue (one record per small access: about a thousand
//! per 4 KiB page on QEMU) and the fault service; and since the device runs
//! its queued segments before the kernel sees the first event, on a cold
//! buffer most of what was in flight is spoiled before any fault is
//! resolved. Resolving a page ahead costs the same `make_resident` and none
//! of that, and it overlaps with the DMA of the previous segments, so a cold
//! transfer does the same page work as `Pin` without the pinning and without
//! the up-front pass over the buffer. A stalling engine (the RDMA engine)
//! loses no data on a fault, but each fault parks the segment for a round
//! trip through the event queue and the fault service, so it is prepared
//! for in the same way.
//!
//! # The prefetch window on faults
//!
//! The rule, per transfer, with `k` in pages:
//!
//! ```text
//!  fault that needed resolving at page p:
//!     p == front  (right after the previous window: streaming)  k = min(2k, max)
//!     otherwise   (first fault, or a jump)                      k = initial
//!     make resident p+1 ..= p+k (within the transfer);  front = p+k+1
//!
//!  while streaming, before a segment ending at page e starts:
//!     if e+k >= front: make resident front ..= e+k;     front = e+k+1
//! ```
//!
//! The first half is prefetch on fault. The second keeps the window sliding
//! ahead of the segments as they start: without it a device that runs a
//! whole window of segments before the kernel sees the first fault (QEMU's
//! device models do the whole DMA on the doorbell write) would fault on
//! every page anyway, because by the time a fault is handled the device has
//! already passed the pages prefetched for it. Faults on pages that were
//! already resident when handled (the SMMU aborted the access before an
//! earlier fault made the page resident) resolve nothing and leave `k`
//! alone. A failed prefetch stops the window quietly; the page faults on its
//! own later and fails the transfer then, with its reason.

use core::ops::Range;

/// Bounds of the prefetch window, in pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrefetchConfig {
    /// Window after a non-sequential fault (at least 1).
    pub initial: usize,
    /// Largest window (at least `initial`).
    pub max: usize,
}

impl Default for PrefetchConfig {
    fn default() -> Self {
        PrefetchConfig {
            initial: 4,
            max: 64,
        }
    }
}

/// The window state of one transfer, in page numbers (address / page size).
/// The kernel also keeps one per device for faults outside any transfer
/// (an RDMA engine writing into this node): the same streaming rule,
/// bounded by the end of the region instead of the transfer's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prefetcher {
    k: usize,
    front: Option<usize>,
    streaming: bool,
}

impl Prefetcher {
    /// A window that has seen no fault yet.
    pub fn new(cfg: &PrefetchConfig) -> Self {
        Prefetcher {
            k: cfg.initial.max(1),
            front: None,
            streaming: false,
        }
    }

    /// A fault at page `p` had to be resolved: the pages to prefetch.
    pub fn on_fault(&mut self, cfg: &PrefetchConfig, p: usize) -> Range<usize> {
        let initial = cfg.initial.max(1);
        self.streaming = self.front == Some(p);
        self.k = if self.streaming {
            self.k.saturating_mul(2).min(cfg.max.max(initial))
        } else {
            initial
        };
        let window = p.saturating_add(1)..p.saturating_add(1).saturating_add(self.k);
        self.front = Some(window.end);
        window
    }

    /// A fault at page `p` of a device streaming into memory with several
    /// requests in flight (incoming RDMA): their faults arrive slightly out
    /// of order, so any fault within one largest window of the front, behind
    /// or ahead, counts as streaming. Only pages at or past the
    /// front are returned (the ones behind it were resolved already).
    pub fn on_stream_fault(&mut self, cfg: &PrefetchConfig, p: usize) -> Range<usize> {
        let initial = cfg.initial.max(1);
        let max = cfg.max.max(initial);
        let streaming = self
            .front
            .is_some_and(|f| p.saturating_add(max) >= f && p <= f.saturating_add(max));
        self.k = if streaming {
            self.k.saturating_mul(2).min(max)
        } else {
            initial
        };
        let from = match self.front {
            Some(f) if streaming => f.max(p.saturating_add(1)),
            _ => p.saturating_add(1),
        };
        let end = p.saturating_add(1).saturating_add(self.k).max(from);
        self.front = Some(end);
        from..end
    }

    /// A segment whose last page is `last` is about to start: the pages to
    /// prefetch now (empty unless streaming).
    pub(crate) fn run_ahead(&mut self, last: usize) -> Range<usize> {
        let (true, Some(front)) = (self.streaming, self.front) else {
            return 0..0;
        };
        let target = last.saturating_add(1).saturating_add(self.k);
        if target <= front {
            return 0..0;
        }
        self.front = Some(target);
        front..target
    }

    /// Current window size.
    #[cfg(test)]
    pub(crate) fn k(&self) -> usize {
        self.k
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_doubles_while_streaming_and_resets_on_a_jump() {
        let cfg = PrefetchConfig { initial: 2, max: 8 };
        let mut p = Prefetcher::new(&cfg);
        assert_eq!(p.on_fault(&cfg, 10), 11..13);
        assert_eq!(p.on_fault(&cfg, 13), 14..18);
        assert_eq!(p.on_fault(&cfg, 18), 19..27);
        assert_eq!(p.on_fault(&cfg, 27), 28..36, "capped at max");
        assert_eq!(p.k(), 8);
        assert_eq!(p.on_fault(&cfg, 100), 101..103, "a jump shrinks back");
        assert_eq!(p.k(), 2);
    }

    #[test]
    fn out_of_order_stream_faults_still_grow_the_window() {
        let cfg = PrefetchConfig {
            initial: 4,
            max: 64,
        };
        let mut p = Prefetcher::new(&cfg);
        assert_eq!(p.on_stream_fault(&cfg, 100), 101..105);
        // Faults of other requests in flight, a little ahead of the front.
        assert_eq!(p.on_stream_fault(&cfg, 115), 116..124);
        assert_eq!(
            p.on_stream_fault(&cfg, 110),
            124..127,
            "only past the front"
        );
        assert_eq!(p.k(), 16);
        assert_eq!(
            p.on_stream_fault(&cfg, 5000),
            5001..5005,
            "far away: a new stream"
        );
    }

    #[test]
    fn run_ahead_only_while_streaming() {
        let cfg = PrefetchConfig {
            initial: 4,
            max: 64,
        };
        let mut p = Prefetcher::new(&cfg);
        assert_eq!(p.run_ahead(3), 0..0, "nothing known yet");
        p.on_fault(&cfg, 0);
        assert_eq!(p.run_ahead(3), 0..0, "one fault is not a stream");
        p.on_fault(&cfg, 5);
        assert_eq!(p.k(), 8);
        assert_eq!(p.run_ahead(10), 14..19);
        assert_eq!(p.run_ahead(10), 0..0, "already ahead");
        p.on_fault(&cfg, 40);
        assert_eq!(p.run_ahead(60), 0..0, "a jump stops the run-ahead");
    }
}
