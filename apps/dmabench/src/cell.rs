//! One cell of the benchmark: a scenario, direction, size and policy, run a
//! few times with fresh or reused buffers, every byte read back checked.
//!
//! "Setup" is what a policy does before the first byte moves, over the
//! whole registered buffer (as an RDMA registration would): `pin` pins it,
//! `prefault` touches it, the fault-aware policies do nothing. Fresh buffers
//! (cold, sparse) pay it on every transfer; reused ones (warm, pressure) are
//! pinned once, untimed, as a registered RDMA buffer is.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::time::Duration;
use libos::dma::{self, Direction, EngineId, NvmeInfo, Policy, Transfer};
use libos::mm::{self, Region, FRAME_SIZE};
use libos::time;

/// How the buffer looks before each transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    /// Resident and reused (nothing faults).
    Warm,
    /// Never touched (a fresh buffer each time).
    Cold,
    /// A registered buffer ten times the transfer, of which 10% is used.
    Sparse,
    /// Reused, but all its pages evicted between transfers.
    Pressure,
}

impl Scenario {
    /// Lower-case name for tables and CSV.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Warm => "warm",
            Scenario::Cold => "cold",
            Scenario::Sparse => "sparse",
            Scenario::Pressure => "pressure",
        }
    }
}

/// What to run.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    /// Buffer state.
    pub scenario: Scenario,
    /// `FromDevice` = NVMe read into memory, `ToDevice` = write from memory.
    pub direction: Direction,
    /// Bytes per transfer.
    pub size: usize,
    /// DMA policy.
    pub policy: Policy,
}

/// What one cell measured.
#[derive(Clone, Debug)]
pub struct Row {
    /// The cell.
    pub spec: Spec,
    /// Per-transfer latency including setup, sorted.
    pub latencies: Vec<Duration>,
    /// Mean setup time before the first byte moved.
    pub setup: Duration,
    /// Device faults per transfer (after dedup), mean.
    pub faults: f64,
    /// Bytes retransmitted per transfer, mean.
    pub retransmitted: f64,
    /// Kernel time in the DMA service per transfer, mean.
    pub kernel: Duration,
    /// Most pages of the registered buffer resident after a transfer.
    pub peak_resident_pages: usize,
    /// Guest time per fault from event read to resubmission (if any faulted).
    pub fault_cost: Option<Duration>,
}

impl Row {
    /// Throughput including setup, MB/s (10^6 bytes), at the median
    /// latency: QEMU's timing hiccups (a vCPU descheduled by the host) hit
    /// single transfers, and the mean of three 16 MiB transfers would be
    /// decided by one of them.
    pub fn throughput(&self) -> f64 {
        self.spec.size as f64 / self.quantile(0.5).as_secs_f64().max(1e-9) / 1e6
    }

    /// The `q`-quantile latency (0.5, 0.99).
    pub fn quantile(&self, q: f64) -> Duration {
        let i = ((self.latencies.len() as f64 - 1.0) * q + 0.5) as usize;
        self.latencies[i.min(self.latencies.len() - 1)]
    }
}

/// Disk layout: reads come from a pattern area, writes go to a scratch area.
pub(crate) const READ_AREA: u64 = 0;
const WRITE_AREA: u64 = 128 << 20;

/// The byte the read area holds at disk offset `offset`.
pub(crate) fn disk_pattern(offset: usize) -> u8 {
    (offset as u8).wrapping_mul(7) ^ (offset >> 12) as u8 ^ 0xa5
}

/// State shared by all cells.
pub struct Bench {
    engine: EngineId,
    corrupted: u64,
}

fn err<E: core::fmt::Debug>(what: &str) -> impl FnOnce(E) -> String + '_ {
    move |e| format!("{what}: {e:?}")
}

impl Bench {
    /// Writes the pattern area the read cells check against.
    pub fn new(engine: EngineId, info: NvmeInfo) -> Result<Bench, String> {
        if info.capacity < WRITE_AREA + (64 << 20) {
            return Err(format!("disk of {} MiB is too small", info.capacity >> 20));
        }
        let mut buf = Region::demand_zero(64 << 20).map_err(err("buffer"))?;
        for (i, b) in buf.as_mut_slice().iter_mut().enumerate() {
            *b = disk_pattern(i);
        }
        log::info!("pattern filled");
        let _grant = dma::grant(engine, buf.range(), dma::Rights::Read).map_err(err("grant"))?;
        let t = Transfer {
            direction: Direction::ToDevice,
            pieces: alloc::vec![buf.range()],
            device_addr: READ_AREA,
            device_key: 0,
            policy: Policy::Prefault,
        };
        let r = dma::run_on(engine, &mut buf, t).map_err(err("writing the pattern area"))?;
        log::info!("pattern written: {:?}", r.stats);
        Ok(Bench {
            engine,
            corrupted: 0,
        })
    }

    /// Bytes that differed from what they should have been, over the run.
    pub fn corrupted_bytes(&self) -> u64 {
        self.corrupted
    }

    /// Transfers per cell: more where they are cheap (reused buffers move
    /// at full speed), so that QEMU's timing noise averages out there too.
    fn reps(spec: &Spec) -> usize {
        let budget = match spec.scenario {
            Scenario::Warm => 128 << 20,
            _ => 8 << 20,
        };
        (budget / spec.size).clamp(3, 24)
    }

    /// Runs one cell.
    pub fn run(&mut self, spec: &Spec) -> Result<Row, String> {
        let reps = Self::reps(spec);
        let registered = if spec.scenario == Scenario::Sparse {
            10 * spec.size
        } else {
            spec.size
        };
        let mut reused = None;
        // The device may reach the bench's buffers, as they were registered.
        let mut _reused_grant = None;
        // A reused buffer is registered once, as an RDMA buffer would be: a
        // pinned one then never faults (pressure cannot evict it).
        let register_once = matches!(spec.scenario, Scenario::Warm | Scenario::Pressure);
        if register_once {
            let mut region = Region::demand_zero(registered).map_err(err("buffer"))?;
            fill_source(&mut region, spec);
            if spec.policy == Policy::Pin {
                mm::pin(region.range()).map_err(err("pin"))?;
            }
            _reused_grant = Some(
                dma::grant(self.engine, region.range(), dma::Rights::ReadWrite)
                    .map_err(err("grant"))?,
            );
            reused = Some(region);
        }
        let mut row = Row {
            spec: *spec,
            latencies: Vec::with_capacity(reps),
            setup: Duration::ZERO,
            faults: 0.0,
            retransmitted: 0.0,
            kernel: Duration::ZERO,
            peak_resident_pages: 0,
            fault_cost: None,
        };
        let counters_before = dma::fault_counters();
        for rep in 0..reps {
            let mut fresh = None;
            let mut _fresh_grant = None;
            let region = match reused.as_mut() {
                Some(r) => r,
                None => {
                    let mut r = Region::demand_zero(registered).map_err(err("buffer"))?;
                    if spec.scenario == Scenario::Sparse && spec.direction == Direction::ToDevice {
                        // The app wrote the part it uses; the rest is untouched.
                        fill_used_part(&mut r, spec);
                    }
                    _fresh_grant = Some(
                        dma::grant(self.engine, r.range(), dma::Rights::ReadWrite)
                            .map_err(err("grant"))?,
                    );
                    fresh.insert(r)
                }
            };
            if spec.scenario == Scenario::Pressure {
                region.evict(0..registered).map_err(err("evict"))?;
            }
            let disk = match spec.direction {
                Direction::FromDevice => READ_AREA + (rep * spec.size % (64 << 20)) as u64,
                Direction::ToDevice => WRITE_AREA,
            };
            let start = time::now();
            match spec.policy {
                Policy::Pin if !register_once => mm::pin(region.range()).map_err(err("pin"))?,
                Policy::Prefault => region.populate(0..registered).map_err(err("prefault"))?,
                _ => {}
            }
            let setup = start.elapsed();
            // A buffer registered (pinned) once needs no per-transfer pinning:
            // it cannot fault, so the transfer runs with nothing to set up.
            let policy = if spec.policy == Policy::Pin && register_once {
                Policy::FaultAware
            } else {
                spec.policy
            };
            let transfer = Transfer {
                direction: spec.direction,
                pieces: alloc::vec![region.start()..region.start() + spec.size],
                device_addr: disk,
                device_key: 0,
                policy,
            };
            let report = dma::run_on(self.engine, region, transfer).map_err(err("transfer"))?;
            let latency = start.elapsed();
            if spec.policy == Policy::Pin && !register_once {
                mm::unpin(region.range()).map_err(err("unpin"))?;
            }
            row.latencies.push(latency);
            row.setup += setup + Duration::from_nanos(report.stats.setup_ns);
            row.faults += report.stats.faults as f64;
            row.retransmitted += report.stats.retransmitted_bytes as f64;
            row.peak_resident_pages = row.peak_resident_pages.max(region.resident_pages());
            self.check(region, spec, disk)?;
        }
        if let (Some(region), Policy::Pin) = (reused.as_ref(), spec.policy) {
            mm::unpin(region.range()).map_err(err("unpin"))?;
        }
        let counters = dma::fault_counters();
        row.setup /= reps as u32;
        row.faults /= reps as f64;
        row.retransmitted /= reps as f64;
        row.kernel = (counters.busy - counters_before.busy) / reps as u32;
        let faults = counters.faults_serviced - counters_before.faults_serviced;
        if faults > 0 {
            row.fault_cost =
                Some((counters.fault_service - counters_before.fault_service) / faults as u32);
        }
        row.latencies.sort();
        Ok(row)
    }

    /// Where on the disk a transfer in `direction` goes (the pattern area
    /// for reads, the scratch area for writes).
    pub fn disk_area(&self, direction: Direction) -> u64 {
        match direction {
            Direction::FromDevice => READ_AREA,
            Direction::ToDevice => WRITE_AREA,
        }
    }

    /// Checks what the transfer moved: a read against the pattern area, a
    /// write by reading the disk back into a resident buffer.
    fn check(&mut self, region: &Region, spec: &Spec, disk: u64) -> Result<(), String> {
        let expected_at = |i: usize| -> u8 {
            match spec.direction {
                Direction::FromDevice => disk_pattern(disk as usize + i),
                Direction::ToDevice => source_byte(spec, i),
            }
        };
        let bad = match spec.direction {
            Direction::FromDevice => count_bad(&region.as_slice()[..spec.size], expected_at),
            Direction::ToDevice => {
                let mut back = Region::eager(spec.size).map_err(err("check buffer"))?;
                let _grant = dma::grant(self.engine, back.range(), dma::Rights::ReadWrite)
                    .map_err(err("grant"))?;
                let t = Transfer {
                    direction: Direction::FromDevice,
                    pieces: alloc::vec![back.range()],
                    device_addr: disk,
                    device_key: 0,
                    policy: Policy::Prefault,
                };
                dma::run_on(self.engine, &mut back, t).map_err(err("read back"))?;
                let bad = count_bad(&back.as_mut_slice()[..spec.size], expected_at);
                drop(back);
                bad
            }
        };
        if bad > 0 {
            libos::println!("dmabench: {bad} corrupted bytes in {spec:?}");
        }
        self.corrupted += bad;
        Ok(())
    }

    /// Time before the first byte moves for a never-touched buffer of
    /// `len` bytes, per policy: registration (pin or touch the whole buffer)
    /// plus the scheduler's own setup of a first 4 KiB transfer.
    pub fn time_to_first_byte(&mut self, len: usize) -> Vec<(Policy, Result<Duration, String>)> {
        crate::POLICIES
            .iter()
            .map(|&policy| {
                let result = (|| -> Result<Duration, String> {
                    let mut region = Region::demand_zero(len).map_err(err("buffer"))?;
                    let _grant = dma::grant(self.engine, region.range(), dma::Rights::ReadWrite)
                        .map_err(err("grant"))?;
                    let start = time::now();
                    match policy {
                        Policy::Pin => mm::pin(region.range()).map_err(err("pin"))?,
                        Policy::Prefault => region.populate(0..len).map_err(err("prefault"))?,
                        _ => {}
                    }
                    let registration = start.elapsed();
                    let t = Transfer {
                        direction: Direction::FromDevice,
                        pieces: alloc::vec![region.start()..region.start() + FRAME_SIZE],
                        device_addr: READ_AREA,
                        device_key: 0,
                        policy,
                    };
                    let report =
                        dma::run_on(self.engine, &mut region, t).map_err(err("transfer"))?;
                    if policy == Policy::Pin {
                        mm::unpin(region.range()).map_err(err("unpin"))?;
                    }
                    Ok(registration + Duration::from_nanos(report.stats.setup_ns))
                })();
                (policy, result)
            })
            .collect()
    }
}

/// What the source buffer of a write holds at offset `i`: warm and
/// pressure buffers are filled, cold ones are zeros (never touched), sparse
/// ones filled in their used part only.
fn source_byte(spec: &Spec, i: usize) -> u8 {
    match spec.scenario {
        Scenario::Cold => 0,
        _ => (i as u8).wrapping_mul(13) ^ 0x3c,
    }
}

fn fill_source(region: &mut Region, spec: &Spec) {
    let bytes = region.as_mut_slice();
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = source_byte(spec, i);
    }
}

fn fill_used_part(region: &mut Region, spec: &Spec) {
    for (i, b) in region.as_mut_slice()[..spec.size].iter_mut().enumerate() {
        *b = source_byte(spec, i);
    }
}

fn count_bad(bytes: &[u8], expected: impl Fn(usize) -> u8) -> u64 {
    bytes
        .iter()
        .enumerate()
        .filter(|&(i, &b)| b != expected(i))
        .count() as u64
}
