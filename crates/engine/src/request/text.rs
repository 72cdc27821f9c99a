//! A run request as a user writes it: durations with their unit, lists,
//! an application's name, each setting as text, parsed into a
//! [`RunRequest`] ([`RequestText::parse`]). Nothing is decided here that
//! the request decides: a setting not given is the request's default, and
//! the rules between settings are [`RunRequest::plan`]'s. The errors name
//! the setting ([`Setting`]); each front end names it in its own words.

use latscope_model::{
    Compute, Namer, Nanos, Neutral, ParseDurationError, Policy, Setting, TimerSlack, UdpPath,
};
use latscope_probes::timer::{Phase, TimerApi};
use latscope_workloads::LoadLevel;

use super::{
    parse_priority_list, AppOptions, NoiseOptions, ProbeKind, RequestError, RunRequest,
    SchedOptions, TimerOptions, TraceOptions, UdpOptions,
};
use crate::actions::{Action, ActionError, Limit};
use crate::config::{TraceBackend, TracePlan};
use crate::workload_list::{split_workloads, WorkloadListError};

/// A setting whose text does not parse, one line each, worded by
/// [`TextError::line`] with the settings named by the caller.
#[derive(Debug, thiserror::Error)]
pub enum TextError {
    /// A duration's text ([`Setting::Period`], [`Setting::Warmup`] ...).
    Duration {
        setting: Setting,
        error: ParseDurationError,
    },
    TimerSlack(String),
    /// An application name no preset has; `known` lists them.
    UnknownApp {
        name: String,
        known: String,
    },
    Workloads(#[from] WorkloadListError),
    /// A threshold action or the actions' limit.
    Action(#[from] ActionError),
    /// The priority list.
    Request(#[from] RequestError),
}

impl TextError {
    /// The line, each setting named by `n`.
    pub fn line(&self, n: &dyn Namer) -> String {
        match self {
            TextError::Duration { setting, error } => format!("{}: {error}", n.name(*setting)),
            TextError::TimerSlack(e) => format!("{}: {e}", n.name(Setting::TimerSlack)),
            TextError::UnknownApp { name, known } => format!(
                "{}: unknown application '{name}' ({known})",
                n.name(Setting::App)
            ),
            TextError::Workloads(e) => format!("{}: {e}", n.name(Setting::Workload)),
            TextError::Action(e) => e.line(n),
            TextError::Request(e) => e.line(n),
        }
    }
}

impl std::fmt::Display for TextError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.line(&Neutral))
    }
}

/// A named application's buffering scheme (the forecast's presets): the
/// app probe's period, buffers and compute time when not given.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AppScheme {
    pub name: &'static str,
    pub period: Nanos,
    pub buffers: u32,
    pub compute: Compute,
}

/// Every setting of a run as text (`None`, empty, `false`: not given).
/// The choices from a closed set (probe, policy, timer service ...) come
/// typed.
#[derive(Clone, Debug)]
pub struct RequestText {
    pub probe: ProbeKind,
    pub cpus: Option<String>,
    pub period: Option<String>,
    pub duration: Option<String>,
    pub policy: Policy,
    pub priority: Option<u32>,
    /// Several priorities at once, e.g. `95,rr:50,other`.
    pub priorities: Option<String>,
    pub nice: Option<i32>,
    pub sched_runtime: Option<String>,
    pub sched_deadline: Option<String>,
    pub threshold: Option<String>,
    pub timer_api: TimerApi,
    pub phase: Phase,
    /// `default` or a duration; read for the timer probe only.
    pub timer_slack: Option<String>,
    pub runtime: Option<String>,
    /// A duration, or `0`: spin continuously.
    pub pause: Option<String>,
    pub gap_ratio: Option<u32>,
    pub gap_min: Option<String>,
    pub fp: bool,
    pub path: Option<UdpPath>,
    pub payload: Option<usize>,
    /// An application preset's name (the app probe only).
    pub app: Option<String>,
    pub buffers: Option<u32>,
    pub compute: Option<String>,
    pub trace: bool,
    pub trace_backend: TraceBackend,
    pub stacks: bool,
    /// Read only with `stacks`.
    pub stack_period: Option<String>,
    pub episode_cap: Option<usize>,
    /// One cell per workload, e.g. `idle,cpu,rt:90,500us/10ms`.
    pub workloads: Option<String>,
    pub load_level: LoadLevel,
    pub warmup: Option<String>,
    pub checkpoint: Option<String>,
    pub stop_above: Option<String>,
    pub fail_above: Option<String>,
    /// Threshold actions, e.g. `exec:CMD`, `snapshot:DIR`.
    pub actions: Vec<String>,
    /// `COUNT/PERIOD`, e.g. `10/h`.
    pub action_limit: Option<String>,
}

impl Default for RequestText {
    /// Nothing given: [`RunRequest::default`].
    fn default() -> RequestText {
        let d = RunRequest::default();
        RequestText {
            probe: d.probe,
            cpus: None,
            period: None,
            duration: None,
            policy: d.policy,
            priority: None,
            priorities: None,
            nice: None,
            sched_runtime: None,
            sched_deadline: None,
            threshold: None,
            timer_api: d.timer.api,
            phase: d.timer.phase,
            timer_slack: None,
            runtime: None,
            pause: None,
            gap_ratio: None,
            gap_min: None,
            fp: false,
            path: None,
            payload: None,
            app: None,
            buffers: None,
            compute: None,
            trace: false,
            trace_backend: d.trace.backend,
            stacks: false,
            stack_period: None,
            episode_cap: None,
            workloads: None,
            load_level: d.load_level,
            warmup: None,
            checkpoint: None,
            stop_above: None,
            fail_above: None,
            actions: Vec::new(),
            action_limit: None,
        }
    }
}

/// A duration setting's text.
pub fn duration(setting: Setting, text: &str) -> Result<Nanos, TextError> {
    Nanos::parse_duration(text).map_err(|error| TextError::Duration { setting, error })
}

fn optional(setting: Setting, text: &Option<String>) -> Result<Option<Nanos>, TextError> {
    text.as_deref().map(|t| duration(setting, t)).transpose()
}

fn or(setting: Setting, text: &Option<String>, default: Nanos) -> Result<Nanos, TextError> {
    Ok(optional(setting, text)?.unwrap_or(default))
}

impl RequestText {
    /// The request this text asks for, with `apps` the presets an
    /// application name is looked up in. Settings are read in the order
    /// of the request's fields; the first that does not parse is the
    /// error.
    pub fn parse(&self, apps: &[AppScheme]) -> Result<RunRequest, TextError> {
        use Setting as S;
        let d = RunRequest::default();
        let (period, app) = self.app_options(apps, optional(S::Period, &self.period)?)?;
        Ok(RunRequest {
            probe: self.probe,
            cpus: self.cpus.clone(),
            period,
            duration: Some(or(
                S::Duration,
                &self.duration,
                RunRequest::DEFAULT_DURATION,
            )?),
            policy: self.policy,
            priority: self.priority,
            priorities: match &self.priorities {
                Some(list) => parse_priority_list(list)?,
                None => Vec::new(),
            },
            sched: SchedOptions {
                nice: self.nice,
                runtime: optional(S::SchedRuntime, &self.sched_runtime)?,
                deadline: optional(S::SchedDeadline, &self.sched_deadline)?,
            },
            threshold: optional(S::Threshold, &self.threshold)?,
            timer: TimerOptions {
                api: self.timer_api,
                phase: self.phase,
                slack: self.timer_slack()?,
                noise_duty: None,
            },
            noise: self.noise_options()?,
            udp: UdpOptions {
                path: self.path,
                payload: self.payload,
            },
            app,
            trace: TraceOptions {
                on: self.trace,
                backend: self.trace_backend,
                stacks: self.stacks,
                // Read only when used, as the stacks are.
                stack_period: match self.stacks {
                    true => or(S::StackPeriod, &self.stack_period, d.trace.stack_period)?,
                    false => TracePlan::DEFAULT_STACK_PERIOD,
                },
                episode_cap: self.episode_cap.unwrap_or(d.trace.episode_cap),
            },
            workloads: match &self.workloads {
                None => Vec::new(),
                Some(list) => split_workloads(list)?,
            },
            load_level: self.load_level,
            warmup: or(S::Warmup, &self.warmup, d.warmup)?,
            checkpoint: or(S::Checkpoint, &self.checkpoint, d.checkpoint)?,
            stop_above: optional(S::StopAbove, &self.stop_above)?,
            fail_above: optional(S::FailAbove, &self.fail_above)?,
            actions: self
                .actions
                .iter()
                .map(|a| Action::parse(a))
                .collect::<Result<_, _>>()?,
            action_limit: match &self.action_limit {
                Some(t) => Limit::parse(t)?,
                None => Limit::default(),
            },
        })
    }

    /// The timer slack, read for the timer probe only: with another
    /// probe, any slack given makes the request refuse it.
    fn timer_slack(&self) -> Result<Option<TimerSlack>, TextError> {
        match (&self.timer_slack, self.probe) {
            (Some(t), ProbeKind::Timer) => TimerSlack::parse(t)
                .map(Some)
                .map_err(TextError::TimerSlack),
            (Some(_), _) => Ok(Some(TimerSlack::MINIMUM)),
            (None, _) => Ok(None),
        }
    }

    fn noise_options(&self) -> Result<NoiseOptions, TextError> {
        Ok(NoiseOptions {
            runtime: optional(Setting::Runtime, &self.runtime)?,
            // A pause of `0` (spin continuously) reads naturally without a
            // unit.
            pause: match self.pause.as_deref().map(str::trim) {
                None => None,
                Some("0") => Some(Nanos(0)),
                Some(t) => Some(duration(Setting::Pause, t)?),
            },
            gap_ratio: self.gap_ratio,
            gap_min: optional(Setting::GapMin, &self.gap_min)?,
            fp: self.fp,
        })
    }

    /// The period and the app probe's settings, an application's scheme
    /// expanded: its period when none is given, its buffers and its
    /// compute time (a share of the period) unless given. Looked up for
    /// the app probe only (with another probe the request refuses them).
    fn app_options(
        &self,
        apps: &[AppScheme],
        period: Option<Nanos>,
    ) -> Result<(Option<Nanos>, AppOptions), TextError> {
        let scheme = match (&self.app, self.probe) {
            (Some(name), ProbeKind::App) => Some(find_app(apps, name)?),
            _ => None,
        };
        let period = period.or(scheme.map(|s| s.period));
        let compute = match (&self.compute, scheme, period) {
            (Some(text), _, _) => Some(duration(Setting::Compute, text)?),
            (None, Some(s), Some(period)) => Some(Nanos(s.compute.nanos(period.0))),
            _ => None,
        };
        let app = AppOptions {
            // The scheme's own name is recorded (with another probe the
            // name given, which the request refuses).
            name: scheme.map_or(self.app.clone(), |s| Some(s.name.to_string())),
            buffers: self.buffers.or(scheme.map(|s| s.buffers)),
            compute,
        };
        Ok((period, app))
    }
}

fn find_app<'a>(apps: &'a [AppScheme], name: &str) -> Result<&'a AppScheme, TextError> {
    apps.iter()
        .find(|a| a.name.eq_ignore_ascii_case(name))
        .ok_or_else(|| TextError::UnknownApp {
            name: name.to_string(),
            known: apps.iter().map(|a| a.name).collect::<Vec<_>>().join(", "),
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const MODEM: AppScheme = AppScheme {
        name: "modem",
        period: Nanos::from_millis(10),
        buffers: 3,
        compute: Compute::Fraction(0.25),
    };

    fn text(f: impl FnOnce(&mut RequestText)) -> RequestText {
        let mut t = RequestText::default();
        f(&mut t);
        t
    }

    #[test]
    fn nothing_given_is_the_default_request() {
        assert_eq!(
            RequestText::default().parse(&[]).unwrap(),
            RunRequest::default()
        );
    }

    #[test]
    fn an_application_gives_what_is_not_given() {
        let app = |period: Option<&str>| {
            text(|t| {
                t.probe = ProbeKind::App;
                t.app = Some("MODEM".into());
                t.period = period.map(String::from);
            })
            .parse(&[MODEM])
            .unwrap()
        };
        let r = app(None);
        assert_eq!(r.period, Some(Nanos::from_millis(10)));
        assert_eq!(r.app.buffers, Some(3));
        assert_eq!(r.app.compute, Some(Nanos(2_500_000)));
        assert_eq!(r.app.name.as_deref(), Some("modem"));
        // The compute time is a share of the period given.
        assert_eq!(app(Some("4ms")).app.compute, Some(Nanos(1_000_000)));
        let e = text(|t| {
            t.probe = ProbeKind::App;
            t.app = Some("walkman".into());
        })
        .parse(&[
            MODEM,
            AppScheme {
                name: "adsl",
                ..MODEM
            },
        ])
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "app: unknown application 'walkman' (modem, adsl)"
        );
        // With another probe the name is kept for the request to refuse.
        let r = text(|t| t.app = Some("walkman".into())).parse(&[]).unwrap();
        assert_eq!(r.app.name.as_deref(), Some("walkman"));
    }

    #[test]
    fn errors_name_the_setting() {
        let e = text(|t| t.gap_min = Some("soon".into())).parse(&[]);
        assert!(matches!(
            e,
            Err(TextError::Duration {
                setting: Setting::GapMin,
                ..
            })
        ));
        let e = text(|t| t.timer_slack = Some("0".into())).parse(&[]);
        assert!(matches!(e, Err(TextError::TimerSlack(_))));
        let e = text(|t| t.actions = vec!["bogus".into()]).parse(&[]);
        assert!(matches!(e, Err(TextError::Action(ActionError::Action(_)))));
        let e = text(|t| t.priorities = Some("95,x".into())).parse(&[]);
        assert!(matches!(
            e,
            Err(TextError::Request(RequestError::PriorityItem(_)))
        ));
    }

    #[test]
    fn settings_read_only_where_they_apply() {
        // A pause of 0 needs no unit.
        let r = text(|t| t.pause = Some(" 0".into())).parse(&[]).unwrap();
        assert_eq!(r.noise.pause, Some(Nanos(0)));
        // The stack period is read with stacks only.
        let r = text(|t| t.stack_period = Some("bad".into())).parse(&[]);
        assert_eq!(
            r.unwrap().trace.stack_period,
            TracePlan::DEFAULT_STACK_PERIOD
        );
        // Any slack with another probe than the timer is one the request
        // refuses, unread.
        let r = text(|t| {
            t.probe = ProbeKind::Noise;
            t.timer_slack = Some("bad".into());
        })
        .parse(&[])
        .unwrap();
        assert_eq!(r.timer.slack, Some(TimerSlack::MINIMUM));
    }
}
