//! `poll`: everything that needs the engines. Resume stalled segments, start
//! segments up to each engine's window (setting transfers up on the way),
//! and report the transfers that are over.

use crate::engine::{Engine, EngineError, Resume};
use crate::memory::Memory;
use crate::segment::Phase;
use crate::transfer::{Policy, TransferError, TransferReport};

use super::active::{ensure_pages, ensure_resident, Active};
use super::{EngineSlot, Scheduler};

/// Result of offering one segment to an engine.
enum Start {
    Started,
    /// The engine is full; try again at the next poll.
    Busy,
    /// The transfer failed on the way; go on with the next one.
    Failed,
}

impl Scheduler {
    /// Drives the engines: call it from the kernel's loop after the SMMU
    /// event queue was drained and completions were handed over, and after
    /// `submit`. `engines[i]` must be the engine registered as `EngineId(i)`;
    /// missing ones are skipped. Never blocks.
    pub fn poll(&mut self, engines: &mut [&mut dyn Engine], mem: &mut dyn Memory) {
        self.resume_stalled(engines, mem);
        for (e, engine) in engines.iter_mut().enumerate() {
            self.fill(e, &mut **engine, mem);
        }
        self.report_over(mem);
    }

    /// Resumes every segment owed a resume: `Retry` once its faulted pages
    /// (all pages after lost events) are resident, `Abort` if its transfer
    /// failed.
    fn resume_stalled(&mut self, engines: &mut [&mut dyn Engine], mem: &mut dyn Memory) {
        let max = self.config.max_retries;
        for t in self.transfers.values_mut() {
            let Some(engine) = engines.get_mut(t.engine.0) else {
                continue;
            };
            for i in 0..t.segs.len() {
                let (number, span) = match &t.segs[i].phase {
                    Phase::InFlight(a) if a.resume_due => (a.number, a.span.clone()),
                    _ => continue,
                };
                if t.error.is_none() && t.waits_on_claim(&span) {
                    // Resumed once the claims on its pages are resolved.
                    continue;
                }
                let mut how = Resume::Abort;
                if t.error.is_none() {
                    let access = t.access();
                    let resident = match &t.segs[i].phase {
                        Phase::InFlight(a) if a.suspect => {
                            ensure_resident(mem, &t.layout, &a.span, access)
                        }
                        Phase::InFlight(a) => ensure_pages(mem, a.faulted.iter(), access),
                        _ => Ok(0),
                    };
                    let seg = &mut t.segs[i];
                    let range = seg.range.clone();
                    let ready = resident.and_then(|_| {
                        seg.resume_retry(max)
                            .map_err(|retries| TransferError::RetriesExhausted {
                                segment: range,
                                retries,
                            })
                    });
                    match ready {
                        Ok(()) => {
                            how = Resume::Retry;
                            t.stats.resumes += 1;
                        }
                        Err(e) => t.fail(e),
                    }
                }
                if let Phase::InFlight(a) = &mut t.segs[i].phase {
                    a.resume_due = false;
                }
                engine.resume(&t.segment(i, number, span), how);
            }
        }
    }

    /// Starts segments on engine `e` while its window has room: oldest
    /// transfer first, retransmissions before new segments.
    fn fill(&mut self, e: usize, engine: &mut dyn Engine, mem: &mut dyn Memory) {
        let Some(slot) = self.engines.get_mut(e) else {
            return;
        };
        for t in self.transfers.values_mut() {
            if slot.in_flight >= slot.window {
                return;
            }
            if t.engine.0 != e {
                continue;
            }
            if !t.begun() {
                t.begin(mem);
            }
            while slot.in_flight < slot.window {
                let Some(i) = t.next_to_start() else { break };
                match start(t, i, slot, engine, mem) {
                    Start::Started => {}
                    Start::Busy => {
                        t.prepare_ahead(mem);
                        return;
                    }
                    Start::Failed => break,
                }
            }
            if slot.in_flight >= slot.window {
                t.prepare_ahead(mem);
            }
        }
    }

    /// Moves every transfer that is over to the finished list: unpin, time,
    /// per-policy sums.
    fn report_over(&mut self, mem: &mut dyn Memory) {
        let now = mem.now();
        let Scheduler {
            transfers,
            finished,
            totals,
            ..
        } = self;
        transfers.retain(|&id, t| {
            if !t.is_over() {
                return true;
            }
            for range in t.pinned.drain(..) {
                mem.unpin(range);
            }
            t.stats.transfers = 1;
            t.stats.total_ns = now.saturating_sub(t.began_at);
            let policy = t.transfer.policy;
            let result = match t.error.take() {
                Some(e) => {
                    t.stats.failures = 1;
                    Err(e)
                }
                None => Ok(TransferReport {
                    policy,
                    stats: t.stats,
                }),
            };
            totals[policy.index()].add(&t.stats);
            finished.push((id, result));
            false
        });
    }
}

/// Offers segment `i` of `t` to the engine. A retransmission first makes its
/// pages resident again (they may have been evicted since the fault); a new
/// segment of a cold `FaultAwarePrefetch` transfer first has its pages
/// prepared (unless `prepare_ahead` did it already); a streaming one slides
/// its prefetch window.
fn start(
    t: &mut Active,
    i: usize,
    slot: &mut EngineSlot,
    engine: &mut dyn Engine,
    mem: &mut dyn Memory,
) -> Start {
    let Some((span, again)) = t.segs[i].next_span() else {
        return Start::Failed;
    };
    if again {
        if let Err(e) = ensure_resident(mem, &t.layout, &span, t.access()) {
            t.fail(e);
            return Start::Failed;
        }
    } else if t.needs_preparing(i) && !t.prepare(mem, i) {
        return Start::Failed;
    }
    if t.transfer.policy == Policy::FaultAwarePrefetch {
        let window = t.prefetch.run_ahead((span.end - 1) / t.page);
        t.prefetch(mem, window);
    }
    let seg = t.segment(i, t.segs[i].next_attempt(), span.clone());
    match engine.start(&seg) {
        Ok(()) => {
            t.segs[i].started(span.clone());
            if again {
                t.retransmit.retain(|&j| j != i);
                t.stats.retransmissions += 1;
                t.stats.retransmitted_bytes += span.len() as u64;
            } else {
                t.next += 1;
                t.stats.segments += 1;
            }
            t.in_flight += 1;
            slot.in_flight += 1;
            Start::Started
        }
        Err(EngineError::Busy) => Start::Busy,
        Err(e) => {
            t.fail(TransferError::Engine(e));
            Start::Failed
        }
    }
}
