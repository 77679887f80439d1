//! RoCEv2, the RDMA fabric Linux's own stack speaks: the packet format
//! ([`packet`]) and the IPv4/UDP headers it travels in ([`ipv4`]).

pub mod ipv4;
pub mod packet;
