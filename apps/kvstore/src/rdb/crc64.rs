//! CRC-64 with the Jones polynomial, reflected, as Redis's `crc64.c`
//! computes it: the checksum that ends every DUMP payload.

/// The Jones polynomial (0xad93d23594c935a9), bit-reversed for the
/// reflected (least significant bit first) form.
const REFLECTED_POLY: u64 = 0x95ac_9329_ac4b_c9b5;

/// One step for every byte value, built at compile time.
const TABLE: [u64; 256] = table();

const fn table() -> [u64; 256] {
    let mut table = [0u64; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u64;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ REFLECTED_POLY
            } else {
                crc >> 1
            };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
}

/// The CRC-64 of `bytes` (initial value 0, no final xor).
///
/// ```
/// assert_eq!(kvstore::rdb::crc64(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
/// ```
pub fn crc64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0, |crc, &b| {
        TABLE[((crc ^ u64::from(b)) & 0xff) as usize] ^ (crc >> 8)
    })
}
