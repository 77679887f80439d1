//! The output-address-size encoding both SMMU versions use (SMMUv2
//! ID2.OAS and TCR2.PASize, SMMUv3 IDR5.OAS and CD.IPS), which is the
//! CPU's own (ID_AA64MMFR0_EL1.PARange): one table, each version knowing
//! the first few codes of it.

/// Bits each code stands for, code 0 first; SMMUv2 knows the first six,
/// SMMUv3 all seven.
const SIZES: [u32; 7] = [32, 36, 40, 42, 44, 48, 52];

/// Bits `code` stands for, if it is one of the first `known` codes.
pub(crate) const fn bits(code: u64, known: usize) -> Option<u32> {
    if code < known as u64 && code < SIZES.len() as u64 {
        Some(SIZES[code as usize])
    } else {
        None
    }
}

/// The code standing for exactly `bits`, among the first `known`.
pub(crate) fn code(bits: u32, known: usize) -> Option<u64> {
    SIZES
        .iter()
        .take(known)
        .position(|&b| b == bits)
        .map(|c| c as u64)
}
