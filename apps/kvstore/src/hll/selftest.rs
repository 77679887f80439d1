//! `PFSELFTEST`: Redis's self-check of a HyperLogLog implementation, run
//! against this one. Random registers must read back as written; then
//! the same elements go into a dense and a sparse HyperLogLog, which must
//! agree (the sparse one staying sparse while small) and count within six
//! standard errors of the truth at every power of ten.

use alloc::string::String;
use alloc::vec::Vec;

use super::{add, count, dense, encoding, new_sparse, to_dense, Encoding};
use super::{REGISTERS, REGISTER_MAX};

/// Runs the checks: `cycles` rounds of random registers, then `elements`
/// elements (Redis: 1000 and 10 000 000); `sparse_max` is
/// `hll-sparse-max-bytes`. `Err` names the first failure, worded as
/// Redis words it (after `TESTFAILED `).
pub fn self_test(
    random: &mut dyn FnMut() -> u64,
    cycles: u32,
    elements: u64,
    sparse_max: u64,
) -> Result<(), String> {
    let mut registers = alloc::vec![0u8; dense::DENSE_BYTES];
    let mut expected = alloc::vec![0u8; REGISTERS];
    for _ in 0..cycles {
        for (index, slot) in expected.iter_mut().enumerate() {
            *slot = (random() as u8) & REGISTER_MAX;
            dense::set(&mut registers, index, *slot);
        }
        for (index, &want) in expected.iter().enumerate() {
            let got = dense::get(&registers, index);
            if got != want {
                return Err(alloc::format!(
                    "Register {index} should be {want} but is {got}"
                ));
            }
        }
    }
    let mut dense_hll = new_sparse();
    to_dense(&mut dense_hll).map_err(|_| String::from("dense conversion failed"))?;
    let mut sparse_hll: Vec<u8> = new_sparse();
    let relative_error = 1.04 / libm::sqrt(REGISTERS as f64);
    let seed = random();
    let mut checkpoint: u64 = 1;
    for j in 1..=elements {
        let element = (j ^ seed).to_le_bytes();
        let corrupt = |_| String::from("corrupt HyperLogLog");
        add(&mut dense_hll, &element, sparse_max).map_err(corrupt)?;
        add(&mut sparse_hll, &element, sparse_max).map_err(corrupt)?;
        if j != checkpoint {
            continue;
        }
        if j < sparse_max / 2 && encoding(&sparse_hll) != Some(Encoding::Sparse) {
            return Err(String::from("sparse encoding not used"));
        }
        let (n, m) = (
            count(&dense_hll).map_err(corrupt)?,
            count(&sparse_hll).map_err(corrupt)?,
        );
        if n != m {
            return Err(String::from("dense/sparse disagree"));
        }
        let error = checkpoint.abs_diff(n);
        let allowed = match j {
            10 => 1,
            _ => libm::ceil(relative_error * 6.0 * checkpoint as f64) as u64,
        };
        if error > allowed {
            return Err(alloc::format!(
                "Too big error. card:{checkpoint} abserr:{error}"
            ));
        }
        checkpoint *= 10;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_implementation_passes_a_shorter_run() {
        let mut state = 0x1234_5678_u64;
        let mut random = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        assert_eq!(self_test(&mut random, 3, 100_000, 3000), Ok(()));
    }
}
