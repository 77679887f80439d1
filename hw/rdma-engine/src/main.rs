//! `faultline-rdma-engine`: the host process behind each node's RDMA device.
//! Listens on a vhost-user socket, serves one QEMU connection, talks to the
//! other nodes' engines over UDP, exits 0 when QEMU disconnects.

use faultline_rdma_engine::cli::{self, Command, Options};
use faultline_rdma_engine::device::Device;
use faultline_rdma_engine::engine::{Config, Engine};
use faultline_rdma_engine::export;
use faultline_rdma_engine::fabric::{Fabric, Loss};
use faultline_rdma_engine::frontend::{Frontend, Shared};
use faultline_rdma_engine::peers::Peers;
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
    let peers = Fabric::loopback_peers(o.base_port, o.nodes);
    let fabric =
        Fabric::bind(o.rank, peers, Loss::new(o.loss, o.seed), stats.clone()).map_err(|e| {
            std::io::Error::new(e.kind(), format!("UDP port {}: {e}", o.base_port + o.rank))
        })?;
    // A socket file left by an earlier run would make bind fail.
    if std::fs::symlink_metadata(&o.socket).is_ok_and(|m| {
        use std::os::unix::fs::FileTypeExt;
        m.file_type().is_socket()
    }) {
        std::fs::remove_file(&o.socket)?;
    }
    // Peers map our memory through `<dir>/fabric-<rank>.sock` (the direct
    // data path); without it, they and we use datagrams.
    let shared = Arc::new(Shared::new(stats.clone())?);
    let dir = o
        .socket
        .parent()
        .map(|d| d.to_path_buf())
        .unwrap_or_else(|| ".".into());
    let dir = if dir.as_os_str().is_empty() {
        ".".into()
    } else {
        dir
    };
    let export_path = export::socket_path(&dir, o.rank);
    // Only engines given the same secret (the image tool's, in the
    // environment) may map our memory. Without one, a random secret of our
    // own: nobody can, and peers use datagrams.
    let secret = match export::Secret::from_env() {
        Some(s) => s,
        None => {
            eprintln!(
                "rdma-engine {}: no cluster secret in {} (64 hex digits); memory not shared, datagrams only",
                o.rank,
                export::SECRET_ENV
            );
            export::Secret::random()?
        }
    };
    let server =
        match export::Server::start(export_path.clone(), shared.exports.clone(), secret.clone()) {
            Ok(s) => Some(s),
            Err(e) => {
                eprintln!(
                    "rdma-engine {}: cannot export memory on {} ({e}); datagrams only",
                    o.rank,
                    export_path.display()
                );
                None
            }
        };
    let peers = server
        .as_ref()
        .map(|_| Peers::new(dir.clone(), o.rank, secret.clone()));
    let listener = UnixListener::bind(&o.socket)
        .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", o.socket.display())))?;
    eprintln!(
        "rdma-engine {}: listening on {}",
        o.rank,
        o.socket.display()
    );
    let (sock, _) = listener.accept()?;
    drop(listener);
    let _ = std::fs::remove_file(&o.socket);
    let mut device = Device::new(
        shared.clone(),
        Engine::new(o.rank, o.nodes, Config::default()),
        fabric,
        peers,
        o.rank,
        o.verbose,
    );
    let engine_thread = std::thread::Builder::new()
        .name("engine".into())
        .spawn(move || {
            device.run();
            device.engine().counters
        })?;
    let result = Frontend::new(sock, shared.clone(), o.rank, o.verbose).serve();
    shared.done.store(true, Ordering::Release);
    shared.changed();
    let counters = engine_thread
        .join()
        .map_err(|_| std::io::Error::other("engine thread failed"))?;
    stats
        .retransmits
        .store(counters.retransmits, Ordering::Relaxed);
    stats.bytes.store(counters.bytes, Ordering::Relaxed);
    stats
        .forged_src
        .store(counters.forged_src, Ordering::Relaxed);
    stats.malformed.store(counters.malformed, Ordering::Relaxed);
    stats
        .unknown_xfer
        .store(counters.unknown_xfer, Ordering::Relaxed);
    stats
        .over_bounds
        .store(counters.over_bounds, Ordering::Relaxed);
    stats.forgotten.store(counters.forgotten, Ordering::Relaxed);
    stats.refused.store(counters.refused, Ordering::Relaxed);
    if let Some(s) = &server {
        stats.export_refused.store(s.refused(), Ordering::Relaxed);
    }
    drop(server);
    eprintln!("rdma-engine {}: {}", o.rank, stats.summary());
    result.map_err(|e| std::io::Error::new(e.kind(), format!("vhost-user connection: {e}")))
}
