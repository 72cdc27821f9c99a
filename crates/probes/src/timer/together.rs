//! Timer probes at several priorities (and policies) measured together:
//! every probe's threads on every CPU are set up, each at its own policy,
//! and released by one barrier with one time zero, so that the threads of
//! one CPU sleep until the same absolute expiries (time zero + k × period)
//! and are woken by the same timer interrupt. Each probe keeps its own
//! recorders: its figures are its priority's, on the same events as the
//! others'.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use super::config::Phase;
use super::{RunningTimerProbe, TimerProbe};
use crate::{threads, ProbeError, SettingError};

/// Starts `probes` together, in the order given; returns once every thread
/// of every probe is set up and measuring, each probe with its own
/// running handle (one time zero for all). One failed set-up stops them
/// all before any measures.
pub fn start_together(
    probes: Vec<TimerProbe>,
    stop: Arc<AtomicBool>,
) -> Result<Vec<RunningTimerProbe>, ProbeError> {
    check(&probes).map_err(ProbeError::Config)?;
    let mut specs = Vec::new();
    let mut sizes = Vec::with_capacity(probes.len());
    for p in &probes {
        let sched = p.sched();
        let own = p.specs(&stop);
        sizes.push(own.len());
        specs.extend(own.into_iter().map(|s| (s, sched)));
    }
    let threads = threads::start_each(specs)?;
    Ok(probes
        .into_iter()
        .zip(threads.split(&sizes))
        .map(|(p, t)| RunningTimerProbe::new(p.config, p.cpus, t, None))
        .collect())
}

/// One expiry grid for all: the same CPUs, period, timer service and
/// duration, a fixed phase, and no noise duty cycle (its pauses move a
/// probe's deadlines).
fn check(probes: &[TimerProbe]) -> Result<(), SettingError> {
    let Some(first) = probes.first().map(|p| &p.config) else {
        return Err(SettingError::NoCpu("to measure"));
    };
    let shared = probes.iter().all(|p| {
        let c = &p.config;
        c.cpus == first.cpus
            && c.period == first.period
            && c.api == first.api
            && c.duration == first.duration
            && c.phase == Phase::Fixed
            && c.noise_duty.is_none()
    });
    if shared {
        Ok(())
    } else {
        Err(SettingError::NotTogether)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::timer::{TimerApi, TimerConfig};
    use crate::RunningProbe;
    use latscope_model::{CpuId, Nanos, TimerSlack};
    use latscope_platform::SchedPolicy;

    fn config(priority: u32) -> TimerConfig {
        TimerConfig {
            cpus: vec![CpuId(0)],
            period: Nanos::from_millis(1),
            // OTHER: the test needs no privilege; the priority is recorded
            // but not applied.
            policy: SchedPolicy::Other,
            priority,
            nice: None,
            api: TimerApi::ClockNanosleep,
            phase: Phase::Fixed,
            threshold: None,
            duration: Some(Nanos::from_millis(50)),
            handoff: 0,
            noise_duty: None,
            timer_slack: TimerSlack::MINIMUM,
        }
    }

    #[test]
    fn probes_started_together_share_time_zero_and_each_keep_their_samples() {
        let probes = vec![
            TimerProbe::new(config(0)).unwrap(),
            TimerProbe::new(config(0)).unwrap(),
        ];
        let stop = Arc::new(AtomicBool::new(false));
        let running = start_together(probes, stop).unwrap();
        assert_eq!(running.len(), 2);
        let zero = running[0].start_ns();
        assert!(running.iter().all(|r| r.start_ns() == zero));
        assert!(running.iter().all(|r| r.setups().len() == 1));
        assert_ne!(running[0].setups()[0].tid, running[1].setups()[0].tid);
        for r in running {
            let fin = Box::new(r).finish();
            assert!(fin.error.is_none());
            let lat = &fin.snapshot.metrics[0];
            // 50 ms at 1 ms: deadlines 1..50 ms after time zero.
            assert!(lat.histogram.count() >= 45, "{}", lat.histogram.count());
        }
    }

    #[test]
    fn probes_that_would_not_share_a_grid_are_refused() {
        let mut other = config(0);
        other.period = Nanos::from_millis(2);
        let probes = vec![
            TimerProbe::new(config(0)).unwrap(),
            TimerProbe::new(other).unwrap(),
        ];
        let e = start_together(probes, Arc::new(AtomicBool::new(false)));
        assert!(matches!(
            e,
            Err(ProbeError::Config(SettingError::NotTogether))
        ));
    }
}
