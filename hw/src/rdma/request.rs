//! How the DMA scheduler's segments become RDMA work requests.
//!
//! The scheduler knows a transfer as a local buffer, a direction and a
//! device address. For the RDMA engine the device address is the other
//! side of the copy: a VA on a remote node, or on this node for a local
//! COPY, packed by [`device_address`]. The target's remote key rides in the
//! transfer's `device_key` and goes into every WRITE/READ request.

use crate::rdma::wire::{Opcode, WorkRequest};
use dma::{Direction, Segment};

const NODE_SHIFT: u32 = 48;

/// The scheduler's device address for `va` on `node` (`None`: this node,
/// which makes the transfer a local COPY); `None` when `va` does not fit
/// the 48 bits of a virtual address (such an address names no memory on
/// any node: it is refused, never cut down to one that does).
pub fn device_address(node: Option<u16>, va: usize) -> Option<u64> {
    let va = va as u64;
    if va >> NODE_SHIFT != 0 {
        return None;
    }
    let tag = node.map_or(0, |n| n as u64 + 1);
    Some((tag << NODE_SHIFT) | va)
}

/// Splits a device address back into node and VA (see [`device_address`]).
pub fn split_device_address(addr: u64) -> (Option<u16>, u64) {
    let tag = addr >> NODE_SHIFT;
    let node = (tag != 0).then(|| (tag - 1) as u16);
    (node, addr & ((1 << NODE_SHIFT) - 1))
}

/// The work request for one scheduler segment (of one piece: the engine
/// declares `max_pieces: 1`).
pub fn segment_request(seg: &Segment, wr_id: u64) -> WorkRequest {
    let (node, remote) = split_device_address(seg.device_addr);
    let va = seg.va().start as u64;
    let len = seg.va().len() as u64;
    let (opcode, node, local_va, remote_va) = match (node, seg.direction) {
        (None, Direction::ToDevice) => (Opcode::Copy, 0, va, remote),
        (None, Direction::FromDevice) => (Opcode::Copy, 0, remote, va),
        (Some(n), Direction::ToDevice) => (Opcode::Write, n, va, remote),
        (Some(n), Direction::FromDevice) => (Opcode::Read, n, va, remote),
    };
    WorkRequest {
        opcode: opcode as u8,
        node,
        wr_id,
        local_va,
        remote_va,
        len,
        // A local COPY needs no key; a WRITE/READ names the target's.
        key: if opcode == Opcode::Copy {
            0
        } else {
            seg.device_key
        },
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dma::{SegmentId, TransferId};

    fn seg(direction: Direction, device_addr: u64) -> Segment {
        Segment {
            id: SegmentId {
                transfer: TransferId(1),
                index: 0,
                attempt: 0,
            },
            direction,
            // One piece of 8 KiB, not the list 0x1000..0x3000 would give.
            #[allow(clippy::single_range_in_vec_init, reason = "a segment's piece list")]
            pieces: vec![0x1000..0x3000],
            device_addr,
            device_key: 0xfeed,
        }
    }

    #[test]
    fn device_addresses_carry_the_node() {
        let a = device_address(Some(3), 0x7f_1234_5000).unwrap();
        assert_eq!(split_device_address(a), (Some(3), 0x7f_1234_5000));
        assert_eq!(
            split_device_address(device_address(None, 0x5000).unwrap()),
            (None, 0x5000)
        );
        assert_eq!(
            split_device_address(device_address(Some(0), 8).unwrap()),
            (Some(0), 8)
        );
    }

    #[test]
    fn an_address_above_48_bits_is_refused_not_cut() {
        assert_eq!(device_address(Some(1), 1 << 48), None);
        assert_eq!(device_address(Some(1), (1 << 50) | 0x1000), None);
        assert_eq!(device_address(None, usize::MAX), None);
        assert!(device_address(Some(1), (1 << 48) - 1).is_some());
    }

    #[test]
    fn segments_become_the_right_work_requests() {
        let w = segment_request(
            &seg(
                Direction::ToDevice,
                device_address(Some(1), 0x9000).unwrap(),
            ),
            5,
        );
        assert_eq!((w.opcode, w.node), (Opcode::Write as u8, 1));
        assert_eq!(
            (w.local_va, w.remote_va, w.len, w.wr_id, w.key),
            (0x1000, 0x9000, 0x2000, 5, 0xfeed)
        );

        let r = segment_request(
            &seg(
                Direction::FromDevice,
                device_address(Some(2), 0x9000).unwrap(),
            ),
            6,
        );
        assert_eq!(
            (r.opcode, r.node, r.local_va, r.remote_va),
            (Opcode::Read as u8, 2, 0x1000, 0x9000)
        );

        // A local copy: the scheduler's buffer is the source when the
        // "device" reads it, the destination when the device writes it.
        let c = segment_request(
            &seg(Direction::ToDevice, device_address(None, 0x9000).unwrap()),
            7,
        );
        assert_eq!(
            (c.opcode, c.local_va, c.remote_va, c.key),
            (Opcode::Copy as u8, 0x1000, 0x9000, 0)
        );
        let c = segment_request(
            &seg(Direction::FromDevice, device_address(None, 0x9000).unwrap()),
            8,
        );
        assert_eq!((c.local_va, c.remote_va), (0x9000, 0x1000));
    }
}
