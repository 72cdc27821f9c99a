//! What one measuring thread of the timer probe records, and how its loop
//! reports a failure: shared by the probe (which allocates and reads them)
//! and the loop (which writes them).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use latscope_model::{metric, CpuId, Nanos, TimerCpuStats};
use latscope_platform::timers::Errno;
use latscope_record::AtomicHistogram;

use super::api::TimerApi;
use super::schedule::Wake;
use crate::threads::bump;
use crate::{MetricRecorder, SampleRing};

/// Everything one measuring thread records, allocated before it starts.
pub struct TimerCpu {
    pub cpu: CpuId,
    pub(super) latency: MetricRecorder,
    /// Only the skipped deadlines' latencies; the corrected distribution is
    /// `latency` merged with this at snapshot time, which spares the hot
    /// path a third histogram update per sample.
    pub(super) skipped: AtomicHistogram,
    pub(super) interval: MetricRecorder,
    pub(super) overruns: AtomicU64,
    pub(super) missed: AtomicU64,
    pub(super) samples: AtomicU64,
    pub(super) max_latency: AtomicU64,
    /// Wake-ups before their deadline, and the largest earliness (ns).
    pub(super) early_wakeups: AtomicU64,
    pub(super) max_early: AtomicU64,
    /// Every sample for the trace analysis, when it runs.
    pub(super) handoff: Option<Arc<SampleRing>>,
    /// CLOCK_MONOTONIC until which the thread sleeps (the noise duty cycle
    /// spins on its CPU then); 0: not paused.
    pub(super) paused_until: Arc<AtomicU64>,
}

impl TimerCpu {
    pub(super) fn new(cpu: CpuId, threshold: Option<Nanos>, handoff: usize) -> TimerCpu {
        TimerCpu {
            cpu,
            latency: MetricRecorder::new(metric::TIMER_LATENCY, Some(cpu), threshold),
            skipped: AtomicHistogram::new(),
            interval: MetricRecorder::new(metric::TIMER_INTERVAL, Some(cpu), None),
            overruns: AtomicU64::new(0),
            missed: AtomicU64::new(0),
            samples: AtomicU64::new(0),
            max_latency: AtomicU64::new(0),
            early_wakeups: AtomicU64::new(0),
            max_early: AtomicU64::new(0),
            handoff: (handoff > 0).then(|| Arc::new(SampleRing::new(handoff))),
            paused_until: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Records one wake-up. Measuring thread only: no allocation, no locks.
    #[inline]
    pub(super) fn record(&self, second: u64, wake: Wake, period: u64, interval: Option<u64>) {
        let lat = wake.latency;
        self.latency.record(second, lat);
        if wake.skipped > 0 {
            bump(&self.overruns, 1);
            bump(&self.missed, wake.skipped);
            // Each skipped deadline was served by this same wake-up, one
            // period less late per deadline: lat − period, lat − 2·period, …,
            // lat − skipped·period, saturating at 0 (a kernel-periodic timer
            // may report more expirations than our clock read has passed).
            // An arithmetic sequence, added in closed form: a 10 s stall at
            // 100 µs is about 7,700 counter updates, not 100,000.
            let period = period.max(1);
            let positive = wake.skipped.min(lat / period);
            if positive > 0 {
                self.skipped
                    .record_arithmetic(lat - positive * period, period, positive);
            }
            if wake.skipped > positive {
                self.skipped.record_n(0, wake.skipped - positive);
            }
        }
        if wake.early > 0 {
            bump(&self.early_wakeups, 1);
            if wake.early > self.max_early.load(Ordering::Relaxed) {
                self.max_early.store(wake.early, Ordering::Relaxed);
            }
        }
        if let Some(iv) = interval {
            self.interval.record(second, iv);
        }
        bump(&self.samples, 1);
        if lat > self.max_latency.load(Ordering::Relaxed) {
            self.max_latency.store(lat, Ordering::Relaxed);
        }
        if let Some(ring) = &self.handoff {
            ring.push(wake.deadline, wake.deadline.saturating_add(lat));
        }
    }
}

impl TimerCpu {
    /// Early wake-ups so far (any thread; relaxed reads).
    pub fn stats(&self) -> TimerCpuStats {
        TimerCpuStats {
            cpu: self.cpu,
            early_wakeups: self.early_wakeups.load(Ordering::Relaxed),
            max_early_ns: Nanos(self.max_early.load(Ordering::Relaxed)),
        }
    }
}

/// An error inside a measuring loop, as plain data (no allocation there).
#[derive(Clone, Copy, Debug)]
pub(crate) struct LoopError {
    pub cpu: CpuId,
    pub api: TimerApi,
    pub errno: Errno,
}
