//! The dense form's registers: 16384 counters of 6 bits packed into
//! 12288 bytes, register `i` at bit `6 * i`, least significant bits first.

use super::{REGISTERS, REGISTER_MAX};

/// Bytes the packed registers take.
pub const DENSE_BYTES: usize = (REGISTERS * 6).div_ceil(8);

/// Register `index` of the packed `registers`.
pub fn get(registers: &[u8], index: usize) -> u8 {
    let bit = index * 6;
    let (byte, shift) = (bit / 8, bit % 8);
    let low = registers[byte] >> shift;
    let high = registers
        .get(byte + 1)
        .map_or(0, |&b| (u16::from(b) << (8 - shift)) as u8);
    (low | high) & REGISTER_MAX
}

/// Sets register `index` of the packed `registers` to `value` (6 bits).
pub fn set(registers: &mut [u8], index: usize, value: u8) {
    let bit = index * 6;
    let (byte, shift) = (bit / 8, bit % 8);
    let value = value & REGISTER_MAX;
    registers[byte] &= !(REGISTER_MAX << shift);
    registers[byte] |= value << shift;
    if let Some(next) = registers.get_mut(byte + 1) {
        *next &= !(u16::from(REGISTER_MAX) >> (8 - shift)) as u8;
        *next |= (u16::from(value) >> (8 - shift)) as u8;
    }
}

/// Raises register `index` to `value` if it is lower; whether it was.
pub fn raise(registers: &mut [u8], index: usize, value: u8) -> bool {
    if get(registers, index) < value {
        set(registers, index, value);
        true
    } else {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbours_keep_their_bits() {
        let mut registers = [0u8; DENSE_BYTES];
        for index in [0, 1, 2, 3, 4, 5, 100, REGISTERS - 2, REGISTERS - 1] {
            set(&mut registers, index, 63);
            assert_eq!(get(&registers, index), 63);
            if index > 0 {
                assert_eq!(get(&registers, index - 1), 0, "below {index}");
            }
            if index + 1 < REGISTERS {
                assert_eq!(get(&registers, index + 1), 0, "above {index}");
            }
            set(&mut registers, index, 0);
        }
        assert!(registers.iter().all(|&b| b == 0));
        assert!(raise(&mut registers, 7, 5));
        assert!(!raise(&mut registers, 7, 5));
        assert!(!raise(&mut registers, 7, 4));
        assert_eq!(get(&registers, 7), 5);
    }
}
