//! A simulated probe for testing the run lifecycle (checkpoints, signals,
//! failing cells, the progress bar) deterministically, without measuring
//! threads or a real kernel. Compiled only with the `sim` feature and never
//! reachable from the command line.
//!
//! It keeps the timer probe's books: per CPU a `timer.latency` recorder
//! (histogram, per-second timeline, count above the threshold) and,
//! optionally, a hand-over ring. Nothing runs in the background: whenever
//! the housekeeping side asks (progress, snapshot, finished, drain, finish),
//! the probe first generates, under a lock, every sample that is due by the
//! [`Clock`]'s present. Sample `k` (k = 0, 1, ...) has the deadline
//! `start + k × period` and the latency `latency(cpu, k)`; it falls in
//! timeline second `k × period / 1 s`. Deadlines at or after the end
//! (`start + duration`) or the scripted failure (`start + fail_after`) are
//! never measured; a raised stop flag is seen at the next call, and the
//! deadlines due by then are the last ones.
//!
//! With a [`crate::ScriptedClock`] that a test advances, every figure is
//! exact; with [`crate::RealClock`] the probe runs in real time.
//!
//! **A consistency witness.** The simulated probe never wakes up early, so
//! its snapshot reuses the timer probe's early wake-up figures
//! ([`TimerCpuStats`]) for another purpose: per CPU, `early_wakeups` is the
//! number of samples generated so far on that CPU and `max_early_ns` the
//! latest sample's latency, taken under the same lock as the metrics of the
//! same snapshot. A checkpoint stores them in another table than the
//! metrics, so a test can tell a whole checkpoint (`early_wakeups` equal to
//! the `timer.latency` row's sample count) from a mix of two.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use latscope_model::{metric, CpuId, Nanos, TimerCpuStats};
use latscope_record::TimelineChunk;

use crate::{
    Clock, Handoff, MetricRecorder, Probe, ProbeError, ProbeFinal, ProbeSnapshot, ProbeStats,
    Progress, RunningProbe, SampleRing, SettingError, ThreadSetup,
};

/// The scripted latency of sample `k` on a CPU.
pub type LatencyScript = Arc<dyn Fn(CpuId, u64) -> Nanos + Send + Sync>;

/// Settings of a simulated cell.
#[derive(Clone)]
pub struct SimConfig {
    pub cpus: Vec<CpuId>,
    pub period: Nanos,
    /// `None`: until stopped (or failed).
    pub duration: Option<Nanos>,
    pub threshold: Option<Nanos>,
    /// The time the samples are due by; also what `finish` waits on.
    pub clock: Arc<dyn Clock>,
    pub latency: LatencyScript,
    /// A measuring error this long after time zero: no sample is measured
    /// from then on, and `finish` reports the error.
    pub fail_after: Option<Nanos>,
    /// Hand every sample (deadline, wake-up) over in a ring of this many
    /// entries per CPU, as the timer probe does; 0: off.
    pub handoff: usize,
}

impl SimConfig {
    /// Every sample 10 µs late, no end, no threshold, no failure.
    pub fn new(cpus: Vec<CpuId>, period: Nanos, clock: Arc<dyn Clock>) -> SimConfig {
        SimConfig {
            cpus,
            period,
            duration: None,
            threshold: None,
            clock,
            latency: Arc::new(|_, _| Nanos::from_micros(10)),
            fail_after: None,
            handoff: 0,
        }
    }

    pub fn validate(&self) -> Result<(), SettingError> {
        if self.cpus.is_empty() {
            return Err(SettingError::NoCpu("to simulate"));
        }
        if self.period.0 == 0 {
            return Err(SettingError::PeriodZero);
        }
        if let Some(d) = self.duration {
            if d < self.period {
                return Err(SettingError::DurationUnderPeriod {
                    duration: d,
                    period: self.period,
                });
            }
        }
        Ok(())
    }
}

impl std::fmt::Debug for SimConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimConfig")
            .field("cpus", &self.cpus)
            .field("period", &self.period)
            .field("duration", &self.duration)
            .field("threshold", &self.threshold)
            .field("fail_after", &self.fail_after)
            .field("handoff", &self.handoff)
            .finish_non_exhaustive()
    }
}

/// One simulated CPU's books, as the timer probe keeps them.
struct SimCpu {
    cpu: CpuId,
    latency: MetricRecorder,
    handoff: Option<Arc<SampleRing>>,
}

/// A configured simulated probe.
pub struct SimProbe {
    config: SimConfig,
}

impl SimProbe {
    pub fn new(config: SimConfig) -> Result<SimProbe, ProbeError> {
        config.validate().map_err(ProbeError::Config)?;
        Ok(SimProbe { config })
    }

    /// Starts the simulation: time zero is the clock's present.
    pub fn start(self, stop: Arc<AtomicBool>) -> RunningSimProbe {
        let config = self.config;
        let cpus = config
            .cpus
            .iter()
            .map(|&cpu| SimCpu {
                cpu,
                latency: MetricRecorder::new(metric::TIMER_LATENCY, Some(cpu), config.threshold),
                handoff: (config.handoff > 0).then(|| Arc::new(SampleRing::new(config.handoff))),
            })
            .collect();
        let tid = latscope_platform::current_tid();
        let setups = config
            .cpus
            .iter()
            .map(|&cpu| ThreadSetup {
                cpu,
                tid,
                scheduler: Ok(()),
                timer_slack_ns: Some(1),
                rr_interval_ns: None,
            })
            .collect();
        let start_ns = config.clock.monotonic_ns();
        RunningSimProbe {
            config,
            cpus,
            setups,
            start_ns,
            stop,
            state: Mutex::new(SimState::default()),
        }
    }
}

impl Probe for SimProbe {
    fn name(&self) -> &'static str {
        "sim"
    }

    fn validate(&self) -> Result<(), ProbeError> {
        self.config.validate().map_err(ProbeError::Config)
    }

    fn start(self: Box<Self>, stop: Arc<AtomicBool>) -> Result<Box<dyn RunningProbe>, ProbeError> {
        Ok(Box::new(SimProbe::start(*self, stop)))
    }
}

/// Why the simulated measurement ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Halt {
    /// The duration was reached.
    Ended,
    /// The stop flag was seen.
    Stopped,
    /// The scripted failure.
    Failed,
}

#[derive(Default)]
struct SimState {
    /// The next sample to generate.
    next: u64,
    /// When and why measuring ended: deadlines from then on are never measured.
    halt: Option<(u64, Halt)>,
    samples: u64,
    max_latency: u64,
}

/// A simulated probe that is "measuring".
pub struct RunningSimProbe {
    config: SimConfig,
    cpus: Vec<SimCpu>,
    setups: Vec<ThreadSetup>,
    start_ns: u64,
    stop: Arc<AtomicBool>,
    state: Mutex<SimState>,
}

impl RunningSimProbe {
    pub fn config(&self) -> &SimConfig {
        &self.config
    }

    fn lock(&self) -> MutexGuard<'_, SimState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Generates every sample due by the clock's present; the state after.
    fn catch_up(&self) -> MutexGuard<'_, SimState> {
        let now = self.config.clock.monotonic_ns();
        let mut st = self.lock();
        if st.halt.is_none() {
            let end = self
                .config
                .duration
                .map(|d| (self.start_ns.saturating_add(d.0), Halt::Ended));
            let fail = self
                .config
                .fail_after
                .map(|f| (self.start_ns.saturating_add(f.0), Halt::Failed));
            // Whichever came first; the run that ended before its scripted
            // failure did not fail.
            let due = [end, fail]
                .into_iter()
                .flatten()
                .filter(|(t, _)| *t <= now)
                .min_by_key(|(t, h)| (*t, *h == Halt::Failed));
            st.halt = due.or_else(|| {
                // Deadlines up to the moment the flag is seen were due before it.
                self.stop
                    .load(Ordering::Relaxed)
                    .then(|| (now.saturating_add(1), Halt::Stopped))
            });
        }
        let cut = st.halt.map_or(u64::MAX, |(t, _)| t);
        let period = self.config.period.0;
        loop {
            let k = st.next;
            let offset = k.saturating_mul(period);
            let deadline = self.start_ns.saturating_add(offset);
            if deadline > now || deadline >= cut {
                break;
            }
            let second = offset / 1_000_000_000;
            for c in &self.cpus {
                let lat = (self.config.latency)(c.cpu, k).0;
                c.latency.record(second, lat);
                if let Some(ring) = &c.handoff {
                    ring.push(deadline, deadline.saturating_add(lat));
                }
                st.samples += 1;
                st.max_latency = st.max_latency.max(lat);
            }
            st.next = k + 1;
        }
        st
    }

    /// The metrics and the consistency witness (see the module's
    /// overview), both from `st`: the caller holds the lock, so no sample
    /// is generated between the two.
    fn snapshot_of(&self, st: &SimState) -> ProbeSnapshot {
        let timer = self
            .cpus
            .iter()
            .map(|c| TimerCpuStats {
                cpu: c.cpu,
                early_wakeups: st.next,
                max_early_ns: match st.next.checked_sub(1) {
                    Some(last) => (self.config.latency)(c.cpu, last),
                    None => Nanos::ZERO,
                },
            })
            .collect();
        ProbeSnapshot {
            metrics: self.cpus.iter().map(|c| c.latency.result()).collect(),
            stats: ProbeStats {
                timer,
                ..ProbeStats::default()
            },
        }
    }
}

impl RunningProbe for RunningSimProbe {
    fn setups(&self) -> &[ThreadSetup] {
        &self.setups
    }

    fn start_ns(&self) -> u64 {
        self.start_ns
    }

    fn finished(&self) -> bool {
        self.catch_up().halt.is_some()
    }

    fn progress(&self) -> Progress {
        let st = self.catch_up();
        Progress {
            samples: st.samples,
            max_latency: Nanos(st.max_latency),
            overruns: 0,
        }
    }

    fn snapshot(&self) -> ProbeSnapshot {
        let st = self.catch_up();
        self.snapshot_of(&st)
    }

    fn drain_timeline(&self) -> Vec<TimelineChunk> {
        let _st = self.catch_up();
        self.cpus
            .iter()
            .filter_map(|c| c.latency.drain_timeline(false))
            .collect()
    }

    fn handoffs(&self) -> Vec<Handoff> {
        self.cpus
            .iter()
            .zip(&self.setups)
            .filter_map(|(c, s)| {
                Some(Handoff {
                    cpu: c.cpu,
                    tid: s.tid,
                    ring: Arc::clone(c.handoff.as_ref()?),
                })
            })
            .collect()
    }

    /// Like the real probes' `finish`, waits (on the clock) until the
    /// measurement has ended.
    fn finish(self: Box<Self>) -> ProbeFinal {
        let wait = Duration::from_nanos(self.config.period.0.min(100_000_000));
        let halt = loop {
            if let Some((_, h)) = self.catch_up().halt {
                break h;
            }
            self.config.clock.sleep(wait);
        };
        let st = self.lock();
        let error = (halt == Halt::Failed).then(|| ProbeError::Measuring {
            cpu: self.cpus[0].cpu,
            reason: format!(
                "scripted failure after {}",
                self.config.fail_after.unwrap_or(Nanos::ZERO)
            ),
        });
        let timeline = self
            .cpus
            .iter()
            .filter_map(|c| c.latency.drain_timeline(true))
            .collect();
        let lost_timeline_seconds = self.cpus.iter().map(|c| c.latency.lost_seconds()).sum();
        ProbeFinal {
            snapshot: self.snapshot_of(&st),
            timeline,
            lost_timeline_seconds,
            error,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ScriptedClock;

    const T0: u64 = 1_000_000_000_000;
    const MS: Nanos = Nanos::from_millis(1);

    fn sim(clock: &Arc<ScriptedClock>, cpus: &[u32]) -> SimConfig {
        let clock: Arc<dyn Clock> = clock.clone();
        SimConfig::new(cpus.iter().map(|&c| CpuId(c)).collect(), MS, clock)
    }

    fn run(cfg: SimConfig, stop: &Arc<AtomicBool>) -> Box<dyn RunningProbe> {
        Box::new(SimProbe::new(cfg).unwrap())
            .start(Arc::clone(stop))
            .unwrap()
    }

    fn count(s: &ProbeSnapshot, cpu: u32) -> u64 {
        s.metrics
            .iter()
            .find(|m| m.cpu == Some(CpuId(cpu)))
            .map(|m| m.histogram.count())
            .unwrap()
    }

    #[test]
    fn samples_are_due_on_the_clock_and_nothing_happens_between_calls() {
        let clock = Arc::new(ScriptedClock::new(T0));
        let stop = Arc::new(AtomicBool::new(false));
        let p = run(sim(&clock, &[0, 1]), &stop);
        assert_eq!(p.start_ns(), T0);
        assert_eq!(p.setups().len(), 2);
        assert_eq!(p.progress().samples, 2, "sample 0 is due at time zero");
        clock.advance(Duration::from_millis(2_500));
        // Deadlines 0, 1 ms, ..., 2500 ms: 2501 per CPU.
        let s = p.snapshot();
        assert_eq!(count(&s, 0), 2_501);
        assert_eq!(count(&s, 1), 2_501);
        assert_eq!(s.metrics[0].name, metric::TIMER_LATENCY);
        assert_eq!(s.metrics[0].histogram.max(), Some(Nanos::from_micros(10)));
        assert!(!p.finished(), "no duration: runs until stopped");
        let p2 = p.progress();
        assert_eq!(p2.samples, 5_002);
        assert_eq!(p2.max_latency, Nanos::from_micros(10));
    }

    #[test]
    fn completed_seconds_drain_once_and_the_last_at_the_end() {
        let clock = Arc::new(ScriptedClock::new(T0));
        let stop = Arc::new(AtomicBool::new(false));
        let mut cfg = sim(&clock, &[3]);
        cfg.duration = Some(Nanos::from_secs(3));
        let p = run(cfg, &stop);
        clock.advance(Duration::from_millis(2_500));
        let chunks = p.drain_timeline();
        assert_eq!(chunks.len(), 1);
        assert_eq!(chunks[0].cpu, Some(CpuId(3)));
        assert_eq!(chunks[0].first_second, 0);
        let counts: Vec<u64> = chunks[0].seconds.iter().map(|s| s.count).collect();
        assert_eq!(counts, vec![1_000, 1_000], "seconds 0 and 1 are complete");
        assert!(p.drain_timeline().is_empty(), "taken once");
        clock.advance(Duration::from_millis(600));
        assert!(p.finished(), "3.1 s is past the 3 s duration");
        let f = p.finish();
        assert!(f.error.is_none());
        assert_eq!(f.lost_timeline_seconds, 0);
        assert_eq!(f.snapshot.metrics[0].histogram.count(), 3_000);
        assert_eq!(f.timeline.len(), 1);
        assert_eq!(f.timeline[0].first_second, 2);
        assert_eq!(
            f.timeline[0].seconds.len(),
            1,
            "the last second, at the end"
        );
        assert_eq!(f.timeline[0].seconds[0].count, 1_000);
    }

    #[test]
    fn scripted_latencies_feed_the_threshold_and_timeline() {
        let clock = Arc::new(ScriptedClock::new(T0));
        let stop = Arc::new(AtomicBool::new(false));
        let mut cfg = sim(&clock, &[0, 1]);
        cfg.duration = Some(Nanos::from_secs(2));
        cfg.threshold = Some(Nanos::from_micros(100));
        cfg.handoff = 4_096;
        // CPU 1: every 100th sample is 1 ms late, in second 1 only.
        cfg.latency = Arc::new(|cpu, k| {
            if cpu == CpuId(1) && k >= 1_000 && k % 100 == 0 {
                MS
            } else {
                Nanos::from_micros(20)
            }
        });
        let p = run(cfg, &stop);
        let rings = p.handoffs();
        assert_eq!(rings.len(), 2);
        clock.advance(Duration::from_secs(2));
        assert!(p.finished());
        let f = p.finish();
        let m1 = &f.snapshot.metrics[1];
        assert_eq!(m1.cpu, Some(CpuId(1)));
        assert_eq!(m1.above_threshold, Some(10));
        assert_eq!(f.snapshot.metrics[0].above_threshold, Some(0));
        let t1 = f.timeline.iter().find(|c| c.cpu == Some(CpuId(1))).unwrap();
        assert_eq!(t1.seconds[0].above, 0);
        assert_eq!(t1.seconds[1].above, 10);
        assert_eq!(t1.seconds[1].max, 1_000_000);
        let mut handed = Vec::new();
        rings[1].ring.drain(|d, w| handed.push((d, w)));
        assert_eq!(handed.len(), 2_000);
        assert_eq!(handed[1_000], (T0 + 1_000_000_000, T0 + 1_001_000_000));
    }

    #[test]
    fn a_stop_raised_mid_cell_ends_the_cell_where_it_is_seen() {
        let clock = Arc::new(ScriptedClock::new(T0));
        let stop = Arc::new(AtomicBool::new(false));
        let mut cfg = sim(&clock, &[0]);
        cfg.duration = Some(Nanos::from_secs(10));
        let p = run(cfg, &stop);
        let flag = Arc::clone(&stop);
        clock.at(T0 + 2_450_000_000, move || {
            flag.store(true, Ordering::Relaxed)
        });
        // The housekeeping loop: a tick of 100 ms until finished.
        let mut ticks = 0;
        while !p.finished() {
            clock.sleep(Duration::from_millis(100));
            ticks += 1;
        }
        assert_eq!(ticks, 25, "seen at the first tick after 2.45 s");
        clock.advance(Duration::from_secs(1));
        let f = p.finish();
        assert!(f.error.is_none());
        // Deadlines 0 ..= 2500 ms: due by the time the stop was seen.
        assert_eq!(f.snapshot.metrics[0].histogram.count(), 2_501);
        let seconds: Vec<u64> = f.timeline[0].seconds.iter().map(|s| s.count).collect();
        assert_eq!(seconds, vec![1_000, 1_000, 501]);
    }

    #[test]
    fn a_scripted_failure_ends_measuring_and_is_reported() {
        let clock = Arc::new(ScriptedClock::new(T0));
        let stop = Arc::new(AtomicBool::new(false));
        let mut cfg = sim(&clock, &[0, 1]);
        cfg.duration = Some(Nanos::from_secs(10));
        cfg.fail_after = Some(Nanos::from_millis(1_500));
        let p = run(cfg, &stop);
        clock.advance(Duration::from_millis(1_499));
        assert!(!p.finished());
        clock.advance(Duration::from_millis(1));
        assert!(p.finished(), "failed at 1.5 s");
        clock.advance(Duration::from_secs(5));
        let f = p.finish();
        let e = f.error.expect("the scripted failure");
        assert!(
            matches!(e, ProbeError::Measuring { cpu: CpuId(0), .. }),
            "{e}"
        );
        // Deadlines 0 .. 1500 ms, the failure's own instant excluded.
        assert_eq!(f.snapshot.metrics[0].histogram.count(), 1_500);
        assert_eq!(f.snapshot.metrics[1].histogram.count(), 1_500);
    }

    #[test]
    fn a_failure_after_the_end_is_no_failure() {
        let clock = Arc::new(ScriptedClock::new(T0));
        let stop = Arc::new(AtomicBool::new(false));
        let mut cfg = sim(&clock, &[0]);
        cfg.duration = Some(Nanos::from_secs(1));
        cfg.fail_after = Some(Nanos::from_secs(1));
        let p = run(cfg, &stop);
        clock.advance(Duration::from_secs(5));
        let f = p.finish();
        assert!(f.error.is_none(), "{:?}", f.error);
        assert_eq!(f.snapshot.metrics[0].histogram.count(), 1_000);
    }

    #[test]
    fn finish_waits_on_the_clock_like_a_join() {
        let clock = Arc::new(ScriptedClock::new(T0));
        let stop = Arc::new(AtomicBool::new(false));
        let mut cfg = sim(&clock, &[0]);
        cfg.duration = Some(Nanos::from_millis(500));
        let p = run(cfg, &stop);
        let f = p.finish();
        assert!(clock.monotonic_ns() >= T0 + 500_000_000);
        assert_eq!(f.snapshot.metrics[0].histogram.count(), 500);
    }

    #[test]
    fn the_witness_counts_the_samples_of_the_same_snapshot() {
        let clock = Arc::new(ScriptedClock::new(T0));
        let stop = Arc::new(AtomicBool::new(false));
        let mut cfg = sim(&clock, &[2, 5]);
        cfg.duration = Some(Nanos::from_secs(2));
        cfg.latency = Arc::new(|cpu, k| Nanos(1_000 * u64::from(cpu.0) + k % 7));
        let p = run(cfg, &stop);
        let witness = |s: &ProbeSnapshot| -> Vec<(u32, u64, u64)> {
            s.stats
                .timer
                .iter()
                .map(|t| (t.cpu.0, t.early_wakeups, t.max_early_ns.0))
                .collect()
        };
        clock.advance(Duration::from_millis(1_234));
        let s = p.snapshot();
        // Deadlines 0 ..= 1234 ms: 1235 samples; the last is k = 1234.
        assert_eq!(count(&s, 2), 1_235);
        assert_eq!(
            witness(&s),
            vec![(2, 1_235, 2_000 + 1_234 % 7), (5, 1_235, 5_000 + 1_234 % 7)]
        );
        assert!(s.stats.noise.is_empty() && s.stats.udp.is_none());
        clock.advance(Duration::from_secs(1));
        let f = p.finish();
        assert_eq!(count(&f.snapshot, 5), 2_000);
        assert_eq!(
            witness(&f.snapshot),
            vec![(2, 2_000, 2_000 + 1_999 % 7), (5, 2_000, 5_000 + 1_999 % 7)]
        );
    }

    #[test]
    fn before_the_first_sample_the_witness_is_zero() {
        let clock = Arc::new(ScriptedClock::new(T0));
        let stop = Arc::new(AtomicBool::new(false));
        let p = SimProbe::new(sim(&clock, &[0])).unwrap().start(stop);
        let st = p.lock();
        let s = p.snapshot_of(&st);
        assert_eq!(s.metrics[0].histogram.count(), 0);
        assert_eq!(s.stats.timer[0].early_wakeups, 0);
        assert_eq!(s.stats.timer[0].max_early_ns, Nanos::ZERO);
    }

    #[test]
    fn settings_are_checked() {
        let clock = Arc::new(ScriptedClock::new(T0));
        let mut cfg = sim(&clock, &[]);
        assert!(SimProbe::new(cfg.clone()).is_err());
        cfg.cpus = vec![CpuId(0)];
        cfg.period = Nanos(0);
        assert!(SimProbe::new(cfg.clone()).is_err());
        cfg.period = MS;
        let probe = SimProbe::new(cfg).unwrap();
        assert_eq!(probe.name(), "sim");
        assert!(probe.validate().is_ok());
    }
}
