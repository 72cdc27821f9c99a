//! The BPF backend reads the steal counter per wake-up (needs root and a
//! build with the BPF programs; otherwise prints `skipped: needs …`): a
//! thread sleeps to 1 ms deadlines on CPU 0 for 3 s, and the steal its
//! records carry (arming → callback → switch-in; the windows of
//! consecutive wake-ups do not overlap) adds up to no more than the steal
//! /proc/stat counted for CPU 0 over the run, give or take /proc/stat's
//! granularity. Steal itself depends on the host: when it stole nothing
//! during the run the part that needs it says `skipped`.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use latscope_model::CpuId;
use latscope_platform::bpf::{self, BpfConfig, TimerRecord, TraceBpf};
use latscope_platform::{
    current_tid, monotonic_ns, set_affinity, set_scheduler, timers, SchedPolicy,
};

/// /proc/stat's steal for `cpu`, ns (its unit is USER_HZ, 10 ms here).
fn proc_stat_steal(cpu: u32) -> u64 {
    let text = std::fs::read_to_string("/proc/stat").unwrap();
    let tag = format!("cpu{cpu} ");
    let line = text.lines().find(|l| l.starts_with(&tag)).unwrap();
    let ticks: u64 = line.split_whitespace().nth(8).unwrap().parse().unwrap();
    ticks * 10_000_000
}

/// /proc/stat's unit, and the kernel's tick (HZ=250 or more): the counter
/// it prints is taken from the steal clock at ticks and truncated to its
/// unit, so it may lag by a tick and read a unit low at either end.
const SLACK_NS: u64 = 2 * 10_000_000 + 2 * 4_000_000;

fn sleeper(ready: std::sync::mpsc::Sender<i32>, go: std::sync::mpsc::Receiver<()>) {
    set_affinity(CpuId(0)).unwrap();
    let _ = set_scheduler(SchedPolicy::Fifo, 10);
    latscope_platform::set_timer_slack(1).unwrap();
    ready.send(current_tid()).unwrap();
    go.recv().unwrap();
    let start = monotonic_ns();
    let mut next = start + 1_000_000;
    while next < start + 3_000_000_000 {
        timers::sleep_until(next).unwrap();
        next += 1_000_000;
    }
}

#[test]
fn the_steal_in_the_records_is_at_most_what_proc_stat_counted() {
    let _kernel = crate::kernel();
    if !latscope_platform::caps::detect().root {
        println!("skipped: needs root (BPF)");
        return;
    }
    if !bpf::built() {
        println!("skipped: needs the BPF programs (this build had no clang)");
        return;
    }
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel();
    let worker = std::thread::spawn(move || sleeper(ready_tx, go_rx));
    let tid = ready_rx.recv().unwrap();
    let mut kernel = TraceBpf::open(&BpfConfig {
        tids: vec![u32::try_from(tid).unwrap()],
        cpus: Vec::new(),
        recorder_slots: 0,
        histograms: false,
        ..BpfConfig::default()
    })
    .unwrap();
    let Some(counter) = kernel.steal_counter() else {
        drop(go_tx);
        let _ = worker.join();
        println!(
            "skipped: needs a steal counter in this kernel's BTF (steal_time or kernel_cpustat)"
        );
        return;
    };
    let before = proc_stat_steal(0);
    go_tx.send(()).unwrap();
    let mut records: Vec<TimerRecord> = Vec::new();
    while !worker.is_finished() {
        std::thread::sleep(Duration::from_millis(20));
        kernel.drain(&mut records);
    }
    worker.join().unwrap();
    // Let /proc/stat catch up with steal accrued near the end (it takes at
    // most a tick's worth at each tick).
    std::thread::sleep(Duration::from_millis(200));
    kernel.drain(&mut records);
    let after = proc_stat_steal(0);
    let counters = kernel.counters().unwrap();
    assert_eq!(counters.samples_dropped, 0);
    assert!(records.len() > 2_000, "{} records", records.len());
    let irq: u64 = records.iter().map(|r| u64::from(r.steal_irq)).sum();
    let sched: u64 = records.iter().map(|r| u64::from(r.steal_sched)).sum();
    let with_steal = records
        .iter()
        .filter(|r| r.steal_irq > 0 || r.steal_sched > 0)
        .count();
    let delta = after.saturating_sub(before);
    println!(
        "{counter:?}: {} records, steal in them {} µs (irq {} µs, sched {} µs; {with_steal} records with some), /proc/stat cpu0 steal over the run {} µs",
        records.len(),
        (irq + sched) / 1_000,
        irq / 1_000,
        sched / 1_000,
        delta / 1_000
    );
    assert!(
        irq + sched <= delta + SLACK_NS,
        "the records' steal {} ns exceeds /proc/stat's {delta} ns + {SLACK_NS} ns",
        irq + sched
    );
    if delta < 4 * 10_000_000 {
        println!("skipped: needs steal time on this host (none during the run)");
        return;
    }
    // The windows cover nearly all of the run (arming to switch-in of
    // every 1 ms period): steal /proc/stat saw must show in them.
    assert!(
        irq + sched > 0,
        "no steal in the records while /proc/stat counted {delta} ns"
    );
}
