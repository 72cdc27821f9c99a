//! Several priorities measured at once (issue 38, Cota-Robles & Held's
//! Figure 4) end to end through the real binary: the lists and
//! combinations that make no sense are one-line errors naming
//! `--priorities`; and a known answer on the real kernel: an `rt:` load
//! pinned to the measured CPU at a priority between the two measuring
//! threads delays the thread below it by its busy time and not the one
//! above, on the same run, against a control run without it; with
//! `--trace` (the BPF backend; both with LATSCOPE_TEST_BACKENDS=all) each priority's cell is stored with its own
//! decomposition, the delay is in the lower thread's `timer.sched`, and
//! its episodes name the load. The measuring tests need root and run
//! under `flock /tmp/latscope-measure.lock`; about 10 s each.

#![allow(clippy::unwrap_used)]

use crate::common::control::any_too_noisy;
use crate::common::*;
use serde_json::Value;

#[test]
fn lists_and_combinations_that_make_no_sense_are_one_line_errors() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["--priorities", "95,fast"],
            "--priorities: 'fast' is not a priority 1-99",
        ),
        (
            &["--priorities", "95,0"],
            "--priorities: '0' is not a priority",
        ),
        (&["--priorities", "95,rr:100"], "'rr:100' is not a priority"),
        (&["--priorities", "95,"], "'' is not a priority"),
        (
            &["--priorities", "95"],
            "--priorities: several priorities at once need at least two",
        ),
        (
            &["--priorities", "95,batch,batch"],
            "--priorities: batch is listed twice",
        ),
        (
            &["--priorities", "other,50,other"],
            "--priorities: other is listed twice",
        ),
        (
            &["--priorities", "95,50", "--probe", "udp"],
            "--priorities needs --probe timer",
        ),
        (
            &["--priorities", "95,50", "--probe", "app"],
            "--priorities needs --probe timer or --probe noise",
        ),
        (
            &["--priorities", "95,50", "--priority", "80"],
            "--priorities replaces --policy",
        ),
        (
            &["--priorities", "95,50", "--policy", "rr"],
            "--priorities replaces --policy",
        ),
        (
            &["--priorities", "95,other", "--nice", "5"],
            "--priorities replaces --policy",
        ),
        (
            &["--priorities", "95,50", "--probe", "noise", "--trace"],
            "--priorities with --trace needs --probe timer",
        ),
        (
            &[
                "--priorities",
                "95,50",
                "--timer-api",
                "nanosleep",
                "--phase",
                "random",
            ],
            "--priorities needs --phase fixed",
        ),
    ];
    for (args, want) in cases {
        let mut all = vec!["run", "--duration", "1s", "--quiet"];
        all.extend_from_slice(args);
        let o = latscope(&all);
        assert_one_line_error(&o, 2);
        let err = stderr(&o);
        assert!(err.contains(want), "{args:?}: want '{want}', got: {err}");
    }
}

/// The share (in %) of cell `cell`'s timer wake-ups later than `late_ns`
/// (a histogram bucket counts as late when its low end is), and their
/// number.
fn late_pct(doc: &Value, cell: usize, late_ns: u64) -> (f64, u64) {
    let (mut late, mut all) = (0u64, 0u64);
    for m in doc["cells"][cell]["metrics"].as_array().unwrap() {
        if m["name"] != "timer.latency" {
            continue;
        }
        for b in m["histogram"].as_array().unwrap() {
            let (low, count) = (b[0].as_u64().unwrap(), b[2].as_u64().unwrap());
            all += count;
            if low >= late_ns {
                late += count;
            }
        }
    }
    (100.0 * late as f64 / all.max(1) as f64, all)
}

/// `latscope run --priorities 90,10` on `cpu` for 3 s (with `workload`, 1 s
/// warm-up), as JSON.
fn measure(dir: &std::path::Path, cpu: u32, workload: Option<&str>) -> Value {
    measure_with(dir, cpu, workload, &[])
}

/// [`measure`] with more options (`--trace`).
fn measure_with(dir: &std::path::Path, cpu: u32, workload: Option<&str>, more: &[&str]) -> Value {
    let name = if workload.is_some() { "rt" } else { "control" };
    let json = dir.join(format!("{name}{}.json", more.join("")));
    let store = store_in(dir);
    let cpu = cpu.to_string();
    let mut args = vec![
        "run",
        "--priorities",
        "90,10",
        "--cpus",
        &cpu,
        "--period",
        "1ms",
        "--duration",
        "3s",
        "--store",
        store.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--quiet",
    ];
    if let Some(w) = workload {
        args.extend_from_slice(&["--workload", w, "--warmup", "1s"]);
    }
    args.extend_from_slice(more);
    let o = latscope(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    read_json(&json)
}

#[test]
fn a_load_between_two_priorities_delays_the_lower_thread_only_on_the_same_run() {
    let _g = serial();
    if !is_root() {
        eprintln!("skipped: needs root (SCHED_FIFO threads)");
        return;
    }
    let cpu = *online().last().unwrap();
    // FIFO 50, busy 300 µs every 2.1 ms, pinned to the measured CPU. The
    // 2.1 ms period slides the bursts 0.1 ms along the probe's 1 ms grid
    // each time: 3 bursts in 10 cover an expiry, 2 in 10 by more than
    // 100 µs (the expiry lies in the burst's first 200 µs), so 2 in 21
    // wake-ups of the thread below the load (9.5 %) are over 100 µs late
    // by the load alone, whatever the phase between load and probe.
    let load = format!("rt:50,300us/2100us,cpu{cpu}");
    let dir = tempfile::tempdir().unwrap();
    let control = measure(dir.path(), cpu, None);
    let loaded = measure(dir.path(), cpu, Some(&load));
    for doc in [&control, &loaded] {
        let cells = doc["cells"].as_array().unwrap();
        assert_eq!(cells.len(), 2, "one cell per priority");
        for (i, prio) in [(0, 90), (1, 10)] {
            let s = &cells[i]["settings"];
            assert_eq!(
                (s["policy"].as_str(), s["priority"].as_u64()),
                (Some("fifo"), Some(prio))
            );
            assert_eq!(s["together"], serde_json::json!([0, 1]), "{s}");
        }
    }
    let late = 100_000;
    let (c_hi, n) = late_pct(&control, 0, late);
    let (c_lo, _) = late_pct(&control, 1, late);
    let (l_hi, m) = late_pct(&loaded, 0, late);
    let (l_lo, _) = late_pct(&loaded, 1, late);
    eprintln!(
        "wake-ups over 100 us late: control fifo 90 {c_hi:.2}%, fifo 10 {c_lo:.2}% (of {n}); \
         rt:50 load fifo 90 {l_hi:.2}%, fifo 10 {l_lo:.2}% (of {m}); expected from the load: 9.5% below it, 0 above"
    );
    assert!(n > 2_500 && m > 2_500, "too few wake-ups measured");
    if any_too_noisy(&[
        ("control, fifo 90 wake-ups over 100 us, %", 2.0, c_hi),
        ("control, fifo 10 wake-ups over 100 us, %", 2.0, c_lo),
    ])
    .is_some()
    {
        return;
    }
    // What the load adds below it, on the same run, beyond what the
    // control shows between the same two priorities: expected 9.5 points.
    let added_below = (l_lo - l_hi) - (c_lo - c_hi);
    assert!(
        added_below > 5.0,
        "the load delays the thread below it: {added_below:.2} points added"
    );
    // Above it: nothing (a fault would add about 9.5 points, as below).
    assert!(
        l_hi - c_hi < 3.0,
        "the load does not delay the thread above it: {:.2} points added",
        l_hi - c_hi
    );
}

/// Cell `cell`'s `name` histogram (one measured CPU): its share (in %) of
/// values of at least `late_ns` (a bucket's low end), and its count.
fn metric_late_pct(doc: &Value, cell: usize, name: &str, late_ns: u64) -> (f64, u64) {
    let (mut late, mut all) = (0u64, 0u64);
    for m in doc["cells"][cell]["metrics"].as_array().unwrap() {
        if m["name"] != name {
            continue;
        }
        for b in m["histogram"].as_array().unwrap() {
            let (low, count) = (b[0].as_u64().unwrap(), b[2].as_u64().unwrap());
            all += count;
            if low >= late_ns {
                late += count;
            }
        }
    }
    (100.0 * late as f64 / all.max(1) as f64, all)
}

/// Episodes of cell `cell` whose blocking thread ran at FIFO `priority`.
fn blocked_by(doc: &Value, cell: u64, priority: u64) -> usize {
    doc["episodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cell"].as_u64() == Some(cell))
        .filter(|e| {
            let b = &e["breakdown"]["blocking"];
            b["policy"] == "fifo" && b["priority"].as_u64() == Some(priority)
        })
        .count()
}

#[test]
fn traced_priorities_each_store_their_decomposition_and_the_load_is_in_the_lower_sched_part() {
    let _g = serial();
    if !is_root() {
        eprintln!("skipped: needs root (SCHED_FIFO threads, tracing)");
        return;
    }
    // CPU 0: on some kernels (this project's VM) an idle CPU 1 emits no
    // perf tracepoints, which leaves its wake-ups undecomposed with perf.
    // The load of the untraced test above (9.5 % of the lower thread's
    // wake-ups over 100 µs late by the load alone, through its sched part:
    // the interrupt still comes on time, the thread waits for the load).
    // One backend, as every tracing known-answer case (common::on_backend;
    // LATSCOPE_TEST_BACKENDS=all runs it on perf too): BPF, whose programs
    // follow several threads per CPU; perf's per-thread analysis is the
    // analysis's own tests' (trace/src/analysis/tests/priorities.rs).
    on_backend("bpf", traced_case);
}

fn traced_case() {
    let load = "rt:50,300us/2100us,cpu0";
    let dir = tempfile::tempdir().unwrap();
    let backend = backend();
    let more = ["--trace", "--trace-backend", backend];
    let control = measure_with(dir.path(), 0, None, &more);
    if control["capabilities"]["tracepoints"] != Value::Bool(true) {
        eprintln!("skipped ({backend}): needs kernel tracepoints");
        return;
    }
    let loaded = measure_with(dir.path(), 0, Some(load), &more);
    for doc in [&control, &loaded] {
        let cells = doc["cells"].as_array().unwrap();
        assert_eq!(cells.len(), 2, "one cell per priority");
        for (i, c) in cells.iter().enumerate() {
            assert_eq!(c["trace"]["backend"], backend, "{}", c["trace"]);
            let (_, samples) = metric_late_pct(doc, i, "timer.latency", 0);
            for part in ["timer.irq", "timer.sched", "timer.return"] {
                let (_, n) = metric_late_pct(doc, i, part, 0);
                assert!(
                    n * 10 >= samples * 9,
                    "{backend}: cell {i} {part}: {n} of {samples} samples decomposed"
                );
            }
        }
    }
    let late = 100_000;
    let (c_hi, n) = metric_late_pct(&control, 0, "timer.sched", late);
    let (c_lo, _) = metric_late_pct(&control, 1, "timer.sched", late);
    let (l_hi, m) = metric_late_pct(&loaded, 0, "timer.sched", late);
    let (l_lo, _) = metric_late_pct(&loaded, 1, "timer.sched", late);
    eprintln!(
            "{backend}: timer.sched over 100 us: control fifo 90 {c_hi:.2}%, fifo 10 {c_lo:.2}% (of {n}); \
             rt:50 load fifo 90 {l_hi:.2}%, fifo 10 {l_lo:.2}% (of {m}); expected from the load: 9.5% below it, 0 above"
        );
    assert!(
        n > 2_500 && m > 2_500,
        "{backend}: too few wake-ups decomposed"
    );
    if any_too_noisy(&[
        ("control, fifo 90 timer.sched over 100 us, %", 2.0, c_hi),
        ("control, fifo 10 timer.sched over 100 us, %", 2.0, c_lo),
    ])
    .is_some()
    {
        return;
    }
    // The load's bursts are in the lower thread's sched part, beyond
    // what the control shows between the same two priorities.
    let added_below = (l_lo - l_hi) - (c_lo - c_hi);
    assert!(
        added_below > 5.0,
        "{backend}: the load is in the lower thread's sched part: {added_below:.2} points added"
    );
    assert!(
        l_hi - c_hi < 3.0,
        "{backend}: the load is not in the upper thread's sched part: {:.2} points added",
        l_hi - c_hi
    );
    // The lower thread's late wake-ups name the load (FIFO 50) as what
    // ran (about 280 expected); the upper one's never do.
    let (lo_eps, hi_eps) = (blocked_by(&loaded, 1, 50), blocked_by(&loaded, 0, 50));
    eprintln!(
        "{backend}: episodes blocked by the FIFO 50 load: fifo 10 {lo_eps}, fifo 90 {hi_eps}"
    );
    assert!(
        lo_eps >= 50,
        "{backend}: {lo_eps} episodes of fifo 10 name the load"
    );
    // (None is expected: FIFO 90 preempts the load at once. A share
    // is allowed for what the tracer may misplace by a few µs.)
    assert!(
        hi_eps * 20 <= lo_eps,
        "{backend}: fifo 90 is not blocked by the FIFO 50 load: {hi_eps} episodes"
    );
}
