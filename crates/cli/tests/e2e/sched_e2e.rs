//! `latscope sched` end to end: task sets from TOML against runs built
//! through the store API (histograms with known pseudo worst cases, so every
//! response time is known exactly), bad input, and one short real run.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::common::*;
use latscope_model::{Capabilities, CellMeta, CpuId, Nanos, RunMeta, RunStatus, SystemInfo};
use latscope_stats::MetricResult;
use latscope_store::Store;
use serde_json::{json, Value};

const HOUR_S: u64 = 3_600;

fn meta() -> RunMeta {
    RunMeta {
        command_line: vec!["latscope".into(), "suite".into()],
        pid: std::process::id(),
        hostname: "testhost".into(),
        tool_version: "0.1.0".into(),
        ..RunMeta::new(latscope_model::RunId(0), Nanos(1_795_730_639_000_000_000))
    }
}

/// One hour at 1000 wake-ups per second (3 600 000 samples) on CPU 1:
/// everything at 20 µs except 10 samples at `tail` and one at `max`.
/// `tail` is a bucket's upper edge (2^k − 1 ns), so once per hour (one
/// exceedance allowed) gives exactly `tail`, observed; once per day (the
/// run is shorter than a day) gives the exact `max`, bounded by the max.
fn latency(tail: u64, max: u64) -> MetricResult {
    let mut m = MetricResult::new("timer.latency", Some(CpuId(1)));
    m.histogram.record_n(20_000, 3_600_000 - 11);
    m.histogram.record_n(tail, 10);
    m.histogram.record(max);
    m
}

/// Run 1: cell 0 at FIFO 90 (tail 131 071 ns, max 2 ms), cell 1 at FIFO 50
/// (tail 262 143 ns, max 3 ms), an hour each. Run 2: no cells.
fn build_store(path: &Path) {
    let mut store = Store::open(path).unwrap();
    let run = store
        .create_run(&meta(), &SystemInfo::default(), &Capabilities::default())
        .unwrap();
    for (index, priority, tail, max) in [
        (0u32, 90u32, 131_071u64, 2_000_000u64),
        (1, 50, 262_143, 3_000_000),
    ] {
        let mut settings = BTreeMap::new();
        settings.insert("policy".to_string(), json!("fifo"));
        settings.insert("priority".to_string(), json!(priority));
        settings.insert("period_ns".to_string(), json!(1_000_000));
        let cell = store
            .add_cell(
                run,
                &CellMeta {
                    monotonic_start_ns: Nanos(5_000_000_000),
                    ..CellMeta::new(
                        index,
                        "cpu",
                        latscope_model::CellSettings::from_json(
                            "timer",
                            serde_json::Value::Object(settings.into_iter().collect()),
                        )
                        .unwrap(),
                        Nanos::ZERO,
                    )
                },
            )
            .unwrap();
        store
            .checkpoint(
                run,
                cell,
                Nanos::from_secs(HOUR_S),
                &[latency(tail, max)],
                &[],
                Nanos(1_795_734_239_000_000_000),
            )
            .unwrap();
    }
    store
        .finish_run(
            run,
            RunStatus::Complete,
            Nanos(1_795_734_239_000_000_000),
            &[],
        )
        .unwrap();
    let empty = store
        .create_run(&meta(), &SystemInfo::default(), &Capabilities::default())
        .unwrap();
    store
        .finish_run(
            empty,
            RunStatus::Complete,
            Nanos(1_795_734_239_000_000_000),
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

fn fixture(name: &str) -> String {
    let p: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "tests",
        "fixtures",
        "sched",
        name,
    ]
    .iter()
    .collect();
    p.to_str().unwrap().to_string()
}

fn sched_json(args: &[&str]) -> (Option<i32>, Value) {
    let mut a = vec!["sched"];
    a.extend_from_slice(args);
    a.push("--json");
    let o = latscope(&a);
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
    (o.status.code(), serde_json::from_slice(&o.stdout).unwrap())
}

fn task<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap()
}

/// control.toml: control (1 ms, 200 µs, prio 90), fusion (10 ms, 2 ms,
/// prio 80), logger (100 ms, 10 ms, D 50 ms, prio 10). Once per hour:
/// J = B = 131 071 ns at FIFO 90, 262 143 ns at FIFO 50.
///
/// By hand:
/// - control at FIFO 90: R = J + C + B = 131 071 + 200 000 + 131 071
///   = 462 142 ns, slack 537 858.
/// - fusion at FIFO 50 (highest measured ≤ 80), J = B = 262 143:
///   w = 2 262 143 → 2 262 143 + ⌈(w + 131 071)/1 ms⌉·200 µs
///   = 2 262 143 + 3·200 000 = 2 862 143 → ⌈2 993 214/10^6⌉ = 3: settled;
///   R = 262 143 + 2 862 143 = 3 124 286 ns, slack 6 875 714.
/// - logger, below every measured priority: FIFO 50's figure (flagged
///   optimistic). w = 10 262 143 → + 11·200 000 + ⌈10 524 286/10^7⌉·2 ms
///   = 16 462 143 → + 17·0.2 ms + 2·2 ms = 17 662 143 → + 18·0.2 ms + 4 ms
///   = 17 862 143 → same: R = 262 143 + 17 862 143 = 18 124 286 ns,
///   slack 50 ms − R = 31 875 714.
#[test]
fn explicit_priorities_take_the_latency_of_their_level() {
    let (_dir, s) = setup();
    let (code, doc) = sched_json(&[&fixture("control.toml"), "--run", "1", "--store", &s]);
    assert_eq!(code, Some(0));
    assert_eq!(doc["run_id"], 1);
    assert_eq!(doc["miss_interval_ns"], 3_600_000_000_000u64);
    assert_eq!(doc["schedulable"], true);
    assert_eq!(doc["priorities"], "explicit");

    let control = task(&doc, "control");
    assert_eq!(control["jitter_ns"], 131_071);
    assert_eq!(control["blocking_ns"], 131_071);
    assert_eq!(control["response_ns"], 462_142);
    assert_eq!(control["response"], "exact");
    assert_eq!(control["slack_ns"], 537_858);
    assert_eq!(control["latency_source"]["level"], "FIFO 90");
    assert_eq!(control["latency_source"]["basis"], "observed");
    assert_eq!(control["latency_source"]["optimistic"], false);

    let fusion = task(&doc, "fusion");
    assert_eq!(fusion["jitter_ns"], 262_143);
    assert_eq!(fusion["response_ns"], 3_124_286);
    assert_eq!(fusion["slack_ns"], 6_875_714);
    assert_eq!(fusion["latency_source"]["level"], "FIFO 50");

    let logger = task(&doc, "logger");
    assert_eq!(logger["deadline_ns"], 50_000_000);
    assert_eq!(logger["response_ns"], 18_124_286);
    assert_eq!(logger["slack_ns"], 31_875_714);
    assert_eq!(logger["latency_source"]["optimistic"], true);

    // U = 0.2 + 0.2 + 0.1 = 0.5.
    assert!((doc["utilization"].as_f64().unwrap() - 0.5).abs() < 1e-12);
    assert_eq!(doc["ll_pass"], true);
    assert_eq!(doc["bounds_apply"], false, "D < T for the logger, jitter");
    let pwc = doc["pseudo_worst_case"].as_array().unwrap();
    assert_eq!(pwc.len(), 2);
    assert_eq!(pwc[0]["latency_ns"], 131_071);
    assert_eq!(pwc[0]["exceedances"], 1);
    assert_eq!(pwc[0]["basis"], "observed");

    // The text form: the table and the verdict.
    let o = latscope(&[
        "sched",
        &fixture("control.toml"),
        "--run",
        "1",
        "--store",
        &s,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("FIFO 90     131µs  observed"), "{text}");
    assert!(text.contains("462µs"), "{text}");
    assert!(text.contains("262µs*"), "{text}");
    assert!(
        text.contains("schedulable: every task meets its deadline"),
        "{text}"
    );
    let header = text.lines().find(|l| l.starts_with("task")).unwrap();
    for col in [
        "period", "WCET", "deadline", "prio", "response", "slack", "verdict",
    ] {
        assert!(header.contains(col), "{header}");
    }
}

/// Once per day from one-hour cells: the run's max, labelled as such.
#[test]
fn a_run_shorter_than_the_miss_interval_gives_its_max() {
    let (_dir, s) = setup();
    let (code, doc) = sched_json(&[
        &fixture("control.toml"),
        "--store",
        &s,
        "--run",
        "1",
        "--miss-rate",
        "1/day",
    ]);
    let control = task(&doc, "control");
    assert_eq!(control["jitter_ns"], 2_000_000);
    assert_eq!(control["latency_source"]["basis"], "run_max");
    // R = 2 ms + 200 µs + 2 ms = 4.2 ms, past the 1 ms period: a miss,
    // reported as a lower bound.
    assert_eq!(control["schedulable"], false);
    assert_eq!(control["response"], "lower_bound");
    assert_eq!(control["response_ns"], 4_200_000);
    assert_eq!(code, Some(3));
    let o = latscope(&[
        "sched",
        &fixture("control.toml"),
        "--store",
        &s,
        "--run",
        "1",
        "--miss-rate",
        "1/day",
    ]);
    assert_eq!(o.status.code(), Some(3));
    let text = stdout(&o);
    assert!(text.contains("bounded by the run's max"), "{text}");
    assert!(text.contains("≥ 4.20ms"), "{text}");
}

/// Buttazzo's (1, 4), (2, 6), (3, 10) in ms is schedulable with zero slack
/// without jitter; with J = B = 131 071 ns (cell 0 only, rate-monotonic at
/// the highest measured priority) τ3 misses:
/// w = 3 131 071 → + ⌈3 262 142/4 ms⌉·1 ms + ⌈3 262 142/6 ms⌉·2 ms
/// = 6 131 071 → + 2·1 ms + 2·2 ms = 9 131 071 → + 3 ms + 4 ms
/// = 10 131 071: R ≥ 10 262 142 > T = 10 ms. τ1: 1 262 142; τ2:
/// w = 2 131 071 → + 1 ms = 3 131 071 → same: R = 3 262 142. Exit 3.
#[test]
fn measured_latency_makes_a_tight_set_miss() {
    let (_dir, s) = setup();
    let (code, doc) = sched_json(&[
        &fixture("buttazzo_ms.toml"),
        "--store",
        &s,
        "--run",
        "1",
        "--cell",
        "0",
    ]);
    assert_eq!(code, Some(3));
    assert_eq!(doc["priorities"], "rate_monotonic");
    assert_eq!(doc["schedulable"], false);
    assert_eq!(task(&doc, "t1")["response_ns"], 1_262_142);
    assert_eq!(task(&doc, "t2")["response_ns"], 3_262_142);
    let t3 = task(&doc, "t3");
    assert_eq!(t3["response"], "lower_bound");
    assert_eq!(t3["response_ns"], 10_262_142);
    assert_eq!(t3["slack_ns"], Value::Null);
    assert_eq!(t3["schedulable"], false);
    // U = 0.8833 > 0.7798 for three tasks.
    assert_eq!(doc["ll_pass"], false);
    assert_eq!(doc["pseudo_worst_case"].as_array().unwrap().len(), 1);

    let o = latscope(&[
        "sched",
        &fixture("buttazzo_ms.toml"),
        "--store",
        &s,
        "--run",
        "1",
        "--cell",
        "0",
    ]);
    assert_eq!(o.status.code(), Some(3));
    let text = stdout(&o);
    assert!(text.contains("NOT schedulable: 1 of 3 tasks"), "{text}");
    assert!(text.contains("MISS"), "{text}");
    assert!(text.contains("RM 3"), "{text}");
    assert!(stderr(&o).is_empty());
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn bad_task_files_fail_with_one_line() {
    let (dir, s) = setup();
    let d = dir.path();
    let task = |extra: &str| format!("[[task]]\nname = \"a\"\n{extra}\n");
    let cases: Vec<(String, &str)> = vec![
        (fixture("zero_period.toml"), "period must be greater than 0"),
        (fixture("missing_wcet.toml"), "line 1: missing field `wcet`"),
        (fixture("mixed_priorities.toml"), "task 'b' has no priority"),
        (
            write(d, "syntax.toml", "[[task]\nname = \"a\""),
            "syntax.toml line 1",
        ),
        (write(d, "empty.toml", "# nothing\n"), "no tasks"),
        (
            write(d, "neg.toml", &task("period = \"-1ms\"\nwcet = \"1us\"")),
            "durations cannot be negative",
        ),
        (
            write(d, "bare.toml", &task("period = 1000\nwcet = \"1us\"")),
            "a bare number (1000) is not a duration",
        ),
        (
            write(
                d,
                "unit.toml",
                &task("period = \"5 parsecs\"\nwcet = \"1us\""),
            ),
            "invalid duration '5 parsecs'",
        ),
        (
            write(
                d,
                "prio.toml",
                &task("period = \"1ms\"\nwcet = \"1us\"\npriority = -5"),
            ),
            "line 5: priority -5 is out of range",
        ),
        (
            write(
                d,
                "field.toml",
                &task("period = \"1ms\"\nwcet = \"1us\"\nbudget = \"1us\""),
            ),
            "unknown field `budget`",
        ),
        (
            write(
                d,
                "late.toml",
                &task("period = \"1ms\"\nwcet = \"1us\"\ndeadline = \"2ms\""),
            ),
            "longer than its period",
        ),
        (
            write(
                d,
                "zero_wcet.toml",
                &task("period = \"1ms\"\nwcet = \"0ns\""),
            ),
            "wcet must be greater than 0",
        ),
        (
            write(
                d,
                "dup.toml",
                &format!(
                    "{}{}",
                    task("period = \"1ms\"\nwcet = \"1us\""),
                    task("period = \"2ms\"\nwcet = \"1us\"")
                ),
            ),
            "two tasks are named 'a'",
        ),
    ];
    for (path, expect) in &cases {
        let o = latscope(&["sched", path, "--store", &s]);
        assert_one_line_error(&o, 2);
        assert!(stderr(&o).contains(expect), "{path}: {}", stderr(&o));
    }
    // Unreadable: an error, not a usage problem.
    let missing = d.join("no-such.toml");
    let o = latscope(&["sched", missing.to_str().unwrap(), "--store", &s]);
    assert_one_line_error(&o, 1);
    assert!(
        stderr(&o).contains("cannot read the task file"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bad_options_and_runs_fail_with_one_line() {
    let (dir, s) = setup();
    let f = fixture("control.toml");
    for (args, code, expect) in [
        (
            &["--miss-rate", "often"][..],
            2,
            "invalid --miss-rate 'often'",
        ),
        (&["--miss-rate", "0/hour"][..], 2, "invalid --miss-rate"),
        (&["--miss-rate", "-1/hour"][..], 2, "invalid --miss-rate"),
        (&["--cell", "x"][..], 2, "invalid --cell 'x'"),
        (
            &["--cell", "7", "--run", "1"][..],
            1,
            "--cell 7 does not exist",
        ),
        (&["--run", "99"][..], 1, "99"),
        (&["--run", "abc"][..], 1, "abc"),
        // Run 2 has no cells, so nothing to take a latency from.
        (&["--run", "2"][..], 1, "no timer.latency samples"),
        (&["--run", "latest"][..], 1, "no timer.latency samples"),
    ] {
        let mut a = vec!["sched", f.as_str(), "--store", &s];
        a.extend_from_slice(args);
        let o = latscope(&a);
        assert_one_line_error(&o, code);
        assert!(stderr(&o).contains(expect), "{args:?}: {}", stderr(&o));
    }
    // No store: refused, and none created.
    let missing = dir.path().join("none.db");
    let o = latscope(&["sched", &f, "--store", missing.to_str().unwrap()]);
    assert_one_line_error(&o, 1);
    assert!(!missing.exists());
    // No task file argument: usage.
    let o = latscope(&["sched", "--store", &s]);
    assert_one_line_error(&o, 2);
}

/// A real one-second run on one CPU, then the analysis of a light task set:
/// whatever this machine's latency, a 10 ms task of 100 µs with 10 ms of
/// slack passes unless a wake-up took longer than ~5 ms.
#[test]
fn a_real_run_feeds_the_analysis() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let s = store.to_str().unwrap().to_string();
    let cpu = online()[0].to_string();
    let o = latscope(&[
        "run",
        "--duration",
        "1s",
        "--cpus",
        &cpu,
        "--store",
        &s,
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let tasks = write(
        dir.path(),
        "light.toml",
        "[[task]]\nname = \"tick\"\nperiod = \"10ms\"\nwcet = \"100us\"\n",
    );
    let (code, doc) = sched_json(&[&tasks, "--store", &s, "--miss-rate", "1/500ms"]);
    let t = task(&doc, "tick");
    let j = t["jitter_ns"].as_u64().unwrap();
    assert!(j > 0, "a real wake-up is never free");
    assert_eq!(t["response_ns"].as_u64().unwrap(), 100_000 + 2 * j);
    assert_eq!(t["latency_source"]["basis"], "observed", "1 s run, 1/500ms");
    let expect = if 100_000 + 2 * j <= 10_000_000 { 0 } else { 3 };
    assert_eq!(code, Some(expect));
}
