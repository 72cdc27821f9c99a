//! The BPF programs on this machine (needs root and a build with the
//! programs; otherwise prints `skipped: …`): everything loaded on CPU 0
//! while a pinned thread sleeps 1 ms 200 times and reads /dev/zero. The
//! flight recorder must name the thread in its switches, hold its hrtimer's
//! start and expiry and the local timer vector, be followed without loss at
//! this rate, and the histograms must have counted the local timer and a
//! timer or RCU softirq.
#![allow(clippy::unwrap_used)]

use std::io::Read;
use std::sync::mpsc;
use std::time::Duration;

use latscope_model::CpuId;
use latscope_platform::bpf::{
    self, BpfConfig, BpfHistBucket, BpfHistKind, BpfHistTotal, RecordedEvent, RecordedKind,
    TimerRecord, TraceBpf, SAMPLE_SLOTS, VECTOR_NAMES,
};
use latscope_platform::{current_tid, monotonic_ns, set_affinity, timers};

const NAME: &str = "bpf-live-sleepr";

/// Held by each test for its whole run: they all load the programs and pin
/// a sleeper to CPU 0, and one's events would fill another's recorder.
static CPU0: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn cpu0() -> std::sync::MutexGuard<'static, ()> {
    CPU0.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn comm(raw: &[u8; 16]) -> &str {
    let n = raw.iter().position(|&b| b == 0).unwrap_or(16);
    std::str::from_utf8(&raw[..n]).unwrap_or("?")
}

/// Whether CI asked for the BPF backend to be there (LATSCOPE_REQUIRE_BPF).
fn required() -> bool {
    std::env::var_os("LATSCOPE_REQUIRE_BPF").is_some_and(|v| v != "0")
}

/// Whether this machine can run the test; prints why not.
fn can_run() -> bool {
    if !latscope_platform::caps::detect().root {
        println!("skipped: needs root (BPF)");
        return false;
    }
    if !bpf::built() {
        println!("skipped: needs the BPF programs (this build had no clang)");
        return false;
    }
    true
}

/// Opens `config` with the sleeper's tid added, or says why it cannot.
fn open(config: &BpfConfig) -> Option<TraceBpf> {
    match TraceBpf::open(config) {
        Ok(b) => Some(b),
        // CI sets LATSCOPE_REQUIRE_BPF: there a machine that built the
        // programs must also load them (a verifier refusal is a bug).
        Err(e) if required() => {
            panic!("LATSCOPE_REQUIRE_BPF is set, but the BPF programs did not load: {e}")
        }
        Err(e) => {
            println!("skipped: BPF unavailable: {e}");
            None
        }
    }
}

/// A thread pinned to CPU 0 that, once told to go, sleeps 1 ms and reads
/// 4 KiB of /dev/zero `rounds` times.
fn sleeper(rounds: u32) -> (std::thread::JoinHandle<()>, i32, mpsc::Sender<()>) {
    sleeper_every(rounds, 1_000_000)
}

/// [`sleeper`] with sleeps of `span_ns`.
fn sleeper_every(
    rounds: u32,
    span_ns: u64,
) -> (std::thread::JoinHandle<()>, i32, mpsc::Sender<()>) {
    let (ready_tx, ready_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let worker = std::thread::Builder::new()
        .name(NAME.to_string())
        .spawn(move || {
            set_affinity(CpuId(0)).unwrap();
            let mut zero = std::fs::File::open("/dev/zero").unwrap();
            let mut buf = vec![0u8; 4096];
            ready_tx.send(current_tid()).unwrap();
            // A test that skips (BPF unavailable) drops `go` unsent.
            if go_rx.recv().is_err() {
                return;
            }
            for _ in 0..rounds {
                timers::sleep_for(span_ns).unwrap();
                zero.read_exact(&mut buf).unwrap();
            }
        })
        .unwrap();
    let tid = ready_rx.recv().unwrap();
    (worker, tid, go_tx)
}

#[test]
fn the_recorder_histograms_and_counters_see_a_sleeping_thread_on_cpu0() {
    let _kernel = crate::kernel();
    recorder_histograms_and_counters(bpf::DEFAULT_HIST_ROWS);
}

/// With one histogram row per CPU and set, all but the first (kind,
/// source, HDR row) a set sees overflow to the hashed maps: the counts
/// must add up the same.
#[test]
fn histogram_counts_that_overflow_the_rows_are_kept_in_the_hashed_maps() {
    let _kernel = crate::kernel();
    recorder_histograms_and_counters(1);
}

fn recorder_histograms_and_counters(hist_rows: u32) {
    let _cpu0 = cpu0();
    if !can_run() {
        return;
    }
    let (worker, tid, go) = sleeper(200);
    let Some(mut kernel) = open(&BpfConfig {
        tids: vec![u32::try_from(tid).unwrap()],
        cpus: vec![0],
        recorder_slots: 8192,
        histograms: true,
        hist_rows,
        ..BpfConfig::default()
    }) else {
        drop(go);
        let _ = worker.join();
        return;
    };
    let _stats = bpf::enable_bpf_stats().ok();
    println!("missing tracepoints: {:?}", kernel.missing());

    let start = monotonic_ns();
    go.send(()).unwrap();
    // Follow CPU 0's ring from its oldest record while the thread runs.
    let mut followed: Vec<RecordedEvent> = Vec::with_capacity(1 << 16);
    let mut samples: Vec<TimerRecord> = Vec::new();
    let mut next = 0;
    let mut lost = 0;
    let mut reads = 0;
    while !worker.is_finished() {
        std::thread::sleep(Duration::from_millis(10));
        let (n, l) = kernel.recorder_since(0, next, &mut followed);
        next = n;
        lost += l;
        reads += 1;
        kernel.drain_samples(&mut samples);
    }
    worker.join().unwrap();
    let end = monotonic_ns();
    let (n, l) = kernel.recorder_since(0, next, &mut followed);
    next = n;
    lost += l;
    kernel.drain_samples(&mut samples);

    let mut window = Vec::new();
    let read = kernel.recorder_window(0, start, u64::MAX, &mut window);
    // Two half windows, read at once (before the writer goes on much).
    let mid = start + (end - start) / 2;
    let (mut half, mut second) = (Vec::new(), Vec::new());
    let read_half = kernel.recorder_window(0, start, mid, &mut half);
    let read_second = kernel.recorder_window(0, mid, u64::MAX, &mut second);
    let counters = kernel.counters().unwrap();
    let mut buckets: Vec<BpfHistBucket> = Vec::new();
    let mut totals: Vec<BpfHistTotal> = Vec::new();
    // The programs write one set of maps while the other is drained: the
    // first drain empties the idle set and switches the programs to it,
    // the second (after the programs left the first set) takes what they
    // counted there.
    kernel.drain_histograms(&mut buckets, &mut totals).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    kernel.drain_histograms(&mut buckets, &mut totals).unwrap();
    // Drained sets are empty: a third drain holds only what came since.
    let (mut again, mut again_totals) = (Vec::new(), Vec::new());
    std::thread::sleep(Duration::from_millis(20));
    kernel
        .drain_histograms(&mut again, &mut again_totals)
        .unwrap();
    let since: u64 = again_totals.iter().map(|t| t.count).sum();
    let before: u64 = totals.iter().map(|t| t.count).sum();
    println!("after the drains: {since} more durations in 20 ms, against {before} before");
    assert!(since < before, "a drained set was emptied");
    let progs = kernel.prog_stats();

    println!(
        "{} ms: followed {} events in {reads} reads up to seq {next}, {lost} lost; window from start: {} events, complete {}; {} timer samples; {counters:?}",
        (end - start) / 1_000_000,
        followed.len(),
        read.events,
        read.complete,
        samples.len()
    );
    let mut per_kind: std::collections::BTreeMap<String, usize> = Default::default();
    for e in &window {
        let k = format!("{:?}", e.kind);
        let k = k.split([' ', '{']).next().unwrap_or("?").to_string();
        *per_kind.entry(k).or_default() += 1;
    }
    println!("window events by kind: {per_kind:?}");
    let mut by_kind: std::collections::BTreeMap<String, (usize, u64)> = Default::default();
    for b in &buckets {
        let e = by_kind.entry(format!("{:?}", b.kind)).or_default();
        e.0 += 1;
        e.1 += b.count;
    }
    println!("histogram buckets (kind: keys, counts): {by_kind:?}");
    for t in &totals {
        let source = match t.kind {
            BpfHistKind::VectorExec => bpf::vector_name(t.source as u32).to_string(),
            BpfHistKind::Work => format!("{:#x}", t.source),
            _ => t.source.to_string(),
        };
        println!(
            "  {:?} {source}: count {} mean {} ns min {} max {}",
            t.kind,
            t.count,
            t.sum / t.count.max(1),
            t.min,
            t.max
        );
    }
    let mut top: Vec<&(String, u64, u64)> = progs.iter().filter(|p| p.2 > 0).collect();
    top.sort_by_key(|p| std::cmp::Reverse(p.2));
    for (name, ns, count) in top.iter().take(8) {
        println!(
            "  prog {name}: {count} runs, {ns} ns ({} ns/run)",
            ns / count.max(&1)
        );
    }

    // The window: complete, in time order, all on CPU 0.
    assert!(read.complete, "the ring held everything since the start");
    assert_eq!(read.events, window.len());
    assert!(window.iter().all(|e| e.cpu == 0 && e.time >= start));
    // Nested programs can swap neighbours by a little; no more.
    for w in window.windows(2) {
        assert!(w[1].time + 50_000 >= w[0].time, "{w:?}");
    }
    // The thread's switches, by pid and comm.
    let ins = window
        .iter()
        .filter(|e| {
            matches!(e.kind, RecordedKind::Switch { next_pid, next_comm, .. }
                if next_pid == tid && comm(&next_comm) == NAME)
        })
        .count();
    let outs = window
        .iter()
        .filter(|e| {
            matches!(e.kind, RecordedKind::Switch { prev_pid, prev_comm, .. }
                if prev_pid == tid && comm(&prev_comm) == NAME)
                && e.tid == tid
        })
        .count();
    assert!(ins >= 150 && outs >= 150, "{ins} switch-ins, {outs} outs");
    // Its hrtimer: started by the thread, then expired.
    let starts: Vec<u64> = window
        .iter()
        .filter(|e| e.tid == tid)
        .filter_map(|e| match e.kind {
            RecordedKind::HrtimerStart { hrtimer, .. } => Some(hrtimer),
            _ => None,
        })
        .collect();
    assert!(starts.len() >= 150, "{} hrtimer starts", starts.len());
    let expiries = window
        .iter()
        .filter(|e| matches!(e.kind, RecordedKind::HrtimerExpireEntry { hrtimer, .. } if starts.contains(&hrtimer)))
        .count();
    assert!(expiries >= 150, "{expiries} expiries of its timer");
    assert!(
        window.iter().any(|e| matches!(
            e.kind,
            RecordedKind::VectorEntry {
                name: "local_timer",
                ..
            }
        )),
        "no local_timer entry"
    );

    // A window that ends in the middle holds exactly the whole window's
    // events up to its end: its start found by bisection, its copy
    // stopped at the end.
    let expected: Vec<&RecordedEvent> = window.iter().filter(|e| e.time <= mid).collect();
    assert!(read_half.complete);
    assert_eq!(half.len(), expected.len(), "window up to the middle");
    assert!(half.iter().zip(&expected).all(|(a, b)| a == *b));
    let late = window.iter().filter(|e| e.time >= mid).count();
    assert!(read_second.complete, "older events precede the middle");
    // Events published after the whole window was read come on top.
    assert!(second.len() >= late, "window from the middle");
    assert!(second
        .iter()
        .take(late)
        .zip(window.iter().filter(|e| e.time >= mid))
        .all(|(a, b)| a == b));

    // Following: nothing lost, and the same events as the window.
    assert_eq!(lost, 0);
    let followed_since: Vec<&RecordedEvent> = followed.iter().filter(|e| e.time >= start).collect();
    assert!(followed_since.len() >= window.len());
    assert!(counters.recorded >= next, "{counters:?} vs {next}");

    // Histograms: the local timer vector and a TIMER or RCU softirq.
    assert!(buckets
        .iter()
        .any(|b| b.kind == BpfHistKind::VectorExec && b.source == 0 && b.count > 0));
    assert!(buckets
        .iter()
        .any(|b| b.kind == BpfHistKind::SoftirqExec && (b.source == 1 || b.source == 9)));
    assert!(totals.iter().all(|t| t.min <= t.max && t.count > 0));
    // The buckets (16 indices per kernel key) and the exact totals (arrays
    // for vectors and softirqs, hashes for the rest) count the same
    // durations: per kind and source the counts agree. (A program that
    // read the set selector just before a switch may land one update
    // between the two reads.)
    for t in &totals {
        let n: u64 = buckets
            .iter()
            .filter(|b| b.kind == t.kind && b.source == t.source)
            .map(|b| b.count)
            .sum();
        assert!(
            n.abs_diff(t.count) <= 2 + t.count / 100,
            "{t:?}: buckets hold {n}"
        );
    }
    // Every local timer run on CPU 0 is counted once. Their run times wait
    // per CPU and enter the histograms at the CPU's next switch away from
    // the watched thread: the first two drains must hold all of the exits
    // the recorder saw (`followed` is CPU 0's whole ring since attaching,
    // nothing lost) but for at most 8 still waiting and one whose entry came
    // before attaching, and not many more than it saw (the drains came a
    // few tens of ms after the last follow).
    let exits = followed
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                RecordedKind::VectorExit {
                    name: "local_timer",
                    ..
                }
            )
        })
        .count() as u64;
    let counted: u64 = totals
        .iter()
        .filter(|t| t.kind == BpfHistKind::VectorExec && t.source == 0)
        .map(|t| t.count)
        .sum();
    println!("local_timer: {exits} exits recorded, {counted} run times counted");
    assert!(
        counted + 9 >= exits && counted <= exits + exits / 4 + 20,
        "{exits} local_timer exits recorded on CPU 0, {counted} counted"
    );
    // Softirq run times wait the same way (but on PREEMPT_RT), in a list
    // of 16.
    let softirq_exits = followed
        .iter()
        .filter(|e| matches!(e.kind, RecordedKind::SoftirqExit { .. }))
        .count() as u64;
    let softirq_counted: u64 = totals
        .iter()
        .filter(|t| t.kind == BpfHistKind::SoftirqExec)
        .map(|t| t.count)
        .sum();
    println!("softirqs: {softirq_exits} exits recorded, {softirq_counted} run times counted");
    assert!(
        softirq_counted + 17 >= softirq_exits
            && softirq_counted <= softirq_exits + softirq_exits / 4 + 20,
        "{softirq_exits} softirq exits recorded on CPU 0, {softirq_counted} counted"
    );
    assert_eq!(counters.hist_dropped, 0);
    assert_eq!(VECTOR_NAMES[0], "local_timer");

    // The timer decomposition ran alongside.
    assert!(counters.samples_sent > 0);
    assert_eq!(counters.samples_dropped, 0);
    assert!(samples.iter().all(|s| s.tid as i32 == tid));
}

/// A ring far too small for the rate: the follower is told exactly how
/// much it missed (read + lost = records written), and a window that
/// reaches before the ring's oldest record is not complete.
#[test]
fn a_small_ring_reports_its_losses() {
    let _kernel = crate::kernel();
    let _cpu0 = cpu0();
    if !can_run() {
        return;
    }
    let (worker, _tid, go) = sleeper(50);
    let Some(kernel) = open(&BpfConfig {
        tids: Vec::new(),
        cpus: vec![0],
        recorder_slots: 16,
        histograms: false,
        ..BpfConfig::default()
    }) else {
        drop(go);
        let _ = worker.join();
        return;
    };
    let start = monotonic_ns();
    let first = kernel.recorder_head(0).unwrap();
    go.send(()).unwrap();
    let mut out = Vec::new();
    let (mut next, mut lost) = (first, 0);
    while !worker.is_finished() {
        std::thread::sleep(Duration::from_millis(5));
        let (n, l) = kernel.recorder_since(0, next, &mut out);
        next = n;
        lost += l;
    }
    worker.join().unwrap();
    let mut window = Vec::new();
    let read = kernel.recorder_window(0, start, u64::MAX, &mut window);
    println!(
        "16 slots: read {}, lost {lost}, {} records; window {} events, complete {}",
        out.len(),
        next - first,
        read.events,
        read.complete
    );
    assert!(lost > 0);
    assert_eq!(out.len() as u64 + lost, next - first);
    assert!(!read.complete);
    assert!(read.events <= 16);
    assert!(
        kernel
            .recorder_window(5000, 0, u64::MAX, &mut window)
            .events
            == 0
    );
}

/// The sample ring overwrites what is not read in time, and says how much:
/// a thread wakes half again as often as the ring has slots while nobody
/// reads; the one read after returns the newest records, in order, and
/// counts the rest as dropped.
#[test]
fn an_unread_sample_ring_keeps_the_newest_and_counts_the_rest() {
    let _kernel = crate::kernel();
    let _cpu0 = cpu0();
    if !can_run() {
        return;
    }
    let rounds = SAMPLE_SLOTS + SAMPLE_SLOTS / 2;
    let (worker, tid, go) = sleeper_every(rounds, 20_000);
    let Some(mut kernel) = open(&BpfConfig {
        tids: vec![u32::try_from(tid).unwrap()],
        cpus: vec![0],
        recorder_slots: 0,
        histograms: false,
        ..BpfConfig::default()
    }) else {
        drop(go);
        let _ = worker.join();
        return;
    };
    go.send(()).unwrap();
    worker.join().unwrap();
    let mut samples: Vec<TimerRecord> = Vec::new();
    let read = kernel.drain_samples(&mut samples);
    let counters = kernel.counters().unwrap();
    println!("{rounds} wake-ups, {read} records read, {counters:?}");
    assert_eq!(read, samples.len());
    assert_eq!(
        counters.samples_sent,
        read as u64 + counters.samples_dropped
    );
    assert!(read <= SAMPLE_SLOTS as usize);
    assert!(
        counters.samples_sent > u64::from(SAMPLE_SLOTS),
        "only {} of {rounds} wake-ups recorded",
        counters.samples_sent
    );
    assert!(counters.samples_dropped > 0);
    assert!(samples.iter().all(|r| r.tid as i32 == tid && r.cpu == 0));
    assert!(samples.windows(2).all(|w| w[0].switch_in < w[1].switch_in));
    // A second read finds nothing new and loses nothing more.
    assert_eq!(kernel.drain_samples(&mut samples), 0);
    assert_eq!(kernel.counters().unwrap(), counters);
}
