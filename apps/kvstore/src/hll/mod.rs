//! HyperLogLog values, byte for byte as Redis keeps them: a string that
//! starts with a 16-byte header (`HYLL`, the encoding, three unused bytes,
//! the cached cardinality, little-endian, its top bit set when stale) and
//! holds 16384 registers of 6 bits, either packed ([`dense`]) or as runs
//! ([`sparse`]). Elements are hashed with MurmurHash64A ([`murmur`]),
//! the low 14 bits picking the register and the run of zeros above them
//! its value; the count is Redis 7's estimator ([`estimate`]). Since
//! `PFADD`, `PFCOUNT` and `PFMERGE` produce the same bytes as Redis, a
//! HyperLogLog moves between the two servers as a plain string.
//!
//! ```
//! use kvstore::hll;
//!
//! let mut h = hll::new_sparse();
//! for element in [&b"a"[..], b"b", b"c", b"a"] {
//!     hll::add(&mut h, element, 3000).unwrap();
//! }
//! assert_eq!(hll::count(&h), Ok(3));
//! assert!(h.starts_with(b"HYLL"));
//! ```

pub mod dense;
mod estimate;
mod murmur;
mod selftest;
pub mod sparse;

pub use selftest::self_test;

use alloc::vec::Vec;

/// Bytes of the header before the registers.
pub const HEADER: usize = 16;
/// Registers of one HyperLogLog (2^14).
pub const REGISTERS: usize = 1 << 14;
/// Bits of the hash that are not the register index.
const Q: usize = 64 - 14;
/// The largest register value (6 bits).
pub const REGISTER_MAX: u8 = 63;
/// Length of a dense HyperLogLog, header included.
pub const DENSE_SIZE: usize = HEADER + dense::DENSE_BYTES;
/// The seed Redis hashes elements with.
const SEED: u32 = 0xadc8_3b19;
/// The encoding byte of the dense form.
const DENSE: u8 = 0;
/// The encoding byte of the sparse form.
const SPARSE: u8 = 1;
/// Where the encoding byte is.
const ENCODING_AT: usize = 4;

/// A HyperLogLog whose registers do not add up (`-INVALIDOBJ`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Corrupt;

/// How a HyperLogLog keeps its registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// Packed, 6 bits each.
    Dense,
    /// As runs of opcodes.
    Sparse,
}

/// The encoding of `value` if Redis takes it for a HyperLogLog: long
/// enough for the header, `HYLL`, a known encoding, and exactly
/// [`DENSE_SIZE`] long when dense. Anything else is not one
/// (`-WRONGTYPE Key is not a valid HyperLogLog string value.`).
pub fn encoding(value: &[u8]) -> Option<Encoding> {
    if value.len() < HEADER || !value.starts_with(b"HYLL") {
        return None;
    }
    match value[ENCODING_AT] {
        DENSE if value.len() == DENSE_SIZE => Some(Encoding::Dense),
        SPARSE => Some(Encoding::Sparse),
        _ => None,
    }
}

/// A new, empty HyperLogLog, sparse as Redis creates them; its cached
/// count (0) is valid.
pub fn new_sparse() -> Vec<u8> {
    let mut hll = alloc::vec![0u8; HEADER];
    hll[..4].copy_from_slice(b"HYLL");
    hll[ENCODING_AT] = SPARSE;
    hll.extend(sparse::empty_body());
    hll
}

/// The register `element` falls in and the value it gives it: the run of
/// zero bits above the index bits, plus one.
pub fn position(element: &[u8]) -> (usize, u8) {
    let hash = murmur::murmur64a(element, SEED);
    let index = (hash as usize) & (REGISTERS - 1);
    let rest = (hash >> 14) | (1u64 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

/// Adds `element` to the HyperLogLog `hll` (valid per [`encoding`]);
/// whether a register changed. `max_bytes` is `hll-sparse-max-bytes`. The
/// cached count is left as it is: the caller marks it stale once, after
/// all its elements ([`invalidate_cache`]).
pub fn add(hll: &mut Vec<u8>, element: &[u8], max_bytes: u64) -> Result<bool, Corrupt> {
    let (index, value) = position(element);
    raise(hll, index, value, max_bytes)
}

/// Whether adding `elements` would change a register of `hll` (valid per
/// [`encoding`]): `PFADD` that would not writes nothing, as in Redis.
/// `Err` when a sparse body does not reach an element's register.
pub fn would_change<'a>(
    hll: &[u8],
    mut elements: impl Iterator<Item = &'a [u8]>,
) -> Result<bool, Corrupt> {
    elements.try_fold(false, |changes, element| {
        let (index, value) = position(element);
        Ok(changes || register(hll, index)? < value)
    })
}

/// Register `index` of `hll` (valid per [`encoding`]).
fn register(hll: &[u8], index: usize) -> Result<u8, Corrupt> {
    if hll[ENCODING_AT] == DENSE {
        return Ok(dense::get(&hll[HEADER..], index));
    }
    let mut found = None;
    sparse::walk(hll, |first, op| {
        if found.is_none() && (first..first + op.registers()).contains(&index) {
            found = Some(match op {
                sparse::Op::Zeros { .. } => 0,
                sparse::Op::Val { value, .. } => value,
            });
        }
    })?;
    found.ok_or(Corrupt)
}

/// Raises register `index` of `hll` to `value` if it is lower, turning a
/// sparse HyperLogLog dense when the value or the size no longer fits;
/// whether it changed.
pub fn raise(hll: &mut Vec<u8>, index: usize, value: u8, max_bytes: u64) -> Result<bool, Corrupt> {
    match hll[ENCODING_AT] {
        DENSE => Ok(dense::raise(&mut hll[HEADER..], index, value)),
        SPARSE => match sparse::set(hll, index, value, max_bytes)? {
            sparse::SetOutcome::Unchanged => Ok(false),
            sparse::SetOutcome::Raised => Ok(true),
            sparse::SetOutcome::Promote => {
                to_dense(hll)?;
                Ok(dense::raise(&mut hll[HEADER..], index, value))
            }
        },
        _ => Err(Corrupt),
    }
}

/// Turns a sparse `hll` dense (the header, cached count included, stays);
/// a dense one is left as it is.
pub fn to_dense(hll: &mut Vec<u8>) -> Result<(), Corrupt> {
    if hll[ENCODING_AT] == DENSE {
        return Ok(());
    }
    let mut dense = alloc::vec![0u8; DENSE_SIZE];
    dense[..HEADER].copy_from_slice(&hll[..HEADER]);
    dense[ENCODING_AT] = DENSE;
    let mut fits = true;
    let end = sparse::walk(hll, |first, op| {
        if let sparse::Op::Val { value, len } = op {
            fits &= first + len <= REGISTERS;
            for index in first..(first + len).min(REGISTERS) {
                dense::set(&mut dense[HEADER..], index, value);
            }
        }
    })?;
    if !fits || end != REGISTERS {
        return Err(Corrupt);
    }
    *hll = dense;
    Ok(())
}

/// Every register of `hll` (valid per [`encoding`]), one byte each;
/// `Err` for a sparse body that does not cover exactly the registers.
pub fn registers(hll: &[u8]) -> Result<Vec<u8>, Corrupt> {
    let mut dense = hll.to_vec();
    to_dense(&mut dense)?;
    Ok((0..REGISTERS)
        .map(|index| dense::get(&dense[HEADER..], index))
        .collect())
}

/// The opcodes of a sparse `hll` as text, Redis's `PFDEBUG DECODE`
/// form: `z:<n>` for ZERO, `Z:<n>` for XZERO, `v:<value>,<n>` for VAL,
/// separated by spaces.
pub fn decode_sparse(hll: &[u8]) -> Result<alloc::string::String, Corrupt> {
    let mut ops = Vec::new();
    sparse::walk(hll, |_, op| {
        ops.push(match op {
            sparse::Op::Zeros { len, bytes: 1 } => alloc::format!("z:{len}"),
            sparse::Op::Zeros { len, .. } => alloc::format!("Z:{len}"),
            sparse::Op::Val { value, len } => alloc::format!("v:{value},{len}"),
        })
    })?;
    Ok(ops.join(" "))
}

/// Marks the cached count stale (after a change).
pub fn invalidate_cache(hll: &mut [u8]) {
    hll[HEADER - 1] |= 0x80;
}

/// The cached count, if it is not stale.
pub fn cached(hll: &[u8]) -> Option<u64> {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&hll[8..HEADER]);
    (bytes[7] & 0x80 == 0).then(|| u64::from_le_bytes(bytes))
}

/// Stores `count` as the cached count.
pub fn set_cache(hll: &mut [u8], count: u64) {
    hll[8..HEADER].copy_from_slice(&count.to_le_bytes());
}

/// Raises each of the 16384 registers of `max` to `hll`'s (valid per
/// [`encoding`]), for `PFCOUNT` of several keys and `PFMERGE`.
pub fn merge_into(max: &mut [u8], hll: &[u8]) -> Result<(), Corrupt> {
    if hll[ENCODING_AT] == DENSE {
        for (index, register) in max.iter_mut().enumerate().take(REGISTERS) {
            *register = (*register).max(dense::get(&hll[HEADER..], index));
        }
        return Ok(());
    }
    let mut fits = true;
    let end = sparse::walk(hll, |first, op| {
        if let sparse::Op::Val { value, len } = op {
            fits &= first + len <= REGISTERS;
            for register in max.iter_mut().take(REGISTERS).skip(first).take(len) {
                *register = (*register).max(value);
            }
        }
    })?;
    if !fits || end != REGISTERS {
        return Err(Corrupt);
    }
    Ok(())
}

/// The estimated number of distinct elements added to `hll` (valid per
/// [`encoding`]); `Err` for a sparse body that does not cover exactly the
/// 16384 registers.
pub fn count(hll: &[u8]) -> Result<u64, Corrupt> {
    let mut histogram = [0u32; 64];
    if hll[ENCODING_AT] == DENSE {
        for index in 0..REGISTERS {
            histogram[usize::from(dense::get(&hll[HEADER..], index))] += 1;
        }
    } else {
        let end = sparse::walk(hll, |_, op| {
            let value = match op {
                sparse::Op::Zeros { .. } => 0,
                sparse::Op::Val { value, .. } => usize::from(value),
            };
            histogram[value] = histogram[value].saturating_add(op.registers() as u32);
        })?;
        if end != REGISTERS {
            return Err(Corrupt);
        }
    }
    Ok(estimate::cardinality(&histogram))
}

/// The estimate for plain registers, one byte each (`PFCOUNT` of several
/// keys counts their union this way).
pub fn count_registers(registers: &[u8]) -> u64 {
    let mut histogram = [0u32; 64];
    for &register in registers {
        histogram[usize::from(register & REGISTER_MAX)] += 1;
    }
    estimate::cardinality(&histogram)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_redis_shaped_strings_are_hyperloglogs() {
        assert_eq!(encoding(&new_sparse()), Some(Encoding::Sparse));
        assert_eq!(encoding(b"HYLL"), None, "too short");
        let mut dense = new_sparse();
        to_dense(&mut dense).unwrap();
        assert_eq!(dense.len(), DENSE_SIZE);
        assert_eq!(encoding(&dense), Some(Encoding::Dense));
        dense.push(0);
        assert_eq!(encoding(&dense), None, "dense of the wrong length");
        let mut foreign = new_sparse();
        foreign[0] = b'h';
        assert_eq!(encoding(&foreign), None);
        foreign = new_sparse();
        foreign[ENCODING_AT] = 2;
        assert_eq!(encoding(&foreign), None);
    }

    #[test]
    fn sparse_and_dense_count_alike() {
        let mut sparse = new_sparse();
        let mut dense = new_sparse();
        to_dense(&mut dense).unwrap();
        for i in 0..2000u32 {
            let element = i.to_le_bytes();
            let a = add(&mut sparse, &element, 1 << 20).unwrap();
            let b = add(&mut dense, &element, 1 << 20).unwrap();
            assert_eq!(a, b, "element {i}");
        }
        assert_eq!(encoding(&sparse), Some(Encoding::Sparse));
        let n = count(&sparse).unwrap();
        assert_eq!(count(&dense), Ok(n));
        assert!((1900..=2100).contains(&n), "{n}");
        let mut max = alloc::vec![0u8; REGISTERS];
        merge_into(&mut max, &sparse).unwrap();
        assert_eq!(count_registers(&max), n);
        to_dense(&mut sparse).unwrap();
        assert_eq!(sparse, dense, "the same bytes once both are dense");
    }

    #[test]
    fn a_sparse_body_too_long_or_short_is_corrupt() {
        let mut long = new_sparse();
        long.extend_from_slice(b"hello");
        assert_eq!(count(&long), Err(Corrupt));
        let mut max = alloc::vec![0u8; REGISTERS];
        assert_eq!(merge_into(&mut max, &long), Err(Corrupt));
        assert_eq!(to_dense(&mut long), Err(Corrupt));
        let mut short = new_sparse();
        short.pop();
        assert_eq!(count(&short), Err(Corrupt));
    }

    #[test]
    fn the_cache_is_read_written_and_invalidated() {
        let mut hll = new_sparse();
        assert_eq!(cached(&hll), Some(0));
        set_cache(&mut hll, 1234);
        assert_eq!(cached(&hll), Some(1234));
        invalidate_cache(&mut hll);
        assert_eq!(cached(&hll), None);
    }
}
