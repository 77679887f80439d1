//! Deadlines for devices: a device that holds segments and completes none
//! of them for too long has stopped, and its transfers must end with an
//! error instead of waiting forever.
//!
//! ```text
//!  each service pass:  busy? ─no──► idle (the clock restarts when work starts)
//!                        │yes
//!                        ▼
//!                    progressed? ─yes──► last progress = now
//!                        │no
//!                        ▼
//!                    now - last progress ≥ deadline ──► expired: stop the
//!                    device, end its segments with EngineError::TimedOut
//! ```
//!
//! The watchdog only decides; the kernel stops the device (so it can no
//! longer write the memory of the transfers that fail) and reports.

/// How long a busy device may go without completing anything, by default.
/// Generous: under QEMU's emulation on a loaded host a single command can
/// take a second; no device here legitimately takes ten.
pub const DEFAULT_DEADLINE_NS: u64 = 10_000_000_000;

/// One device's deadline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Watchdog {
    deadline_ns: u64,
    /// When the device last completed something, or became busy.
    since_ns: Option<u64>,
}

impl Watchdog {
    /// A watchdog that fires after `deadline_ns` of being busy without
    /// progress.
    pub fn new(deadline_ns: u64) -> Self {
        Watchdog {
            deadline_ns,
            since_ns: None,
        }
    }

    /// Called on every pass with the time (`now_ns`, any monotonic clock),
    /// whether the device holds segments, and whether it completed one
    /// since the last pass; `true` once it has been busy without progress
    /// for the deadline.
    ///
    /// ```
    /// use dma::watchdog::Watchdog;
    ///
    /// let mut w = Watchdog::new(100);
    /// assert!(!w.check(0, true, false));    // work starts: the clock starts
    /// assert!(!w.check(60, true, true));    // progress: it starts again
    /// assert!(!w.check(150, true, false));
    /// assert!(w.check(160, true, false));   // 100 without progress
    /// ```
    pub fn check(&mut self, now_ns: u64, busy: bool, progressed: bool) -> bool {
        if !busy {
            self.since_ns = None;
            return false;
        }
        let since = match self.since_ns {
            Some(since) if !progressed => since,
            _ => {
                self.since_ns = Some(now_ns);
                now_ns
            }
        };
        now_ns.saturating_sub(since) >= self.deadline_ns
    }
}

impl Default for Watchdog {
    fn default() -> Self {
        Watchdog::new(DEFAULT_DEADLINE_NS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_idle_device_never_expires() {
        let mut w = Watchdog::new(10);
        for t in 0..100 {
            assert!(!w.check(t * 100, false, false));
        }
    }

    #[test]
    fn a_device_that_keeps_completing_never_expires() {
        let mut w = Watchdog::new(10);
        for t in 0..100 {
            assert!(!w.check(t * 9, true, true));
        }
    }

    #[test]
    fn idle_time_does_not_count_against_the_next_burst() {
        let mut w = Watchdog::new(10);
        assert!(!w.check(0, true, false));
        assert!(!w.check(5, false, false));
        assert!(!w.check(100, true, false), "busy again: a fresh deadline");
        assert!(!w.check(109, true, false));
        assert!(w.check(110, true, false));
    }

    #[test]
    fn a_clock_that_goes_back_does_not_fire() {
        let mut w = Watchdog::new(10);
        assert!(!w.check(100, true, false));
        assert!(!w.check(50, true, false));
    }
}
