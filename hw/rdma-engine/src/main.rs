//! `faultline-rdma-engine`: the host process behind each node's RDMA device.
//! (Being built: see hw/rdma-engine/README in the next commits.)

fn main() {
    eprintln!("faultline-rdma-engine: not built yet");
    std::process::exit(2);
}
