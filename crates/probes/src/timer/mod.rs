//! The timer probe: how late does a periodic timer wake a real-time thread?
//!
//! One thread per selected CPU, pinned, at the chosen policy and priority,
//! with minimal timer slack, waits for deadlines on a fixed grid using the
//! timer service under test and records, on waking:
//! - `timer.latency`: intended expiry → user code runs;
//! - `timer.interval`: time since the previous wake-up (Jones & Regehr's
//!   callback spacing).
//!
//! Overruns skip the deadlines they passed (no drift) and are counted; the
//! coordinated-omission-corrected latency distribution records each skipped
//! deadline with the latency it would have had.
//!
//! A wake-up *before* its deadline (a timer that fired early: a bug of the
//! timer service, the clock or the hypervisor) enters `timer.latency` as a
//! 0 ns sample, so sample counts stay one per wake-up and comparable with
//! cyclictest's, and is also counted per CPU with its largest earliness
//! ([`TimerCpuStats`]), which the summary shows and the store keeps, so it
//! is never mistaken for a perfect wake-up.

mod api;
mod config;
mod cpu;
pub(crate) mod measure;
mod schedule;
mod together;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use latscope_model::{CpuId, Nanos};
use latscope_platform::SchedPolicy;
use latscope_record::{MetricResult, TimelineChunk};

pub use api::TimerApi;
pub use config::{Phase, TimerConfig, MAX_PERIOD};
pub(crate) use cpu::LoopError;
pub use cpu::TimerCpu;
pub use schedule::{Schedule, Wake};
pub use together::start_together;

use crate::noise::{DutyCycle, NoiseConfig, NoiseProbe, RunningNoiseProbe};
use crate::threads::{self, PinnedThreads};
use crate::{
    Handoff, Probe, ProbeError, ProbeFinal, ProbeSnapshot, ProbeStats, Progress, RunningProbe,
    ThreadSetup,
};

/// A configured timer probe, its recorders allocated.
pub struct TimerProbe {
    config: TimerConfig,
    cpus: Vec<Arc<TimerCpu>>,
    /// The noise duty cycle's probe, when one runs beside the timer.
    noise: Option<NoiseProbe>,
}

/// The noise probe of a duty cycle: SCHED_OTHER, as oslat and rtla
/// osnoise run by default (a real-time spin of a whole second would be cut
/// by RT throttling, `sched_rt_runtime_us`), with the noise probe's default
/// interruption test (4 × the base iteration), continuous spinning for `on`.
fn duty_noise(
    config: &TimerConfig,
    cpus: &[Arc<TimerCpu>],
) -> Result<Option<NoiseProbe>, ProbeError> {
    let Some(duty) = config.noise_duty else {
        return Ok(None);
    };
    let noise = NoiseConfig {
        cpus: config.cpus.clone(),
        policy: SchedPolicy::Other,
        priority: 0,
        runtime: duty.on_ns,
        pause: Nanos(0),
        gap_ratio: 4,
        gap_min: None,
        fp: false,
        threshold: None,
        duration: config.duration,
        handoff: 0,
        force_vdso: false,
        duty: Some(DutyCycle {
            on: duty.on_ns,
            every: duty.every_ns,
            // Two periods: the timer thread wakes at most one period after
            // the pause is set, plus its own latency.
            lead: Nanos(config.period.0.saturating_mul(2).max(1_000_000)),
        }),
    };
    let pauses: Vec<(CpuId, Arc<AtomicU64>)> = cpus
        .iter()
        .map(|c| (c.cpu, Arc::clone(&c.paused_until)))
        .collect();
    NoiseProbe::pausing(noise, &pauses).map(Some)
}

impl TimerProbe {
    pub fn new(config: TimerConfig) -> Result<TimerProbe, ProbeError> {
        config.validate().map_err(ProbeError::Config)?;
        let cpus = config
            .cpus
            .iter()
            .map(|&c| Arc::new(TimerCpu::new(c, config.threshold, config.handoff)))
            .collect::<Vec<_>>();
        let noise = duty_noise(&config, &cpus)?;
        Ok(TimerProbe {
            config,
            cpus,
            noise,
        })
    }

    pub fn config(&self) -> &TimerConfig {
        &self.config
    }

    /// Starts one measuring thread per CPU and returns once all are set up
    /// and measuring. `stop` ends the loops early (within one period).
    pub fn start(self, stop: Arc<AtomicBool>) -> Result<RunningTimerProbe, ProbeError> {
        let specs = self.specs(&stop);
        let sched = self.sched();
        // The noise threads first: they sleep until their first active
        // period, well after the timer threads are up.
        let noise = match self.noise {
            Some(n) => Some(n.start(Arc::clone(&stop))?),
            None => None,
        };
        let threads = match threads::start(specs, sched) {
            Ok(t) => t,
            Err(e) => {
                if let Some(n) = noise {
                    stop.store(true, Ordering::Relaxed);
                    let _ = Box::new(n).finish();
                }
                return Err(e);
            }
        };
        Ok(RunningTimerProbe::new(
            self.config,
            self.cpus,
            threads,
            noise,
        ))
    }

    /// The measuring threads to start, one per CPU.
    fn specs(
        &self,
        stop: &Arc<AtomicBool>,
    ) -> Vec<threads::Spec<impl FnOnce(u64) -> Result<(), LoopError> + Send + 'static>> {
        self.cpus
            .iter()
            .map(|cpu| {
                let ctx = measure::ThreadCtx {
                    state: Arc::clone(cpu),
                    config: self.config.clone(),
                    stop: Arc::clone(stop),
                };
                threads::Spec {
                    name: format!("lat-timer/{}", cpu.cpu),
                    cpu: cpu.cpu,
                    body: move |start: u64| measure::run_thread(ctx, start),
                }
            })
            .collect()
    }

    fn sched(&self) -> threads::Sched {
        threads::Sched {
            policy: self.config.policy,
            priority: self.config.priority,
            nice: self.config.nice,
            slack: self.config.timer_slack,
        }
    }
}

impl Probe for TimerProbe {
    fn name(&self) -> &'static str {
        "timer"
    }

    fn validate(&self) -> Result<(), ProbeError> {
        self.config.validate().map_err(ProbeError::Config)
    }

    fn start(self: Box<Self>, stop: Arc<AtomicBool>) -> Result<Box<dyn RunningProbe>, ProbeError> {
        Ok(Box::new(TimerProbe::start(*self, stop)?))
    }
}

/// A timer probe that is measuring.
pub struct RunningTimerProbe {
    config: TimerConfig,
    cpus: Vec<Arc<TimerCpu>>,
    threads: PinnedThreads<Result<(), LoopError>>,
    noise: Option<RunningNoiseProbe>,
}

impl RunningTimerProbe {
    fn new(
        config: TimerConfig,
        cpus: Vec<Arc<TimerCpu>>,
        mut threads: PinnedThreads<Result<(), LoopError>>,
        noise: Option<RunningNoiseProbe>,
    ) -> RunningTimerProbe {
        threads.setups.sort_by_key(|s| s.cpu);
        RunningTimerProbe {
            config,
            cpus,
            threads,
            noise,
        }
    }

    pub fn config(&self) -> &TimerConfig {
        &self.config
    }
}

impl RunningProbe for RunningTimerProbe {
    fn setups(&self) -> &[ThreadSetup] {
        &self.threads.setups
    }

    fn start_ns(&self) -> u64 {
        self.threads.start_ns
    }

    /// Whether every measuring thread has ended (duration reached, stopped or failed).
    fn finished(&self) -> bool {
        self.threads.finished() && self.noise.as_ref().is_none_or(|n| n.finished())
    }

    fn progress(&self) -> Progress {
        let mut p = Progress::default();
        for c in &self.cpus {
            p.samples += c.samples.load(Ordering::Relaxed);
            p.overruns += c.overruns.load(Ordering::Relaxed);
            p.max_latency = p
                .max_latency
                .max(Nanos(c.max_latency.load(Ordering::Relaxed)));
        }
        p
    }

    fn snapshot(&self) -> ProbeSnapshot {
        let mut s = snapshot(&self.cpus);
        if let Some(n) = &self.noise {
            add_noise(&mut s, n.snapshot());
        }
        s
    }

    /// Completed timeline seconds not yet taken (see
    /// [`MetricRecorder::drain_timeline`]).
    fn drain_timeline(&self) -> Vec<TimelineChunk> {
        let mut t = collect_timeline(&self.cpus, false);
        if let Some(n) = &self.noise {
            t.extend(n.drain_timeline());
        }
        t
    }

    /// Per CPU: the measuring thread's tid and the ring its samples are
    /// handed over in (only with [`TimerConfig::handoff`] > 0).
    fn handoffs(&self) -> Vec<Handoff> {
        self.cpus
            .iter()
            .filter_map(|c| self.threads.handoff(c.cpu, c.handoff.as_ref()))
            .collect()
    }

    fn finish(self: Box<Self>) -> ProbeFinal {
        let noise = self.noise.map(|n| Box::new(n).finish());
        let error = self.threads.join(|_, r| {
            r.err().map(|e| ProbeError::Timer {
                cpu: e.cpu,
                api: e.api,
                source: e.errno.to_io(),
            })
        });
        // Results are exact now. The drain comes before the lost count: a
        // drain is what finds seconds overwritten.
        let timeline = collect_timeline(&self.cpus, true);
        let lost_timeline_seconds = self
            .cpus
            .iter()
            .map(|c| c.latency.lost_seconds() + c.interval.lost_seconds())
            .sum();
        let mut fin = ProbeFinal {
            snapshot: snapshot(&self.cpus),
            timeline,
            lost_timeline_seconds,
            error,
        };
        if let Some(n) = noise {
            add_noise(&mut fin.snapshot, n.snapshot);
            fin.timeline.extend(n.timeline);
            fin.lost_timeline_seconds += n.lost_timeline_seconds;
            if fin.error.is_none() {
                fin.error = n.error;
            }
        }
        fin
    }
}

/// The duty cycle's noise figures beside the timer's.
fn add_noise(to: &mut ProbeSnapshot, noise: ProbeSnapshot) {
    to.metrics.extend(noise.metrics);
    to.stats.noise = noise.stats.noise;
}

fn snapshot(cpus: &[Arc<TimerCpu>]) -> ProbeSnapshot {
    ProbeSnapshot {
        metrics: collect_results(cpus),
        stats: ProbeStats {
            timer: cpus.iter().map(|c| c.stats()).collect(),
            ..ProbeStats::default()
        },
    }
}

fn collect_timeline(cpus: &[Arc<TimerCpu>], finished: bool) -> Vec<TimelineChunk> {
    let mut out = Vec::new();
    for c in cpus {
        out.extend(c.latency.drain_timeline(finished));
        out.extend(c.interval.drain_timeline(finished));
    }
    out
}

fn collect_results(cpus: &[Arc<TimerCpu>]) -> Vec<MetricResult> {
    let mut out = Vec::with_capacity(cpus.len() * 2);
    for c in cpus {
        let mut lat = c.latency.result();
        let mut corrected = c.skipped.snapshot();
        corrected.merge(&lat.histogram);
        lat.corrected = Some(corrected);
        lat.overruns = c.overruns.load(Ordering::Relaxed);
        lat.missed_deadlines = c.missed.load(Ordering::Relaxed);
        out.push(lat);
        out.push(c.interval.result());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::{metric, TimerCpuStats};

    #[test]
    fn skipped_deadlines_enter_only_the_corrected_distribution() {
        let cpu = TimerCpu::new(CpuId(0), Some(Nanos::from_micros(100)), 0);
        let period = 1_000_000;
        cpu.record(
            0,
            Wake {
                deadline: 0,
                latency: 20_000,
                early: 0,
                skipped: 0,
            },
            period,
            None,
        );
        // 3.5 periods late: this wake-up also served 3 later deadlines, which
        // would have been 2.5, 1.5 and 0.5 periods late.
        cpu.record(
            0,
            Wake {
                deadline: 1,
                latency: 3_500_000,
                early: 0,
                skipped: 3,
            },
            period,
            Some(4_480_000),
        );
        let results = collect_results(&[Arc::new(cpu)]);
        let lat = &results[0];
        assert_eq!(lat.name, metric::TIMER_LATENCY);
        assert_eq!(lat.histogram.count(), 2, "one sample per wake-up");
        assert_eq!(lat.overruns, 1);
        assert_eq!(lat.missed_deadlines, 3);
        assert_eq!(lat.above_threshold, Some(1));
        let c = lat.corrected.as_ref().unwrap();
        assert_eq!(c.count(), 5, "one sample per deadline");
        assert_eq!(c.count_above(3_000_000), 1);
        assert_eq!(c.count_above(1_000_000), 3);
        assert_eq!(
            c.sum(),
            20_000 + 3_500_000 + 2_500_000 + 1_500_000 + 500_000
        );
        let iv = &results[1];
        assert_eq!(iv.name, metric::TIMER_INTERVAL);
        assert_eq!(iv.histogram.count(), 1);
    }

    fn wake(latency: u64, early: u64, skipped: u64) -> Wake {
        Wake {
            deadline: 0,
            latency,
            early,
            skipped,
        }
    }

    #[test]
    fn a_long_stall_is_corrected_in_closed_form_as_the_naive_loop_would() {
        // A 10 s stall at a 100 µs period: 100,000 skipped deadlines, plus a
        // kernel-periodic count that passed our clock read (three deadlines
        // that saturate to 0).
        let period = 100_000;
        let cpu = TimerCpu::new(CpuId(1), None, 0);
        let stalls = [
            wake(10_000_012_345, 0, 100_000),
            wake(250_000, 0, 5),
            wake(99_999, 0, 0),
        ];
        let mut naive = latscope_record::Histogram::new();
        for w in stalls {
            cpu.record(0, w, period, None);
            naive.record(w.latency);
            for k in 1..=w.skipped {
                naive.record(w.latency.saturating_sub(k * period));
            }
        }
        let results = collect_results(&[Arc::new(cpu)]);
        let lat = &results[0];
        assert_eq!(lat.histogram.count(), 3);
        assert_eq!(lat.missed_deadlines, 100_005);
        let c = lat.corrected.as_ref().unwrap();
        assert_eq!(c, &naive, "same counts in every bucket, same min, max");
        assert_eq!(c.sum(), naive.sum());
        assert_eq!(c.count(), 3 + 100_005);
        assert_eq!(c.min(), Some(Nanos(0)));
    }

    #[test]
    fn early_wakeups_are_counted_apart_and_enter_latency_as_zero() {
        let cpu = TimerCpu::new(CpuId(3), None, 0);
        let period = 1_000_000;
        cpu.record(0, wake(5_000, 0, 0), period, None);
        cpu.record(0, wake(0, 1_200, 0), period, None);
        cpu.record(0, wake(0, 300, 0), period, None);
        cpu.record(0, wake(0, 0, 0), period, None);
        assert_eq!(
            cpu.stats(),
            TimerCpuStats {
                cpu: CpuId(3),
                early_wakeups: 2,
                max_early_ns: Nanos(1_200),
            }
        );
        let results = collect_results(&[Arc::new(cpu)]);
        let lat = &results[0].histogram;
        assert_eq!(
            lat.count(),
            4,
            "one sample per wake-up, early ones included"
        );
        assert_eq!(lat.count_above(0), 1, "early wake-ups are 0 ns of lateness");
    }
}
