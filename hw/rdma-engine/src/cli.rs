//! Command line of the device process.

use std::path::PathBuf;

/// What to run.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// Serve one QEMU connection as node `rank`'s RDMA device.
    Serve(Options),
    /// Measure host memcpy and fabric loopback throughput for `mib` MiB
    /// messages, print both and their ratio.
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
    /// Number of nodes.
    pub nodes: u16,
    /// UDP port of rank 0 (rank r listens on base + r).
    pub base_port: u16,
    /// Fraction of outgoing datagrams to drop.
    pub loss: f64,
    /// Seed of the loss generator.
    pub seed: u64,
    /// Log every message and miss.
    pub verbose: bool,
}

/// Usage text.
pub const USAGE: &str =
    "usage: faultline-rdma-engine --socket PATH --rank R --nodes N --base-port P \
[--loss FRACTION] [--seed S] [--verbose]\n       faultline-rdma-engine --self-bench [--mib N]";

/// Parses the arguments (without the program name).
pub fn parse(args: &[String]) -> Result<Command, String> {
    let mut it = args.iter();
    let (mut socket, mut rank, mut nodes, mut base) = (None, None, None, None);
    let (mut loss, mut seed, mut verbose, mut bench, mut mib) = (0.0, 1, false, false, 1);
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
            "--nodes" => nodes = Some(num::<u16>(a, val(a)?)?),
            "--base-port" => base = Some(num::<u16>(a, val(a)?)?),
            "--loss" => loss = num::<f64>(a, val(a)?)?,
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
    let nodes = nodes.ok_or("--nodes is required")?;
    let base_port = base.ok_or("--base-port is required")?;
    if nodes == 0 || rank >= nodes {
        return Err(format!("rank {rank} is not below the node count {nodes}"));
    }
    if u32::from(base_port) + u32::from(nodes) > 65536 {
        return Err("base port + nodes passes 65535".into());
    }
    if !(0.0..=1.0).contains(&loss) {
        return Err("--loss must be a fraction in 0..=1".into());
    }
    Ok(Command::Serve(Options {
        socket,
        rank,
        nodes,
        base_port,
        loss,
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
            "--socket /tmp/r0 --rank 1 --nodes 2 --base-port 7000 --loss 0.1 --seed 9 --verbose",
        ))
        .unwrap();
        let Command::Serve(o) = c else {
            panic!("{c:?}")
        };
        assert_eq!(
            (o.rank, o.nodes, o.base_port, o.seed, o.verbose),
            (1, 2, 7000, 9, true)
        );
        assert_eq!(o.socket, PathBuf::from("/tmp/r0"));
        assert_eq!(
            parse(&args("--self-bench")).unwrap(),
            Command::SelfBench { mib: 1 }
        );
    }

    #[test]
    fn mistakes_are_explained() {
        assert_eq!(
            parse(&args("--rank 0 --nodes 1 --base-port 1")).unwrap_err(),
            "--socket is required"
        );
        assert!(parse(&args("--socket s --rank 2 --nodes 2 --base-port 1"))
            .unwrap_err()
            .contains("not below"));
        assert!(parse(&args("--socket s --rank 0 --nodes 1 --base-port x"))
            .unwrap_err()
            .contains("bad value"));
        assert!(parse(&args(
            "--socket s --rank 0 --nodes 1 --base-port 1 --loss 2"
        ))
        .is_err());
        assert!(parse(&args("--bogus")).unwrap_err().contains("unknown"));
        assert!(parse(&args("--socket"))
            .unwrap_err()
            .contains("needs a value"));
    }
}
