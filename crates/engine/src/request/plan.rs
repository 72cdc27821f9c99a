//! The request's rules: every cross-option check, then the run-wide
//! settings; each probe's own settings are in `probe`.

use latscope_model::{CpuSet, Nanos, Setting, TimerSlack};
use latscope_probes::timer::TimerConfig;

use super::{ProbeKind, RequestError, RunPlan, RunRequest};
use crate::config::{ProbeSpec, TracePlan};
use crate::cpus::select_cpus;

impl RunRequest {
    /// Checks the request against the online CPUs and yields the plan.
    /// The rules without the machine come first ([`Self::check_rules`]),
    /// then each probe's own checks; the app probe's work is calibrated
    /// here (on the first measured CPU).
    pub fn plan(&self, online: &CpuSet) -> Result<RunPlan, RequestError> {
        self.check_rules()?;
        let trace = self.trace_plan()?;
        let threshold = match &trace {
            // With tracing, its threshold is also every probe's.
            Some(t) => Some(t.threshold),
            None => self.threshold,
        };
        let cpus = self.cpu_set(online)?;
        self.check_deadline_cpus(&cpus, online)?;
        let timer = self.timer_config(&cpus, threshold, trace.as_ref())?;
        let probe = match self.probe {
            ProbeKind::Timer => ProbeSpec::Timer(timer.clone()),
            ProbeKind::Noise => ProbeSpec::Noise(self.noise_config(&timer, trace.as_ref())?),
            ProbeKind::Udp => ProbeSpec::Udp(self.udp_config(&cpus, &timer, trace.as_ref())?),
            ProbeKind::App => ProbeSpec::App(self.app_config(&timer)?),
        };
        let together = super::priorities::level_probes(&probe, &self.priorities);
        let probe = together.first().cloned().unwrap_or(probe);
        Ok(RunPlan {
            timer,
            checkpoint: self.checkpoint,
            cpus,
            trace,
            probe,
            together,
            workloads: if self.workloads.is_empty() {
                vec!["none".to_string()]
            } else {
                self.workloads.clone()
            },
            load_level: self.load_level.as_str().to_string(),
            warmup: self.warmup,
            stop_above: self.stop_above,
            fail_above: self.fail_above,
            actions: self.actions.clone(),
            action_limit: self.action_limit,
        })
    }

    /// The rules that need no machine: which settings need which others,
    /// the limits, the checkpoint interval and, for a run without end, the
    /// period range.
    pub fn check_rules(&self) -> Result<(), RequestError> {
        let trace = self.trace.on;
        if (self.trace.stacks || self.trace.episode_cap != Self::DEFAULT_EPISODE_CAP) && !trace {
            return Err(RequestError::TraceOptionsWithoutTrace);
        }
        if !self.actions.is_empty() && !trace {
            return Err(RequestError::ActionsWithoutTrace);
        }
        for (bound, value) in [
            (Setting::StopAbove, self.stop_above),
            (Setting::FailAbove, self.fail_above),
        ] {
            if value == Some(Nanos(0)) {
                return Err(RequestError::BoundZero(bound));
            }
        }
        if let (true, Some(stop), Some(t)) = (trace, self.stop_above, self.threshold) {
            if t > stop {
                return Err(RequestError::ThresholdAboveStop { threshold: t, stop });
            }
        }
        if self.checkpoint < Self::MIN_CHECKPOINT {
            return Err(RequestError::CheckpointTooShort);
        }
        self.check_probe_options()?;
        self.check_priorities()?;
        self.check_sched()?;
        if self.duration.is_none() {
            let (min, max) = Self::UNBOUNDED_PERIODS;
            let period = self.period();
            if period < min || period > max {
                return Err(RequestError::UnboundedPeriod(period));
            }
        }
        Ok(())
    }

    /// Each probe's own settings only with that probe.
    fn check_probe_options(&self) -> Result<(), RequestError> {
        let probe = self.probe;
        if self.timer.slack.is_some() && probe != ProbeKind::Timer {
            return Err(RequestError::TimerSlackWithoutTimer);
        }
        let n = &self.noise;
        let noise_given = n.runtime.is_some()
            || n.pause.is_some()
            || n.gap_ratio.is_some()
            || n.gap_min.is_some()
            || n.fp;
        if noise_given && probe != ProbeKind::Noise {
            return Err(RequestError::NoiseOptionsWithoutNoise);
        }
        if (self.udp.path.is_some() || self.udp.payload.is_some()) && probe != ProbeKind::Udp {
            return Err(RequestError::UdpOptionsWithoutUdp);
        }
        if probe == ProbeKind::App && self.trace.on {
            return Err(RequestError::TraceWithAppProbe);
        }
        let a = &self.app;
        let app_given = a.name.is_some() || a.buffers.is_some() || a.compute.is_some();
        if app_given && probe != ProbeKind::App {
            return Err(RequestError::AppOptionsWithoutApp);
        }
        Ok(())
    }

    /// The trace plan, when tracing: its threshold is the request's, else
    /// the default, at most the stop limit (the value that stops the run
    /// is then an episode).
    fn trace_plan(&self) -> Result<Option<TracePlan>, RequestError> {
        if !self.trace.on {
            return Ok(None);
        }
        let threshold = match (self.threshold, self.stop_above) {
            (None, Some(stop)) => Some(TracePlan::DEFAULT_THRESHOLD.min(stop)),
            (t, _) => t,
        };
        let mut plan =
            TracePlan::new(threshold, self.trace.episode_cap)?.with_backend(self.trace.backend);
        if self.trace.stacks {
            plan = plan.with_stacks(self.trace.stack_period)?;
        }
        Ok(Some(plan))
    }

    /// The CPUs as given, checked against the online ones; by default every
    /// online CPU (the udp probe: the first two, sender and receiver on two
    /// CPUs as a NIC's receive processing and the application usually are).
    fn cpu_set(&self, online: &CpuSet) -> Result<CpuSet, RequestError> {
        Ok(match &self.cpus {
            None if self.probe == ProbeKind::Udp => online.iter().take(2).collect(),
            None => online.clone(),
            Some(text) => select_cpus(text, online)?,
        })
    }

    /// The timer probe's configuration, which also carries what every
    /// probe shares.
    fn timer_config(
        &self,
        cpus: &CpuSet,
        threshold: Option<Nanos>,
        trace: Option<&TracePlan>,
    ) -> Result<TimerConfig, RequestError> {
        let period = self.period();
        let timer = TimerConfig {
            cpus: cpus.iter().collect(),
            period,
            policy: self.sched_policy(period),
            priority: self.priority(),
            nice: self.sched.nice,
            api: self.timer.api,
            phase: self.timer.phase,
            threshold,
            duration: self.duration,
            handoff: trace.map_or(0, |t| t.timer_handoff(period)),
            noise_duty: self.timer.noise_duty,
            timer_slack: self.timer.slack.unwrap_or(TimerSlack::MINIMUM),
        };
        // Period, duration, priority and phase are checked where the probe
        // defines them.
        timer.validate()?;
        Ok(timer)
    }
}
