//! Superblock decoding on arbitrary disk bytes for the two slots, and on
//! well-formed superblocks with any fields, damaged or not: no panic, and
//! what `newest` returns is one of the slots' valid superblocks, fits its
//! area, is the newest of those that do, and has a successor that is newer.
#![no_main]

use kvstore::aof::superblock::{self, newest, Superblock, SIZE, SLOT_STRIDE};
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
    let Some(found) = newest(&slot0, &slot1, area_len) else {
        assert!(decoded.iter().flatten().all(|sb| sb.length > area_len));
        return;
    };
    assert!(decoded.contains(&Some(found)), "{found:?} is in no slot");
    assert!(found.length <= area_len, "{found:?} past {area_len}");
    for sb in decoded.iter().flatten().filter(|sb| sb.length <= area_len) {
        assert!(sb.generation <= found.generation, "{sb:?} is newer than {found:?}");
    }
    // The next update goes to the other slot and wins over both.
    let next = found.next(inp.below(2) as u8, found.length);
    assert!(next.generation > found.generation);
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
