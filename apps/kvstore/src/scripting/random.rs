//! `math.random` and `math.randomseed` as Redis gives them to scripts: one
//! 48-bit linear congruential generator (the `rand48` family's recurrence)
//! for the whole server, not the C library's `rand`. A script that seeds it
//! (`math.randomseed(n)`) then draws the same numbers Redis would; one that
//! does not draws the server's next numbers, so two calls differ.
//!
//! ```text
//! x(n+1) = (0x5DEECE66D * x(n) + 0xB) mod 2^48     draw = x(n+1) >> 17 (31 bits)
//! math.random()     = (draw mod (2^31 - 1)) / (2^31 - 1)       in [0, 1)
//! math.random(m)    = floor(r * m) + 1                         in [1, m]
//! math.random(l, u) = floor(r * (u - l + 1)) + l               in [l, u]
//! ```

use faultline_lua::state::{Raise, Stack};

use super::cjson::fail;
use super::Host;

const MULTIPLIER: u64 = 0x5_DEEC_E66D;
const INCREMENT: u64 = 0xB;
const MASK: u64 = (1 << 48) - 1;
/// The low 16 bits every seed is completed with.
const SEED_LOW: u64 = 0x330E;
/// The largest draw Redis divides by (`INT32_MAX`).
const DRAW_MAX: u64 = i32::MAX as u64;

/// The generator scripts draw from; one per server, kept across scripts and
/// `SCRIPT FLUSH` as Redis keeps its own.
#[derive(Debug, Clone)]
pub struct Rand48 {
    x: u64,
}

impl Default for Rand48 {
    /// The state a server starts in before any script seeds it: the one
    /// `seed(0x1234_ABCD)` gives, as in Redis.
    fn default() -> Self {
        let mut r = Rand48 { x: 0 };
        r.seed(0x1234_ABCD);
        r
    }
}

impl Rand48 {
    /// `math.randomseed(seed)`: the seed's 32 bits above [`SEED_LOW`].
    pub fn seed(&mut self, seed: i32) {
        self.x = ((u64::from(seed as u32)) << 16) | SEED_LOW;
    }

    /// The next 31-bit draw.
    pub fn draw(&mut self) -> u32 {
        self.x = (MULTIPLIER.wrapping_mul(self.x).wrapping_add(INCREMENT)) & MASK;
        (self.x >> 17) as u32
    }

    /// The next number in `[0, 1)`, as `math.random()` returns it.
    pub fn next_fraction(&mut self) -> f64 {
        (u64::from(self.draw()) % DRAW_MAX) as f64 / DRAW_MAX as f64
    }
}

/// Argument `i` as Lua's `luaL_checkint` takes it: a number (or a string
/// that reads as one) truncated toward zero to a C `int`.
fn int_arg(s: &mut Stack<'_>, i: i32, name: &str) -> Result<i64, Raise> {
    match s.to_number(i) {
        Some(n) => Ok(i64::from((n as i64) as i32)),
        None => {
            let got = s.type_name(i);
            let msg = alloc::format!("bad argument #{i} to '{name}' (number expected, got {got})");
            Err(fail(s, msg.as_bytes()))
        }
    }
}

/// `math.random([m [, n]])`.
pub fn random<H: Host>(s: &mut Stack<'_>, host: &mut H) -> Result<usize, Raise> {
    let args = s.top();
    let (low, high) = match args {
        0 => (None, None),
        1 => (Some(1), Some((1, int_arg(s, 1, "random")?))),
        2 => (
            Some(int_arg(s, 1, "random")?),
            Some((2, int_arg(s, 2, "random")?)),
        ),
        _ => return Err(fail(s, b"wrong number of arguments")),
    };
    let r = host.lua_random().next_fraction();
    let value = match (low, high) {
        (Some(low), Some((at, high))) => {
            if low > high {
                let msg = alloc::format!("bad argument #{at} to 'random' (interval is empty)");
                return Err(fail(s, msg.as_bytes()));
            }
            // The product is at least 0: truncating is flooring.
            ((r * (high - low + 1) as f64) as i64 + low) as f64
        }
        _ => r,
    };
    s.push_number(value).map_err(|_| s.raise())?;
    Ok(1)
}

/// `math.randomseed(n)`.
pub fn randomseed<H: Host>(s: &mut Stack<'_>, host: &mut H) -> Result<usize, Raise> {
    let seed = int_arg(s, 1, "randomseed")?;
    host.lua_random().seed(seed as i32); // int_arg made it fit
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::Rand48;

    /// `tostring(n)`: Lua's `%.14g`, for the fractions redis-server
    /// printed.
    fn fourteen_digits(n: f64) -> alloc::string::String {
        alloc::format!("{n:.14}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .into()
    }

    #[test]
    fn an_unseeded_server_draws_what_a_fresh_redis_draws() {
        // redis-server 7.0.15, just started: EVAL "return tostring(math.random())" 0, twice.
        let mut r = Rand48::default();
        assert_eq!(fourteen_digits(r.next_fraction()), "0.39646477363839");
        assert_eq!(fourteen_digits(r.next_fraction()), "0.84048536971234");
    }

    #[test]
    fn a_seed_gives_redis_s_sequence_for_that_seed() {
        // redis-server 7.0.15: math.randomseed(N); return tostring(math.random())
        for (seed, first) in [
            (10, "0.87885112309775"),
            (20, "0.58687420961767"),
            (-1, "0.30002572727391"),
            (3, "0.78323496216127"),
        ] {
            let mut r = Rand48::default();
            r.seed(seed);
            assert_eq!(fourteen_digits(r.next_fraction()), first, "seed {seed}");
        }
    }

    #[test]
    fn draws_are_31_bits() {
        let mut r = Rand48::default();
        assert!((0..10_000).all(|_| r.draw() < 1 << 31));
    }
}
