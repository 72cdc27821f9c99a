//! `latscope forecast` end to end: with a known interferer the predicted
//! time between underruns must match the interferer's rate below its burst
//! length, and more slack than the burst length must give fewer misses.
//! The run with the interferer is compared with a control (the same run
//! with the same bursts at a priority below the probe's), so that the
//! host's own stalls, and what it does to a vCPU that spins, are not
//! counted as the interferer's (see `known_answer.rs`).

#![allow(clippy::unwrap_used)]

use crate::common::burst_pair::burst_pair;
use crate::common::control::{any_too_noisy, late_bursts_pct, Controlled};
use crate::common::*;
use serde_json::Value;

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
    // The runs (the bursts of 500 µs every 50 ms, 10 s at 1 ms, one store
    // each: `forecast latest` reads each) are the ones `known_answer.rs`
    // judges too: measured once.
    let pair = burst_pair();
    let bursts = &pair.bursts;
    let stores = Controlled {
        control: pair.runs.control.store.as_str(),
        interfered: pair.runs.interfered.store.as_str(),
    };

    // 1 ms buffers, 2 of them, 0.75 ms of compute: 250 µs of slack. A burst
    // covers a deadline half the time and then delays it uniformly in
    // 0..500 µs: 20 bursts/s x 1/2 x 1/2 = 5 deadlines per second late by
    // more than 250 µs, i.e. about 50 misses in the 10 000 deadlines of
    // the run, P = 5/1000 per deadline and MTTF = 1 ms / P = 0.2 s.
    let below = ["--period-ms", "1", "--buffers", "2", "--compute-ms", "0.75"];
    // 600 µs of slack: longer than any burst, so the interferer causes no
    // miss there; the misses there are the VM's own stalls (each misses
    // several consecutive deadlines: the forecast counts per deadline).
    let above = ["--period-ms", "1", "--buffers", "2", "--compute-ms", "0.4"];
    let buffering =
        |store: &str, args: &[&str]| latency(&forecast(store, args))["buffering"].clone();
    let misses = |b: &Value| b["misses"].as_u64().unwrap();
    let ctl_below = buffering(stores.control, &below);
    let ctl_above = buffering(stores.control, &above);
    let b = buffering(stores.interfered, &below);
    let a = buffering(stores.interfered, &above);
    eprintln!("control, slack 250 µs: {ctl_below}");
    eprintln!("control, slack 600 µs: {ctl_above}");
    eprintln!("interfered, slack 250 µs: {b}");
    eprintln!("interfered, slack 600 µs: {a}");
    assert_eq!(b["slack_ns"], 250_000);
    assert_eq!(a["slack_ns"], 600_000);
    let added = misses(&b) as i64 - misses(&ctl_below) as i64;
    let deadlines = b["deadlines"].as_u64().unwrap() as f64;
    let mttf_added = deadlines * 1e-3 / (added.max(1) as f64);
    let ctl_late_pct = late_bursts_pct(&bursts.control, 50_000);
    let late_pct = late_bursts_pct(&bursts.interfered, 50_000);
    eprintln!(
        "{} bursts, {late_pct:.1}% of them over 50 µs late (control, at priority 70: {ctl_late_pct:.1}%)",
        bursts.interfered.len()
    );
    eprintln!(
        "known answer: the interferer added {added} misses at 250 µs of slack (expected about 50), MTTF of those {mttf_added:.3} s (expected 0.2 s); misses at 600 µs of slack: {} (control {})",
        misses(&a),
        misses(&ctl_above)
    );
    // Seen in CI on a busy host: 227 misses with the interferer where it
    // causes about 50. A control with more than 25 misses of its own at
    // 250 µs (quiet: 4 to 16), or more than 20 stalled deadlines beyond the
    // burst length in the run with the interferer, leaves too little to
    // tell.
    // Bursts that start late (another task's kernel code holding the CPU)
    // hold up the deadlines due meanwhile for the wait and the whole burst.
    if any_too_noisy(&[
        (
            "control: bursts starting over 50 µs late, %",
            10.0,
            ctl_late_pct,
        ),
        (
            "with the interferer: bursts starting over 50 µs late, %",
            10.0,
            late_pct,
        ),
        (
            "control: misses at 250 µs of slack in 10 s",
            25.0,
            misses(&ctl_below) as f64,
        ),
        (
            "with the interferer: misses at 600 µs of slack (beyond any burst) in 10 s",
            20.0,
            misses(&a) as f64,
        ),
    ])
    .is_some()
    {
        return;
    }
    assert_eq!(b["lower_bound"], false);
    // What the interferer adds: at most 150 misses in 10 000 deadlines
    // (an MTTF of 0.067 s) beyond the control's. A deadline due while the
    // interferer wakes waits for its whole burst too, so it causes a little
    // more than the 50 of the model, and more on a busy host (seen with a
    // quiet control: 60, 88 and 109). Not fewer than expected is
    // checked within the run, below: the host's stalls differ between two
    // runs, and a control that caught more of them than the run with the
    // interferer would hide part of its misses.
    assert!(
        added <= 150,
        "the interferer added {added} misses (control {}, with it {})",
        misses(&ctl_below),
        misses(&b)
    );
    // The same run, 250 against 600 µs of slack: a stall longer than the
    // burst misses both, so the difference is the interferer's (and the
    // host's shorter delays, which can only add to it), and it does not
    // vanish: at least 22 of the 50 expected (an MTTF of 0.45 s). A
    // forecast that ignored the slack would give no difference.
    let between = misses(&b) as i64 - misses(&a) as i64;
    assert!(
        between >= 22,
        "only {between} more misses at 250 than at 600 µs of slack"
    );
    let mttf = b["mttf_s"].as_f64().unwrap();
    let mttf_above = a["mttf_s"].as_f64().unwrap();
    assert!(mttf_above > mttf, "more slack, fewer misses: {a} vs {b}");
    if a["lower_bound"] == true {
        assert_eq!(misses(&a), 0, "{a}");
        assert!(mttf_above >= 9.0, "lower bound is N x t over ~10 s: {a}");
    }
}
