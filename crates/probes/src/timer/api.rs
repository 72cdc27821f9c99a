//! The timer services the timer probe can measure, by the names of
//! `--timer-api`.

use std::fmt;
use std::str::FromStr;

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

/// The names of `--timer-api`, without descriptions.
#[cfg(feature = "clap")]
impl clap::ValueEnum for TimerApi {
    fn value_variants<'a>() -> &'a [Self] {
        &TimerApi::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.as_str()))
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
