//! Timer threads at several priorities on one CPU, woken for the same
//! absolute expiries (`timer::start_together`), on the real kernel: the
//! timer interrupt wakes them all, and the scheduler runs them highest
//! priority first, whatever order the list gives. Paired by deadline
//! through the hand-over rings, every shared expiry is checked. Needs
//! root (SCHED_FIFO); about 2 s, under `flock /tmp/latscope-measure.lock`.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use latscope_model::{CpuId, Nanos};
use latscope_platform::SchedPolicy;
use latscope_probes::timer::{start_together, Phase, TimerApi, TimerConfig, TimerProbe};
use latscope_probes::RunningProbe;

fn config(cpu: u32, policy: SchedPolicy, priority: u32) -> TimerConfig {
    TimerConfig {
        cpus: vec![CpuId(cpu)],
        period: Nanos::from_millis(1),
        policy,
        priority,
        nice: None,
        api: TimerApi::ClockNanosleep,
        phase: Phase::Fixed,
        threshold: None,
        duration: Some(Nanos::from_millis(2_000)),
        handoff: 4096,
        noise_duty: None,
        timer_slack: Default::default(),
    }
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

#[test]
fn equal_expiries_wake_the_higher_priority_first() {
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
        .map(|&(p, n)| TimerProbe::new(config(cpu, p, n)).unwrap())
        .collect();
    let running = start_together(probes, Arc::new(AtomicBool::new(false))).unwrap();
    let rings: Vec<_> = running
        .iter()
        .map(|r| r.handoffs().remove(0).ring)
        .collect();
    let mut wakes: BTreeMap<u64, [Option<u64>; 3]> = BTreeMap::new();
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
