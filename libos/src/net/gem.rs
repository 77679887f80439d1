//! The ZynqMP's Cadence GEM as smoltcp's device: the rings and buffers of
//! `hw::gem` in identity-mapped frames (the MAC moves physical addresses,
//! and RAM is identity-mapped, so a buffer's address is also its place in
//! memory), frames read and written in place.
//!
//! ```text
//!  receive(): GEM placed a frame ──▶ RxToken(buffer) ──▶ smoltcp
//!             (the buffer goes back to the GEM on the next receive)
//!  transmit(): a free buffer ──▶ TxToken ──▶ smoltcp writes the frame
//!              ──▶ TxRing::post ──▶ Gem::start_tx
//! ```

use super::{NetError, RxToken};
use crate::mm;
use crate::mm::device_memory::DeviceFrames;
use crate::time;
use core::time::Duration;
use hw::dma_memory::{DmaAllocator, DmaMemory};
use hw::gem::{Gem, RxRing, TxRing, BUFFER, RING};
use hw::phy::{self, Link, Phy};
use smoltcp::phy as netdev;

/// The GEM, its rings and buffers.
pub struct GemNic {
    gem: Gem,
    rx: RxRing,
    tx: TxRing,
    /// A frame handed to smoltcp whose buffer goes back on the next receive.
    held: bool,
}

/// Room to send one frame on the GEM.
pub struct GemTx<'a> {
    gem: &'a Gem,
    tx: &'a mut TxRing,
}

/// Finds the PHY on the GEM's management port, has it negotiate, and
/// waits (at most [`LINK_WAIT`]) for the link.
fn bring_up_link(gem: &mut Gem) -> Result<(Phy, Link), NetError> {
    let phy = phy::find(gem).map_err(NetError::Phy)?;
    phy.start(gem).map_err(NetError::Phy)?;
    let deadline = time::uptime() + LINK_WAIT;
    loop {
        if let Some(link) = phy.link(gem).map_err(NetError::Phy)? {
            return Ok((phy, link));
        }
        if time::uptime() >= deadline {
            return Err(NetError::NoLink);
        }
        time::sleep(Duration::from_millis(10));
    }
}

/// `bytes` of device memory the kernel keeps for good (the MAC owns it as
/// long as the system runs).
fn frames(bytes: usize) -> Result<DmaMemory, NetError> {
    DeviceFrames
        .alloc(bytes, mm::FRAME_SIZE)
        .ok_or(NetError::OutOfMemory)
}

/// How long the PHY gets to negotiate a link: clause 28 negotiation takes
/// about three seconds on a real cable.
const LINK_WAIT: Duration = Duration::from_secs(5);

impl GemNic {
    /// Starts the GEM whose registers are at `base` on fresh rings, with
    /// station address `mac` (else the one firmware left), and brings up
    /// its PHY: the link it negotiated sets the MAC's speed.
    pub fn open(base: usize, mac: Option<[u8; 6]>) -> Result<(Self, Phy, Link), NetError> {
        // Two words per descriptor; the parked queues take four words.
        let rx = RxRing::new(frames(2 * RING * 4)?, frames(RING * BUFFER)?);
        let tx = TxRing::new(frames(2 * RING * 4)?, frames(RING * BUFFER)?);
        let mut parked = frames(4 * 4)?;
        // SAFETY: the board names the GEM's register block, inside a device
        // window the kernel maps as device memory; nothing else drives it.
        let regs = unsafe { hw::mmio::Mmio::new(base, 0x1000) };
        let mut gem = Gem::start(regs, &rx, &tx, &mut parked);
        if let Some(mac) = mac {
            gem.set_mac(mac);
        }
        let (phy, link) = bring_up_link(&mut gem)?;
        gem.set_link(link);
        let nic = Self {
            gem,
            rx,
            tx,
            held: false,
        };
        Ok((nic, phy, link))
    }

    /// The station address.
    pub fn mac(&self) -> [u8; 6] {
        self.gem.mac()
    }

    /// Acknowledges the interrupt (the rings are drained after this).
    pub fn ack_interrupt(&mut self) {
        self.gem.acknowledge_interrupt();
    }

    /// Gives the buffer of the frame smoltcp last read back to the MAC.
    fn release_held(&mut self) {
        if core::mem::take(&mut self.held) {
            self.rx.release();
            self.gem.resume_rx();
        }
    }

    /// The next received frame and room to answer it.
    pub fn receive(&mut self) -> Option<(RxToken<'_>, GemTx<'_>)> {
        self.release_held();
        self.tx.reclaim();
        loop {
            let frame = self.rx.peek()?;
            if frame.len == 0 {
                log::warn!("gem: a frame spread over buffers was dropped");
                self.rx.release();
                self.gem.resume_rx();
                continue;
            }
            self.held = true;
            // The MAC does not write the buffer again before `release`,
            // which happens only on the next receive, after smoltcp has
            // consumed this token.
            let bytes = self.rx.frame(&frame);
            return Some((
                RxToken(bytes),
                GemTx {
                    gem: &self.gem,
                    tx: &mut self.tx,
                },
            ));
        }
    }

    /// Room to send one frame, if a buffer is free.
    pub fn transmit(&mut self) -> Option<GemTx<'_>> {
        self.tx.reclaim();
        self.tx.free_buffer()?;
        Some(GemTx {
            gem: &self.gem,
            tx: &mut self.tx,
        })
    }
}

impl netdev::TxToken for GemTx<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let len = len.min(BUFFER);
        // The MAC does not read the buffer until `post` hands it over below.
        let buffer = self
            .tx
            .buffer_mut(len)
            .expect("transmit() checked for a free buffer");
        let r = f(buffer);
        self.tx.post(len);
        self.gem.start_tx();
        r
    }
}
