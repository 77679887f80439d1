//! HyperLogLog commands (not `PFSELFTEST`: it adds ten million elements,
//! seconds a call), and `GET`/`STRLEN` of HyperLogLogs: kvstore writes
//! Redis's own bytes, sparse and dense, so those compare exactly too.
//!
//! HyperLogLogs live mostly at keys of their own (`hll`, `hll2`,
//! `hll3`), so that they grow past a few elements, and now and then at a
//! shared key (another type, or a string that is no HyperLogLog: Redis's
//! errors); now and then a batch is large enough to turn one dense.

use crate::draw::{Check, Gen};

/// The HyperLogLog commands, each with how often the differential test
/// sends it.
pub(crate) const NAMES: &[(&str, u8)] = &[
    ("PFADD", 4),
    ("PFCOUNT", 2),
    ("PFMERGE", 1),
    ("GET", 1),
    ("STRLEN", 1),
    ("PFDEBUG", 1),
];

/// A key for a HyperLogLog command.
fn hll_key(g: &mut Gen) -> Vec<u8> {
    g.own_key(&["hll", "hll2", "hll3"])
}

/// The arguments of HyperLogLog command `name`.
pub(crate) fn args(g: &mut Gen, name: &str, args: &mut Vec<Vec<u8>>) -> Check {
    match name {
        "PFADD" => {
            args.push(hll_key(g));
            if g.chance(10) {
                // A batch: enough of them turn the value dense.
                let base = g.below(100_000);
                for n in 0..g.pick(&[100, 300, 1000]) {
                    args.push(format!("e{}", base + n).into_bytes());
                }
            } else {
                for _ in 0..g.below(4) {
                    args.push(g.member());
                }
            }
        }
        "PFCOUNT" | "PFMERGE" => {
            for _ in 0..1 + g.below(3) {
                args.push(hll_key(g));
            }
        }
        "PFDEBUG" => {
            let sub = g.pick_word(&["ENCODING", "DECODE", "TODENSE", "GETREG", "bogus"]);
            args.extend([sub, hll_key(g)]);
        }
        _ => args.push(hll_key(g)),
    }
    Check::Exact
}
