//! `latscope forecast` end to end: with a known interferer the predicted
//! time between underruns must match the interferer's rate below its burst
//! length, and above it no miss must be observed.

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::*;
use serde_json::Value;

const SLOT_NS: u64 = 50_000_000;
const BURST_NS: u64 = 500_000;

fn forecast(store: &str, extra: &[&str]) -> Value {
    let mut args = vec!["forecast", "latest", "--store", store, "--json"];
    args.extend_from_slice(extra);
    let o = latscope(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn latency(doc: &Value) -> &Value {
    doc["cells"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "timer.latency")
        .unwrap()
}

#[test]
fn a_known_interferer_gives_the_underrun_rate_it_causes() {
    let _g = serial();
    if !is_root() {
        eprintln!("skipped: needs root for SCHED_FIFO");
        return;
    }
    let cpu = *online().last().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let s = store.to_str().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let h = interferer(
        cpu,
        "ka-interferer",
        90,
        SLOT_NS,
        BURST_NS,
        Arc::clone(&stop),
    );
    let o = latscope(&[
        "run",
        "--cpus",
        &cpu.to_string(),
        "--priority",
        "80",
        "--duration",
        "10s",
        "--store",
        s,
        "--quiet",
    ]);
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));

    // 1 ms buffers, 2 of them, 0.75 ms of compute: 250 µs of slack. A burst
    // covers a deadline half the time and then delays it uniformly in
    // 0..500 µs: 20 bursts/s x 1/2 x 1/2 = 5 deadlines per second late by
    // more than 250 µs, i.e. P = 5/1000 per deadline and MTTF = 1 ms / P =
    // 0.2 s.
    let below = forecast(
        s,
        &["--period-ms", "1", "--buffers", "2", "--compute-ms", "0.75"],
    );
    let b = &latency(&below)["buffering"];
    let mttf = b["mttf_s"].as_f64().unwrap();
    eprintln!("forecast, slack 250 µs: {b}");
    assert_eq!(b["slack_ns"], 250_000);
    assert_eq!(b["lower_bound"], false);
    assert!(
        (0.1..=0.45).contains(&mttf),
        "MTTF {mttf} s, expected about 0.2 s"
    );

    // 600 µs of slack: longer than any burst, so the interferer causes no
    // miss. On quiet hardware none is observed (a lower bound). This VM
    // stalls for milliseconds now and then, and each stall misses several
    // consecutive deadlines (the forecast counts per deadline), so the
    // check is that misses are at least three times rarer than below the
    // burst length, where the interferer alone causes them (seen: 4 and 16
    // misses in 10 000 deadlines above, 60 and 88 below).
    let above = forecast(
        s,
        &["--period-ms", "1", "--buffers", "2", "--compute-ms", "0.4"],
    );
    let a = &latency(&above)["buffering"];
    eprintln!("forecast, slack 600 µs: {a}");
    let mttf_above = a["mttf_s"].as_f64().unwrap();
    assert!(
        a["lower_bound"] == true || mttf_above >= 3.0 * mttf,
        "above the burst length: {a}"
    );
    if a["lower_bound"] == true {
        assert!(mttf_above >= 9.0, "lower bound is N x t over ~10 s: {a}");
    }
}
