//! The workload sampler on this machine: known activity started by the test
//! shows up in the figures. The machine is shared, so the assertions are
//! lower bounds on what the test itself did, never exact values.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use latscope_model::{CpuId, CpuSet};
use latscope_platform::procstat::Sampler;
use latscope_platform::{online_cpus, set_affinity};

fn last_cpu() -> CpuId {
    online_cpus().unwrap().iter().last().unwrap()
}

/// Spins on `cpu` until `stop`.
fn spinner(cpu: CpuId, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        set_affinity(cpu).unwrap();
        let mut x = 0u64;
        while !stop.load(Ordering::Relaxed) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
    })
}

#[test]
fn a_busy_cpu_shows_user_time() {
    let _kernel = crate::kernel();
    let cpu = last_cpu();
    let set: CpuSet = [cpu].into_iter().collect();
    let mut sampler = Sampler::new(&set);
    std::thread::sleep(Duration::from_secs(1));
    let quiet = sampler.sample();

    let stop = Arc::new(AtomicBool::new(false));
    let spin = spinner(cpu, stop.clone());
    std::thread::sleep(Duration::from_secs(1));
    let busy = sampler.sample();
    stop.store(true, Ordering::Relaxed);
    spin.join().unwrap();

    let q = quiet.cpu.clone().unwrap();
    let b = busy.cpu.clone().unwrap();
    eprintln!("CPU {cpu}: quiet second {q:?}\nbusy second {b:?}");
    let sum = b.busy() + b.idle + b.iowait;
    assert!((sum - 100.0).abs() < 0.5, "shares add up to {sum}");
    assert!(b.user > 40.0, "a spinning thread gave user {}%", b.user);
    assert!(busy.cpu_all.is_some() && busy.context_switches_per_s.is_some());
    assert!(busy.runnable.unwrap() >= 1.0);
    assert!(busy.interrupts_per_s.unwrap() > 0.0);

    let stats = sampler.finish("cpu");
    assert_eq!(stats.samples, 2);
    assert_eq!(stats.cpus, cpu.to_string());
    assert_eq!(stats.seconds.len(), 2);
    assert!(stats.mean.elapsed_ns.0 >= 2_000_000_000);
    assert!(!stats.top_interrupts.is_empty());
    assert!(stats.softirqs_per_s.contains_key("TIMER"));
    // The local timer alone fires at HZ on a busy CPU.
    assert!(stats.mean.interrupts_measured_per_s.unwrap() > 50.0);
}

#[test]
fn system_calls_are_counted_when_allowed() {
    let _kernel = crate::kernel();
    let mut sampler = Sampler::new(&CpuSet::new());
    if !sampler.counts_syscalls() {
        assert!(sampler
            .notes()
            .iter()
            .any(|n| n.starts_with("system calls not counted")));
        eprintln!(
            "skipped: needs perf tracepoint counters ({:?})",
            sampler.notes()
        );
        assert_eq!(sampler.sample().syscalls_per_s, None);
        return;
    }
    let calls = 200_000u64;
    let start = Instant::now();
    for _ in 0..calls {
        std::hint::black_box(std::os::unix::process::parent_id());
    }
    let spent = start.elapsed();
    let s = sampler.sample();
    let rate = s.syscalls_per_s.unwrap();
    let counted = rate * s.elapsed_ns.0 as f64 / 1e9;
    eprintln!("{calls} getppid in {spent:?}: {counted:.0} system calls counted ({rate}/s)");
    assert!(
        counted >= calls as f64 * 0.999,
        "counted {counted}, made {calls}"
    );
}

#[test]
fn a_ping_pong_shows_context_switches() {
    let _kernel = crate::kernel();
    let cpu = last_cpu();
    let mut sampler = Sampler::new(&CpuSet::new());
    let rounds = 20_000u64;
    let (to_b, from_a) = mpsc::channel::<u64>();
    let (to_a, from_b) = mpsc::channel::<u64>();
    // Both on one CPU: every hand-over is a switch from one to the other.
    let b = std::thread::spawn(move || {
        set_affinity(cpu).unwrap();
        while let Ok(n) = from_a.recv() {
            if to_a.send(n).is_err() {
                break;
            }
        }
    });
    let a = std::thread::spawn(move || {
        set_affinity(cpu).unwrap();
        for n in 0..rounds {
            to_b.send(n).unwrap();
            from_b.recv().unwrap();
        }
    });
    a.join().unwrap();
    b.join().unwrap();
    let s = sampler.sample();
    let switches = s.context_switches_per_s.unwrap() * s.elapsed_ns.0 as f64 / 1e9;
    eprintln!("{rounds} round trips: {switches:.0} context switches");
    assert!(switches >= 2.0 * rounds as f64 * 0.99, "{switches}");
    // Two threads were created.
    assert!(s.processes_per_s.unwrap() > 0.0);
}
