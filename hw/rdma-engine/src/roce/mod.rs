//! RoCEv2, the RDMA fabric Linux's own stack speaks: the packet format
//! ([`packet`]) and the Reliable Connection queue pairs built on it.

pub mod packet;
