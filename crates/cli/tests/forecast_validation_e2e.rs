//! The forecast's out-of-sample test on real data: a run long enough to be
//! split (80 s on every online CPU, at least 150 seconds pooled) gets a
//! validation in its forecast, and the figures it shows are what the
//! stored per-second maxima of the later third say.
//!
//! Whether the later part of a run on a shared VM matches its first part is
//! the machine's business, not the code's, so the test asserts that the
//! check was made and made right (the observed count is recomputed here
//! from the store), and prints the verdict.

#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use serde_json::Value;

/// The per-second maxima of `timer.latency` of every CPU of run 1's only
/// cell, read from the SQLite file directly (24-byte records: count, max,
/// above, little-endian).
fn stored_maxima(store: &std::path::Path) -> Vec<Vec<u64>> {
    let db = rusqlite::Connection::open(store).unwrap();
    let mut stmt = db
        .prepare(
            "SELECT cpu, data FROM timeline_chunks WHERE metric = 'timer.latency' ORDER BY cpu, first_second",
        )
        .unwrap();
    let rows: Vec<(i64, Vec<u8>)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut per_cpu: Vec<(i64, Vec<u64>)> = Vec::new();
    for (cpu, data) in rows {
        if per_cpu.last().is_none_or(|(c, _)| *c != cpu) {
            per_cpu.push((cpu, Vec::new()));
        }
        let maxima = &mut per_cpu.last_mut().unwrap().1;
        for rec in data.chunks_exact(24) {
            let count = u64::from_le_bytes(rec[0..8].try_into().unwrap());
            let max = u64::from_le_bytes(rec[8..16].try_into().unwrap());
            if count > 0 {
                maxima.push(max);
            }
        }
    }
    per_cpu.into_iter().map(|(_, m)| m).collect()
}

#[test]
fn a_long_enough_run_is_validated_on_its_own_later_part() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("v.db");
    let seconds = (160 / online().len().max(1)).max(80);
    let o = latscope(&[
        "run",
        "--period",
        "1ms",
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
    let maxima = stored_maxima(&store);
    let (mut fit, mut later) = (0usize, Vec::new());
    for cpu in &maxima {
        let cut = cpu.len() * 2 / 3;
        fit += cut;
        later.extend_from_slice(&cpu[cut..]);
    }
    let level = v["level_ns"].as_u64().unwrap();
    let observed = later.iter().filter(|&&x| x > level).count() as u64;
    let predicted = v["predicted"].as_f64().unwrap();
    let p = v["p_value"].as_f64().unwrap();
    eprintln!(
        "validation: fitted {} s, tested {} s; above {level} ns predicted {predicted:.1}, observed {} (recomputed {observed}), p = {p:.3}, passed {}",
        v["fit_seconds"], v["test_seconds"], v["observed"], v["passed"]
    );
    assert_eq!(v["fit_seconds"].as_u64().unwrap() as usize, fit);
    assert_eq!(v["test_seconds"].as_u64().unwrap() as usize, later.len());
    assert_eq!(v["observed"].as_u64().unwrap(), observed);
    // The level is in the fitted tail and expected about ten times.
    assert!(predicted > 0.0 && predicted <= 10.5, "{v}");
    assert!((0.0..=1.0).contains(&p));
    assert_eq!(v["passed"].as_bool().unwrap(), p >= 0.01);
    // The text shows it beside the forecast.
    let o = latscope(&["forecast", "latest", "--store", store.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("validated: above") || text.contains("validation failed: above"),
        "{text}"
    );
}
