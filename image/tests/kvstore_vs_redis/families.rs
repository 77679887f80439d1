//! The random stream's commands of the families added after the first
//! generator: HyperLogLog (`PF*`).
//!
//! HyperLogLogs live mostly at keys of their own (`hll`, `hll2`, `hll3`),
//! so that they grow past a few elements, and now and then at any key of
//! the stream (another type, or a string that is no HyperLogLog: Redis's
//! errors). kvstore writes Redis's own bytes, sparse and dense, so `GET`
//! and `STRLEN` of them compare exactly too.

use super::{Check, Stream};

impl Stream {
    /// A key for a HyperLogLog command.
    fn hll_key(&mut self) -> Vec<u8> {
        if self.rng.chance(15) {
            self.key()
        } else {
            self.rng.pick(&["hll", "hll2", "hll3"]).into()
        }
    }

    /// A HyperLogLog command, or a string command on a HyperLogLog key.
    pub(super) fn hll_command(&mut self, args: &mut Vec<Vec<u8>>) -> Check {
        let name = self.rng.pick(&[
            "PFADD", "PFADD", "PFADD", "PFADD", "PFCOUNT", "PFCOUNT", "PFMERGE", "GET", "STRLEN",
        ]);
        args[0] = name.into();
        match name {
            "PFADD" => {
                args.push(self.hll_key());
                if self.rng.chance(10) {
                    // A batch: enough of them turn the value dense.
                    let base = self.rng.below(100_000);
                    for n in 0..self.rng.pick(&[100, 300, 1000]) {
                        args.push(format!("e{}", base + n).into_bytes());
                    }
                } else {
                    for _ in 0..self.rng.below(4) {
                        let element = self.member();
                        args.push(element);
                    }
                }
            }
            "PFCOUNT" | "PFMERGE" => {
                for _ in 0..1 + self.rng.below(3) {
                    let key = self.hll_key();
                    args.push(key);
                }
            }
            _ => args.push(self.hll_key()),
        }
        Check::Exact
    }
}
