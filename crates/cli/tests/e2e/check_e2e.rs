//! End-to-end tests of `latscope check` and of the findings every run
//! stores in `system.hazards`.

#![allow(clippy::unwrap_used)]

use crate::common::*;
use serde_json::Value;

fn check_json() -> Value {
    let o = latscope(&["check", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("{e}: {}", stdout(&o)))
}

fn ids_of(hazards: &Value) -> Vec<String> {
    hazards
        .as_array()
        .expect("hazards array")
        .iter()
        .map(|h| h["id"].as_str().expect("id").to_string())
        .collect()
}

#[test]
fn check_prints_a_table_and_exits_0() {
    let o = latscope(&["check"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with("latscope check · "), "{out}");
    let doc = check_json();
    if doc["hazards"].as_array().is_some_and(|a| !a.is_empty()) {
        assert!(out.contains("severity  finding"), "{out}");
        assert!(out.contains("what was found:"), "{out}");
        for id in ids_of(&doc["hazards"]) {
            assert!(out.contains(&format!("  {id}: ")), "{id} missing: {out}");
        }
    } else {
        assert!(out.contains("no known latency hazards found"), "{out}");
    }
}

#[test]
fn json_parses_and_every_finding_is_complete() {
    let doc = check_json();
    assert!(doc["hostname"].is_string());
    let hazards = doc["hazards"].as_array().expect("hazards");
    let mut last = 3;
    for h in hazards {
        for key in ["id", "title", "detail", "remedy"] {
            let text = h[key].as_str().unwrap_or_else(|| panic!("{key} in {h}"));
            assert!(!text.is_empty() && !text.contains('\n'), "{key} in {h}");
        }
        let rank = match h["severity"].as_str() {
            Some("hazard") => 2,
            Some("warning") => 1,
            Some("info") => 0,
            other => panic!("severity {other:?}"),
        };
        assert!(rank <= last, "not worst first: {doc}");
        last = rank;
    }
    let count = |s: &str| hazards.iter().filter(|h| h["severity"] == s).count();
    for s in ["hazard", "warning", "info"] {
        assert_eq!(doc["counts"][s].as_u64(), Some(count(s) as u64), "{s}");
    }
}

#[test]
fn strict_exits_3_when_a_hazard_is_found() {
    let doc = check_json();
    let hazards = doc["counts"]["hazard"].as_u64().unwrap();
    // This VM boots with preemption model `none`, which is a hazard.
    let model = latscope_platform::sysinfo::snapshot().preemption_model;
    if matches!(model.as_deref(), Some("none" | "voluntary")) {
        assert!(hazards >= 1, "{doc}");
    }
    for extra in [&[][..], &["--json"][..]] {
        let mut args = vec!["check", "--strict"];
        args.extend_from_slice(extra);
        let o = latscope(&args);
        if hazards > 0 {
            assert_eq!(o.status.code(), Some(3), "{args:?}: {}", stderr(&o));
            let err = stderr(&o);
            assert_eq!(err.lines().count(), 1, "{err}");
            assert!(err.contains("found (--strict)"), "{err}");
        } else {
            assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        }
        if extra == ["--json"] {
            // Still valid JSON on stdout when the exit code says hazard.
            let _: Value = serde_json::from_str(&stdout(&o)).unwrap();
        }
    }
}

#[test]
fn check_rejects_unknown_options_with_one_line() {
    let o = latscope(&["check", "--bogus"]);
    assert_one_line_error(&o, 2);
}

#[test]
fn every_run_stores_the_findings_and_show_prints_them() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let json = dir.path().join("run.json");
    let cpu = online()[0].to_string();
    let o = latscope(&[
        "run",
        "--duration",
        "1s",
        "--cpus",
        &cpu,
        "--quiet",
        "--store",
        store.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let run = read_json(&json);
    let stored = &run["system"]["hazards"];
    assert!(stored.is_array(), "{run}");
    // The same machine a second later: the same findings.
    let now = check_json();
    assert_eq!(ids_of(stored), ids_of(&now["hazards"]));
    // `show` reads them back from the store: its JSON holds them, and its
    // text has one line per hazard or warning under the header.
    let o = latscope(&["show", "--json", "--store", store.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let shown: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(&shown["system"]["hazards"], stored);
    let o = latscope(&["show", "--store", store.to_str().unwrap()]);
    let text = stdout(&o);
    let serious: Vec<&Value> = stored
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["severity"] != "info")
        .collect();
    if stored.as_array().is_some_and(|a| !a.is_empty()) {
        assert!(
            text.contains("hazards (latscope check explains each):"),
            "{text}"
        );
    }
    for h in serious {
        let line = format!(
            "  {:<7}  {}",
            h["severity"].as_str().unwrap(),
            h["title"].as_str().unwrap()
        );
        assert!(text.contains(&line), "{line} missing: {text}");
    }
}
