//! The steps of a fuzzed engine session, built from the fuzzer's bytes:
//! commands from kvstore-gen's generator in its hostile profile (every
//! command, `kvstore_gen::hostile_command`), and what the server does
//! between them (the clock, background expiry, log rewrites, whole scans).

use kvstore_gen::choices::Input;
use kvstore_gen::hostile_command as command;

/// One step of a fuzzed session.
#[derive(Debug)]
pub enum Op {
    /// Client `client` (0..3) runs `args`.
    Run {
        /// Which of the session's clients.
        client: usize,
        /// The command and its arguments.
        args: Vec<Vec<u8>>,
    },
    /// The clock moves forward.
    Advance(u64),
    /// One step of background expiry, examining up to this many keys.
    ActiveExpire(usize),
    /// The server starts compacting the log.
    RewriteStart,
    /// The compaction scans about this many more keys.
    RewriteStep(usize),
    /// The compaction runs to its end and its log replaces the old one.
    RewriteFinish,
    /// A whole `SCAN` from cursor 0, this many keys a step, and `KEYS *`:
    /// both must name exactly the live keys.
    FullScan(usize),
}

/// Builds the next step; `now` is the session's clock in milliseconds
/// (expiry times are drawn around it).
pub fn next_op(inp: &mut Input<'_>, now: u64) -> Op {
    match inp.byte() {
        0..=199 => Op::Run {
            client: inp.below(3),
            args: command(inp, now),
        },
        200..=229 => Op::Advance(inp.pick(&[
            0, 1, 2, 499, 500, 501, 999, 1000, 1001, 10_000, 1_000_000, 86_400_000,
        ])),
        230..=239 => Op::ActiveExpire(inp.pick(&[0, 1, 2, 20, usize::MAX])),
        240..=245 => Op::RewriteStart,
        246..=249 => Op::RewriteStep(inp.pick(&[1, 2, 10])),
        250..=252 => Op::FullScan(inp.pick(&[1, 2, 3, 10])),
        _ => Op::RewriteFinish,
    }
}
