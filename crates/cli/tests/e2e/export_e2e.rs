//! `show --episodes` and `export` on a store holding a traced run, built
//! through the store API (no tracing needed on the test machine), read by
//! the real binary.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use crate::common::*;
use latscope_model::{
    Breakdown, Capabilities, Cause, CauseKind, CauseTotal, CellMeta, CpuId, Episode, EpisodeWindow,
    Nanos, RunMeta, RunStatus, SystemInfo, TraceSummary, WindowEvent,
};
use latscope_stats::MetricResult;
use latscope_store::Store;
use serde_json::Value;

const T0: u64 = 5_000_000_000;

fn meta() -> RunMeta {
    RunMeta {
        command_line: vec!["latscope".into(), "run".into(), "--trace".into()],
        pid: std::process::id(),
        hostname: "testhost".into(),
        tool_version: "0.1.0".into(),
        ..RunMeta::new(latscope_model::RunId(0), Nanos(1_795_730_639_000_000_000))
    }
}

fn episode(seq: u32) -> Episode {
    let latency = 500_000 + u64::from(seq) * 1_000;
    Episode {
        seq,
        cpu: CpuId(1),
        metric: "timer.latency".into(),
        expiry_ns: Nanos(T0 + u64::from(seq) * 1_000_000),
        offset_ns: Nanos(u64::from(seq) * 1_000_000),
        latency_ns: Nanos(latency),
        breakdown: Breakdown {
            irq_ns: Nanos(4_000),
            sched_ns: Nanos(latency - 10_000),
            return_ns: Nanos(6_000),
            idle_at_expiry: false,
            causes: vec![Cause {
                kind: CauseKind::Thread,
                name: "burner".into(),
                pid: Some(4242),
                policy: Some("fifo".into()),
                priority: Some(90),
                duration_ns: Nanos(latency),
                parts: Vec::new(),
            }],
            blocking: None,
            unexplained_ns: Nanos(0),
            steal_ns: None,
            steal_source: None,
            steal_irq_ns: None,
            steal_sched_ns: None,
            complete: true,
            held: None,
        },
        stacks: vec![],
    }
}

fn window(seq: u32) -> EpisodeWindow {
    let e = episode(seq);
    let t = e.expiry_ns.0;
    let ev = |dt: u64, tid: i32, event: &str, name: &str, pid: i32, value: i64| WindowEvent {
        time_ns: t + dt,
        cpu: 1,
        tid,
        event: event.into(),
        name: name.into(),
        pid,
        prio: 9,
        value,
        object: 0,
    };
    EpisodeWindow {
        seq,
        cpu: CpuId(1),
        events: vec![
            ev(0, 4242, "vector_entry", "local_timer", 236, 0),
            ev(3_000, 4242, "sched_waking", "latscope-timer", 100, 0),
            ev(4_000, 4242, "vector_exit", "local_timer", 236, 0),
            ev(
                e.latency_ns.0 - 6_000,
                4242,
                "sched_switch",
                "latscope-timer",
                100,
                4242,
            ),
        ],
        truncated: 0,
    }
}

/// Run 1: traced, 12 episodes seen, 3 kept, windows for the first 2.
/// Run 2: not traced.
fn build_store(path: &Path) {
    let mut store = Store::open(path).unwrap();
    let caps = Capabilities {
        tracepoints: true,
        ..Capabilities::default()
    };
    let run = store
        .create_run(&meta(), &SystemInfo::default(), &caps)
        .unwrap();
    let cell = store
        .add_cell(
            run,
            &CellMeta {
                monotonic_start_ns: Nanos(T0),
                ..CellMeta::new(
                    0,
                    "none",
                    latscope_model::CellSettings::default_for("timer").unwrap(),
                    Nanos::ZERO,
                )
            },
        )
        .unwrap();
    let mut lat = MetricResult::new("timer.latency", Some(CpuId(1)));
    lat.histogram.record(20_000);
    lat.histogram.record(512_000);
    let mut nmi = MetricResult::new("nmi.exec", None);
    nmi.histogram.record(9_000);
    store
        .checkpoint(
            run,
            cell,
            Nanos::from_secs(3),
            &[lat, nmi],
            &[],
            Nanos(1_795_730_642_000_000_000),
        )
        .unwrap();
    store
        .add_episodes(
            cell,
            &[episode(1), episode(2), episode(3)],
            &[window(1), window(2)],
        )
        .unwrap();
    store
        .set_trace_summary(
            cell,
            &TraceSummary {
                events: 5_000,
                episodes_total: 12,
                episodes_kept: 3,
                episode_cap: 3,
                threshold_ns: Nanos::from_micros(100),
                cause_totals: vec![CauseTotal {
                    kind: CauseKind::Thread,
                    name: "burner".into(),
                    episodes: 12,
                    total_ns: Nanos(6_078_000),
                    max_ns: Nanos(512_000),
                }],
                ..TraceSummary::default()
            },
        )
        .unwrap();
    store
        .finish_run(
            run,
            RunStatus::Complete,
            Nanos(1_795_730_642_000_000_000),
            &[],
        )
        .unwrap();

    let plain = store
        .create_run(&meta(), &SystemInfo::default(), &Capabilities::default())
        .unwrap();
    store
        .finish_run(
            plain,
            RunStatus::Complete,
            Nanos(1_795_730_642_000_000_000),
            &[],
        )
        .unwrap();
}

fn setup() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    build_store(&store);
    let s = store.to_str().unwrap().to_string();
    (dir, s)
}

#[test]
fn export_writes_a_perfetto_trace_to_stdout_and_to_a_file() {
    let _g = crate::common::serial();
    let (dir, s) = setup();
    let o = latscope(&[
        "export",
        "1",
        "--episode",
        "2",
        "--format",
        "perfetto",
        "--store",
        &s,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["displayTimeUnit"], "ns");
    assert_eq!(doc["otherData"]["episode"], "2");
    let events = doc["traceEvents"].as_array().unwrap();
    assert!(events
        .iter()
        .any(|e| e["ph"] == "X" && e["name"] == "episode 2: timer.latency 502µs"));
    assert!(events
        .iter()
        .any(|e| e["ph"] == "X" && e["name"] == "local_timer"));
    for e in events {
        for key in ["name", "ph", "ts", "pid", "tid"] {
            assert!(!e[key].is_null(), "{key} missing in {e}");
        }
        if e["ph"] == "X" {
            assert!(e["dur"].as_f64().unwrap() >= 0.0, "{e}");
        }
    }

    // --output writes the same document, and nothing else is left behind.
    let out = dir.path().join("episode2.json");
    let o = latscope(&[
        "export",
        "latest",
        "--store",
        &s,
        "--episode",
        "2",
        "--format",
        "perfetto",
        "--output",
        out.to_str().unwrap(),
    ]);
    // latest is run 2 (not traced): an error, and no file.
    assert_one_line_error(&o, 1);
    assert!(stderr(&o).contains("not traced"), "{}", stderr(&o));
    assert!(!out.exists());
    let o = latscope(&[
        "export",
        "1",
        "--store",
        &s,
        "--episode",
        "2",
        "--format",
        "perfetto",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
    assert_eq!(read_json(&out), doc);
    let files: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.contains("episode"))
        .collect();
    assert_eq!(files, ["episode2.json"]);
}

#[test]
fn export_errors_are_one_clear_line() {
    let _g = crate::common::serial();
    let (dir, s) = setup();
    let cases: &[(&[&str], i32, &str)] = &[
        (
            &["export", "1", "--episode", "40", "--format", "perfetto"],
            1,
            "run 1 has 12 episodes; --episode 40 does not exist",
        ),
        (
            &["export", "1", "--episode", "0", "--format", "perfetto"],
            1,
            "--episode 0 does not exist",
        ),
        (
            &["export", "1", "--episode", "7", "--format", "perfetto"],
            1,
            "episode 7 of run 1 is past the cap (3 episodes kept in full)",
        ),
        (
            &["export", "1", "--episode", "3", "--format", "perfetto"],
            1,
            "the kernel events of episode 3 of run 1 were not kept",
        ),
        (
            &["export", "2", "--episode", "1", "--format", "perfetto"],
            1,
            "run 2 was not traced",
        ),
        (
            &["export", "9", "--episode", "1", "--format", "perfetto"],
            1,
            "no run 9",
        ),
        (
            &["export", "x", "--episode", "1", "--format", "perfetto"],
            1,
            "invalid run 'x'",
        ),
        (
            &["export", "1", "--episode", "1", "--format", "svg"],
            2,
            "invalid value 'svg'",
        ),
        (&["export", "1", "--episode", "1"], 2, "--format"),
        (&["export", "1", "--format", "perfetto"], 2, "--episode"),
        (
            &["export", "1", "--episode", "-1", "--format", "perfetto"],
            2,
            "--episode",
        ),
    ];
    for (args, code, expect) in cases {
        let mut all = args.to_vec();
        all.extend(["--store", &s]);
        let o = latscope(&all);
        assert_one_line_error(&o, *code);
        assert!(stderr(&o).contains(expect), "{args:?}: {}", stderr(&o));
        assert!(o.stdout.is_empty(), "{args:?}");
    }

    let nowhere = dir.path().join("no/such/dir/t.json");
    let o = latscope(&[
        "export",
        "1",
        "--episode",
        "1",
        "--format",
        "perfetto",
        "--store",
        &s,
        "--output",
        nowhere.to_str().unwrap(),
    ]);
    assert_one_line_error(&o, 1);
    assert!(stderr(&o).contains("cannot write"), "{}", stderr(&o));

    let missing = dir.path().join("missing.db");
    let o = latscope(&[
        "export",
        "1",
        "--episode",
        "1",
        "--format",
        "perfetto",
        "--store",
        missing.to_str().unwrap(),
    ]);
    assert_one_line_error(&o, 1);
    assert!(!missing.exists(), "export must not create a store");
}

#[test]
fn show_lists_the_episodes_and_the_json_has_them() {
    let _g = crate::common::serial();
    let (_dir, s) = setup();
    let o = latscope(&["show", "1", "--episodes", "--store", &s]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("\ntimer.latency — "), "{text}");
    assert!(
        text.contains("tracer: 5000 events read · 0 records lost"),
        "{text}"
    );
    assert!(text.contains("Interrupts and deferred work"), "{text}");
    assert!(!text.contains("nmi.exec"), "{text}");
    assert!(
        text.contains("cell 0: 12 episodes above 100µs; 3 kept in full (cap 3), 9 past the cap"),
        "{text}"
    );
    for k in 1..=3 {
        assert!(
            text.contains(&format!("\nepisode {k} · CPU 1 · ")),
            "{text}"
        );
    }
    assert!(
        text.contains("where the time went over all 12 episodes"),
        "{text}"
    );

    // Without --episodes: the summary only.
    let o = latscope(&["show", "1", "--store", &s]);
    assert!(!stdout(&o).contains("episode 1 ·"), "{}", stdout(&o));

    // An untraced run says so.
    let o = latscope(&["show", "2", "--episodes", "--store", &s]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("run 2 was not traced"),
        "{}",
        stdout(&o)
    );

    let o = latscope(&["show", "1", "--json", "--store", &s]);
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let seqs: Vec<u64> = doc["episodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, [1, 2, 3]);
    assert_eq!(doc["episodes"][0]["time_ns"], 1_000_000);
    assert_eq!(doc["cells"][0]["trace"]["episodes_total"], 12);
    let o = latscope(&["show", "2", "--json", "--store", &s]);
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["episodes"], serde_json::json!([]));
}

/// `--format rt-tests-json`: cyclictest's JSON layout of the stored
/// histograms; its option and a run without timer.latency are one line.
#[test]
fn rt_tests_json_export_has_cyclictests_layout() {
    let _g = crate::common::serial();
    let (_dir, s) = setup();
    let o = latscope(&["export", "1", "--format", "rt-tests-json", "--store", &s]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    let keys: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("  \""))
        .map(|l| l.trim().split('"').nth(1).unwrap())
        .collect();
    assert_eq!(
        keys,
        [
            "file_version",
            "cmdline:",
            "rt_test_version:",
            "start_time",
            "end_time",
            "return_code",
            "sysinfo",
            "num_threads",
            "resolution_in_ns",
            "thread",
            "latscope"
        ]
    );
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["cmdline:"], "latscope run --trace");
    assert_eq!(doc["start_time"], "Thu, 26 Nov 2026 22:03:59 +0000");
    let t = &doc["thread"]["0"];
    assert_eq!(t["cycles"], 2);
    assert_eq!(
        (t["min"].as_u64(), t["max"].as_u64()),
        (Some(20), Some(512))
    );
    assert_eq!(t["histogram"]["20"], 1);
    assert_eq!(t["histogram"]["512"], 1);
    assert_eq!(t["cpu"], 1);
    assert_eq!(t["avg"].as_f64(), Some(266.0));

    let o = latscope(&[
        "export", "1", "--format", "csv", "--unit", "ns", "--store", &s,
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--unit goes with --format rt-tests-json"));
    let o = latscope(&["export", "2", "--format", "rt-tests-json", "--store", &s]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1);
    assert!(stderr(&o).contains("run 2 has no timer.latency measurements"));
}

/// An output named as a device or through a link to one is written into:
/// `/dev/null` stays the device (a rename over it, as outputs were written
/// before, turned it into a regular file as root), and `/dev/stdout`
/// reaches the reader of standard output with its link kept.
#[test]
fn devices_named_as_outputs_are_written_into_not_replaced() {
    let _g = crate::common::serial();
    use std::os::unix::fs::FileTypeExt;
    let (_dir, s) = setup();
    let is_device = |p: &str| {
        std::fs::metadata(p)
            .map(|m| m.file_type().is_char_device())
            .unwrap_or(false)
    };
    assert!(is_device("/dev/null"));
    let o = latscope(&[
        "export",
        "1",
        "--format",
        "json",
        "--output",
        "/dev/null",
        "--store",
        &s,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(is_device("/dev/null"), "/dev/null is still the device");
    if std::path::Path::new("/dev/stdout").exists() {
        let o = latscope(&[
            "export",
            "1",
            "--format",
            "json",
            "--output",
            "/dev/stdout",
            "--store",
            &s,
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert!(doc.is_object(), "the run's JSON on standard output");
        let link = std::fs::symlink_metadata("/dev/stdout").unwrap();
        assert!(link.file_type().is_symlink(), "/dev/stdout is still a link");
    }
}
