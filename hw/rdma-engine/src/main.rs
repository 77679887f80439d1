//! `faultline-rdma-engine`: the host process behind each node's RDMA device.
//! Listens on a vhost-user socket, serves one QEMU connection, talks RoCEv2
//! with the other nodes' engines, exits 0 when QEMU disconnects.

use faultline_rdma_engine::cli::{self, Command, Options};
use faultline_rdma_engine::device::Device;
use faultline_rdma_engine::engine::{Config, Engine};
use faultline_rdma_engine::fabric::{Fabric, Impair};
use faultline_rdma_engine::frontend::{Frontend, Shared};
use faultline_rdma_engine::selfbench;
use faultline_rdma_engine::stats::Stats;
use std::os::unix::net::UnixListener;
use std::sync::atomic::Ordering;
use std::sync::Arc;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match cli::parse(&args) {
        Ok(Command::SelfBench { mib }) => selfbench::run(mib),
        Ok(Command::Serve(o)) => {
            if let Err(e) = serve(&o) {
                eprintln!("rdma-engine {}: {e}", o.rank);
                std::process::exit(1);
            }
        }
        Err(e) => {
            eprintln!("rdma-engine: {e}\n{}", cli::USAGE);
            std::process::exit(2);
        }
    }
}

fn serve(o: &Options) -> std::io::Result<()> {
    let stats = Arc::new(Stats::default());
    let fabric = Fabric::bind(
        o.nodes[usize::from(o.rank)],
        o.port,
        Impair::new(o.impair, o.seed),
        stats.clone(),
    )?;
    // A socket file left by an earlier run would make bind fail.
    if std::fs::symlink_metadata(&o.socket).is_ok_and(|m| {
        use std::os::unix::fs::FileTypeExt;
        m.file_type().is_socket()
    }) {
        std::fs::remove_file(&o.socket)?;
    }
    let shared = Arc::new(Shared::new(stats.clone())?);
    let listener = UnixListener::bind(&o.socket)
        .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", o.socket.display())))?;
    eprintln!(
        "rdma-engine {}: RoCEv2 on {}:{}, MTU {}",
        o.rank,
        o.nodes[usize::from(o.rank)],
        o.port,
        o.mtu
    );
    eprintln!(
        "rdma-engine {}: listening on {}",
        o.rank,
        o.socket.display()
    );
    let (sock, _) = listener.accept()?;
    drop(listener);
    let _ = std::fs::remove_file(&o.socket);
    let cfg = Config {
        mtu: o.mtu,
        port: o.port,
        ..Config::default()
    };
    let mut device = Device::new(
        shared.clone(),
        Engine::new(o.rank, o.nodes.clone(), cfg),
        fabric,
        o.rank,
        o.verbose,
    );
    let engine_thread = std::thread::Builder::new()
        .name("engine".into())
        .spawn(move || {
            device.run();
            (device.engine().counters, device.shares.summary())
        })?;
    let result = Frontend::new(sock, shared.clone(), o.rank, o.verbose).serve();
    shared.done.store(true, Ordering::Release);
    shared.changed();
    let (counters, shares) = engine_thread
        .join()
        .map_err(|_| std::io::Error::other("engine thread failed"))?;
    eprintln!("rdma-engine {}: {}", o.rank, stats.summary(&counters));
    if !shares.is_empty() {
        eprintln!("rdma-engine {}: {shares}", o.rank);
    }
    result.map_err(|e| std::io::Error::new(e.kind(), format!("vhost-user connection: {e}")))
}
