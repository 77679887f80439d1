//! The Faultline RDMA engine: an emulated, fault-aware DMA engine that moves
//! data between nodes on virtual addresses (the hardware half of the paper's
//! mechanism). The engine itself is a host process (`hw/rdma-engine`) that
//! QEMU attaches over vhost-user; this module is what both halves agree on.
//!
//! The engine appears on the guest's PCI bus as a virtio-net function behind
//! the SMMU. It is told apart from a real NIC by its MAC address, which
//! starts with [`MAC_PREFIX`] and ends with the node's rank.

pub mod exchange;
pub mod request;
pub mod wire;

/// First five bytes of the MAC address the runner gives every engine
/// (locally administered, so it never clashes with a real vendor's).
pub const MAC_PREFIX: [u8; 5] = [0x02, 0xfa, 0x17, 0x0d, 0x4a];

/// The engine's MAC address on node `rank` (ranks above 255 are not
/// supported by the runner).
pub fn mac_for_rank(rank: u8) -> [u8; 6] {
    let p = MAC_PREFIX;
    [p[0], p[1], p[2], p[3], p[4], rank]
}

/// Whether a virtio-net device with this MAC is an RDMA engine.
pub fn is_engine_mac(mac: &[u8; 6]) -> bool {
    mac[..5] == MAC_PREFIX
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_macs_carry_the_rank() {
        let mac = mac_for_rank(3);
        assert!(is_engine_mac(&mac));
        assert_eq!(mac[5], 3);
        assert!(!is_engine_mac(&[0x52, 0x54, 0, 0x12, 0x34, 0x56]));
    }
}
