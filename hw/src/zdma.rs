//! The ZynqMP's general-purpose DMA (ZDMA): eight memory-to-memory
//! channels in the full-power domain, each a 64 KiB register block. Used
//! here in "simple" mode: one source and one destination described in the
//! channel's registers, started by setting its enable bit.
//!
//! ```text
//!  start(src, dst, len): SRC_DSCR_WORD0..3 ← src, len, interrupt
//!                        DST_DSCR_WORD0..3 ← dst, len
//!                        CTRL2.EN ← 1            ──▶ the channel copies
//!  poll(): ISR.DMA_DONE, or an error bit ──▶ acknowledged (written back)
//! ```
//!
//! There is no SMMU in front of it in QEMU's `xlnx-zcu102` (the MMU-500 is
//! not modelled), so it moves *physical* addresses: [`ZdmaEngine`] turns a
//! scheduler segment's virtual addresses into physical runs through a
//! translation the kernel provides, and refuses memory the kernel does not
//! vouch for (not pinned): nothing can catch a page that moves under it.

use crate::mmio::Mmio;
use alloc::vec::Vec;

/// Physical address of channel 0 of the full-power domain's ZDMA (GDMA).
pub const GDMA_CH0: usize = 0xfd50_0000;
/// Distance between channels.
pub const CHANNEL_STRIDE: usize = 0x1_0000;
/// Interrupt ID of GDMA channel 0 (SPI 124); channel `n` is `+ n`.
pub const GDMA_CH0_INTID: u32 = 32 + 124;
/// Longest transfer one descriptor describes (a 30-bit size field).
pub const MAX_TRANSFER: usize = (1 << 30) - 1;
/// Page size of the kernel's translation (runs are cut at its boundaries).
pub const PAGE: usize = 4096;

const ISR: usize = 0x100;
const IEN: usize = 0x108;
const IDS: usize = 0x10c;
const CTRL0: usize = 0x110;
const STATUS: usize = 0x11c;
const SRC_DSCR: usize = 0x128;
const DST_DSCR: usize = 0x138;
const TOTAL_BYTE: usize = 0x188;
const CTRL2: usize = 0x200;

/// ISR: the transfer is over.
const DMA_DONE: u32 = 1 << 10;
/// ISR: errors (AXI write and read data, descriptor reads, accounting
/// overflows, byte-count overflow, an invalid register access).
const ERRORS: u32 = (1 << 9) | (1 << 8) | (1 << 7) | (1 << 6) | (1 << 5) | (1 << 4) | (1 << 3) | 1;
/// Descriptor word 3: raise the channel's interrupt when it is done.
const DSCR_INTR: u32 = 1 << 2;
/// STATUS.STATE: 0 idle, 1 running, 2 paused, 3 error.
const STATE_MASK: u32 = 0b11;
const STATE_RUNNING: u32 = 1;

/// Why a ZDMA transfer could not start or did not finish.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZdmaError {
    /// The channel is still running a transfer.
    Busy,
    /// Empty, or longer than [`MAX_TRANSFER`].
    BadLength(usize),
    /// The channel reported an error (the ISR bits).
    Failed(u32),
}

/// One ZDMA channel.
pub struct Zdma {
    regs: Mmio,
}

impl Zdma {
    /// Driver for the channel whose registers are `regs`: simple mode, the
    /// done and error interrupts enabled, nothing pending.
    pub fn new(regs: Mmio) -> Self {
        regs.write(CTRL2, 0);
        // POINT_TYPE 0 (descriptors in registers), MODE 0 (read and write).
        regs.write(CTRL0, 0);
        regs.write(IDS, 0xfff);
        regs.write(ISR, 0xfff);
        regs.write(IEN, DMA_DONE | ERRORS);
        Self { regs }
    }

    /// Whether a transfer is running.
    pub fn busy(&self) -> bool {
        self.regs.read(STATUS) & STATE_MASK == STATE_RUNNING
    }

    /// Starts copying `len` bytes from physical `src` to physical `dst`.
    pub fn start(&mut self, src: u64, dst: u64, len: usize) -> Result<(), ZdmaError> {
        if self.busy() {
            return Err(ZdmaError::Busy);
        }
        if len == 0 || len > MAX_TRANSFER {
            return Err(ZdmaError::BadLength(len));
        }
        self.regs.write(ISR, 0xfff);
        for (dscr, addr, intr) in [(SRC_DSCR, src, DSCR_INTR), (DST_DSCR, dst, 0)] {
            self.regs.write(dscr, addr as u32);
            self.regs.write(dscr + 4, (addr >> 32) as u32);
            self.regs.write(dscr + 8, len as u32);
            self.regs.write(dscr + 12, intr);
        }
        self.regs.write(TOTAL_BYTE, self.regs.read(TOTAL_BYTE));
        self.regs.write(CTRL2, 1);
        Ok(())
    }

    /// The end of the running transfer, once there is one: `Ok` when it
    /// copied everything, else the error bits. The interrupt is
    /// acknowledged either way.
    pub fn poll(&mut self) -> Option<Result<(), ZdmaError>> {
        let isr = self.regs.read(ISR);
        if isr & ERRORS != 0 {
            self.regs.write(ISR, isr);
            return Some(Err(ZdmaError::Failed(isr)));
        }
        if isr & DMA_DONE == 0 || self.busy() {
            return None;
        }
        self.regs.write(ISR, isr);
        Some(Ok(()))
    }
}

/// One physically contiguous piece of a copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    /// Physical source.
    pub src: u64,
    /// Physical destination.
    pub dst: u64,
    /// Bytes.
    pub len: usize,
}

/// The physical runs of copying `len` bytes from virtual `src` to virtual
/// `dst`, cut where either side crosses a page whose frame does not follow
/// the previous one. `translate` gives a page's frame, or `None` for
/// memory a device may not use; the error is the first such address.
pub fn physical_runs(
    src: usize,
    dst: usize,
    len: usize,
    translate: impl Fn(usize) -> Option<u64>,
) -> Result<Vec<Run>, usize> {
    let mut runs: Vec<Run> = Vec::new();
    let mut done = 0;
    while done < len {
        let (s, d) = (src + done, dst + done);
        let n = (len - done).min(PAGE - s % PAGE).min(PAGE - d % PAGE);
        let ps = translate(s & !(PAGE - 1)).ok_or(s)? + (s % PAGE) as u64;
        let pd = translate(d & !(PAGE - 1)).ok_or(d)? + (d % PAGE) as u64;
        match runs.last_mut() {
            Some(r) if r.src + r.len as u64 == ps && r.dst + r.len as u64 == pd => r.len += n,
            _ => runs.push(Run {
                src: ps,
                dst: pd,
                len: n,
            }),
        }
        done += n;
    }
    Ok(runs)
}

/// Segments [`ZdmaEngine`] refuses: memory the kernel does not vouch for.
pub const NOT_DMA_MEMORY: u32 = 0x5a00_0001;

/// A channel as an engine of the DMA scheduler: a segment copies its
/// memory to the device address (another virtual address, `ToDevice`) or
/// from it (`FromDevice`), as physical runs one after the other.
pub struct ZdmaEngine {
    channel: Zdma,
    translate: fn(usize) -> Option<u64>,
    current: Option<Running>,
}

struct Running {
    id: dma::SegmentId,
    runs: Vec<Run>,
    next: usize,
}

/// Largest segment the scheduler hands a channel.
pub const MAX_SEGMENT: usize = 1 << 20;

impl ZdmaEngine {
    /// Engine over `channel`; `translate` gives the frame of a page a
    /// device may use (pinned), else `None`.
    pub fn new(channel: Zdma, translate: fn(usize) -> Option<u64>) -> Self {
        Self {
            channel,
            translate,
            current: None,
        }
    }

    /// Starts the next run of the running segment, or reports its end.
    fn advance(&mut self, done: &mut impl FnMut(dma::SegmentId, dma::Completion)) {
        let Some(running) = self.current.as_mut() else {
            return;
        };
        let Some(run) = running.runs.get(running.next).copied() else {
            let id = running.id;
            self.current = None;
            return done(id, dma::Completion::Ok);
        };
        running.next += 1;
        if let Err(e) = self.channel.start(run.src, run.dst, run.len) {
            let id = running.id;
            self.current = None;
            let code = match e {
                ZdmaError::Failed(isr) => isr,
                _ => NOT_DMA_MEMORY,
            };
            done(id, dma::Completion::Error(dma::EngineError::Device(code)));
        }
    }

    /// Advances the running segment; calls `done` when it has finished.
    pub fn poll_completions(&mut self, mut done: impl FnMut(dma::SegmentId, dma::Completion)) {
        if self.current.is_none() {
            return;
        }
        match self.channel.poll() {
            None => {}
            Some(Ok(())) => self.advance(&mut done),
            Some(Err(ZdmaError::Failed(isr))) => {
                let id = self.current.take().expect("running").id;
                done(id, dma::Completion::Error(dma::EngineError::Device(isr)));
            }
            Some(Err(_)) => {}
        }
    }
}

impl dma::Engine for ZdmaEngine {
    fn caps(&self) -> dma::EngineCaps {
        dma::EngineCaps {
            max_segment: MAX_SEGMENT,
            max_pieces: 1,
            block: 1,
            can_resume: false,
            // No SMMU: no stream, no faults.
            stream: dma::StreamId(u32::MAX),
            physical: true,
        }
    }

    fn start(&mut self, seg: &dma::Segment) -> Result<(), dma::EngineError> {
        if self.current.is_some() || self.channel.busy() {
            return Err(dma::EngineError::Busy);
        }
        let memory = seg.va();
        let other = seg.device_addr as usize;
        let (src, dst) = match seg.direction {
            dma::Direction::ToDevice => (memory.start, other),
            dma::Direction::FromDevice => (other, memory.start),
        };
        let runs = physical_runs(src, dst, memory.len(), self.translate)
            .map_err(|_| dma::EngineError::Device(NOT_DMA_MEMORY))?;
        self.current = Some(Running {
            id: seg.id,
            runs,
            next: 0,
        });
        let mut refused = None;
        self.advance(&mut |_, c| refused = Some(c));
        match refused {
            Some(dma::Completion::Error(e)) => Err(e),
            _ => Ok(()),
        }
    }

    fn resume(&mut self, _seg: &dma::Segment, _how: dma::Resume) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    /// Pages at 0x10_0000.. map to frames in reverse order, except that
    /// pages 0 and 1 are contiguous; page 7 is not usable.
    fn translate(va: usize) -> Option<u64> {
        let page = (va - 0x10_0000) / PAGE;
        match page {
            0 => Some(0x8000_0000),
            1 => Some(0x8000_1000),
            7 => None,
            n => Some(0x9000_0000 - (n as u64) * 0x1000),
        }
    }

    fn identity(va: usize) -> Option<u64> {
        Some(va as u64)
    }

    #[test]
    fn a_copy_is_cut_where_frames_stop_following_each_other() {
        let runs = physical_runs(0x10_0000, 0x20_0000, 3 * PAGE, |va| {
            if va >= 0x20_0000 {
                identity(va)
            } else {
                translate(va)
            }
        })
        .unwrap();
        assert_eq!(
            runs,
            vec![
                Run {
                    src: 0x8000_0000,
                    dst: 0x20_0000,
                    len: 2 * PAGE
                },
                Run {
                    src: 0x9000_0000 - 0x2000,
                    dst: 0x20_2000,
                    len: PAGE
                },
            ]
        );
    }

    #[test]
    fn unaligned_sides_are_cut_at_both_page_boundaries() {
        let runs =
            physical_runs(0x30_0100, 0x40_0f00, 0x1000, |va| Some(va as u64 ^ 0x1000)).unwrap();
        let lens: Vec<usize> = runs.iter().map(|r| r.len).collect();
        assert_eq!(lens, vec![0x100, 0xe00, 0x100]);
        assert_eq!(lens.iter().sum::<usize>(), 0x1000);
        assert_eq!(runs[0].src, 0x30_1100);
    }

    #[test]
    fn memory_a_device_may_not_use_is_refused_with_its_address() {
        assert_eq!(
            physical_runs(0x10_0000 + 6 * PAGE + 8, 0x20_0000, 2 * PAGE, translate),
            Err(0x10_0000 + 7 * PAGE)
        );
    }
}
