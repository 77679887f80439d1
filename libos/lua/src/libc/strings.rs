//! The string functions of `include/string.h` that Rust's builtins do not
//! provide, in the "C" locale.
//!
//! # Safety
//! Each takes C strings: pointers to readable bytes up to a NUL, and for the
//! copying ones a destination with room for the result, as C requires.

use core::ffi::{c_char, c_int, CStr};

/// The bytes of the C string at `p`, without its NUL.
///
/// # Safety
/// `p` points to a NUL-terminated string that outlives `'a`.
unsafe fn bytes<'a>(p: *const c_char) -> &'a [u8] {
    // SAFETY: the caller's promise, passed on.
    unsafe { CStr::from_ptr(p) }.to_bytes()
}

/// A pointer to `s[at]`, as C's search functions answer.
fn at(s: *const c_char, at: usize) -> *mut c_char {
    s.wrapping_add(at).cast_mut()
}

/// C's `strcmp` (bytes compared as unsigned, as C says).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn strcmp(a: *const c_char, b: *const c_char) -> c_int {
    // SAFETY: both are C strings (module contract).
    let (a, b) = unsafe { (bytes(a), bytes(b)) };
    a.cmp(b) as c_int
}

/// C's `strcoll`: the "C" locale orders as `strcmp`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn strcoll(a: *const c_char, b: *const c_char) -> c_int {
    // SAFETY: the same contract as strcmp's.
    unsafe { strcmp(a, b) }
}

/// C's `strncmp`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn strncmp(a: *const c_char, b: *const c_char, n: usize) -> c_int {
    for i in 0..n {
        // SAFETY: reading stops at the first NUL of either string, which
        // both have (module contract).
        let (x, y) = unsafe { (*a.cast::<u8>().add(i), *b.cast::<u8>().add(i)) };
        if x != y || x == 0 {
            return c_int::from(x) - c_int::from(y);
        }
    }
    0
}

/// C's `strchr` (the NUL itself can be searched for).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn strchr(s: *const c_char, c: c_int) -> *mut c_char {
    // SAFETY: s is a C string (module contract).
    let b = unsafe { bytes(s) };
    let c = c as u8;
    match b.iter().position(|&x| x == c) {
        Some(i) => at(s, i),
        None if c == 0 => at(s, b.len()),
        None => core::ptr::null_mut(),
    }
}

/// C's `strrchr`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn strrchr(s: *const c_char, c: c_int) -> *mut c_char {
    // SAFETY: s is a C string (module contract).
    let b = unsafe { bytes(s) };
    let c = c as u8;
    match b.iter().rposition(|&x| x == c) {
        Some(i) => at(s, i),
        None if c == 0 => at(s, b.len()),
        None => core::ptr::null_mut(),
    }
}

/// C's `memchr`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memchr(p: *const u8, c: c_int, n: usize) -> *mut u8 {
    // SAFETY: the caller passes n readable bytes.
    let b = unsafe { core::slice::from_raw_parts(p, n) };
    match b.iter().position(|&x| x == c as u8) {
        Some(i) => p.wrapping_add(i).cast_mut(),
        None => core::ptr::null_mut(),
    }
}

/// C's `strstr`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn strstr(hay: *const c_char, needle: *const c_char) -> *mut c_char {
    // SAFETY: both are C strings (module contract).
    let (h, n) = unsafe { (bytes(hay), bytes(needle)) };
    if n.is_empty() {
        return hay.cast_mut();
    }
    match h.windows(n.len()).position(|w| w == n) {
        Some(i) => at(hay, i),
        None => core::ptr::null_mut(),
    }
}

/// C's `strspn`: the length of the prefix made of bytes in `accept`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn strspn(s: *const c_char, accept: *const c_char) -> usize {
    // SAFETY: both are C strings (module contract).
    let (s, set) = unsafe { (bytes(s), bytes(accept)) };
    s.iter().take_while(|c| set.contains(c)).count()
}

/// C's `strcspn`: the length of the prefix with no byte of `reject`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn strcspn(s: *const c_char, reject: *const c_char) -> usize {
    // SAFETY: both are C strings (module contract).
    let (s, set) = unsafe { (bytes(s), bytes(reject)) };
    s.iter().take_while(|c| !set.contains(c)).count()
}

/// C's `strpbrk`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn strpbrk(s: *const c_char, accept: *const c_char) -> *mut c_char {
    // SAFETY: both are C strings (module contract).
    let (b, set) = unsafe { (bytes(s), bytes(accept)) };
    match b.iter().position(|c| set.contains(c)) {
        Some(i) => at(s, i),
        None => core::ptr::null_mut(),
    }
}

/// Copies `n` bytes and a NUL to `dst`.
///
/// # Safety
/// `src` has `n` readable bytes; `dst` has room for `n + 1`; they do not overlap.
unsafe fn put(dst: *mut c_char, src: *const c_char, n: usize) {
    // SAFETY: the caller's promise.
    unsafe {
        core::ptr::copy_nonoverlapping(src, dst, n);
        *dst.add(n) = 0;
    }
}

/// C's `strcpy`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn strcpy(dst: *mut c_char, src: *const c_char) -> *mut c_char {
    // SAFETY: src is a C string and dst has room for it (module contract).
    unsafe { put(dst, src, bytes(src).len()) };
    dst
}

/// C's `strncpy`: at most `n` bytes, the rest of the `n` filled with NULs.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn strncpy(dst: *mut c_char, src: *const c_char, n: usize) -> *mut c_char {
    let mut i = 0;
    // SAFETY: src is read up to its NUL or n bytes; dst has n bytes of room
    // (module contract).
    unsafe {
        while i < n && *src.add(i) != 0 {
            *dst.add(i) = *src.add(i);
            i += 1;
        }
        core::ptr::write_bytes(dst.add(i), 0, n - i);
    }
    dst
}

/// C's `strcat`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn strcat(dst: *mut c_char, src: *const c_char) -> *mut c_char {
    // SAFETY: both are C strings and dst has room for both (module contract).
    unsafe { put(dst.add(bytes(dst).len()), src, bytes(src).len()) };
    dst
}

/// C's `strncat`: at most `n` bytes of `src`, then a NUL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn strncat(dst: *mut c_char, src: *const c_char, n: usize) -> *mut c_char {
    // SAFETY: src is read up to its NUL or n bytes; dst has room for the
    // result (module contract).
    unsafe {
        let mut len = 0;
        while len < n && *src.add(len) != 0 {
            len += 1;
        }
        put(dst.add(bytes(dst).len()), src, len);
    }
    dst
}

/// C's `strerror`, for the few error numbers of `include/errno.h`.
#[unsafe(no_mangle)]
pub extern "C" fn strerror(err: c_int) -> *const c_char {
    let text: &CStr = match err {
        2 => c"No such file or directory",
        5 => c"Input/output error",
        12 => c"Cannot allocate memory",
        22 => c"Invalid argument",
        34 => c"Numerical result out of range",
        38 => c"Function not implemented",
        _ => c"Unknown error",
    };
    text.as_ptr()
}
