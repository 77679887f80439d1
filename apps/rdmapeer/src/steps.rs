//! What the app's arguments ask for: steps separated by `,`, each a name,
//! perhaps an address and a test, and ibv_rc_pingpong's or perftest's own
//! flags for the sizes. `on R STEP` runs the step only on node R (every
//! node of a cluster gets the same arguments).

use crate::{perftest, pingpong};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// One thing to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Wait for an `ibv_rc_pingpong` client.
    PingpongServer(pingpong::Options),
    /// Be the client of an `ibv_rc_pingpong` server at this address.
    PingpongClient([u8; 4], pingpong::Options),
    /// Serve `verbs_probe`'s commands (faults and keys across the link).
    VerbsTarget,
    /// Wait for an `ib_write_bw` or `ib_read_bw` client.
    PerftestServer(perftest::Options),
    /// Be the client of an `ib_write_bw` or `ib_read_bw` server.
    PerftestClient([u8; 4], perftest::Options),
}

/// The flags both programs share: `-s SIZE -n ITERS -m MTU [-c]`.
struct Flags {
    size: Option<usize>,
    iters: Option<u32>,
    mtu: Option<u32>,
    check: bool,
}

fn flags(words: &[&str], max_size: usize) -> Result<Flags, String> {
    let mut f = Flags {
        size: None,
        iters: None,
        mtu: None,
        check: false,
    };
    let mut it = words.iter();
    while let Some(&flag) = it.next() {
        if flag == "-c" {
            f.check = true;
            continue;
        }
        let value = it
            .next()
            .and_then(|v| v.parse::<u32>().ok())
            .ok_or_else(|| format!("{flag} needs a number"))?;
        match flag {
            "-s" if (1..=max_size as u32).contains(&value) => f.size = Some(value as usize),
            "-s" => return Err(format!("-s: 1 to {max_size} bytes")),
            "-n" if value > 0 => f.iters = Some(value),
            "-m" if [256, 512, 1024, 2048, 4096].contains(&value) => f.mtu = Some(value),
            _ => return Err(format!("{flag} {value}: not an option this step takes")),
        }
    }
    Ok(f)
}

/// Reads `a.b.c.d`.
pub fn parse_ipv4(text: &str) -> Option<[u8; 4]> {
    let mut out = [0u8; 4];
    let mut parts = text.split('.');
    for o in out.iter_mut() {
        *o = parts.next()?.parse().ok()?;
    }
    parts.next().is_none().then_some(out)
}

fn address<'a>(name: &str, rest: &'a [&'a str]) -> Result<([u8; 4], &'a [&'a str]), String> {
    let (a, rest) = rest
        .split_first()
        .ok_or_else(|| format!("{name} needs the server's IPv4 address"))?;
    let addr = parse_ipv4(a).ok_or_else(|| format!("{a}: not an IPv4 address"))?;
    Ok((addr, rest))
}

fn perftest_opts(name: &str, rest: &[&str]) -> Result<perftest::Options, String> {
    let (test, rest) = match rest.split_first() {
        Some((&"write", rest)) => (perftest::Test::WriteBw, rest),
        Some((&"read", rest)) => (perftest::Test::ReadBw, rest),
        Some((&"send", rest)) => (perftest::Test::SendBw, rest),
        Some((&"lat", rest)) => (perftest::Test::WriteLat, rest),
        _ => return Err(format!("{name} needs the test: write, read, send or lat")),
    };
    // The engine's largest SEND bounds ib_send_bw's message (give the
    // Linux side -s too: its default is 64 KiB).
    let max = if test == perftest::Test::SendBw {
        4096
    } else {
        8 << 20
    };
    let f = flags(rest, max)?;
    // perftest's defaults: 64 KiB x 5000 for bandwidth, 2 B x 1000 for
    // latency.
    let (size, iters) = match test {
        perftest::Test::WriteLat => (2, 1000),
        perftest::Test::SendBw => (65536, 1000),
        _ => (65536, 5000),
    };
    Ok(perftest::Options {
        test,
        size: f.size.unwrap_or(size),
        iters: f.iters.unwrap_or(iters),
        // What a RoCE port on this link reports as its active MTU (perftest
        // offers it; both ends take the smaller): 4096 on the cluster's
        // 9000-byte link, as Linux's rxe there does. With 1024 a Linux
        // sender made four times the packets, each on its emulated CPU.
        mtu: f.mtu.unwrap_or(4096),
    })
}

fn pingpong_opts(rest: &[&str]) -> Result<pingpong::Options, String> {
    // The engine's largest SEND bounds the message.
    let f = flags(rest, 64 << 10)?;
    let d = pingpong::Options::default();
    Ok(pingpong::Options {
        size: f.size.unwrap_or(d.size),
        iters: f.iters.unwrap_or(d.iters),
        mtu: f.mtu.unwrap_or(d.mtu),
        check: f.check,
    })
}

/// Parses the steps, separated by `,`, each with the node it is for
/// (`None`: every node).
pub fn parse(words: &[&str]) -> Result<Vec<(Option<u16>, Step)>, String> {
    let mut steps = Vec::new();
    for step in words.split(|w| *w == ",") {
        let (node, step) = match step {
            ["on", r, rest @ ..] => {
                let r = r
                    .parse()
                    .map_err(|_| format!("on {r}: not a node number"))?;
                (Some(r), rest)
            }
            _ => (None, step),
        };
        let Some((&name, rest)) = step.split_first() else {
            continue;
        };
        steps.push((
            node,
            match name {
                "pingpong-server" => Step::PingpongServer(pingpong_opts(rest)?),
                "pingpong-client" => {
                    let (addr, rest) = address(name, rest)?;
                    Step::PingpongClient(addr, pingpong_opts(rest)?)
                }
                "verbs-target" if rest.is_empty() => Step::VerbsTarget,
                "perftest-server" => Step::PerftestServer(perftest_opts(name, rest)?),
                "perftest-client" => {
                    let (addr, rest) = address(name, rest)?;
                    Step::PerftestClient(addr, perftest_opts(name, rest)?)
                }
                other => return Err(format!("unknown step {other:?}")),
            },
        ));
    }
    if steps.is_empty() {
        return Err(
            "no step given (pingpong-server, pingpong-client ADDR, verbs-target, \
                    perftest-server TEST, perftest-client ADDR TEST)"
                .into(),
        );
    }
    Ok(steps)
}
