//! Noise probes at several priorities (and policies) measured together:
//! every probe's spinning threads on every CPU are set up, each at its own
//! policy, and released by one barrier with one time zero, so that threads
//! sharing a CPU compete for it from the same instant, as Bernadat's two
//! simultaneous instances of the preemption test did (Table 6). Each probe
//! keeps its own recorders: a thread's `noise.gap` holds the time the
//! others (and everything else) took the CPU from it.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use super::{NoiseConfig, NoiseProbe, RunningNoiseProbe};
use crate::{threads, ProbeError, SettingError};

/// Starts `probes` together, in the order given; returns once every thread
/// of every probe is set up and released, each probe with its own running
/// handle (one time zero for all). One failed set-up stops them all before
/// any spins.
pub fn start_together(
    probes: Vec<NoiseProbe>,
    stop: Arc<AtomicBool>,
) -> Result<Vec<RunningNoiseProbe>, ProbeError> {
    check(&probes).map_err(ProbeError::Config)?;
    let threads = threads::start_group(&probes, |p| (p.specs(&stop), p.sched()))?;
    Ok(probes
        .into_iter()
        .zip(threads)
        .map(|(p, t)| p.running(t))
        .collect())
}

/// One measurement for all: the same CPUs, duration, active periods,
/// pauses and interruption threshold, and no duty cycle (it belongs beside
/// the timer probe).
fn check(probes: &[NoiseProbe]) -> Result<(), SettingError> {
    let Some(first) = probes.first().map(|p| &p.config) else {
        return Err(SettingError::NoCpu("to measure"));
    };
    let same = |c: &NoiseConfig| {
        c.cpus == first.cpus
            && c.duration == first.duration
            && c.runtime == first.runtime
            && c.pause == first.pause
            && c.gap_ratio == first.gap_ratio
            && c.gap_min == first.gap_min
            && c.fp == first.fp
            && c.duty.is_none()
    };
    match probes.iter().all(|p| same(&p.config)) {
        true => Ok(()),
        false => Err(SettingError::NotTogether),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::RunningProbe;
    use latscope_model::{CpuId, Nanos};
    use latscope_platform::SchedPolicy;

    fn config() -> NoiseConfig {
        NoiseConfig {
            cpus: vec![CpuId(0)],
            // OTHER: no privilege needed; the two threads share CPU 0 by
            // CFS, each spinning part of the time.
            policy: SchedPolicy::Other,
            priority: 0,
            runtime: Nanos::from_millis(20),
            pause: Nanos(0),
            gap_ratio: 4,
            gap_min: None,
            fp: false,
            threshold: None,
            duration: Some(Nanos::from_millis(200)),
            handoff: 0,
            force_vdso: false,
            duty: None,
        }
    }

    #[test]
    fn probes_started_together_share_time_zero_and_keep_their_own_figures() {
        let probes = vec![
            NoiseProbe::new(config()).unwrap(),
            NoiseProbe::new(config()).unwrap(),
        ];
        let running = start_together(probes, Arc::new(AtomicBool::new(false))).unwrap();
        assert_eq!(running.len(), 2);
        let zero = running[0].start_ns();
        assert!(running.iter().all(|r| r.start_ns() == zero));
        assert_ne!(running[0].setups()[0].tid, running[1].setups()[0].tid);
        for r in running {
            let fin = Box::new(r).finish();
            assert!(fin.error.is_none(), "{:?}", fin.error);
            let s = &fin.snapshot.stats.noise[0];
            assert_eq!(fin.snapshot.metrics[0].histogram.count(), s.interruptions);
        }
    }

    #[test]
    fn probes_that_would_not_measure_alike_are_refused() {
        let mut other = config();
        other.pause = Nanos::from_millis(33);
        let probes = vec![
            NoiseProbe::new(config()).unwrap(),
            NoiseProbe::new(other).unwrap(),
        ];
        let e = start_together(probes, Arc::new(AtomicBool::new(false)));
        assert!(matches!(
            e,
            Err(ProbeError::Config(SettingError::NotTogether))
        ));
    }
}
