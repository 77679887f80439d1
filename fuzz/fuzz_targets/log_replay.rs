//! Log replay on arbitrary bytes, and on valid logs that were then cut,
//! had bytes flipped or garbage appended: it never panics, every record it
//! applies lies wholly within the valid prefix it reports (the applied
//! records, encoded again, are exactly that prefix), and it never applies a
//! record at or past the first damaged byte.
#![no_main]

use kvstore::aof::{encode_record, replay, ReplayReport, HEADER};
use kvstore::Args;
use kvstore_gen::choices::Input;
use kvstore_gen::hostile_command as command;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut inp = Input::new(data);
    match inp.byte() % 4 {
        0 => {
            let log = inp.rest();
            check_prefix(log, replay_all(log));
        }
        1 => {
            // Past the header at once, into the records.
            let mut log = HEADER.to_vec();
            log.extend_from_slice(inp.rest());
            check_prefix(&log, replay_all(&log));
        }
        _ => damaged(&mut inp),
    }
});

/// Replays `log`, returning what was applied and the report.
fn replay_all(log: &[u8]) -> (Vec<Args>, ReplayReport) {
    let mut applied = Vec::new();
    let report = replay(log, |args| applied.push(args));
    (applied, report)
}

/// The applied records, encoded again after the header, are exactly the
/// valid prefix the report gives; the report is consistent.
fn check_prefix(log: &[u8], (applied, report): (Vec<Args>, ReplayReport)) -> ReplayReport {
    assert_eq!(report.records, applied.len() as u64);
    assert!(report.valid_bytes <= log.len());
    let mut prefix = Vec::new();
    if report.valid_bytes > 0 {
        prefix.extend_from_slice(&HEADER);
    }
    for args in &applied {
        prefix.extend(encode_record(args));
    }
    assert!(
        prefix == log[..report.valid_bytes],
        "the applied records are not the valid prefix ({} bytes)",
        report.valid_bytes
    );
    match report.torn_tail {
        None => assert_eq!(report.valid_bytes, log.len()),
        Some(tail) => {
            assert_eq!(tail.offset, report.valid_bytes);
            assert!(tail.offset < log.len());
        }
    }
    report
}

/// A valid log of generated commands, damaged one way.
fn damaged(inp: &mut Input<'_>) {
    let mut log = HEADER.to_vec();
    let mut ends = vec![log.len()];
    for _ in 0..inp.below(8) {
        log.extend(encode_record(&command(inp, 1_700_000_000_000)));
        ends.push(log.len());
    }
    let (applied, report) = replay_all(&log);
    assert_eq!(report.valid_bytes, log.len(), "an intact log replays whole");
    assert_eq!(applied.len() + 1, ends.len());

    let at = inp.below(log.len() + 1);
    match inp.below(3) {
        0 => {
            log.truncate(at);
            let report = check_prefix(&log, replay_all(&log));
            assert_eq!(report.valid_bytes, intact_before(&ends, at), "cut at {at}");
        }
        1 if at < log.len() => {
            log[at] ^= inp.byte().max(1);
            let report = check_prefix(&log, replay_all(&log));
            assert_eq!(report.valid_bytes, intact_before(&ends, at), "flip at {at}");
        }
        _ => {
            let end = log.len();
            log.extend_from_slice(inp.rest());
            let report = check_prefix(&log, replay_all(&log));
            assert!(report.valid_bytes >= end, "garbage after {end}");
        }
    }
}

/// Where the valid prefix must end when the first damaged byte is at
/// `damage`: after the last record that ends at or before it (0 if the
/// header itself is damaged).
fn intact_before(ends: &[usize], damage: usize) -> usize {
    ends.iter()
        .copied()
        .filter(|&e| e <= damage)
        .max()
        .unwrap_or(0)
}
