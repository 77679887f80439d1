//! Faultline's `memcpy` and `memmove`, for the guest.
//!
//! The `memcpy` of the sysroot's `compiler_builtins` copies a misaligned
//! source one byte load at a time (about 2.75 instructions per byte), and
//! kvstore copies slices at arbitrary offsets of its input buffer, so that
//! path dominated its requests (bench/kvcost.sh, guest instructions per
//! request, before and after this crate: SET 10,872 -> 9,979, MSET
//! 55,599 -> 46,016, HSET 13,146 -> 11,692). [`copy_forward`] instead:
//!
//! 1. copies single bytes until the destination is 8-aligned;
//! 2. if the source is then 8-aligned too, copies 32 bytes per iteration
//!    (four `u64` loads, four stores), then 8 at a time;
//! 3. otherwise loads aligned source words and joins each two neighbours
//!    with shifts (little-endian) into one aligned destination word;
//! 4. copies the tail with single bytes.
//!
//! It only ever makes *aligned* 8-byte accesses (the kernel may copy before
//! the MMU is on, when an unaligned access faults), and it never touches a
//! byte outside `[src, src + n)` or `[dest, dest + n)`, not even one that
//! shares an aligned word with them: the first, partial source word is
//! assembled from single bytes.
//!
//! [`move_bytes`] is `memmove`: the same forward copy when the destination
//! is below the source (overlapping or not), a backward one otherwise.
//!
//! On the guest (`target_os = "none"`) the crate exports the C symbols
//! `memcpy` and `memmove`, which the linker then prefers to
//! `compiler_builtins`' weak ones;
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

/// Below this many bytes, aligning and shifting costs more than it saves:
/// the copy is done with single bytes.
const SMALL: usize = 16;

/// Copies `n` bytes from `src` to `dest`, which must not overlap.
///
/// Only single-byte and aligned 8-byte accesses are made, all within
/// `[src, src + n)` and `[dest, dest + n)`; see the crate documentation for
/// the strategy.
///
/// # Safety
///
/// `src` must be valid for reads and `dest` for writes of `n` bytes, and the
/// two ranges must not overlap.
// Inlined into `memcpy`: no second call frame per copy.
#[inline(always)]
pub unsafe fn copy_forward(mut dest: *mut u8, mut src: *const u8, mut n: usize) {
    if n < SMALL {
        // SAFETY: the caller's contract.
        unsafe { copy_bytes(dest, src, n) };
        return;
    }
    // Align the destination: at most 7 bytes, fewer than `n` (>= 16).
    let head = dest.align_offset(WORD).min(n);
    // SAFETY: `head <= n` bytes of the caller's ranges.
    unsafe {
        copy_bytes(dest, src, head);
        dest = dest.add(head);
        src = src.add(head);
    }
    n -= head;
    // One loop per source alignment, so that the shifts that join two
    // source words are constants: the compiler makes each join a single
    // `extr` instruction instead of two shifts and an `or`.
    let d = dest.cast::<u64>();
    // SAFETY: in every arm `dest` is 8-aligned, `src` is the arm's number
    // of bytes past an aligned address, and `n` bytes from them are the
    // rest of the caller's ranges.
    let copied = unsafe {
        match src as usize % WORD {
            0 => copy_aligned(d, src.cast(), n),
            1 => copy_shifted::<1>(d, src, n),
            2 => copy_shifted::<2>(d, src, n),
            3 => copy_shifted::<3>(d, src, n),
            4 => copy_shifted::<4>(d, src, n),
            5 => copy_shifted::<5>(d, src, n),
            6 => copy_shifted::<6>(d, src, n),
            _ => copy_shifted::<7>(d, src, n),
        }
    };
    // SAFETY: the `n - copied` bytes after the first `copied` are the rest
    // of the caller's ranges.
    unsafe { copy_bytes(dest.add(copied), src.add(copied), n - copied) };
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

/// Copies whole words while at least one remains of `n` bytes, both sides
/// aligned; returns how many bytes it copied (`n` rounded down to words).
///
/// # Safety
///
/// `dest` and `src` 8-aligned, otherwise as [`copy_forward`].
#[inline(always)]
unsafe fn copy_aligned(mut dest: *mut u64, mut src: *const u64, n: usize) -> usize {
    let words = n / WORD;
    let mut left = words;
    while left >= 4 {
        // SAFETY: four aligned words of the caller's ranges (`left` of them
        // remain).
        unsafe {
            let (a, b, c, d) = (*src, *src.add(1), *src.add(2), *src.add(3));
            *dest = a;
            *dest.add(1) = b;
            *dest.add(2) = c;
            *dest.add(3) = d;
            dest = dest.add(4);
            src = src.add(4);
        }
        left -= 4;
    }
    while left > 0 {
        // SAFETY: one aligned word of the caller's ranges.
        unsafe {
            *dest = *src;
            dest = dest.add(1);
            src = src.add(1);
        }
        left -= 1;
    }
    words * WORD
}

/// Copies whole destination words from a source that is not 8-aligned, as
/// far as the aligned source words it needs lie within `[src, src + n)`;
/// returns how many bytes it copied (a multiple of 8, at least
/// `n - 15`).
///
/// Destination word `i` is made of the bytes from the end of aligned source
/// word `i` and the start of word `i + 1` (little-endian: the lower address
/// is the less significant byte).
///
/// # Safety
///
/// `dest` 8-aligned, `src` `OFFSET` (1 to 7) bytes past an 8-aligned
/// address, otherwise as [`copy_forward`].
#[inline(always)]
unsafe fn copy_shifted<const OFFSET: usize>(mut dest: *mut u64, src: *const u8, n: usize) -> usize {
    let offset = OFFSET;
    debug_assert_eq!(src as usize % WORD, offset);
    // The bytes of the aligned word holding `src` from `src` on, in their
    // places; those before `src` (outside the range) stay zero. They are
    // shifted out below anyway.
    let mut prev = 0u64;
    for i in offset..WORD {
        // SAFETY: `src + (i - offset)` for `i - offset < 8 - offset <= n`.
        prev |= u64::from(unsafe { *src.add(i - offset) }) << (8 * i);
    }
    let right = 8 * offset as u32;
    let left = 64 - right;
    // SAFETY: `src - offset + 8` is aligned and within the range (n >= 8).
    let mut next = unsafe { src.add(WORD - offset) }.cast::<u64>();
    // The aligned source word after `next`, `src - offset + 16 + 8k`, ends
    // within the range while `8k + 16 - offset <= n`.
    let words = if n + offset >= 2 * WORD {
        (n + offset) / WORD - 1
    } else {
        0
    };
    let mut left_words = words;
    while left_words >= 4 {
        // SAFETY: four aligned source words ending within the range (see
        // `words`), four aligned destination words of it.
        unsafe {
            let (a, b, c, d) = (*next, *next.add(1), *next.add(2), *next.add(3));
            *dest = prev >> right | a << left;
            *dest.add(1) = a >> right | b << left;
            *dest.add(2) = b >> right | c << left;
            *dest.add(3) = c >> right | d << left;
            prev = d;
            next = next.add(4);
            dest = dest.add(4);
        }
        left_words -= 4;
    }
    while left_words > 0 {
        // SAFETY: one aligned source word ending within the range, one
        // aligned destination word of it.
        unsafe {
            let a = *next;
            *dest = prev >> right | a << left;
            prev = a;
            next = next.add(1);
            dest = dest.add(1);
        }
        left_words -= 1;
    }
    words * WORD
}

/// Copies `n` bytes from `src` to `dest`, which may overlap: what
/// `memmove` does.
///
/// When `dest` is at or below `src`, [`copy_forward`] is right even over an
/// overlap: each of its steps loads the source words it needs before
/// storing, and every store lands below the next source word it will load
/// (the destination trails the source by the same distance throughout).
/// When `dest` is above `src` and the ranges overlap (a `Vec::insert`
/// shifting elements up), the copy runs backwards: 8-byte words when both
/// ends share their alignment, as elements of any type at least 8-aligned
/// do, otherwise single bytes.
///
/// # Safety
///
/// `src` must be valid for reads and `dest` for writes of `n` bytes.
#[inline(always)]
pub unsafe fn move_bytes(dest: *mut u8, src: *const u8, n: usize) {
    let (d, s) = (dest as usize, src as usize);
    if d <= s || d >= s.wrapping_add(n) {
        // SAFETY: the caller's contract; the overlap, if any, has the
        // destination below the source (see above).
        unsafe { copy_forward(dest, src, n) };
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

#[cfg(test)]
mod tests {
    use super::{copy_forward, move_bytes};

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
