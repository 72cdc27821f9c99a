use latscope_model::{CpuId, Nanos, NoiseDuty, TimerSlack};
use latscope_platform::SchedPolicy;

use super::api::TimerApi;
use crate::SettingError;

/// Where each sleep starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Deadlines on a fixed grid.
    Fixed,
    /// A random busy delay (0..period) before each relative sleep, so the
    /// sleep cannot lock onto the tick (Bernadat's sleep test).
    Random,
}

/// The names of `--phase`, without descriptions.
#[cfg(feature = "clap")]
impl clap::ValueEnum for Phase {
    fn value_variants<'a>() -> &'a [Self] {
        &[Phase::Fixed, Phase::Random]
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(match self {
            Phase::Fixed => "fixed",
            Phase::Random => "random",
        }))
    }
}

/// Settings of one timer-probe cell, already validated.
#[derive(Clone, Debug)]
pub struct TimerConfig {
    pub cpus: Vec<CpuId>,
    pub period: Nanos,
    pub policy: SchedPolicy,
    pub priority: u32,
    /// Under OTHER or BATCH: the measuring threads' nice value (`None`:
    /// the one inherited).
    pub nice: Option<i32>,
    pub api: TimerApi,
    pub phase: Phase,
    pub threshold: Option<Nanos>,
    /// `None`: until stopped.
    pub duration: Option<Nanos>,
    /// Hand every sample (deadline, wake-up) to a reader through a ring of
    /// this many samples per CPU (the trace analysis); 0: off.
    pub handoff: usize,
    /// The noise probe beside the timer for a duty cycle (the monitor's
    /// `--noise 1s/60s`): see [`crate::timer`].
    pub noise_duty: Option<NoiseDuty>,
    /// The measuring threads' timer slack (`--timer-slack`): the minimum
    /// by default; the kernel gives real-time threads none whatever this
    /// says.
    pub timer_slack: TimerSlack,
}

/// The longest period accepted: longer and a run of minutes holds too few
/// samples to say anything.
pub const MAX_PERIOD: Nanos = Nanos::from_secs(10);

impl TimerConfig {
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
        if self.cpus.is_empty() {
            return Err(SettingError::NoCpu("selected"));
        }
        if self.phase == Phase::Random && !self.api.is_relative() {
            return Err(SettingError::PhaseRandom(self.api));
        }
        // Without a real-time priority (OTHER, BATCH, IDLE, DEADLINE) the
        // priority is not applied; the request refuses one given.
        if self.policy.has_priority() && !(1..=99).contains(&self.priority) {
            return Err(SettingError::PriorityForPolicy {
                priority: self.priority,
                policy: self.policy.as_str(),
            });
        }
        if let Some(duty) = &self.noise_duty {
            duty.validate().map_err(SettingError::NoiseDuty)?;
            if !self.api.is_relative() && self.api != TimerApi::ClockNanosleep {
                return Err(SettingError::DutyTimer(self.api));
            }
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

    /// The priority actually applied (0 without FIFO or RR).
    pub fn effective_priority(&self) -> u32 {
        crate::setup::effective_priority(self.policy, self.priority)
    }
}
