//! NVMe controller driver (register level): admin queue bring-up, identify,
//! one I/O queue pair, and read/write commands whose data pointers (PRPs,
//! or SGLs for gather/scatter lists, see [`sgl`]) are IOVAs: with the SMMU
//! translating through the kernel's mappings of what the controller was
//! granted, they point straight into an application's unpinned virtual
//! memory.
//!
//! Queues and PRP lists must stay in memory that never faults (a fault on a
//! queue entry kills the controller, one on a PRP list fails the command), so
//! the caller provides them as pinned [`DmaMemory`] from a [`DmaAllocator`].
//!
//! ```text
//!  submit(cmd) ─► SQ[tail] ─► doorbell ─► controller DMAs data (PRPs = IOVAs)
//!  poll() ◄─ CQ[head] (phase bit flips each lap) ◄─ completion + INTx
//! ```

mod engine;
pub mod sgl;

pub use engine::{NvmeEngine, ERROR_MISALIGNED};

use crate::dma_memory::{DmaAllocator, DmaMemory};
use crate::mmio::Mmio;
use core::ops::Range;
use core::sync::atomic::{fence, Ordering};

/// PCI class code of an NVMe controller (mass storage, NVM, NVMe).
pub const CLASS: u32 = 0x01_08_02;
/// Page size the driver programs (CC.MPS = 0) and PRPs are made of.
pub const PAGE: usize = 4096;

const CAP: usize = 0x00;
const CC: usize = 0x14;
const CSTS: usize = 0x1c;
const AQA: usize = 0x24;
const ASQ: usize = 0x28;
const ACQ: usize = 0x30;
const INTMS: usize = 0x0c;
const INTMC: usize = 0x10;
const DOORBELLS: usize = 0x1000;

const ADMIN_CREATE_SQ: u8 = 0x01;
const ADMIN_CREATE_CQ: u8 = 0x05;
const ADMIN_IDENTIFY: u8 = 0x06;
/// I/O command: write.
pub const OP_WRITE: u8 = 0x01;
/// I/O command: read.
pub const OP_READ: u8 = 0x02;

/// What can go wrong talking to the controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NvmeError {
    /// The controller did not become ready (or stopped) in time.
    Timeout,
    /// The controller reported a fatal status (CSTS.CFS).
    ControllerFatal,
    /// No memory for queues.
    NoMemory,
    /// A command completed with this status (SCT << 8 | SC).
    Status(u16),
    /// A request outside the namespace, or not block-aligned.
    BadRequest,
    /// The submission queue is full.
    QueueFull,
    /// Identify data the driver cannot use (the controller breaks the
    /// protocol, or describes a disk this driver does not take): says which.
    BadIdentify(&'static str),
}

/// A disk's geometry from its Identify data: `(max_transfer, block_size)`
/// in bytes. The fields are the device's word and are checked, never
/// trusted as shift counts: MDTS is a power of two of pages (0: no limit,
/// capped at 1 MiB here), LBADS a power of two of bytes that must be 512
/// to 64 KiB, and the namespace must have blocks.
pub fn geometry(mdts: u8, lbaf: u32, nsze: u64) -> Result<(usize, usize), NvmeError> {
    const CAP: usize = 1 << 20;
    let max_transfer = match mdts {
        0 => CAP,
        n => PAGE
            .checked_shl(u32::from(n))
            .filter(|&t| t != 0)
            .map_or(CAP, |t| t.min(CAP)),
    };
    let lbads = (lbaf >> 16) & 0xff;
    if !(9..=16).contains(&lbads) {
        return Err(NvmeError::BadIdentify(
            "LBA data size outside 512 B to 64 KiB",
        ));
    }
    let block_size = 1usize << lbads;
    if nsze == 0 {
        return Err(NvmeError::BadIdentify("namespace 1 has no blocks"));
    }
    if max_transfer < block_size {
        return Err(NvmeError::BadIdentify(
            "largest transfer smaller than a block",
        ));
    }
    Ok((max_transfer, block_size))
}

/// A completed command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The command identifier given at submission.
    pub cid: u16,
    /// `Ok` or the controller's status.
    pub status: Result<(), NvmeError>,
}

struct Queue {
    memory: DmaMemory,
    entries: u16,
    index: u16,
    phase: bool,
}

/// One NVMe controller with an admin queue pair and one I/O queue pair.
pub struct Nvme {
    regs: Mmio,
    doorbell_stride: usize,
    admin_sq: Queue,
    admin_cq: Queue,
    io_sq: Queue,
    io_cq: Queue,
    /// Namespace 1: number of blocks and block size.
    blocks: u64,
    block_size: usize,
    /// Largest transfer per command in bytes.
    max_transfer: usize,
    /// The controller takes byte-granular SGLs (Identify SGLS).
    sgl: bool,
    /// Commands submitted and not yet completed on the I/O queue.
    in_flight: u16,
}

/// One page of [`DmaMemory`] from `memory`.
pub(crate) fn page(memory: &mut dyn DmaAllocator) -> Result<DmaMemory, NvmeError> {
    memory.alloc(PAGE, PAGE).ok_or(NvmeError::NoMemory)
}

fn spin_until(mut done: impl FnMut() -> bool, spins: u64) -> bool {
    for _ in 0..spins {
        if done() {
            return true;
        }
        core::hint::spin_loop();
    }
    done()
}

/// Queue depth of the I/O queue pair.
pub const IO_QUEUE_ENTRIES: u16 = 64;
const ADMIN_ENTRIES: u16 = 16;

impl Nvme {
    /// Resets and enables the controller, identifies namespace 1, and
    /// creates the I/O queues.
    pub fn init(regs: Mmio, memory: &mut dyn DmaAllocator) -> Result<Nvme, NvmeError> {
        let cap = regs.read(CAP) as u64 | (regs.read(CAP + 4) as u64) << 32;
        let doorbell_stride = 4 << ((cap >> 32) & 0xf);
        let max_entries = ((cap & 0xffff) + 1) as u16;
        let timeout_spins = (((cap >> 24) & 0xff) + 1) * 20_000_000;
        regs.write(CC, 0);
        if !spin_until(|| regs.read(CSTS) & 1 == 0, timeout_spins) {
            return Err(NvmeError::Timeout);
        }
        let mut alloc = |entries: u16, size: usize| -> Result<Queue, NvmeError> {
            let bytes = (entries as usize * size).next_multiple_of(PAGE);
            let memory = memory.alloc(bytes, PAGE).ok_or(NvmeError::NoMemory)?;
            Ok(Queue {
                memory,
                entries,
                index: 0,
                phase: true,
            })
        };
        let admin_sq = alloc(ADMIN_ENTRIES, 64)?;
        let admin_cq = alloc(ADMIN_ENTRIES, 16)?;
        let io_entries = IO_QUEUE_ENTRIES.min(max_entries);
        let io_sq = alloc(io_entries, 64)?;
        let io_cq = alloc(io_entries, 16)?;
        let identify = page(memory)?;
        regs.write(
            AQA,
            ((ADMIN_ENTRIES as u32 - 1) << 16) | (ADMIN_ENTRIES as u32 - 1),
        );
        regs.write(ASQ, admin_sq.memory.addr() as u32);
        regs.write(ASQ + 4, (admin_sq.memory.addr() >> 32) as u32);
        regs.write(ACQ, admin_cq.memory.addr() as u32);
        regs.write(ACQ + 4, (admin_cq.memory.addr() >> 32) as u32);
        regs.write(INTMS, u32::MAX);
        // EN, NVM command set, 4 KiB pages, round robin, 64-byte SQEs, 16-byte CQEs.
        regs.write(CC, 1 | (6 << 16) | (4 << 20));
        if !spin_until(|| regs.read(CSTS) & 0b11 != 0, timeout_spins) || regs.read(CSTS) & 0b10 != 0
        {
            return Err(if regs.read(CSTS) & 0b10 != 0 {
                NvmeError::ControllerFatal
            } else {
                NvmeError::Timeout
            });
        }
        let mut nvme = Nvme {
            regs,
            doorbell_stride,
            admin_sq,
            admin_cq,
            io_sq,
            io_cq,
            blocks: 0,
            block_size: 512,
            max_transfer: PAGE,
            sgl: false,
            in_flight: 0,
        };
        // Identify controller: MDTS (byte 77) bounds a command's transfer.
        nvme.admin(ADMIN_IDENTIFY, 0, identify.addr(), [1, 0, 0])?;
        let (mdts, sgls) = (identify.u8_at(77), identify.u32_at(536 / 4));
        nvme.sgl = sgl::supported(u32::from_le(sgls));
        // Identify namespace 1: size and LBA format.
        nvme.admin(ADMIN_IDENTIFY, 1, identify.addr(), [0, 0, 0])?;
        let nsze = u64::from_le(identify.u64_at(0));
        let flbas = identify.u8_at(26) & 0xf;
        // The LBA formats start at byte 128, four bytes each.
        let lbaf = u32::from_le(identify.u32_at(32 + usize::from(flbas)));
        let (max_transfer, block_size) = geometry(mdts, lbaf, nsze)?;
        nvme.blocks = nsze;
        nvme.max_transfer = max_transfer;
        nvme.block_size = block_size;
        let entries = nvme.io_sq.entries as u32;
        // Create the I/O completion queue (ID 1, contiguous, interrupts on vector 0).
        nvme.admin(
            ADMIN_CREATE_CQ,
            0,
            nvme.io_cq.memory.addr(),
            [1 | (entries - 1) << 16, 0b11, 0],
        )?;
        // Create the I/O submission queue (ID 1, contiguous, completing to CQ 1).
        nvme.admin(
            ADMIN_CREATE_SQ,
            0,
            nvme.io_sq.memory.addr(),
            [1 | (entries - 1) << 16, 1 | 1 << 16, 0],
        )?;
        // Let the I/O queue's completions raise the interrupt (vector 0).
        nvme.mask_interrupt(false);
        Ok(nvme)
    }

    fn doorbell(&self, index: usize) -> usize {
        DOORBELLS + index * self.doorbell_stride
    }

    /// Runs one admin command to completion (polled; only at init).
    fn admin(&mut self, opcode: u8, nsid: u32, prp1: u64, cdw: [u32; 3]) -> Result<(), NvmeError> {
        let mut entry = [0u32; 16];
        entry[0] = opcode as u32 | (0xfff0 << 16);
        entry[1] = nsid;
        entry[6] = prp1 as u32;
        entry[7] = (prp1 >> 32) as u32;
        entry[10] = cdw[0];
        entry[11] = cdw[1];
        entry[12] = cdw[2];
        write_entry(&mut self.admin_sq, &entry);
        self.regs
            .write(self.doorbell(0), self.admin_sq.index as u32);
        let mut done = None;
        let found = spin_until(
            || {
                done = take_completion(&mut self.admin_cq);
                done.is_some()
            },
            2_000_000_000,
        );
        if !found {
            return Err(NvmeError::Timeout);
        }
        self.regs
            .write(self.doorbell(1), self.admin_cq.index as u32);
        done.expect("completion seen").status
    }

    /// Blocks in namespace 1.
    pub fn blocks(&self) -> u64 {
        self.blocks
    }

    /// Bytes per block.
    pub fn block_size(&self) -> usize {
        self.block_size
    }

    /// Largest transfer one command may carry.
    pub fn max_transfer(&self) -> usize {
        self.max_transfer
    }

    /// Whether commands may carry gather/scatter lists ([`sgl`]).
    pub fn supports_sgl(&self) -> bool {
        self.sgl
    }

    /// Commands submitted and not yet completed.
    pub fn in_flight(&self) -> u16 {
        self.in_flight
    }

    /// Queues a read or write at `lba` whose data is `pieces` (IOVAs,
    /// concatenated; their total a multiple of the block size). `list` is a
    /// page this command may use for its PRP list or SGL; it must stay
    /// untouched until the command completes.
    ///
    /// One dword-aligned piece goes as PRPs (any controller); several
    /// pieces, or one at an odd address, as an SGL, if the controller takes
    /// them ([`supports_sgl`](Nvme::supports_sgl)), else `BadRequest`.
    pub fn submit(
        &mut self,
        cid: u16,
        opcode: u8,
        lba: u64,
        pieces: &[Range<usize>],
        list: &mut DmaMemory,
    ) -> Result<(), NvmeError> {
        let len: usize = pieces.iter().map(|p| p.len()).sum();
        if len == 0 || !len.is_multiple_of(self.block_size) || len > self.max_transfer {
            return Err(NvmeError::BadRequest);
        }
        let count = (len / self.block_size) as u64;
        if lba.checked_add(count).is_none_or(|end| end > self.blocks) {
            return Err(NvmeError::BadRequest);
        }
        if self.in_flight + 1 >= self.io_sq.entries {
            return Err(NvmeError::QueueFull);
        }
        let (psdt, dptr) = match pieces {
            [one] if one.start % 4 == 0 || !self.sgl => {
                let (prp1, prp2) = build_prps(one.start as u64, len, list);
                (0, [prp1, prp2])
            }
            _ if !self.sgl => return Err(NvmeError::BadRequest),
            _ => {
                // The controller reads the list only after the doorbell
                // (below, after a fence).
                let dptr = sgl::encode(pieces, list).map_err(|_| NvmeError::BadRequest)?;
                // PSDT 01b: SGLs for the data.
                (1u32 << 14, dptr)
            }
        };
        let mut entry = [0u32; 16];
        entry[0] = opcode as u32 | psdt | (cid as u32) << 16;
        entry[1] = 1;
        entry[6] = dptr[0] as u32;
        entry[7] = (dptr[0] >> 32) as u32;
        entry[8] = dptr[1] as u32;
        entry[9] = (dptr[1] >> 32) as u32;
        entry[10] = lba as u32;
        entry[11] = (lba >> 32) as u32;
        entry[12] = (count - 1) as u32;
        write_entry(&mut self.io_sq, &entry);
        self.in_flight += 1;
        fence(Ordering::SeqCst);
        self.regs.write(self.doorbell(2), self.io_sq.index as u32);
        Ok(())
    }

    /// Takes every completion the controller has posted on the I/O queue.
    pub fn poll(&mut self, mut f: impl FnMut(Completion)) -> usize {
        let mut n = 0;
        while let Some(c) = take_completion(&mut self.io_cq) {
            self.in_flight = self.in_flight.saturating_sub(1);
            n += 1;
            f(c);
        }
        if n > 0 {
            self.regs.write(self.doorbell(3), self.io_cq.index as u32);
        }
        n
    }

    /// Masks (true) or unmasks the controller's interrupt.
    pub fn mask_interrupt(&self, masked: bool) {
        self.regs.write(if masked { INTMS } else { INTMC }, 1);
    }

    /// Disables the controller (CC.EN = 0) and waits, boundedly, until it
    /// says it has stopped: it then no longer reads or writes memory for
    /// the commands it held. `false` if it did not confirm in time.
    pub fn disable(&mut self) -> bool {
        self.mask_interrupt(true);
        self.regs.write(CC, 0);
        spin_until(|| self.regs.read(CSTS) & 1 == 0, 200_000_000)
    }

    /// Whether the controller reports a fatal error.
    pub fn failed(&self) -> bool {
        self.regs.read(CSTS) & 0b10 != 0
    }
}

/// PRP1 and PRP2 for `len` bytes at `iova`: PRP2 is the second page when the
/// data spans exactly two pages, else the address of a PRP list written into
/// the page `list` (page addresses of the data after the first page).
pub fn build_prps(iova: u64, len: usize, list: &mut DmaMemory) -> (u64, u64) {
    let first_len = PAGE - (iova as usize % PAGE);
    if len <= first_len {
        return (iova, 0);
    }
    let second = (iova & !(PAGE as u64 - 1)) + PAGE as u64;
    let rest_pages = (len - first_len).div_ceil(PAGE);
    if rest_pages == 1 {
        return (iova, second);
    }
    assert!(
        rest_pages <= PAGE / 8 && rest_pages * 8 <= list.len(),
        "transfer too long for one PRP list page"
    );
    for i in 0..rest_pages {
        list.set_u64(i, second + (i * PAGE) as u64);
    }
    (iova, list.addr())
}

fn write_entry(sq: &mut Queue, entry: &[u32; 16]) {
    // 64-byte entries: 16 words each. The controller reads the entry only
    // after the doorbell.
    let slot = sq.index as usize * 16;
    for (i, word) in entry.iter().enumerate() {
        sq.memory.set_u32(slot + i, *word);
    }
    sq.index = (sq.index + 1) % sq.entries;
}

fn take_completion(cq: &mut Queue) -> Option<Completion> {
    // 16-byte entries: dword 3 holds the phase, status and identifier.
    let dw3 = cq.memory.u32_at(cq.index as usize * 4 + 3);
    if (dw3 >> 16) & 1 != cq.phase as u32 {
        return None;
    }
    fence(Ordering::Acquire);
    cq.index += 1;
    if cq.index == cq.entries {
        cq.index = 0;
        cq.phase = !cq.phase;
    }
    let status = ((dw3 >> 17) & 0x7fff) as u16;
    Some(Completion {
        cid: dw3 as u16,
        status: if status == 0 {
            Ok(())
        } else {
            Err(NvmeError::Status(status & 0x7ff))
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prps_cover_one_two_and_many_pages() {
        let mut list = crate::dma_memory::test_memory(PAGE);
        assert_eq!(build_prps(0x10_0000, 512, &mut list), (0x10_0000, 0));
        assert_eq!(
            build_prps(0x10_0f00, 0x200, &mut list),
            (0x10_0f00, 0x10_1000)
        );
        assert_eq!(
            build_prps(0x10_0000, 2 * PAGE, &mut list),
            (0x10_0000, 0x10_1000)
        );
        let (p1, p2) = build_prps(0x10_0000, 4 * PAGE, &mut list);
        assert_eq!((p1, p2), (0x10_0000, list.addr()));
        let words: alloc::vec::Vec<u64> = (0..4).map(|i| list.u64_at(i)).collect();
        assert_eq!(words, [0x10_1000, 0x10_2000, 0x10_3000, 0]);
    }

    #[test]
    fn identify_fields_are_checked_not_trusted() {
        // QEMU's: MDTS 7 (512 KiB), 512-byte blocks.
        assert_eq!(geometry(7, 9 << 16, 1 << 21), Ok((512 << 10, 512)));
        assert_eq!(
            geometry(0, 12 << 16, 8),
            Ok((1 << 20, 4096)),
            "no limit: 1 MiB"
        );
        assert_eq!(
            geometry(255, 9 << 16, 8),
            Ok((1 << 20, 512)),
            "a shift past the word"
        );
        assert_eq!(
            geometry(52, 9 << 16, 8),
            Ok((1 << 20, 512)),
            "a shift to zero"
        );
        for lbads in [0, 8, 17, 63, 64, 255] {
            assert!(
                matches!(geometry(5, lbads << 16, 8), Err(NvmeError::BadIdentify(_))),
                "LBADS {lbads}"
            );
        }
        assert!(matches!(
            geometry(5, 9 << 16, 0),
            Err(NvmeError::BadIdentify(_))
        ));
        assert!(matches!(
            geometry(1, 16 << 16, 8),
            Err(NvmeError::BadIdentify(_))
        ));
    }
}
