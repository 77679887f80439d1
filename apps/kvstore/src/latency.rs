//! Latency, as Redis 7.0 reports it: a histogram of each command's run
//! times (`LATENCY HISTOGRAM`, `INFO latencystats`, kept while
//! `latency-tracking` is on), and the latency monitor's events (`LATENCY
//! LATEST|HISTORY|RESET|GRAPH|DOCTOR`): each time something took at least
//! `latency-monitor-threshold` milliseconds (a command, a fast command, a
//! cycle of active expiry), a sample of (Unix second, milliseconds) under
//! the event's name.
//!
//! The histogram is log-linear: eight buckets per power of two of
//! microseconds, so a percentile is known within an eighth of its value
//! (Redis keeps an HdrHistogram; its figures differ from these by that
//! much at most).

use alloc::collections::{BTreeMap, VecDeque};
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;

/// Buckets per power of two (values below it have a bucket each).
const SUB_BUCKETS: u64 = 8;

/// Run times of one command, in microseconds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Histogram {
    /// Samples by bucket (see [`bucket_of`]); grows to the largest seen.
    counts: Vec<u64>,
    total: u64,
}

/// The bucket of `us`: itself below [`SUB_BUCKETS`], then eight per power
/// of two.
fn bucket_of(us: u64) -> usize {
    if us < SUB_BUCKETS {
        return us as usize;
    }
    let power = 63 - u64::from(us.leading_zeros()); // at least 3
    let top = us >> (power - 3); // 8..=15: the three bits after the first
    (SUB_BUCKETS * (power - 2) + (top - SUB_BUCKETS)) as usize
}

/// The largest value bucket `index` holds.
fn bucket_high(index: usize) -> u64 {
    let index = index as u64;
    if index < SUB_BUCKETS {
        return index;
    }
    let power = index / SUB_BUCKETS + 2;
    let top = index % SUB_BUCKETS + SUB_BUCKETS;
    let next = u128::from(top + 1) << (power - 3);
    u64::try_from(next - 1).unwrap_or(u64::MAX)
}

impl Histogram {
    /// Counts one run of `us` microseconds.
    pub fn record(&mut self, us: u64) {
        let at = bucket_of(us);
        if self.counts.len() <= at {
            self.counts.resize(at + 1, 0);
        }
        self.counts[at] += 1;
        self.total += 1;
    }

    /// Runs counted.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The run time `percentile` (0 to 100) of the runs are within, in
    /// microseconds; `None` with no run.
    pub fn percentile(&self, percentile: f64) -> Option<u64> {
        if self.total == 0 {
            return None;
        }
        let wanted = libm::ceil(percentile / 100.0 * self.total as f64) as u64;
        let wanted = wanted.clamp(1, self.total);
        let mut seen = 0;
        for (index, &n) in self.counts.iter().enumerate() {
            seen += n;
            if seen >= wanted {
                return Some(bucket_high(index));
            }
        }
        None
    }

    /// The cumulative distribution by powers of two, as `LATENCY
    /// HISTOGRAM` shows it: (bound, runs under `bound` microseconds) for
    /// each power of two where the count grows.
    pub fn by_powers_of_two(&self) -> Vec<(u64, u64)> {
        let mut steps = Vec::new();
        let (mut seen, mut shown) = (0, 0);
        let mut bound = 1u64;
        let mut index = 0;
        while seen < self.total {
            while index < self.counts.len() && bucket_high(index) < bound {
                seen += self.counts[index];
                index += 1;
            }
            if seen > shown {
                steps.push((bound, seen));
                shown = seen;
            }
            bound = match bound.checked_mul(2) {
                Some(next) => next,
                None => break,
            };
        }
        steps
    }
}

/// The samples one event keeps (Redis keeps as many).
pub const SAMPLES_PER_EVENT: usize = 160;

/// One sample of an event: when, and how long it took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// Unix time, in seconds.
    pub time: u64,
    /// Milliseconds.
    pub ms: u64,
}

/// The samples of one event, oldest first, and its all-time highest.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Event {
    /// The last [`SAMPLES_PER_EVENT`] seconds it happened in, one sample
    /// each (the highest of that second).
    pub samples: VecDeque<Sample>,
    /// The highest latency since the event was reset.
    pub max_ms: u64,
}

/// The latency monitor's events, by name (`command`, `fast-command`,
/// `expire-cycle`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Events {
    events: BTreeMap<&'static str, Event>,
}

impl Events {
    /// Records that `event` took `ms` milliseconds at Unix second `time`:
    /// a second sample in the same second keeps the higher of the two.
    pub fn record(&mut self, event: &'static str, ms: u64, time: u64) {
        let entry = self.events.entry(event).or_default();
        entry.max_ms = entry.max_ms.max(ms);
        if let Some(last) = entry.samples.back_mut() {
            if last.time == time {
                last.ms = last.ms.max(ms);
                return;
            }
        }
        if entry.samples.len() == SAMPLES_PER_EVENT {
            entry.samples.pop_front();
        }
        entry.samples.push_back(Sample { time, ms });
    }

    /// The event named `name`, if it ever happened since it was reset.
    pub fn get(&self, name: &[u8]) -> Option<&Event> {
        self.events
            .iter()
            .find(|(n, _)| n.as_bytes() == name)
            .map(|(_, e)| e)
    }

    /// Every event, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &Event)> {
        self.events.iter().map(|(n, e)| (*n, e))
    }

    /// Forgets the events named (all of them if none is): how many there
    /// were.
    pub fn reset(&mut self, names: &[Vec<u8>]) -> usize {
        if names.is_empty() {
            let n = self.events.len();
            self.events.clear();
            return n;
        }
        let before = self.events.len();
        self.events.retain(|name, _| {
            !names
                .iter()
                .any(|n| n.eq_ignore_ascii_case(name.as_bytes()))
        });
        before - self.events.len()
    }
}

/// Rows of [`graph`]'s bars.
const GRAPH_ROWS: u64 = 8;

/// `LATENCY GRAPH`: the event's samples as a bar chart, one column per
/// sample (oldest at the left), each as tall as its latency against the
/// highest shown, under a line with the highest and lowest; the columns'
/// ages (seconds before `now`) are written down the bottom.
pub fn graph(name: &str, event: &Event, now: u64) -> String {
    let samples = &event.samples;
    let high = samples.iter().map(|s| s.ms).max().unwrap_or(0);
    let low = samples.iter().map(|s| s.ms).min().unwrap_or(0);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{name} - high {high} ms, low {low} ms (all time high {} ms)",
        event.max_ms
    );
    out.push_str(&"-".repeat(samples.len().max(name.len())));
    out.push('\n');
    for row in (1..=GRAPH_ROWS).rev() {
        for s in samples {
            // A bar reaches this row if its share of the highest does.
            let filled = high > 0 && s.ms * GRAPH_ROWS >= row * high;
            out.push(if filled { '#' } else { ' ' });
        }
        out.push('\n');
    }
    let ages: Vec<String> = samples
        .iter()
        .map(|s| alloc::format!("{}s", now.saturating_sub(s.time)))
        .collect();
    let longest = ages.iter().map(String::len).max().unwrap_or(0);
    for line in 0..longest {
        for age in &ages {
            out.push(age.as_bytes().get(line).map_or(' ', |&b| b as char));
        }
        out.push('\n');
    }
    out
}

/// `LATENCY DOCTOR`: a short report on the events seen, and what to
/// look at for each.
pub fn doctor(events: &Events, threshold_ms: u64) -> String {
    let mut out = String::new();
    if threshold_ms == 0 {
        out.push_str(
            "The latency monitor is off: set latency-monitor-threshold (CONFIG SET \
             latency-monitor-threshold <milliseconds>) to record the events that take \
             longer.\n",
        );
        return out;
    }
    if events.events.is_empty() {
        let _ = writeln!(
            out,
            "No event took {threshold_ms} ms or more since the monitor was last reset."
        );
        return out;
    }
    let _ = writeln!(
        out,
        "Events that took {threshold_ms} ms or more since the monitor was last reset:"
    );
    for (name, event) in events.iter() {
        let n = event.samples.len() as u64;
        let average = event.samples.iter().map(|s| s.ms).sum::<u64>() / n.max(1);
        let _ = writeln!(
            out,
            "- {name}: {n} samples kept, average {average} ms, highest {} ms.",
            event.max_ms
        );
        let advice = match name {
            "command" | "fast-command" => {
                "  SLOWLOG GET shows which commands were slow; commands over large values \
                 (KEYS, SMEMBERS of a big set, whole-range reads) take time in proportion."
            }
            "expire-cycle" => {
                "  Many keys expiring at once, or big values expiring, make the active \
                 expiry cycle long; spreading expiry times helps."
            }
            _ => "  See the event's history with LATENCY HISTORY.",
        };
        out.push_str(advice);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_value_once_in_order() {
        let mut last = 0;
        for us in 0..5000u64 {
            let b = bucket_of(us);
            assert!(b == last || b == last + 1, "{us}");
            assert!(bucket_high(b) >= us, "{us} above its bucket");
            if b > 0 {
                assert!(bucket_high(b - 1) < us, "{us} in two buckets");
            }
            last = b;
        }
        assert_eq!(bucket_high(bucket_of(u64::MAX)), u64::MAX);
    }

    #[test]
    fn percentiles_are_within_an_eighth() {
        let mut h = Histogram::default();
        assert_eq!(h.percentile(50.0), None);
        for us in 1..=1000 {
            h.record(us);
        }
        let p50 = h.percentile(50.0).unwrap();
        assert!((500..=500 + 500 / 8).contains(&p50), "{p50}");
        let p100 = h.percentile(100.0).unwrap();
        assert!((1000..=1000 + 1000 / 8).contains(&p100), "{p100}");
        assert_eq!(h.percentile(0.0), Some(1));
        assert_eq!(h.total(), 1000);
    }

    #[test]
    fn the_histogram_counts_runs_under_each_power_of_two() {
        let mut h = Histogram::default();
        for us in [0, 6, 6, 29, 130] {
            h.record(us);
        }
        assert_eq!(h.by_powers_of_two(), [(1, 1), (8, 3), (32, 4), (256, 5)]);
    }

    #[test]
    fn one_sample_per_second_keeping_the_highest_and_at_most_160() {
        let mut e = Events::default();
        e.record("command", 250, 100);
        e.record("command", 300, 100);
        e.record("command", 120, 101);
        let cmd = e.get(b"command").unwrap();
        assert_eq!(
            cmd.samples.iter().copied().collect::<Vec<_>>(),
            [Sample { time: 100, ms: 300 }, Sample { time: 101, ms: 120 }]
        );
        assert_eq!(cmd.max_ms, 300);
        for t in 0..200 {
            e.record("expire-cycle", 30, 1000 + t);
        }
        let expiry = e.get(b"expire-cycle").unwrap();
        assert_eq!(expiry.samples.len(), SAMPLES_PER_EVENT);
        assert_eq!(expiry.samples[0].time, 1040);
        assert_eq!(e.reset(&[b"nosuch".to_vec()]), 0);
        assert_eq!(e.reset(&[b"COMMAND".to_vec()]), 1);
        assert!(e.get(b"command").is_none());
        assert_eq!(e.reset(&[]), 1);
    }

    #[test]
    fn the_graph_draws_one_column_per_sample() {
        let mut e = Events::default();
        e.record("command", 100, 10);
        e.record("command", 50, 12);
        let text = graph("command", e.get(b"command").unwrap(), 15);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "command - high 100 ms, low 50 ms (all time high 100 ms)"
        );
        assert_eq!(lines[2], "# ", "only the highest reaches the top");
        assert_eq!(lines[9], "##", "both reach the bottom");
        assert_eq!(&lines[10..], ["53", "ss"], "5 and 3 seconds ago");
        assert!(doctor(&e, 10).contains("command: 2 samples"));
        assert!(doctor(&Events::default(), 0).contains("off"));
    }
}
