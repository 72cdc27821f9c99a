//! The application probe: a real periodic pipeline of the kind the MTTF
//! forecast models (cota-robles-held §5), counting real buffer underruns.
//!
//! Per selected CPU, one producer thread (pinned, at the chosen policy and
//! priority) fills a ring of `n` buffers of period `t` for a device that
//! plays one buffer per period on its own clock grid. The producer sleeps
//! on an absolute timer until the device frees a slot (an audio driver's
//! period interrupt waking the application), computes for `c` with a
//! calibrated busy loop, and publishes the buffer. The device is the clock
//! grid itself ([`Pipeline`]): a buffer ready after the device needed it is
//! an underrun, whatever delayed it (the wake-up, or an interruption of the
//! work). A device thread would add its own wake-up latency to the
//! producer's, which the hardware it stands for does not have.
//!
//! Recorded per CPU:
//! - `app.underrun`: one sample per underrun, its length (deadline →
//!   ready); the timeline counts underruns per second;
//! - `app.wakeup`: slot freed → producer runs, when it slept;
//! - `app.response`: slot freed → buffer ready.
//!
//! An underrun happens exactly when the producer's delay beyond its work
//! exceeds the slack `(n − 1)·t − c` (while it keeps up): the event the
//! forecast's [`BufferScheme`](latscope_record) counts, one per stall.

mod config;
mod cpu;
mod measure;
mod pipeline;
mod work;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use latscope_model::{CpuId, Nanos};
use latscope_platform::timers::Errno;
use latscope_record::{MetricResult, TimelineChunk};

pub use config::{AppConfig, MAX_BUFFERS};
pub use cpu::AppCpu;
pub use pipeline::{Pipeline, Underrun};
pub use work::{calibrate, spin_turns, Calibration};

use crate::threads::{self, PinnedThreads};
use crate::{
    Handoff, Probe, ProbeError, ProbeFinal, ProbeSnapshot, ProbeStats, Progress, RunningProbe,
    ThreadSetup,
};

/// A configured application probe, its recorders allocated.
pub struct AppProbe {
    config: AppConfig,
    cpus: Vec<Arc<AppCpu>>,
}

impl AppProbe {
    pub fn new(config: AppConfig) -> Result<AppProbe, ProbeError> {
        config.validate().map_err(ProbeError::Config)?;
        let cpus = config
            .cpus
            .iter()
            .map(|&c| Arc::new(AppCpu::new(c, config.threshold)))
            .collect();
        Ok(AppProbe { config, cpus })
    }

    pub fn config(&self) -> &AppConfig {
        &self.config
    }
}

/// An error inside a producer loop, as plain data.
#[derive(Clone, Copy, Debug)]
struct LoopError {
    cpu: CpuId,
    errno: Errno,
}

impl Probe for AppProbe {
    fn name(&self) -> &'static str {
        "app"
    }

    fn validate(&self) -> Result<(), ProbeError> {
        self.config.validate().map_err(ProbeError::Config)
    }

    fn start(self: Box<Self>, stop: Arc<AtomicBool>) -> Result<Box<dyn RunningProbe>, ProbeError> {
        let config = self.config;
        let specs = self
            .cpus
            .iter()
            .map(|state| {
                let state = Arc::clone(state);
                let stop = Arc::clone(&stop);
                let c = config.clone();
                threads::Spec {
                    name: format!("lat-app/{}", state.cpu),
                    cpu: state.cpu,
                    body: move |start: u64| {
                        let end = c.duration.map_or(u64::MAX, |d| start.saturating_add(d.0));
                        let mut env = measure::RealEnv {
                            turns: c.compute_turns,
                        };
                        measure::produce(&mut env, &state, &stop, start, end, c.period.0, c.buffers)
                            .map_err(|errno| LoopError {
                                cpu: state.cpu,
                                errno,
                            })
                    },
                }
            })
            .collect();
        let sched = threads::Sched {
            policy: config.policy,
            priority: config.priority,
            nice: None,
            slack: latscope_model::TimerSlack::MINIMUM,
        };
        let mut threads = threads::start(specs, sched)?;
        threads.setups.sort_by_key(|s| s.cpu);
        Ok(Box::new(RunningAppProbe {
            cpus: self.cpus,
            threads,
        }))
    }
}

/// An application probe that is measuring.
pub struct RunningAppProbe {
    cpus: Vec<Arc<AppCpu>>,
    threads: PinnedThreads<Result<(), LoopError>>,
}

impl RunningProbe for RunningAppProbe {
    fn setups(&self) -> &[ThreadSetup] {
        &self.threads.setups
    }

    fn start_ns(&self) -> u64 {
        self.threads.start_ns
    }

    fn finished(&self) -> bool {
        self.threads.finished()
    }

    /// Buffers as samples, underruns as overruns, the longest response.
    fn progress(&self) -> Progress {
        let mut p = Progress::default();
        for c in &self.cpus {
            p.samples += c.buffers();
            p.overruns += c.underruns();
            p.max_latency = p
                .max_latency
                .max(Nanos(c.max_response.load(Ordering::Relaxed)));
        }
        p
    }

    fn snapshot(&self) -> ProbeSnapshot {
        snapshot(&self.cpus)
    }

    fn drain_timeline(&self) -> Vec<TimelineChunk> {
        collect_timeline(&self.cpus, false)
    }

    fn handoffs(&self) -> Vec<Handoff> {
        Vec::new()
    }

    fn finish(self: Box<Self>) -> ProbeFinal {
        let error = self.threads.join(|_, r| {
            r.err().map(|e| ProbeError::Measuring {
                cpu: e.cpu,
                reason: format!("clock_nanosleep: {}", e.errno.to_io()),
            })
        });
        let timeline = collect_timeline(&self.cpus, true);
        let lost_timeline_seconds = self
            .cpus
            .iter()
            .map(|c| {
                c.underrun.lost_seconds() + c.wakeup.lost_seconds() + c.response.lost_seconds()
            })
            .sum();
        ProbeFinal {
            snapshot: snapshot(&self.cpus),
            timeline,
            lost_timeline_seconds,
            error,
        }
    }
}

fn snapshot(cpus: &[Arc<AppCpu>]) -> ProbeSnapshot {
    ProbeSnapshot {
        metrics: collect_results(cpus),
        stats: ProbeStats::default(),
    }
}

fn collect_timeline(cpus: &[Arc<AppCpu>], finished: bool) -> Vec<TimelineChunk> {
    let mut out = Vec::new();
    for c in cpus {
        out.extend(c.underrun.drain_timeline(finished));
        out.extend(c.wakeup.drain_timeline(finished));
        out.extend(c.response.drain_timeline(finished));
    }
    out
}

/// Per CPU: `app.underrun`, `app.wakeup`, `app.response` (one sample per
/// buffer: its count is the buffers filled).
fn collect_results(cpus: &[Arc<AppCpu>]) -> Vec<MetricResult> {
    let mut out = Vec::with_capacity(cpus.len() * 3);
    for c in cpus {
        out.push(c.underrun.result());
        out.push(c.wakeup.result());
        out.push(c.response.result());
    }
    out
}

#[cfg(test)]
mod tests;
