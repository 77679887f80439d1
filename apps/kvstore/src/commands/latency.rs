//! `LATENCY HISTOGRAM|LATEST|HISTORY|RESET|GRAPH|DOCTOR|HELP`: reading
//! the commands' latency histograms and the latency monitor's events
//! (`kvstore::latency`).

use alloc::vec::Vec;

use super::exec::Exec;
use super::stats::CommandCounters;
use super::table;
use crate::resp::Reply;

/// `LATENCY HISTOGRAM [command ...]`: for each command named (a container
/// such as `client` names its subcommands; unknown names are skipped), or
/// every command if none is, that ran since `CONFIG RESETSTAT` with
/// `latency-tracking` on: its calls and the cumulative distribution of its
/// run times by powers of two of microseconds.
pub(crate) fn histogram(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let mut names: Vec<&'static str> = Vec::new();
    for arg in &args[2..] {
        names.extend(commands_named(arg));
    }
    let shown = |name: &&'static str, counters: &&CommandCounters| {
        counters.latency.total() > 0 && (args.len() == 2 || names.contains(name))
    };
    let mut reply = Vec::new();
    for (name, counters) in x.stats.commands.iter().filter(|(n, c)| shown(n, c)) {
        let steps = counters.latency.by_powers_of_two();
        let distribution = steps
            .into_iter()
            .flat_map(|(bound, runs)| [Reply::Integer(bound as i64), Reply::Integer(runs as i64)])
            .collect();
        reply.push(Reply::bulk(name.as_bytes()));
        reply.push(Reply::fields([
            ("calls", Reply::Integer(counters.calls as i64)),
            ("histogram_usec", Reply::Map(distribution)),
        ]));
    }
    Reply::Map(reply)
}

/// The full names (`get`, `client|id`) `name` stands for: the command, its
/// subcommands if it has some, or the one subcommand `command|sub` names.
fn commands_named(name: &[u8]) -> impl Iterator<Item = &'static str> {
    let mut parts = name.splitn(2, |&b| b == b'|');
    let top = parts.next().and_then(table::lookup);
    let found: Vec<&'static str> = match (top, parts.next()) {
        (Some(spec), Some(sub)) => spec.subcommand(sub).map(|s| s.name).into_iter().collect(),
        (Some(spec), None) if !spec.subcommands.is_empty() => {
            spec.subcommands.iter().map(|s| s.name).collect()
        }
        (Some(spec), None) => alloc::vec![spec.name],
        (None, _) => Vec::new(),
    };
    found.into_iter()
}

/// `LATENCY LATEST`: for each event, its name, the time and latency of
/// its latest sample, and its highest latency.
pub(crate) fn latest(x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    let events = x.stats.latency_events.iter().filter_map(|(name, event)| {
        let last = event.samples.back()?;
        Some(Reply::array(alloc::vec![
            Reply::bulk(name.as_bytes()),
            Reply::Integer(last.time as i64),
            Reply::Integer(last.ms as i64),
            Reply::Integer(event.max_ms as i64),
        ]))
    });
    Reply::array(events.collect())
}

/// `LATENCY HISTORY event`: the event's samples, oldest first, as (time,
/// milliseconds); none for an event that never happened.
pub(crate) fn history(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let samples = x.stats.latency_events.get(&args[2]).map(|event| {
        event
            .samples
            .iter()
            .map(|s| {
                Reply::array(alloc::vec![
                    Reply::Integer(s.time as i64),
                    Reply::Integer(s.ms as i64),
                ])
            })
            .collect()
    });
    Reply::array(samples.unwrap_or_default())
}

/// `LATENCY RESET [event ...]`: forgets the events named (all if none
/// is); how many there were.
pub(crate) fn reset(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    Reply::Integer(x.stats.latency_events.reset(&args[2..]) as i64)
}

/// `LATENCY GRAPH event`: the event's samples drawn as text.
pub(crate) fn graph(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let name = &args[2];
    let Some((name, event)) = x
        .stats
        .latency_events
        .iter()
        .find(|(n, e)| n.as_bytes() == name.as_slice() && !e.samples.is_empty())
    else {
        return Reply::Error(alloc::format!(
            "ERR No samples available for event '{}'",
            alloc::string::String::from_utf8_lossy(name)
        ));
    };
    let text = crate::latency::graph(name, event, x.now / 1000);
    Reply::Verbatim(text.into_bytes())
}

/// `LATENCY DOCTOR`: a report on the events, in words.
pub(crate) fn doctor(x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    let threshold = x.config.latency_monitor_threshold;
    let text = crate::latency::doctor(&x.stats.latency_events, threshold);
    Reply::Verbatim(text.into_bytes())
}

/// `LATENCY HELP`.
pub(crate) fn help(_x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    Reply::help(&[
        "LATENCY <subcommand> [<arg> ...]. Subcommands are:",
        "HISTOGRAM [<command> ...]",
        "    Each command's calls and run times, cumulated by powers of two of",
        "    microseconds (all commands if none is named).",
        "LATEST",
        "    Each event's latest sample and highest latency.",
        "HISTORY <event>",
        "    The event's samples: Unix time and milliseconds.",
        "RESET [<event> ...]",
        "    Forgets the events named, or all of them.",
        "GRAPH <event>",
        "    The event's samples as a text chart.",
        "DOCTOR",
        "    A report on the events seen.",
        "HELP",
        "    Prints this help.",
    ])
}
