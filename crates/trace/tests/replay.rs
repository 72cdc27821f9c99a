//! Decomposition and attribution on a recorded event stream: a real kernel
//! trace of a timer loop (SCHED_FIFO 80, 1 ms, CPU 0) disturbed by a known
//! burner (SCHED_FIFO 90, "ka-burner", 500 µs at a random offset in every
//! 20 ms), saved with the samples the loop took. The replay runs the very
//! code a live run uses (recording decoder → Analyzer) and checks it
//! against what is known about the stream.
//!
//! `capture_fixture` (ignored; run as root with `--ignored`) re-records it:
//! `cargo test -p latscope-trace --test replay -- --ignored capture_fixture`
//! (it writes `tests/fixtures/streams/burner-cpu0.{lstrace.gz,samples}`).
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use latscope_model::{CauseKind, CpuId, Nanos};
use latscope_platform::{
    current_tid, monotonic_ns, set_affinity, set_scheduler, spin_until, timers, SchedPolicy,
};
use latscope_trace::analysis::{Analyzer, AnalyzerConfig, Measured, NoEnvironment, NoSymbols};
use latscope_trace::{Recording, Tracer, TracerConfig};

const BURNER: &str = "ka-burner";

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/streams")
        .join(name)
}

/// The samples file: one line per sample, "deadline wake", after a header
/// line "tid cpu burner_tid".
fn read_samples() -> (i32, u32, i32, Vec<(u64, u64)>) {
    let text = std::fs::read_to_string(fixture("burner-cpu0.samples")).unwrap();
    let mut lines = text.lines();
    let head: Vec<i64> = lines
        .next()
        .unwrap()
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect();
    let samples = lines
        .map(|l| {
            let mut f = l.split_whitespace().map(|v| v.parse::<u64>().unwrap());
            (f.next().unwrap(), f.next().unwrap())
        })
        .collect();
    (head[0] as i32, head[1] as u32, head[2] as i32, samples)
}

#[test]
fn recorded_stream_decomposes_and_names_the_burner() {
    let (tid, cpu, burner_tid, samples) = read_samples();
    // Stored gzipped (25 KB instead of 245 KB).
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::GzDecoder::new(
            std::fs::File::open(fixture("burner-cpu0.lstrace.gz")).unwrap(),
        ),
        &mut bytes,
    )
    .unwrap();
    let rec = Recording::parse(&bytes).unwrap();
    let mut decoded = Vec::new();
    let decoder = rec.decode(&mut |d| decoded.push(d)).unwrap();
    let names = decoder.names();
    let start = samples[0].0 - 1_000_000;
    let mut a = Analyzer::new(
        AnalyzerConfig::new(
            vec![Measured {
                cpu: CpuId(cpu),
                tid,
            }],
            Nanos::from_micros(250),
            start,
        ),
        Box::new(NoEnvironment),
        Box::new(NoSymbols),
    );
    a.keep_decompositions();
    // As live: samples handed over first, then the events.
    for &(d, u) in &samples {
        a.on_sample(CpuId(cpu), d, u, names);
    }
    for d in &decoded {
        a.on_decoded(d, names);
    }
    a.finish(names);
    let s = a.summary();
    let dec = a.decompositions();
    eprintln!(
        "replay: {} events, {} samples, {} decomposed, {} not, {} episodes",
        s.events,
        samples.len(),
        s.samples_decomposed,
        s.samples_undecomposed,
        s.episodes_total
    );
    assert_eq!(s.lost_records, 0);
    assert_eq!(
        s.samples_decomposed + s.samples_undecomposed,
        samples.len() as u64
    );
    assert!(s.samples_decomposed as f64 >= 0.98 * samples.len() as f64);
    for d in dec {
        // The parts of each sample add up to its latency, and the kernel's
        // own view of the expiry is the deadline the loop asked for
        // (SCHED_FIFO: no timer slack).
        assert_eq!(d.irq + d.sched + d.ret, d.wake - d.deadline, "{d:?}");
        assert_eq!(d.expires, d.deadline as i64, "{d:?}");
    }
    let eps = a.take_episodes();
    assert!(eps.len() >= 3, "{} episodes", eps.len());
    for (e, w) in &eps {
        let total: u64 = e.breakdown.causes.iter().map(|c| c.duration_ns.0).sum();
        assert_eq!(total, e.latency_ns.0, "causes partition the latency");
        let b = e.breakdown.blocking.as_ref().unwrap();
        eprintln!(
            "episode {}: {} ns, blocking {} ({} ns, {:.0}%)",
            e.seq,
            e.latency_ns.0,
            b.name,
            b.duration_ns.0,
            100.0 * b.duration_ns.0 as f64 / e.latency_ns.0 as f64
        );
        assert_eq!(b.name, BURNER);
        assert_eq!(b.pid, Some(burner_tid));
        assert_eq!(b.priority, Some(90));
        assert!(
            b.duration_ns.0 * 10 >= e.latency_ns.0 * 8,
            "{:?}",
            e.breakdown
        );
        assert!(e
            .breakdown
            .causes
            .iter()
            .any(|c| c.kind == CauseKind::TimerIrq));
        let w = w.as_ref().unwrap();
        assert!(w
            .events
            .iter()
            .any(|x| x.event == "sched_switch" && x.name == BURNER));
    }
    // System-wide statistics came out of the same stream.
    let m = a.metrics(names);
    assert!(m
        .iter()
        .any(|x| x.name == "irq.exec.vector:local_timer" && x.histogram.count() > 100));
}

/// Re-records the fixture (root only; not part of the suite).
#[test]
#[ignore]
fn capture_fixture() {
    assert!(latscope_platform::caps::detect().root, "needs root");
    let cpu = CpuId(0);
    let mut tracer = Tracer::open(&TracerConfig::new(vec![cpu])).unwrap();
    std::fs::create_dir_all(fixture("")).unwrap();
    tracer.record_to(&fixture("burner-cpu0.lstrace")).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = Arc::clone(&stop);
    let (btx, brx) = std::sync::mpsc::channel();
    let burner = std::thread::Builder::new()
        .name(BURNER.into())
        .spawn(move || {
            set_affinity(cpu).unwrap();
            set_scheduler(SchedPolicy::Fifo, 90).unwrap();
            btx.send(current_tid()).unwrap();
            let mut seed = monotonic_ns() | 1;
            let mut slot = monotonic_ns();
            while !s2.load(Ordering::Relaxed) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let _ = timers::sleep_until(slot + seed % 19_500_000);
                spin_until(monotonic_ns() + 500_000);
                slot += 20_000_000;
            }
        })
        .unwrap();
    let burner_tid = brx.recv().unwrap();
    tracer.enable().unwrap();
    let loop_thread = std::thread::spawn(move || {
        set_affinity(cpu).unwrap();
        set_scheduler(SchedPolicy::Fifo, 80).unwrap();
        let tid = current_tid();
        let mut samples = Vec::new();
        let mut next = monotonic_ns() + 1_000_000;
        for _ in 0..250 {
            timers::sleep_until(next).unwrap();
            samples.push((next, monotonic_ns()));
            next += 1_000_000;
            while next < monotonic_ns() {
                next += 1_000_000;
            }
        }
        (tid, samples)
    });
    let mut decoded = 0u64;
    while !loop_thread.is_finished() {
        let _ = tracer.wait(std::time::Duration::from_millis(10));
        tracer.read(&mut |_| decoded += 1).unwrap();
    }
    let (tid, samples) = loop_thread.join().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(5));
    tracer.read(&mut |_| decoded += 1).unwrap();
    tracer.disable().unwrap();
    tracer.finish_recording().unwrap();
    stop.store(true, Ordering::Relaxed);
    burner.join().unwrap();
    let mut text = format!("{tid} {} {burner_tid}\n", cpu.0);
    for (d, u) in samples {
        text.push_str(&format!("{d} {u}\n"));
    }
    std::fs::write(fixture("burner-cpu0.samples"), text).unwrap();
    let raw = std::fs::read(fixture("burner-cpu0.lstrace")).unwrap();
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(fixture("burner-cpu0.lstrace.gz")).unwrap(),
        flate2::Compression::best(),
    );
    std::io::Write::write_all(&mut gz, &raw).unwrap();
    gz.finish().unwrap();
    std::fs::remove_file(fixture("burner-cpu0.lstrace")).unwrap();
    eprintln!("captured {decoded} records");
}
