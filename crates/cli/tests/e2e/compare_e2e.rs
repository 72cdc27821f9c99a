//! `compare` on a store with runs of known difference, built through the
//! store API and read by the real binary.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use crate::common::*;
use latscope_model::{Capabilities, CellMeta, CpuId, Nanos, RunMeta, RunStatus, SystemInfo};
use latscope_stats::MetricResult;
use latscope_store::Store;
use serde_json::{json, Value};

fn meta() -> RunMeta {
    RunMeta {
        command_line: vec!["latscope".into(), "run".into()],
        pid: std::process::id(),
        hostname: "testhost".into(),
        tool_version: "0.1.0".into(),
        ..RunMeta::new(latscope_model::RunId(0), Nanos(1_795_730_639_000_000_000))
    }
}

/// One CPU's timer.latency: 50 000 samples at 10–19 µs, plus `tail`
/// samples spread over `[tail_low, 2 × tail_low)`.
fn metric(cpu: u32, tail: u64, tail_low: u64) -> MetricResult {
    let mut m = MetricResult::new("timer.latency", Some(CpuId(cpu)));
    for i in 0..50_000u64 {
        m.histogram
            .record(10_000 + (i * 7_919 + u64::from(cpu)) % 9_000);
    }
    for i in 0..tail {
        m.histogram.record(tail_low + (i * 104_729) % tail_low);
    }
    m
}

fn add_run(store: &mut Store, tail: u64, tail_low: u64) {
    let run = store
        .create_run(&meta(), &SystemInfo::default(), &Capabilities::default())
        .unwrap();
    let mut settings = BTreeMap::new();
    settings.insert("policy".to_string(), json!("fifo"));
    settings.insert("priority".to_string(), json!(95));
    let cell = store
        .add_cell(
            run,
            &CellMeta {
                monotonic_start_ns: Nanos(1_000),
                ..CellMeta::new(
                    0,
                    "cpu",
                    latscope_model::CellSettings::from_json(
                        "timer",
                        serde_json::Value::Object(settings.into_iter().collect()),
                    )
                    .unwrap(),
                    Nanos::from_secs(50),
                )
            },
        )
        .unwrap();
    // Two CPUs: compare pools them.
    store
        .checkpoint(
            run,
            cell,
            Nanos::from_secs(50),
            &[metric(0, tail, tail_low), metric(1, tail, tail_low)],
            &[],
            Nanos(1_795_730_690_000_000_000),
        )
        .unwrap();
    store
        .finish_run(
            run,
            RunStatus::Complete,
            Nanos(1_795_730_690_000_000_000),
            &[],
        )
        .unwrap();
}

/// Run 1: a tail of 0.1 % at 50–100 µs. Run 2: ten times as many samples
/// above 200 µs.
fn setup() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = store_in(dir.path());
    let mut store = Store::open(&path).unwrap();
    add_run(&mut store, 50, 50_000);
    add_run(&mut store, 500, 200_000);
    drop(store);
    let s = path.to_str().unwrap().to_string();
    (dir, s)
}

#[test]
fn compare_reports_a_worse_tail_and_fails_the_gate() {
    let _g = crate::common::serial();
    let (_dir, s) = setup();
    let o = latscope(&["compare", "1", "2", "--store", &s]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("timer/cpu/fifo:95"), "{out}");
    assert!(out.contains("timer.latency"), "{out}");
    assert!(out.contains("WORSE p="), "{out}");
    assert!(!out.contains('\x1b'), "colour when not a terminal: {out}");
    // Pooled: 2 × (50 000 + 50) samples for the baseline.
    assert!(out.contains("100100"), "{out}");

    let o = latscope(&["compare", "1", "2", "--fail-if-worse", "10", "--store", &s]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("run 2 timer/cpu/fifo:95 timer.latency"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");

    // The reverse direction is better, not worse: the gate passes.
    let o = latscope(&["compare", "2", "1", "--fail-if-worse", "10", "--store", &s]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("better p="), "{}", stdout(&o));
}

#[test]
fn compare_with_itself_passes() {
    let _g = crate::common::serial();
    let (_dir, s) = setup();
    let o = latscope(&["compare", "1", "1", "--fail-if-worse", "0", "--store", &s]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("same p="), "{}", stdout(&o));
    assert!(stdout(&o).contains("×1.00"), "{}", stdout(&o));
}

#[test]
fn compare_json_and_html() {
    let _g = crate::common::serial();
    let (dir, s) = setup();
    let html = dir.path().join("cmp.html");
    let o = latscope(&[
        "compare",
        "1",
        "latest",
        "--json",
        "--fail-if-worse",
        "10",
        "--html",
        html.to_str().unwrap(),
        "--store",
        &s,
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["schema"], "latscope.compare.v1");
    assert_eq!(doc["runs"], json!([1, 2]));
    let row = &doc["rows"][0];
    assert_eq!(row["metric"], "timer.latency");
    assert_eq!(row["cell"]["policy"], "fifo");
    assert_eq!(row["cell"]["priority"], 95);
    let v = &row["versus"][0];
    assert_eq!(v["tail"]["verdict"], "worse");
    assert!(v["ratio_p999"].as_f64().unwrap() > 2.0);
    assert!(v["p999_ratio_ci"]["low"].as_f64().unwrap() > 1.1);
    assert_eq!(doc["tripped"][0]["run_id"], 2);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert_eq!(page.matches("<svg").count(), 1);
    assert_eq!(page.matches("<polyline").count(), 2);
    assert!(!page.contains("https:") && !page.contains("src="));
}

#[test]
fn bad_run_id_is_one_line_and_exit_1() {
    let _g = crate::common::serial();
    let (_dir, s) = setup();
    let o = latscope(&["compare", "1", "9", "--store", &s]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    assert!(stdout(&o).is_empty());
    let o = latscope(&["compare", "1", "--store", &s]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = latscope(&["compare", "1", "2", "--fail-if-worse", "-5", "--store", &s]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}
