//! The cardinality estimate from a histogram of register values: the
//! estimator of Otmar Ertl's "New cardinality estimation algorithms for
//! HyperLogLog sketches" (arXiv:1702.01284), which Redis 7 uses, computed
//! in the same order of double operations so that the rounded result is
//! Redis's.

use super::{Q, REGISTERS};

/// 1 / (2 ln 2): the estimator's constant for an unbounded number of
/// registers.
const ALPHA_INF: f64 = 0.721_347_520_444_481_7;

/// The estimate for `histogram[v]` registers holding each value `v`.
pub fn cardinality(histogram: &[u32; 64]) -> u64 {
    let m = REGISTERS as f64;
    let mut z = m * tau((m - f64::from(histogram[Q + 1])) / m);
    for j in (1..=Q).rev() {
        z += f64::from(histogram[j]);
        z *= 0.5;
    }
    z += m * sigma(f64::from(histogram[0]) / m);
    round_half_away(ALPHA_INF * m * m / z)
}

/// The sum `x + x^2 + 2 x^4 + 4 x^8 + ...`, until it stops changing;
/// infinite for 1 (every register at 0: the estimate is then 0).
fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let (mut y, mut z) = (1.0, x);
    loop {
        x *= x;
        let before = z;
        z += x * y;
        y += y;
        if z == before {
            return z;
        }
    }
}

/// The correction for registers at their largest value, summed until it
/// stops changing.
fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let (mut y, mut z) = (1.0, 1.0 - x);
    loop {
        x = libm::sqrt(x);
        let before = z;
        y *= 0.5;
        let d = 1.0 - x;
        z -= d * d * y;
        if z == before {
            return z / 3.0;
        }
    }
}

/// `x` rounded to the nearest integer, halves away from zero (C's
/// `llround`), for a non-negative `x`; 0 for NaN.
fn round_half_away(x: f64) -> u64 {
    if x.is_nan() || x < 0.0 {
        return 0;
    }
    if x >= u64::MAX as f64 {
        return u64::MAX;
    }
    let whole = x as u64;
    if x - whole as f64 >= 0.5 {
        whole + 1
    } else {
        whole
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_registers_set_is_zero() {
        let mut histogram = [0u32; 64];
        histogram[0] = REGISTERS as u32;
        assert_eq!(cardinality(&histogram), 0);
    }

    #[test]
    fn a_few_registers_at_one_count_about_themselves() {
        for set in [1u32, 10, 100, 1000] {
            let mut histogram = [0u32; 64];
            histogram[0] = REGISTERS as u32 - set;
            histogram[1] = set;
            let estimate = cardinality(&histogram) as f64;
            // At low counts each register set is about one element.
            assert!(
                (estimate - f64::from(set)).abs() <= f64::from(set) * 0.05 + 1.0,
                "{set}: {estimate}"
            );
        }
    }

    #[test]
    fn rounding_is_half_away_from_zero() {
        assert_eq!(round_half_away(2.5), 3);
        assert_eq!(round_half_away(2.4999), 2);
        assert_eq!(round_half_away(0.0), 0);
        assert_eq!(round_half_away(f64::NAN), 0);
    }
}
