//! A software SMMUv3 that behaves like QEMU 7.2's, for driving the real
//! driver in host tests.
//!
//! It models what the driver depends on: CR0ACK and IRQ_CTRL_ACK following
//! their registers, the command queue consumed when CMDQ_PROD is written
//! (stopping on an illegal command with CMDQ_CONS.ERR and GERROR.CMDQ_ERR),
//! STE/CD decoding with QEMU's acceptance checks, a configuration cache
//! dropped by CFGI_*, an IOTLB keyed by (ASID, page) dropped by TLBI_*, and
//! faulting DMA split into 4-byte pieces, each recorded in the event queue
//! (or lost, toggling GERROR.EVENTQ_ABT_ERR, when the queue is full). The
//! "page table" it walks is a set of mapped pages per TTB0.
#![allow(dead_code)]

use smmu::v3::{DmaAllocator, DmaMemory, Regs};
use std::cell::{Ref, RefCell, RefMut};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

/// One leaked allocation handed to the driver.
struct Region {
    addr: u64,
    ptr: *mut u64,
    words: usize,
}

/// Memory the driver and the fake SMMU share, addressed physically.
#[derive(Clone, Default)]
pub struct Memory {
    regions: Rc<RefCell<Vec<Region>>>,
    limit: Rc<RefCell<Option<usize>>>,
}

impl Memory {
    /// Memory that runs out after `bytes`.
    pub fn with_limit(bytes: usize) -> Self {
        let memory = Self::default();
        *memory.limit.borrow_mut() = Some(bytes);
        memory
    }

    fn word(&self, addr: u64) -> *mut u64 {
        assert_eq!(addr % 8, 0, "unaligned DMA at {addr:#x}");
        let regions = self.regions.borrow();
        let region = regions
            .iter()
            .find(|r| addr >= r.addr && addr < r.addr + 8 * r.words as u64)
            .unwrap_or_else(|| panic!("DMA to {addr:#x}, outside driver memory"));
        // SAFETY: the offset is inside the region, which is never freed.
        unsafe { region.ptr.add(((addr - region.addr) / 8) as usize) }
    }

    /// The SMMU reading a word of memory.
    pub fn read(&self, addr: u64) -> u64 {
        // SAFETY: `word` points into a leaked, live allocation; the test is
        // single-threaded, so nothing writes it concurrently.
        unsafe { self.word(addr).read_volatile() }
    }

    /// The SMMU writing a word of memory.
    pub fn write(&self, addr: u64, value: u64) {
        // SAFETY: as in `read`.
        unsafe { self.word(addr).write_volatile(value) }
    }
}

impl DmaAllocator for Memory {
    fn alloc(&mut self, bytes: usize, align: usize) -> Option<DmaMemory> {
        if let Some(left) = self.limit.borrow_mut().as_mut() {
            *left = left.checked_sub(bytes)?;
        }
        let words = bytes.div_ceil(8);
        let backing: &'static mut [u64] = vec![0u64; words + align / 8].leak();
        let skip = backing.as_ptr().align_offset(align.max(8));
        let slice = &mut backing[skip..skip + words];
        self.regions.borrow_mut().push(Region {
            addr: slice.as_ptr() as u64,
            ptr: slice.as_mut_ptr(),
            words,
        });
        Some(DmaMemory::new(slice))
    }
}

/// How the fake reports a full event queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overflow {
    /// QEMU 7.2: toggle GERROR.EVENTQ_ABT_ERR.
    Gerror,
    /// The architecture: toggle EVENTQ_PROD.OVFLG.
    Flag,
}

/// The regime of an attached stream, as the fake decoded its CD.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Context {
    pub ttb0: u64,
    pub t0sz: u64,
    pub asid: u16,
    pub ips_bits: u32,
    pub mair: u64,
    pub record_faults: bool,
}

/// A stream's decoded configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamConfig {
    Abort,
    Bypass,
    Translate(Context),
}

/// What happened to a DMA, piece by piece.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DmaResult {
    pub translated: usize,
    pub failed: usize,
}

/// Everything the fake SMMU holds.
pub struct State {
    pub idr: [u32; 6],
    pub cr0: u32,
    pub cr0ack: u32,
    pub cr1: u32,
    pub cr2: u32,
    pub irq_ctrl: u32,
    pub gerror: u32,
    pub gerrorn: u32,
    pub strtab_base: u64,
    pub strtab_base_cfg: u32,
    pub cmdq_base: u64,
    pub cmdq_prod: u32,
    pub cmdq_cons: u32,
    pub eventq_base: u64,
    pub eventq_prod: u32,
    pub eventq_cons: u32,
    /// Every register write, in order: (offset, value).
    pub writes: Vec<(usize, u64)>,
    /// Every command consumed, in order.
    pub commands: Vec<[u64; 2]>,
    /// Interrupt pulses raised.
    pub eventq_irqs: usize,
    pub gerror_irqs: usize,
    /// Knobs.
    pub cr0ack_stuck: bool,
    pub consume_commands: bool,
    pub illegal_opcodes: Vec<u8>,
    pub overflow: Overflow,
    /// Decoded configurations, kept until CFGI_*.
    pub config_cache: HashMap<u32, StreamConfig>,
    /// Cached translations (ASID, page), kept until TLBI_*.
    pub iotlb: HashSet<(u16, u64)>,
    /// The page table: pages mapped under each TTB0.
    pub mapped: HashSet<(u64, u64)>,
}

/// QEMU 7.2's ID registers.
pub const QEMU_IDR0: u32 = (1 << 1)
    | (0b10 << 2)
    | (1 << 4)
    | (1 << 12)
    | (0b10 << 21)
    | (0b01 << 24)
    | (1 << 26)
    | (0b01 << 27);
pub const QEMU_IDR1: u32 = 16 | (19 << 16) | (19 << 21);
pub const QEMU_IDR3: u32 = 1 << 10;
pub const QEMU_IDR5: u32 = 4 | (1 << 4) | (1 << 6);

/// The fake SMMU, shared between the driver (as its `Regs`) and the test.
#[derive(Clone)]
pub struct FakeSmmu {
    state: Rc<RefCell<State>>,
    memory: Memory,
}

const CMDQ_ERR: u32 = 1 << 0;
const EVENTQ_ABT_ERR: u32 = 1 << 2;
const ADDR_MASK: u64 = 0x000f_ffff_ffff_ffc0;

impl FakeSmmu {
    /// A QEMU-like SMMU and the memory the driver will allocate from.
    pub fn new() -> (Self, Memory) {
        let memory = Memory::default();
        (Self::with_memory(memory.clone()), memory)
    }

    /// A QEMU-like SMMU over `memory`.
    pub fn with_memory(memory: Memory) -> Self {
        let state = State {
            idr: [QEMU_IDR0, QEMU_IDR1, 0, QEMU_IDR3, 0, QEMU_IDR5],
            cr0: 0,
            cr0ack: 0,
            cr1: 0,
            cr2: 0,
            irq_ctrl: 0,
            gerror: 0,
            gerrorn: 0,
            strtab_base: 0,
            strtab_base_cfg: 0,
            cmdq_base: 19,
            cmdq_prod: 0,
            cmdq_cons: 0,
            eventq_base: 19,
            eventq_prod: 0,
            eventq_cons: 0,
            writes: Vec::new(),
            commands: Vec::new(),
            eventq_irqs: 0,
            gerror_irqs: 0,
            cr0ack_stuck: false,
            consume_commands: true,
            illegal_opcodes: Vec::new(),
            overflow: Overflow::Gerror,
            config_cache: HashMap::new(),
            iotlb: HashSet::new(),
            mapped: HashSet::new(),
        };
        Self {
            state: Rc::new(RefCell::new(state)),
            memory,
        }
    }

    pub fn state(&self) -> Ref<'_, State> {
        self.state.borrow()
    }

    pub fn state_mut(&self) -> RefMut<'_, State> {
        self.state.borrow_mut()
    }

    /// Maps the page holding `va` in the page table rooted at `ttb0`.
    pub fn map(&self, ttb0: u64, va: u64) {
        self.state_mut().mapped.insert((ttb0, va & !0xfff));
    }

    /// Unmaps it (without touching the IOTLB, as the kernel's page table
    /// code would).
    pub fn unmap(&self, ttb0: u64, va: u64) {
        self.state_mut().mapped.remove(&(ttb0, va & !0xfff));
    }

    /// Opcodes of the commands consumed since the last call.
    pub fn take_commands(&self) -> Vec<[u64; 2]> {
        std::mem::take(&mut self.state_mut().commands)
    }

    fn pulse_gerror(s: &mut State, bits: u32) {
        let pending = s.gerror ^ s.gerrorn;
        let new = !pending & bits;
        if new != 0 {
            s.gerror ^= new;
            if s.irq_ctrl & 1 != 0 {
                s.gerror_irqs += 1;
            }
        }
    }

    fn queue_log2(base: u64) -> u32 {
        (base & 0x1f).min(19) as u32
    }

    /// Consumes commands the way QEMU does on a CMDQ_PROD or GERRORN write.
    fn consume(&self, s: &mut State) {
        if s.cr0 & 8 == 0 || !s.consume_commands {
            return;
        }
        let log2 = Self::queue_log2(s.cmdq_base);
        let ptr_mask = (2u32 << log2) - 1;
        while (s.cmdq_prod ^ s.cmdq_cons) & ptr_mask != 0 {
            if (s.gerror ^ s.gerrorn) & CMDQ_ERR != 0 {
                break;
            }
            let index = (s.cmdq_cons & ((1 << log2) - 1)) as u64;
            let addr = (s.cmdq_base & ADDR_MASK) + 16 * index;
            let cmd = [self.memory.read(addr), self.memory.read(addr + 8)];
            let opcode = (cmd[0] & 0xff) as u8;
            let ssec = cmd[0] & (1 << 10) != 0;
            let sid = (cmd[0] >> 32) as u32;
            let asid = (cmd[0] >> 48) as u16;
            let legal = !s.illegal_opcodes.contains(&opcode) && !ssec;
            let legal = legal
                && match opcode {
                    0x46 | 0x01 | 0x02 => true,
                    0x03 | 0x05 | 0x06 => {
                        s.config_cache.remove(&sid);
                        true
                    }
                    0x04 => {
                        let range = cmd[1] & 0x1f;
                        let mask = ((1u64 << (range + 1)) - 1) as u32;
                        let start = sid & !mask;
                        s.config_cache
                            .retain(|&k, _| k < start || k > start.wrapping_add(mask));
                        true
                    }
                    0x11 => {
                        s.iotlb.retain(|&(a, _)| a != asid);
                        true
                    }
                    0x10 | 0x30 => {
                        s.iotlb.clear();
                        true
                    }
                    0x12 | 0x13 => {
                        let page = cmd[1] & !0xfff;
                        let by_asid = opcode == 0x12;
                        s.iotlb
                            .retain(|&(a, p)| p != page || (by_asid && a != asid));
                        true
                    }
                    _ => false,
                };
            if !legal {
                s.cmdq_cons = (s.cmdq_cons & !(0x7f << 24)) | (1 << 24);
                Self::pulse_gerror(s, CMDQ_ERR);
                break;
            }
            s.commands.push(cmd);
            let next = (s.cmdq_cons & ptr_mask) + 1;
            s.cmdq_cons = (s.cmdq_cons & !ptr_mask) | (next & ptr_mask);
        }
    }

    /// Decodes the configuration of `sid` as QEMU's smmuv3_decode_config
    /// does; `Err` holds the event code of a configuration error.
    fn decode_config(&self, s: &State, sid: u32) -> Result<StreamConfig, u8> {
        const C_BAD_STREAMID: u8 = 0x02;
        const C_BAD_STE: u8 = 0x04;
        const C_BAD_CD: u8 = 0x0a;
        let log2size = s.strtab_base_cfg & 0x3f;
        if sid >= 1 << log2size.min(16) {
            return Err(C_BAD_STREAMID);
        }
        let base = s.strtab_base & ADDR_MASK;
        let ste_addr = if (s.strtab_base_cfg >> 16) & 3 == 1 {
            let split = (s.strtab_base_cfg >> 6) & 0x1f;
            let l1 = self.memory.read(base + 8 * (sid >> split) as u64);
            let span = l1 & 0x1f;
            if span == 0 {
                return Err(C_BAD_STREAMID);
            }
            let l2_index = sid & ((1 << split) - 1);
            if l2_index as u64 > (1 << span) - 1 {
                return Err(C_BAD_STE);
            }
            (l1 & ADDR_MASK) + 64 * l2_index as u64
        } else {
            base + 64 * sid as u64
        };
        let ste: Vec<u64> = (0..8).map(|i| self.memory.read(ste_addr + 8 * i)).collect();
        if ste[0] & 1 == 0 {
            return Err(C_BAD_STE);
        }
        let config = (ste[0] >> 1) & 0b111;
        if config & 0b100 == 0 {
            return Ok(StreamConfig::Abort);
        }
        if config == 0b100 {
            return Ok(StreamConfig::Bypass);
        }
        if config & 0b010 != 0 || ste[0] >> 59 != 0 || (ste[1] >> 27) & 1 != 0 {
            return Err(C_BAD_STE); // stage 2, several CDs, or S1STALLD
        }
        let cd_addr = ste[0] & 0x0000_ffff_ffff_ffc0;
        let cd: Vec<u64> = (0..8).map(|i| self.memory.read(cd_addr + 8 * i)).collect();
        let bit = |w: u64, b: u32| (w >> b) & 1 == 1;
        if !bit(cd[0], 31) || !bit(cd[0], 41) || !bit(cd[0], 46) {
            return Err(C_BAD_CD); // V, AA64, A
        }
        if bit(cd[0], 44) || bit(cd[0], 43) || bit(cd[0], 42) {
            return Err(C_BAD_CD); // S, HA, HD
        }
        let ips_bits = match (cd[0] >> 32) & 7 {
            0 => 32,
            1 => 36,
            2 => 40,
            3 => 42,
            _ => 44, // capped at QEMU's OAS
        };
        let t0sz = cd[0] & 0x3f;
        let tg0 = (cd[0] >> 6) & 3;
        let ttb0 = cd[1] & 0x0007_ffff_ffff_fff0;
        if !bit(cd[0], 14) {
            if !(16..=39).contains(&t0sz) || !(tg0 == 0 || tg0 == 1) || bit(cd[0], 15) {
                return Err(C_BAD_CD);
            }
            if ttb0 >> ips_bits != 0 {
                return Err(C_BAD_CD);
            }
        }
        Ok(StreamConfig::Translate(Context {
            ttb0,
            t0sz,
            asid: (cd[0] >> 48) as u16,
            ips_bits,
            mair: cd[3],
            record_faults: bit(cd[0], 45),
        }))
    }

    /// The configuration the SMMU uses for `sid`, from its cache or freshly
    /// decoded (and then cached, unless decoding failed).
    pub fn config(&self, sid: u32) -> Result<StreamConfig, u8> {
        if let Some(&config) = self.state().config_cache.get(&sid) {
            return Ok(config);
        }
        let config = self.decode_config(&self.state(), sid)?;
        self.state_mut().config_cache.insert(sid, config);
        Ok(config)
    }

    /// Writes one event record, or loses it if the queue is full.
    fn record(&self, s: &mut State, record: [u64; 4]) {
        if s.cr0 & 4 == 0 {
            return;
        }
        let log2 = Self::queue_log2(s.eventq_base);
        let ptr_mask = (2u32 << log2) - 1;
        let full = (s.eventq_prod ^ s.eventq_cons) & ptr_mask == 1 << log2;
        if full {
            match s.overflow {
                Overflow::Gerror => Self::pulse_gerror(s, EVENTQ_ABT_ERR),
                Overflow::Flag => {
                    if (s.eventq_prod ^ s.eventq_cons) & (1 << 31) == 0 {
                        s.eventq_prod ^= 1 << 31;
                    }
                }
            }
            return;
        }
        let index = (s.eventq_prod & ((1 << log2) - 1)) as u64;
        let addr = (s.eventq_base & 0x000f_ffff_ffff_ffe0) + 32 * index;
        for (i, &word) in record.iter().enumerate() {
            self.memory.write(addr + 8 * i as u64, word);
        }
        let next = (s.eventq_prod & ptr_mask) + 1;
        s.eventq_prod = (s.eventq_prod & !ptr_mask) | (next & ptr_mask);
        if s.irq_ctrl & 4 != 0 {
            s.eventq_irqs += 1;
        }
    }

    /// A device on stream `sid` accessing `len` bytes at `iova`: translated
    /// 4 bytes at a time, each failed piece recorded (if the CD asks).
    pub fn dma(&self, sid: u32, iova: u64, len: u64, write: bool) -> DmaResult {
        let mut result = DmaResult::default();
        for piece in (iova..iova + len).step_by(4) {
            if self.state().cr0 & 1 == 0 {
                result.translated += 1;
                continue;
            }
            let rnw = (!write as u64) << 35;
            match self.config(sid) {
                Err(code) => {
                    let mut s = self.state_mut();
                    self.record(&mut s, [code as u64 | (sid as u64) << 32, 0, 0, 0]);
                    result.failed += 1;
                }
                Ok(StreamConfig::Abort) => result.failed += 1,
                Ok(StreamConfig::Bypass) => result.translated += 1,
                Ok(StreamConfig::Translate(ctx)) => {
                    let page = piece & !0xfff;
                    let mut s = self.state_mut();
                    if s.iotlb.contains(&(ctx.asid, page)) {
                        result.translated += 1;
                    } else if s.mapped.contains(&(ctx.ttb0, page)) {
                        s.iotlb.insert((ctx.asid, page));
                        result.translated += 1;
                    } else {
                        if ctx.record_faults {
                            let w0 = 0x10 | (sid as u64) << 32;
                            self.record(&mut s, [w0, rnw, piece, 0]);
                        }
                        result.failed += 1;
                    }
                }
            }
        }
        result
    }
}

impl Regs for FakeSmmu {
    fn read32(&self, offset: usize) -> u32 {
        let s = self.state();
        match offset & !0x1_0000 {
            0x00..=0x14 => s.idr[offset / 4],
            0x20 => s.cr0,
            0x24 => s.cr0ack,
            0x28 => s.cr1,
            0x2c => s.cr2,
            0x50 | 0x54 => s.irq_ctrl,
            0x60 => s.gerror,
            0x64 => s.gerrorn,
            0x88 => s.strtab_base_cfg,
            0x98 => s.cmdq_prod,
            0x9c => s.cmdq_cons,
            0xa8 => s.eventq_prod,
            0xac => s.eventq_cons,
            other => panic!("unexpected 32-bit read of {other:#x}"),
        }
    }

    fn write32(&self, offset: usize, value: u32) {
        let mut s = self.state_mut();
        s.writes.push((offset, value as u64));
        match offset & !0x1_0000 {
            0x20 => {
                s.cr0 = value;
                if !s.cr0ack_stuck {
                    s.cr0ack = value & !0xffff_fc20;
                }
                self.consume(&mut s);
            }
            0x28 => s.cr1 = value,
            0x2c => s.cr2 = value,
            0x50 => s.irq_ctrl = value,
            0x64 => {
                s.gerrorn = value;
                self.consume(&mut s);
            }
            0x88 => s.strtab_base_cfg = value,
            0x98 => {
                s.cmdq_prod = value;
                self.consume(&mut s);
            }
            0x9c => s.cmdq_cons = value,
            0xa8 => s.eventq_prod = value,
            0xac => s.eventq_cons = value,
            other => panic!("unexpected 32-bit write of {value:#x} to {other:#x}"),
        }
    }

    fn read64(&self, offset: usize) -> u64 {
        let s = self.state();
        match offset {
            0x80 => s.strtab_base,
            0x90 => s.cmdq_base,
            0xa0 => s.eventq_base,
            other => panic!("unexpected 64-bit read of {other:#x}"),
        }
    }

    fn write64(&self, offset: usize, value: u64) {
        let mut s = self.state_mut();
        s.writes.push((offset, value));
        match offset {
            0x80 => s.strtab_base = value,
            0x90 => s.cmdq_base = value,
            0xa0 => s.eventq_base = value,
            other => panic!("unexpected 64-bit write of {value:#x} to {other:#x}"),
        }
    }
}
