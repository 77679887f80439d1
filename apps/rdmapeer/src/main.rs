//! `rdmapeer`: the Faultline end of Linux's RDMA test programs, so that a
//! Linux host with soft-RoCE (`rdma_rxe`) or a RoCE NIC runs them unchanged
//! against a Faultline node.
//!
//! ```text
//!  ./run-qemu.sh rdmapeer --nodes 1 --linux-peer -- pingpong-server -n 100 -c
//!  rdmapeer STEP [OPTIONS] [, STEP [OPTIONS]]...
//!    pingpong-server          wait for `ibv_rc_pingpong -g <idx> <this node>`
//!    pingpong-client ADDR     be the client of `ibv_rc_pingpong -g <idx>` on ADDR
//!    verbs-target             serve `verbs_probe` (image/linux-rxe/verbs_probe.c)
//!    options (as given to ibv_rc_pingpong): -s SIZE  -n ITERS  -m MTU  -c
//! ```
//!
//! The out-of-band exchange goes over TCP on the node's NIC (QEMU user
//! networking; the runner forwards the node's address to it); the RoCEv2
//! packets go through the node's RDMA engine. Each step prints one line,
//! `ok …` or `FAIL …`; the app exits 1 if any step failed.
#![no_std]
#![no_main]

extern crate alloc;

mod pingpong;
mod target;
mod tcp;

use alloc::vec::Vec;
use libos::println;

libos::main!(main);

/// One thing to do, parsed from the arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// Wait for an `ibv_rc_pingpong` client.
    PingpongServer(pingpong::Options),
    /// Be the client of an `ibv_rc_pingpong` server at this address.
    PingpongClient([u8; 4], pingpong::Options),
    /// Serve `verbs_probe`'s commands (faults and keys across the link).
    VerbsTarget,
}

/// Reads `a.b.c.d`.
fn parse_ipv4(text: &str) -> Option<[u8; 4]> {
    let mut out = [0u8; 4];
    let mut parts = text.split('.');
    for o in out.iter_mut() {
        *o = parts.next()?.parse().ok()?;
    }
    parts.next().is_none().then_some(out)
}

/// Parses the steps, separated by `,`.
fn parse_steps(words: &[&str]) -> Result<Vec<Step>, alloc::string::String> {
    let mut steps = Vec::new();
    for step in words.split(|w| *w == ",") {
        let Some((&name, rest)) = step.split_first() else {
            continue;
        };
        let (addr, rest) = match name {
            "pingpong-client" => {
                let Some((a, rest)) = rest.split_first() else {
                    return Err("pingpong-client needs the server's IPv4 address".into());
                };
                let addr =
                    parse_ipv4(a).ok_or_else(|| alloc::format!("{a}: not an IPv4 address"))?;
                (Some(addr), rest)
            }
            "pingpong-server" => (None, rest),
            "verbs-target" if rest.is_empty() => {
                steps.push(Step::VerbsTarget);
                continue;
            }
            other => return Err(alloc::format!("unknown step {other:?}")),
        };
        let mut opts = pingpong::Options::default();
        let mut it = rest.iter();
        while let Some(&flag) = it.next() {
            if flag == "-c" {
                opts.check = true;
                continue;
            }
            let value = it
                .next()
                .and_then(|v| v.parse::<u32>().ok())
                .ok_or_else(|| alloc::format!("{flag} needs a number"))?;
            match flag {
                "-s" if (1..=4096).contains(&value) => opts.size = value as usize,
                "-s" => return Err("-s: 1 to 4096 bytes (the engine's largest SEND)".into()),
                "-n" if value > 0 => opts.iters = value,
                "-m" if [256, 512, 1024, 2048, 4096].contains(&value) => opts.mtu = value,
                _ => {
                    return Err(alloc::format!(
                        "{flag} {value}: not an option this step takes"
                    ))
                }
            }
        }
        steps.push(match addr {
            Some(a) => Step::PingpongClient(a, opts),
            None => Step::PingpongServer(opts),
        });
    }
    if steps.is_empty() {
        return Err("no step given (pingpong-server, pingpong-client ADDR, verbs-target)".into());
    }
    Ok(steps)
}

fn main(args: libos::Args) -> i32 {
    let words: Vec<&str> = args.iter().collect();
    let steps = match parse_steps(&words) {
        Ok(s) => s,
        Err(e) => {
            println!("rdmapeer: {e}");
            return 2;
        }
    };
    let rdma = match libos::rdma::open() {
        Ok(r) => r,
        Err(e) => {
            println!("rdmapeer: no RDMA engine: {e:?}");
            return 1;
        }
    };
    let mut net = match libos::net::init() {
        Ok(n) => n,
        Err(e) => {
            println!("rdmapeer: no network for the out-of-band exchange: {e:?}");
            return 1;
        }
    };
    let a = rdma.address();
    println!(
        "rdmapeer: RoCEv2 GID ::ffff:{}.{}.{}.{}",
        a[0], a[1], a[2], a[3]
    );
    let mut failed = 0;
    for step in steps {
        let (what, result) = match step {
            Step::PingpongServer(o) => ("pingpong-server", pingpong::serve(&rdma, &mut net, &o)),
            Step::PingpongClient(addr, o) => (
                "pingpong-client",
                pingpong::client(&rdma, &mut net, addr, &o),
            ),
            Step::VerbsTarget => {
                match target::serve(&rdma, &mut net) {
                    Ok(n) => println!("ok verbs-target: {n} commands served"),
                    Err(e) => {
                        failed += 1;
                        println!("FAIL verbs-target: {e}");
                    }
                }
                continue;
            }
        };
        match result {
            Ok(r) => println!(
                "ok {what}: {} exchanges with {}.{}.{}.{}, every byte checked, {} us per round trip",
                r.iters, r.peer[0], r.peer[1], r.peer[2], r.peer[3], r.us_per_iter
            ),
            Err(e) => {
                failed += 1;
                println!("FAIL {what}: {e}");
            }
        }
    }
    println!("rdmapeer: {} failed", failed);
    i32::from(failed > 0)
}
