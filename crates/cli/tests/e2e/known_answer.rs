//! Known-answer test: an interferer of known priority, length and period on
//! a measured CPU must show up in `timer.latency` as exactly that.
//!
//! A SCHED_FIFO thread at priority 90, pinned to the measured CPU, is busy
//! for 500 µs once in every 50 ms slot, starting at a random offset within
//! the slot so it cannot phase-lock onto the probe's 1 ms period (with a fixed
//! phase every burst would hit the probe the same way: the stroboscopic
//! effect). The probe runs at priority 80.
//!
//! Expected: a burst covers a deadline half the time, and then delays that
//! wake-up by the rest of the burst, uniform in 0..500 µs. So maxima near
//! 500 µs, P(latency > 250 µs) per burst = 1/4: 20 bursts/s × 1/4 = 5 samples
//! per second above 250 µs, and 1 per second above 450 µs.
//!
//! In practice a little more, and more on a busy host: a deadline due while
//! the interferer wakes (its own wake-up latency, 20 µs here) waits for the
//! whole burst, and the switch back adds to every delayed wake-up; measured
//! with a quiet control: 5 to 9 per second above 250 µs and 28 to 50
//! samples in 450-600 µs in 10 s. The bounds below allow for that; they
//! still fail if the probe missed the interferer or counted it twice over.
//!
//! The host adds latencies of its own, more on a busy day: the test
//! measures a control first and asserts on what the interferer adds beyond
//! it (see `common/control.rs`). The control runs the same bursts at
//! priority 70, below the probe: the CPU and the host see the same load,
//! and only the priority, the thing under test, differs. (Seen once in CI
//! with a control that had no bursts at all: 23 per second in the window
//! but only 18 samples in 450-600 µs, one in 250-450 µs after nearly every
//! burst: the host delaying the vCPU after it spun, not the priority.)

#![allow(clippy::unwrap_used)]

use crate::common::burst_pair::{burst_pair, SECONDS};
use crate::common::control::{any_too_noisy, late_bursts_pct};
use crate::common::*;
use serde_json::Value;

/// Samples of `timer.latency` in `low..high` ns (by bucket).
fn samples_in(lat: &Value, low: u64, high: u64) -> u64 {
    lat["histogram"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| (low..high).contains(&b[0].as_u64().unwrap()))
        .map(|b| b[2].as_u64().unwrap())
        .sum()
}

#[test]
fn a_500us_burst_every_50ms_shows_up_as_500us_latencies() {
    let _g = serial();
    if !is_root() {
        eprintln!("skipped: needs root for SCHED_FIFO");
        return;
    }
    // The runs (10 s at 1 ms, threshold 250 µs, on the last CPU) are the
    // ones `forecast_e2e.rs` judges too: measured once.
    let pair = burst_pair();
    let (runs, bursts) = (&pair.runs, &pair.bursts);
    let ctl_late_pct = late_bursts_pct(&bursts.control, 50_000);
    let bursts = &bursts.interfered;
    let late_pct = late_bursts_pct(bursts, 50_000);
    let mut lengths: Vec<u64> = bursts.iter().map(|b| b.end - b.start).collect();
    let mut lateness: Vec<u64> = bursts.iter().map(|b| b.late_ns()).collect();
    lengths.sort_unstable();
    lateness.sort_unstable();
    let at = |v: &[u64], q: f64| {
        v.get((q * (v.len().max(1) - 1) as f64) as usize)
            .copied()
            .unwrap_or(0)
    };
    eprintln!(
        "bursts: length p50 {} ns, max {} ns; lateness p50 {} ns, p90 {} ns, max {} ns",
        at(&lengths, 0.5),
        at(&lengths, 1.0),
        at(&lateness, 0.5),
        at(&lateness, 0.9),
        at(&lateness, 1.0)
    );
    let bursts = bursts.len();
    let ctl = metrics(&runs.control.doc, "timer.latency")[0].clone();
    let lat = metrics(&runs.interfered.doc, "timer.latency")[0].clone();
    // A burst can delay a wake-up by at most its own length (plus the
    // switch): samples above 600 µs are the VM's own stalls, which come and
    // go with the host's load (seen: up to ~4 per second on a busy host),
    // not the interferer. The interferer's window is 250-600 µs; the top
    // tenth of the burst is 450-600 µs.
    let window = |l: &Value| samples_in(l, 250_000, 600_000);
    let top = |l: &Value| samples_in(l, 450_000, 600_000);
    let beyond = |l: &Value| samples_in(l, 600_000, u64::MAX);
    let ctl_window = window(&ctl) as f64 / SECONDS;
    let per_second = window(&lat) as f64 / SECONDS;
    let added = per_second - ctl_window;
    let added_top = top(&lat) as i64 - top(&ctl) as i64;
    eprintln!(
        "control (bursts at priority 70, {ctl_late_pct:.1}% of them over 50 µs late): {ctl_window:.1}/s in 250-600 µs, {} in 450-600 µs, {:.1}/s above 600 µs; max {} ns, p99.9 {} ns",
        top(&ctl),
        beyond(&ctl) as f64 / SECONDS,
        ctl["max_ns"],
        ctl["p999_ns"]
    );
    eprintln!(
        "interfered: {per_second:.1}/s in 250-600 µs, {} in 450-600 µs, {:.1}/s above 600 µs; max {} ns, p99.9 {} ns; {bursts} bursts, {late_pct:.1}% of them over 50 µs late",
        top(&lat),
        beyond(&lat) as f64 / SECONDS,
        lat["max_ns"],
        lat["p999_ns"]
    );
    eprintln!(
        "known answer: the interferer added {added:.1}/s in 250-600 µs (expected 5), {added_top} in 450-600 µs (expected about 10)"
    );
    assert!(bursts >= 190, "the interferer ran ({bursts} bursts)");
    // The interferer's contribution is about 5 per second: a control with
    // more than 1 per second of its own in the window, or either run with
    // more than 2 per second of stalls beyond it, cannot tell it apart.
    // Nor can a run whose bursts often start late: a deadline that falls
    // into the wait waits for it and for the whole burst (seen on a host
    // busy compiling: 9 to 12 per second in the window).
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
        ("control: samples per second in 250-600 µs", 1.5, ctl_window),
        (
            "control: samples per second above 600 µs",
            2.0,
            beyond(&ctl) as f64 / SECONDS,
        ),
        (
            "with the interferer: samples per second above 600 µs",
            2.0,
            beyond(&lat) as f64 / SECONDS,
        ),
    ])
    .is_some()
    {
        return;
    }
    assert!(
        (3.0..=13.0).contains(&added),
        "the interferer added {added}/s in 250-600 µs (control {ctl_window}/s)"
    );
    let max = lat["max_ns"].as_u64().unwrap();
    assert!(max >= 450_000, "max {max} ns should be near 500 µs");
    // Samples in the top tenth of the burst: about 1 per second (seen: 2.8
    // to 5 per second, above).
    assert!(
        (3..=70).contains(&added_top),
        "the interferer added {added_top} samples in 450–600 µs"
    );
}
