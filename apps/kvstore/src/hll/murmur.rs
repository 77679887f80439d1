//! The 64-bit MurmurHash2 ("MurmurHash64A") that Redis hashes
//! HyperLogLog elements with: the same bytes must land in the same
//! register with the same run of zeros, or the counts would differ from
//! Redis's.

/// The multiplier of MurmurHash64A.
const M: u64 = 0xc6a4_a793_5bd1_e995;
/// Its shift.
const R: u32 = 47;

/// MurmurHash64A of `data` with `seed`, reading 8-byte words little-endian
/// (as Redis does on the little-endian machines it runs on).
pub fn murmur64a(data: &[u8], seed: u32) -> u64 {
    let mut h = u64::from(seed) ^ (data.len() as u64).wrapping_mul(M);
    let mut words = data.chunks_exact(8);
    for word in &mut words {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(word);
        let mut k = u64::from_le_bytes(bytes).wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        for (i, &byte) in tail.iter().enumerate() {
            h ^= u64::from(byte) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^ (h >> R)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_bytes_and_length_change_the_hash() {
        let seed = 0xadc8_3b19;
        let a = murmur64a(b"abcdefgh", seed);
        assert_ne!(a, murmur64a(b"abcdefgh\0", seed), "the length counts");
        assert_ne!(murmur64a(b"x", seed), murmur64a(b"y", seed));
        assert_ne!(
            murmur64a(b"", seed),
            murmur64a(b"", seed + 1),
            "the seed counts"
        );
        // The empty input hashes the seed alone.
        let mut h = u64::from(0u32);
        h ^= h >> R;
        h = h.wrapping_mul(M);
        assert_eq!(murmur64a(b"", 0), h ^ (h >> R));
    }
}
