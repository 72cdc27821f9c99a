//! The forecast's out-of-sample test on a stored run, end to end without a
//! kernel: a simulated 51 s run on two CPUs at 1 ms, stored into a real
//! SQLite store through the engine with a checkpoint every 5 s, read back
//! and forecast by `latscope_report::stored` as `latscope forecast --json`
//! does. The figures of its validation are checked against what the store
//! holds: the checkpoint used is a stored one, the only one that leaves
//! 30 s to fit and 20 s to test, and the seconds of the rest above the
//! level are recomputed here from the stored per-second maxima.
//!
//! The latencies are drawn from an exponential tail (seeded, so the run is
//! the same each time): per-second maxima that vary as a real run's do, so
//! that the tail fit has something to fit. Whether a real machine's later
//! part matches its first is measured by `bench/forecast-validation.sh`.

use std::sync::Arc;

use latscope_engine::{Env, Quiet, Stop};
use latscope_model::{CpuId, CpuSet, Nanos, SystemInfo};
use latscope_probes::ScriptedClock;
use latscope_stats::forecast::{ForecastOptions, ForecastRequest};
use latscope_store::Store;

use crate::lifecycle::{config, scripted_cell};

const S: u64 = 1_000_000_000;
const SECONDS: u64 = 51;
const CPUS: [u32; 2] = [0, 1];

/// Sample `k` of `cpu`: 20 µs plus an exponential excess of mean 15 µs,
/// from a hash of the pair (SplitMix64's finalizer).
fn latency(cpu: CpuId, k: u64) -> Nanos {
    let mut z = k.wrapping_mul(2).wrapping_add(u64::from(cpu.0)) ^ 0x5DEE_CE66_D1CE_4E5B;
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    let u = ((z >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    Nanos(20_000 + (-u.ln() * 15_000.0) as u64)
}

/// The simulated run, stored in `path` with a checkpoint every 5 s.
fn stored_run(path: &std::path::Path) -> Store {
    let mut store = Store::open(path).unwrap();
    let clock = Arc::new(ScriptedClock::new(1_000 * S));
    let online: CpuSet = CPUS.iter().map(|&c| CpuId(c)).collect();
    let env = Env {
        clock: clock.clone(),
        stop: Stop::new(),
        observer: &mut Quiet,
        names: &latscope_model::Neutral,
        system: Some(SystemInfo::default()),
        rescue: None,
    };
    let cell = scripted_cell(&clock, (0, 1), &CPUS, SECONDS, None, Arc::new(latency));
    let out = latscope_engine::run(&config(5), &[cell], &online, &mut store, env).unwrap();
    assert!(out.sink_error.is_none(), "{:?}", out.sink_error);
    store
}

/// Per CPU, the stored per-second maxima of `timer.latency` (`None`: a
/// second without samples), from the store's own reading of them.
fn stored_maxima(store: &Store, id: latscope_model::RunId) -> Vec<Vec<Option<u64>>> {
    let cell = store.cell_ids(id).unwrap()[0];
    CPUS.iter()
        .map(|&cpu| {
            let t = store
                .load_timeline(cell, "timer.latency", Some(CpuId(cpu)))
                .unwrap();
            t.iter().map(|s| (s.count > 0).then_some(s.max)).collect()
        })
        .collect()
}

#[test]
fn a_stored_run_is_validated_on_its_own_later_part() {
    let dir = tempfile::tempdir().unwrap();
    let store = stored_run(&dir.path().join("v.db"));
    let id = store.resolve("latest").unwrap();
    let request = ForecastRequest {
        usage: "continuous",
        period_ms: None,
        buffers: None,
        compute_ms: 0.0,
        app: None,
        all_apps: false,
        cells: None,
    };
    let options = ForecastOptions::from_request(&request).unwrap();
    let f = latscope_report::stored::stored_forecast(&store, id, &options).unwrap();
    let doc = latscope_report::forecast_document(&f.report, f.observed.as_ref(), &f.cuts).unwrap();
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
    // The only stored checkpoint that leaves 30 s to fit and 20 s to test.
    assert_eq!(
        v["fit_seconds"].as_u64().unwrap(),
        30 * CPUS.len() as u64,
        "{v}"
    );
    let maxima = stored_maxima(&store, id);
    let later: Vec<u64> = maxima
        .iter()
        .flat_map(|cpu| cpu.iter().skip(30).flatten().copied())
        .collect();
    assert_eq!(later.len(), 21 * CPUS.len());
    assert_eq!(v["test_seconds"].as_u64().unwrap() as usize, later.len());
    let level = v["level_ns"].as_u64().unwrap();
    let observed = later.iter().filter(|&&x| x > level).count() as u64;
    assert_eq!(v["observed"].as_u64().unwrap(), observed, "{v}");
    let predicted = v["predicted"].as_f64().unwrap();
    let p = v["p_value"].as_f64().unwrap();
    eprintln!("validation of the simulated run: {v}");
    // The level is in the fitted tail and expected about ten clusters in
    // the rest: at most ten seconds.
    assert!(predicted > 0.0 && predicted <= 10.5, "{v}");
    assert!((0.0..=1.0).contains(&p));
    assert_eq!(v["passed"].as_bool().unwrap(), p >= 0.01);
    // One tail throughout: the model fitted to the first part holds.
    assert!(v["passed"].as_bool().unwrap(), "{v}");
    // The text shows it beside the forecast.
    let text =
        latscope_report::forecast_document_text(&f.report, false, f.observed.as_ref(), &f.cuts);
    assert!(
        text.contains("validated: the tail model refitted to the first"),
        "{text}"
    );
}
