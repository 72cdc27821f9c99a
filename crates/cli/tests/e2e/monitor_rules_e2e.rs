//! What `dist/` ships for Prometheus and Grafana, checked with the real
//! tools: `promtool check rules` and `promtool test rules` on
//! `dist/prometheus/`, then a real Prometheus (native histograms on, a 1 s
//! scrape and evaluation) scraping a real `latscope monitor --trace` with
//! the rules loaded: every recording rule and every query of
//! `dist/grafana/latscope.json` (its variables substituted) must return at
//! least one series, every rule group must load healthy, and the alerts on
//! the native histogram must be held (pending: their `for:` is longer than
//! the test) with the thresholds lowered and not with them raised
//! (promtool 2.42 cannot feed native histograms to its unit tests, so this
//! is where those alerts are tested). A third test checks the dashboard's
//! shape without Prometheus.
//!
//! Without `prometheus` or `promtool` (Debian's `prometheus` package, which
//! `.ci/run` installs) the first two print `skipped: needs
//! prometheus/promtool`. The monitor is started with `--trace` (for the
//! episode series), so the second needs root and otherwise prints
//! `skipped: needs root`. It asserts nothing on the latency measured.

#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::common::daemon::Daemon;
use crate::common::prometheus::{self, encode, free_port, Killed};
use crate::common::*;
use serde_json::Value;

fn dist() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../dist")
}

fn rules_file() -> PathBuf {
    dist().join("prometheus/latscope.rules.yml")
}

/// `true` when both binaries run; otherwise one `skipped:` line.
fn have_tools() -> bool {
    let missing: Vec<&str> = ["prometheus", "promtool"]
        .into_iter()
        .filter(|b| Command::new(b).arg("--version").output().is_err())
        .collect();
    if missing.is_empty() {
        return true;
    }
    eprintln!(
        "skipped: needs prometheus/promtool ({} not found; apt-get install prometheus)",
        missing.join(", ")
    );
    false
}

fn promtool(args: &[&Path]) -> String {
    let o = Command::new("promtool")
        .args(args.iter().map(|p| p.as_os_str()))
        .output()
        .unwrap();
    let text = format!("{}{}", stdout(&o), stderr(&o));
    eprintln!("promtool {args:?}:\n{text}");
    assert!(o.status.success(), "promtool {args:?} failed:\n{text}");
    text
}

#[test]
fn promtool_checks_and_unit_tests_the_rules() {
    if !have_tools() {
        return;
    }
    let check = promtool(&[Path::new("check"), Path::new("rules"), &rules_file()]);
    assert!(check.contains("SUCCESS"), "{check}");
    let tests = dist().join("prometheus/latscope.rules.test.yml");
    let test = promtool(&[Path::new("test"), Path::new("rules"), &tests]);
    assert!(test.contains("SUCCESS"), "{test}");
}

/// The rules file with both thresholds set to `value` and every name
/// prefixed (`latscope:` → `PREFIX:`, groups `PREFIX-...`, alerts
/// `PrefixLatscope...`), so that it loads beside the shipped one.
fn with_thresholds(text: &str, prefix: &str, alert_prefix: &str, value: &str) -> String {
    let mut out = Vec::new();
    let mut constant = false;
    let mut replaced = 0;
    for line in text.lines() {
        if constant && line.trim_start().starts_with("expr:") {
            let indent = &line[..line.len() - line.trim_start().len()];
            out.push(format!("{indent}expr: vector({value})"));
            constant = false;
            replaced += 1;
            continue;
        }
        constant |= line.contains("record: latscope:deadline_seconds")
            || line.contains("record: latscope:latency_threshold_seconds");
        out.push(
            line.replace("latscope:", &format!("{prefix}:"))
                .replace("name: latscope-", &format!("name: {prefix}-"))
                .replace("alert: Latscope", &format!("alert: {alert_prefix}Latscope")),
        );
    }
    assert_eq!(replaced, 2, "the two threshold constants");
    out.join("\n") + "\n"
}

/// An API call's `data`; panics on an HTTP or query error.
fn api(prom: SocketAddr, path: &str) -> Value {
    let (status, _, body) = http_get(prom, path);
    assert_eq!(status, 200, "{path}: {body}");
    let doc: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(doc["status"], "success", "{path}: {body}");
    doc["data"].clone()
}

/// The series an instant query returns.
fn series(prom: SocketAddr, q: &str) -> Vec<Value> {
    api(prom, &format!("/api/v1/query?query={}", encode(q)))["result"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// (panel title, query) or (selector, label).
type Pairs = Vec<(String, String)>;

/// Every panel's queries, with the dashboard's variables substituted, and
/// the variables' `label_values(SELECTOR, LABEL)` queries as (SELECTOR,
/// LABEL).
fn dashboard_queries() -> (Pairs, Pairs) {
    let path = dist().join("grafana/latscope.json");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let vars = doc["templating"]["list"].as_array().unwrap();
    let var = |name: &str| vars.iter().find(|v| v["name"] == name).unwrap();
    assert_eq!(var("DS_PROMETHEUS")["type"], "datasource");
    let deadline = var("deadline")["current"]["value"].as_str().unwrap();
    let subst = |q: &str| {
        let q = q
            .replace("$__rate_interval", "1m")
            .replace("$deadline", deadline)
            .replace("$job", ".+")
            .replace("$instance", ".+")
            .replace("$cpu", ".+");
        assert!(!q.contains('$'), "a variable left in {q}");
        q
    };
    let mut label_values = Vec::new();
    for v in vars.iter().filter(|v| v["type"] == "query") {
        let q = v["query"]["query"].as_str().unwrap();
        let inner = q
            .strip_prefix("label_values(")
            .and_then(|s| s.strip_suffix(')'))
            .unwrap();
        let (selector, label) = inner.rsplit_once(',').unwrap();
        label_values.push((subst(selector), label.trim().to_string()));
    }
    let mut panels = Vec::new();
    let mut stack: Vec<&Value> = doc["panels"].as_array().unwrap().iter().collect();
    while let Some(p) = stack.pop() {
        if let Some(inner) = p["panels"].as_array() {
            stack.extend(inner);
        }
        if p["type"] == "row" {
            continue;
        }
        let title = p["title"].as_str().unwrap().to_string();
        let targets = p["targets"].as_array().unwrap();
        assert!(!targets.is_empty(), "panel {title} has no query");
        assert_eq!(p["datasource"]["uid"], "${DS_PROMETHEUS}", "{title}");
        for t in targets {
            panels.push((title.clone(), subst(t["expr"].as_str().unwrap())));
        }
    }
    assert!(panels.len() >= 10, "{panels:?}");
    (panels, label_values)
}

/// Runs without Prometheus: the dashboard's shape (what Grafana needs to
/// import it) and that its queries use only its own variables.
#[test]
fn the_dashboard_is_well_formed() {
    let (panels, label_values) = dashboard_queries();
    let path = dist().join("grafana/latscope.json");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert!(doc["schemaVersion"].as_u64().unwrap() >= 36);
    assert!(doc["uid"].is_string() && doc["title"].is_string());
    let names: Vec<&str> = doc["templating"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    for v in ["DS_PROMETHEUS", "job", "instance", "cpu", "deadline"] {
        assert!(names.contains(&v), "variable {v} in {names:?}");
    }
    let all = doc["panels"].as_array().unwrap();
    let mut ids: Vec<u64> = all.iter().map(|p| p["id"].as_u64().unwrap()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), all.len(), "panel ids are unique");
    for p in all {
        for k in ["x", "y", "w", "h"] {
            assert!(p["gridPos"][k].is_u64(), "{}: gridPos.{k}", p["title"]);
        }
    }
    let heatmap = all.iter().find(|p| p["type"] == "heatmap").unwrap();
    assert_eq!(heatmap["targets"][0]["format"], "heatmap");
    for k in [
        "Percentiles per CPU",
        "Worst case per hour",
        "Missed deadlines",
        "Episodes per second",
        "Store",
    ] {
        assert!(panels.iter().any(|(t, _)| t.contains(k)), "a panel '{k}'");
    }
    assert_eq!(label_values.len(), 3);
}

/// The shipped file's recording rules; with `healthy`, asserts every rule
/// of every group was evaluated without an error.
fn recording_rules(prom: SocketAddr, healthy: bool) -> Vec<String> {
    let groups = api(prom, "/api/v1/rules")["groups"].clone();
    let mut names = Vec::new();
    for g in groups.as_array().unwrap() {
        for r in g["rules"].as_array().unwrap() {
            if healthy {
                assert_eq!(
                    r["health"], "ok",
                    "rule {} of group {}: {}",
                    r["name"], g["name"], r["lastError"]
                );
            }
            let name = r["name"].as_str().unwrap();
            if r["type"] == "recording" && name.starts_with("latscope:") {
                names.push(name.to_string());
            }
        }
    }
    names
}

fn start_prometheus(dir: &Path, target: SocketAddr, rules: &[PathBuf]) -> (Killed, SocketAddr) {
    let prom_addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let files: String = rules
        .iter()
        .map(|r| format!("  - {}\n", r.display()))
        .collect();
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
             rule_files:\n{files}\
             scrape_configs:\n  - job_name: latscope\n    static_configs:\n      - targets: ['{target}']\n"
        ),
    )
    .unwrap();
    let prom = prometheus::start(&config, &dir.join("tsdb"), prom_addr, true);
    (prom, prom_addr)
}

/// The alerts Prometheus holds (pending or firing), by name.
fn alerts(prom: SocketAddr) -> Vec<(String, String)> {
    api(prom, "/api/v1/alerts")["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["labels"]["alertname"].as_str().unwrap().to_string(),
                a["state"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn every_rule_and_dashboard_query_returns_series_from_a_real_monitor() {
    if !have_tools() {
        return;
    }
    if !is_root() {
        eprintln!("skipped: needs root (the monitor runs with --trace for the episode series)");
        return;
    }
    let (panels, label_values) = dashboard_queries();
    let _g = shared();
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());

    // The shipped rules, and two copies: thresholds of 1 ns (the
    // histogram alerts must fire) and of 100 s (they must not).
    let shipped = std::fs::read_to_string(rules_file()).unwrap();
    let low = dir.path().join("low.rules.yml");
    let high = dir.path().join("high.rules.yml");
    std::fs::write(&low, with_thresholds(&shipped, "low", "Low", "1e-9")).unwrap();
    std::fs::write(&high, with_thresholds(&shipped, "high", "High", "100")).unwrap();

    // Every CPU, episodes from 50 µs (some come within seconds; at 10 µs
    // this VM made ~7,800 in 14 s and the monitor took 15 s to stop),
    // a checkpoint a second.
    let mut daemon = Daemon::start(&[
        "--trace",
        "--threshold",
        "50us",
        "--persist",
        "1s",
        "--store",
        store.to_str().unwrap(),
    ]);
    let (prom, prom_addr) = start_prometheus(dir.path(), daemon.addr, &[rules_file(), low, high]);

    // Wait until every query has series (rates need two scrapes after the
    // first checkpoint) and the low thresholds' alerts are held (per CPU),
    // at most 40 s.
    let t0 = Instant::now();
    let empty = loop {
        let rules = recording_rules(prom_addr, false);
        let mut empty: Vec<String> = rules
            .iter()
            .filter(|r| series(prom_addr, r).is_empty())
            .map(|r| format!("recording rule {r}"))
            .collect();
        empty.extend(
            panels
                .iter()
                .filter(|(_, q)| series(prom_addr, q).is_empty())
                .map(|(t, q)| format!("panel '{t}': {q}")),
        );
        empty.extend(
            label_values
                .iter()
                .filter(|(s, l)| {
                    !series(prom_addr, s)
                        .iter()
                        .any(|x| x["metric"][l].is_string())
                })
                .map(|(s, l)| format!("variable label_values({s}, {l})")),
        );
        let held = alerts(prom_addr);
        let low_held = ["LowLatscopeLatencyHigh", "LowLatscopeDeadlineMissed"]
            .iter()
            .all(|n| held.iter().any(|(a, _)| a == n));
        if empty.is_empty() && rules.len() >= 9 && low_held {
            break empty;
        }
        if t0.elapsed() > Duration::from_secs(40) {
            break empty;
        }
        sleep(Duration::from_secs(1));
    };
    // Two more evaluations with data, so that the high copy's alerts were
    // evaluated on the same series as the low copy's.
    sleep(Duration::from_secs(2));
    let rules = recording_rules(prom_addr, true);
    let held = alerts(prom_addr);
    eprintln!(
        "after {:.1} s: {} recording rules, {} panel queries, {} variables; alerts {held:?}",
        t0.elapsed().as_secs_f64(),
        rules.len(),
        panels.len(),
        label_values.len()
    );
    for (_, q) in &panels {
        eprintln!("  {} series: {q}", series(prom_addr, q).len());
    }
    assert!(empty.is_empty(), "no series for:\n{}", empty.join("\n"));
    assert!(rules.len() >= 9, "{rules:?}");

    // Every group of the three files loaded.
    let groups: Vec<String> = api(prom_addr, "/api/v1/rules")["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap().to_string())
        .collect();
    for g in ["settings", "recording", "alerts"] {
        for p in ["latscope", "low", "high"] {
            let name = format!("{p}-{g}");
            assert!(groups.contains(&name), "group {name} not in {groups:?}");
        }
    }

    // The histogram alerts: held with the low thresholds, not with the
    // high ones.
    let has = |n: &str| held.iter().any(|(a, _)| a == n);
    for a in ["LatscopeLatencyHigh", "LatscopeDeadlineMissed"] {
        assert!(has(&format!("Low{a}")), "Low{a} not in {held:?}");
        assert!(!has(&format!("High{a}")), "High{a} in {held:?}");
    }
    // What LatscopeMonitorStalled filters on: every measured CPU.
    assert_eq!(
        series(prom_addr, "latscope_timer_measuring == 1").len(),
        online().len()
    );
    // A monitor that measures and checkpoints raises none of the others.
    for a in [
        "LatscopeMonitorDown",
        "LatscopeMonitorStalled",
        "LatscopeCheckpointStale",
        "LatscopeStoreDropping",
        "LatscopeConfigReloadRefused",
    ] {
        assert!(!has(a), "{a} in {held:?}");
    }
    drop(prom);
    daemon.signal("TERM");
    assert_eq!(daemon.wait(Duration::from_secs(15)), Some(0));
}
