//! The `bit` library scripts have in Redis (LuaBitOp's functions): 32-bit
//! operations on Lua numbers, whose results are signed 32-bit numbers.

use alloc::vec::Vec;

use faultline_lua::state::{Raise, Stack};

use super::Host;

/// Argument `i` as 32 bits: the number's low 32 bits after rounding to the
/// nearest integer (ties to even), as LuaBitOp takes them from the double
/// `n + 2^52 + 2^51`. Strings that read as numbers count as numbers.
fn arg(s: &mut Stack<'_>, i: i32, name: &str) -> Result<u32, Raise> {
    match s.to_number(i) {
        Some(n) => Ok((n + 6_755_399_441_055_744.0).to_bits() as u32),
        None => {
            let got = s.type_name(i);
            let mut msg = s.caller_position();
            msg.extend(
                alloc::format!("bad argument #{i} to '{name}' (number expected, got {got})")
                    .bytes(),
            );
            Err(s.raise_message(&msg))
        }
    }
}

/// Returns `b` to Lua as a signed 32-bit number.
fn give(s: &mut Stack<'_>, b: u32) -> Result<usize, Raise> {
    s.push_number(f64::from(b as i32)).map_err(|_| s.raise())?;
    Ok(1)
}

/// `bit.tobit(x)`.
pub fn tobit<H: Host>(s: &mut Stack<'_>, _: &mut H) -> Result<usize, Raise> {
    let b = arg(s, 1, "tobit")?;
    give(s, b)
}

/// `bit.bnot(x)`.
pub fn bnot<H: Host>(s: &mut Stack<'_>, _: &mut H) -> Result<usize, Raise> {
    let b = arg(s, 1, "bnot")?;
    give(s, !b)
}

/// `bit.bswap(x)`: the four bytes in reverse order.
pub fn bswap<H: Host>(s: &mut Stack<'_>, _: &mut H) -> Result<usize, Raise> {
    let b = arg(s, 1, "bswap")?;
    give(s, b.swap_bytes())
}

/// The first argument and every other one folded with `op`.
fn fold(s: &mut Stack<'_>, name: &str, op: fn(u32, u32) -> u32) -> Result<usize, Raise> {
    let mut b = arg(s, 1, name)?;
    for i in 2..=s.top() {
        b = op(b, arg(s, i, name)?);
    }
    give(s, b)
}

/// `bit.band(x, ...)`.
pub fn band<H: Host>(s: &mut Stack<'_>, _: &mut H) -> Result<usize, Raise> {
    fold(s, "band", |a, b| a & b)
}

/// `bit.bor(x, ...)`.
pub fn bor<H: Host>(s: &mut Stack<'_>, _: &mut H) -> Result<usize, Raise> {
    fold(s, "bor", |a, b| a | b)
}

/// `bit.bxor(x, ...)`.
pub fn bxor<H: Host>(s: &mut Stack<'_>, _: &mut H) -> Result<usize, Raise> {
    fold(s, "bxor", |a, b| a ^ b)
}

/// `x` moved by `n` (its low 5 bits) with `op`.
fn shift(s: &mut Stack<'_>, name: &str, op: fn(u32, u32) -> u32) -> Result<usize, Raise> {
    let b = arg(s, 1, name)?;
    let n = arg(s, 2, name)? & 31;
    give(s, op(b, n))
}

/// `bit.lshift(x, n)`.
pub fn lshift<H: Host>(s: &mut Stack<'_>, _: &mut H) -> Result<usize, Raise> {
    shift(s, "lshift", |b, n| b << n)
}

/// `bit.rshift(x, n)`: logical.
pub fn rshift<H: Host>(s: &mut Stack<'_>, _: &mut H) -> Result<usize, Raise> {
    shift(s, "rshift", |b, n| b >> n)
}

/// `bit.arshift(x, n)`: arithmetic (the sign bit is copied in).
pub fn arshift<H: Host>(s: &mut Stack<'_>, _: &mut H) -> Result<usize, Raise> {
    shift(s, "arshift", |b, n| ((b as i32) >> n) as u32)
}

/// `bit.rol(x, n)`.
pub fn rol<H: Host>(s: &mut Stack<'_>, _: &mut H) -> Result<usize, Raise> {
    shift(s, "rol", u32::rotate_left)
}

/// `bit.ror(x, n)`.
pub fn ror<H: Host>(s: &mut Stack<'_>, _: &mut H) -> Result<usize, Raise> {
    shift(s, "ror", u32::rotate_right)
}

/// `bit.tohex(x [, n])`: the low `|n|` hexadecimal digits of `x` (8 at
/// most, 8 by default), in capitals when `n` is negative.
pub fn tohex<H: Host>(s: &mut Stack<'_>, _: &mut H) -> Result<usize, Raise> {
    let b = arg(s, 1, "tohex")?;
    let n = match s.top() >= 2 && s.kind(2) != faultline_lua::state::Kind::Nil {
        true => arg(s, 2, "tohex")? as i32,
        false => 8,
    };
    let digits: &[u8; 16] = if n < 0 {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    let count = n.unsigned_abs().min(8);
    let text: Vec<u8> = (0..count)
        .rev()
        .map(|i| digits[((b >> (4 * i)) & 15) as usize])
        .collect();
    s.push_bytes(&text).map_err(|_| s.raise())?;
    Ok(1)
}
