//! Faultline's `memcpy`, `memmove` and `memcmp`, for the guest.
//!
//! The `memcpy` of the sysroot's `compiler_builtins` copies a misaligned
//! source one byte load at a time (about 2.75 instructions per byte): the
//! `aarch64-unknown-none` target promises the compiler aligned accesses
//! only, because code may run before the MMU is on. Faultline's kernel
//! never does: `boot.S` turns the MMU on, with SCTLR_EL1's alignment check
//! off, before the first Rust instruction, and every buffer the kernel
//! copies is Normal memory, where the architecture allows unaligned loads
//! and stores. kvstore copies values between its input, its store, socket
//! rings and frames at arbitrary offsets, so this is most of its copying.
//! [`copy_forward`], by length:
//!
//! - fewer than 4 bytes: one at a time;
//! - 4 to 32: two accesses of 4, 8 or 16 bytes, one from each end (they
//!   overlap in the middle), both loaded before either is stored;
//! - more: the first 16 bytes, then 64 bytes per iteration (two `ldp` of
//!   two 16-byte vector registers from the source, wherever it lies; two
//!   `stp` to the now 16-aligned destination), 16 at a time for the rest,
//!   and the last 16 bytes again from the end.
//!
//! A 4 KiB copy is about 400 instructions whatever the source's alignment
//! (about 2,000 with aligned 8-byte accesses joined by shifts, before). It
//! never touches a byte outside `[src, src + n)` or `[dest, dest + n)`.
//! Host builds (tests) make the same accesses in plain Rust.
//!
//! [`move_bytes`] is `memmove`: the same forward copy when the destination
//! is below the source (overlapping or not), a backward one otherwise.
//!
//! [`compare`] is `memcmp` (and `bcmp`): eight bytes at a time.
//!
//! On the guest (`target_os = "none"`) the crate exports the C symbols
//! `memcpy`, `memmove`, `memcmp` and `bcmp`, which the linker then prefers
//! to `compiler_builtins`' weak ones;
//! host builds export nothing, so that tests keep the host libc's.
//!
//! ```
//! let src = *b"..a misaligned source..";
//! let mut dest = [0u8; 20];
//! // SAFETY: both ranges are in bounds (20 bytes from offset 1 of a 23-byte
//! // array, into a 20-byte array) and do not overlap.
//! unsafe { faultline_mem::copy_forward(dest.as_mut_ptr(), src.as_ptr().add(1), 20) };
//! assert_eq!(&dest, b".a misaligned source");
//! ```
#![cfg_attr(not(test), no_std)]
// LLVM recognises copy loops and would turn them back into calls to `memcpy`:
// this one.
#![no_builtins]

/// Bytes in a machine word.
const WORD: usize = core::mem::size_of::<u64>();

/// Bytes in a vector register: the unit of long copies.
const VECTOR: usize = 16;

/// Bytes per iteration of the main loop: four vector registers.
#[cfg(target_arch = "aarch64")]
const BLOCK: usize = 4 * VECTOR;

/// Copies `n` bytes from `src` to `dest`, which must not overlap, or only
/// with `dest` at least 16 bytes below `src` (what [`move_bytes`] needs).
///
/// The source and the destination may have any alignment. All accesses lie
/// within `[src, src + n)` and `[dest, dest + n)`; see the crate
/// documentation for the strategy.
///
/// # Safety
///
/// `src` must be valid for reads and `dest` for writes of `n` bytes, and the
/// two ranges must not overlap unless `dest + 16 <= src`. Both must be
/// Normal memory (not a device's registers): they are accessed unaligned.
// Inlined into `memcpy`: no second call frame per copy.
#[inline(always)]
pub unsafe fn copy_forward(dest: *mut u8, src: *const u8, n: usize) {
    // SAFETY: the caller's contract; each helper's own condition on `n`
    // is its arm's.
    unsafe {
        match n {
            0..4 => copy_bytes(dest, src, n),
            4..8 => copy_ends_4(dest, src, n),
            8..16 => copy_ends_8(dest, src, n),
            16..=32 => copy_ends_16(dest, src, n),
            _ => copy_long(dest, src, n),
        }
    }
}

/// Copies `n` (> 32) bytes: the first 16, the vectors from there to the
/// end with the destination 16-aligned, and the last 16.
///
/// Every load of a byte comes before any store that could reach it when
/// `dest + 16 <= src`: the first vector is stored below the source; the
/// main loop loads 64 bytes before storing them, at least 16 bytes below;
/// the last vector lies at least 16 bytes above every store before it.
///
/// # Safety
///
/// As [`copy_forward`], with `n > 32`.
#[inline(always)]
unsafe fn copy_long(dest: *mut u8, src: *const u8, n: usize) {
    // 1 to 16 bytes: the first vector reaches the destination's next
    // 16-byte boundary.
    let head = VECTOR - dest as usize % VECTOR;
    // SAFETY: `head <= 16 < n`; the rest, `n - head > 16` bytes, is copied
    // from a 16-aligned destination; `n - 16` is within both ranges.
    unsafe {
        copy_vector(dest, src);
        copy_vectors(dest.add(head), src.add(head), n - head);
        copy_vector(dest.add(n - VECTOR), src.add(n - VECTOR));
    }
}

/// Copies one 16-byte vector, at any alignment.
///
/// # Safety
///
/// As [`copy_forward`] for 16 bytes.
#[inline(always)]
unsafe fn copy_vector(dest: *mut u8, src: *const u8) {
    #[cfg(target_arch = "aarch64")]
    // SAFETY: one load and one store of 16 bytes within the caller's
    // ranges, Normal memory with SCTLR_EL1.A clear (crate documentation).
    unsafe {
        core::arch::asm!(
            "ldr {v:q}, [{src}]",
            "str {v:q}, [{dest}]",
            src = in(reg) src,
            dest = in(reg) dest,
            v = out(vreg) _,
            options(nostack, preserves_flags),
        );
    }
    #[cfg(not(target_arch = "aarch64"))]
    // SAFETY: as above, through the host's unaligned accesses.
    unsafe {
        dest.cast::<u128>()
            .write_unaligned(src.cast::<u128>().read_unaligned());
    }
}

/// Copies `n` bytes one at a time.
///
/// # Safety
///
/// As [`copy_forward`].
#[inline(always)]
unsafe fn copy_bytes(dest: *mut u8, src: *const u8, n: usize) {
    for i in 0..n {
        // SAFETY: `i < n`, within the caller's ranges.
        unsafe { *dest.add(i) = *src.add(i) };
    }
}

/// Defines `$name(dest, src, n)`: copies `n` bytes, `$size <= n <= 2 *
/// $size`, as one `$size`-byte access at each end, both loaded before
/// either is stored (so any overlap is safe). On the guest: `ldr`/`str`
/// of a vector register viewed as `$reg` (`s`, `d` or `q`: 4, 8 or 16
/// bytes); on the host: unaligned reads and writes of `$host`.
macro_rules! copy_ends {
    ($name:ident, $size:literal, $reg:literal, $host:ty) => {
        /// Copies `n` bytes as two accesses, one from each end; see
        /// `copy_ends!`.
        ///
        /// # Safety
        ///
        /// As [`copy_forward`], with the size bounds above.
        #[inline(always)]
        unsafe fn $name(dest: *mut u8, src: *const u8, n: usize) {
            debug_assert!(($size..=2 * $size).contains(&n));
            // SAFETY: `n >= $size`: both accesses lie within the ranges.
            let (src_last, dest_last) = unsafe { (src.add(n - $size), dest.add(n - $size)) };
            #[cfg(target_arch = "aarch64")]
            // SAFETY: two loads and two stores within the caller's ranges,
            // which are Normal memory with SCTLR_EL1.A clear, where
            // unaligned accesses are allowed.
            unsafe {
                core::arch::asm!(
                    concat!("ldr {a:", $reg, "}, [{src}]"),
                    concat!("ldr {b:", $reg, "}, [{src_last}]"),
                    concat!("str {a:", $reg, "}, [{dest}]"),
                    concat!("str {b:", $reg, "}, [{dest_last}]"),
                    src = in(reg) src,
                    src_last = in(reg) src_last,
                    dest = in(reg) dest,
                    dest_last = in(reg) dest_last,
                    a = out(vreg) _,
                    b = out(vreg) _,
                    options(nostack, preserves_flags),
                );
            }
            #[cfg(not(target_arch = "aarch64"))]
            // SAFETY: as above; the host allows unaligned accesses through
            // `read_unaligned` and `write_unaligned`.
            unsafe {
                let a = src.cast::<$host>().read_unaligned();
                let b = src_last.cast::<$host>().read_unaligned();
                dest.cast::<$host>().write_unaligned(a);
                dest_last.cast::<$host>().write_unaligned(b);
            }
        }
    };
}

copy_ends!(copy_ends_4, 4, "s", u32);
copy_ends!(copy_ends_8, 8, "d", u64);
copy_ends!(copy_ends_16, 16, "q", u128);

/// Copies the whole 16-byte vectors of `n` bytes, 64 bytes per iteration
/// while that many remain, then 16 at a time; the last `n % 16` bytes are
/// left to the caller.
///
/// Each iteration loads before it stores, and when the destination lies
/// below the source it never runs ahead of it.
///
/// # Safety
///
/// `dest` 16-aligned, otherwise as [`copy_forward`].
#[cfg(target_arch = "aarch64")]
#[inline(always)]
unsafe fn copy_vectors(dest: *mut u8, src: *const u8, n: usize) {
    let blocks = n / BLOCK;
    let vectors = n % BLOCK / VECTOR;
    // SAFETY: `blocks * 64 + vectors * 16 <= n` bytes of the caller's
    // ranges are read and written, nothing else; the source is Normal
    // memory with SCTLR_EL1.A clear (crate documentation), so its unaligned
    // vector loads are allowed; the stores are 16-aligned.
    unsafe {
        core::arch::asm!(
            "cbz {blocks}, 3f",
            "2:",
            "ldp {a:q}, {b:q}, [{src}], #32",
            "ldp {c:q}, {d:q}, [{src}], #32",
            "subs {blocks}, {blocks}, #1",
            "stp {a:q}, {b:q}, [{dest}], #32",
            "stp {c:q}, {d:q}, [{dest}], #32",
            "b.ne 2b",
            "3:",
            "cbz {vectors}, 5f",
            "4:",
            "ldr {a:q}, [{src}], #16",
            "subs {vectors}, {vectors}, #1",
            "str {a:q}, [{dest}], #16",
            "b.ne 4b",
            "5:",
            src = inout(reg) src => _,
            dest = inout(reg) dest => _,
            blocks = inout(reg) blocks => _,
            vectors = inout(reg) vectors => _,
            a = out(vreg) _,
            b = out(vreg) _,
            c = out(vreg) _,
            d = out(vreg) _,
            options(nostack),
        );
    }
}

/// Host builds (tests): the guest's `copy_vectors` in plain Rust, one
/// unaligned 16-byte read and aligned write at a time, in the same order.
///
/// # Safety
///
/// As the guest's.
#[cfg(not(target_arch = "aarch64"))]
#[inline(always)]
unsafe fn copy_vectors(dest: *mut u8, src: *const u8, n: usize) {
    for i in 0..n / VECTOR {
        // SAFETY: vector `i` of the caller's ranges; the destination's is
        // 16-aligned and the source's is read unaligned.
        unsafe {
            let v = src.add(i * VECTOR).cast::<[u64; 2]>().read_unaligned();
            dest.add(i * VECTOR).cast::<[u64; 2]>().write(v);
        }
    }
}

/// Copies `n` bytes from `src` to `dest`, which may overlap: what
/// `memmove` does.
///
/// When the ranges do not overlap, or `dest` lies at least 16 bytes below
/// `src`, this is [`copy_forward`] (see its order of loads and stores);
/// so is a copy of 4 to 32 bytes, whose loads all come before its stores.
/// A longer copy to less than 16 bytes below the source goes forward a
/// byte at a time. When `dest` is above `src` and the ranges
/// overlap (a `Vec::insert` shifting elements up), the copy runs
/// backwards: 8-byte words when both ends share their alignment, as
/// elements of any type at least 8-aligned do, otherwise single bytes.
///
/// # Safety
///
/// `src` must be valid for reads and `dest` for writes of `n` bytes, both
/// Normal memory.
#[inline(always)]
pub unsafe fn move_bytes(dest: *mut u8, src: *const u8, n: usize) {
    let (d, s) = (dest as usize, src as usize);
    if d >= s.wrapping_add(n)
        || s >= d.wrapping_add(n)
        || s >= d + VECTOR
        || (4..=2 * VECTOR).contains(&n)
    {
        // SAFETY: the caller's contract, and one of the cases above.
        unsafe { copy_forward(dest, src, n) };
        return;
    }
    if d <= s {
        // SAFETY: the caller's contract; each byte is read before the
        // byte below it is written, and never again.
        unsafe { copy_bytes(dest, src, n) };
        return;
    }
    let mut left = n;
    if (d - s).is_multiple_of(WORD) {
        // Single bytes down to a word boundary of both ends, then words.
        while left > 0 && !(s + left).is_multiple_of(WORD) {
            left -= 1;
            // SAFETY: `left < n`, within both ranges.
            unsafe { *dest.add(left) = *src.add(left) };
        }
        while left >= WORD {
            left -= WORD;
            // SAFETY: the aligned word at `left` of both ranges; it is read
            // whole before it is written, and the words above are done.
            unsafe { *dest.add(left).cast::<u64>() = *src.add(left).cast::<u64>() };
        }
    }
    while left > 0 {
        left -= 1;
        // SAFETY: `left < n`, within both ranges; bytes above are done.
        unsafe { *dest.add(left) = *src.add(left) };
    }
}

/// The C `memmove` of the guest: [`move_bytes`], returning `dest`.
///
/// # Safety
///
/// As [`move_bytes`].
#[cfg(target_os = "none")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memmove(dest: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    // SAFETY: the caller's contract, the same.
    unsafe { move_bytes(dest, src, n) };
    dest
}

/// The C `memcpy` of the guest: copies `n` bytes from `src` to `dest` with
/// [`copy_forward`] and returns `dest`.
///
/// # Safety
///
/// As [`copy_forward`].
#[cfg(target_os = "none")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memcpy(dest: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    // SAFETY: the caller's contract, the same.
    unsafe { copy_forward(dest, src, n) };
    dest
}

/// Compares `n` bytes at `a` and `b` as C's `memcmp` does: negative,
/// zero or positive as the first differing byte (unsigned) of `a` is
/// below, equal to or above `b`'s.
///
/// Eight bytes at a time (the builtins' one compares a byte at a time:
/// six instructions per byte, and kvstore compares keys, script digests
/// and Lua's interned strings, equal to their end, many times a request):
/// whole words from the start, then the last word again from the end
/// (its bytes before the unchecked ones are known equal). Fewer than 8
/// bytes are compared one at a time. Every access lies within
/// `[a, a + n)` and `[b, b + n)`.
///
/// # Safety
///
/// `a` and `b` must be valid for reads of `n` bytes, of Normal memory
/// (they are read unaligned).
#[inline(always)]
pub unsafe fn compare(a: *const u8, b: *const u8, n: usize) -> i32 {
    if n < WORD {
        for i in 0..n {
            // SAFETY: `i < n`, within both ranges.
            let (x, y) = unsafe { (*a.add(i), *b.add(i)) };
            if x != y {
                return i32::from(x) - i32::from(y);
            }
        }
        return 0;
    }
    let mut at = 0;
    loop {
        // SAFETY: `at + 8 <= n`: both words lie within the ranges.
        let (x, y) = unsafe { (load_word(a.add(at)), load_word(b.add(at))) };
        if x != y {
            // In memory order: the first byte is the most significant.
            return if x.to_be() < y.to_be() { -1 } else { 1 };
        }
        if at + WORD == n {
            return 0;
        }
        at = (at + WORD).min(n - WORD);
    }
}

/// The 8 bytes at `p`, at any alignment, in the machine's byte order.
///
/// # Safety
///
/// `p` valid for reads of 8 bytes of Normal memory.
#[inline(always)]
unsafe fn load_word(p: *const u8) -> u64 {
    #[cfg(target_arch = "aarch64")]
    {
        let word: u64;
        // SAFETY: one 8-byte load within the caller's range, Normal
        // memory with SCTLR_EL1.A clear (crate documentation).
        unsafe {
            core::arch::asm!(
                "ldr {w}, [{p}]",
                p = in(reg) p,
                w = out(reg) word,
                options(nostack, preserves_flags, readonly),
            );
        }
        word
    }
    #[cfg(not(target_arch = "aarch64"))]
    // SAFETY: as above, through the host's unaligned reads.
    unsafe {
        p.cast::<u64>().read_unaligned()
    }
}

/// The C `memcmp` of the guest: [`compare`].
///
/// # Safety
///
/// As [`compare`].
#[cfg(target_os = "none")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    // SAFETY: the caller's contract, the same.
    unsafe { compare(a, b, n) }
}

/// The C `bcmp` of the guest (what equality of byte slices may call):
/// [`compare`].
///
/// # Safety
///
/// As [`compare`].
#[cfg(target_os = "none")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    // SAFETY: the caller's contract, the same.
    unsafe { compare(a, b, n) }
}

#[cfg(test)]
mod tests {
    use super::{compare, copy_forward, move_bytes};

    /// `compare` of `len` bytes at offsets `a_off` and `b_off` of two
    /// buffers that differ only at `diff` (if any), against slice order.
    fn check_compare(a_off: usize, b_off: usize, len: usize, diff: Option<(usize, u8)>) {
        let text: Vec<u8> = (0..len).map(|i| (i * 37 % 251) as u8).collect();
        let mut a = vec![0xeeu8; a_off + len + 8];
        let mut b = vec![0x11u8; b_off + len + 8];
        a[a_off..a_off + len].copy_from_slice(&text);
        b[b_off..b_off + len].copy_from_slice(&text);
        if let Some((at, value)) = diff {
            b[b_off + at] = value;
        }
        let (x, y) = (&a[a_off..a_off + len], &b[b_off..b_off + len]);
        // SAFETY: `len` bytes from each offset are within the buffers.
        let got = unsafe { compare(x.as_ptr(), y.as_ptr(), len) };
        assert_eq!(
            got.signum(),
            x.cmp(y) as i32,
            "a {a_off} b {b_off} len {len} diff {diff:?}"
        );
    }

    #[test]
    fn compares_as_slices_order_at_every_alignment_and_length() {
        for a_off in 0..9 {
            for b_off in 0..9 {
                for len in 0..=40 {
                    check_compare(a_off, b_off, len, None);
                    for at in 0..len {
                        for value in [0, 0x80, 0xff] {
                            check_compare(a_off, b_off, len, Some((at, value)));
                        }
                    }
                }
            }
        }
    }

    /// Guard bytes on each side of the destination.
    const GUARD: usize = 24;
    /// The guard's value: not one any source byte takes.
    const POISON: u8 = 0xa5;

    /// Copies `len` bytes from offset `src_off` of a buffer into offset
    /// `dest_off` of another with [`copy_forward`] and checks them against
    /// a plain slice copy, and that the bytes around are unchanged.
    fn check(src_off: usize, dest_off: usize, len: usize) {
        // u64 buffers: their starts are 8-aligned, so the offsets are the
        // alignments.
        let mut src_store = vec![0u64; (src_off + len) / 8 + 2];
        // SAFETY: a view of the u64 buffer's own bytes.
        let src_buf = unsafe {
            core::slice::from_raw_parts_mut(
                src_store.as_mut_ptr().cast::<u8>(),
                src_store.len() * 8,
            )
        };
        for (i, b) in src_buf.iter_mut().enumerate() {
            *b = (i % 251) as u8 ^ 0x5a;
        }
        let mut dest_store = vec![0u64; (GUARD + dest_off + len + GUARD) / 8 + 1];
        // SAFETY: a view of the u64 buffer's own bytes.
        let dest_buf = unsafe {
            core::slice::from_raw_parts_mut(
                dest_store.as_mut_ptr().cast::<u8>(),
                dest_store.len() * 8,
            )
        };
        dest_buf.fill(POISON);
        let at = GUARD + dest_off;
        // SAFETY: `len` bytes from `src_off` are within the source buffer,
        // from `at` within the destination; two buffers never overlap.
        unsafe {
            copy_forward(
                dest_buf.as_mut_ptr().add(at),
                src_buf.as_ptr().add(src_off),
                len,
            )
        };
        let expected = &src_buf[src_off..src_off + len];
        assert_eq!(
            &dest_buf[at..at + len],
            expected,
            "src {src_off} dest {dest_off} len {len}"
        );
        assert!(
            dest_buf[..at]
                .iter()
                .chain(&dest_buf[at + len..])
                .all(|&b| b == POISON),
            "wrote outside: src {src_off} dest {dest_off} len {len}"
        );
    }

    #[test]
    fn every_alignment_and_short_length() {
        for src_off in 0..16 {
            for dest_off in 0..16 {
                for len in 0..=200 {
                    check(src_off, dest_off, len);
                }
            }
        }
    }

    #[test]
    fn long_copies() {
        for src_off in 0..16 {
            for dest_off in 0..16 {
                check(src_off, dest_off, 1000);
                check(src_off, dest_off, 4096 + 3);
            }
        }
    }

    #[test]
    fn moves_within_one_buffer_match_copy_within() {
        for src_off in 0..20 {
            for dest_off in 0..20 {
                for len in 0..=120 {
                    // An 8-aligned buffer: offsets are alignments.
                    let mut store = vec![0u64; 24];
                    // SAFETY: a view of the u64 buffer's own bytes.
                    let buf = unsafe {
                        core::slice::from_raw_parts_mut(store.as_mut_ptr().cast::<u8>(), 24 * 8)
                    };
                    for (i, b) in buf.iter_mut().enumerate() {
                        *b = (i * 7 % 253) as u8;
                    }
                    let mut expected = buf.to_vec();
                    expected.copy_within(src_off..src_off + len, dest_off);
                    let p = buf.as_mut_ptr();
                    // SAFETY: both ranges lie within the 192-byte buffer.
                    unsafe { move_bytes(p.add(dest_off), p.add(src_off), len) };
                    assert_eq!(
                        buf,
                        &expected[..],
                        "src {src_off} dest {dest_off} len {len}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_misaligned_slice_of_text() {
        let text = b"GET key:000123\r\n";
        let mut key = [0u8; 10];
        // SAFETY: 10 bytes from offset 4 of 16, into 10.
        unsafe { copy_forward(key.as_mut_ptr(), text.as_ptr().add(4), 10) };
        assert_eq!(&key, b"key:000123");
    }
}
