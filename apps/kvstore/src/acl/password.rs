//! Passwords as ACL users keep them: SHA-256 hashes (the `sha2` crate,
//! RustCrypto's, `no_std` without its default features: a hash function
//! is no place for code of our own), shown and taken as 64 lowercase
//! hexadecimal digits (`#...` in `ACL SETUSER`).

use sha2::{Digest, Sha256};

/// A password's SHA-256.
pub type Hash = [u8; 32];

/// The SHA-256 of `password`.
pub fn hash(password: &[u8]) -> Hash {
    Sha256::digest(password).into()
}

/// `hash` in lowercase hexadecimal.
pub fn hex(hash: &Hash) -> alloc::string::String {
    hash.iter().map(|b| alloc::format!("{b:02x}")).collect()
}

/// The hash written as `hex` (exactly 64 lowercase hexadecimal digits).
pub fn parse_hex(hex: &[u8]) -> Option<Hash> {
    if hex.len() != 64 {
        return None;
    }
    let digit = |b: u8| match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; 32];
    for (byte, pair) in out.iter_mut().zip(hex.chunks(2)) {
        *byte = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(out)
}

/// Compares without stopping at the first difference, so the time taken
/// does not tell how much of a guess was right.
pub fn same(a: &Hash, b: &Hash) -> bool {
    a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_as_redis_shows_them() {
        // `ACL SETUSER u >abc` shows this hash in redis-server 7.0.15.
        let h = hash(b"abc");
        assert_eq!(
            hex(&h),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(parse_hex(hex(&h).as_bytes()), Some(h));
        assert_eq!(parse_hex(hex(&h).to_uppercase().as_bytes()), None);
        assert!(same(&h, &h) && !same(&h, &hash(b"abd")));
    }
}
