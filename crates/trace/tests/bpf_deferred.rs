//! Deferred work by function and device from the BPF backend, live (needs
//! root and a build with the BPF programs; otherwise prints `skipped: …`).
//! With CPUs 0 and 1 traced, a thread pinned to CPU 0 sends UDP datagrams
//! over loopback to its own socket (each goes through the CPU's backlog
//! NAPI instance, which has no device: `(no_device)`, in the NET_RX
//! softirq), waits on a socket with a receive time-out (a timer-wheel timer,
//! `process_timeout`, in the TIMER softirq) and sleeps (its own hrtimer,
//! `hrtimer_wakeup`, in the timer interrupt). The kernel's histograms must
//! split each of them out, under the context it ran in, and no split may
//! take more time than the softirq it ran in; the flight recorder must
//! hold the same events for an episode's window.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::net::UdpSocket;
use std::time::Duration;

use latscope_model::CpuId;
use latscope_platform::{bpf, monotonic_ns, set_affinity, timers};
use latscope_stats::Histogram;
use latscope_trace::analysis::work::WorkKey;
use latscope_trace::bpf::{BpfTracer, BpfTracerConfig, DEFAULT_RECORDER_SLOTS};
use latscope_trace::{DeferredKind, EventKind, Kallsyms, NameId, HARDIRQ_CONTEXT};

const TIMER: u32 = 1;
const NET_RX: u32 = 3;
const DATAGRAMS: usize = 2_000;
const TIMEOUTS: usize = 25;

fn required() -> bool {
    std::env::var_os("LATSCOPE_REQUIRE_BPF").is_some_and(|v| v != "0")
}

fn open() -> Option<BpfTracer> {
    if !latscope_platform::caps::detect().root {
        println!("skipped: needs root (BPF)");
        return None;
    }
    if !bpf::built() {
        println!("skipped: needs the BPF programs (this build had no clang)");
        return None;
    }
    let config = BpfTracerConfig {
        cpus: vec![0, 1],
        recorder_slots: DEFAULT_RECORDER_SLOTS,
        histograms: true,
        stack_threshold_ns: 0,
    };
    match BpfTracer::open(&config) {
        Ok(t) => Some(t),
        Err(e) if required() => panic!("LATSCOPE_REQUIRE_BPF is set, but BPF did not load: {e}"),
        Err(e) => {
            println!("skipped: BPF unavailable: {e}");
            None
        }
    }
}

/// On CPU 0: datagrams to our own socket, receive time-outs, short sleeps.
fn load() {
    std::thread::spawn(|| {
        set_affinity(CpuId(0)).unwrap();
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_nonblocking(true).unwrap();
        let mut buf = [0u8; 256];
        for i in 0..DATAGRAMS {
            tx.send_to(&[i as u8; 64], rx.local_addr().unwrap())
                .unwrap();
            while rx.recv(&mut buf).is_ok() {}
        }
        rx.set_nonblocking(false).unwrap();
        rx.set_read_timeout(Some(Duration::from_millis(4))).unwrap();
        for _ in 0..TIMEOUTS {
            assert!(rx.recv(&mut buf).is_err());
        }
        for _ in 0..50 {
            timers::sleep_for(500_000).unwrap();
        }
    })
    .join()
    .unwrap();
}

fn name(k: Option<&Kallsyms>, f: u64) -> String {
    k.and_then(|k| k.resolve(f))
        .map_or_else(|| format!("{f:#x}"), |s| s.name.to_string())
}

/// Count and total time (µs) of the histograms whose key passes `pick`.
fn sum(work: &HashMap<WorkKey, Histogram>, pick: impl Fn(&WorkKey) -> bool) -> (u64, f64) {
    work.iter()
        .filter(|(k, _)| pick(k))
        .fold((0, 0.0), |(n, t), (_, h)| {
            (n + h.count(), t + h.sum() as f64 / 1e3)
        })
}

#[test]
fn deferred_work_is_split_by_function_and_device() {
    let _kernel = crate::kernel();
    let Some(mut tracer) = open() else {
        return;
    };
    let missing = tracer.missing_events().to_vec();
    let start = monotonic_ns();
    load();
    let (window, _complete, names) = tracer.window(0, start, u64::MAX);
    let napi_events = window
        .iter()
        .filter(|e| matches!(e.kind, EventKind::NapiPoll { dev, .. } if names.get(dev) == "(no_device)"))
        .count();
    let timer_events = window
        .iter()
        .filter(|e| matches!(e.kind, EventKind::TimerExpireEntry { .. }))
        .count();
    std::thread::sleep(Duration::from_millis(50));
    let work = tracer.final_work_histograms();
    let names = tracer.names();
    let syms = Kallsyms::load().ok();
    let mut rows: Vec<(String, u64, f64)> = Vec::new();
    for (k, h) in &work {
        if let WorkKey::Deferred { vec, kind, source } = *k {
            let what = match kind {
                // 1 + the device name's id (0: the overflow bucket).
                DeferredKind::Napi if source == 0 => "(other)".to_string(),
                DeferredKind::Napi => names.get(NameId(source as u32 - 1)).to_string(),
                _ => name(syms.as_ref(), source),
            };
            let label = format!(
                "{} {} {what}",
                latscope_trace::event::context_name(vec),
                kind.as_str()
            );
            rows.push((label, h.count(), h.sum() as f64 / 1e3));
        }
    }
    rows.sort_by(|a, b| b.2.total_cmp(&a.2));
    println!("recorder window on CPU 0: {napi_events} napi_poll (no_device), {timer_events} timer_expire_entry");
    println!(
        "deferred work found ({} keys, missing tracepoints {missing:?}):",
        rows.len()
    );
    for (label, n, us) in &rows {
        println!("  {label:60} {n:>6} runs {us:>10.1} µs");
    }
    println!("lost {}", tracer.lost());

    if missing.iter().any(|m| m == "napi_poll") {
        println!("skipped: needs the napi:napi_poll tracepoint (NAPI by device)");
    } else {
        let napi = sum(&work, |k| {
            matches!(*k, WorkKey::Deferred { vec: NET_RX, kind: DeferredKind::Napi, source }
                if source > 0 && names.get(NameId(source as u32 - 1)) == "(no_device)")
        });
        let net_rx = sum(&work, |k| *k == WorkKey::SoftirqExec { vec: NET_RX });
        println!("napi (no_device) {napi:?} within NET_RX {net_rx:?}");
        assert!(napi.0 > 0, "no NAPI poll of (no_device) under NET_RX");
        assert!(
            napi_events > 0,
            "the recorder holds no napi_poll of (no_device)"
        );
        assert!(napi.1 <= net_rx.1 * 1.01, "NAPI time beyond its softirq's");
    }
    if missing.iter().any(|m| m == "timer_expire_entry") {
        println!("skipped: needs the timer:timer_expire_entry tracepoint (timer-wheel callbacks)");
    } else {
        let timer = sum(&work, |k| {
            matches!(
                *k,
                WorkKey::Deferred {
                    vec: TIMER,
                    kind: DeferredKind::Timer,
                    ..
                }
            )
        });
        let softirq = sum(&work, |k| *k == WorkKey::SoftirqExec { vec: TIMER });
        println!("timer-wheel callbacks {timer:?} within TIMER {softirq:?}");
        assert!(
            timer.0 >= TIMEOUTS as u64 / 2,
            "too few timer-wheel callbacks: {timer:?}"
        );
        assert!(
            timer.1 <= softirq.1 * 1.01,
            "timer callback time beyond its softirq's"
        );
        if syms.is_some() {
            assert!(rows.iter().any(|r| r.0.ends_with("timer process_timeout")));
        }
    }
    let hrtimer = sum(&work, |k| {
        matches!(
            *k,
            WorkKey::Deferred {
                vec: HARDIRQ_CONTEXT,
                kind: DeferredKind::Hrtimer,
                ..
            }
        )
    });
    assert!(
        hrtimer.0 >= 25,
        "too few hrtimer callbacks in hard interrupts: {hrtimer:?}"
    );
    if syms.is_some() {
        assert!(rows.iter().any(|r| r.0 == "hardirq hrtimer hrtimer_wakeup"));
    }
}
