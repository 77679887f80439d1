//! Access frequency for the LFU eviction policies: an 8-bit counter that
//! grows logarithmically with accesses and shrinks with idle minutes.
//!
//! A plain count would overflow and would remember a burst of reads from
//! long ago forever. Instead each access raises the counter with a
//! probability that falls as the counter grows (`lfu-log-factor` says how
//! fast), so 255 stands for about a million accesses at the default
//! factor; and every `lfu-decay-time` minutes without access take one off
//! (0: never), so a key that stops being read loses its place.

use faultline_rng::XorShift64Star;

/// The counter a new key starts with, so that it is not the first to go
/// before it had a chance to be read.
pub const INITIAL: u8 = 5;

/// How the counters of a store grow and shrink: `lfu-log-factor` and
/// `lfu-decay-time`, copied from the settings before each command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LfuTuning {
    /// The higher, the more accesses one step of the counter takes.
    pub log_factor: u64,
    /// Minutes of idleness that take one off the counter; 0: never.
    pub decay_minutes: u64,
}

/// Redis's defaults: factor 10, one step per idle minute.
impl Default for LfuTuning {
    fn default() -> Self {
        LfuTuning {
            log_factor: 10,
            decay_minutes: 1,
        }
    }
}

/// One key's access frequency: the counter and the minute (of the store's
/// clock, modulo 2^16) it was last brought up to date.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frequency {
    counter: u8,
    minute: u16,
}

/// The minute of a millisecond clock, kept in 16 bits (wrapping after 45
/// days, which only shortens the decay of a key idle that long).
fn minute_of(now_ms: u64) -> u16 {
    (now_ms / 60_000) as u16
}

impl Frequency {
    /// The frequency of a key created at `now_ms`.
    pub fn new(now_ms: u64) -> Self {
        Frequency {
            counter: INITIAL,
            minute: minute_of(now_ms),
        }
    }

    /// A frequency whose counter is `counter` at `now_ms`: what `RESTORE
    /// ... FREQ` sets.
    pub fn with_counter(counter: u8, now_ms: u64) -> Self {
        Frequency {
            counter,
            minute: minute_of(now_ms),
        }
    }

    /// The counter at `now_ms`, decayed by the minutes since it was last
    /// updated: what `OBJECT FREQ` answers and what eviction compares.
    ///
    /// ```
    /// use kvstore::store::{Frequency, LfuTuning};
    ///
    /// let tuning = LfuTuning { log_factor: 10, decay_minutes: 2 };
    /// let freq = Frequency::new(0);
    /// assert_eq!(freq.decayed(59_000, tuning), 5);
    /// assert_eq!(freq.decayed(4 * 60_000, tuning), 3, "two steps in four minutes");
    /// assert_eq!(freq.decayed(60 * 60_000, tuning), 0);
    /// ```
    pub fn decayed(&self, now_ms: u64, tuning: LfuTuning) -> u8 {
        if tuning.decay_minutes == 0 {
            return self.counter;
        }
        let idle = u64::from(minute_of(now_ms).wrapping_sub(self.minute));
        let steps = idle / tuning.decay_minutes;
        self.counter.saturating_sub(steps.min(255) as u8)
    }

    /// Records one access at `now_ms`: decays the counter, then raises it
    /// by one with probability 1 / ((counter - INITIAL) * log_factor + 1),
    /// drawn from `random`.
    ///
    /// ```
    /// use kvstore::store::{Frequency, LfuTuning};
    ///
    /// let eager = LfuTuning { log_factor: 0, decay_minutes: 1 };
    /// let mut freq = Frequency::new(0);
    /// for r in 0..10 {
    ///     freq.touch(1_000, eager, r);
    /// }
    /// assert_eq!(freq.decayed(1_000, eager), 15, "factor 0 counts every access");
    /// ```
    pub fn touch(&mut self, now_ms: u64, tuning: LfuTuning, random: u64) {
        let mut counter = self.decayed(now_ms, tuning);
        if counter < u8::MAX {
            let base = u64::from(counter.saturating_sub(INITIAL));
            let odds = base.saturating_mul(tuning.log_factor).saturating_add(1);
            if random.is_multiple_of(odds) {
                counter += 1;
            }
        }
        self.counter = counter;
        self.minute = minute_of(now_ms);
    }
}

/// Pseudo-random draws for [`Frequency::touch`] (faultline-rng's
/// xorshift64*: cheap, and nothing depends on them but how fast counters
/// grow).
#[derive(Clone, Debug)]
pub struct Draws(XorShift64Star);

/// Any nonzero seed will do; the same one every run.
impl Default for Draws {
    fn default() -> Self {
        Draws(XorShift64Star::new(0x9e37_79b9_7f4a_7c15))
    }
}

impl Draws {
    /// The next draw.
    pub fn draw(&mut self) -> u64 {
        self.0.next_u64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counter_grows_ever_more_slowly() {
        let tuning = LfuTuning::default();
        let (mut freq, mut rng) = (Frequency::new(0), Draws::default());
        let mut after = [0u8; 3];
        for (i, accesses) in [100, 10_000, 1_000_000].into_iter().enumerate() {
            freq = Frequency::new(0);
            for _ in 0..accesses {
                freq.touch(0, tuning, rng.draw());
            }
            after[i] = freq.decayed(0, tuning);
        }
        // Redis's table for factor 10: about 10, 18..20 then 255 after
        // a hundred, ten thousand and a million hits... within noise.
        assert!((8..=14).contains(&after[0]), "{after:?}");
        assert!((40..=80).contains(&after[1]), "{after:?}");
        assert!(after[2] >= 200, "{after:?}");
        assert!(after[0] < after[1] && after[1] < after[2]);
        assert_eq!(
            freq.decayed(
                0,
                LfuTuning {
                    decay_minutes: 0,
                    ..tuning
                }
            ),
            after[2]
        );
    }

    #[test]
    fn idle_minutes_bring_it_down_and_never_below_zero() {
        let tuning = LfuTuning::default();
        let mut freq = Frequency::new(0);
        freq.touch(
            0,
            LfuTuning {
                log_factor: 0,
                ..tuning
            },
            1,
        );
        assert_eq!(freq.decayed(0, tuning), 6);
        assert_eq!(freq.decayed(3 * 60_000, tuning), 3);
        freq.touch(3 * 60_000, tuning, 1);
        assert!(
            freq.decayed(3 * 60_000, tuning) <= 4,
            "decayed before counting"
        );
        assert_eq!(freq.decayed(1_000 * 60_000, tuning), 0);
        let never = LfuTuning {
            decay_minutes: 0,
            ..tuning
        };
        assert_eq!(
            freq.decayed(1_000 * 60_000, never),
            freq.decayed(3 * 60_000, tuning)
        );
    }
}
