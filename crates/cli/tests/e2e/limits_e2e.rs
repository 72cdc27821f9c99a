//! End-to-end tests of `--stop-above` and `--fail-above` on the real
//! binary: the exit code, the line that explains it, and the stored run.
//! The limits are chosen so the answer does not depend on the machine's
//! noise: no timer wakes up within 1 µs of its expiry (the clock read and
//! the switch alone take longer), and none is 10 s late.

#![allow(clippy::unwrap_used)]

use crate::common::*;

fn run_with(
    extra: &[&str],
    json: &std::path::Path,
    store: &std::path::Path,
) -> std::process::Output {
    let mut args = vec![
        "run",
        "--duration",
        "3s",
        "--quiet",
        "--store",
        store.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    latscope(&args)
}

fn duration_s(doc: &serde_json::Value) -> f64 {
    doc["cells"][0]["duration_ns"].as_u64().unwrap() as f64 / 1e9
}

#[test]
fn stop_above_ends_the_run_at_once_stores_it_and_exits_3() {
    let _g = shared();
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let json = dir.path().join("out.json");
    let o = run_with(&["--stop-above", "1us"], &json, &store);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("exceeded --stop-above 1.00µs") && err.contains("stored"),
        "{err}"
    );
    let doc = read_json(&json);
    assert_eq!(doc["status"], "interrupted");
    // The first housekeeping tick (100 ms) sees the first value: the run
    // ends long before its 3 s.
    let d = duration_s(&doc);
    assert!(d < 1.5, "ran {d} s of 3 s");
    let notes = doc["notes"].to_string();
    assert!(notes.contains("exceeded --stop-above"), "{notes}");
    // The stored run is readable and has the samples up to the stop.
    let shown = latscope(&["show", "latest", "--store", store.to_str().unwrap()]);
    assert_eq!(shown.status.code(), Some(0), "{}", stderr(&shown));
    assert!(metrics(&doc, "timer.latency")
        .iter()
        .any(|m| m["count"].as_u64().unwrap() > 0));
}

#[test]
fn fail_above_measures_to_the_end_then_exits_3() {
    let _g = shared();
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let json = dir.path().join("out.json");
    let o = run_with(&["--fail-above", "1us"], &json, &store);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("exceeded --fail-above 1.00µs"), "{err}");
    let doc = read_json(&json);
    assert_eq!(doc["status"], "complete");
    assert!((duration_s(&doc) - 3.0).abs() < 0.2, "{}", duration_s(&doc));
}

#[test]
fn limits_never_reached_exit_0() {
    let _g = shared();
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let json = dir.path().join("out.json");
    let o = run_with(
        &["--stop-above", "10s", "--fail-above", "10s"],
        &json,
        &store,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc = read_json(&json);
    assert_eq!(doc["status"], "complete");
    assert!((duration_s(&doc) - 3.0).abs() < 0.2);
}

#[test]
fn bad_limits_are_one_line_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let s = store.to_str().unwrap();
    for (args, expect) in [
        (
            vec!["run", "--stop-above", "soon", "--store", s],
            "--stop-above",
        ),
        (
            vec!["run", "--fail-above", "0us", "--store", s],
            "--fail-above must be greater than 0",
        ),
        (
            vec![
                "run",
                "--trace",
                "--threshold",
                "2ms",
                "--stop-above",
                "1ms",
                "--store",
                s,
            ],
            "would not be an episode",
        ),
        (
            vec!["suite", "--stop-above", "-1ms", "--store", s],
            "--stop-above",
        ),
    ] {
        let o = latscope(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(expect), "{args:?}: {err}");
    }
}
