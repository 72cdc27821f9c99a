//! Workloads end to end through the real binary: each load is characterized
//! as what it is, a killed latscope leaves no load behind, missing
//! stress-ng is one clear line, `custom:` passes arguments untouched, and a
//! quick suite runs to the end.

#![allow(clippy::unwrap_used)]

use std::process::Stdio;
use std::time::Duration;

use crate::common::*;
use serde_json::Value;

fn have(program: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
        .unwrap_or(false)
}

/// `run --workload LIST` for `secs` seconds; the stored run as JSON.
fn loaded_run(workloads: &str, secs: &str, dir: &std::path::Path) -> Value {
    let store = store_in(dir);
    let json = dir.join("w.json");
    let o = latscope(&[
        "run",
        "--workload",
        workloads,
        "--warmup",
        "500ms",
        "--duration",
        secs,
        "--store",
        store.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    read_json(&json)
}

fn mean(cell: &Value) -> &Value {
    &cell["workload_stats"]["mean"]
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

#[test]
fn each_workload_is_characterized_as_what_it_does() {
    let _g = serial();
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces, SCHED_FIFO)");
        return;
    }
    if !have("stress-ng") {
        eprintln!("skipped: needs stress-ng (apt-get install stress-ng)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // cpu and net are characterized in the quick suite's test below, whose
    // preset runs them; the other three here.
    let doc = loaded_run("disk,tty,fork", "2s", dir.path());
    let cells = doc["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 3);
    let by = |name: &str| cells.iter().find(|c| c["workload"] == name).unwrap();
    for c in cells {
        assert!(
            c["workload_stats"]["samples"].as_u64().unwrap() >= 2,
            "{}",
            c["workload"]
        );
        assert!(
            metrics_of(c, "timer.latency") > 1000,
            "{} measured",
            c["workload"]
        );
    }
    let disk = mean(by("disk"));
    let tty = &by("tty")["workload_stats"];
    let fork = mean(by("fork"));
    eprintln!(
        "characterization: disk {:.0} writes/s {:.0} KB/s; tty {:.0} B/s through ptys; fork {:.0} processes/s",
        f(&disk["disk"]["writes_per_s"]),
        f(&disk["disk"]["write_kb_per_s"]),
        f(&tty["pty_bytes_per_s"]),
        f(&fork["processes_per_s"]),
    );
    assert!(
        f(&disk["disk"]["writes_per_s"]) > 1.0,
        "disk workload wrote nothing"
    );
    assert!(
        f(&tty["pty_bytes_per_s"]) > 1000.0,
        "tty workload pushed nothing"
    );
    assert!(
        f(&fork["processes_per_s"]) > 100.0,
        "fork workload created few processes"
    );
}

/// The cpu and net workloads characterized as what they do, from a
/// suite's timer cells: the CPUs busy, packets flowing.
fn cpu_and_net_are_characterized(cells: &[Value]) {
    let timer = |name: &str| {
        cells
            .iter()
            .find(|c| c["probe"] == "timer" && c["workload"] == name)
            .unwrap()
    };
    let cpu = mean(timer("cpu"));
    let busy = 100.0 - f(&cpu["cpu_all"]["idle"]) - f(&cpu["cpu_all"]["iowait"]);
    let net = mean(timer("net"));
    let packets = f(&net["net"]["rx_packets_per_s"])
        + f(&net["net"]["tx_packets_per_s"])
        + f(&net["net_lo"]["rx_packets_per_s"])
        + f(&net["net_lo"]["tx_packets_per_s"]);
    eprintln!("characterization: cpu busy {busy:.1}%; net {packets:.0} packets/s");
    assert!(busy > 90.0, "cpu workload: {busy}% busy");
    assert!(packets > 100.0, "net workload: {packets} packets/s");
}

fn metrics_of(cell: &Value, name: &str) -> u64 {
    cell["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["name"] == name)
        .map(|m| m["count"].as_u64().unwrap())
        .sum()
}

/// Every process below `root` (excluded), from the platform's /proc reader.
fn descendants(root: u32) -> Vec<u32> {
    latscope_platform::process::descendants(root as i32)
        .into_iter()
        .filter_map(|p| u32::try_from(p).ok())
        .filter(|&p| p != root)
        .collect()
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            let rest = &s[s.rfind(')').unwrap() + 2..];
            !rest.starts_with('Z')
        })
        .unwrap_or(false)
}

#[test]
fn kill_9_of_latscope_leaves_no_workload_process() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let mut child = bin()
        .args([
            "run",
            "--workload",
            "cpu",
            "--duration",
            "20s",
            "--warmup",
            "1s",
            "--store",
            store.to_str().unwrap(),
            "--quiet",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    let load = descendants(child.id());
    assert!(!load.is_empty(), "the cpu workload has processes");
    child.kill().unwrap();
    child.wait().unwrap();
    // The parent-death signal ends them; give the kernel a moment.
    let mut left = load.clone();
    for _ in 0..50 {
        left.retain(|&p| alive(p));
        if left.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!(
        "kill -9: {} workload processes before, {} after",
        load.len(),
        left.len()
    );
    assert!(left.is_empty(), "orphans left: {left:?}");
}

#[test]
fn a_workload_that_needs_stress_ng_says_so_when_it_is_missing() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    // A PATH with the usual tools but no stress-ng.
    let empty = dir.path().join("bin");
    std::fs::create_dir(&empty).unwrap();
    let o = bin()
        .env("PATH", &empty)
        .args([
            "run",
            "--workload",
            "memory",
            "--duration",
            "1s",
            "--store",
            store_in(dir.path()).to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_one_line_error(&o, 2);
    let err = stderr(&o);
    assert!(
        err.contains("stress-ng") && err.contains("apt-get install"),
        "{err}"
    );
    // idle and cpu need nothing.
    let o = bin()
        .env("PATH", &empty)
        .args([
            "run",
            "--workload",
            "cpu",
            "--warmup",
            "100ms",
            "--duration",
            "1s",
            "--store",
            store_in(dir.path()).to_str().unwrap(),
            "--quiet",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn custom_passes_arguments_without_a_shell() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    // `tail -F` keeps running (retrying files that do not exist), so its
    // argument vector can be read from /proc while the cell runs: shell
    // syntax must arrive literally.
    let spec = "custom:/usr/bin/tail -F /nonexistent/a;b $HOME *";
    let mut child = bin()
        .args([
            "run",
            "--workload",
            spec,
            "--warmup",
            "500ms",
            "--duration",
            "3s",
            "--store",
            store_in(dir.path()).to_str().unwrap(),
            "--quiet",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2000));
    let argvs: Vec<Vec<String>> = descendants(child.id())
        .into_iter()
        .filter_map(|p| std::fs::read(format!("/proc/{p}/cmdline")).ok())
        .map(|raw| {
            raw.split(|&b| b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
        .collect();
    let status = child.wait().unwrap();
    eprintln!("custom: {argvs:?}");
    assert!(status.success(), "latscope run with a custom workload");
    assert!(
        argvs.contains(&vec![
            "/usr/bin/tail".to_string(),
            "-F".to_string(),
            "/nonexistent/a;b".to_string(),
            "$HOME".to_string(),
            "*".to_string(),
        ]),
        "{argvs:?}"
    );
}

#[test]
fn a_quick_suite_runs_to_the_end() {
    let _g = serial();
    if !have("stress-ng") {
        eprintln!("skipped: needs stress-ng (apt-get install stress-ng)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let json = dir.path().join("suite.json");
    // The quick preset's grid (3 probes x 4 workloads) with 1.2 s cells and
    // a 0.3 s warm-up instead of 10 s and 2 s: the grid, the
    // characterization of every cell (at least two readings: one after a
    // second and one at the cell's end, 0.2 s later) and the summary matrix
    // are what this proves; the preset's own durations are checked by
    // engine::suite's unit tests. stress-ng's workers are running within
    // the warm-up (the cpu cells are over 90 % busy, checked below).
    let o = latscope(&[
        "suite",
        "--quick",
        "--cell-duration",
        "1200ms",
        "--warmup",
        "300ms",
        "--store",
        store.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    eprintln!("{out}");
    assert!(out.contains("max (p99.9)"), "the summary matrix");
    let doc = read_json(&json);
    let cells = doc["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 12, "3 probes x 4 workloads");
    for c in cells {
        assert_ne!(c["workload"], "none");
        assert!(
            c["workload_stats"]["samples"].as_u64().unwrap() >= 2,
            "{}",
            c["workload"]
        );
        let name = match c["probe"].as_str() {
            Some("timer") => "timer.latency",
            Some("udp") => "udp.path",
            _ => "noise.gap",
        };
        assert!(metrics_of(c, name) > 0, "{} {}", c["probe"], c["workload"]);
    }
    cpu_and_net_are_characterized(cells);
    assert_eq!(doc["status"], "complete");
}
