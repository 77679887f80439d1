//! `completed`: what the end of a segment attempt means, given the faults
//! seen while it ran.

use crate::engine::{Completion, EngineId, SegmentId};
use crate::segment::{Finish, Phase};
use crate::transfer::TransferError;

use super::{Scheduler, UnknownSegment};

impl Scheduler {
    /// A driver reports that attempt `seg` ended on `engine`. Hand it over
    /// only after draining the SMMU event queue (see the module docs): a
    /// segment that faulted completes `Ok` all the same, and only its fault
    /// events, already recorded, turn this completion into a retransmission
    /// of the spoiled pages instead of `Done`. Does not start anything; the
    /// next `poll` does.
    pub fn completed(
        &mut self,
        engine: EngineId,
        seg: SegmentId,
        status: Completion,
    ) -> Result<(), UnknownSegment> {
        let max = self.config.max_retries;
        let t = self
            .transfers
            .get_mut(&seg.transfer)
            .ok_or(UnknownSegment)?;
        if t.engine != engine {
            return Err(UnknownSegment);
        }
        let s = t.segs.get_mut(seg.index).ok_or(UnknownSegment)?;
        let span = match &s.phase {
            Phase::InFlight(a) if a.number == seg.attempt => a.span.clone(),
            _ => return Err(UnknownSegment),
        };
        t.in_flight -= 1;
        if let Some(slot) = self.engines.get_mut(engine.0) {
            slot.in_flight = slot.in_flight.saturating_sub(1);
        }
        if t.error.is_some() {
            s.phase = Phase::Dropped;
            return Ok(());
        }
        match status {
            Completion::Error(e) => {
                s.phase = Phase::Dropped;
                t.fail(TransferError::Engine(e));
            }
            Completion::Ok => {
                t.stats.bytes_moved += span.len() as u64;
                let range = s.range.clone();
                match s.finish(max, &t.layout, t.page, t.block) {
                    Finish::Done => t.done += 1,
                    Finish::Retransmit(_) => t.retransmit.push_back(seg.index),
                    Finish::Exhausted(retries) => t.fail(TransferError::RetriesExhausted {
                        segment: range,
                        retries,
                    }),
                }
            }
        }
        Ok(())
    }
}
