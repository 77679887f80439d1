//! The rest of the C library Lua links against in the guest: memory,
//! numbers from text (`strtod`, `strtoul`), `errno`, `rand`, the "C" locale,
//! and the ways a C program stops.

use core::alloc::Layout;
use core::ffi::{c_char, c_int, c_long, c_uint, c_ulong, CStr};
use core::sync::atomic::{AtomicU32, Ordering};

use super::float;

/// `ENOENT`, as `include/errno.h` numbers it.
pub const ENOENT: c_int = 2;
const ERANGE: c_int = 34;

/// C's `errno`. The guest runs Lua on one core at a time.
#[unsafe(no_mangle)]
pub static mut errno: c_int = 0;

/// Sets `errno`.
pub fn set_errno(v: c_int) {
    // SAFETY: a plain store to a C int that only Lua's thread uses.
    unsafe { (&raw mut errno).write_volatile(v) };
}

/// Bytes before each `malloc` block, holding its size; also its alignment.
const HEADER: usize = 16;

fn layout(size: usize) -> Option<Layout> {
    Layout::from_size_align(size.checked_add(HEADER)?, HEADER).ok()
}

/// C's `malloc`, on the kernel's allocator (null when it has no memory).
#[unsafe(no_mangle)]
pub extern "C" fn malloc(size: usize) -> *mut u8 {
    let Some(l) = layout(size) else {
        return core::ptr::null_mut();
    };
    // SAFETY: the layout's size is at least HEADER, never zero.
    let p = unsafe { alloc::alloc::alloc(l) };
    if p.is_null() {
        return p;
    }
    // SAFETY: p has HEADER + size bytes, aligned to 16.
    unsafe {
        p.cast::<usize>().write(size);
        p.add(HEADER)
    }
}

/// C's `free`.
///
/// # Safety
/// `p` is null or a live block from `malloc`/`realloc`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn free(p: *mut u8) {
    if p.is_null() {
        return;
    }
    // SAFETY: p came from malloc, whose header is HEADER bytes before it and
    // whose layout was made from the size recorded there.
    unsafe {
        let base = p.sub(HEADER);
        let size = base.cast::<usize>().read();
        alloc::alloc::dealloc(
            base,
            Layout::from_size_align_unchecked(size + HEADER, HEADER),
        );
    }
}

/// C's `realloc`.
///
/// # Safety
/// `p` is null or a live block from `malloc`/`realloc`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn realloc(p: *mut u8, size: usize) -> *mut u8 {
    if p.is_null() {
        return malloc(size);
    }
    let fresh = malloc(size);
    if !fresh.is_null() {
        // SAFETY: p is a live block whose size is in its header; fresh has
        // room for size bytes; the blocks are distinct.
        unsafe {
            let old = p.sub(HEADER).cast::<usize>().read();
            core::ptr::copy_nonoverlapping(p, fresh, old.min(size));
            free(p);
        }
    }
    fresh
}

/// C's `strtod`.
///
/// # Safety
/// `s` is a C string; `end` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn strtod(s: *const c_char, end: *mut *mut c_char) -> f64 {
    // SAFETY: s is a C string (the caller's promise).
    let bytes = unsafe { CStr::from_ptr(s) }.to_bytes();
    let (v, used) = float::parse_double(bytes);
    if v.is_infinite()
        && used > 0
        && !bytes[..used]
            .iter()
            .any(|c| c.is_ascii_alphabetic() && (c | 0x20) == b'i')
    {
        set_errno(ERANGE);
    }
    if !end.is_null() {
        // SAFETY: end is writable (the caller's promise).
        unsafe { end.write(s.wrapping_add(used).cast_mut()) };
    }
    v
}

/// C's `strtoul`.
///
/// # Safety
/// `s` is a C string; `end` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn strtoul(s: *const c_char, end: *mut *mut c_char, base: c_int) -> c_ulong {
    // SAFETY: s is a C string (the caller's promise).
    let bytes = unsafe { CStr::from_ptr(s) }.to_bytes();
    let (v, used, overflow) = float::parse_unsigned(bytes, base as u32);
    if overflow {
        set_errno(ERANGE);
    }
    if !end.is_null() {
        // SAFETY: end is writable (the caller's promise).
        unsafe { end.write(s.wrapping_add(used).cast_mut()) };
    }
    v as c_ulong
}

/// C's `strtol` (through `strtoul`: a value out of range wraps instead of
/// saturating).
///
/// # Safety
/// As `strtoul`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn strtol(s: *const c_char, end: *mut *mut c_char, base: c_int) -> c_long {
    // SAFETY: the same contract.
    unsafe { strtoul(s, end, base) as c_long }
}

/// printf.c's digits of a double (see [`float::format_double`]): writes at
/// most `cap` bytes of `v`'s magnitude to `out` and returns how many.
///
/// # Safety
/// `out` has `cap` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn faultline_format_double(
    out: *mut u8,
    cap: usize,
    v: f64,
    conv: c_int,
    prec: c_int,
    alt: c_int,
) -> usize {
    // SAFETY: the caller's promise.
    let buf = unsafe { core::slice::from_raw_parts_mut(out, cap) };
    let mut w = SliceWriter { buf, len: 0 };
    float::format_double(&mut w, v, conv as u8, prec.max(0) as usize, alt != 0);
    w.len
}

/// Writes into a byte slice, dropping what does not fit.
struct SliceWriter<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl core::fmt::Write for SliceWriter<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let n = s.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

/// C's `abs`.
#[unsafe(no_mangle)]
pub extern "C" fn abs(x: c_int) -> c_int {
    x.wrapping_abs()
}

/// The state of `rand`.
static SEED: AtomicU32 = AtomicU32::new(1);

/// C's `rand`: a linear congruential generator, 0..=`RAND_MAX`.
#[unsafe(no_mangle)]
pub extern "C" fn rand() -> c_int {
    let next = SEED
        .load(Ordering::Relaxed)
        .wrapping_mul(1_103_515_245)
        .wrapping_add(12_345);
    SEED.store(next, Ordering::Relaxed);
    (next & 0x7fff_ffff) as c_int
}

/// C's `srand`.
#[unsafe(no_mangle)]
pub extern "C" fn srand(seed: c_uint) {
    SEED.store(seed, Ordering::Relaxed);
}

/// C's `struct lconv`, with the one field `include/locale.h` declares.
#[repr(C)]
pub struct Lconv {
    decimal_point: *const c_char,
}

/// The "C" locale's conventions.
struct CLocale(Lconv);
// SAFETY: the conventions are never written; the pointer is to a static.
unsafe impl Sync for CLocale {}

static C_LOCALE: CLocale = CLocale(Lconv {
    decimal_point: c".".as_ptr(),
});

/// C's `localeconv`: the "C" locale's.
#[unsafe(no_mangle)]
pub extern "C" fn localeconv() -> *const Lconv {
    &C_LOCALE.0
}

/// C's `exit`. Lua calls it only after an error outside any protected
/// call, which `crate::state` never makes: this stops the kernel.
#[unsafe(no_mangle)]
pub extern "C" fn exit(status: c_int) -> ! {
    panic!("Lua called exit({status})")
}

/// C's `abort`.
#[unsafe(no_mangle)]
pub extern "C" fn abort() -> ! {
    panic!("Lua called abort()")
}

/// What `include/assert.h`'s `assert` calls when it fails.
///
/// # Safety
/// `expr` and `file` are C strings.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn faultline_assert_failed(
    expr: *const c_char,
    file: *const c_char,
    line: c_int,
) -> ! {
    // SAFETY: C strings from the assert macro.
    let (e, f) = unsafe { (CStr::from_ptr(expr), CStr::from_ptr(file)) };
    panic!("Lua assertion failed: {e:?} at {f:?}:{line}")
}
