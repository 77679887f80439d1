//! The event-storm counter (`smmu::v3::records`) on the real CPU: its
//! vector loop is aarch64 assembly that the host's unit tests cannot run,
//! so here it must agree with the one-record-at-a-time count on storms of
//! every length around its group size, with a different record at every
//! place and in every compared word.

use crate::{check, Outcome};
use alloc::vec::Vec;
use smmu::v3::records::{count_matching, count_matching_plain, RecordKey};

/// A translation fault of stream 8 on page 0x4000_1000.
const KEY: RecordKey = RecordKey {
    words: [0x0000_0008_0000_0010, 0x2, 0x4000_1000],
    mask2: !0xfff,
};

/// `n` records of `KEY` at successive words of its page, word 3 varying.
fn storm(n: usize) -> Vec<u64> {
    (0..n as u64)
        .flat_map(|i| {
            [
                KEY.words[0],
                KEY.words[1],
                KEY.words[2] | (i * 4 % 4096),
                !i,
            ]
        })
        .collect()
}

/// Runs of 0 to 200 records, whole and with one record changed anywhere.
pub fn vector_count_agrees_with_plain() -> Outcome {
    for n in 0..200 {
        let whole = storm(n);
        let counted = count_matching(&whole, &KEY);
        check!(counted == n, "a storm of {n} counted as {counted}");
        for at in 0..n {
            for (word, flip) in [(0, 1u64 << 40), (1, 1), (2, 0x1000), (2, 1 << 63)] {
                let mut words = whole.clone();
                words[at * 4 + word] ^= flip;
                let (fast, plain) = (
                    count_matching(&words, &KEY),
                    count_matching_plain(&words, &KEY),
                );
                check!(
                    fast == at && plain == at,
                    "{n} records, word {word} of record {at} changed: counted {fast} (plain {plain})"
                );
            }
            let mut words = whole.clone();
            words[at * 4 + 3] ^= u64::MAX;
            words[at * 4 + 2] ^= 0xffc;
            let fast = count_matching(&words, &KEY);
            check!(
                fast == n,
                "{n} records: word 3 or the byte in the page counted ({fast})"
            );
        }
    }
    Ok(())
}
