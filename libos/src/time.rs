//! Time: a monotonic clock from the generic timer's virtual counter, and
//! sleeping on the per-core virtual timer interrupt.

use core::sync::atomic::{AtomicU64, Ordering};
use core::time::Duration;

/// Counter ticks per second, learned at boot.
static FREQUENCY: AtomicU64 = AtomicU64::new(1);

/// A point on the monotonic clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Instant(u64);

fn ticks_to_duration(ticks: u64) -> Duration {
    let hz = FREQUENCY.load(Ordering::Relaxed);
    Duration::new(ticks / hz, ((ticks % hz) * 1_000_000_000 / hz) as u32)
}

fn duration_to_ticks(d: Duration) -> u64 {
    let hz = FREQUENCY.load(Ordering::Relaxed) as u128;
    (d.as_nanos() * hz).div_ceil(1_000_000_000) as u64
}

impl Instant {
    /// The instant at counter value `ticks`.
    #[cfg_attr(not(target_os = "none"), allow(dead_code))]
    pub(crate) fn from_ticks(ticks: u64) -> Instant {
        Instant(ticks)
    }

    /// Time elapsed since `earlier` (zero if `earlier` is later).
    pub fn duration_since(self, earlier: Instant) -> Duration {
        ticks_to_duration(self.0.saturating_sub(earlier.0))
    }

    /// Time elapsed since this instant.
    #[cfg(target_os = "none")]
    pub fn elapsed(self) -> Duration {
        now().duration_since(self)
    }

    /// Time since the machine started (the counter's zero).
    pub fn since_boot(self) -> Duration {
        ticks_to_duration(self.0)
    }

    /// The instant `d` after this one.
    pub fn after(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(duration_to_ticks(d)))
    }
}

/// How much slower than real time the wall clock runs while it gives back
/// the lead of its first estimate (1/50: it runs at 98%), so that it never
/// steps back: a key given `EXPIRE 2` then lives at most 2.04 s.
#[cfg_attr(not(target_os = "none"), allow(dead_code))]
const SLEW_DIVISOR: u64 = 50;

/// The wall clock, µs since the Unix epoch, at `uptime_us`.
///
/// `provisional` is the Unix time of boot from one RTC reading, at the
/// latest it can be (so at most a second ahead). Once `calibration` =
/// `(epoch_us, at_uptime_us)` places boot exactly, the clock is the exact
/// time plus what is left of that lead, given back at 1/[`SLEW_DIVISOR`]
/// of real time from the calibration on:
///
/// ```text
/// wall                     provisional + t (ahead by `lead`)
///  |                 ____/
///  |            ____/  <- calibration at `at`: slope 0.98 until the lead is gone
///  |       ____/
///  |  ____/ exact + t
///  +--------------------------- uptime t
/// ```
///
/// So the clock is continuous and never runs backwards.
#[cfg_attr(not(target_os = "none"), allow(dead_code))]
fn wall_clock_us(provisional: u64, calibration: Option<(u64, u64)>, uptime_us: u64) -> u64 {
    let Some((epoch, at)) = calibration else {
        return provisional + uptime_us;
    };
    let lead = provisional.saturating_sub(epoch);
    let given_back = uptime_us.saturating_sub(at) / SLEW_DIVISOR;
    epoch + uptime_us + lead.saturating_sub(given_back)
}

#[cfg(target_os = "none")]
pub use guest::*;

#[cfg(target_os = "none")]
mod guest {
    use super::*;
    use crate::arch;
    use hw::layout::MAX_CORES;

    /// The virtual timer's interrupt (a per-core PPI).
    pub const TIMER_INTID: u32 = 27;

    static TIMER_INTERRUPTS: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(0) }; MAX_CORES];

    /// Counter ticks each core spent waiting for an interrupt.
    static IDLE_TICKS: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(0) }; MAX_CORES];

    /// Waits for an interrupt (IRQs masked by the caller), counting the
    /// wait as the core's idle time.
    fn idle_wait() {
        let start = arch::counter();
        arch::wait_for_interrupt();
        let waited = arch::counter().saturating_sub(start);
        IDLE_TICKS[arch::core_id()].fetch_add(waited, Ordering::Relaxed);
    }

    /// One wait, IRQs masked by the caller: the timer armed for
    /// `deadline`, a WFI until it or another interrupt, the interrupt let
    /// in to be taken, and IRQs masked again.
    fn wait_once(deadline: Instant) {
        arch::timer_arm(deadline.0);
        idle_wait();
        arch::irq_enable();
        arch::irq_save_disable();
    }

    /// Time the calling core has spent running since boot (not waiting
    /// for an interrupt): the CPU time of what runs on it, kernel and
    /// application alike, which are one program here.
    pub fn busy_time() -> Duration {
        let idle = IDLE_TICKS[arch::core_id()].load(Ordering::Relaxed);
        uptime().saturating_sub(ticks_to_duration(idle))
    }

    /// Learns the counter frequency (board default if firmware set none).
    pub(crate) fn init(default_hz: u64) {
        let hz = match arch::counter_frequency() {
            0 => default_hz,
            hz => hz,
        };
        FREQUENCY.store(hz, Ordering::Relaxed);
    }

    /// Installs the timer interrupt on the calling core.
    pub(crate) fn init_core() {
        arch::timer_disarm();
        crate::irq::enable_local(TIMER_INTID, on_timer);
    }

    fn on_timer() {
        arch::timer_disarm();
        TIMER_INTERRUPTS[arch::core_id()].fetch_add(1, Ordering::Relaxed);
    }

    /// The current instant.
    pub fn now() -> Instant {
        Instant(arch::counter())
    }

    /// Time since the machine started.
    pub fn uptime() -> Duration {
        now().since_boot()
    }

    /// Counter frequency in Hz.
    pub fn frequency() -> u64 {
        FREQUENCY.load(Ordering::Relaxed)
    }

    /// Timer interrupts taken so far by `core`.
    pub fn timer_interrupts(core: usize) -> u64 {
        TIMER_INTERRUPTS[core].load(Ordering::Relaxed)
    }

    /// Sleeps for at least `d`, waiting for the timer interrupt in low power.
    pub fn sleep(d: Duration) {
        sleep_until(now().after(d));
    }

    /// Wall-clock time in milliseconds since the Unix epoch: the board's
    /// RTC plus the monotonic clock; without an RTC it counts from boot.
    ///
    /// The RTC counts whole seconds. Until this core has seen it tick
    /// while idle (see [`calibrate_while_idle`]), one reading places the
    /// boot only within a second, and the clock is taken at that second's
    /// end, so it is never behind the RTC (at most a second ahead); once a
    /// tick is seen, the clock runs 2% slow until it is exact, and never
    /// steps back (see `wall_clock_us`). No caller waits for a tick: the
    /// key-value store is ready within its first 100 ms.
    pub fn unix_time_ms() -> u64 {
        let provisional = provisional_epoch_us();
        let calibration = match PRECISE_EPOCH_US.load(Ordering::Acquire) {
            UNSET => None,
            precise => Some((precise, CALIBRATED_AT_US.load(Ordering::Relaxed))),
        };
        wall_clock_us(provisional, calibration, uptime().as_micros() as u64) / 1000
    }

    /// "Not known yet", for the epochs below.
    const UNSET: u64 = u64::MAX;
    /// The Unix time of boot in µs, from an RTC tick seen while idle.
    static PRECISE_EPOCH_US: AtomicU64 = AtomicU64::new(UNSET);
    /// The uptime in µs when [`PRECISE_EPOCH_US`] was learned (stored
    /// before it).
    static CALIBRATED_AT_US: AtomicU64 = AtomicU64::new(0);
    /// The Unix time of boot in µs, from one RTC reading, at the latest
    /// it can be.
    static PROVISIONAL_EPOCH_US: AtomicU64 = AtomicU64::new(UNSET);

    fn provisional_epoch_us() -> u64 {
        let known = PROVISIONAL_EPOCH_US.load(Ordering::Relaxed);
        if known != UNSET {
            return known;
        }
        let epoch = match hw::board::CURRENT.rtc_pl031 {
            Some(base) => {
                let count = rtc(base).read(0);
                (u64::from(count) + 1) * 1_000_000 - uptime().as_micros() as u64
            }
            None => 0,
        };
        PROVISIONAL_EPOCH_US.store(epoch, Ordering::Relaxed);
        epoch
    }

    /// The board's PL031 at `base`.
    fn rtc(base: usize) -> hw::mmio::Mmio {
        // SAFETY: the board names its PL031, inside a device window the
        // kernel maps; only RTCDR (offset 0) is read, which has no side
        // effects.
        unsafe { hw::mmio::Mmio::new(base, 0x1000) }
    }

    /// Largest span in which an RTC tick is placed for calibration.
    const TICK_SPAN: Duration = Duration::from_micros(200);

    /// While this core has nothing to do (until `deadline` or `ready()`),
    /// watches the RTC for a tick, if the wall clock was asked for and is
    /// not calibrated yet. At the tick the Unix time is exactly the new count; the tick
    /// lies between the last read that saw the old count and the first
    /// that saw the new one. A span longer than [`TICK_SPAN`] (the host
    /// stopped this core in between) is not trusted, and the next tick is
    /// awaited. The tick is taken at the span's start, so the clock is
    /// never behind the RTC, and ahead by at most the span.
    fn calibrate_while_idle(deadline: Instant, ready: &impl Fn() -> bool) {
        // Only once the wall clock was asked for (an app that never asks
        // idles in WFI, and leaves the host's cores to its peers).
        if PRECISE_EPOCH_US.load(Ordering::Relaxed) != UNSET
            || PROVISIONAL_EPOCH_US.load(Ordering::Relaxed) == UNSET
        {
            return;
        }
        let Some(base) = hw::board::CURRENT.rtc_pl031 else {
            PRECISE_EPOCH_US.store(0, Ordering::Release);
            return;
        };
        let rtc = rtc(base);
        let mut before = uptime();
        let mut seconds = rtc.read(0);
        while now() < deadline && !ready() {
            let next_read = now().after(Duration::from_micros(50));
            while now() < next_read {
                core::hint::spin_loop();
            }
            let read_at = uptime();
            let count = rtc.read(0);
            let after = uptime();
            if count != seconds {
                if after.saturating_sub(before) <= TICK_SPAN {
                    let epoch =
                        (u64::from(count) * 1_000_000).saturating_sub(before.as_micros() as u64);
                    CALIBRATED_AT_US.store(after.as_micros() as u64, Ordering::Relaxed);
                    PRECISE_EPOCH_US.store(epoch, Ordering::Release);
                    return;
                }
                seconds = count;
            }
            before = read_at;
        }
    }

    /// Waits for the next interrupt, or at most `limit`.
    pub fn wait_for_interrupt_or(limit: Duration) {
        wait_for_interrupt_unless(limit, || false);
    }

    /// Like [`wait_for_interrupt_or`], but returns at once if `ready()`
    /// holds. `ready` is checked with IRQs masked, so an interrupt whose
    /// handler makes it true cannot slip in between the check and the WFI:
    /// either the handler ran before (and `ready` sees it) or the
    /// interrupt is still pending and ends the WFI.
    pub fn wait_for_interrupt_unless(limit: Duration, ready: impl Fn() -> bool) {
        let deadline = now().after(limit);
        // Idle time is when this core zeroes frames for later faults, and
        // (once) watches the RTC to calibrate the wall clock.
        crate::mm::refill_zeroed_frames();
        calibrate_while_idle(deadline, &ready);
        let irqs_were_enabled = arch::irq_save_disable();
        if !ready() {
            wait_once(deadline);
            arch::timer_disarm();
        }
        arch::irq_restore(irqs_were_enabled);
    }

    /// Sleeps until `deadline` has passed.
    pub fn sleep_until(deadline: Instant) {
        crate::mm::refill_zeroed_frames();
        // Arm and wait with IRQs masked, so the interrupt cannot slip in
        // between the check and the WFI; WFI still wakes on it, and it is
        // taken as soon as IRQs are let in again.
        let irqs_were_enabled = arch::irq_save_disable();
        while now() < deadline {
            wait_once(deadline);
        }
        arch::timer_disarm();
        arch::irq_restore(irqs_were_enabled);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_convert_both_ways() {
        FREQUENCY.store(62_500_000, Ordering::Relaxed);
        assert_eq!(ticks_to_duration(62_500_000), Duration::from_secs(1));
        assert_eq!(ticks_to_duration(625), Duration::from_micros(10));
        assert_eq!(duration_to_ticks(Duration::from_millis(2)), 125_000);
        let a = Instant(1000);
        assert_eq!(a.after(Duration::from_micros(16)).0, 2000);
        assert_eq!(Instant(5).duration_since(Instant(10)), Duration::ZERO);
    }

    #[test]
    fn the_wall_clock_gives_back_its_lead_slowly_and_never_steps_back() {
        let second = 1_000_000;
        // Boot placed 0.7 s late by the first reading; a tick seen at 3 s
        // of uptime places it exactly.
        let (exact, provisional) = (1_700_000_000 * second, 1_700_000_000 * second + 700_000);
        let calibration = Some((exact, 3 * second));
        let wall = |t| wall_clock_us(provisional, calibration, t);
        assert_eq!(
            wall_clock_us(provisional, None, 3 * second),
            wall(3 * second)
        );
        // 2% slow until the lead is gone (35 s), exact after.
        assert_eq!(wall(4 * second) - wall(3 * second), 980_000);
        assert_eq!(wall(38 * second), exact + 38 * second);
        assert_eq!(wall(60 * second), exact + 60 * second);
        let mut last = 0;
        for t in (0..40 * second).step_by(997) {
            let now = wall(t);
            assert!(now >= last, "stepped back at {t}");
            last = now;
        }
        // Without a lead (or a reading that was early), the exact time.
        assert_eq!(
            wall_clock_us(exact - 5, calibration, second),
            exact + second
        );
    }
}
