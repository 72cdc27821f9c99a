//! What one producer of the application probe records: allocated by the
//! probe, written by the producer's loop, read at each checkpoint.

use std::sync::atomic::{AtomicU64, Ordering};

use latscope_model::{metric, CpuId, Nanos};

use super::pipeline::Underrun;
use crate::threads::bump;
use crate::MetricRecorder;

/// Everything one producer records, allocated before it starts.
pub struct AppCpu {
    pub cpu: CpuId,
    pub(super) underrun: MetricRecorder,
    pub(super) wakeup: MetricRecorder,
    pub(super) response: MetricRecorder,
    pub(super) buffers: AtomicU64,
    pub(super) underruns: AtomicU64,
    pub(super) silent_periods: AtomicU64,
    pub(super) max_response: AtomicU64,
}

impl AppCpu {
    pub(super) fn new(cpu: CpuId, threshold: Option<Nanos>) -> AppCpu {
        AppCpu {
            cpu,
            underrun: MetricRecorder::new(metric::APP_UNDERRUN, Some(cpu), None),
            wakeup: MetricRecorder::new(metric::APP_WAKEUP, Some(cpu), threshold),
            response: MetricRecorder::new(metric::APP_RESPONSE, Some(cpu), threshold),
            buffers: AtomicU64::new(0),
            underruns: AtomicU64::new(0),
            silent_periods: AtomicU64::new(0),
            max_response: AtomicU64::new(0),
        }
    }

    /// Records one buffer. Producer thread only: no allocation, no locks.
    #[inline]
    pub(super) fn record(
        &self,
        woke_second: u64,
        second: u64,
        wakeup: Option<u64>,
        response: u64,
        underrun: Option<Underrun>,
    ) {
        if let Some(w) = wakeup {
            self.wakeup.record(woke_second, w);
        }
        self.response.record(second, response);
        if let Some(u) = underrun {
            self.underrun.record(second, u.length);
            bump(&self.underruns, 1);
            bump(&self.silent_periods, u.periods);
        }
        bump(&self.buffers, 1);
        if response > self.max_response.load(Ordering::Relaxed) {
            self.max_response.store(response, Ordering::Relaxed);
        }
    }

    /// Underruns so far.
    pub fn underruns(&self) -> u64 {
        self.underruns.load(Ordering::Relaxed)
    }

    /// Periods the device played silence so far.
    pub fn silent_periods(&self) -> u64 {
        self.silent_periods.load(Ordering::Relaxed)
    }

    /// Buffers the producer filled so far.
    pub fn buffers(&self) -> u64 {
        self.buffers.load(Ordering::Relaxed)
    }
}
