//! One device's own page table: the kernel's mappings of the memory the
//! device was granted, and nothing else.
//!
//! ```text
//!  kernel table (CPU)                 view of stream S (its own ASID)
//!  ────────────────────               ─────────────────────────────────
//!  image, stacks, page tables   ──✗   never copied
//!  heap                         ──✗   never copied
//!  region R, granted to S       ──►   leaf copied when mapped, or when S
//!                                     faults there (read-only unless the
//!                                     grant is read-write)
//!  region Q, not granted        ──✗   S faults; an isolation fault
//!  queue frames of S's driver   ──►   identity pages, for good
//! ```
//!
//! A view is a cache of the kernel table restricted by the grants: any
//! change of the kernel table in a granted range clears the view there
//! (the unmap hook), and the next mapping or device fault copies the new
//! leaf. Tables are only ever added (a view's span is bounded by what was
//! granted), so a walker never meets a freed table.
//!
//! Format: stage-1 AArch64, 4 KiB granule, 39-bit input (the kernel's
//! regime: levels 1 to 3), blocks of 2 MiB at level 2.

use crate::mm::{Leaf, FRAME_SIZE};
use core::ops::Range;
use smmu::grants::{Grants, Rights};

/// Most grants one device holds at once.
pub(super) const MAX_GRANTS: usize = 512;

const VALID: u64 = 1;
const TABLE_OR_PAGE: u64 = 1 << 1;
const READ_ONLY: u64 = 1 << 7;
const ADDRESS: u64 = 0x0000_ffff_ffff_f000;
const BLOCK: usize = 2 << 20;

/// A device stream's translation: its root table, ASID and grants.
pub(super) struct View {
    /// The device's StreamID.
    pub stream: u32,
    /// The view's ASID (the kernel's is 1).
    pub asid: u16,
    root: usize,
    /// What the device may reach.
    pub grants: Grants<MAX_GRANTS>,
}

/// No frame was left for a table of the view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct NoTableFrame;

fn new_table() -> Result<usize, NoTableFrame> {
    let frame = crate::mm::alloc_frame().map_err(|_| NoTableFrame)?;
    // SAFETY: a frame just allocated to us, identity-mapped read-write; a
    // table must start all invalid.
    unsafe { core::ptr::write_bytes(frame as *mut u8, 0, FRAME_SIZE) };
    Ok(frame)
}

/// The entry `index` of the table at `table`.
///
/// # Safety
/// `table` is a table of a view (identity-mapped RAM that lives for good)
/// and `index` is below 512; the SMMU lock keeps writers out.
unsafe fn entry(table: usize, index: usize) -> *mut u64 {
    (table as *mut u64).wrapping_add(index)
}

fn index(va: usize, shift: u32) -> usize {
    (va >> shift) & 511
}

impl View {
    /// An empty view: the device reaches nothing.
    pub fn new(stream: u32, asid: u16) -> Result<Self, NoTableFrame> {
        Ok(Self {
            stream,
            asid,
            root: new_table()?,
            grants: Grants::new(),
        })
    }

    /// Physical address of the root table (the CD's TTB0).
    pub fn root(&self) -> usize {
        self.root
    }

    /// The table below entry `index` of `table`, made if `make` and absent.
    fn next(
        &mut self,
        table: usize,
        index: usize,
        make: bool,
    ) -> Result<Option<usize>, NoTableFrame> {
        // SAFETY: `table` is one of this view's tables; index < 512.
        let e = unsafe { entry(table, index) };
        // SAFETY: as above.
        let d = unsafe { e.read_volatile() };
        if d & (VALID | TABLE_OR_PAGE) == VALID | TABLE_OR_PAGE {
            return Ok(Some((d & ADDRESS) as usize));
        }
        if !make {
            return Ok(None);
        }
        let fresh = new_table()?;
        if d & VALID != 0 {
            // A block stood here: the view drops it (a cache may lose
            // entries; the device faults and they come back as pages).
            // SAFETY: as above.
            unsafe { e.write_volatile(0) };
        }
        crate::arch::publish_page_table_update();
        // SAFETY: as above; the new table is whole before it is linked.
        unsafe { e.write_volatile(fresh as u64 | VALID | TABLE_OR_PAGE) };
        Ok(Some(fresh))
    }

    /// Writes one leaf: a page at level 3 or a 2 MiB block at level 2.
    fn install(
        &mut self,
        va: usize,
        pa: usize,
        len: usize,
        writable: bool,
    ) -> Result<(), NoTableFrame> {
        let attrs = crate::mm::device_leaf_attrs(writable) & !(VALID | TABLE_OR_PAGE);
        let l2 = self
            .next(self.root, index(va, 30), true)?
            .ok_or(NoTableFrame)?;
        let (table, i, kind) = if len == BLOCK {
            (l2, index(va, 21), VALID)
        } else {
            let l3 = self.next(l2, index(va, 21), true)?.ok_or(NoTableFrame)?;
            (l3, index(va, 12), VALID | TABLE_OR_PAGE)
        };
        // SAFETY: a table of this view, index < 512. An entry is replaced
        // only by one for the same kernel leaf, or written where invalid.
        unsafe { entry(table, i).write_volatile((pa as u64 & ADDRESS) | attrs | kind) };
        crate::arch::publish_page_table_update();
        Ok(())
    }

    /// Copies the kernel's `leaf` around `page` as far as the grants allow:
    /// the whole 2 MiB block if granted all over, else the one page.
    /// Returns whether anything was mapped.
    pub fn mirror(&mut self, page: usize, leaf: Leaf) -> Result<bool, NoTableFrame> {
        let table_there = leaf.len == BLOCK && self.has_table_at(leaf.va);
        let span = |r: Range<usize>| self.grants.rights_over(r.start as u64..r.end as u64);
        if leaf.len == BLOCK && !table_there {
            // (A block never replaces a level-3 table the SMMU may have
            // walked: the block's pages then go in one by one.)
            if let Some(rights) = span(leaf.va..leaf.va + BLOCK) {
                let w = leaf.writable && rights == Rights::ReadWrite;
                self.install(leaf.va, leaf.pa, BLOCK, w)?;
                return Ok(true);
            }
        }
        let page = page & !(FRAME_SIZE - 1);
        let Some(rights) = span(page..page + FRAME_SIZE) else {
            return Ok(false);
        };
        let w = leaf.writable && rights == Rights::ReadWrite;
        self.install(page, leaf.pa + (page - leaf.va), FRAME_SIZE, w)?;
        Ok(true)
    }

    /// Whether a level-3 table hangs under the 2 MiB entry of `va`.
    fn has_table_at(&mut self, va: usize) -> bool {
        let Ok(Some(l2)) = self.next(self.root, index(va, 30), false) else {
            return false;
        };
        // SAFETY: a table of this view, index < 512.
        let d = unsafe { entry(l2, index(va, 21)).read_volatile() };
        d & (VALID | TABLE_OR_PAGE) == VALID | TABLE_OR_PAGE
    }

    /// Maps identity `frames` (a driver's queue memory) for good.
    pub fn map_frames(&mut self, frames: Range<usize>) -> Result<(), NoTableFrame> {
        for page in frames.step_by(FRAME_SIZE) {
            self.install(page, page, FRAME_SIZE, true)?;
        }
        Ok(())
    }

    /// Makes every entry of the view inside `range` invalid. Returns the
    /// range whose translations the SMMU must forget (grown to whole
    /// blocks where a block was cleared), or `None` if nothing was mapped.
    pub fn clear(&mut self, range: Range<usize>) -> Option<Range<usize>> {
        let mut cleared: Option<Range<usize>> = None;
        let mut note = |r: Range<usize>| {
            cleared = Some(match cleared.take() {
                Some(c) => c.start.min(r.start)..c.end.max(r.end),
                None => r,
            });
        };
        let mut va = range.start & !(FRAME_SIZE - 1);
        while va < range.end {
            let block = va & !(BLOCK - 1);
            let next_block = block + BLOCK;
            let Ok(Some(l2)) = self.next(self.root, index(va, 30), false) else {
                // Nothing mapped in this 1 GiB.
                va = (va & !((1 << 30) - 1)) + (1 << 30);
                continue;
            };
            // SAFETY: a table of this view, index < 512.
            let e2 = unsafe { entry(l2, index(va, 21)) };
            // SAFETY: as above.
            let d = unsafe { e2.read_volatile() };
            if d & VALID == 0 {
                va = next_block;
                continue;
            }
            if d & TABLE_OR_PAGE == 0 {
                // A block: cleared whole.
                // SAFETY: as above.
                unsafe { e2.write_volatile(0) };
                note(block..next_block);
                va = next_block;
                continue;
            }
            let l3 = (d & ADDRESS) as usize;
            let end = range.end.min(next_block);
            while va < end {
                // SAFETY: a level-3 table of this view, index < 512.
                let e3 = unsafe { entry(l3, index(va, 12)) };
                // SAFETY: as above.
                if unsafe { e3.read_volatile() } & VALID != 0 {
                    // SAFETY: as above.
                    unsafe { e3.write_volatile(0) };
                    note(va..va + FRAME_SIZE);
                }
                va += FRAME_SIZE;
            }
        }
        if cleared.is_some() {
            crate::arch::publish_page_table_update();
        }
        cleared
    }

    /// Brings what the view maps in `range` down to what the grants still
    /// give, after one was revoked: pages no grant covers are cleared,
    /// pages left with read only lose write; pages still granted as they
    /// were stay, so a device working on them under another grant (a SEND
    /// buffer sharing a heap page with a finished RECV's) never sees them
    /// go. Returns the range the SMMU must forget, if any.
    pub fn narrow(&mut self, range: Range<usize>) -> Option<Range<usize>> {
        let span = range.start as u64..range.end as u64;
        if !self.grants.overlaps(span) {
            return self.clear(range);
        }
        let mut stale: Option<Range<usize>> = None;
        let mut note = |r: Range<usize>| {
            stale = Some(match stale.take() {
                Some(s) => s.start.min(r.start)..s.end.max(r.end),
                None => r,
            });
        };
        let mut page = range.start & !(FRAME_SIZE - 1);
        while page < range.end {
            let here = page as u64..(page + FRAME_SIZE) as u64;
            match self.grants.rights_over(here) {
                Some(Rights::ReadWrite) => {}
                Some(Rights::Read) => {
                    if let Some(r) = self.make_read_only(page) {
                        note(r);
                    }
                }
                None => {
                    if let Some(r) = self.clear(page..page + FRAME_SIZE) {
                        note(r);
                    }
                }
            }
            page += FRAME_SIZE;
        }
        stale
    }

    /// Takes write away from the leaf mapping `page`, if it has it.
    /// Returns the range the leaf covers when it changed.
    fn make_read_only(&mut self, page: usize) -> Option<Range<usize>> {
        let l2 = self.next(self.root, index(page, 30), false).ok()??;
        // SAFETY: a table of this view, index < 512.
        let e2 = unsafe { entry(l2, index(page, 21)) };
        // SAFETY: as above.
        let d = unsafe { e2.read_volatile() };
        let (e, covers) = if d & (VALID | TABLE_OR_PAGE) == VALID | TABLE_OR_PAGE {
            // SAFETY: a level-3 table of this view, index < 512.
            let e3 = unsafe { entry((d & ADDRESS) as usize, index(page, 12)) };
            (e3, page..page + FRAME_SIZE)
        } else {
            let block = page & !(BLOCK - 1);
            (e2, block..block + BLOCK)
        };
        // SAFETY: a leaf entry of this view.
        let leaf = unsafe { e.read_volatile() };
        if leaf & VALID == 0 || leaf & READ_ONLY != 0 {
            return None;
        }
        // A permission change needs no break: the same frame, less right.
        // SAFETY: as above.
        unsafe { e.write_volatile(leaf | READ_ONLY) };
        crate::arch::publish_page_table_update();
        Some(covers)
    }

    /// Whether the view maps the page holding `va` (writable, if `write`).
    pub fn maps(&mut self, va: usize, write: bool) -> bool {
        let Ok(Some(l2)) = self.next(self.root, index(va, 30), false) else {
            return false;
        };
        // SAFETY: a table of this view, index < 512.
        let d = unsafe { entry(l2, index(va, 21)).read_volatile() };
        let leaf = if d & (VALID | TABLE_OR_PAGE) == VALID | TABLE_OR_PAGE {
            // SAFETY: a level-3 table of this view, index < 512.
            unsafe { entry((d & ADDRESS) as usize, index(va, 12)).read_volatile() }
        } else {
            d
        };
        leaf & VALID != 0 && (!write || leaf & READ_ONLY == 0)
    }
}
