//! Timer granularity: how finely the kernel can time a wake-up, and the
//! slack it may add to one (Jones & Regehr §3.1, Bernadat §7).
//!
//! Two things set the grain of a sleep on Linux. With high-resolution
//! timers active, hrtimers (what `clock_nanosleep`, `timerfd` and POSIX
//! timers use) expire to the nanosecond and `clock_getres(CLOCK_MONOTONIC)`
//! says 1 ns; without them, every timer expires on a tick (1/HZ) and the
//! resolution is the tick. And the kernel may expire the timer of a normal
//! thread anywhere in `[deadline, deadline + timer_slack_ns]` so that
//! nearby timers share one interrupt: 50 µs by default. Real-time threads
//! (SCHED_FIFO, SCHED_RR, SCHED_DEADLINE) get no slack at all.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::Nanos;

/// The timer slack the measuring threads ask for (`--timer-slack`).
///
/// In the settings' JSON it is `timer_slack_ns`: absent for the minimum
/// (1 ns, what every run before the option had), `null` for the kernel's
/// default, or the number of nanoseconds set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(from = "Option<Nanos>", into = "Option<Nanos>")]
pub enum TimerSlack {
    /// Leave the thread's slack alone: PR_SET_TIMERSLACK is not called, so
    /// a normal thread keeps the slack it inherited (50 µs by default).
    KernelDefault,
    /// Set this slack with PR_SET_TIMERSLACK; at least 1 ns.
    Set(Nanos),
}

impl TimerSlack {
    /// 1 ns, the least the kernel accepts: latscope's default, so that a
    /// measurement shows the kernel's latency rather than the slack.
    pub const MINIMUM: TimerSlack = TimerSlack::Set(Nanos(1));

    /// The largest slack accepted: a slack beyond a second says nothing a
    /// smaller one would not, and is most likely a typing error.
    pub const MAX: Nanos = Nanos::from_secs(1);

    /// Reads `default` or a duration with its unit (`50us`, `1ns`). `0` is
    /// refused: the kernel reads a slack of 0 as "back to the default",
    /// which `default` says plainly.
    pub fn parse(text: &str) -> Result<TimerSlack, String> {
        let text = text.trim();
        if text.eq_ignore_ascii_case("default") {
            return Ok(TimerSlack::KernelDefault);
        }
        let zero = || {
            format!(
                "'{text}': the kernel reads a slack of 0 as its default; write `default` for that, or give at least 1ns"
            )
        };
        if text == "0" {
            return Err(zero());
        }
        let ns = Nanos::parse_duration(text).map_err(|e| e.to_string())?;
        if ns.0 == 0 {
            return Err(zero());
        }
        if ns > TimerSlack::MAX {
            return Err(format!("{ns} is over the limit of {}", TimerSlack::MAX));
        }
        Ok(TimerSlack::Set(ns))
    }

    /// Whether this is the minimum, latscope's default.
    pub fn is_minimum(&self) -> bool {
        *self == TimerSlack::MINIMUM
    }

    /// The slack the kernel gives a thread of `policy` with this setting:
    /// none for a real-time policy whatever was asked (the kernel clears it
    /// and ignores PR_SET_TIMERSLACK), else the value set, or
    /// `default_ns` (the slack a normal thread inherits) when nothing was.
    pub fn in_force(self, real_time: bool, default_ns: Option<u64>) -> Option<u64> {
        match self {
            _ if real_time => Some(0),
            TimerSlack::Set(ns) => Some(ns.0),
            TimerSlack::KernelDefault => default_ns,
        }
    }
}

impl Default for TimerSlack {
    fn default() -> TimerSlack {
        TimerSlack::MINIMUM
    }
}

impl From<Option<Nanos>> for TimerSlack {
    /// `null` is the kernel's default, and so is 0 (as the kernel reads it).
    fn from(ns: Option<Nanos>) -> TimerSlack {
        match ns {
            Some(ns) if ns.0 > 0 => TimerSlack::Set(ns),
            _ => TimerSlack::KernelDefault,
        }
    }
}

impl From<TimerSlack> for Option<Nanos> {
    fn from(slack: TimerSlack) -> Option<Nanos> {
        match slack {
            TimerSlack::KernelDefault => None,
            TimerSlack::Set(ns) => Some(ns),
        }
    }
}

impl fmt::Display for TimerSlack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TimerSlack::KernelDefault => f.pad("default"),
            TimerSlack::Set(ns) => f.pad(&ns.to_string()),
        }
    }
}

/// The timer granularity in force when a run started: part of the system
/// snapshot. A value the machine did not give is `None`, never a guess.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TimerGranularity {
    /// `clock_getres(CLOCK_MONOTONIC)`: 1 ns when high-resolution timers
    /// are active, the tick otherwise.
    pub monotonic_res_ns: Option<u64>,
    /// `clock_getres(CLOCK_MONOTONIC_COARSE)`: the tick (1/HZ), the grain
    /// of the clock the kernel updates on each tick.
    pub coarse_res_ns: Option<u64>,
    /// Whether high-resolution timers are active (on every CPU).
    pub hres_active: Option<bool>,
    /// Where `hres_active` was read: `timer_list` (`.hres_active` per CPU
    /// in /proc/timer_list, root only) or `clock_getres` (a resolution of
    /// 1 ns).
    pub hres_source: Option<String>,
    /// The CPUs /proc/timer_list shows without high-resolution timers;
    /// empty when all have them or the file was not read.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hres_inactive_cpus: Vec<u32>,
    /// The timer slack a normal thread started by latscope gets (the
    /// slack of the thread that took the snapshot, which new threads
    /// inherit as their default): 50 µs unless something changed it.
    pub default_slack_ns: Option<u64>,
}

impl TimerGranularity {
    /// The tick, from HZ when known, else from the coarse clock.
    pub fn tick_ns(&self, hz: Option<u32>) -> Option<u64> {
        match hz {
            Some(hz) if hz > 0 => Some(1_000_000_000 / u64::from(hz)),
            _ => self.coarse_res_ns.filter(|&t| t > 1),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn parses_default_and_durations() {
        assert_eq!(TimerSlack::parse("default"), Ok(TimerSlack::KernelDefault));
        assert_eq!(
            TimerSlack::parse("50us"),
            Ok(TimerSlack::Set(Nanos::from_micros(50)))
        );
        assert_eq!(TimerSlack::parse("1ns"), Ok(TimerSlack::MINIMUM));
        for zero in ["0", "0ns", "0us", "0.0ms"] {
            let e = TimerSlack::parse(zero).unwrap_err();
            assert!(e.contains("write `default`"), "{zero}: {e}");
        }
        assert!(TimerSlack::parse("2s")
            .unwrap_err()
            .contains("over the limit"));
        assert!(
            TimerSlack::parse("50").is_err(),
            "a bare number has no unit"
        );
        assert!(TimerSlack::parse("soon").is_err());
        // 0.5us is 500 ns, not zero.
        assert_eq!(TimerSlack::parse("0.5us"), Ok(TimerSlack::Set(Nanos(500))));
    }

    #[test]
    fn json_form_keeps_old_records_at_the_minimum() {
        #[derive(Serialize, Deserialize, PartialEq, Debug)]
        struct S {
            #[serde(default, skip_serializing_if = "TimerSlack::is_minimum")]
            timer_slack_ns: TimerSlack,
        }
        let old: S = serde_json::from_str("{}").unwrap();
        assert_eq!(old.timer_slack_ns, TimerSlack::MINIMUM);
        let d: S = serde_json::from_str(r#"{"timer_slack_ns":null}"#).unwrap();
        assert_eq!(d.timer_slack_ns, TimerSlack::KernelDefault);
        let n: S = serde_json::from_str(r#"{"timer_slack_ns":50000}"#).unwrap();
        assert_eq!(n.timer_slack_ns, TimerSlack::Set(Nanos(50_000)));
        assert_eq!(
            serde_json::to_string(&n).unwrap(),
            r#"{"timer_slack_ns":50000}"#
        );
        assert_eq!(
            serde_json::to_string(&d).unwrap(),
            r#"{"timer_slack_ns":null}"#
        );
        assert_eq!(serde_json::to_string(&old).unwrap(), "{}");
    }

    #[test]
    fn real_time_threads_get_no_slack() {
        let fifty = Some(50_000);
        assert_eq!(TimerSlack::KernelDefault.in_force(true, fifty), Some(0));
        assert_eq!(TimerSlack::KernelDefault.in_force(false, fifty), fifty);
        assert_eq!(TimerSlack::KernelDefault.in_force(false, None), None);
        assert_eq!(TimerSlack::MINIMUM.in_force(false, fifty), Some(1));
        assert_eq!(TimerSlack::Set(Nanos(7)).in_force(true, fifty), Some(0));
    }

    #[test]
    fn tick_from_hz_or_the_coarse_clock() {
        let g = TimerGranularity {
            coarse_res_ns: Some(4_000_000),
            ..TimerGranularity::default()
        };
        assert_eq!(g.tick_ns(Some(1000)), Some(1_000_000));
        assert_eq!(g.tick_ns(None), Some(4_000_000));
        assert_eq!(TimerGranularity::default().tick_ns(None), None);
    }
}
