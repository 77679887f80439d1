//! `CLIENT PAUSE timeout [WRITE|ALL]` and `CLIENT UNPAUSE`: while a pause
//! holds, the affected clients' commands wait (they are not refused) until
//! it ends, and keys neither expire nor are evicted, as in Redis 7.0.
//!
//! ```text
//!  CLIENT PAUSE 500 WRITE ──► until now+500: writes (and EVAL, EVALSHA,
//!                             FCALL, PUBLISH, SPUBLISH, PFCOUNT, an EXEC
//!                             of any of them) wait in their sessions
//!  CLIENT PAUSE 500 [ALL] ──► every command waits
//!  CLIENT UNPAUSE, or the time is up ──► the server runs what waited
//! ```

/// The pause in force, if any.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pause {
    /// When it ends (ms, the engine's clock); past: no pause.
    until_ms: u64,
    /// `ALL` (every command) rather than `WRITE`.
    all: bool,
}

/// The commands Redis 7.0 flags "may replicate": held by a `WRITE` pause
/// like writes, although not writes themselves.
pub const MAY_REPLICATE: &[&str] = &["eval", "evalsha", "fcall", "pfcount", "publish", "spublish"];

impl Pause {
    /// `CLIENT PAUSE` at `now_ms` until `until_ms`: the new mode replaces
    /// the old one and the later end wins, as in Redis.
    pub fn start(&mut self, now_ms: u64, until_ms: u64, all: bool) {
        let until = match self.active(now_ms) {
            true => self.until_ms.max(until_ms),
            false => until_ms,
        };
        *self = Pause {
            until_ms: until,
            all,
        };
    }

    /// `CLIENT UNPAUSE`.
    pub fn end(&mut self) {
        *self = Pause::default();
    }

    /// Whether a pause holds at `now_ms`.
    pub fn active(&self, now_ms: u64) -> bool {
        now_ms < self.until_ms
    }

    /// Whether a command waits at `now_ms`; `writes`: it may write.
    pub fn holds(&self, now_ms: u64, writes: bool) -> bool {
        self.active(now_ms) && (self.all || writes)
    }

    /// When the pause in force at `now_ms` ends, if one is.
    pub fn deadline(&self, now_ms: u64) -> Option<u64> {
        self.active(now_ms).then_some(self.until_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pause_holds_its_commands_until_it_ends() {
        let mut p = Pause::default();
        assert!(!p.holds(0, true));
        p.start(100, 600, false);
        assert!(p.holds(100, true) && !p.holds(100, false), "WRITE");
        assert_eq!(p.deadline(599), Some(600));
        p.start(200, 400, true);
        assert!(p.holds(500, false), "ALL now, and the later end kept");
        assert!(!p.holds(600, true), "time is up");
        assert_eq!(p.deadline(600), None);
        p.start(700, 800, false);
        p.end();
        assert!(!p.active(700));
    }
}
