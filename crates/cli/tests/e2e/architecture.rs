//! docs/architecture.md's table of crate dependencies is the workspace's:
//! `cargo metadata` lists the same dependencies between latscope's crates,
//! every dependency points to a lower layer, the crates that read stored
//! runs never depend on the measuring ones, and the ones that record never
//! on the analysis.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use serde_json::Value;

type Graph = BTreeMap<String, BTreeSet<String>>;

/// Crate name without the `latscope-` prefix (`latscope` itself is `cli`).
fn short(name: &str) -> Option<String> {
    match name {
        "latscope" => Some("cli".into()),
        _ => name.strip_prefix("latscope-").map(str::to_string),
    }
}

/// Every workspace crate and its normal dependencies on the others.
fn from_metadata() -> Graph {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(&root)
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut graph = Graph::new();
    for p in doc["packages"].as_array().unwrap() {
        let Some(name) = short(p["name"].as_str().unwrap()) else {
            continue;
        };
        let deps = p["dependencies"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["kind"].is_null())
            .filter_map(|d| short(d["name"].as_str().unwrap()))
            .collect();
        graph.insert(name, deps);
    }
    graph
}

/// The documented table: crate → (layer, dependencies).
fn from_docs() -> BTreeMap<String, (u32, BTreeSet<String>)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/architecture.md");
    let text = std::fs::read_to_string(path).unwrap();
    let begin = text
        .find("<!-- crate-dependencies: begin -->")
        .expect("the table's begin marker");
    let end = text
        .find("<!-- crate-dependencies: end -->")
        .expect("the table's end marker");
    let mut table = BTreeMap::new();
    for line in text[begin..end].lines().filter(|l| l.starts_with("| ")) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let [name, layer, deps] = cells[..] else {
            panic!("a row of three cells: {line}");
        };
        let Ok(layer) = layer.parse::<u32>() else {
            continue; // the header
        };
        let deps = deps
            .split(',')
            .map(str::trim)
            .filter(|d| !d.is_empty() && *d != "—")
            .map(str::to_string)
            .collect();
        table.insert(name.to_string(), (layer, deps));
    }
    table
}

#[test]
fn the_documented_crate_dependencies_are_the_workspaces() {
    let _g = crate::common::serial();
    let actual = from_metadata();
    let documented = from_docs();
    assert!(actual.len() >= 13, "{actual:?}");
    assert_eq!(
        actual.keys().collect::<Vec<_>>(),
        documented.keys().collect::<Vec<_>>(),
        "the table lists every crate of the workspace"
    );
    for (name, deps) in &actual {
        let (_, doc_deps) = &documented[name];
        assert_eq!(
            deps, doc_deps,
            "{name}'s dependencies: cargo metadata (left) against docs/architecture.md (right)"
        );
    }
}

#[test]
fn dependencies_point_down_the_layers() {
    let _g = crate::common::serial();
    let documented = from_docs();
    for (name, (layer, deps)) in &documented {
        for d in deps {
            let (below, _) = documented
                .get(d)
                .unwrap_or_else(|| panic!("{name} depends on {d}, which the table lacks"));
            assert!(
                below < layer,
                "{name} (layer {layer}) depends on {d} (layer {below})"
            );
        }
    }
    // A stored run is read, rendered and imported on any machine.
    for reader in ["store", "report", "import"] {
        let (_, deps) = &documented[reader];
        for measuring in ["platform", "probes", "trace", "workloads", "engine"] {
            assert!(!deps.contains(measuring), "{reader} depends on {measuring}");
        }
    }
    // Recording needs the recording core, not the analysis.
    for recorder in ["probes", "store", "import", "engine", "monitor"] {
        let (_, deps) = &documented[recorder];
        assert!(!deps.contains("stats"), "{recorder} depends on stats");
    }
}
