//! Command line of the device process.
//!
//! A cluster is its nodes' IPv4 addresses, in rank order: on the command
//! line (`--nodes 10.0.0.1,10.0.0.2`) or in a file (`--cluster FILE`, one
//! address per line, `#` starts a comment). Every engine of a cluster is
//! given the same list and its own rank, and binds its address.

use crate::fabric::Impairment;
use std::net::Ipv4Addr;
use std::path::PathBuf;

/// What to run.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// Serve one QEMU connection as node `rank`'s RDMA device.
    Serve(Options),
    /// Measure host memcpy, raw UDP and engine WRITE throughput for `mib`
    /// MiB messages, print them and their ratios.
    SelfBench {
        /// Message size in MiB.
        mib: u64,
    },
}

/// Options of [`Command::Serve`].
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// vhost-user socket to listen on.
    pub socket: PathBuf,
    /// This node's rank.
    pub rank: u16,
    /// Every node's address, by rank.
    pub nodes: Vec<Ipv4Addr>,
    /// UDP port of every node (4791, RoCEv2's).
    pub port: u16,
    /// Path MTU: payload bytes per packet (256, 512, 1024, 2048 or 4096).
    pub mtu: u32,
    /// What the transmit path does to the link (tests).
    pub impair: Impairment,
    /// Seed of the impairment.
    pub seed: u64,
    /// Log every message and miss.
    pub verbose: bool,
}

/// Usage text.
pub const USAGE: &str = "usage: faultline-rdma-engine --socket PATH --rank R \
(--nodes ADDR,ADDR,... | --cluster FILE) [--port P] [--mtu 1024|4096] \
[--loss F] [--reorder F] [--duplicate F] [--seed S] [--verbose]\n       \
faultline-rdma-engine --self-bench [--mib N]";

/// Reads a cluster file: one IPv4 address per line, in rank order.
pub fn parse_cluster(text: &str) -> Result<Vec<Ipv4Addr>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        out.push(
            line.parse()
                .map_err(|_| format!("line {}: {line:?} is not an IPv4 address", i + 1))?,
        );
    }
    Ok(out)
}

fn parse_list(v: &str) -> Result<Vec<Ipv4Addr>, String> {
    v.split(',')
        .map(|a| {
            a.trim()
                .parse()
                .map_err(|_| format!("--nodes: {a:?} is not an IPv4 address"))
        })
        .collect()
}

/// Parses the arguments (without the program name).
pub fn parse(args: &[String]) -> Result<Command, String> {
    let mut it = args.iter();
    let (mut socket, mut rank, mut nodes) = (None, None, None);
    let (mut port, mut mtu) = (crate::roce::packet::ROCE_PORT, 1024u32);
    let mut impair = Impairment::default();
    let (mut seed, mut verbose, mut bench, mut mib) = (1, false, false, 1);
    while let Some(a) = it.next() {
        let mut val = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        fn num<T: std::str::FromStr>(name: &str, v: String) -> Result<T, String> {
            v.parse().map_err(|_| format!("{name}: bad value {v:?}"))
        }
        match a.as_str() {
            "--socket" => socket = Some(PathBuf::from(val(a)?)),
            "--rank" => rank = Some(num::<u16>(a, val(a)?)?),
            "--nodes" => nodes = Some(parse_list(&val(a)?)?),
            "--cluster" => {
                let path = val(a)?;
                let text =
                    std::fs::read_to_string(&path).map_err(|e| format!("--cluster {path}: {e}"))?;
                nodes = Some(parse_cluster(&text).map_err(|e| format!("{path}: {e}"))?);
            }
            "--port" => port = num::<u16>(a, val(a)?)?,
            "--mtu" => mtu = num::<u32>(a, val(a)?)?,
            "--loss" => impair.loss = num::<f64>(a, val(a)?)?,
            "--reorder" => impair.reorder = num::<f64>(a, val(a)?)?,
            "--duplicate" => impair.duplicate = num::<f64>(a, val(a)?)?,
            "--seed" => seed = num::<u64>(a, val(a)?)?,
            "--mib" => mib = num::<u64>(a, val(a)?)?,
            "--verbose" => verbose = true,
            "--self-bench" => bench = true,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if bench {
        if mib == 0 || mib > 64 {
            return Err("--mib must be 1..=64".into());
        }
        return Ok(Command::SelfBench { mib });
    }
    let socket = socket.ok_or("--socket is required")?;
    let rank = rank.ok_or("--rank is required")?;
    let nodes = nodes.ok_or("--nodes or --cluster is required")?;
    crate::engine::check_addrs(&nodes)?;
    if usize::from(rank) >= nodes.len() {
        return Err(format!(
            "rank {rank} is not below the node count {}",
            nodes.len()
        ));
    }
    if ![256, 512, 1024, 2048, 4096].contains(&mtu) {
        return Err("--mtu must be 256, 512, 1024, 2048 or 4096".into());
    }
    for (name, f) in [
        ("--loss", impair.loss),
        ("--reorder", impair.reorder),
        ("--duplicate", impair.duplicate),
    ] {
        if !(0.0..=0.5).contains(&f) {
            return Err(format!("{name} must be a fraction in 0..=0.5"));
        }
    }
    Ok(Command::Serve(Options {
        socket,
        rank,
        nodes,
        port,
        mtu,
        impair,
        seed,
        verbose,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn a_node_command_line_parses() {
        let c = parse(&args(
            "--socket /tmp/r0 --rank 1 --nodes 10.47.0.1,10.47.0.2 --loss 0.01 --reorder 0.05 --duplicate 0.01 --seed 9 --verbose --mtu 4096",
        ))
        .unwrap();
        let Command::Serve(o) = c else {
            panic!("{c:?}")
        };
        assert_eq!((o.rank, o.nodes.len(), o.seed, o.verbose), (1, 2, 9, true));
        assert_eq!(o.nodes[1], Ipv4Addr::new(10, 47, 0, 2));
        assert_eq!((o.port, o.mtu), (4791, 4096));
        assert_eq!(o.impair.reorder, 0.05);
        assert_eq!(o.socket, PathBuf::from("/tmp/r0"));
        assert_eq!(
            parse(&args("--self-bench")).unwrap(),
            Command::SelfBench { mib: 1 }
        );
    }

    #[test]
    fn a_cluster_file_lists_addresses_in_rank_order() {
        let nodes = parse_cluster("# two hosts\n192.0.2.10\n\n192.0.2.11  # the second\n").unwrap();
        assert_eq!(
            nodes,
            vec![Ipv4Addr::new(192, 0, 2, 10), Ipv4Addr::new(192, 0, 2, 11)]
        );
        assert!(parse_cluster("192.0.2.10\nhost-b\n")
            .unwrap_err()
            .contains("line 2"));
    }

    #[test]
    fn mistakes_are_explained() {
        assert_eq!(
            parse(&args("--rank 0 --nodes 10.0.0.1")).unwrap_err(),
            "--socket is required"
        );
        assert!(
            parse(&args("--socket s --rank 2 --nodes 10.0.0.1,10.0.0.2"))
                .unwrap_err()
                .contains("not below")
        );
        assert!(
            parse(&args("--socket s --rank 0 --nodes 10.0.0.1,10.0.0.1"))
                .unwrap_err()
                .contains("two nodes")
        );
        assert!(parse(&args("--socket s --rank 0 --nodes 10.0.0.x"))
            .unwrap_err()
            .contains("not an IPv4"));
        assert!(parse(&args("--socket s --rank 0 --nodes 10.0.0.1 --loss 2")).is_err());
        assert!(parse(&args("--socket s --rank 0 --nodes 10.0.0.1 --mtu 1500")).is_err());
        assert!(parse(&args("--bogus")).unwrap_err().contains("unknown"));
        assert!(parse(&args("--socket"))
            .unwrap_err()
            .contains("needs a value"));
    }
}
