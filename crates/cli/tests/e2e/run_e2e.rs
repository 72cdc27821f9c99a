//! End-to-end tests of `latscope run`, `list` and `show` on the real binary.

#![allow(clippy::unwrap_used)]

use std::process::Stdio;
use std::thread::sleep;
use std::time::Duration;

use crate::common::*;
use serde_json::Value;

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a u64: {v}"))
}

#[test]
fn five_second_run_gives_duration_over_period_samples_per_cpu() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let json = dir.path().join("out.json");
    let o = latscope(&[
        "run",
        "--duration",
        "5s",
        "--period",
        "1ms",
        "--store",
        store.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc = read_json(&json);
    assert_eq!(doc["status"], "complete");
    let lat = metrics(&doc, "timer.latency");
    assert_eq!(
        lat.len(),
        online().len(),
        "one timer.latency per online CPU"
    );
    for m in lat {
        let n = u(&m["count"]) as f64;
        assert!(
            (n - 5000.0).abs() <= 250.0,
            "cpu {} had {n} samples",
            m["cpu"]
        );
    }
    // The summary is printed on stdout and names both metrics.
    let out = stdout(&o);
    assert!(
        out.contains("timer.latency") && out.contains("timer.interval"),
        "{out}"
    );
    assert!(out.contains("p99.99"), "{out}");
}

#[test]
fn every_timer_api_measures() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let cpu = online()[0].to_string();
    let cases: &[&[&str]] = &[
        &["--timer-api", "clock_nanosleep"],
        &["--timer-api", "nanosleep"],
        &["--timer-api", "nanosleep", "--phase", "random"],
        &["--timer-api", "timerfd"],
        &["--timer-api", "posix-timer"],
        &["--timer-api", "epoll"],
        &["--timer-api", "epoll", "--phase", "random"],
    ];
    for extra in cases {
        let json = dir.path().join("api.json");
        let mut args = vec![
            "run",
            "--duration",
            "1s",
            "--cpus",
            &cpu,
            "--store",
            store.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
            "--quiet",
        ];
        args.extend_from_slice(extra);
        let o = latscope(&args);
        assert_eq!(o.status.code(), Some(0), "{extra:?}: {}", stderr(&o));
        let doc = read_json(&json);
        let lat = metrics(&doc, "timer.latency");
        let n = u(&lat[0]["count"]);
        let settings = &doc["cells"][0]["settings"];
        assert_eq!(settings["timer_api"], extra[1]);
        if extra.contains(&"random") {
            // Each cycle also spends a random 0..period busy delay: about
            // 1 s / 1.5 ms wake-ups, and no interval metric.
            assert!((500..=800).contains(&n), "{extra:?}: {n} samples");
            assert_eq!(u(&metrics(&doc, "timer.interval")[0]["count"]), 0);
        } else {
            assert!((900..=1010).contains(&n), "{extra:?}: {n} samples");
            let iv = u(&metrics(&doc, "timer.interval")[0]["p50_ns"]);
            assert!(
                (900_000..=1_100_000).contains(&iv),
                "{extra:?}: interval p50 {iv}"
            );
        }
        // No wake-up can come before its deadline by more than a clock read.
        assert!(u(&lat[0]["min_ns"]) < 5_000_000, "{extra:?}");
    }
    // Seven runs in the store.
    let o = latscope(&["list", "--json", "--store", store.to_str().unwrap()]);
    let list: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(list.as_array().unwrap().len(), cases.len());
}

#[test]
fn json_follows_the_documented_schema() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let json = dir.path().join("out.json");
    let cpu = online()[0].to_string();
    let o = latscope(&[
        "run",
        "--probe",
        "timer",
        "--cpus",
        &cpu,
        "--period",
        "1ms",
        "--priority",
        "80",
        "--duration",
        "2s",
        "--threshold",
        "100us",
        "--json",
        json.to_str().unwrap(),
        "--store",
        store.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).is_empty(), "--quiet prints no summary");
    let doc = read_json(&json);
    for key in ["run_id", "status", "system", "capabilities", "cells"] {
        assert!(doc.get(key).is_some(), "top-level {key}");
    }
    assert_eq!(doc["schema"], "latscope.run.v1");
    assert!(doc["system"]["kernel_release"]
        .as_str()
        .is_some_and(|s| !s.is_empty()));
    assert!(doc["system"]["cpu_count"].as_u64().is_some_and(|n| n >= 1));
    for key in ["rt_priority", "mlock", "dma_latency"] {
        assert!(doc["capabilities"][key].is_boolean(), "capabilities.{key}");
    }
    let cell = &doc["cells"][0];
    assert_eq!(cell["probe"], "timer");
    assert_eq!(cell["workload"], "none");
    assert_eq!(cell["settings"]["probe"], "timer");
    assert_eq!(cell["settings"]["priority"], 80);
    assert_eq!(cell["settings"]["period_ns"], 1_000_000);
    assert!(u(&cell["duration_ns"]) >= 1_900_000_000);
    for m in cell["metrics"].as_array().unwrap() {
        for key in [
            "count", "min_ns", "mean_ns", "max_ns", "p50_ns", "p90_ns", "p99_ns", "p999_ns",
            "p9999_ns", "overruns",
        ] {
            assert!(m[key].is_u64(), "metric {} lacks {key}: {m}", m["name"]);
        }
        assert!(m["name"].is_string() && m["cpu"].is_u64());
        let (min, p50, p99, max) = (
            u(&m["min_ns"]),
            u(&m["p50_ns"]),
            u(&m["p99_ns"]),
            u(&m["max_ns"]),
        );
        assert!(min <= p50 && p50 <= p99 && p99 <= max, "{m}");
        let hist = m["histogram"].as_array().unwrap();
        let total: u64 = hist
            .iter()
            .map(|b| {
                let b = b.as_array().unwrap();
                assert_eq!(b.len(), 3);
                assert!(u(&b[0]) <= u(&b[1]));
                u(&b[2])
            })
            .sum();
        assert_eq!(total, u(&m["count"]), "histogram buckets add up to count");
    }
    let lat = metrics(&doc, "timer.latency")[0];
    assert_eq!(lat["threshold_ns"], 100_000);
    assert!(lat["above_threshold"].is_u64());
    assert!(lat["corrected"]["count"].as_u64().unwrap() >= u(&lat["count"]));
    // Early wake-ups, counted (if only as 0) for every measured CPU.
    let early = cell["timer_stats"].as_array().unwrap();
    assert_eq!(
        early.len(),
        metrics(&doc, "timer.latency").len(),
        "{early:?}"
    );
    for e in early {
        assert!(e["cpu"].is_u64() && e["early_wakeups"].is_u64() && e["max_early_ns"].is_u64());
    }
    // `show --json` of the stored run is the same document.
    let o = latscope(&[
        "show",
        "latest",
        "--json",
        "--store",
        store.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let shown: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(shown, doc);
}

#[test]
fn show_and_list_read_the_store() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let s = store.to_str().unwrap();
    let o = latscope(&["run", "--duration", "1s", "--store", s, "--quiet"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = latscope(&["show", "1", "--histogram", "--store", s]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("samples per range") && out.contains("16–32 µs"),
        "{out}"
    );
    let o = latscope(&["list", "--store", s]);
    let out = stdout(&o);
    assert!(out.contains("complete") && out.contains("timer"), "{out}");
}

/// Starts a 60 s run, sends `signal` after `after_s` seconds, and checks that
/// the data measured until then is stored, the summary printed, and the exit
/// code is 130.
fn interrupted_run_keeps_data(signal: &str, after_s: u64) {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let json = dir.path().join("out.json");
    let cpu = online()[0].to_string();
    let child = bin()
        .args([
            "run",
            "--duration",
            "60s",
            "--cpus",
            &cpu,
            "--store",
            store.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    sleep(Duration::from_secs(after_s));
    let k = std::process::Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(k.success());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{signal}: {}", stderr(&o));
    assert!(
        stdout(&o).contains("timer.latency"),
        "the summary is printed"
    );
    let doc = read_json(&json);
    assert_eq!(doc["status"], "interrupted");
    let n = u(&metrics(&doc, "timer.latency")[0]["count"]);
    let expected = after_s * 1000;
    assert!(
        n + 500 >= expected && n <= expected + 500,
        "{signal}: about {after_s} s of samples, got {n}"
    );
}

#[test]
fn sigint_keeps_the_data_and_exits_130() {
    let _g = serial();
    interrupted_run_keeps_data("-INT", 3);
}

#[test]
fn sigterm_keeps_the_data_and_exits_130() {
    let _g = serial();
    interrupted_run_keeps_data("-TERM", 2);
}

#[test]
fn kill_9_after_a_checkpoint_leaves_a_readable_store() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let s = store.to_str().unwrap();
    let cpu = online()[0].to_string();
    let mut child = bin()
        .args([
            "run",
            "--duration",
            "60s",
            "--cpus",
            &cpu,
            "--checkpoint",
            "1s",
            "--store",
            s,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    sleep(Duration::from_millis(3500));
    child.kill().unwrap();
    child.wait().unwrap();
    let o = latscope(&["show", "latest", "--json", "--store", s]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["status"], "interrupted");
    let n = u(&metrics(&doc, "timer.latency")[0]["count"]);
    assert!(
        n >= 1500,
        "at least two checkpoints' worth of samples, got {n}"
    );
    // The store still takes new runs.
    let o = latscope(&[
        "run",
        "--duration",
        "1s",
        "--cpus",
        &cpu,
        "--store",
        s,
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = latscope(&["list", "--json", "--store", s]);
    let list: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 2);
}

#[test]
fn without_privileges_the_run_degrades_and_says_so() {
    let _g = serial();
    if !is_root() {
        eprintln!("skipped: needs root to drop to an unprivileged user");
        return;
    }
    if std::process::Command::new("setpriv")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: needs setpriv (util-linux)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    // The test binary's directory must be reachable by nobody.
    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_latscope"));
    let copy = dir.path().join("latscope");
    std::fs::copy(exe, &copy).unwrap();
    let store = store_in(dir.path());
    let json = dir.path().join("out.json");
    let o = std::process::Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
        ])
        .arg(&copy)
        .args([
            "run",
            "--duration",
            "1s",
            "--store",
            store.to_str().unwrap(),
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("no real-time priority"), "{err}");
    assert!(err.contains("not real-time"), "{err}");
    let doc = read_json(&json);
    assert_eq!(doc["capabilities"]["rt_priority"], false);
    assert_eq!(doc["capabilities"]["root"], false);
    assert!(!doc["capabilities"]["missing"]
        .as_array()
        .unwrap()
        .is_empty());
    assert!(u(&metrics(&doc, "timer.latency")[0]["count"]) > 500);
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn memory_stays_flat_while_measuring() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    // 20 000 samples per second per CPU: keeping even 8 bytes per sample
    // would grow the process by over 3 MB in the 10 s between the readings.
    let mut child = bin()
        .args([
            "run",
            "--period",
            "50us",
            "--duration",
            "20s",
            "--checkpoint",
            "1s",
            "--quiet",
            "--store",
            store.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    sleep(Duration::from_secs(4));
    let early = rss_kib(child.id());
    sleep(Duration::from_secs(10));
    let late = rss_kib(child.id());
    child.kill().unwrap();
    child.wait().unwrap();
    // The samples stored by then (checkpoints every second) say whether 8
    // bytes each would have shown.
    let o = latscope(&[
        "show",
        "latest",
        "--json",
        "--store",
        store.to_str().unwrap(),
    ]);
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let n: u64 = metrics(&doc, "timer.latency")
        .iter()
        .map(|m| u(&m["count"]))
        .sum();
    eprintln!("memory: RSS {early} KiB after 4 s, {late} KiB after 14 s; {n} samples stored");
    let per_10s_kib = n * 10 / 14 * 8 / 1024;
    if per_10s_kib <= 2560 {
        eprintln!("skipped: machine too noisy ({n} samples in 14 s: 8 bytes each in 10 s would be {per_10s_kib} KiB, within the allowance)");
        return;
    }
    // SQLite's page cache may grow as the file grows, up to its cap of
    // 2 MiB (seen: +1.1 MiB in CI once the store had more tables); nothing
    // else may. 8 bytes per sample would be over 3 MiB here.
    assert!(late <= early + 2560, "RSS grew from {early} to {late} KiB");
}

#[test]
fn progress_is_drawn_on_a_terminal_only_and_at_most_twice_a_second() {
    let _g = serial();
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: needs script (util-linux) for a pseudo-terminal");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let cpu = online()[0].to_string();
    let cmd = format!(
        "{} run --cpus {cpu} --duration 3s --store {}",
        env!("CARGO_BIN_EXE_latscope"),
        store.display()
    );
    // `script` gives latscope a real terminal on stdout and stderr.
    let o = std::process::Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let draws = out.matches("\r\x1b[2K[").count();
    assert!(
        (3..=8).contains(&draws),
        "{draws} progress redraws in 3 s: {out}"
    );
    assert!(out.contains("samples") && out.contains("overruns"), "{out}");
    // Not a terminal (piped), or --quiet on a terminal: no progress.
    let o = latscope(&[
        "run",
        "--cpus",
        &cpu,
        "--duration",
        "1s",
        "--store",
        store.to_str().unwrap(),
    ]);
    assert!(!stderr(&o).contains("\x1b[2K"), "{}", stderr(&o));
    let quiet = std::process::Command::new("script")
        .args(["-qec", &format!("{cmd} --quiet"), "/dev/null"])
        .output()
        .unwrap();
    assert!(!stdout(&quiet).contains("\x1b[2K["), "{}", stdout(&quiet));
}

/// The CPUs a thread may run on, from /proc/PID/task/TID/status.
fn allowed_cpus(pid: u32, tid: u32) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/status")).unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("Cpus_allowed_list:"))
        .unwrap();
    line.split_whitespace().nth(1).unwrap().to_string()
}

#[test]
fn housekeeping_thread_stays_off_the_measured_cpus() {
    let cpus = online();
    if cpus.len() < 2 {
        eprintln!("skipped: needs at least two online CPUs");
        return;
    }
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let measured = cpus[cpus.len() - 1];
    let mut child = bin()
        .args([
            "run",
            "--cpus",
            &measured.to_string(),
            "--duration",
            "3s",
            "--quiet",
            "--store",
            store.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    sleep(Duration::from_millis(1500));
    let pid = child.id();
    let main = allowed_cpus(pid, pid);
    let mut measuring = Vec::new();
    for entry in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let tid: u32 = entry
            .unwrap()
            .file_name()
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        let comm = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm")).unwrap();
        if comm.trim().starts_with("lat-timer/") {
            measuring.push(allowed_cpus(pid, tid));
        }
    }
    assert!(child.wait().unwrap().success());
    assert_eq!(
        measuring,
        vec![measured.to_string()],
        "measuring thread pinned"
    );
    let main_cpus: Vec<u32> = latscope_model::CpuSet::parse(&main)
        .unwrap()
        .iter()
        .map(|c| c.0)
        .collect();
    assert!(!main_cpus.is_empty());
    assert!(
        !main_cpus.contains(&measured),
        "housekeeping thread may run on {main}, which includes measured CPU {measured}"
    );
}
