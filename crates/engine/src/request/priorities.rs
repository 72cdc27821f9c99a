//! Several priorities measured at once (`run --priorities 95,50,other`,
//! `--probe noise --priorities rr:50,rr:50`): the list's syntax (shared
//! with the suite's), the rules that keep the threads on one expiry grid
//! (timer) or in one contest for the CPU (noise), and the cells, one per
//! item, that run together.

use latscope_platform::SchedPolicy;
use latscope_probes::noise::NoiseConfig;
use latscope_probes::timer::{Phase, TimerConfig};

use super::{ProbeKind, RequestError, RunRequest, SchedOptions};
use crate::config::ProbeSpec;
use latscope_model::Policy;

/// `95` → FIFO 95, `fifo:50` → FIFO 50, `rr:50` → RR 50, `other`,
/// `batch` and `idle` → that policy (priority 0), in the order given,
/// duplicates kept (the caller decides what they mean). Fails on the
/// first item that is none of these.
pub fn parse_priority_list(list: &str) -> Result<Vec<(SchedPolicy, u32)>, RequestError> {
    list.split(',')
        .map(str::trim)
        .map(|item| parse_item(item).ok_or_else(|| RequestError::PriorityItem(item.to_string())))
        .collect()
}

fn parse_item(item: &str) -> Option<(SchedPolicy, u32)> {
    match item {
        "other" => Some((SchedPolicy::Other, 0)),
        "batch" => Some((SchedPolicy::Batch, 0)),
        "idle" => Some((SchedPolicy::Idle, 0)),
        _ => {
            let (policy, n) = match item.split_once(':') {
                Some(("fifo", n)) => (SchedPolicy::Fifo, n),
                Some(("rr", n)) => (SchedPolicy::Rr, n),
                Some(_) => return None,
                None => (SchedPolicy::Fifo, item),
            };
            n.parse::<u32>()
                .ok()
                .filter(|p| (1..=99).contains(p))
                .map(|p| (policy, p))
        }
    }
}

/// "fifo 95", "rr 50", "other": one item as the errors name it.
pub fn priority_label((policy, priority): (SchedPolicy, u32)) -> String {
    match policy.has_priority() {
        true => format!("{} {priority}", policy.as_str()),
        false => policy.as_str().to_string(),
    }
}

impl RunRequest {
    /// The rules of several priorities at once: at least two, a priority
    /// without a real-time policy once (a FIFO or RR one may be shared:
    /// Bernadat's Table 6), the timer probe on a fixed grid or the noise
    /// probe, the list in place of the policy options, tracing for the
    /// timer probe only (the noise probe's analysis follows one thread per
    /// CPU).
    pub(super) fn check_priorities(&self) -> Result<(), RequestError> {
        let list = &self.priorities;
        if list.is_empty() {
            return Ok(());
        }
        if list.len() < 2 {
            return Err(RequestError::PrioritiesTooFew);
        }
        for (i, p) in list.iter().enumerate() {
            if list[..i].contains(p) && !p.0.has_priority() {
                return Err(RequestError::PriorityTwice(priority_label(*p)));
            }
        }
        if !matches!(self.probe, ProbeKind::Timer | ProbeKind::Noise) {
            return Err(RequestError::PrioritiesNeedTimer);
        }
        if self.policy != Policy::Fifo
            || self.priority.is_some()
            || self.sched != SchedOptions::default()
        {
            return Err(RequestError::PrioritiesWithPolicy);
        }
        if self.trace.on && self.probe != ProbeKind::Timer {
            return Err(RequestError::PrioritiesWithTrace);
        }
        if self.probe == ProbeKind::Timer && self.timer.phase == Phase::Random {
            return Err(RequestError::PrioritiesWithRandomPhase);
        }
        if self.timer.noise_duty.is_some() {
            return Err(RequestError::PrioritiesWithDuty);
        }
        Ok(())
    }
}

/// The probe (timer or noise) at each priority of the list, in its
/// order; none for another probe (the request refuses it).
pub(super) fn level_probes(base: &ProbeSpec, list: &[(SchedPolicy, u32)]) -> Vec<ProbeSpec> {
    list.iter()
        .filter_map(|&(policy, priority)| match base {
            ProbeSpec::Timer(t) => Some(ProbeSpec::Timer(TimerConfig {
                policy,
                priority,
                nice: None,
                ..t.clone()
            })),
            ProbeSpec::Noise(n) => Some(ProbeSpec::Noise(NoiseConfig {
                policy,
                priority,
                ..n.clone()
            })),
            _ => None,
        })
        .collect()
}
