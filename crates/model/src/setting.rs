//! The settings of a run as its errors name them. A library's error says
//! which settings it is about ([`Setting`]) and words its line once; each
//! front end passes a [`Namer`] that names the settings in its own words:
//! the command line by its options, the monitor by its configuration
//! keys (`on_threshold`), [`Neutral`] in plain words (`threshold action`,
//! what `Display` shows).

/// A user-facing setting of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Setting {
    Probe,
    Cpus,
    Period,
    Duration,
    Policy,
    Priority,
    /// Several priorities at once.
    Priorities,
    Nice,
    /// SCHED_DEADLINE's runtime.
    SchedRuntime,
    /// SCHED_DEADLINE's deadline.
    SchedDeadline,
    Threshold,
    TimerApi,
    Phase,
    TimerSlack,
    /// The noise probe's active period.
    Runtime,
    Pause,
    GapRatio,
    GapMin,
    Fp,
    Path,
    Payload,
    App,
    Buffers,
    Compute,
    StackPeriod,
    EpisodeCap,
    Workload,
    LoadLevel,
    Warmup,
    Checkpoint,
    StopAbove,
    FailAbove,
    Trace,
    /// Which tracer `Trace` uses.
    TraceBackend,
    Stacks,
    OnThreshold,
    ActionLimit,
}

impl Setting {
    /// Every setting, in the order of the enum (a new variant goes here
    /// too: the unit test checks the order).
    pub const ALL: [Setting; 37] = {
        use Setting as S;
        [
            S::Probe,
            S::Cpus,
            S::Period,
            S::Duration,
            S::Policy,
            S::Priority,
            S::Priorities,
            S::Nice,
            S::SchedRuntime,
            S::SchedDeadline,
            S::Threshold,
            S::TimerApi,
            S::Phase,
            S::TimerSlack,
            S::Runtime,
            S::Pause,
            S::GapRatio,
            S::GapMin,
            S::Fp,
            S::Path,
            S::Payload,
            S::App,
            S::Buffers,
            S::Compute,
            S::StackPeriod,
            S::EpisodeCap,
            S::Workload,
            S::LoadLevel,
            S::Warmup,
            S::Checkpoint,
            S::StopAbove,
            S::FailAbove,
            S::Trace,
            S::TraceBackend,
            S::Stacks,
            S::OnThreshold,
            S::ActionLimit,
        ]
    };

    /// The setting's stable identifier, in lowercase kebab case
    /// (`gap-ratio`, `on-threshold`, `sched-runtime`). The command line's
    /// option is `--` and the key; a front end with names of its own (the
    /// monitor's TOML keys, `on_threshold`) keeps its own table.
    pub fn key(self) -> &'static str {
        use Setting as S;
        match self {
            S::Probe => "probe",
            S::Cpus => "cpus",
            S::Period => "period",
            S::Duration => "duration",
            S::Policy => "policy",
            S::Priority => "priority",
            S::Priorities => "priorities",
            S::Nice => "nice",
            S::SchedRuntime => "sched-runtime",
            S::SchedDeadline => "sched-deadline",
            S::Threshold => "threshold",
            S::TimerApi => "timer-api",
            S::Phase => "phase",
            S::TimerSlack => "timer-slack",
            S::Runtime => "runtime",
            S::Pause => "pause",
            S::GapRatio => "gap-ratio",
            S::GapMin => "gap-min",
            S::Fp => "fp",
            S::Path => "path",
            S::Payload => "payload",
            S::App => "app",
            S::Buffers => "buffers",
            S::Compute => "compute",
            S::StackPeriod => "stack-period",
            S::EpisodeCap => "episode-cap",
            S::Workload => "workload",
            S::LoadLevel => "load-level",
            S::Warmup => "warmup",
            S::Checkpoint => "checkpoint",
            S::StopAbove => "stop-above",
            S::FailAbove => "fail-above",
            S::Trace => "trace",
            S::TraceBackend => "trace-backend",
            S::Stacks => "stacks",
            S::OnThreshold => "on-threshold",
            S::ActionLimit => "action-limit",
        }
    }

    /// The setting in plain words ("gap ratio", "stop-above limit").
    pub fn name(self) -> &'static str {
        use Setting as S;
        match self {
            S::Probe => "probe",
            S::Cpus => "cpus",
            S::Period => "period",
            S::Duration => "duration",
            S::Policy => "policy",
            S::Priority => "priority",
            S::Priorities => "priority list",
            S::Nice => "nice",
            S::SchedRuntime => "deadline runtime",
            S::SchedDeadline => "deadline",
            S::Threshold => "threshold",
            S::TimerApi => "timer service",
            S::Phase => "phase",
            S::TimerSlack => "timer slack",
            S::Runtime => "runtime",
            S::Pause => "pause",
            S::GapRatio => "gap ratio",
            S::GapMin => "gap min",
            S::Fp => "fp",
            S::Path => "path",
            S::Payload => "payload",
            S::App => "app",
            S::Buffers => "buffers",
            S::Compute => "compute time",
            S::StackPeriod => "stack period",
            S::EpisodeCap => "episode cap",
            S::Workload => "workload",
            S::LoadLevel => "load level",
            S::Warmup => "warm-up",
            S::Checkpoint => "checkpoint interval",
            S::StopAbove => "stop-above limit",
            S::FailAbove => "fail-above limit",
            S::Trace => "tracing",
            S::TraceBackend => "tracing backend",
            S::Stacks => "stacks",
            S::OnThreshold => "threshold action",
            S::ActionLimit => "action limit",
        }
    }
}

/// How a front end names the settings in an error's line.
pub trait Namer {
    /// The setting (`gap_ratio`, `gap ratio`).
    fn name(&self, s: Setting) -> String;

    /// The setting with a value (`the timer probe`, `period 2s`).
    fn given(&self, s: Setting, value: &str) -> String {
        format!("{} {value}", self.name(s))
    }
}

/// The settings in plain words: `the timer probe`, `period 2s`.
pub struct Neutral;

impl Namer for Neutral {
    fn name(&self, s: Setting) -> String {
        s.name().to_string()
    }

    fn given(&self, s: Setting, value: &str) -> String {
        match s {
            Setting::Probe | Setting::Policy | Setting::Phase => {
                format!("the {value} {}", s.name())
            }
            _ => format!("{} {value}", s.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn all_lists_every_setting_in_order() {
        for (i, s) in Setting::ALL.into_iter().enumerate() {
            assert_eq!(s as usize, i, "{s:?}");
        }
    }

    /// The keys are the command line's options without `--`: lowercase
    /// kebab case, one per setting.
    #[test]
    fn keys_are_unique_lowercase_kebab() {
        let mut seen = HashSet::new();
        for s in Setting::ALL {
            let key = s.key();
            assert!(seen.insert(key), "{key} twice");
            assert!(!key.starts_with('-') && !key.ends_with('-') && !key.contains("--"));
            assert!(
                key.chars().all(|c| c.is_ascii_lowercase() || c == '-'),
                "{key}"
            );
        }
        assert_eq!(Setting::GapRatio.key(), "gap-ratio");
        assert_eq!(Setting::SchedRuntime.key(), "sched-runtime");
    }
}
