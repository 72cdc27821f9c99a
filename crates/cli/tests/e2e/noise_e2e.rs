//! `latscope run --probe noise` end to end: a known interferer must show up
//! as exactly that interruption, idle noise must be at least what the
//! kernel's own interrupt counters say, and RT throttling must be named.

#![allow(clippy::unwrap_used)]

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::common::control::{any_too_noisy, control_below_and_interfered, too_noisy};
use crate::common::*;
use serde_json::Value;

const NAME: &str = "ka-noise";

/// SCHED_FIFO 90 on `cpu`: busy 300 µs in every 10 ms, at a random offset
/// in the slot so it cannot lock onto the probe's active periods. Returns
/// each burst.
fn noise_interferer(cpu: u32, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Vec<Burst>> {
    interferer(cpu, NAME, 90, 10_000_000, 300_000, stop)
}

fn noise_run(args: &[&str], dir: &std::path::Path) -> Value {
    let store = store_in(dir);
    let json = dir.join("noise.json");
    let mut all = vec![
        "run",
        "--probe",
        "noise",
        "--store",
        store.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--quiet",
    ];
    all.extend_from_slice(args);
    let o = latscope(&all);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    read_json(&json)
}

fn stats_of(doc: &Value) -> &Value {
    &doc["cells"][0]["noise"][0]
}

fn gap_hist_count(doc: &Value, low: u64, high: u64) -> u64 {
    metrics(doc, "noise.gap")[0]["histogram"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| {
            let lo = b[0].as_u64().unwrap();
            lo >= low && lo < high
        })
        .map(|b| b[2].as_u64().unwrap())
        .sum()
}

/// The interruptions of `low..high` ns: per second of active time, and
/// their time in % of the active time (from the histogram's buckets, within
/// 0.1%); and the active seconds.
fn rates(doc: &Value, low: u64, high: u64) -> (f64, f64, f64) {
    let s = stats_of(doc);
    let active_s = s["active_ns"].as_u64().unwrap() as f64 / 1e9;
    let (mut n, mut ns) = (0u64, 0u64);
    for b in metrics(doc, "noise.gap")[0]["histogram"]
        .as_array()
        .unwrap()
    {
        let lo = b[0].as_u64().unwrap();
        if (low..high).contains(&lo) {
            n += b[2].as_u64().unwrap();
            ns += lo * b[2].as_u64().unwrap();
        }
    }
    (
        n as f64 / active_s,
        100.0 * ns as f64 / (active_s * 1e9),
        active_s,
    )
}

/// How one control-and-interfered pair of the known-answer test came out.
enum Judged {
    Passed,
    /// The control showed the machine too disturbed (the line was printed).
    Noisy,
    /// A check failed: what it said.
    Failed(String),
}

#[test]
fn a_300us_burst_every_10ms_is_100_interruptions_per_second_of_300us() {
    let _g = serial();
    if !is_root() {
        eprintln!("skipped: needs root for SCHED_FIFO");
        return;
    }
    let cpu = *online().last().unwrap();
    // A host burst of stalls that starts after the control and lasts the
    // interfered run adds interruptions of 150 µs - 1 ms that no control
    // sees (seen once in CI: 124.9/s added, 25 more than the bursts, with
    // 3.0/s in the control). A wrong count in the code is wrong in every
    // pair; the host's is not. So the test measures another pair when one
    // fails or is too noisy to judge (three at most): it passes at the
    // first pair that passes and fails at the second that fails. A single
    // failure among pairs too noisy to judge tells nothing either way:
    // those pairs printed the `skipped: machine too noisy` line.
    let mut failures = Vec::new();
    for pair in 0..3 {
        eprintln!("--- pair {pair}");
        match one_pair(cpu) {
            Judged::Passed => return,
            Judged::Noisy => {}
            Judged::Failed(why) => {
                eprintln!("pair {pair} failed: {why}");
                failures.push(why);
                assert!(
                    failures.len() < 2,
                    "two pairs failed: {}",
                    failures.join("; ")
                );
            }
        }
    }
}

/// Measures the control, then the interferer, on `cpu`, and judges what
/// the interferer added.
fn one_pair(cpu: u32) -> Judged {
    // The control runs the same bursts below the probe's priority: the
    // same CPU time on the same vCPU, never inside the probe's loop.
    let (runs, bursts) = control_below_and_interfered(
        |stop| interferer(cpu, "ka-noise-below", 70, 10_000_000, 300_000, stop),
        |stop| noise_interferer(cpu, stop),
        |_| {
            let dir = tempfile::tempdir().unwrap();
            // Interruptions of at least 150 µs: the interferer's, not the
            // tick's (whose handler takes 40-60 µs now and then on the
            // development VM).
            noise_run(
                &[
                    "--cpus",
                    &cpu.to_string(),
                    "--priority",
                    "80",
                    "--duration",
                    "4s",
                    "--gap-min",
                    "150us",
                ],
                dir.path(),
            )
        },
    );
    let bursts = bursts.interfered;
    let late_pct = crate::common::control::late_bursts_pct(&bursts, 50_000);
    // The interferer's own burst length, wall clock: what a stalled host
    // stretches is in it, so the gaps are compared with it, not with 300 µs.
    let mut lengths: Vec<u64> = bursts
        .iter()
        .map(|b| b.end.saturating_sub(b.start))
        .collect();
    lengths.sort_unstable();
    let burst_p50 = lengths.get(lengths.len() / 2).copied().unwrap_or(0) as f64;
    let bursts = bursts.len();
    // A burst interrupts the loop for 300 µs plus the switches: the
    // interferer's window is 150 µs - 1 ms. Longer gaps are the host's
    // stalls (seen: 17.5 ms in a control), whose time would swamp the 3%.
    let (lo, hi) = (150_000, 1_000_000);
    let (ctl_per_s, ctl_pct, ctl_active) = rates(&runs.control, lo, hi);
    let (per_s, noise_pct, active_s) = rates(&runs.interfered, lo, hi);
    let (ctl_long, _, _) = rates(&runs.control, hi, u64::MAX);
    let (long, _, _) = rates(&runs.interfered, hi, u64::MAX);
    let gap = metrics(&runs.interfered, "noise.gap")[0];
    let p50 = gap["p50_ns"].as_u64().unwrap() as f64;
    let (added, added_pct) = (per_s - ctl_per_s, noise_pct - ctl_pct);
    eprintln!(
        "control:    active {ctl_active:.2} s; {ctl_per_s:.1} interruptions/s of 150 µs - 1 ms, noise {ctl_pct:.2}%; {ctl_long:.1}/s longer; longest {} ns",
        stats_of(&runs.control)["max_gap_ns"]
    );
    eprintln!(
        "interfered: active {active_s:.2} s; {per_s:.1} interruptions/s of 150 µs - 1 ms, noise {noise_pct:.2}%; {long:.1}/s longer; median {p50:.0} ns; {bursts} bursts ({late_pct:.1}% over 50 µs late)"
    );
    eprintln!(
        "noise known answer: the interferer added {added:.1} interruptions/s (expected 100) and {added_pct:.2}% noise (expected 3%); median {p50:.0} ns (the interferer's bursts: median {burst_p50:.0} ns)"
    );
    assert!(bursts >= 330, "interferer ran ({bursts})");
    assert!(
        (1.0..=2.7).contains(&active_s),
        "active {active_s} s of 4 s at 33/33 ms"
    );
    // The interferer adds 100 interruptions of 300 µs per second, 3% of
    // the time: a control with more than 5 per second or 0.5% of its own
    // in that window cannot tell 10% from 20% off, nor can a run with more
    // than 2 stalls a second beyond it (each swallows bursts).
    if any_too_noisy(&[
        (
            "control: interruptions of 150 µs - 1 ms per second",
            5.0,
            ctl_per_s,
        ),
        (
            "control: noise of 150 µs - 1 ms, % of the time",
            0.5,
            ctl_pct,
        ),
        ("control: interruptions over 1 ms per second", 2.0, ctl_long),
        (
            "with the interferer: interruptions over 1 ms per second",
            2.0,
            long,
        ),
    ])
    .is_some()
    {
        return Judged::Noisy;
    }
    if !(88.0..=112.0).contains(&added) {
        return Judged::Failed(format!(
            "the interferer added {added}/s (control {ctl_per_s}/s)"
        ));
    }
    // The median is the interferer's: it has at least 95% of the
    // interruptions now. A gap is the burst as the interferer timed it plus
    // the VM's cost of switching to it and back (20-50 µs here); a gap
    // counted twice, or one that lost the burst, falls outside.
    if !(255_000.0..=345_000.0).contains(&burst_p50) {
        return Judged::Failed(format!(
            "the interferer's bursts took {burst_p50} ns (asked 300 µs)"
        ));
    }
    if !(0.9 * burst_p50..=burst_p50 + 80_000.0).contains(&p50) {
        return Judged::Failed(format!("median gap {p50} ns for bursts of {burst_p50} ns"));
    }
    // 100 bursts a second of that length: 3% for 300 µs, plus the switches.
    let expected_pct = 100.0 * burst_p50 / 1e9 * 100.0;
    if !(0.8 * expected_pct..=1.2 * (expected_pct + 0.5)).contains(&added_pct) {
        return Judged::Failed(format!(
            "the interferer added {added_pct}% noise (control {ctl_pct}%; bursts of {burst_p50} ns make {expected_pct:.2}%)"
        ));
    }
    Judged::Passed
}

#[test]
fn idle_noise_has_at_least_one_interruption_per_local_timer_interrupt() {
    let _g = serial();
    if !is_root() {
        eprintln!("skipped: needs root for SCHED_FIFO");
        return;
    }
    let cpu = *online().last().unwrap();
    let loc = || -> u64 {
        let text = std::fs::read_to_string("/proc/interrupts").unwrap();
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with("LOC:"))
            .unwrap();
        line.split_whitespace()
            .nth(1 + cpu as usize)
            .unwrap()
            .parse()
            .unwrap()
    };
    let dir = tempfile::tempdir().unwrap();
    let before = loc();
    let doc = noise_run(
        &[
            "--cpus",
            &cpu.to_string(),
            "--duration",
            "3s",
            "--pause",
            "0",
        ],
        dir.path(),
    );
    let ticks = loc() - before;
    let s = stats_of(&doc);
    // Interruptions of a microsecond or more: no local timer interrupt can
    // be shorter than that here (its handler alone takes ~10 µs on the VM).
    let over_1us = gap_hist_count(&doc, 1_000, u64::MAX);
    eprintln!(
        "idle noise: {} interruptions ({over_1us} of 1 µs or more), local timer interrupts {ticks}; base {} ps; findings {}",
        s["interruptions"], s["base_iteration_ps"], s["findings"]
    );
    assert!(ticks > 0);
    // The run spins for nearly all of its life: every local timer
    // interrupt that hit it is an interruption (a few before the spinning
    // started are allowed for).
    assert!(
        over_1us as f64 >= 0.9 * ticks as f64,
        "{over_1us} interruptions of 1 µs or more, {ticks} local timer interrupts"
    );
    // SCHED_FIFO spinning continuously meets RT throttling (default
    // sched_rt_runtime_us 950000): it must be named, not left as noise.
    let runtime: i64 = std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // Throttled seconds show as gaps of about 50 ms (the finding counts
    // 80-175 % of the throttled time); the kernel can lend a CPU another's
    // unused RT runtime and throttle only some seconds or none. The
    // finding names throttling that came in at least half the seconds.
    let throttled = gap_hist_count(&doc, 40_000_000, 87_500_000);
    if (0..1_000_000).contains(&runtime) && throttled >= 2 {
        let f = s["findings"].to_string();
        assert!(
            f.contains("RT throttling"),
            "{throttled} gaps of 40-87.5 ms in 3 s, findings: {f}"
        );
    } else if (0..1_000_000).contains(&runtime) {
        eprintln!(
            "skipped part: the kernel throttled this run {throttled} times in 3 s (gaps of 40-87.5 ms), fewer than the finding needs"
        );
    } else {
        eprintln!("skipped part: RT throttling is off on this machine");
    }
}

#[test]
fn with_trace_the_interferer_is_classified_as_a_thread_by_name() {
    on_backend(
        "perf",
        with_trace_the_interferer_is_classified_as_a_thread_by_name_case,
    );
}

fn with_trace_the_interferer_is_classified_as_a_thread_by_name_case() {
    let _g = serial();
    if !is_root() {
        eprintln!("skipped: needs root for SCHED_FIFO and tracepoints");
        return;
    }
    // CPU 0: on the development VM CPU 1 emits no tracepoints from idle,
    // and the interferer is switched in from idle.
    let cpu = 0u32;
    // The control runs the same bursts below the probe's priority (70
    // against 80): the same CPU time is taken on the same vCPU, but never
    // inside the probe's loop, so the interferer must appear in none of the
    // control's episodes.
    let (runs, bursts) = control_below_and_interfered(
        |stop| interferer(cpu, "ka-noise-below", 70, 10_000_000, 300_000, stop),
        |stop| noise_interferer(cpu, stop),
        |_| {
            let dir = tempfile::tempdir().unwrap();
            noise_run(
                &[
                    "--cpus",
                    &cpu.to_string(),
                    "--priority",
                    "80",
                    "--duration",
                    "4s",
                    "--gap-min",
                    "50us",
                    "--trace",
                    "--trace-backend",
                    backend(),
                    "--threshold",
                    "200us",
                ],
                dir.path(),
            )
        },
    );
    let doc = &runs.interfered;
    if doc["capabilities"]["tracepoints"] != Value::Bool(true) {
        eprintln!("skipped: needs kernel tracepoints");
        return;
    }
    let thread_count = |d: &Value| {
        stats_of(d)["classes"]["thread"]["count"]
            .as_u64()
            .unwrap_or(0)
    };
    let episodes = |d: &Value| d["episodes"].as_array().map_or(0, |e| e.len());
    let ctl_eps = episodes(&runs.control);
    eprintln!(
        "control (interferer below the probe): {ctl_eps} episodes; classes: {}",
        stats_of(&runs.control)["classes"]
    );
    eprintln!(
        "interfered: {} episodes; classes: {}",
        episodes(doc),
        stats_of(doc)["classes"]
    );
    // Below the probe's priority the interferer cannot interrupt its loop:
    // naming it there would be a false attribution, whatever the host did.
    for e in runs.control["episodes"].as_array().into_iter().flatten() {
        assert!(
            !names_thread(e, "ka-noise-below"),
            "the control's interferer ran below the probe yet is named: {e}"
        );
    }
    // The interferer causes about 100 interruptions of 300 µs per second of
    // active time (about 2 s of 4): some 200 episodes. A control with more
    // than 20 episodes of its own (10%) leaves the host too busy for the
    // episode counts below to mean much.
    if too_noisy(
        "control: episodes above 200 µs with the interferer below the probe",
        20.0,
        ctl_eps as f64,
    )
    .is_some()
    {
        return;
    }
    let added_threads = thread_count(doc) as i64 - thread_count(&runs.control) as i64;
    assert!(
        added_threads >= 100,
        "the interferer added {added_threads} thread interruptions: {}",
        stats_of(doc)["classes"]
    );
    let eps = doc["episodes"].as_array().unwrap();
    assert!(
        eps.len() >= 50 + ctl_eps,
        "{} episodes, {ctl_eps} without the interferer",
        eps.len()
    );
    judge_noise_episodes(eps, &bursts.interfered);
}

/// Whether episode `e` names thread `name` among its causes.
fn names_thread(e: &Value, name: &str) -> bool {
    e["breakdown"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["kind"] == "thread" && c["name"] == name)
}

/// Each episode is judged by the interferer's own record of its bursts,
/// not by how many episodes the host added: an interruption that a burst
/// overlapped must name the interferer as the blocking thread and as its
/// largest cause, unless the host's unexplained time in it was larger
/// still (a hypervisor stall in the same interruption, which is the
/// host's doing and rightly comes first); one no burst overlapped must
/// not name it. A few may lack events (the kernel's window did not reach
/// back): at most 5 % of those overlapped.
fn judge_noise_episodes(eps: &[Value], bursts: &[Burst]) {
    // The burst's clock reads come after its switch-in and before its
    // switch-out: the interruption reaches a little beyond them.
    const SLACK: u64 = 50_000;
    let (mut overlapped, mut wrong, mut host_first, mut false_named) = (0, 0, 0, 0);
    for e in eps {
        assert_eq!(e["metric"], "noise.gap");
        let start = e["expiry_ns"].as_u64().unwrap();
        let end = start + e["latency_ns"].as_u64().unwrap();
        let hit = bursts
            .iter()
            .any(|b| b.start < end + SLACK && b.end + SLACK > start);
        let causes = e["breakdown"]["causes"].as_array().unwrap();
        if !hit {
            if names_thread(e, NAME) {
                false_named += 1;
                eprintln!("named without a burst: {e}");
            }
            continue;
        }
        overlapped += 1;
        let ours = causes
            .iter()
            .find(|c| c["kind"] == "thread" && c["name"] == NAME);
        let top = &causes[0];
        let blocking_ok = e["breakdown"]["blocking"]["name"] == NAME;
        let top_ok = top["name"] == NAME && top["kind"] == "thread";
        let host_larger = top["kind"] == "unexplained"
            && ours.is_some_and(|o| top["duration_ns"].as_u64() >= o["duration_ns"].as_u64());
        if blocking_ok && host_larger {
            host_first += 1;
        } else if !(blocking_ok && top_ok) {
            wrong += 1;
            eprintln!("a burst's episode not named: {}", e["breakdown"]);
        }
    }
    eprintln!(
        "{overlapped} of {} noise episodes overlap a burst: {wrong} misnamed, {host_first} with the host's unexplained time first; {false_named} name {NAME} without a burst",
        eps.len()
    );
    assert!(
        overlapped >= 50,
        "only {overlapped} episodes overlap a burst"
    );
    assert_eq!(false_named, 0, "episodes name {NAME} where no burst ran");
    assert!(
        wrong as f64 <= 0.05 * overlapped as f64,
        "{wrong} of {overlapped} episodes a burst overlapped do not name {NAME}"
    );
}

#[test]
fn floating_point_loop_runs_and_is_recorded() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let cpu = online()[0];
    let doc = noise_run(
        &[
            "--cpus",
            &cpu.to_string(),
            "--duration",
            "1s",
            "--fp",
            "--pause",
            "0",
        ],
        dir.path(),
    );
    assert_eq!(doc["cells"][0]["probe"], "noise");
    assert_eq!(doc["cells"][0]["settings"]["fp"], true);
    assert_eq!(doc["cells"][0]["settings"]["pause_ns"], 0);
    let s = stats_of(&doc);
    assert!(s["iterations"].as_u64().unwrap() > 1_000_000, "{s}");
    assert!(s["base_iteration_ps"].as_u64().unwrap() > 0);
    assert!(s["active_ns"].as_u64().unwrap() > 800_000_000, "{s}");
}
