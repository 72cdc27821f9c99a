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
    let threads = threads::start_group(&probes, |p| (p.specs(&stop), p.sched()))?;
    Ok(probes
        .into_iter()
        .zip(threads)
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

    fn median(mut v: Vec<u64>) -> u64 {
        v.sort_unstable();
        v.get(v.len() / 2).copied().unwrap_or(0)
    }

    /// One thread on `cpu` at `policy`, 2 s at 1 ms, every sample handed
    /// over (to pair the threads' wake-ups expiry by expiry).
    fn ordered(cpu: u32, policy: SchedPolicy, priority: u32) -> TimerConfig {
        TimerConfig {
            cpus: vec![CpuId(cpu)],
            policy,
            priority,
            duration: Some(Nanos::from_millis(2_000)),
            handoff: 4096,
            ..config(0)
        }
    }

    /// Threads at several priorities on one CPU, woken for the same absolute
    /// expiries, on the real kernel (root: SCHED_FIFO): the timer interrupt
    /// wakes them all and the scheduler runs them highest priority first,
    /// whatever order the list gives. Paired by deadline through the
    /// hand-over rings, every shared expiry is checked. About 2 s.
    #[test]
    fn equal_expiries_wake_the_higher_priority_first_on_the_real_kernel() {
        if !latscope_platform::caps::detect().root {
            eprintln!("skipped: needs root (SCHED_FIFO threads)");
            return;
        }
        let cpu = latscope_platform::online_cpus()
            .unwrap()
            .iter()
            .last()
            .unwrap()
            .0;
        // Listed lowest first: the order of the list is not the order of the
        // wake-ups.
        let levels = [
            (SchedPolicy::Other, 0),
            (SchedPolicy::Fifo, 10),
            (SchedPolicy::Fifo, 90),
        ];
        let probes = levels
            .iter()
            .map(|&(p, n)| TimerProbe::new(ordered(cpu, p, n)).unwrap())
            .collect();
        let running = start_together(probes, Arc::new(AtomicBool::new(false))).unwrap();
        let rings: Vec<_> = running
            .iter()
            .map(|r| r.handoffs().remove(0).ring)
            .collect();
        let mut wakes: std::collections::BTreeMap<u64, [Option<u64>; 3]> =
            std::collections::BTreeMap::new();
        for r in running {
            let fin = Box::new(r).finish();
            assert!(fin.error.is_none(), "{:?}", fin.error);
        }
        for (i, ring) in rings.iter().enumerate() {
            assert_eq!(ring.dropped(), 0);
            ring.drain(|deadline, wake| {
                wakes.entry(deadline).or_default()[i] = Some(wake);
            });
        }
        let shared: Vec<[u64; 3]> = wakes
            .values()
            .filter_map(|w| Some([w[0]?, w[1]?, w[2]?]))
            .collect();
        let in_order = shared
            .iter()
            .filter(|[other, f10, f90]| f90 < f10 && f10 < other)
            .count();
        let gap_10 = median(shared.iter().map(|w| w[1].saturating_sub(w[2])).collect());
        let gap_other = median(shared.iter().map(|w| w[0].saturating_sub(w[1])).collect());
        eprintln!(
            "{in_order} of {} shared expiries woke fifo 90, then fifo 10, then other; median gaps: fifo 10 {} after fifo 90, other {} after fifo 10",
            shared.len(),
            Nanos(gap_10),
            Nanos(gap_other)
        );
        assert!(shared.len() >= 1_900, "{} shared expiries", shared.len());
        // Strict priority on one CPU: the only exception is an expiry a higher
        // thread was still late for (it had not gone back to sleep), at most a
        // few in 2,000.
        assert!(
            in_order * 100 >= shared.len() * 99,
            "{in_order} of {} in priority order",
            shared.len()
        );
    }
}
