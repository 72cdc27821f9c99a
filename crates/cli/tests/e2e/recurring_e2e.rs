//! Recurring culprits on the real kernel: a thread that holds CPU 0 for a
//! burst once a second, above the probe's priority, must be reported as a
//! cause recurring every second ("every 1.00s ± …: thread ka-periodic"),
//! as Jones & Regehr traced their stalls to driver work every 5 and 10
//! seconds. Its control is the same bursts below the probe's priority.

#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::common::control::{control_below_and_interfered, late_bursts_pct, too_noisy};
use crate::common::*;
use latscope_model::CpuId;
use latscope_platform::SchedPolicy;
use latscope_platform::{monotonic_ns, set_affinity, set_scheduler, spin_until, timers};
use serde_json::Value;

const PERIOD_NS: u64 = 1_000_000_000;
/// Longer than the probe's 1 ms period, so every burst holds back at least
/// one expiry, by more than the burst less one period: over the 1 ms
/// threshold whichever expiry it is (the first one inside the burst waits
/// for the rest of it, more than 1 ms).
const BURST_NS: u64 = 2_000_000;
const NAME: &str = "ka-periodic";
const NAME_BELOW: &str = "ka-periodic-low";
/// 8 s of run: about 8 bursts in it, twice the four periods the analysis
/// asks for at least and three more than its five occurrences (every burst
/// inside the run makes an episode: it is longer than the probe's period).
const DURATION: &str = "8s";
/// The bursts the interferer must have made: one a second for the whole
/// run (it also runs while latscope starts and stops), a second spared.
const MIN_BURSTS: usize = 7;

/// A thread named `name` at SCHED_FIFO `priority` on `cpu`, busy for
/// `burst_ns` every `period_ns`. Unlike the other known-answer interferers
/// its phase is drawn once, not in each period: the point is that it
/// recurs. (Against the probe's 1 ms period that phase is fixed too, the
/// stroboscopic effect; a burst longer than the probe's period hits an
/// expiry whatever the phase.) Runs until `stop`; returns each burst.
fn periodic_interferer(
    cpu: u32,
    name: &str,
    priority: u32,
    period_ns: u64,
    burst_ns: u64,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Vec<Burst>> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            set_affinity(CpuId(cpu)).expect("pin interferer");
            set_scheduler(SchedPolicy::Fifo, priority).expect("SCHED_FIFO");
            let now = monotonic_ns();
            let phase = (now ^ (now >> 17)).wrapping_mul(0x9e37_79b9_7f4a_7c15) % period_ns;
            let mut due = now + phase;
            let mut bursts = Vec::with_capacity(64);
            while !stop.load(Ordering::Relaxed) {
                let _ = timers::sleep_until(due);
                let start = monotonic_ns();
                spin_until(start + burst_ns);
                bursts.push(Burst {
                    due,
                    start,
                    end: monotonic_ns(),
                });
                due += period_ns;
            }
            bursts
        })
        .unwrap()
}

/// `latscope run --trace` on CPU 0 with this thread's backend; `None` (and
/// a visible skip line) when this machine cannot trace.
fn traced_run(dir: &std::path::Path) -> Option<Value> {
    std::fs::create_dir_all(dir).unwrap();
    let store = store_in(dir);
    let json = dir.join("run.json");
    let o = latscope(&[
        "run",
        "--trace",
        "--trace-backend",
        backend(),
        "--store",
        store.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--quiet",
        "--cpus",
        "0",
        "--priority",
        "80",
        "--period",
        "1ms",
        "--duration",
        DURATION,
        "--threshold",
        "1ms",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc = read_json(&json);
    if doc["capabilities"]["tracepoints"] != Value::Bool(true) {
        eprintln!(
            "skipped: needs kernel tracepoints ({})",
            stderr(&o).lines().next().unwrap_or("")
        );
        return None;
    }
    Some(doc)
}

/// The run's recurring causes: (kind, name, period_ns, whole entry).
fn recurring(doc: &Value) -> Vec<(String, String, u64, Value)> {
    doc["cells"][0]["trace"]["recurring"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|r| {
                    (
                        r["kind"].as_str().unwrap_or("").to_string(),
                        r["name"].as_str().unwrap_or("").to_string(),
                        r["period_ns"].as_u64().unwrap_or(0),
                        r.clone(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn episodes_naming(doc: &Value, name: &str) -> usize {
    doc["episodes"].as_array().map_or(0, |eps| {
        eps.iter()
            .filter(|e| {
                e["breakdown"]["causes"]
                    .as_array()
                    .is_some_and(|c| c.iter().any(|c| c["name"] == name))
            })
            .count()
    })
}

#[test]
fn a_burst_every_second_is_reported_as_recurring_every_second() {
    on_backend(
        "bpf",
        a_burst_every_second_is_reported_as_recurring_every_second_case,
    );
}

fn a_burst_every_second_is_reported_as_recurring_every_second_case() {
    let _g = serial();
    if !is_root() {
        eprintln!("skipped: needs root for SCHED_FIFO and tracepoints");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // The control runs the same bursts below the probe's priority (70
    // against 80): the same CPU time at the same period on the same vCPU;
    // only the priority differs, so only the interfered run's episodes
    // should be the interferer's.
    let (runs, bursts) = control_below_and_interfered(
        |stop| periodic_interferer(0, NAME_BELOW, 70, PERIOD_NS, BURST_NS, stop),
        |stop| periodic_interferer(0, NAME, 90, PERIOD_NS, BURST_NS, stop),
        |name| traced_run(&dir.path().join(name)),
    );
    let (Some(control), Some(doc)) = (runs.control, runs.interfered) else {
        return;
    };
    let ctl = recurring(&control);
    let rec = recurring(&doc);
    eprintln!(
        "control (bursts below the probe): recurring {:?}",
        ctl.iter().map(|r| &r.3).collect::<Vec<_>>()
    );
    eprintln!(
        "with the bursts: recurring {:?}",
        rec.iter().map(|r| &r.3).collect::<Vec<_>>()
    );
    let trace = &doc["cells"][0]["trace"];
    eprintln!(
        "with the bursts: {} bursts, {} episodes above 1 ms ({} naming {NAME}); control: {} bursts, {} episodes",
        bursts.interfered.len(),
        trace["episodes_total"],
        episodes_naming(&doc, NAME),
        bursts.control.len(),
        control["cells"][0]["trace"]["episodes_total"],
    );
    assert!(
        bursts.interfered.len() >= MIN_BURSTS,
        "the interferer ran ({} bursts)",
        bursts.interfered.len()
    );
    // A burst that starts late still lands near its lattice point (the
    // test's tolerance is milliseconds), but a host that holds the vCPU for
    // many of them is no longer the known answer.
    let late = late_bursts_pct(&bursts.interfered, 1_000_000);
    if too_noisy(
        "with the bursts: bursts starting over 1 ms late, %",
        25.0,
        late,
    )
    .is_some()
    {
        return;
    }
    for (kind, name, _, r) in &ctl {
        assert!(
            name != NAME && name != NAME_BELOW,
            "the control reports the interferer below the probe as a culprit: {kind} {r}"
        );
    }
    let found = rec
        .iter()
        .find(|(kind, name, _, _)| kind == "thread" && name == NAME);
    let Some((_, _, period, r)) = found else {
        panic!(
            "{NAME} (a {BURST_NS} ns burst every {PERIOD_NS} ns above the probe) is not reported as recurring; {} episodes named it; recurring: {rec:?}",
            episodes_naming(&doc, NAME)
        );
    };
    let off = (*period as f64 - PERIOD_NS as f64).abs() / PERIOD_NS as f64;
    assert!(
        off <= 0.01,
        "period {period} ns, {:.2}% off: {r}",
        off * 100.0
    );
    assert!(r["episodes"].as_u64().unwrap() >= 5, "{r}");
    assert!(r["log10_chance"].as_i64().unwrap() <= -3, "{r}");
    // Each burst delays samples by at most its length: the jitter of their
    // expiries around the lattice is within it.
    assert!(r["jitter_ns"].as_u64().unwrap() <= BURST_NS, "{r}");
}
