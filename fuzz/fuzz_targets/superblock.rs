//! Superblock decoding on arbitrary disk bytes for the two slots, and on
//! well-formed superblocks with any fields, damaged or not: no panic, and
//! what `newest` returns is one of the slots' valid superblocks within the
//! documented bounds (length fits the area, generation below
//! `MAX_GENERATION`), the newest of those, and has a newer successor.
#![no_main]

use kvstore::aof::superblock::{self, newest, Superblock, MAX_GENERATION, SIZE, SLOT_STRIDE};
use kvstore_fuzz::input::Input;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut inp = Input::new(data);
    let capacity = inp.u64() >> inp.below(64);
    let (start, area_len) = superblock::areas(capacity);
    if capacity >= start {
        let end = superblock::area_start(capacity, 1) + area_len;
        assert!(end <= capacity, "area 1 ends at {end}, past {capacity}");
    }
    let slot0 = slot(&mut inp);
    let slot1 = slot(&mut inp);
    let decoded = [Superblock::decode(&slot0), Superblock::decode(&slot1)];
    for sb in decoded.iter().flatten() {
        assert!(sb.area < 2, "{sb:?}");
        assert!(sb.slot_offset() == 0 || sb.slot_offset() == SLOT_STRIDE);
    }
    // The documented bounds of a superblock that is trusted.
    let trusted = |sb: &&Superblock| sb.length <= area_len && sb.generation < MAX_GENERATION;
    let Some(found) = newest(&slot0, &slot1, area_len) else {
        assert_eq!(decoded.iter().flatten().filter(trusted).count(), 0);
        return;
    };
    assert!(decoded.contains(&Some(found)), "{found:?} is in no slot");
    assert!(
        trusted(&&found),
        "{found:?} is out of bounds (area of {area_len})"
    );
    for sb in decoded.iter().flatten().filter(trusted) {
        assert!(
            sb.generation <= found.generation,
            "{sb:?} is newer than {found:?}"
        );
    }
    // The next update is newer and, but at the very last generation,
    // wins over what is on the disk.
    let next = found.next(inp.below(2) as u8, found.length);
    assert!(next.generation > found.generation);
    if next.generation == MAX_GENERATION {
        return;
    }
    let mut slots = [slot0, slot1];
    let at = (next.slot_offset() / SLOT_STRIDE) as usize;
    slots[at] = next.encode().to_vec();
    assert_eq!(newest(&slots[0], &slots[1], area_len), Some(next));
});

/// One slot's bytes: arbitrary, or a superblock with arbitrary fields,
/// possibly with a byte flipped or cut short.
fn slot(inp: &mut Input<'_>) -> Vec<u8> {
    match inp.below(4) {
        0 => inp.bytes(64).to_vec(),
        _ => {
            let sb = Superblock {
                generation: match inp.below(4) {
                    0 => u64::MAX - inp.below(3) as u64,
                    1 => inp.below(4) as u64,
                    _ => inp.u64(),
                },
                area: inp.below(2) as u8,
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
