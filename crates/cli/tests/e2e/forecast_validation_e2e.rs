//! The forecast's out-of-sample test on real data: a run long enough to be
//! split (51 s on every online CPU, twice that on one) gets a validation
//! of its tail model in its forecast: the model refitted to the histograms
//! stored at the checkpoint the method chooses, tested on the rest. The
//! figures it shows are what the store says: the checkpoint is one of the
//! stored ones, and the seconds of the rest above the level are recomputed
//! here from the stored per-second maxima.
//!
//! Whether the later part of a run on a shared VM matches its first part is
//! the machine's business, not the code's, so the test asserts that the
//! check was made and made right, and prints the verdict.

#![allow(clippy::unwrap_used)]

use crate::common::*;
use serde_json::Value;

/// The per-second maxima of `timer.latency` of every CPU of run 1's only
/// cell, read from the SQLite file directly (24-byte records: count, max,
/// above, little-endian), indexed by second from the cell's start; `None`
/// for a second without samples.
fn stored_maxima(store: &std::path::Path) -> Vec<Vec<Option<u64>>> {
    let db = rusqlite::Connection::open(store).unwrap();
    let mut stmt = db
        .prepare(
            "SELECT cpu, first_second, data FROM timeline_chunks WHERE metric = 'timer.latency' ORDER BY cpu, first_second",
        )
        .unwrap();
    let rows: Vec<(i64, i64, Vec<u8>)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut per_cpu: Vec<(i64, Vec<Option<u64>>)> = Vec::new();
    for (cpu, first, data) in rows {
        if per_cpu.last().is_none_or(|(c, _)| *c != cpu) {
            per_cpu.push((cpu, Vec::new()));
        }
        let maxima = &mut per_cpu.last_mut().unwrap().1;
        assert_eq!(maxima.len(), first as usize, "chunks follow one another");
        for rec in data.chunks_exact(24) {
            let count = u64::from_le_bytes(rec[0..8].try_into().unwrap());
            let max = u64::from_le_bytes(rec[8..16].try_into().unwrap());
            maxima.push((count > 0).then_some(max));
        }
    }
    per_cpu.into_iter().map(|(_, m)| m).collect()
}

/// The cell times (ns) of the checkpoints stored for `timer.latency`.
fn stored_checkpoints(store: &std::path::Path) -> Vec<u64> {
    let db = rusqlite::Connection::open(store).unwrap();
    let mut stmt = db
        .prepare(
            "SELECT DISTINCT at_ns FROM metric_snapshots WHERE name = 'timer.latency' ORDER BY at_ns",
        )
        .unwrap();
    stmt.query_map([], |r| r.get::<_, i64>(0))
        .unwrap()
        .map(|r| r.unwrap() as u64)
        .collect()
}

#[test]
fn a_long_enough_run_is_validated_on_its_own_later_part() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("v.db");
    // 51 s with a checkpoint every 5 s: the only checkpoint that leaves
    // 30 s to fit and 20 s to test, the least the method accepts, is at
    // 30 s. The tail is fitted to the per-second maxima of every CPU, so a
    // machine with one CPU runs twice as long for as many.
    let seconds = (102 / online().len().max(1)).max(51);
    let o = latscope(&[
        "run",
        "--period",
        "1ms",
        "--checkpoint",
        "5s",
        "--duration",
        &format!("{seconds}s"),
        "--store",
        store.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = latscope(&[
        "forecast",
        "latest",
        "--store",
        store.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let m = doc["cells"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "timer.latency")
        .unwrap();
    let d = &m["diagnostics"];
    let v = &d["validation"];
    assert!(v.is_object(), "no validation: {}", d["validation_skipped"]);
    assert_eq!(v["method"], "tail-fit", "{v}");
    let maxima = stored_maxima(&store);
    let ncpu = maxima.len() as u64;
    let cell_s = m["measured_s"].as_f64().unwrap() / ncpu as f64;
    // The checkpoint used is a stored one: the nearest to two thirds that
    // leaves 30 s to fit and 20 s to test.
    let checkpoints = stored_checkpoints(&store);
    assert!(checkpoints.len() >= 5, "{checkpoints:?}");
    let at = checkpoints
        .iter()
        .map(|&ns| ns as f64 / 1e9)
        .filter(|&s| s >= 30.0 && cell_s - s >= 20.0)
        .min_by(|a, b| {
            (a - cell_s * 2.0 / 3.0)
                .abs()
                .total_cmp(&(b - cell_s * 2.0 / 3.0).abs())
        })
        .unwrap();
    assert_eq!(
        v["fit_seconds"].as_u64().unwrap(),
        (at * ncpu as f64).round() as u64,
        "{v}"
    );
    let cut = at.round() as usize;
    let later: Vec<u64> = maxima
        .iter()
        .flat_map(|cpu| cpu.iter().skip(cut).flatten().copied())
        .collect();
    let level = v["level_ns"].as_u64().unwrap();
    let observed = later.iter().filter(|&&x| x > level).count() as u64;
    let predicted = v["predicted"].as_f64().unwrap();
    let p = v["p_value"].as_f64().unwrap();
    eprintln!(
        "validation: fitted {} CPU-s to the checkpoint at {at:.1} s, tested {} s; above {level} ns predicted {predicted:.1}, observed {} (recomputed {observed}), p = {p:.3}, passed {}",
        v["fit_seconds"], v["test_seconds"], v["observed"], v["passed"]
    );
    assert_eq!(v["test_seconds"].as_u64().unwrap() as usize, later.len());
    assert_eq!(v["observed"].as_u64().unwrap(), observed);
    // The level is in the fitted tail and expected about ten clusters in
    // the rest: at most ten seconds.
    assert!(predicted > 0.0 && predicted <= 10.5, "{v}");
    assert!((0.0..=1.0).contains(&p));
    assert_eq!(v["passed"].as_bool().unwrap(), p >= 0.01);
    // The text shows it beside the forecast.
    let o = latscope(&["forecast", "latest", "--store", store.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("validated: the tail model refitted to the first")
            || text.contains("validation failed: the tail model refitted to the first"),
        "{text}"
    );
}
