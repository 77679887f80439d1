//! The request parser on arbitrary bytes fed in arbitrary pieces: it never
//! panics, gives the same commands and the same final error however the
//! stream is cut, respects its limits, and every command it returns
//! survives the log's strict encoding.
#![no_main]

use kvstore::resp::{decode_command, encode_command, Limits, Parser, ProtocolError};
use kvstore::Args;
use kvstore_gen::choices::Input;
use libfuzzer_sys::fuzz_target;

/// The commands a parser returned, then the error that stopped it.
type Outcome = (Vec<Args>, Option<ProtocolError>);

fuzz_target!(|data: &[u8]| {
    let mut inp = Input::new(data);
    let limits = if inp.byte().is_multiple_of(2) {
        Limits::default()
    } else {
        // Small limits, so that every one of them is reachable.
        Limits {
            max_bulk_len: inp.below(64) as u64,
            max_array_len: inp.below(8) as u64,
            max_inline_len: inp.below(64),
            max_query_buffer: inp.below(256) as u64,
        }
    };
    let mut cuts: Vec<usize> = (0..inp.below(8)).map(|_| inp.below(4096)).collect();
    let stream = inp.rest();
    cuts.iter_mut().for_each(|c| *c %= stream.len() + 1);
    cuts.sort_unstable();

    let whole = run(stream, &[], limits);
    let pieces = run(stream, &cuts, limits);
    assert_eq!(pieces, whole, "cut at {cuts:?}");
    let every_byte: Vec<usize> = (0..=stream.len()).collect();
    assert_eq!(run(stream, &every_byte, limits), whole, "byte by byte");

    for args in &whole.0 {
        assert!(!args.is_empty(), "empty commands are skipped");
        let mut wire = Vec::new();
        encode_command(args, &mut wire);
        assert_eq!(decode_command(&wire).as_ref(), Some(args));
    }
    let _ = decode_command(stream);
});

/// Feeds `stream` cut at `cuts`, taking every command after each piece and
/// checking the limits as it goes.
fn run(stream: &[u8], cuts: &[usize], limits: Limits) -> Outcome {
    let mut parser = Parser::with_limits(limits);
    let mut commands = Vec::new();
    let mut start = 0;
    // Whatever a request may hold: bulk strings or one inline line.
    let longest_arg = limits.max_bulk_len.max(limits.max_inline_len as u64);
    let most_args = limits
        .max_array_len
        .max(limits.max_inline_len as u64 / 2 + 1);
    for &end in cuts.iter().chain([&stream.len()]) {
        parser.feed(&stream[start..end]);
        start = end;
        loop {
            match parser.next_command() {
                Ok(Some(args)) => {
                    assert!(args.len() as u64 <= most_args, "{} arguments", args.len());
                    for arg in &args {
                        assert!(arg.len() as u64 <= longest_arg, "argument of {}", arg.len());
                    }
                    commands.push(args);
                }
                Ok(None) => break,
                Err(err) => {
                    assert_eq!(parser.next_command(), Err(err), "errors stick");
                    return (commands, Some(err));
                }
            }
        }
        // Waiting for the rest of one request: its arguments received so
        // far (within the query buffer limit) and at most a header line or
        // a bulk string not yet taken from the input.
        let held = parser.buffered() as u64;
        assert!(
            held <= limits.max_query_buffer + longest_arg + 2,
            "{held} bytes buffered with limits {limits:?}"
        );
    }
    (commands, None)
}
