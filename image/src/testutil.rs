//! Test helpers shared by the unit tests and (through `#[path]`) the QEMU tests:
//! a self-deleting temporary directory and a hand-assembled ELF64 writer that can
//! emit program headers, which `object::write` does not do.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// A directory under the system temp dir, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    /// Creates a fresh, empty directory whose name includes `tag`.
    pub fn new(tag: &str) -> TempDir {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "faultline-image-test-{}-{tag}-{n}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One loadable segment for [`ElfSpec`].
pub struct Segment {
    /// Physical (and virtual) load address.
    pub addr: u64,
    /// Bytes stored in the file.
    pub data: Vec<u8>,
    /// Extra zero bytes in memory after `data` (like `.bss`).
    pub bss: u64,
}

/// A minimal executable: loadable segments and optional named sections.
pub struct ElfSpec {
    /// `e_machine`; 183 is AArch64.
    pub machine: u16,
    /// `e_entry`.
    pub entry: u64,
    /// Loadable segments, written to the file in this order.
    pub segments: Vec<Segment>,
    /// Named sections, each covering part of a segment: (name, segment index, offset in
    /// segment, size).
    pub sections: Vec<(String, usize, u64, u64)>,
}

const EHDR: u64 = 64;
const PHDR: u64 = 56;
const SHDR: u64 = 64;

fn put16(v: &mut Vec<u8>, x: u16) {
    v.extend_from_slice(&x.to_le_bytes());
}
fn put32(v: &mut Vec<u8>, x: u32) {
    v.extend_from_slice(&x.to_le_bytes());
}
fn put64(v: &mut Vec<u8>, x: u64) {
    v.extend_from_slice(&x.to_le_bytes());
}

impl ElfSpec {
    /// Lays the file out as: ELF header, program headers, segment data (each at a
    /// 16-byte aligned offset), section name table, section headers.
    pub fn to_bytes(&self) -> Vec<u8> {
        let phnum = self.segments.len() as u64;
        let mut offsets = Vec::new();
        let mut cursor = EHDR + PHDR * phnum;
        for seg in &self.segments {
            cursor = cursor.next_multiple_of(16);
            offsets.push(cursor);
            cursor += seg.data.len() as u64;
        }
        // Section name table: "\0.shstrtab\0" then each name.
        let mut shstrtab = vec![0u8];
        let shstrtab_name = shstrtab.len() as u32;
        shstrtab.extend_from_slice(b".shstrtab\0");
        let mut name_offsets = Vec::new();
        for (name, ..) in &self.sections {
            name_offsets.push(shstrtab.len() as u32);
            shstrtab.extend_from_slice(name.as_bytes());
            shstrtab.push(0);
        }
        let shstrtab_off = cursor;
        cursor += shstrtab.len() as u64;
        let shoff = cursor.next_multiple_of(8);
        let shnum = 2 + self.sections.len() as u64;

        let mut out = Vec::new();
        out.extend_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1, 1, 0]);
        out.extend_from_slice(&[0; 8]);
        put16(&mut out, 2); // ET_EXEC
        put16(&mut out, self.machine);
        put32(&mut out, 1);
        put64(&mut out, self.entry);
        put64(&mut out, if phnum > 0 { EHDR } else { 0 });
        put64(&mut out, shoff);
        put32(&mut out, 0);
        put16(&mut out, EHDR as u16);
        put16(&mut out, PHDR as u16);
        put16(&mut out, phnum as u16);
        put16(&mut out, SHDR as u16);
        put16(&mut out, shnum as u16);
        put16(&mut out, 1); // .shstrtab is section 1
        for (seg, &off) in self.segments.iter().zip(&offsets) {
            put32(&mut out, 1); // PT_LOAD
            put32(&mut out, 7); // RWX
            put64(&mut out, off);
            put64(&mut out, seg.addr);
            put64(&mut out, seg.addr);
            put64(&mut out, seg.data.len() as u64);
            put64(&mut out, seg.data.len() as u64 + seg.bss);
            put64(&mut out, 16);
        }
        for (seg, &off) in self.segments.iter().zip(&offsets) {
            out.resize(off as usize, 0);
            out.extend_from_slice(&seg.data);
        }
        out.resize(shstrtab_off as usize, 0);
        out.extend_from_slice(&shstrtab);
        out.resize(shoff as usize, 0);
        // Section 0: null.
        out.extend_from_slice(&[0; SHDR as usize]);
        // Section 1: .shstrtab.
        put32(&mut out, shstrtab_name);
        put32(&mut out, 3); // SHT_STRTAB
        put64(&mut out, 0);
        put64(&mut out, 0);
        put64(&mut out, shstrtab_off);
        put64(&mut out, shstrtab.len() as u64);
        put32(&mut out, 0);
        put32(&mut out, 0);
        put64(&mut out, 1);
        put64(&mut out, 0);
        for ((_, seg_index, within, size), &name) in self.sections.iter().zip(&name_offsets) {
            let seg = &self.segments[*seg_index];
            put32(&mut out, name);
            put32(&mut out, 1); // SHT_PROGBITS
            put64(&mut out, 3); // SHF_WRITE | SHF_ALLOC
            put64(&mut out, seg.addr + within);
            put64(&mut out, offsets[*seg_index] + within);
            put64(&mut out, *size);
            put32(&mut out, 0);
            put32(&mut out, 0);
            put64(&mut out, 1);
            put64(&mut out, 0);
        }
        out
    }
}
