//! Counting a run of repeated event records: the part of a device fault
//! that grows with QEMU's event storm.
//!
//! QEMU's SMMUv3 logs one fault record per word its device model retries,
//! so one faulting 4 KiB page arrives as up to 1,024 records that differ
//! only in the low bits of the address. The driver decodes the first and
//! counts how many that follow are the same fault. Every record is still
//! read and compared (a different fault inside a run must not go unseen);
//! what this module makes cheap is the comparison.
//!
//! ```text
//! records:  [ r0 .. r31 ][ r32 .. r63 ] ... [ tail < 32 ]
//!             \ group /    \ group /
//!  aarch64: 16 two-record `ld4` loads per group; word 0s, word 1s and
//!           word 2s each XORed with the key and ORed into an accumulator;
//!           one test per group (about 4 instructions a record)
//!  the first group that differs, and the tail: one record at a time
//! ```

/// Which fault a record is, for [`count_matching`]: a record matches when
/// its words 0 and 1 equal `words[0]` and `words[1]`, and its word 2
/// masked by `mask2` equals `words[2]`. Word 3 is not compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordKey {
    /// The words to match (word 2 already masked by `mask2`).
    pub words: [u64; 3],
    /// The bits of word 2 that must match (a fault's page, not the byte).
    pub mask2: u64,
}

impl RecordKey {
    /// Whether the record `r` (at least three words) is this fault.
    fn matches(&self, r: &[u64]) -> bool {
        read(&r[0]) == self.words[0]
            && read(&r[1]) == self.words[1]
            && read(&r[2]) & self.mask2 == self.words[2]
    }
}

/// Words in one 32-byte event record.
const RECORD_WORDS: usize = 4;

/// Records per group the vector loop checks at once.
const GROUP: usize = 32;

/// How many leading 32-byte records of `words` match `key`, reading every
/// one of them. `words` holds whole records (a trailing partial one is
/// ignored); the driver passes event-queue memory the SMMU wrote.
pub fn count_matching(words: &[u64], key: &RecordKey) -> usize {
    let records = words.len() / RECORD_WORDS;
    let grouped = records / GROUP * GROUP;
    let whole = matching_groups(&words[..grouped * RECORD_WORDS], key) * GROUP;
    whole + count_matching_plain(&words[whole * RECORD_WORDS..], key)
}

/// How many records from record `records.start` on (before
/// `records.end`) of the event queue `queue` are the fault `key`.
pub(crate) fn count_in(
    queue: &hw::dma_memory::DmaMemory,
    records: core::ops::Range<usize>,
    key: &RecordKey,
) -> usize {
    count_matching(
        &queue.words()[records.start * RECORD_WORDS..records.end * RECORD_WORDS],
        key,
    )
}

/// [`count_matching`] one record at a time: the reference the vector loop
/// is checked against (also in the guest's `selftest`).
pub fn count_matching_plain(words: &[u64], key: &RecordKey) -> usize {
    words
        .chunks_exact(RECORD_WORDS)
        .take_while(|r| key.matches(r))
        .count()
}

/// Reads a word the SMMU may have written.
fn read(word: &u64) -> u64 {
    // SAFETY: `word` is a live, aligned reference to an initialised u64;
    // the read is volatile only because the SMMU may have written it.
    unsafe { core::ptr::read_volatile(word) }
}

/// How many whole groups of [`GROUP`] records at the start of `words` (a
/// multiple of a group's words) match `key`, stopping at the first group
/// that does not.
#[cfg(target_arch = "aarch64")]
fn matching_groups(words: &[u64], key: &RecordKey) -> usize {
    let groups = words.len() / (GROUP * RECORD_WORDS);
    if groups == 0 {
        return 0;
    }
    let matched: usize;
    // SAFETY: the loop reads `groups * GROUP` records from `words.as_ptr()`
    // on, all inside `words` (a live slice of initialised, 8-aligned u64s;
    // `ld4` of 64-bit elements needs no more), and writes no memory. The
    // asm is also what makes the reads of memory the SMMU writes opaque to
    // the compiler, as `read` does with `read_volatile`. It uses only the
    // caller-saved vector registers it declares clobbered.
    unsafe {
        core::arch::asm!(
            // v16..v18: the key's three words in both lanes; v19: mask2.
            "dup v16.2d, {k0}",
            "dup v17.2d, {k1}",
            "dup v18.2d, {k2}",
            "dup v19.2d, {m2}",
            "mov {matched}, #0",
            "2:",
            // v20..v22: any bit of word 0, 1 or 2 that differed.
            "movi v20.2d, #0",
            "movi v21.2d, #0",
            "movi v22.2d, #0",
            "mov {left}, #{loops}",
            "3:",
            // Each load takes two records apart: v0 their word 0s, v1 word
            // 1s, v2 word 2s (v3, word 3s, is not compared).
            "ld4 {{v0.2d, v1.2d, v2.2d, v3.2d}}, [{p}], #64",
            "ld4 {{v4.2d, v5.2d, v6.2d, v7.2d}}, [{p}], #64",
            "ld4 {{v24.2d, v25.2d, v26.2d, v27.2d}}, [{p}], #64",
            "ld4 {{v28.2d, v29.2d, v30.2d, v31.2d}}, [{p}], #64",
            "eor v0.16b, v0.16b, v16.16b",
            "eor v1.16b, v1.16b, v17.16b",
            "eor v2.16b, v2.16b, v18.16b",
            "eor v4.16b, v4.16b, v16.16b",
            "eor v5.16b, v5.16b, v17.16b",
            "eor v6.16b, v6.16b, v18.16b",
            "eor v24.16b, v24.16b, v16.16b",
            "eor v25.16b, v25.16b, v17.16b",
            "eor v26.16b, v26.16b, v18.16b",
            "eor v28.16b, v28.16b, v16.16b",
            "eor v29.16b, v29.16b, v17.16b",
            "eor v30.16b, v30.16b, v18.16b",
            "orr v20.16b, v20.16b, v0.16b",
            "orr v21.16b, v21.16b, v1.16b",
            "orr v22.16b, v22.16b, v2.16b",
            "orr v20.16b, v20.16b, v4.16b",
            "orr v21.16b, v21.16b, v5.16b",
            "orr v22.16b, v22.16b, v6.16b",
            "orr v20.16b, v20.16b, v24.16b",
            "orr v21.16b, v21.16b, v25.16b",
            "orr v22.16b, v22.16b, v26.16b",
            "orr v20.16b, v20.16b, v28.16b",
            "orr v21.16b, v21.16b, v29.16b",
            "orr v22.16b, v22.16b, v30.16b",
            "subs {left}, {left}, #1",
            "b.ne 3b",
            // Word 2 counts only under the mask; any bit left means the
            // group holds a record that is not this fault.
            "and v22.16b, v22.16b, v19.16b",
            "orr v20.16b, v20.16b, v21.16b",
            "orr v20.16b, v20.16b, v22.16b",
            "umaxv s20, v20.4s",
            "fmov {any:w}, s20",
            "cbnz {any:w}, 4f",
            "add {matched}, {matched}, #1",
            "cmp {matched}, {groups}",
            "b.ne 2b",
            "4:",
            k0 = in(reg) key.words[0],
            k1 = in(reg) key.words[1],
            k2 = in(reg) key.words[2],
            m2 = in(reg) key.mask2,
            groups = in(reg) groups,
            loops = const GROUP / 8,
            p = inout(reg) words.as_ptr() => _,
            matched = out(reg) matched,
            left = out(reg) _,
            any = out(reg) _,
            out("v0") _, out("v1") _, out("v2") _, out("v3") _,
            out("v4") _, out("v5") _, out("v6") _, out("v7") _,
            out("v16") _, out("v17") _, out("v18") _, out("v19") _,
            out("v20") _, out("v21") _, out("v22") _,
            out("v24") _, out("v25") _, out("v26") _, out("v27") _,
            out("v28") _, out("v29") _, out("v30") _, out("v31") _,
            options(nostack, readonly),
        );
    }
    matched
}

/// [`matching_groups`] for host builds (the tests): group by group, one
/// record at a time.
#[cfg(not(target_arch = "aarch64"))]
fn matching_groups(words: &[u64], key: &RecordKey) -> usize {
    words
        .chunks_exact(GROUP * RECORD_WORDS)
        .take_while(|group| count_matching_plain(group, key) == GROUP)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    const KEY: RecordKey = RecordKey {
        words: [0x0000_0008_0000_0010, 0x2, 0x4000_1000],
        mask2: !0xfff,
    };

    /// `n` records of the fault `KEY` at successive words of its page, as
    /// QEMU logs them, with word 3 varying too.
    fn storm(n: usize) -> Vec<u64> {
        (0..n as u64)
            .flat_map(|i| [KEY.words[0], KEY.words[1], KEY.words[2] | (i * 4 % 4096), i])
            .collect()
    }

    #[test]
    fn a_storm_is_counted_whole_whatever_its_length() {
        for n in [0, 1, 31, 32, 33, 64, 100, 992, 1024] {
            assert_eq!(count_matching(&storm(n), &KEY), n);
        }
    }

    #[test]
    fn a_different_record_anywhere_ends_the_count_there() {
        for n in [40, 70, 130] {
            for at in 0..n {
                for word in 0..3 {
                    let mut words = storm(n);
                    words[at * 4 + word] ^= if word == 2 { 0x1000 } else { 1 << 40 };
                    assert_eq!(count_matching(&words, &KEY), at, "record {at}, word {word}");
                    assert_eq!(count_matching_plain(&words, &KEY), at);
                }
            }
        }
    }

    #[test]
    fn word_3_and_the_masked_bits_do_not_count() {
        let mut words = storm(64);
        words[40 * 4 + 3] = u64::MAX;
        words[50 * 4 + 2] |= 0xfff;
        assert_eq!(count_matching(&words, &KEY), 64);
    }

    #[test]
    fn a_trailing_partial_record_is_ignored() {
        let mut words = storm(33);
        words.extend_from_slice(&KEY.words);
        assert_eq!(count_matching(&words, &KEY), 33);
    }
}
