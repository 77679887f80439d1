//! Property tests for the parser, driven by a deterministic pseudo-random
//! generator (no external crate, same cases every run):
//!
//! - arbitrary bytes, split arbitrarily, never panic, and give the same
//!   commands and the same final error however they are split;
//! - streams of valid commands (arrays and inline, binary arguments) parse
//!   to exactly the commands encoded, however they are split.

use alloc::vec::Vec;

use super::{encode_command, Limits, Parser, ProtocolError};
use crate::Args;
use faultline_rng::Rng;

/// A byte biased toward the ones RESP gives meaning to.
fn interesting_byte(rng: &mut Rng) -> u8 {
    const SPECIAL: &[u8] = b"*$\r\n0123456789- \"'\\x\t";
    if rng.chance(70) {
        SPECIAL[rng.index(SPECIAL.len())]
    } else {
        (rng.next_u64() >> 56) as u8
    }
}

/// What a parser made of a whole stream: the commands, then the error that
/// stopped it, if any.
type Outcome = (Vec<Args>, Option<ProtocolError>);

/// Feeds `input` in pieces cut at `cuts` (sorted offsets), draining
/// commands after every piece.
fn run(input: &[u8], cuts: &[usize], limits: Limits) -> Outcome {
    let mut parser = Parser::with_limits(limits);
    let mut commands = Vec::new();
    let mut start = 0;
    for &end in cuts.iter().chain(core::iter::once(&input.len())) {
        parser.feed(&input[start..end]);
        start = end;
        loop {
            match parser.next_command() {
                Ok(Some(cmd)) => commands.push(cmd),
                Ok(None) => break,
                Err(err) => return (commands, Some(err)),
            }
        }
    }
    (commands, None)
}

fn random_cuts(rng: &mut Rng, len: usize) -> Vec<usize> {
    let mut cuts: Vec<usize> = (0..rng.index(8)).map(|_| rng.index(len + 1)).collect();
    if rng.chance(10) {
        cuts = (0..=len).collect(); // one byte at a time
    }
    cuts.sort_unstable();
    cuts
}

fn small_limits() -> Limits {
    Limits {
        max_bulk_len: 40,
        max_array_len: 6,
        max_inline_len: 24,
        max_query_buffer: 100,
    }
}

#[test]
fn arbitrary_bytes_never_panic_and_ignore_splits() {
    let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15);
    for _ in 0..20_000 {
        let input: Vec<u8> = (0..rng.index(120))
            .map(|_| interesting_byte(&mut rng))
            .collect();
        let limits = if rng.chance(50) {
            small_limits()
        } else {
            Limits::default()
        };
        let whole = run(&input, &[], limits);
        let cuts = random_cuts(&mut rng, input.len());
        assert_eq!(
            run(&input, &cuts, limits),
            whole,
            "input {input:?} cuts {cuts:?}"
        );
    }
}

/// A random command and one way of writing it on the wire.
fn random_command(rng: &mut Rng, wire: &mut Vec<u8>) -> Args {
    let args: Args = (0..1 + rng.index(5))
        .map(|_| (0..rng.index(12)).map(|_| interesting_byte(rng)).collect())
        .collect();
    if rng.chance(60) {
        encode_command(&args, wire);
    } else {
        write_inline(&args, wire);
    }
    args
}

/// Writes `args` as an inline line, every argument double-quoted with
/// `\xHH` escapes so any byte survives.
fn write_inline(args: &Args, wire: &mut Vec<u8>) {
    for (i, arg) in args.iter().enumerate() {
        if i > 0 {
            wire.push(b' ');
        }
        wire.push(b'"');
        for &b in arg {
            if b.is_ascii_alphanumeric() {
                wire.push(b);
            } else {
                wire.extend_from_slice(alloc::format!("\\x{b:02x}").as_bytes());
            }
        }
        wire.push(b'"');
    }
    wire.extend_from_slice(if args.len().is_multiple_of(2) {
        b"\r\n"
    } else {
        b"\n"
    });
}

#[test]
fn valid_streams_parse_identically_however_split() {
    let mut rng = Rng::new(0x0123_4567_89ab_cdef);
    for _ in 0..10_000 {
        let mut wire = Vec::new();
        let mut expected = Vec::new();
        for _ in 0..1 + rng.index(6) {
            match rng.index(10) {
                0 => wire.extend_from_slice(b"*0\r\n"),
                1 => wire.extend_from_slice(b"  \r\n"),
                _ => expected.push(random_command(&mut rng, &mut wire)),
            }
        }
        let cuts = random_cuts(&mut rng, wire.len());
        assert_eq!(
            run(&wire, &cuts, Limits::default()),
            (expected, None),
            "wire {wire:?} cuts {cuts:?}"
        );
    }
}
