//! Where a lone small WRITE's round trip goes, as this engine sees it:
//! the device loop stamps four moments of each one (request kick seen,
//! packet handed to the kernel, first packet back, completion interrupt
//! signalled) and the next request's kick, and the exit summary prints the
//! median of each share. What lies between the interrupt and the next kick
//! is the guest's (interrupt delivery, wake-up, the app, posting, the
//! kick); between packet out and packet in, the wire and the other engine.
//!
//! ```text
//!  kick ─[post]─▶ out ─[wire + remote]─▶ in ─[complete]─▶ irq ─[guest]─▶ next kick
//! ```

use std::time::Instant;

/// Largest WRITE counted as small (a latency probe, not a transfer).
pub const SMALL: u64 = 256;
/// Samples kept per share (a run's latency pairs fit; later ones are
/// dropped, so memory stays bounded).
const KEEP: usize = 1 << 16;
/// A gap longer than this is idleness, not a share of a round trip.
const IDLE_US: u64 = 10_000;

/// Samples of one share, in microseconds.
#[derive(Default, Debug)]
struct Share(Vec<u32>);

impl Share {
    fn add(&mut self, from: Instant, to: Instant) {
        let us = to.saturating_duration_since(from).as_micros() as u64;
        if us < IDLE_US && self.0.len() < KEEP {
            self.0.push(us as u32);
        }
    }

    fn median(&self) -> Option<u32> {
        let mut v = self.0.clone();
        v.sort_unstable();
        v.get(v.len() / 2).copied()
    }
}

/// Where the loop is in a lone small WRITE's round trip.
#[derive(Clone, Copy, Debug, Default)]
enum Phase {
    /// No small WRITE in flight.
    #[default]
    Idle,
    /// Its packet went out at this moment.
    Out(Instant),
    /// Its acknowledgement came in at this moment.
    In(Instant),
}

/// The shares of this engine's lone small WRITEs, and of the requests it
/// answered for other engines.
#[derive(Default, Debug)]
pub struct Shares {
    post: Share,
    wire: Share,
    complete: Share,
    guest: Share,
    answer: Share,
    phase: Phase,
    /// When the last completion interrupt was signalled.
    irq: Option<Instant>,
}

impl Shares {
    /// A small WRITE whose request kick woke the loop at `woke` was handed
    /// to the kernel now.
    pub fn posted(&mut self, woke: Instant) {
        let now = Instant::now();
        self.post.add(woke, now);
        if let Some(irq) = self.irq.take() {
            self.guest.add(irq, woke);
        }
        self.phase = Phase::Out(now);
    }

    /// Packets came in at `woke`.
    pub fn received(&mut self, woke: Instant) {
        if let Phase::Out(out) = self.phase {
            self.wire.add(out, woke);
            self.phase = Phase::In(woke);
        }
    }

    /// A completion interrupt was signalled now.
    pub fn interrupted(&mut self) {
        let now = Instant::now();
        if let Phase::In(got) = self.phase {
            self.complete.add(got, now);
            self.irq = Some(now);
        }
        self.phase = Phase::Idle;
    }

    /// Packets that came in at `woke` were answered (acknowledged) now,
    /// with no request of this node in the turn.
    pub fn answered(&mut self, woke: Instant) {
        self.answer.add(woke, Instant::now());
    }

    /// One line for the exit summary (empty when nothing was measured).
    pub fn summary(&self) -> String {
        let m = |s: &Share| s.median().map_or("-".into(), |v| format!("{v}"));
        let mut parts = Vec::new();
        if !self.post.0.is_empty() {
            parts.push(format!(
                "lone small WRITEs ({}), median us: kick to packet out {}, out to ACK in {}, ACK in to interrupt {}, interrupt to next kick {}",
                self.post.0.len(),
                m(&self.post),
                m(&self.wire),
                m(&self.complete),
                m(&self.guest)
            ));
        }
        if !self.answer.0.is_empty() {
            parts.push(format!(
                "answered ({}), median us: packet in to answer out {}",
                self.answer.0.len(),
                m(&self.answer)
            ));
        }
        parts.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn each_share_is_taken_between_its_two_moments_and_idleness_is_left_out() {
        let mut s = Shares::default();
        let t0 = Instant::now();
        s.posted(t0);
        let out = match s.phase {
            Phase::Out(at) => at,
            p => panic!("{p:?}"),
        };
        s.received(out + Duration::from_micros(40));
        s.interrupted();
        assert_eq!(s.wire.0, vec![40]);
        assert_eq!((s.post.0.len(), s.complete.0.len()), (1, 1));
        // The guest's share runs from the interrupt to the next kick.
        let irq = s.irq.expect("an interrupt was signalled");
        s.posted(irq + Duration::from_micros(70));
        assert_eq!(s.guest.0, vec![70]);
        // Packets with no WRITE out, and gaps of idleness, count nowhere.
        let mut idle = Shares::default();
        idle.received(Instant::now());
        idle.interrupted();
        idle.posted(Instant::now());
        let out = match idle.phase {
            Phase::Out(at) => at,
            p => panic!("{p:?}"),
        };
        idle.received(out + Duration::from_millis(50));
        assert!(idle.wire.0.is_empty() && idle.guest.0.is_empty());
        assert!(s.summary().contains("out to ACK in 40"));
        assert_eq!(Shares::default().summary(), "");
    }
}
