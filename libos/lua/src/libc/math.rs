//! The math functions of `include/math.h`, from the libm crate.

macro_rules! unary {
    ($($name:ident),*) => {$(
        #[doc = concat!("C's `", stringify!($name), "`.")]
        #[unsafe(no_mangle)]
        pub extern "C" fn $name(x: f64) -> f64 {
            libm::$name(x)
        }
    )*};
}

unary!(floor, ceil, fabs, sqrt, exp, log, log10, sin, cos, tan, asin, acos, atan, sinh, cosh, tanh);

/// C's `fmod`.
#[unsafe(no_mangle)]
pub extern "C" fn fmod(x: f64, y: f64) -> f64 {
    libm::fmod(x, y)
}

/// C's `pow`.
#[unsafe(no_mangle)]
pub extern "C" fn pow(x: f64, y: f64) -> f64 {
    libm::pow(x, y)
}

/// C's `atan2`.
#[unsafe(no_mangle)]
pub extern "C" fn atan2(y: f64, x: f64) -> f64 {
    libm::atan2(y, x)
}

/// C's `ldexp`.
#[unsafe(no_mangle)]
pub extern "C" fn ldexp(x: f64, e: i32) -> f64 {
    libm::ldexp(x, e)
}

/// C's `frexp`: the mantissa, and the exponent through `e`.
///
/// # Safety
/// `e` must be valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn frexp(x: f64, e: *mut i32) -> f64 {
    let (m, exp) = libm::frexp(x);
    // SAFETY: the caller passes a writable int, as C's frexp requires.
    unsafe { e.write(exp) };
    m
}

/// C's `modf`: the fraction, and the integral part through `ip`.
///
/// # Safety
/// `ip` must be valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn modf(x: f64, ip: *mut f64) -> f64 {
    let (frac, int) = libm::modf(x);
    // SAFETY: the caller passes a writable double, as C's modf requires.
    unsafe { ip.write(int) };
    frac
}
