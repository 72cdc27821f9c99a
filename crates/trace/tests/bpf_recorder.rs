//! The BPF flight recorder against the perf backend on the same events
//! (needs root and a build with the BPF programs; otherwise prints
//! `skipped: …`): both watch CPU 0 for about half a second while a thread
//! there sleeps 1 ms at a time and reads /dev/zero, and every event either
//! saw (away from the ends) must be in the other with the same kind, task
//! and fields, at a time within a few microseconds.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::io::Read;
use std::time::Duration;

use latscope_model::CpuId;
use latscope_platform::bpf::{self, BpfConfig, RecordedEvent, RecordedKind, TraceBpf};
use latscope_platform::{current_tid, monotonic_ns, set_affinity, timers};
use latscope_trace::{Comm, Decoded, EventKind, Names, TraceEvent, Tracer, TracerConfig};

/// The two backends read the clock at different instants of one
/// tracepoint; the host can stop the vCPU between them (see bpf_timer.rs).
const SAME_INSTANT_NS: u64 = 20_000;
/// A pair further apart than SAME_INSTANT_NS but within this is one event
/// split by the host stopping the vCPU between the two backends' handlers
/// (CI saw 23 and 26 µs): counted apart from the misses, which an event in
/// one backend only would be.
const SPLIT_NS: u64 = 1_000_000;
/// Events this close to either end may be in one backend only.
const EDGE_NS: u64 = 20_000_000;

fn s(c: &[u8]) -> String {
    Comm::from_bytes(c).as_str().into_owned()
}

/// An event's kind, task and fields as one comparable string.
fn perf_key(e: &TraceEvent, names: &Names) -> (String, String) {
    let (kind, fields) = match e.kind {
        EventKind::SchedSwitch {
            prev_pid,
            prev_prio,
            prev_state,
            prev_comm,
            next_pid,
            next_prio,
            next_comm,
        } => (
            "switch",
            format!(
                "{prev_pid} {prev_prio} {prev_state} {} {next_pid} {next_prio} {}",
                prev_comm.as_str(),
                next_comm.as_str()
            ),
        ),
        EventKind::SchedWaking {
            pid,
            prio,
            target_cpu,
            comm,
        } => (
            "waking",
            format!("{pid} {prio} {target_cpu} {}", comm.as_str()),
        ),
        EventKind::HrtimerStart {
            hrtimer,
            function,
            expires,
            softexpires,
        } => (
            "hrtimer_start",
            format!("{hrtimer:x} {function:x} {expires} {softexpires}"),
        ),
        EventKind::HrtimerExpireEntry {
            hrtimer,
            now,
            function,
        } => (
            "hrtimer_expire_entry",
            format!("{hrtimer:x} {now} {function:x}"),
        ),
        EventKind::HrtimerExpireExit { hrtimer } => ("hrtimer_expire_exit", format!("{hrtimer:x}")),
        EventKind::IrqEntry { irq, name } => {
            // The recorder keeps 15 bytes of the handler's name.
            let n: String = names.get(name).bytes().take(15).map(char::from).collect();
            ("irq_entry", format!("{irq} {n}"))
        }
        EventKind::IrqExit { irq, ret } => ("irq_exit", format!("{irq} {ret}")),
        EventKind::SoftirqRaise { vec } => ("softirq_raise", vec.to_string()),
        EventKind::SoftirqEntry { vec } => ("softirq_entry", vec.to_string()),
        EventKind::SoftirqExit { vec } => ("softirq_exit", vec.to_string()),
        EventKind::VectorEntry { name, vector } => {
            ("vector_entry", format!("{} {vector}", names.get(name)))
        }
        EventKind::VectorExit { name, vector } => {
            ("vector_exit", format!("{} {vector}", names.get(name)))
        }
        EventKind::Nmi {
            handler,
            delta_ns,
            handled,
        } => ("nmi", format!("{handler:x} {delta_ns} {handled}")),
        EventKind::WorkStart { work, function } => ("work_start", format!("{work:x} {function:x}")),
        EventKind::WorkEnd { work, function } => ("work_end", format!("{work:x} {function:x}")),
        EventKind::TimerExpireEntry { timer, function } => {
            ("timer_entry", format!("{timer:x} {function:x}"))
        }
        EventKind::TimerExpireExit { timer } => ("timer_exit", format!("{timer:x}")),
        EventKind::TaskletEntry { tasklet, function } => {
            ("tasklet_entry", format!("{tasklet:x} {function:x}"))
        }
        EventKind::TaskletExit { tasklet, function } => {
            ("tasklet_exit", format!("{tasklet:x} {function:x}"))
        }
        EventKind::NapiPoll {
            napi,
            dev,
            work,
            budget,
        } => {
            // The recorder keeps 15 bytes of the device's name.
            let n: String = names.get(dev).bytes().take(15).map(char::from).collect();
            ("napi_poll", format!("{napi:x} {n} {work} {budget}"))
        }
    };
    (kind.to_string(), format!("tid {} {fields}", e.tid))
}

fn bpf_key(e: &RecordedEvent) -> (String, String) {
    let (kind, fields) = match e.kind {
        RecordedKind::Switch {
            prev_pid,
            prev_prio,
            prev_state,
            prev_comm,
            next_pid,
            next_prio,
            next_comm,
        } => (
            "switch",
            format!(
                "{prev_pid} {prev_prio} {prev_state} {} {next_pid} {next_prio} {}",
                s(&prev_comm),
                s(&next_comm)
            ),
        ),
        RecordedKind::Waking {
            pid,
            prio,
            target_cpu,
            comm,
        } => ("waking", format!("{pid} {prio} {target_cpu} {}", s(&comm))),
        RecordedKind::HrtimerStart {
            hrtimer,
            function,
            expires,
            softexpires,
        } => (
            "hrtimer_start",
            format!("{hrtimer:x} {function:x} {expires} {softexpires}"),
        ),
        RecordedKind::HrtimerExpireEntry {
            hrtimer,
            now,
            function,
        } => (
            "hrtimer_expire_entry",
            format!("{hrtimer:x} {now} {function:x}"),
        ),
        RecordedKind::HrtimerExpireExit { hrtimer } => {
            ("hrtimer_expire_exit", format!("{hrtimer:x}"))
        }
        RecordedKind::IrqEntry { irq, name } => ("irq_entry", format!("{irq} {}", s(&name))),
        RecordedKind::IrqExit { irq, ret } => ("irq_exit", format!("{irq} {ret}")),
        RecordedKind::SoftirqRaise { vec } => ("softirq_raise", vec.to_string()),
        RecordedKind::SoftirqEntry { vec } => ("softirq_entry", vec.to_string()),
        RecordedKind::SoftirqExit { vec } => ("softirq_exit", vec.to_string()),
        RecordedKind::VectorEntry { name, vector } => ("vector_entry", format!("{name} {vector}")),
        RecordedKind::VectorExit { name, vector } => ("vector_exit", format!("{name} {vector}")),
        RecordedKind::Nmi {
            handler,
            delta_ns,
            handled,
        } => ("nmi", format!("{handler:x} {delta_ns} {handled}")),
        RecordedKind::WorkStart { work, function } => {
            ("work_start", format!("{work:x} {function:x}"))
        }
        RecordedKind::WorkEnd { work, function } => ("work_end", format!("{work:x} {function:x}")),
        RecordedKind::TimerEntry { timer, function } => {
            ("timer_entry", format!("{timer:x} {function:x}"))
        }
        RecordedKind::TimerExit { timer } => ("timer_exit", format!("{timer:x}")),
        RecordedKind::TaskletEntry { tasklet, function } => {
            ("tasklet_entry", format!("{tasklet:x} {function:x}"))
        }
        RecordedKind::TaskletExit { tasklet, function } => {
            ("tasklet_exit", format!("{tasklet:x} {function:x}"))
        }
        RecordedKind::NapiPoll {
            napi,
            work,
            budget,
            dev,
        } => ("napi_poll", format!("{napi:x} {} {work} {budget}", s(&dev))),
    };
    (kind.to_string(), format!("tid {} {fields}", e.tid))
}

/// Events by kind, then by (task, fields), with their times in order.
type Seen = HashMap<String, HashMap<String, Vec<u64>>>;

fn add(seen: &mut Seen, (kind, fields): (String, String), time: u64) {
    seen.entry(kind)
        .or_default()
        .entry(fields)
        .or_default()
        .push(time);
}

/// Of `a`'s events in [lo, hi], how many there are, how many have a
/// partner in `b` with the same fields within SAME_INSTANT_NS (each partner
/// used once), and how many others have one within SPLIT_NS; the clock
/// differences of the pairs.
fn matched(
    a: &HashMap<String, Vec<u64>>,
    b: Option<&HashMap<String, Vec<u64>>>,
    lo: u64,
    hi: u64,
    diffs: &mut Vec<u64>,
    unmatched: &mut Vec<String>,
) -> (usize, usize, usize) {
    let (mut total, mut found, mut split) = (0, 0, 0);
    for (fields, times) in a {
        let mut partners: Vec<u64> = b.and_then(|b| b.get(fields)).cloned().unwrap_or_default();
        partners.sort_unstable();
        let mut used = vec![false; partners.len()];
        let in_range: Vec<u64> = times
            .iter()
            .copied()
            .filter(|&t| t >= lo && t <= hi)
            .collect();
        let mut unpaired = Vec::new();
        for &t in &in_range {
            total += 1;
            match nearest(&partners, &used, t, SAME_INSTANT_NS) {
                Some(i) => {
                    used[i] = true;
                    found += 1;
                    diffs.push(partners[i].abs_diff(t));
                }
                None => unpaired.push(t),
            }
        }
        for t in unpaired {
            if let Some(i) = nearest(&partners, &used, t, SPLIT_NS) {
                used[i] = true;
                split += 1;
            } else if unmatched.len() < 5 {
                unmatched.push(format!("{fields} @ {t}"));
            }
        }
    }
    (total, found, split)
}

/// The unused partner nearest `t`, if it is within `within`.
fn nearest(partners: &[u64], used: &[bool], t: u64, within: u64) -> Option<usize> {
    partners
        .iter()
        .enumerate()
        .filter(|(i, &p)| !used[*i] && p.abs_diff(t) < within)
        .min_by_key(|(_, &p)| p.abs_diff(t))
        .map(|(i, _)| i)
}

#[test]
fn the_recorder_sees_what_perf_sees() {
    let _kernel = crate::kernel();
    if !latscope_platform::caps::detect().root {
        println!("skipped: needs root (BPF and perf tracepoints)");
        return;
    }
    if !bpf::built() {
        println!("skipped: needs the BPF programs (this build had no clang)");
        return;
    }
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let worker = std::thread::Builder::new()
        .name("recorder-vs-pf".into())
        .spawn(move || {
            set_affinity(CpuId(0)).unwrap();
            let mut zero = std::fs::File::open("/dev/zero").unwrap();
            let mut buf = vec![0u8; 4096];
            ready_tx.send(current_tid()).unwrap();
            go_rx.recv().unwrap();
            for _ in 0..400 {
                timers::sleep_for(1_000_000).unwrap();
                zero.read_exact(&mut buf).unwrap();
            }
        })
        .unwrap();
    let _tid = ready_rx.recv().unwrap();

    let mut tracer = Tracer::open(&TracerConfig::new(vec![CpuId(0)])).unwrap();
    let kernel = TraceBpf::open(&BpfConfig {
        tids: Vec::new(),
        cpus: vec![0],
        recorder_slots: 1 << 16,
        histograms: false,
        ..BpfConfig::default()
    })
    .unwrap();
    let first_seq = kernel.recorder_head(0).unwrap();
    tracer.enable().unwrap();
    let start = monotonic_ns();
    go_tx.send(()).unwrap();
    let mut events: Vec<TraceEvent> = Vec::new();
    let read = |tracer: &mut Tracer, events: &mut Vec<TraceEvent>| {
        tracer
            .read(&mut |d| {
                if let Decoded::Event(e) = d {
                    events.push(e)
                }
            })
            .unwrap();
    };
    while !worker.is_finished() {
        tracer.wait(Duration::from_millis(10)).unwrap();
        read(&mut tracer, &mut events);
    }
    worker.join().unwrap();
    let end = monotonic_ns();
    tracer.disable().unwrap();
    read(&mut tracer, &mut events);
    let mut recorded = Vec::new();
    let (_, lost) = kernel.recorder_since(0, first_seq, &mut recorded);
    let perf_lost = tracer.stats().total.lost;
    println!(
        "{} ms: {} perf events ({perf_lost} lost), {} recorded ({lost} lost); missing: perf {:?}, BPF {:?}",
        (end - start) / 1_000_000,
        events.len(),
        recorded.len(),
        tracer.missing_events(),
        kernel.missing()
    );
    assert_eq!(lost, 0);
    assert!(recorded.iter().all(|e| e.cpu == 0));

    let mut perf = Seen::new();
    for e in events.iter().filter(|e| e.cpu == 0) {
        add(&mut perf, perf_key(e, tracer.names()), e.time);
    }
    let mut ours = Seen::new();
    for e in &recorded {
        add(&mut ours, bpf_key(e), e.time);
    }
    let (lo, hi) = (start + EDGE_NS, end.saturating_sub(EDGE_NS));
    let mut kinds: Vec<&String> = perf.keys().chain(ours.keys()).collect();
    kinds.sort();
    kinds.dedup();
    let mut diffs = Vec::new();
    let mut failures = Vec::new();
    for kind in kinds {
        let mut unmatched = Vec::new();
        let empty = HashMap::new();
        let p = perf.get(kind).unwrap_or(&empty);
        let o = ours.get(kind).unwrap_or(&empty);
        let (pn, pf, ps) = matched(p, Some(o), lo, hi, &mut diffs, &mut unmatched);
        let (on, of, os) = matched(o, Some(p), lo, hi, &mut Vec::new(), &mut unmatched);
        println!(
            "  {kind}: perf {pf}/{pn} found in BPF ({ps} split), BPF {of}/{on} found in perf ({os} split) {unmatched:?}"
        );
        // Pairs split by the host are the same event in both. Allow a
        // very few misses besides (perf_lost aside): perf cannot see
        // events of its own interrupt work (recursion), so BPF alone may
        // hold an irq_work vector and the wake-up it does.
        let allowed = |n: usize| (n / 200).max(2);
        if perf_lost == 0 && (pn - pf - ps > allowed(pn) || on - of - os > allowed(on)) {
            failures.push(kind.clone());
        }
    }
    diffs.sort_unstable();
    println!(
        "clock difference of {} pairs: median {} ns, 99th {} ns, largest {} ns",
        diffs.len(),
        diffs.get(diffs.len() / 2).copied().unwrap_or(0),
        diffs.get(diffs.len() * 99 / 100).copied().unwrap_or(0),
        diffs.last().copied().unwrap_or(0)
    );
    assert!(failures.is_empty(), "kinds that differ: {failures:?}");
    assert!(diffs.len() > 1000);
    assert!(diffs[diffs.len() / 2] < 5_000);
}
