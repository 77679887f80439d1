//! How a log rewrite shares the core with the clients.
//!
//! ```text
//!  loaded:  serve ██████ step █ serve ████████ step ██ serve ...
//!           each pass that serves earns a quarter of its time as credit,
//!           and time the server slept (nothing to do) counts whole; a
//!           step spends it, and one that runs over (a large key is
//!           written in one step) leaves a debt that is paid first
//!  idle:    no request for IDLE_AFTER ──► steps of a whole `step` each
//!  urgent:  the log nearly full       ──► steps of a whole `step` each
//! ```
//!
//! A pass of the server's loop that finds no request waiting is not a
//! sign of an idle core (under pipelined load the clients are reading
//! their replies, and the next requests are on their way), so the
//! rewrite's share is measured against serving time, and against the
//! time the core really was idle, not taken whenever a pass comes up
//! empty.

use core::time::Duration;

/// No request served for this long: the server is idle, and the rewrite
/// takes whole steps.
pub const IDLE_AFTER: Duration = Duration::from_millis(10);

/// The time a log rewrite may take, pass by pass of the server's loop:
/// under load a quarter of the time spent serving, so that the rewrite
/// takes about a fifth of the core; all it wants when the server is idle or
/// the log nearly full.
///
/// ```
/// use core::time::Duration;
/// use kvstore::aof::RewritePace;
///
/// let ms = Duration::from_millis;
/// let mut pace = RewritePace::new(ms(2));
/// // A pass served requests for 4 ms: the rewrite may take 1 ms.
/// assert_eq!(pace.budget(ms(100), ms(4), true, false), ms(1));
/// // Its step wrote a large key and took 9 ms: 8 ms of debt, paid by the
/// // next 32 ms of serving, during which it takes no step.
/// pace.spent(ms(9));
/// assert_eq!(pace.budget(ms(120), ms(20), true, false), Duration::ZERO);
/// assert_eq!(pace.budget(ms(132), ms(12), true, false), Duration::ZERO);
/// assert_eq!(pace.budget(ms(136), ms(4), true, false), ms(1));
/// // Nothing served for 10 ms: idle, a whole step.
/// pace.spent(ms(1));
/// assert_eq!(pace.budget(ms(146), Duration::ZERO, false, false), ms(2));
/// ```
#[derive(Clone, Debug)]
pub struct RewritePace {
    /// The longest step: what an idle server gives at once.
    step: Duration,
    /// Time the rewrite may take under load, in microseconds; negative
    /// after a step ran over.
    credit_us: i64,
    /// When a pass last served a request (time since boot).
    last_served: Duration,
    /// Whether the step under way is paid from the credit (under load).
    charged: bool,
}

impl RewritePace {
    /// Pacing with steps of at most `step`.
    pub fn new(step: Duration) -> Self {
        RewritePace {
            step,
            credit_us: 0,
            last_served: Duration::ZERO,
            charged: false,
        }
    }

    /// How long the rewrite may step now (zero: not this pass), after a
    /// pass of the loop that ended at `now` (time since boot) and spent
    /// `served_for` serving, `served` saying whether it served a request at
    /// all; `urgent` when the log is nearly full.
    pub fn budget(
        &mut self,
        now: Duration,
        served_for: Duration,
        served: bool,
        urgent: bool,
    ) -> Duration {
        let step_us = micros(self.step);
        if served {
            self.last_served = now;
            self.credit_us = (self.credit_us + micros(served_for) / 4).min(step_us);
        }
        let idle = now.saturating_sub(self.last_served) >= IDLE_AFTER;
        self.charged = !(urgent || idle);
        if !self.charged {
            return self.step;
        }
        Duration::from_micros(self.credit_us.max(0) as u64)
    }

    /// The server slept for `d` with nothing to do: the rewrite may have
    /// that time (at most a whole step at once).
    pub fn slept(&mut self, d: Duration) {
        self.credit_us = (self.credit_us + micros(d)).min(micros(self.step));
    }

    /// The step took `took`; under load it is paid from the credit.
    pub fn spent(&mut self, took: Duration) {
        if self.charged {
            self.credit_us -= micros(took);
        }
    }

    /// How long the server may sleep at most while a rewrite waits: until
    /// it counts as idle, from `now`, and the rewrite takes whole steps.
    pub fn until_idle(&self, now: Duration) -> Duration {
        (self.last_served + IDLE_AFTER).saturating_sub(now)
    }
}

fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn under_load_the_rewrite_takes_a_fifth_of_the_time() {
        let mut pace = RewritePace::new(ms(2));
        let (mut now, mut serving, mut rewriting) = (ms(0), ms(0), ms(0));
        // Passes of 3 ms serving; each step runs 5 ms over what it was
        // given when it runs at all (large keys).
        for _ in 0..1000 {
            now += ms(3);
            serving += ms(3);
            let budget = pace.budget(now, ms(3), true, false);
            if !budget.is_zero() {
                let took = budget + ms(5);
                pace.spent(took);
                now += took;
                rewriting += took;
            }
        }
        let share = rewriting.as_secs_f64() / (serving + rewriting).as_secs_f64();
        assert!((0.15..=0.21).contains(&share), "share {share}");
    }

    #[test]
    fn an_empty_pass_under_load_gives_no_step() {
        let mut pace = RewritePace::new(ms(2));
        assert_eq!(pace.budget(ms(50), ms(4), true, false), ms(1));
        pace.spent(ms(1));
        // The clients are reading their replies: nothing came in.
        assert_eq!(pace.budget(ms(51), ms(0), false, false), Duration::ZERO);
        assert_eq!(pace.until_idle(ms(51)), ms(9));
    }

    #[test]
    fn time_slept_between_requests_is_the_rewrites() {
        // One client, one request at a time: the server serves for 50 us
        // and sleeps 400 us until the next request.
        let mut pace = RewritePace::new(ms(2));
        let us = Duration::from_micros;
        let (mut now, mut rewriting) = (ms(100), Duration::ZERO);
        for _ in 0..100 {
            now += us(50);
            let budget = pace.budget(now, us(50), true, false);
            pace.spent(budget);
            rewriting += budget;
            now += budget;
            pace.slept(us(400));
            now += us(400);
        }
        assert!(rewriting >= ms(39), "the rewrite had {rewriting:?}");
    }

    #[test]
    fn idle_or_urgent_steps_are_whole_and_leave_no_debt() {
        let mut pace = RewritePace::new(ms(2));
        assert_eq!(pace.budget(ms(50), ms(4), true, true), ms(2));
        pace.spent(ms(40));
        assert_eq!(pace.budget(ms(100), ms(0), false, false), ms(2));
        pace.spent(ms(40));
        // Load again: the credit is what serving earns.
        assert_eq!(pace.budget(ms(150), ms(4), true, false), ms(2));
        assert_eq!(pace.until_idle(ms(200)), Duration::ZERO);
    }
}
