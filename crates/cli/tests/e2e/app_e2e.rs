//! The application probe on the real kernel (docs/app-probe.md).
//!
//! 1. Known answer: a SCHED_FIFO interferer above the producer, busy for
//!    5 ms once a second, blocks a pipeline of 3 buffers of 1 ms (0.2 ms of
//!    work: at most 3 ms buffered) for longer than it can bridge: one
//!    underrun of 2-5 ms per burst, one a second. Its control runs the same
//!    bursts below the producer, which then preempts them: no such
//!    underrun. When the control has them anyway the machine is too noisy
//!    to tell, and the test says so.
//! 2. A forecast held against reality: a timer run predicts the underrun
//!    rate of 1 ms x 2 buffers with 0.6 ms of work (slack 0.4 ms), an app
//!    run of that scheme counts them, `forecast --against` tests one
//!    against the other. What is asserted is that the comparison is the
//!    one of the stored runs (counts, exposure, the test's verdict); the
//!    verdict itself is the finding, printed, not asserted: it is the
//!    model under test, and a refutation is a result, not a bug.

#![allow(clippy::unwrap_used)]

use crate::common::control::{control_below_and_interfered, poisson_upper_95, too_noisy};
use crate::common::*;
use serde_json::Value;

const SLOT_NS: u64 = 1_000_000_000;
const BURST_NS: u64 = 5_000_000;
/// Underruns at least this long are the interferer's (a burst leaves at
/// least 5 − 3 ms of silence); the host's own are shorter as a rule.
const LONG_NS: u64 = 1_500_000;

/// Samples of a metric's histogram at or above `low` ns (by bucket).
fn samples_from(m: &Value, low: u64) -> u64 {
    m["histogram"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b[0].as_u64().unwrap() >= low)
        .map(|b| b[2].as_u64().unwrap())
        .sum()
}

fn count(doc: &Value, name: &str) -> u64 {
    metrics(doc, name)
        .iter()
        .map(|m| m["count"].as_u64().unwrap())
        .sum()
}

fn app_run(cpu: u32, store: &str, json: &str, args: &[&str]) -> Value {
    let cpu = cpu.to_string();
    let mut all = vec![
        "run", "--probe", "app", "--cpus", &cpu, "--period", "1ms", "--store", store, "--json",
        json, "--quiet",
    ];
    all.extend_from_slice(args);
    let o = latscope(&all);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    read_json(std::path::Path::new(json))
}

#[test]
fn a_blocking_interferer_every_second_gives_one_underrun_a_second_and_its_control_none() {
    let _g = serial();
    if !is_root() {
        eprintln!("skipped: needs root for SCHED_FIFO");
        return;
    }
    let cpu = *online().last().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let (runs, bursts) = control_below_and_interfered(
        |stop| interferer(cpu, "app-below", 70, SLOT_NS, BURST_NS, stop),
        |stop| interferer(cpu, "app-interferer", 90, SLOT_NS, BURST_NS, stop),
        |name| {
            let json = dir.path().join(format!("{name}.json"));
            app_run(
                cpu,
                store.to_str().unwrap(),
                json.to_str().unwrap(),
                &[
                    "--buffers",
                    "3",
                    "--compute",
                    "200us",
                    "--priority",
                    "80",
                    "--duration",
                    // Five bursts inside the run: each must make its
                    // underrun, which five show as well as eight.
                    "5s",
                ],
            )
        },
    );
    let long = |doc: &Value| samples_from(metrics(doc, "app.underrun")[0], LONG_NS);
    let (ctl_long, long_) = (long(&runs.control), long(&runs.interfered));
    let (ctl_all, all) = (
        count(&runs.control, "app.underrun"),
        count(&runs.interfered, "app.underrun"),
    );
    let b = bursts.interfered.len() as u64;
    eprintln!(
        "control: {ctl_all} underruns, {ctl_long} of them >= 1.5 ms ({} bursts below the producer); interfered: {all} underruns, {long_} >= 1.5 ms, {b} bursts above it",
        bursts.control.len()
    );
    if too_noisy(
        "control underruns of 1.5 ms or more in 5 s",
        2.0,
        ctl_long as f64,
    )
    .is_some()
    {
        return;
    }
    assert!(b >= 4, "the interferer ran ({b} bursts)");
    // Every burst inside the run's 5 s makes one long underrun; the
    // interferer starts a little before the run and ends a little after,
    // so up to two of its bursts fall outside. The host may add long ones
    // of its own: as many as a control that counted `ctl_long` in as long
    // a run leaves possible (its 95 % upper bound; seen in CI: 8 for 7
    // bursts after a control with none).
    let host = poisson_upper_95(ctl_long).ceil() as u64;
    assert!(
        long_ + 2 >= b && long_ <= b + host,
        "one long underrun per burst: {long_} for {b} bursts, the host's {host} at most"
    );
    // None is longer than the burst and the work after it.
    let max = metrics(&runs.interfered, "app.underrun")[0]["max_ns"]
        .as_u64()
        .unwrap();
    assert!(max <= BURST_NS + 2_000_000, "longest underrun {max} ns");
}

#[test]
fn a_timer_runs_forecast_is_tested_against_the_pipelines_underruns() {
    let _g = serial();
    if !is_root() {
        eprintln!("skipped: needs root for SCHED_FIFO");
        return;
    }
    let cpu = *online().last().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let s = store.to_str().unwrap();
    let timer_json = dir.path().join("timer.json");
    let o = latscope(&[
        "run",
        "--cpus",
        &cpu.to_string(),
        "--period",
        "1ms",
        // 4 s a side: what this proves is the pairing of the stored runs
        // and the test's arithmetic, not the verdict (bench/app-forecast.sh
        // measures that, interleaved, at length).
        "--duration",
        "4s",
        "--store",
        s,
        "--json",
        timer_json.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let timer = read_json(&timer_json);
    let app_json = dir.path().join("app.json");
    let app = app_run(
        cpu,
        s,
        app_json.to_str().unwrap(),
        &["--buffers", "2", "--compute", "600us", "--duration", "4s"],
    );
    let underruns = count(&app, "app.underrun");
    let buffers = count(&app, "app.response");
    // The runs are 1 and 2 of a fresh store.
    let o = latscope(&["forecast", "1", "--against", "2", "--json", "--store", s]);
    let code = o.status.code();
    assert!(matches!(code, Some(0) | Some(3)), "{}", stderr(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let c = &doc["comparisons"][0];
    let p = c["p_value"].as_f64().unwrap();
    let refuted = c["refuted"].as_bool().unwrap();
    eprintln!(
        "1 ms x 2 buffers, 0.6 ms of work: predicted {:.1}/h ({} of {} wake-ups), observed {:.1}/h ({underruns} in {buffers} buffers); {}: {}",
        c["predicted"]["per_hour"].as_f64().unwrap(),
        c["predicted"]["events"],
        c["predicted"]["buffers"],
        c["observed"]["per_hour"].as_f64().unwrap(),
        c["test"].as_str().unwrap(),
        c["verdict"].as_str().unwrap()
    );
    // The comparison is the one of the stored runs.
    assert_eq!(c["observed"]["events"].as_u64(), Some(underruns));
    assert_eq!(c["observed"]["buffers"].as_u64(), Some(buffers));
    assert_eq!(
        c["predicted"]["buffers"].as_u64(),
        Some(count(&timer, "timer.latency"))
    );
    let per_hour = underruns as f64 / (buffers as f64 * 1e-3) * 3600.0;
    assert!(
        (c["observed"]["per_hour"].as_f64().unwrap() - per_hour).abs() < 1e-6 * per_hour.max(1.0)
    );
    assert_eq!(c["slack_ns"].as_i64(), Some(400_000));
    assert!((0.0..=1.0).contains(&p), "{p}");
    assert_eq!(refuted, p < 0.01);
    assert_eq!(code == Some(3), refuted, "exit 3 exactly when refuted");
    if too_noisy(
        "underruns per 100 buffers of the 0.4 ms-slack pipeline",
        2.0,
        100.0 * underruns as f64 / buffers.max(1) as f64,
    )
    .is_some()
    {
        return;
    }
    eprintln!(
        "verdict: {}; with the work exposed: {}",
        if refuted { "refuted" } else { "consistent" },
        c["exposed"]["verdict"].as_str().unwrap_or("(none)")
    );
}
