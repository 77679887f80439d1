//! An Ethernet PHY on a management (MDIO, IEEE 802.3 clause 22) bus: find
//! it, let it negotiate, and learn the speed and duplex the MAC must use.
//!
//! Only the registers every clause-22 PHY has are used, so the same code
//! brings up the ZCU102's TI DP83867 and the Marvell PHY QEMU's GEM model
//! answers with:
//!
//! ```text
//!  find():   scan addresses 0-31, ID registers 2/3 not all-ones or zero
//!  start():  BMCR reset (self-clearing) ─ advertise 10/100 (reg 4) and,
//!            if BMSR says it can, 1000 full (reg 9) ─ BMCR restart AN
//!  link():   BMSR read twice (link status latches low) ─ down / negotiating
//!            ─ or up: best mode both ends offer (reg 9 & 10, then 4 & 5)
//! ```
//!
//! Waiting is the caller's: it polls [`Phy::link`] against its own clock,
//! so this module stays plain logic, tested on the host against a model.

/// A clause-22 management bus (the MAC's MDIO controller).
pub trait Mdio {
    /// Register `reg` of the PHY at `phy`; all-ones when nothing answers.
    fn read(&mut self, phy: u8, reg: u8) -> Result<u16, MdioError>;
    /// Writes `value` to register `reg` of the PHY at `phy`.
    fn write(&mut self, phy: u8, reg: u8, value: u16) -> Result<(), MdioError>;
}

/// The management bus did not finish an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MdioError;

/// Why the PHY could not be brought up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PhyError {
    /// No address on the bus answered.
    NotFound,
    /// The bus itself failed.
    Bus,
    /// The PHY stayed in reset.
    ResetStuck,
    /// Both ends negotiated but share no mode.
    NoCommonMode,
}

impl From<MdioError> for PhyError {
    fn from(_: MdioError) -> Self {
        PhyError::Bus
    }
}

const BMCR: u8 = 0;
const BMSR: u8 = 1;
const ID1: u8 = 2;
const ID2: u8 = 3;
const ADVERTISE: u8 = 4;
const PARTNER: u8 = 5;
const CTRL1000: u8 = 9;
const STAT1000: u8 = 10;

/// Fields of BMCR.
mod bmcr {
    pub const RESET: u16 = 1 << 15;
    pub const SPEED100: u16 = 1 << 13;
    pub const AN_ENABLE: u16 = 1 << 12;
    pub const AN_RESTART: u16 = 1 << 9;
    pub const FULL_DUPLEX: u16 = 1 << 8;
    pub const SPEED1000: u16 = 1 << 6;
}

/// Fields of BMSR.
mod bmsr {
    pub const EXTENDED_STATUS: u16 = 1 << 8;
    pub const AN_COMPLETE: u16 = 1 << 5;
    pub const AN_ABLE: u16 = 1 << 3;
    pub const LINK: u16 = 1 << 2;
}

/// Fields of CTRL1000.
mod ctrl1000 {
    /// Register 9: advertise 1000BASE-T full duplex (the GEM does no 1000 half).
    pub const FULL: u16 = 1 << 9;
    pub const HALF: u16 = 1 << 8;
}

/// Register 4/5: 100BASE-TX full and half, 10BASE-T full and half.
const AD_100_FULL: u16 = 1 << 8;
const AD_100_HALF: u16 = 1 << 7;
const AD_10_FULL: u16 = 1 << 6;
const AD_10_HALF: u16 = 1 << 5;
/// Register 4: the IEEE 802.3 selector.
const AD_SELECTOR: u16 = 0x0001;
/// Register 10: the partner offers 1000BASE-T full.
const STAT1000_PARTNER_FULL: u16 = 1 << 11;

/// Reads of BMCR while waiting for the reset bit to clear.
const RESET_POLLS: u32 = 10_000;

/// Line rate of an established link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Speed {
    /// 10BASE-T.
    Mb10,
    /// 100BASE-TX.
    Mb100,
    /// 1000BASE-T.
    Mb1000,
}

impl Speed {
    /// Megabits per second, for messages.
    pub fn mbps(self) -> u32 {
        match self {
            Speed::Mb10 => 10,
            Speed::Mb100 => 100,
            Speed::Mb1000 => 1000,
        }
    }
}

/// An established link: what the MAC must be set to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Link {
    /// Line rate.
    pub speed: Speed,
    /// Full duplex (else half).
    pub full_duplex: bool,
}

/// A PHY found on the bus.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Phy {
    /// Its bus address.
    pub addr: u8,
    /// Its identifier: register 2 in the high half, register 3 in the low.
    pub id: u32,
}

/// The first PHY on the bus (lowest address).
pub fn find(bus: &mut impl Mdio) -> Result<Phy, PhyError> {
    for addr in 0..32 {
        let hi = bus.read(addr, ID1)?;
        let lo = bus.read(addr, ID2)?;
        let id = u32::from(hi) << 16 | u32::from(lo);
        if id != 0 && id != u32::MAX {
            return Ok(Phy { addr, id });
        }
    }
    Err(PhyError::NotFound)
}

impl Phy {
    /// Resets the PHY and starts auto-negotiation, advertising every mode
    /// the GEM can use (10/100 half and full, 1000 full).
    pub fn start(&self, bus: &mut impl Mdio) -> Result<(), PhyError> {
        bus.write(self.addr, BMCR, bmcr::RESET)?;
        let mut polls = 0;
        while bus.read(self.addr, BMCR)? & bmcr::RESET != 0 {
            polls += 1;
            if polls == RESET_POLLS {
                return Err(PhyError::ResetStuck);
            }
        }
        let status = bus.read(self.addr, BMSR)?;
        if status & bmsr::AN_ABLE == 0 {
            // Nothing to negotiate: the link comes up in the mode the
            // PHY is strapped to, which `link` reads from BMCR.
            return Ok(());
        }
        let ten_hundred = AD_100_FULL | AD_100_HALF | AD_10_FULL | AD_10_HALF | AD_SELECTOR;
        let advert = bus.read(self.addr, ADVERTISE)?;
        bus.write(self.addr, ADVERTISE, advert & !0x1ff | ten_hundred)?;
        if status & bmsr::EXTENDED_STATUS != 0 {
            let ctrl = bus.read(self.addr, CTRL1000)?;
            let ctrl = ctrl & !(ctrl1000::FULL | ctrl1000::HALF) | ctrl1000::FULL;
            bus.write(self.addr, CTRL1000, ctrl)?;
        }
        bus.write(self.addr, BMCR, bmcr::AN_ENABLE | bmcr::AN_RESTART)?;
        Ok(())
    }

    /// The link, once it is up and negotiated; `None` while it is not.
    pub fn link(&self, bus: &mut impl Mdio) -> Result<Option<Link>, PhyError> {
        // The link bit latches low: the first read reports a drop since
        // the last one, the second the state now.
        bus.read(self.addr, BMSR)?;
        let status = bus.read(self.addr, BMSR)?;
        if status & bmsr::LINK == 0 {
            return Ok(None);
        }
        if status & bmsr::AN_ABLE == 0 {
            // `start` negotiated nothing: the mode is the one set in BMCR.
            // (Whether negotiation is on is not read back from BMCR: some
            // PHYs, QEMU's among them, clear the enable bit once done.)
            return Ok(Some(forced(bus.read(self.addr, BMCR)?)));
        }
        if status & bmsr::AN_COMPLETE == 0 {
            return Ok(None);
        }
        if status & bmsr::EXTENDED_STATUS != 0 {
            let ours = bus.read(self.addr, CTRL1000)?;
            let theirs = bus.read(self.addr, STAT1000)?;
            if ours & ctrl1000::FULL != 0 && theirs & STAT1000_PARTNER_FULL != 0 {
                return Ok(Some(Link {
                    speed: Speed::Mb1000,
                    full_duplex: true,
                }));
            }
        }
        let common = bus.read(self.addr, ADVERTISE)? & bus.read(self.addr, PARTNER)?;
        let modes = [
            (AD_100_FULL, Speed::Mb100, true),
            (AD_100_HALF, Speed::Mb100, false),
            (AD_10_FULL, Speed::Mb10, true),
            (AD_10_HALF, Speed::Mb10, false),
        ];
        modes
            .iter()
            .find(|(bit, _, _)| common & bit != 0)
            .map(|&(_, speed, full_duplex)| Some(Link { speed, full_duplex }))
            .ok_or(PhyError::NoCommonMode)
    }
}

/// The mode a PHY without auto-negotiation was set to.
fn forced(control: u16) -> Link {
    let speed = match (
        control & bmcr::SPEED1000 != 0,
        control & bmcr::SPEED100 != 0,
    ) {
        (true, false) => Speed::Mb1000,
        (false, true) => Speed::Mb100,
        _ => Speed::Mb10,
    };
    Link {
        speed,
        full_duplex: control & bmcr::FULL_DUPLEX != 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A register-level PHY: reset self-clears, restarting negotiation
    /// completes it at once (when `partner` is plugged in), and the link
    /// bit latches low as on real parts.
    struct ModelPhy {
        addr: u8,
        regs: [u16; 32],
        /// What the far end advertises: (register 5, register 10), or
        /// `None` with no cable.
        partner: Option<(u16, u16)>,
        link_dropped: bool,
        stuck_in_reset: bool,
    }

    impl ModelPhy {
        fn new(addr: u8, partner: Option<(u16, u16)>) -> Self {
            let mut regs = [0; 32];
            regs[ID1 as usize] = 0x2000;
            regs[ID2 as usize] = 0xa231;
            regs[BMSR as usize] = 0x7949; // 10/100 abilities, AN able, extended status
            regs[ADVERTISE as usize] = 0x0001;
            Self {
                addr,
                regs,
                partner,
                link_dropped: false,
                stuck_in_reset: false,
            }
        }
    }

    impl Mdio for ModelPhy {
        fn read(&mut self, phy: u8, reg: u8) -> Result<u16, MdioError> {
            if phy != self.addr {
                return Ok(0xffff);
            }
            let mut value = self.regs[reg as usize];
            if reg == BMSR && core::mem::take(&mut self.link_dropped) {
                value &= !bmsr::LINK;
            }
            Ok(value)
        }

        fn write(&mut self, phy: u8, reg: u8, value: u16) -> Result<(), MdioError> {
            if phy != self.addr {
                return Ok(());
            }
            let mut value = value;
            if reg == BMCR {
                if value & bmcr::RESET != 0 && !self.stuck_in_reset {
                    value &= !bmcr::RESET;
                }
                if value & bmcr::AN_RESTART != 0 {
                    // Like QEMU's model, which reads back neither bit.
                    value &= !(bmcr::AN_RESTART | bmcr::AN_ENABLE);
                    if let Some((abilities, giga)) = self.partner {
                        self.regs[PARTNER as usize] = abilities;
                        self.regs[STAT1000 as usize] = giga;
                        self.regs[BMSR as usize] |= bmsr::AN_COMPLETE | bmsr::LINK;
                    }
                }
            }
            self.regs[reg as usize] = value;
            Ok(())
        }
    }

    /// A gigabit partner, and one that offers only 100 Mb/s.
    const GIGABIT: (u16, u16) = (0x01e1, STAT1000_PARTNER_FULL);
    const FAST_ONLY: (u16, u16) = (AD_100_FULL | AD_100_HALF | AD_SELECTOR, 0);

    #[test]
    fn the_phy_is_found_at_whatever_address_it_is_strapped_to() {
        let mut bus = ModelPhy::new(12, Some(GIGABIT));
        assert_eq!(
            find(&mut bus),
            Ok(Phy {
                addr: 12,
                id: 0x2000_a231
            })
        );
        struct Empty;
        impl Mdio for Empty {
            fn read(&mut self, _: u8, _: u8) -> Result<u16, MdioError> {
                Ok(0xffff)
            }
            fn write(&mut self, _: u8, _: u8, _: u16) -> Result<(), MdioError> {
                Ok(())
            }
        }
        assert_eq!(find(&mut Empty), Err(PhyError::NotFound));
    }

    #[test]
    fn a_gigabit_partner_gives_a_gigabit_full_duplex_link() {
        let mut bus = ModelPhy::new(0, Some(GIGABIT));
        let phy = find(&mut bus).unwrap();
        assert_eq!(phy.link(&mut bus), Ok(None), "no link before negotiation");
        phy.start(&mut bus).unwrap();
        assert_eq!(bus.regs[CTRL1000 as usize] & ctrl1000::FULL, ctrl1000::FULL);
        assert_eq!(
            phy.link(&mut bus),
            Ok(Some(Link {
                speed: Speed::Mb1000,
                full_duplex: true
            }))
        );
    }

    #[test]
    fn the_best_mode_both_ends_offer_is_chosen() {
        let mut bus = ModelPhy::new(3, Some(FAST_ONLY));
        let phy = find(&mut bus).unwrap();
        phy.start(&mut bus).unwrap();
        assert_eq!(
            phy.link(&mut bus),
            Ok(Some(Link {
                speed: Speed::Mb100,
                full_duplex: true
            }))
        );
        let mut bus = ModelPhy::new(3, Some((0x0400, 0)));
        phy.start(&mut bus).unwrap();
        assert_eq!(phy.link(&mut bus), Err(PhyError::NoCommonMode));
    }

    #[test]
    fn no_cable_means_no_link_and_a_drop_is_not_missed() {
        let mut bus = ModelPhy::new(0, None);
        let phy = find(&mut bus).unwrap();
        phy.start(&mut bus).unwrap();
        assert_eq!(phy.link(&mut bus), Ok(None));
        let mut bus = ModelPhy::new(0, Some(GIGABIT));
        phy.start(&mut bus).unwrap();
        // A drop latched since the last read is read past: the second read
        // says the link is back, so it is up now.
        bus.link_dropped = true;
        assert!(phy.link(&mut bus).unwrap().is_some());
        bus.regs[BMSR as usize] &= !bmsr::LINK;
        assert_eq!(phy.link(&mut bus), Ok(None));
    }

    #[test]
    fn a_phy_stuck_in_reset_is_reported() {
        let mut bus = ModelPhy::new(0, Some(GIGABIT));
        bus.stuck_in_reset = true;
        let phy = find(&mut bus).unwrap();
        assert_eq!(phy.start(&mut bus), Err(PhyError::ResetStuck));
    }

    #[test]
    fn a_phy_without_negotiation_reports_its_strapped_mode() {
        let mut bus = ModelPhy::new(0, None);
        bus.regs[BMSR as usize] = bmsr::LINK;
        let phy = find(&mut bus).unwrap();
        phy.start(&mut bus).unwrap();
        assert_eq!(bus.regs[ADVERTISE as usize], 0x0001, "nothing advertised");
        // Strapped (after the reset) to 100 Mb/s full duplex.
        bus.regs[BMCR as usize] = bmcr::SPEED100 | bmcr::FULL_DUPLEX;
        assert_eq!(
            phy.link(&mut bus),
            Ok(Some(Link {
                speed: Speed::Mb100,
                full_duplex: true
            }))
        );
    }
}
