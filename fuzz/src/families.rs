//! Arguments of the command families added after the first generator:
//! HyperLogLog (`PF*`). Keys are the shared ones of
//! [`commands::key`](crate::commands::key), so these commands meet strings
//! and other types written by the rest; elements are few (so registers
//! repeat) or any value, now and then a batch large enough to turn a
//! HyperLogLog dense.

use crate::commands::{key, value};
use crate::input::Input;

/// Names of the HyperLogLog commands.
pub const HLL_NAMES: &[&str] = &["PFADD", "PFCOUNT", "PFMERGE"];

/// The arguments of HyperLogLog command `name`.
pub fn hll_args(inp: &mut Input<'_>, name: &str, args: &mut Vec<Vec<u8>>) {
    match name {
        "PFADD" => {
            args.push(key(inp));
            match inp.below(8) {
                0 => {
                    let base = inp.u64();
                    for n in 0..inp.pick(&[100u64, 1000, 3000]) {
                        args.push(base.wrapping_add(n).to_string().into_bytes());
                    }
                }
                _ => {
                    for _ in 0..inp.below(4) {
                        args.push(element(inp));
                    }
                }
            }
        }
        _ => {
            // PFCOUNT key [key ...], PFMERGE dest [src ...].
            for _ in 0..1 + inp.below(3) {
                args.push(key(inp));
            }
        }
    }
}

/// An element: one of a few, or any value.
fn element(inp: &mut Input<'_>) -> Vec<u8> {
    match inp.below(3) {
        0 => value(inp),
        _ => inp.pick(&["a", "b", "c", "1", ""]).into(),
    }
}
