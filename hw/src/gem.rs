//! The Cadence Gigabit Ethernet MAC (GEM) of the ZynqMP: four of them in
//! the low-power domain; QEMU's `xlnx-zcu102` connects the NICs of its
//! command line to GEM0-3 in order, and the ZCU102 board uses GEM3.
//!
//! The MAC moves frames between memory and the wire through two rings of
//! two-word descriptors, by *physical* address (no SMMU in QEMU's model),
//! so rings and buffers live in identity-mapped frames.
//!
//! ```text
//!  receive: desc = [buffer | WRAP | OWNED] [length, SOF, EOF]
//!           GEM fills a free buffer, sets OWNED ──▶ RxRing::peek() ─▶ frame
//!           RxRing::release(): OWNED cleared ──▶ Gem::resume_rx() (QEMU
//!           re-reads the ring and delivers frames it held back)
//!  send:    TxRing::post(len): [buffer] [len | LAST | WRAP, USED clear]
//!           ──▶ Gem::start_tx() ──▶ GEM sends, sets USED ──▶ reclaim()
//! ```
//!
//! The second priority queue QEMU gives each GEM points at a descriptor
//! the driver marks as never available, so it neither sends nor receives.

use crate::mmio::Mmio;
use crate::phy::{Link, Mdio, MdioError, Speed};
use core::sync::atomic::{fence, Ordering};

/// Physical address of GEM0's registers (GEM1-3 follow every 64 KiB).
pub const GEM0: usize = 0xff0b_0000;
/// GEM0's interrupt (SPI 57).
pub const GEM0_INTID: u32 = 32 + 57;
/// Physical address of GEM3's registers: the ZCU102's Ethernet port.
pub const GEM3: usize = 0xff0e_0000;
/// GEM3's interrupt (SPI 63).
pub const GEM3_INTID: u32 = 32 + 63;
/// Descriptors in each ring.
pub const RING: usize = 256;
/// Bytes of each buffer: a whole frame (1518 bytes) fits in one.
pub const BUFFER: usize = 1536;

const NWCTRL: usize = 0x000;
const NWCFG: usize = 0x004;
const NWSTATUS: usize = 0x008;
const DMACFG: usize = 0x010;
const TXSTATUS: usize = 0x014;
const RXQBASE: usize = 0x018;
const TXQBASE: usize = 0x01c;
const RXSTATUS: usize = 0x020;
const PHYMNTNC: usize = 0x034;
const ISR: usize = 0x024;
const IER: usize = 0x028;
const IDR: usize = 0x02c;
const SPADDR1LO: usize = 0x088;
const SPADDR1HI: usize = 0x08c;
const TX_Q1_BASE: usize = 0x440;
const RX_Q1_BASE: usize = 0x480;

const NWCTRL_RXENA: u32 = 1 << 2;
const NWCTRL_TXENA: u32 = 1 << 3;
const NWCTRL_TXSTART: u32 = 1 << 9;
/// NWCTRL: the management (MDIO) port is enabled.
const NWCTRL_MDIO: u32 = 1 << 4;
/// NWCTRL while running: both directions and the management port.
const NWCTRL_RUN: u32 = NWCTRL_RXENA | NWCTRL_TXENA | NWCTRL_MDIO;
const NWCFG_SPEED100: u32 = 1 << 0;
const NWCFG_FULL_DUPLEX: u32 = 1 << 1;
const NWCFG_GIGABIT: u32 = 1 << 10;
/// NWSTATUS: the management port is idle (the last operation finished).
const NWSTATUS_MDIO_IDLE: u32 = 1 << 2;
/// PHYMNTNC: a clause-22 frame (start bits 01, turnaround 10), read or
/// write, PHY address at 23, register at 18, data in the low half.
const PHYMNTNC_CLAUSE22: u32 = 0b01 << 30 | 0b10 << 16;
const PHYMNTNC_READ: u32 = 0b10 << 28;
const PHYMNTNC_WRITE: u32 = 0b01 << 28;
/// Polls of NWSTATUS before a management operation is given up.
const MDIO_POLLS: u32 = 100_000;
const NWCFG_STRIP_FCS: u32 = 1 << 17;
/// MDC clock divider: the bus clock divided by 64, which keeps MDC under
/// the 2.5 MHz clause 22 allows for any bus clock up to 160 MHz (the
/// ZynqMP's LPD bus runs at 100 MHz or so).
const NWCFG_MDC_DIV64: u32 = 0b100 << 18;
/// DMACFG: receive buffer size in 64-byte units.
const DMACFG_RXBUF_SHIFT: u32 = 16;
const DMACFG_RXBUF_MASK: u32 = 0xff << DMACFG_RXBUF_SHIFT;
/// DMACFG: 64-bit addresses and extended descriptors (all off: RAM is
/// below 4 GiB and descriptors are two words).
const DMACFG_WIDE: u32 = 0b111 << 28;
const INT_RX_COMPLETE: u32 = 1 << 1;
const INT_TX_COMPLETE: u32 = 1 << 7;

/// Receive descriptor word 0: the buffer holds a frame (the driver's).
const RX_OWNED: u32 = 1 << 0;
/// Receive descriptor word 0: the last descriptor of the ring.
const RX_WRAP: u32 = 1 << 1;
/// Receive descriptor word 1: frame length.
const RX_LENGTH: u32 = 0x1fff;
/// Receive descriptor word 1: start and end of frame.
const RX_SOF: u32 = 1 << 14;
const RX_EOF: u32 = 1 << 15;
/// Transmit descriptor word 1: the driver's (sent, or never posted).
const TX_USED: u32 = 1 << 31;
/// Transmit descriptor word 1: the last descriptor of the ring.
const TX_WRAP: u32 = 1 << 30;
/// Transmit descriptor word 1: the last buffer of a frame.
const TX_LAST: u32 = 1 << 15;

/// Memory the MAC reads and writes by physical address: descriptor words
/// at a physical address, for the rings (host tests use plain memory).
pub trait DescriptorMemory {
    /// Word `i` of the ring.
    fn read(&self, i: usize) -> u32;
    /// Sets word `i` of the ring.
    fn write(&mut self, i: usize, value: u32);
}

/// A ring in identity-mapped memory the caller owns for good.
pub struct Words(pub &'static mut [u32]);

impl DescriptorMemory for Words {
    fn read(&self, i: usize) -> u32 {
        // SAFETY: `i` indexes the slice (checked); a volatile read because
        // the MAC writes the ring behind the compiler's back.
        unsafe { core::ptr::read_volatile(&self.0[i]) }
    }
    fn write(&mut self, i: usize, value: u32) {
        // SAFETY: as above, for a write the MAC must see.
        unsafe { core::ptr::write_volatile(&mut self.0[i], value) }
    }
}

/// The receive ring: [`RING`] buffers of [`BUFFER`] bytes from `buffers`.
pub struct RxRing<M> {
    desc: M,
    buffers: u64,
    next: usize,
}

/// A received frame: which buffer, and how many bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Received {
    /// Descriptor (and buffer) index, for [`RxRing::release`].
    pub index: usize,
    /// Physical address of its first byte.
    pub addr: u64,
    /// Bytes of the frame; 0 for a frame the driver cannot use (spread over
    /// several buffers, or an impossible length), which is released unread.
    pub len: usize,
}

impl<M: DescriptorMemory> RxRing<M> {
    /// Every buffer handed to the MAC.
    pub fn new(mut desc: M, buffers: u64) -> Self {
        for i in 0..RING {
            let wrap = if i == RING - 1 { RX_WRAP } else { 0 };
            desc.write(2 * i, (buffers + (i * BUFFER) as u64) as u32 | wrap);
            desc.write(2 * i + 1, 0);
        }
        fence(Ordering::SeqCst);
        Self {
            desc,
            buffers,
            next: 0,
        }
    }

    /// The oldest frame the MAC has placed, if any (in ring order).
    pub fn peek(&self) -> Option<Received> {
        let i = self.next;
        if self.desc.read(2 * i) & RX_OWNED == 0 {
            return None;
        }
        fence(Ordering::Acquire);
        let status = self.desc.read(2 * i + 1);
        let len = (status & RX_LENGTH) as usize;
        let whole = status & (RX_SOF | RX_EOF) == RX_SOF | RX_EOF && len <= BUFFER;
        Some(Received {
            index: i,
            addr: self.buffers + (i * BUFFER) as u64,
            len: if whole { len } else { 0 },
        })
    }

    /// Gives the oldest frame's buffer back to the MAC.
    pub fn release(&mut self) {
        let i = self.next;
        let wrap = if i == RING - 1 { RX_WRAP } else { 0 };
        self.desc.write(2 * i + 1, 0);
        fence(Ordering::Release);
        self.desc
            .write(2 * i, (self.buffers + (i * BUFFER) as u64) as u32 | wrap);
        self.next = (i + 1) % RING;
    }
}

/// The transmit ring: [`RING`] buffers of [`BUFFER`] bytes from `buffers`.
pub struct TxRing<M> {
    desc: M,
    buffers: u64,
    next: usize,
    oldest: usize,
    in_flight: usize,
}

impl<M: DescriptorMemory> TxRing<M> {
    /// Every descriptor the driver's (nothing to send).
    pub fn new(mut desc: M, buffers: u64) -> Self {
        for i in 0..RING {
            let wrap = if i == RING - 1 { TX_WRAP } else { 0 };
            desc.write(2 * i, (buffers + (i * BUFFER) as u64) as u32);
            desc.write(2 * i + 1, TX_USED | wrap);
        }
        fence(Ordering::SeqCst);
        Self {
            desc,
            buffers,
            next: 0,
            oldest: 0,
            in_flight: 0,
        }
    }

    /// Takes back the buffers the MAC has sent.
    pub fn reclaim(&mut self) {
        while self.in_flight > 0 && self.desc.read(2 * self.oldest + 1) & TX_USED != 0 {
            self.oldest = (self.oldest + 1) % RING;
            self.in_flight -= 1;
        }
    }

    /// The physical address of the next free buffer, if one is free.
    pub fn free_buffer(&self) -> Option<u64> {
        (self.in_flight < RING).then(|| self.buffers + (self.next * BUFFER) as u64)
    }

    /// Hands the MAC the frame of `len` bytes written into the buffer
    /// [`free_buffer`](Self::free_buffer) gave.
    pub fn post(&mut self, len: usize) {
        let i = self.next;
        let wrap = if i == RING - 1 { TX_WRAP } else { 0 };
        fence(Ordering::Release);
        self.desc
            .write(2 * i + 1, (len.min(BUFFER) as u32) | TX_LAST | wrap);
        self.next = (i + 1) % RING;
        self.in_flight += 1;
    }
}

/// One GEM's registers.
pub struct Gem {
    regs: Mmio,
}

impl Gem {
    /// Resets the MAC's state and starts it on the rings at `rx_ring` and
    /// `tx_ring` (physical), with the second priority queue of each way
    /// parked on `parked_rx` and `parked_tx` (two words each: never
    /// available). Frames keep their FCS stripped; interrupts on every
    /// received and sent frame.
    pub fn start(
        regs: Mmio,
        rx_ring: u64,
        tx_ring: u64,
        parked: &mut Words,
        parked_at: u64,
    ) -> Self {
        regs.write(NWCTRL, 0);
        regs.write(IDR, u32::MAX);
        let _ = regs.read(ISR);
        regs.write(TXSTATUS, 0x1ff);
        regs.write(RXSTATUS, 0xf);
        // The parked queue-1 descriptors: receive "owned by the driver",
        // transmit "used", both wrapping onto themselves.
        parked.write(0, RX_OWNED | RX_WRAP);
        parked.write(1, 0);
        parked.write(2, 0);
        parked.write(3, TX_USED | TX_WRAP);
        fence(Ordering::SeqCst);
        regs.write(NWCFG, NWCFG_MDC_DIV64 | NWCFG_STRIP_FCS | NWCFG_FULL_DUPLEX);
        let dma = regs.read(DMACFG) & !(DMACFG_WIDE | DMACFG_RXBUF_MASK);
        regs.write(DMACFG, dma | ((BUFFER / 64) as u32) << DMACFG_RXBUF_SHIFT);
        regs.write(RXQBASE, rx_ring as u32);
        regs.write(TXQBASE, tx_ring as u32);
        regs.write(RX_Q1_BASE, parked_at as u32);
        regs.write(TX_Q1_BASE, (parked_at + 8) as u32);
        // The MAC address QEMU (or firmware) left: written back, which is
        // what makes the address filter use it.
        let (lo, hi) = (regs.read(SPADDR1LO), regs.read(SPADDR1HI));
        regs.write(SPADDR1LO, lo);
        regs.write(SPADDR1HI, hi & 0xffff);
        regs.write(IER, INT_RX_COMPLETE | INT_TX_COMPLETE);
        regs.write(NWCTRL, NWCTRL_RUN);
        Self { regs }
    }

    /// The station address.
    pub fn mac(&self) -> [u8; 6] {
        let lo = self.regs.read(SPADDR1LO).to_le_bytes();
        let hi = self.regs.read(SPADDR1HI).to_le_bytes();
        [lo[0], lo[1], lo[2], lo[3], hi[0], hi[1]]
    }

    /// Sets the station address: frames to it are received, and it is the
    /// one [`mac`](Gem::mac) reports.
    pub fn set_mac(&self, mac: [u8; 6]) {
        self.regs.write(
            SPADDR1LO,
            u32::from_le_bytes([mac[0], mac[1], mac[2], mac[3]]),
        );
        // The high word last: writing it is what enables the filter.
        self.regs
            .write(SPADDR1HI, u32::from(u16::from_le_bytes([mac[4], mac[5]])));
    }

    /// Sends what was posted on the transmit ring.
    pub fn start_tx(&self) {
        self.regs.write(NWCTRL, NWCTRL_RUN | NWCTRL_TXSTART);
    }

    /// Tells the MAC that receive buffers were given back (it re-reads the
    /// ring and delivers frames it had to hold back).
    pub fn resume_rx(&self) {
        self.regs.write(NWCTRL, NWCTRL_RUN);
    }

    /// Sets the MAC to the line rate and duplex its PHY negotiated.
    pub fn set_link(&self, link: Link) {
        let mut cfg = self.regs.read(NWCFG) & !(NWCFG_SPEED100 | NWCFG_GIGABIT | NWCFG_FULL_DUPLEX);
        cfg |= match link.speed {
            Speed::Mb10 => 0,
            Speed::Mb100 => NWCFG_SPEED100,
            Speed::Mb1000 => NWCFG_GIGABIT,
        };
        if link.full_duplex {
            cfg |= NWCFG_FULL_DUPLEX;
        }
        self.regs.write(NWCFG, cfg);
    }

    /// Runs one management frame and waits for the port to go idle.
    fn mdio(&mut self, frame: u32) -> Result<u32, MdioError> {
        self.wait_mdio_idle()?;
        self.regs.write(PHYMNTNC, frame);
        self.wait_mdio_idle()?;
        Ok(self.regs.read(PHYMNTNC))
    }

    fn wait_mdio_idle(&self) -> Result<(), MdioError> {
        for _ in 0..MDIO_POLLS {
            if self.regs.read(NWSTATUS) & NWSTATUS_MDIO_IDLE != 0 {
                return Ok(());
            }
        }
        Err(MdioError)
    }
}

/// The GEM's own management port: its PHY sits on it.
impl Mdio for Gem {
    fn read(&mut self, phy: u8, reg: u8) -> Result<u16, MdioError> {
        let frame = PHYMNTNC_CLAUSE22 | PHYMNTNC_READ | phy_and_reg(phy, reg);
        Ok(self.mdio(frame)? as u16)
    }

    fn write(&mut self, phy: u8, reg: u8, value: u16) -> Result<(), MdioError> {
        let frame = PHYMNTNC_CLAUSE22 | PHYMNTNC_WRITE | phy_and_reg(phy, reg);
        self.mdio(frame | u32::from(value)).map(|_| ())
    }
}

/// PHYMNTNC's address fields.
fn phy_and_reg(phy: u8, reg: u8) -> u32 {
    u32::from(phy & 0x1f) << 23 | u32::from(reg & 0x1f) << 18
}

impl Gem {
    /// Acknowledges the interrupt (the status clears on read).
    pub fn acknowledge_interrupt(&self) -> u32 {
        let isr = self.regs.read(ISR);
        self.regs.write(TXSTATUS, 0x1ff);
        self.regs.write(RXSTATUS, 0xf);
        isr
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use alloc::vec::Vec;

    struct Plain(Vec<u32>);
    impl DescriptorMemory for Plain {
        fn read(&self, i: usize) -> u32 {
            self.0[i]
        }
        fn write(&mut self, i: usize, value: u32) {
            self.0[i] = value;
        }
    }

    const RX_BUFFERS: u64 = 0x1000_0000;

    /// What the MAC does with a frame: fill the current buffer, mark it.
    fn mac_receives(ring: &mut RxRing<Plain>, i: usize, len: u32) {
        ring.desc.0[2 * i + 1] = len | RX_SOF | RX_EOF;
        ring.desc.0[2 * i] |= RX_OWNED;
    }

    #[test]
    fn frames_come_out_in_ring_order_and_their_buffers_go_back() {
        let mut rx = RxRing::new(Plain(vec![0; 2 * RING]), RX_BUFFERS);
        assert_eq!(rx.desc.0[2 * (RING - 1)] & RX_WRAP, RX_WRAP);
        assert_eq!(rx.peek(), None);
        mac_receives(&mut rx, 0, 60);
        mac_receives(&mut rx, 1, 1514);
        assert_eq!(
            rx.peek(),
            Some(Received {
                index: 0,
                addr: RX_BUFFERS,
                len: 60
            })
        );
        rx.release();
        assert_eq!(rx.desc.0[0], RX_BUFFERS as u32, "free again, address kept");
        let second = rx.peek().unwrap();
        assert_eq!((second.index, second.len), (1, 1514));
        assert_eq!(second.addr, RX_BUFFERS + BUFFER as u64);
        rx.release();
        assert_eq!(rx.peek(), None);
    }

    #[test]
    fn a_frame_the_driver_cannot_use_is_handed_out_empty() {
        let mut rx = RxRing::new(Plain(vec![0; 2 * RING]), RX_BUFFERS);
        // Only the start of a frame spread over buffers, and a length the
        // buffer cannot hold: both released unread.
        rx.desc.0[1] = 100 | RX_SOF;
        rx.desc.0[0] |= RX_OWNED;
        assert_eq!(rx.peek().map(|r| r.len), Some(0));
        rx.release();
        rx.desc.0[3] = 0x1fff | RX_SOF | RX_EOF;
        rx.desc.0[2] |= RX_OWNED;
        assert_eq!(rx.peek().map(|r| r.len), Some(0));
    }

    #[test]
    fn sending_fills_the_ring_and_sent_buffers_come_back_in_order() {
        let mut tx = TxRing::new(Plain(vec![0; 2 * RING]), 0x2000_0000);
        assert!(tx.desc.0.chunks(2).all(|d| d[1] & TX_USED != 0));
        for n in 0..RING {
            let buffer = tx.free_buffer().expect("room");
            assert_eq!(buffer, 0x2000_0000 + ((n % RING) * BUFFER) as u64);
            tx.post(100 + n);
        }
        assert_eq!(tx.free_buffer(), None, "every buffer is in flight");
        let last = tx.desc.0[2 * (RING - 1) + 1];
        assert_eq!(last, (100 + RING as u32 - 1) | TX_LAST | TX_WRAP);
        // The MAC sends the first two.
        tx.desc.0[1] |= TX_USED;
        tx.desc.0[3] |= TX_USED;
        tx.reclaim();
        assert_eq!(tx.free_buffer(), Some(0x2000_0000));
        assert_eq!(tx.in_flight, RING - 2);
    }
}
