//! The stdio of `include/stdio.h` for a guest with a console and no files:
//! `stdout` and `stderr` write to the kernel log a line at a time; `stdin` is
//! always at its end; opening a file finds none (`ENOENT`).

use core::ffi::{c_char, c_int, CStr};
use core::ptr::null_mut;

use alloc::vec::Vec;
use spin::Mutex;

use super::exports::set_errno;

/// C's `FILE`: one of the three standard streams.
#[repr(C)]
pub struct File {
    /// 0 for stdin, 1 for stdout, 2 for stderr.
    fd: u8,
}

static STDIN_FILE: File = File { fd: 0 };
static STDOUT_FILE: File = File { fd: 1 };
static STDERR_FILE: File = File { fd: 2 };

/// C's `stdin`.
#[unsafe(no_mangle)]
pub static mut stdin: *const File = &STDIN_FILE;
/// C's `stdout`.
#[unsafe(no_mangle)]
pub static mut stdout: *const File = &STDOUT_FILE;
/// C's `stderr`.
#[unsafe(no_mangle)]
pub static mut stderr: *const File = &STDERR_FILE;

/// The unfinished line of stdout and of stderr.
static LINES: [Mutex<Vec<u8>>; 2] = [Mutex::new(Vec::new()), Mutex::new(Vec::new())];

/// The longest line kept before it is written out unfinished.
const LONGEST_LINE: usize = 4096;

/// Writes `n` bytes at `p` to `f`; what printf.c calls. Returns how many
/// were written (none to stdin).
///
/// # Safety
/// `f` is one of the standard streams; `p` has `n` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn faultline_write(f: *const File, p: *const u8, n: usize) -> usize {
    // SAFETY: the caller's promises.
    let (fd, bytes) = unsafe { ((*f).fd, core::slice::from_raw_parts(p, n)) };
    let Some(line) = LINES.get(usize::from(fd).wrapping_sub(1)) else {
        return 0;
    };
    // Complete lines are logged once the lock is let go (the console's
    // lock is never taken under it).
    let mut complete = alloc::vec::Vec::new();
    {
        let mut line = line.lock();
        for &b in bytes {
            if b == b'\n' || line.len() >= LONGEST_LINE {
                complete.push(core::mem::take(&mut *line));
            }
            if b != b'\n' {
                line.push(b);
            }
        }
    }
    for line in complete {
        log::info!(target: "lua", "{}", alloc::string::String::from_utf8_lossy(&line));
    }
    n
}

/// C's `fputs`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fputs(s: *const c_char, f: *const File) -> c_int {
    // SAFETY: s is a C string and f a stream, as C requires.
    let b = unsafe { CStr::from_ptr(s) }.to_bytes();
    // SAFETY: b's bytes are readable.
    unsafe { faultline_write(f, b.as_ptr(), b.len()) };
    0
}

/// C's `fwrite`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fwrite(p: *const u8, size: usize, n: usize, f: *const File) -> usize {
    let total = size.saturating_mul(n);
    // SAFETY: the caller passes size * n readable bytes, as C requires.
    let wrote = unsafe { faultline_write(f, p, total) };
    wrote.checked_div(size).unwrap_or(0)
}

/// C's `fopen`: there are no files.
#[unsafe(no_mangle)]
pub extern "C" fn fopen(_path: *const c_char, _mode: *const c_char) -> *mut File {
    set_errno(super::exports::ENOENT);
    null_mut()
}

/// C's `freopen`: there are no files.
#[unsafe(no_mangle)]
pub extern "C" fn freopen(_path: *const c_char, _mode: *const c_char, _f: *mut File) -> *mut File {
    set_errno(super::exports::ENOENT);
    null_mut()
}

/// C's `fclose`: the standard streams stay open.
#[unsafe(no_mangle)]
pub extern "C" fn fclose(_f: *mut File) -> c_int {
    0
}

/// C's `fread`: stdin is at its end, the others are not readable.
#[unsafe(no_mangle)]
pub extern "C" fn fread(_p: *mut u8, _size: usize, _n: usize, _f: *mut File) -> usize {
    0
}

/// C's `fgets`: at the end of input.
#[unsafe(no_mangle)]
pub extern "C" fn fgets(_s: *mut c_char, _n: c_int, _f: *mut File) -> *mut c_char {
    null_mut()
}

/// C's `getc`: at the end of input.
#[unsafe(no_mangle)]
pub extern "C" fn getc(_f: *mut File) -> c_int {
    -1
}

/// C's `ungetc`: nothing was read, so nothing is pushed back.
#[unsafe(no_mangle)]
pub extern "C" fn ungetc(_c: c_int, _f: *mut File) -> c_int {
    -1
}

/// C's `feof`: stdin is at its end.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn feof(f: *mut File) -> c_int {
    // SAFETY: f is a standard stream, as C requires.
    c_int::from(unsafe { (*f).fd } == 0)
}

/// C's `ferror`: no stream has had an error.
#[unsafe(no_mangle)]
pub extern "C" fn ferror(_f: *mut File) -> c_int {
    0
}
