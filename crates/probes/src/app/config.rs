use latscope_model::{CpuId, Nanos};
use latscope_platform::SchedPolicy;

use crate::timer::MAX_PERIOD;
use crate::SettingError;

/// The most buffers a pipeline may have (more is no low-latency pipeline).
pub const MAX_BUFFERS: u32 = 64;

/// Settings of one application-probe cell.
#[derive(Clone, Debug)]
pub struct AppConfig {
    /// One pipeline (producer thread) per CPU.
    pub cpus: Vec<CpuId>,
    /// The buffer period `t`: the device plays one buffer per period.
    pub period: Nanos,
    /// Buffers in the ring, `n`.
    pub buffers: u32,
    /// Work per buffer `c`, as asked for.
    pub compute: Nanos,
    /// Turns of the busy loop that make `compute` ([`super::calibrate`]).
    pub compute_turns: u64,
    pub policy: SchedPolicy,
    pub priority: u32,
    /// Count responses above this (and the timeline's `above`).
    pub threshold: Option<Nanos>,
    /// `None`: until stopped.
    pub duration: Option<Nanos>,
    /// The application preset the scheme comes from, if any.
    pub app: Option<String>,
}

impl AppConfig {
    /// Checks what can be checked without the machine.
    pub fn validate(&self) -> Result<(), SettingError> {
        if self.period.0 == 0 {
            return Err(SettingError::PeriodZero);
        }
        if self.period > MAX_PERIOD {
            return Err(SettingError::PeriodOverLimit {
                period: self.period,
                max: MAX_PERIOD,
            });
        }
        if !(1..=MAX_BUFFERS).contains(&self.buffers) {
            return Err(SettingError::Buffers {
                buffers: self.buffers,
                max: MAX_BUFFERS,
            });
        }
        if self.compute >= self.period {
            return Err(SettingError::ComputeOverPeriod {
                compute: self.compute,
                period: self.period,
            });
        }
        if self.cpus.is_empty() {
            return Err(SettingError::NoCpu("selected"));
        }
        if matches!(self.policy, SchedPolicy::Fifo | SchedPolicy::Rr)
            && !(1..=99).contains(&self.priority)
        {
            return Err(SettingError::PriorityForPolicy {
                priority: self.priority,
                policy: self.policy.as_str(),
            });
        }
        if let Some(d) = self.duration {
            let primed = Nanos(self.period.0.saturating_mul(u64::from(self.buffers) + 1));
            if d < primed {
                return Err(SettingError::DurationUnderRing {
                    duration: d,
                    primed,
                });
            }
        }
        Ok(())
    }

    /// `(n − 1)·t − c`, as the forecast's buffering scheme has it.
    pub fn slack_ns(&self) -> i64 {
        let tolerance = i128::from(self.period.0) * i128::from(self.buffers.saturating_sub(1));
        let s = tolerance - i128::from(self.compute.0);
        i64::try_from(s).unwrap_or(i64::MAX)
    }
}
