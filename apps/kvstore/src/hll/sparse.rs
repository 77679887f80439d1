//! The sparse form: runs of registers as opcodes, as Redis writes them.
//!
//! - `00xxxxxx`: ZERO, 1 to 64 registers at 0;
//! - `01xxxxxx yyyyyyyy`: XZERO, 1 to 16384 registers at 0 (14 bits);
//! - `1vvvvvxx`: VAL, 1 to 4 registers at the value 1 to 32.
//!
//! A register is changed the way Redis changes it (split the run that
//! holds it into at most three, then merge equal neighbouring VALs a few
//! opcodes around), so that the bytes, which `GET` shows, are Redis's.

use alloc::vec::Vec;

use super::{Corrupt, HEADER, REGISTERS};

/// The largest value a VAL opcode holds.
pub const VAL_MAX_VALUE: u8 = 32;
/// The most registers one VAL opcode covers.
const VAL_MAX_LEN: usize = 4;
/// The most registers one ZERO opcode covers.
const ZERO_MAX_LEN: usize = 64;
/// The most registers one XZERO opcode covers.
const XZERO_MAX_LEN: usize = 16384;

/// One opcode, read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Registers at 0 (ZERO or XZERO).
    Zeros {
        /// How many.
        len: usize,
        /// 1 for ZERO, 2 for XZERO.
        bytes: usize,
    },
    /// Registers at one value.
    Val {
        /// The value, 1 to 32.
        value: u8,
        /// How many, 1 to 4.
        len: usize,
    },
}

impl Op {
    /// Registers the opcode covers.
    pub fn registers(self) -> usize {
        match self {
            Op::Zeros { len, .. } | Op::Val { len, .. } => len,
        }
    }

    /// Bytes the opcode takes.
    pub fn bytes(self) -> usize {
        match self {
            Op::Zeros { bytes, .. } => bytes,
            Op::Val { .. } => 1,
        }
    }
}

/// The opcode at `at` of `data`; `None` for an XZERO cut short.
pub fn op_at(data: &[u8], at: usize) -> Option<Op> {
    let first = *data.get(at)?;
    Some(match first & 0xc0 {
        0x00 => Op::Zeros {
            len: usize::from(first & 0x3f) + 1,
            bytes: 1,
        },
        0x40 => {
            let low = *data.get(at + 1)?;
            Op::Zeros {
                len: ((usize::from(first & 0x3f) << 8) | usize::from(low)) + 1,
                bytes: 2,
            }
        }
        _ => Op::Val {
            value: ((first >> 2) & 0x1f) + 1,
            len: usize::from(first & 3) + 1,
        },
    })
}

/// Appends the opcodes for `len` zero registers (ZERO up to 64, XZERO
/// beyond, as Redis chooses).
fn push_zeros(out: &mut Vec<u8>, len: usize) {
    if len > ZERO_MAX_LEN {
        let n = len - 1;
        out.extend_from_slice(&[0x40 | (n >> 8) as u8, n as u8]);
    } else {
        out.push((len - 1) as u8);
    }
}

/// The VAL opcode for `len` registers at `value`.
fn val(value: u8, len: usize) -> u8 {
    0x80 | ((value - 1) << 2) | (len - 1) as u8
}

/// The body of an empty sparse HyperLogLog: XZERO opcodes covering every
/// register.
pub fn empty_body() -> Vec<u8> {
    let mut body = Vec::new();
    let mut left = REGISTERS;
    while left > 0 {
        let len = left.min(XZERO_MAX_LEN);
        push_zeros(&mut body, len);
        left -= len;
    }
    body
}

/// Calls `run(first_register, op)` for each opcode of the body after the
/// header; `Err` if an opcode is cut short.
pub fn walk(hll: &[u8], mut run: impl FnMut(usize, Op)) -> Result<usize, Corrupt> {
    let (mut at, mut index) = (HEADER, 0);
    while at < hll.len() {
        let op = op_at(hll, at).ok_or(Corrupt)?;
        run(index, op);
        index += op.registers();
        at += op.bytes();
    }
    Ok(index)
}

/// What [`set`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetOutcome {
    /// The register already held as much.
    Unchanged,
    /// The register was raised in the sparse form.
    Raised,
    /// The value or the size does not fit the sparse form: the caller
    /// turns it dense and raises the register there.
    Promote,
}

/// Raises register `index` of the sparse `hll` to `count` if lower, as
/// Redis does; `max_bytes` is `hll-sparse-max-bytes`. `Err` when the body
/// does not reach the register.
pub fn set(
    hll: &mut Vec<u8>,
    index: usize,
    count: u8,
    max_bytes: u64,
) -> Result<SetOutcome, Corrupt> {
    if count > VAL_MAX_VALUE {
        return Ok(SetOutcome::Promote);
    }
    // The opcode holding the register, the one before it, and the first
    // register it covers.
    let (mut at, mut first, mut prev) = (HEADER, 0, None);
    let op = loop {
        let op = op_at(hll, at).ok_or(Corrupt)?;
        if index < first + op.registers() {
            break op;
        }
        prev = Some(at);
        at += op.bytes();
        first += op.registers();
    };
    let replacement: Vec<u8> = match op {
        Op::Val { value, .. } if value >= count => return Ok(SetOutcome::Unchanged),
        Op::Val { len: 1, .. } | Op::Zeros { len: 1, bytes: 1 } => alloc::vec![val(count, 1)],
        Op::Zeros { len, .. } => {
            let mut seq = Vec::with_capacity(5);
            if index > first {
                push_zeros(&mut seq, index - first);
            }
            seq.push(val(count, 1));
            if index < first + len - 1 {
                push_zeros(&mut seq, first + len - 1 - index);
            }
            seq
        }
        Op::Val { value, len } => {
            let mut seq = Vec::with_capacity(3);
            if index > first {
                seq.push(val(value, index - first));
            }
            seq.push(val(count, 1));
            if index < first + len - 1 {
                seq.push(val(value, first + len - 1 - index));
            }
            seq
        }
    };
    let grows = replacement.len().saturating_sub(op.bytes());
    if grows > 0 && (hll.len() + grows) as u64 > max_bytes {
        return Ok(SetOutcome::Promote);
    }
    hll.splice(at..at + op.bytes(), replacement);
    merge_vals(hll, prev.unwrap_or(HEADER));
    Ok(SetOutcome::Raised)
}

/// Merges neighbouring VAL opcodes of one value whose lengths fit one
/// opcode, looking at five opcodes from `at` on (Redis's window).
fn merge_vals(hll: &mut Vec<u8>, mut at: usize) {
    for _ in 0..5 {
        let Some(op) = op_at(hll, at) else {
            return;
        };
        let (
            Op::Val { value, len },
            Some(Op::Val {
                value: next,
                len: next_len,
            }),
        ) = (op, op_at(hll, at + 1))
        else {
            at += op.bytes();
            continue;
        };
        if value == next && len + next_len <= VAL_MAX_LEN {
            hll[at + 1] = val(value, len + next_len);
            hll.remove(at);
        } else {
            at += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh() -> Vec<u8> {
        let mut hll = alloc::vec![0u8; HEADER];
        hll.extend(empty_body());
        hll
    }

    fn registers(hll: &[u8]) -> Vec<u8> {
        let mut out = alloc::vec![0u8; REGISTERS];
        let end = walk(hll, |first, op| {
            if let Op::Val { value, len } = op {
                out[first..first + len].fill(value);
            }
        });
        assert_eq!(end, Ok(REGISTERS));
        out
    }

    #[test]
    fn an_empty_body_is_one_xzero() {
        assert_eq!(empty_body(), [0x7f, 0xff]);
    }

    #[test]
    fn a_register_in_a_zero_run_splits_it_in_three() {
        let mut hll = fresh();
        assert_eq!(set(&mut hll, 1000, 3, 3000), Ok(SetOutcome::Raised));
        // XZERO(1000), VAL(3,1), XZERO(15383).
        let n = 15383 - 1;
        assert_eq!(
            hll[HEADER..],
            [0x43, 0xe7, 0x88, 0x40 | (n >> 8) as u8, n as u8]
        );
        assert_eq!(set(&mut hll, 1000, 2, 3000), Ok(SetOutcome::Unchanged));
        assert_eq!(set(&mut hll, 0, 1, 3000), Ok(SetOutcome::Raised));
        assert_eq!(
            hll[HEADER..HEADER + 2],
            [0x80, 0x43],
            "VAL(1,1) then XZERO(999)"
        );
    }

    #[test]
    fn equal_neighbours_merge_up_to_four() {
        let mut hll = fresh();
        for index in 10..16 {
            set(&mut hll, index, 5, 3000).unwrap();
        }
        // ZERO(10), VAL(5,4), VAL(5,2), XZERO(...).
        assert_eq!(hll[HEADER..HEADER + 3], [9, val(5, 4), val(5, 2)]);
        let regs = registers(&hll);
        assert!(regs[10..16].iter().all(|&r| r == 5));
        assert_eq!(regs.iter().filter(|&&r| r != 0).count(), 6);
    }

    #[test]
    fn big_values_and_big_bodies_ask_for_the_dense_form() {
        let mut hll = fresh();
        assert_eq!(set(&mut hll, 5, 33, 3000), Ok(SetOutcome::Promote));
        assert_eq!(
            set(&mut hll, 5, 2, 18),
            Ok(SetOutcome::Promote),
            "would pass 18 bytes"
        );
        assert_eq!(hll.len(), HEADER + 2, "unchanged");
    }

    #[test]
    fn a_short_body_is_corrupt() {
        let mut hll = fresh();
        hll.truncate(HEADER + 1);
        assert_eq!(set(&mut hll, 5, 2, 3000), Err(Corrupt));
        let mut hll = fresh();
        hll[HEADER + 1] = 0; // XZERO(0x3f00 + 1): short of 16384.
        assert_eq!(set(&mut hll, 16383, 2, 3000), Err(Corrupt));
    }
}
