//! The timer probe's scheduling policies end to end (issue 38): the
//! combinations the kernel refuses are refused in one line naming the
//! options; a probe under SCHED_DEADLINE runs and is stored with its
//! reservation; an over-subscribed reservation is refused with the
//! kernel's reason (admission control, EBUSY). The measuring test needs
//! root and runs under `flock /tmp/latscope-measure.lock`; about 3 s.

#![allow(clippy::unwrap_used)]

use crate::common::*;

#[test]
fn combinations_the_kernel_refuses_are_one_line_errors() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["--policy", "other", "--priority", "50"],
            "--priority needs --policy fifo or rr",
        ),
        (
            &["--policy", "idle", "--priority", "50"],
            "--priority needs --policy fifo or rr",
        ),
        (
            &["--policy", "fifo", "--nice", "5"],
            "--nice needs --policy other or batch",
        ),
        (
            &["--policy", "rr", "--nice", "-5"],
            "--nice needs --policy other or batch",
        ),
        (&["--policy", "other", "--nice", "20"], "outside -20..19"),
        (
            &["--sched-runtime", "100us"],
            "--sched-runtime and --sched-deadline need --policy deadline",
        ),
        (
            &["--policy", "other", "--sched-deadline", "1ms"],
            "need --policy deadline",
        ),
        (
            &["--policy", "deadline", "--sched-runtime", "2ms"],
            "--sched-runtime <= --sched-deadline <= --period",
        ),
        (
            &[
                "--policy",
                "deadline",
                "--sched-runtime",
                "600us",
                "--sched-deadline",
                "500us",
            ],
            "--sched-runtime <= --sched-deadline <= --period",
        ),
        (
            &["--policy", "deadline", "--sched-deadline", "2ms"],
            "--sched-runtime <= --sched-deadline <= --period",
        ),
        (
            &["--policy", "batch", "--probe", "noise"],
            "need --probe timer",
        ),
        (&["--policy", "deadline", "--cpus", "0"], "cannot be pinned"),
        (
            &["--policy", "deadline", "--trace"],
            "--trace cannot follow --policy deadline",
        ),
    ];
    let single_cpu = online().len() == 1;
    for (args, want) in cases {
        if single_cpu && args.contains(&"--cpus") {
            continue;
        }
        let mut all = vec!["run", "--duration", "1s", "--quiet"];
        all.extend_from_slice(args);
        let o = latscope(&all);
        assert_one_line_error(&o, 2);
        let err = stderr(&o);
        assert!(err.contains(want), "{args:?}: want {want:?}, got {err}");
    }
}

#[test]
fn a_deadline_probe_is_stored_with_its_reservation_and_oversubscription_is_refused() {
    let _g = serial();
    if !is_root() {
        println!("skipped: SCHED_DEADLINE needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let s = store.to_str().unwrap();
    let json = dir.path().join("run.json");
    let o = latscope(&[
        "run",
        "--policy",
        "deadline",
        "--sched-runtime",
        "100us",
        "--sched-deadline",
        "500us",
        "--period",
        "1ms",
        "--duration",
        "1s",
        "--store",
        s,
        "--json",
        json.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc = read_json(&json);
    let settings = &doc["cells"][0]["settings"];
    assert_eq!(settings["policy"], "deadline", "{settings}");
    assert_eq!(settings["deadline"]["runtime_ns"], 100_000);
    assert_eq!(settings["deadline"]["deadline_ns"], 500_000);
    assert_eq!(settings["deadline"]["period_ns"], 1_000_000);
    let samples: u64 = metrics(&doc, "timer.latency")
        .iter()
        .map(|m| m["count"].as_u64().unwrap_or(0))
        .sum();
    println!("deadline 100us/500us/1ms on every CPU: {samples} samples in 1 s");
    assert!(samples > 0, "no sample under SCHED_DEADLINE");
    let shown = stdout(&latscope(&["show", "--store", s]));
    assert!(shown.contains("deadline"), "show: {shown}");
    // Every CPU's whole time: beyond what sched_rt_runtime_us leaves
    // (unless it is -1, which turns admission control off).
    let rt_runtime =
        std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us").unwrap_or_default();
    if rt_runtime.trim() == "-1" {
        println!("skipped over-subscription: sched_rt_runtime_us is -1 (no admission control)");
        return;
    }
    let o = latscope(&[
        "run",
        "--policy",
        "deadline",
        "--sched-runtime",
        "1ms",
        "--period",
        "1ms",
        "--duration",
        "1s",
        "--store",
        s,
        "--quiet",
    ]);
    let err = stderr(&o);
    println!("over-subscribed: {}", err.trim());
    assert_ne!(o.status.code(), Some(0));
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("admission control (EBUSY)"), "{err}");
}

#[test]
fn an_rr_cell_records_the_quantum_the_kernel_reported_and_show_prints_it() {
    let _g = serial();
    if !is_root() {
        println!("skipped: SCHED_RR needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let s = store.to_str().unwrap();
    let json = dir.path().join("run.json");
    let o = latscope(&[
        "run",
        "--policy",
        "rr",
        "--priority",
        "20",
        "--duration",
        "1s",
        "--store",
        s,
        "--json",
        json.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let settings = read_json(&json)["cells"][0]["settings"].clone();
    let quantum = settings["rr_interval_ns"].as_u64().unwrap_or(0);
    let timeslice_ms: u64 = std::fs::read_to_string("/proc/sys/kernel/sched_rr_timeslice_ms")
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(0);
    println!("rr 20: quantum recorded {quantum} ns; sched_rr_timeslice_ms {timeslice_ms}");
    assert_eq!(settings["policy"], "rr");
    if timeslice_ms > 0 {
        // The kernel keeps the quantum in ticks: within one (<= 10 ms).
        let want = timeslice_ms * 1_000_000;
        assert!(quantum.abs_diff(want) <= 10_000_000, "{settings}");
    } else {
        assert!(quantum > 0, "{settings}");
    }
    let shown = stdout(&latscope(&["show", "--store", s]));
    assert!(shown.contains("rr 20, quantum "), "show: {shown}");
}

/// Without privileges the fair-share policies run as asked; a negative
/// nice value (which needs CAP_SYS_NICE) is refused by the kernel, and
/// the run says so instead of claiming a missing real-time priority.
#[test]
fn unprivileged_fair_share_policies_run_and_a_refused_nice_is_said() {
    let _g = serial();
    let Some((dir, copy)) = unprivileged_dir() else {
        return;
    };
    let store = store_in(dir.path());
    let run = |name: &str, extra: &[&str]| {
        let json = dir.path().join(format!("{name}.json"));
        let o = as_nobody(&copy)
            .args(["run", "--duration", "1s", "--quiet"])
            .args(["--store", store.to_str().unwrap()])
            .args(["--json", json.to_str().unwrap()])
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
        read_json(&json)
    };
    let batch = run("batch", &["--policy", "batch", "--nice", "5"]);
    let s = &batch["cells"][0]["settings"];
    assert_eq!(
        (s["policy"].as_str(), s["nice"].as_i64()),
        (Some("batch"), Some(5))
    );
    // (memory locking and the DMA latency hold may be missing unprivileged.)
    let missing = batch["capabilities"]["missing"].to_string();
    assert!(!missing.contains("nice value refused"), "{missing}");
    assert!(!missing.contains("real-time priority"), "{missing}");
    assert_eq!(batch["capabilities"]["rt_priority"], true);
    let idle = run("idle", &["--policy", "idle"]);
    assert_eq!(idle["cells"][0]["settings"]["policy"], "idle");
    let niced = run("niced", &["--policy", "other", "--nice", "-5"]);
    let missing = niced["capabilities"]["missing"].to_string();
    println!("unprivileged nice -5: {missing}");
    assert!(missing.contains("nice value refused"), "{missing}");
    assert!(!missing.contains("no real-time priority"), "{missing}");
}
