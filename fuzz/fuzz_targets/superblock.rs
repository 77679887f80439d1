//! Superblock decoding and the opening rule on arbitrary disk bytes for
//! the two slots, and on well-formed superblocks with any fields, damaged
//! or not: no panic; a superblock that is trusted names a log on the disk,
//! within its extent, with a newer successor; `read_slots` picks the
//! newest trusted one and tells blank from damaged; and on a small whole
//! disk image, `check::inspect` never reports a record past damage and
//! `check::fix` leaves a disk that opens.
#![no_main]

use kvstore::aof::check;
use kvstore::aof::superblock::{
    self, read_slots, Extent, Slots, Superblock, AREAS_START, MAX_GENERATION, SIZE, SLOT_STRIDE,
};
use kvstore_gen::choices::Input;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut inp = Input::new(data);
    let capacity = inp.u64() >> inp.below(64);
    let slot0 = slot(&mut inp, capacity);
    let slot1 = slot(&mut inp, capacity);
    let decoded = [
        Superblock::decode(&slot0, capacity),
        Superblock::decode(&slot1, capacity),
    ];
    for sb in decoded.iter().flatten() {
        let e = sb.extent;
        assert!(e.start >= AREAS_START, "{sb:?}");
        assert!(e.end() <= capacity, "{sb:?} past the disk of {capacity}");
        assert!(
            sb.length <= e.limit && sb.generation < MAX_GENERATION,
            "{sb:?}"
        );
        assert!(sb.slot_offset() == 0 || sb.slot_offset() == SLOT_STRIDE);
        assert!(sb.next(e, sb.length).generation > sb.generation);
    }
    match read_slots(&slot0, &slot1, capacity) {
        Slots::Blank => assert!(decoded.iter().all(Option::is_none)),
        Slots::Unreadable => assert!(decoded.iter().all(Option::is_none)),
        Slots::Found { superblock, .. } => {
            assert!(decoded.contains(&Some(superblock)));
            for sb in decoded.iter().flatten() {
                assert!(sb.generation <= superblock.generation, "{sb:?} is newer");
            }
        }
    }
    // Where a compaction goes never touches the live log's bytes.
    let live = decoded
        .iter()
        .flatten()
        .next()
        .map_or(superblock::half(capacity, 0), |sb| sb.extent);
    let live_end = live.start.saturating_add(inp.u64() % (live.limit + 1));
    let len = inp.u64() >> inp.below(64);
    if let Some(to) = superblock::rewrite_extent(capacity, live, live_end, len) {
        assert!(to.limit >= len && to.end() <= capacity && to.start >= AREAS_START);
        assert!(
            to.start.saturating_add(len) <= live.start || to.start >= live_end,
            "{to:?} overlaps the live log {live:?} up to {live_end}"
        );
    }
    whole_disk(&mut inp);
});

/// One slot's bytes: arbitrary, or a superblock with arbitrary fields,
/// possibly with a byte flipped or cut short.
fn slot(inp: &mut Input<'_>, capacity: u64) -> Vec<u8> {
    match inp.below(4) {
        0 => inp.bytes(64).to_vec(),
        _ => {
            let extent = match inp.below(3) {
                0 => superblock::half(capacity, inp.below(2) as u8),
                _ => Extent {
                    start: inp.u64() >> inp.below(64),
                    limit: inp.u64() >> inp.below(64),
                },
            };
            let sb = Superblock {
                generation: match inp.below(4) {
                    0 => u64::MAX - inp.below(3) as u64,
                    1 => inp.below(4) as u64,
                    _ => inp.u64(),
                },
                extent,
                length: inp.u64() >> inp.below(64),
            };
            let mut bytes = sb.encode().to_vec();
            match inp.below(4) {
                0 => bytes[inp.below(SIZE)] ^= 1 << inp.below(8),
                1 => bytes.truncate(inp.below(SIZE)),
                _ => {}
            }
            bytes
        }
    }
}

/// A 4 MiB disk with the rest of the input written at chosen places: the
/// inspection's replay stops at damage, and a fix leaves a disk that opens.
fn whole_disk(inp: &mut Input<'_>) {
    const DISK: usize = 4 << 20;
    let mut disk = vec![0u8; DISK];
    while !inp.is_empty() {
        let at = match inp.below(4) {
            0 => inp.below(2) * SLOT_STRIDE as usize,
            1 => superblock::half(DISK as u64, inp.below(2) as u8).start as usize,
            _ => inp.below(DISK),
        };
        let bytes = inp.bytes(256);
        let end = (at + bytes.len()).min(DISK);
        disk[at..end].copy_from_slice(&bytes[..end - at]);
    }
    let found = check::inspect(&disk, |_| {});
    if let Some(sb) = found.superblock {
        assert!(found.valid_bytes <= sb.length || found.damage.is_some());
    }
    if check::fix(&mut disk).is_some() {
        assert!(
            check::inspect(&disk, |_| {}).is_clean(),
            "a fixed disk opens"
        );
    }
}
