//! The round-robin quantum on the real kernel (issue 38, Bernadat's
//! Table 6): two SCHED_RR threads at one priority pinned to one CPU take
//! turns in slices as long as the quantum `sched_rr_get_interval` reports,
//! while two SCHED_FIFO threads at one priority do not take turns: the
//! first runs until it is done. Each thread spins reading CLOCK_MONOTONIC
//! and notes every gap over 1 ms (the other thread, or anything else, ran
//! then); the turns are the runs of one thread between runs of the other.
//! Needs root (real-time policies); run it under
//! `flock /tmp/latscope-measure.lock`. About 2 s.

#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Barrier};

use latscope_model::CpuId;
use latscope_platform::SchedPolicy;
use latscope_platform::{monotonic_ns, online_cpus, rr_interval, set_affinity, set_scheduler};

/// A pause longer than this is another task running.
const GAP_NS: u64 = 1_000_000;
const PRIORITY: u32 = 50;

/// When a thread ran: its runs between gaps, CLOCK_MONOTONIC ns.
type Runs = Vec<(u64, u64)>;

/// Spins until `until` says stop, noting each run between gaps. The
/// vector is allocated before the loop and never grows in it.
fn spin(until: impl Fn(u64, u64) -> bool) -> Runs {
    let mut runs = Vec::with_capacity(4096);
    let first = monotonic_ns();
    let (mut start, mut last) = (first, first);
    loop {
        let t = monotonic_ns();
        if t - last > GAP_NS && runs.len() < runs.capacity() - 1 {
            runs.push((start, last));
            start = t;
        }
        last = t;
        if until(first, t) {
            break;
        }
    }
    runs.push((start, last));
    runs
}

/// Two threads on `cpu` under `policy`, released together; each spins
/// while `until(its first timestamp, now)` is false. `None` when the
/// policy was refused (not root).
fn pair(
    cpu: CpuId,
    policy: SchedPolicy,
    until: fn(u64, u64, u64) -> bool,
    end: u64,
) -> Option<(Runs, Runs, u64)> {
    let barrier = Arc::new(Barrier::new(2));
    let spawn = |barrier: Arc<Barrier>| {
        std::thread::spawn(move || {
            set_affinity(cpu).unwrap();
            let ok = set_scheduler(policy, PRIORITY).is_ok();
            let quantum = rr_interval().map(|n| n.0).unwrap_or(0);
            barrier.wait();
            if !ok {
                return None;
            }
            let runs = spin(|first, now| until(first, now, end));
            let _ = set_scheduler(SchedPolicy::Other, 0);
            Some((runs, quantum))
        })
    };
    let a = spawn(Arc::clone(&barrier));
    let b = spawn(barrier);
    let (a, b) = (a.join().unwrap()?, b.join().unwrap()?);
    Some((a.0, b.0, a.1))
}

/// The turns: consecutive runs of one thread merged (another task's gap
/// in between is not a turn of the other), as (thread, time it ran).
fn turns(a: &Runs, b: &Runs) -> Vec<(char, u64)> {
    let mut all: Vec<(u64, u64, char)> = a.iter().map(|&(s, e)| (s, e, 'a')).collect();
    all.extend(b.iter().map(|&(s, e)| (s, e, 'b')));
    all.sort();
    let mut out: Vec<(char, u64)> = Vec::new();
    for (s, e, who) in all {
        match out.last_mut() {
            Some((w, ran)) if *w == who => *ran += e - s,
            _ => out.push((who, e - s)),
        }
    }
    out
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

#[test]
fn rr_threads_take_turns_of_the_quantum_and_fifo_threads_do_not() {
    let _kernel = crate::kernel();
    let cpu = online_cpus().unwrap().iter().last().unwrap();
    // RR: both spin until a common end, 1.2 s from now.
    let end = monotonic_ns() + 1_200_000_000;
    let Some((a, b, quantum)) = pair(cpu, SchedPolicy::Rr, |_, now, end| now >= end, end) else {
        println!("skipped: needs SCHED_RR (root or CAP_SYS_NICE)");
        return;
    };
    let rr = turns(&a, &b);
    // Not the first turn (the start) nor the last two (the end cut one).
    let full: Vec<u64> = rr[1..rr.len().saturating_sub(2).max(1)]
        .iter()
        .map(|t| t.1)
        .collect();
    let mut sorted = full.clone();
    sorted.sort();
    println!(
        "RR on CPU {cpu}: sched_rr_get_interval {:.1} ms; {} turns; full turns (ms): {:?}",
        ms(quantum),
        rr.len(),
        full.iter()
            .map(|&n| (ms(n) * 10.0).round() / 10.0)
            .collect::<Vec<_>>()
    );
    // FIFO: each spins 300 ms from its own first run.
    let fifo = pair(
        cpu,
        SchedPolicy::Fifo,
        |first, now, _| now - first >= 300_000_000,
        0,
    )
    .unwrap();
    let ft = turns(&fifo.0, &fifo.1);
    println!(
        "FIFO on CPU {cpu}: {} turns, ran (ms): {:?}; runs between gaps: {} and {}",
        ft.len(),
        ft.iter().map(|t| ms(t.1).round()).collect::<Vec<_>>(),
        fifo.0.len(),
        fifo.1.len()
    );
    assert!(
        quantum > 0,
        "the kernel reported no quantum for an RR thread"
    );
    // 1.2 s of quanta of 100 ms: about 12 turns; at least 4 unless the
    // quantum is longer than the span.
    if quantum * 5 > 1_200_000_000 {
        println!(
            "skipped: quantum {:.0} ms too long for a 1.2 s test",
            ms(quantum)
        );
        return;
    }
    assert!(full.len() >= 3, "RR threads did not take turns: {rr:?}");
    // The slice is counted in ticks of the running thread: it may end up
    // to a tick (<= 10 ms at HZ=100) late or early; 20 % or 10 ms allows that.
    let median = sorted[sorted.len() / 2];
    let tolerance = (quantum / 5).max(10_000_000);
    println!(
        "RR median turn {:.1} ms vs quantum {:.1} ms (tolerance {:.1} ms)",
        ms(median),
        ms(quantum),
        ms(tolerance)
    );
    assert!(
        median.abs_diff(quantum) <= tolerance,
        "RR turns of {:.1} ms, quantum {:.1} ms",
        ms(median),
        ms(quantum)
    );
    assert_eq!(ft.len(), 2, "FIFO threads took turns: {ft:?}");
}
