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

use crate::dma_memory::DmaMemory;
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

/// Fields of NWCTRL.
mod nwctrl {
    pub const RXENA: u32 = 1 << 2;
    pub const TXENA: u32 = 1 << 3;
    pub const TXSTART: u32 = 1 << 9;
    /// The management (MDIO) port is enabled.
    pub const MDIO: u32 = 1 << 4;
    /// NWCTRL while running: both directions and the management port.
    pub const RUN: u32 = RXENA | TXENA | MDIO;
}

/// Fields of NWCFG.
mod nwcfg {
    pub const SPEED100: u32 = 1 << 0;
    pub const FULL_DUPLEX: u32 = 1 << 1;
    pub const GIGABIT: u32 = 1 << 10;
    pub const STRIP_FCS: u32 = 1 << 17;
    /// MDC clock divider: the bus clock divided by 64, which keeps MDC under
    /// the 2.5 MHz clause 22 allows for any bus clock up to 160 MHz (the
    /// ZynqMP's LPD bus runs at 100 MHz or so).
    pub const MDC_DIV64: u32 = 0b100 << 18;
}

/// Fields of PHYMNTNC.
mod phymntnc {
    /// A clause-22 frame (start bits 01, turnaround 10), read or
    /// write, PHY address at 23, register at 18, data in the low half.
    pub const CLAUSE22: u32 = 0b01 << 30 | 0b10 << 16;
    pub const READ: u32 = 0b10 << 28;
    pub const WRITE: u32 = 0b01 << 28;
}

/// Fields of DMACFG.
mod dmacfg {
    /// Receive buffer size in 64-byte units.
    pub const RXBUF_SHIFT: u32 = 16;
    pub const RXBUF_MASK: u32 = 0xff << RXBUF_SHIFT;
    /// 64-bit addresses and extended descriptors (all off: RAM is
    /// below 4 GiB and descriptors are two words).
    pub const WIDE: u32 = 0b111 << 28;
}

/// NWSTATUS: the management port is idle (the last operation finished).
const NWSTATUS_MDIO_IDLE: u32 = 1 << 2;
/// Polls of NWSTATUS before a management operation is given up.
const MDIO_POLLS: u32 = 100_000;
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

/// The receive ring: [`RING`] buffers of [`BUFFER`] bytes from `buffers`.
pub struct RxRing {
    desc: DmaMemory,
    buffers: DmaMemory,
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

impl RxRing {
    /// Every buffer of `buffers` (at least [`RING`] x [`BUFFER`] bytes)
    /// handed to the MAC.
    pub fn new(mut desc: DmaMemory, buffers: DmaMemory) -> Self {
        assert!(buffers.len() >= RING * BUFFER, "too few receive buffers");
        for i in 0..RING {
            let wrap = if i == RING - 1 { RX_WRAP } else { 0 };
            desc.set_u32(2 * i, buffers.addr_of(i * BUFFER) as u32 | wrap);
            desc.set_u32(2 * i + 1, 0);
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
        if self.desc.u32_at(2 * i) & RX_OWNED == 0 {
            return None;
        }
        fence(Ordering::Acquire);
        let status = self.desc.u32_at(2 * i + 1);
        let len = (status & RX_LENGTH) as usize;
        let whole = status & (RX_SOF | RX_EOF) == RX_SOF | RX_EOF && len <= BUFFER;
        Some(Received {
            index: i,
            addr: self.buffers.addr_of(i * BUFFER),
            len: if whole { len } else { 0 },
        })
    }

    /// The bytes of `frame` (from [`peek`](Self::peek)), which the MAC does
    /// not write again before [`release`](Self::release).
    pub fn frame(&self, frame: &Received) -> &[u8] {
        let start = frame.index * BUFFER;
        self.buffers.bytes(start..start + frame.len.min(BUFFER))
    }

    /// Gives the oldest frame's buffer back to the MAC.
    pub fn release(&mut self) {
        let i = self.next;
        let wrap = if i == RING - 1 { RX_WRAP } else { 0 };
        self.desc.set_u32(2 * i + 1, 0);
        fence(Ordering::Release);
        self.desc
            .set_u32(2 * i, self.buffers.addr_of(i * BUFFER) as u32 | wrap);
        self.next = (i + 1) % RING;
    }
}

/// The transmit ring: [`RING`] buffers of [`BUFFER`] bytes from `buffers`.
pub struct TxRing {
    desc: DmaMemory,
    buffers: DmaMemory,
    next: usize,
    oldest: usize,
    in_flight: usize,
}

impl TxRing {
    /// Every descriptor the driver's (nothing to send), over `buffers` (at
    /// least [`RING`] x [`BUFFER`] bytes).
    pub fn new(mut desc: DmaMemory, buffers: DmaMemory) -> Self {
        assert!(buffers.len() >= RING * BUFFER, "too few transmit buffers");
        for i in 0..RING {
            let wrap = if i == RING - 1 { TX_WRAP } else { 0 };
            desc.set_u32(2 * i, buffers.addr_of(i * BUFFER) as u32);
            desc.set_u32(2 * i + 1, TX_USED | wrap);
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
        while self.in_flight > 0 && self.desc.u32_at(2 * self.oldest + 1) & TX_USED != 0 {
            self.oldest = (self.oldest + 1) % RING;
            self.in_flight -= 1;
        }
    }

    /// The physical address of the next free buffer, if one is free.
    pub fn free_buffer(&self) -> Option<u64> {
        (self.in_flight < RING).then(|| self.buffers.addr_of(self.next * BUFFER))
    }

    /// The first `len` bytes (at most [`BUFFER`]) of the next free buffer
    /// to fill, if one is free; [`post`](Self::post) hands it to the MAC.
    pub fn buffer_mut(&mut self, len: usize) -> Option<&mut [u8]> {
        let start = self.next * BUFFER;
        (self.in_flight < RING).then(|| self.buffers.bytes_mut(start..start + len.min(BUFFER)))
    }

    /// Hands the MAC the frame of `len` bytes written into the buffer
    /// [`free_buffer`](Self::free_buffer) gave.
    pub fn post(&mut self, len: usize) {
        let i = self.next;
        let wrap = if i == RING - 1 { TX_WRAP } else { 0 };
        fence(Ordering::Release);
        self.desc
            .set_u32(2 * i + 1, (len.min(BUFFER) as u32) | TX_LAST | wrap);
        self.next = (i + 1) % RING;
        self.in_flight += 1;
    }
}

/// One GEM's registers.
pub struct Gem {
    regs: Mmio,
}

impl Gem {
    /// Resets the MAC's state and starts it on the rings `rx` and `tx`,
    /// with the second priority queue of each way parked on `parked` (four
    /// words: two for each way, never available). Frames keep their FCS
    /// stripped; interrupts on every received and sent frame.
    pub fn start(regs: Mmio, rx: &RxRing, tx: &TxRing, parked: &mut DmaMemory) -> Self {
        regs.write(NWCTRL, 0);
        regs.write(IDR, u32::MAX);
        let _ = regs.read(ISR);
        regs.write(TXSTATUS, 0x1ff);
        regs.write(RXSTATUS, 0xf);
        // The parked queue-1 descriptors: receive "owned by the driver",
        // transmit "used", both wrapping onto themselves.
        parked.set_u32(0, RX_OWNED | RX_WRAP);
        parked.set_u32(1, 0);
        parked.set_u32(2, 0);
        parked.set_u32(3, TX_USED | TX_WRAP);
        fence(Ordering::SeqCst);
        regs.write(
            NWCFG,
            nwcfg::MDC_DIV64 | nwcfg::STRIP_FCS | nwcfg::FULL_DUPLEX,
        );
        let dma = regs.read(DMACFG) & !(dmacfg::WIDE | dmacfg::RXBUF_MASK);
        regs.write(DMACFG, dma | ((BUFFER / 64) as u32) << dmacfg::RXBUF_SHIFT);
        regs.write(RXQBASE, rx.desc.addr() as u32);
        regs.write(TXQBASE, tx.desc.addr() as u32);
        regs.write(RX_Q1_BASE, parked.addr() as u32);
        regs.write(TX_Q1_BASE, parked.addr_of(8) as u32);
        // The MAC address QEMU (or firmware) left: written back, which is
        // what makes the address filter use it.
        let (lo, hi) = (regs.read(SPADDR1LO), regs.read(SPADDR1HI));
        regs.write(SPADDR1LO, lo);
        regs.write(SPADDR1HI, hi & 0xffff);
        regs.write(IER, INT_RX_COMPLETE | INT_TX_COMPLETE);
        regs.write(NWCTRL, nwctrl::RUN);
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
        self.regs.write(NWCTRL, nwctrl::RUN | nwctrl::TXSTART);
    }

    /// Tells the MAC that receive buffers were given back (it re-reads the
    /// ring and delivers frames it had to hold back).
    pub fn resume_rx(&self) {
        self.regs.write(NWCTRL, nwctrl::RUN);
    }

    /// Sets the MAC to the line rate and duplex its PHY negotiated.
    pub fn set_link(&self, link: Link) {
        let mut cfg =
            self.regs.read(NWCFG) & !(nwcfg::SPEED100 | nwcfg::GIGABIT | nwcfg::FULL_DUPLEX);
        cfg |= match link.speed {
            Speed::Mb10 => 0,
            Speed::Mb100 => nwcfg::SPEED100,
            Speed::Mb1000 => nwcfg::GIGABIT,
        };
        if link.full_duplex {
            cfg |= nwcfg::FULL_DUPLEX;
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
        let frame = phymntnc::CLAUSE22 | phymntnc::READ | phy_and_reg(phy, reg);
        Ok(self.mdio(frame)? as u16)
    }

    fn write(&mut self, phy: u8, reg: u8, value: u16) -> Result<(), MdioError> {
        let frame = phymntnc::CLAUSE22 | phymntnc::WRITE | phy_and_reg(phy, reg);
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

    fn ring_memory() -> DmaMemory {
        crate::dma_memory::test_memory(2 * RING * 4)
    }

    /// Sets the bits `bits` in descriptor word `i`, as the MAC does.
    fn mac_sets(desc: &mut DmaMemory, i: usize, bits: u32) {
        let w = desc.u32_at(i);
        desc.set_u32(i, w | bits);
    }

    fn buffers() -> DmaMemory {
        crate::dma_memory::test_memory(RING * BUFFER)
    }

    /// What the MAC does with a frame: fill the current buffer, mark it.
    fn mac_receives(ring: &mut RxRing, i: usize, len: u32) {
        ring.desc.set_u32(2 * i + 1, len | RX_SOF | RX_EOF);
        mac_sets(&mut ring.desc, 2 * i, RX_OWNED);
    }

    #[test]
    fn frames_come_out_in_ring_order_and_their_buffers_go_back() {
        let mut rx = RxRing::new(ring_memory(), buffers());
        let rx_buffers = rx.buffers.addr();
        assert_eq!(rx.desc.u32_at(2 * (RING - 1)) & RX_WRAP, RX_WRAP);
        assert_eq!(rx.peek(), None);
        mac_receives(&mut rx, 0, 60);
        mac_receives(&mut rx, 1, 1514);
        assert_eq!(
            rx.peek(),
            Some(Received {
                index: 0,
                addr: rx_buffers,
                len: 60
            })
        );
        rx.release();
        assert_eq!(
            rx.desc.u32_at(0),
            rx_buffers as u32,
            "free again, address kept"
        );
        let second = rx.peek().unwrap();
        assert_eq!((second.index, second.len), (1, 1514));
        assert_eq!(second.addr, rx_buffers + BUFFER as u64);
        rx.release();
        assert_eq!(rx.peek(), None);
    }

    #[test]
    fn a_frame_the_driver_cannot_use_is_handed_out_empty() {
        let mut rx = RxRing::new(ring_memory(), buffers());
        // Only the start of a frame spread over buffers, and a length the
        // buffer cannot hold: both released unread.
        rx.desc.set_u32(1, 100 | RX_SOF);
        mac_sets(&mut rx.desc, 0, RX_OWNED);
        assert_eq!(rx.peek().map(|r| r.len), Some(0));
        rx.release();
        rx.desc.set_u32(3, 0x1fff | RX_SOF | RX_EOF);
        mac_sets(&mut rx.desc, 2, RX_OWNED);
        assert_eq!(rx.peek().map(|r| r.len), Some(0));
    }

    #[test]
    fn sending_fills_the_ring_and_sent_buffers_come_back_in_order() {
        let mut tx = TxRing::new(ring_memory(), buffers());
        let tx_buffers = tx.buffers.addr();
        assert!((0..RING).all(|i| tx.desc.u32_at(2 * i + 1) & TX_USED != 0));
        for n in 0..RING {
            let buffer = tx.free_buffer().expect("room");
            assert_eq!(buffer, tx_buffers + ((n % RING) * BUFFER) as u64);
            tx.post(100 + n);
        }
        assert_eq!(tx.free_buffer(), None, "every buffer is in flight");
        let last = tx.desc.u32_at(2 * (RING - 1) + 1);
        assert_eq!(last, (100 + RING as u32 - 1) | TX_LAST | TX_WRAP);
        // The MAC sends the first two.
        mac_sets(&mut tx.desc, 1, TX_USED);
        mac_sets(&mut tx.desc, 3, TX_USED);
        tx.reclaim();
        assert_eq!(tx.free_buffer(), Some(tx_buffers));
        assert_eq!(tx.in_flight, RING - 2);
    }
}
