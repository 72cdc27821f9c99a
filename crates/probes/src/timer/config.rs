use std::fmt;
use std::str::FromStr;

use latscope_model::{CpuId, Nanos, NoiseDuty, TimerSlack};
use latscope_platform::SchedPolicy;

use crate::SettingError;

/// The timer service whose wake-up latency is measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerApi {
    /// `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` to each deadline.
    ClockNanosleep,
    /// `nanosleep` for the time left until each deadline.
    Nanosleep,
    /// A periodic `timerfd`; missed expirations come from its read count.
    Timerfd,
    /// A periodic `timer_create` timer signalling the measuring thread.
    PosixTimer,
    /// `epoll_pwait2` time-outs on an empty epoll set.
    Epoll,
}

impl TimerApi {
    pub const ALL: [TimerApi; 5] = [
        TimerApi::ClockNanosleep,
        TimerApi::Nanosleep,
        TimerApi::Timerfd,
        TimerApi::PosixTimer,
        TimerApi::Epoll,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            TimerApi::ClockNanosleep => "clock_nanosleep",
            TimerApi::Nanosleep => "nanosleep",
            TimerApi::Timerfd => "timerfd",
            TimerApi::PosixTimer => "posix-timer",
            TimerApi::Epoll => "epoll",
        }
    }

    /// Services that take a relative time-out, where a random phase applies.
    pub fn is_relative(self) -> bool {
        matches!(self, TimerApi::Nanosleep | TimerApi::Epoll)
    }
}

impl fmt::Display for TimerApi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl FromStr for TimerApi {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TimerApi::ALL
            .into_iter()
            .find(|a| a.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown timer API '{s}': expected one of clock_nanosleep, nanosleep, timerfd, posix-timer, epoll"
                )
            })
    }
}

/// Where each sleep starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Deadlines on a fixed grid.
    Fixed,
    /// A random busy delay (0..period) before each relative sleep, so the
    /// sleep cannot lock onto the tick (Bernadat's sleep test).
    Random,
}

/// Settings of one timer-probe cell, already validated.
#[derive(Clone, Debug)]
pub struct TimerConfig {
    pub cpus: Vec<CpuId>,
    pub period: Nanos,
    pub policy: SchedPolicy,
    pub priority: u32,
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
        match self.policy {
            SchedPolicy::Other if self.priority != 0 => {
                // Accepted but meaningless: SCHED_OTHER has no RT priority.
            }
            SchedPolicy::Fifo | SchedPolicy::Rr if !(1..=99).contains(&self.priority) => {
                return Err(SettingError::PriorityForPolicy {
                    priority: self.priority,
                    policy: self.policy.as_str(),
                });
            }
            _ => {}
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

    /// The priority actually applied (0 for SCHED_OTHER).
    pub fn effective_priority(&self) -> u32 {
        crate::setup::effective_priority(self.policy, self.priority)
    }
}
