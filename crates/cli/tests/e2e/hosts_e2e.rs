//! Runs of several hosts in one store, on the real binary: `list` shows
//! each run's host and filters by host, kernel and age; `compare`, `show`
//! and the other commands take `HOST:latest`.

#![allow(clippy::unwrap_used)]

use crate::common::*;

fn short_run(store: &str) {
    let o = latscope(&["run", "--duration", "1s", "--quiet", "--store", store]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn list_filters_by_host_kernel_and_age_and_compare_takes_host_selectors() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let path = store_in(dir.path());
    let store = path.to_str().unwrap();
    short_run(store);
    short_run(store);
    // As if two boards had written to one store: the first run is board-a
    // on an older kernel, the second board-b.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute("UPDATE runs SET hostname = 'board-a' WHERE id = 1", [])
        .unwrap();
    conn.execute("UPDATE runs SET hostname = 'board-b' WHERE id = 2", [])
        .unwrap();
    conn.execute(
        "UPDATE systems SET kernel_release = '6.1.0-old' WHERE run_id = 1",
        [],
    )
    .unwrap();
    drop(conn);

    let all = stdout(&latscope(&["list", "--store", store]));
    assert!(
        all.contains("host") && all.contains("board-a") && all.contains("board-b"),
        "{all}"
    );

    let a = stdout(&latscope(&["list", "--host", "board-a", "--store", store]));
    assert!(a.contains("board-a") && !a.contains("board-b"), "{a}");

    let old = stdout(&latscope(&["list", "--kernel", "6.1", "--store", store]));
    assert!(old.contains("board-a") && !old.contains("board-b"), "{old}");

    let recent = latscope(&["list", "--since", "1h", "--json", "--store", store]);
    let doc: serde_json::Value = serde_json::from_str(&stdout(&recent)).unwrap();
    let hosts: Vec<&str> = doc
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["host"].as_str().unwrap())
        .collect();
    assert_eq!(hosts, ["board-a", "board-b"]);
    let none = stdout(&latscope(&["list", "--since", "1ns", "--store", store]));
    assert!(none.starts_with("no runs match"), "{none}");

    let o = latscope(&[
        "compare",
        "board-a:latest",
        "board-b:latest",
        "--store",
        store,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // --hosts: the latest run of each host, one row each.
    let o = latscope(&["compare", "--hosts", "--json", "--store", store]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(doc["runs"], serde_json::json!([1, 2]), "{doc}");
    let o = latscope(&["compare", "--hosts", "3", "--store", store]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = latscope(&["show", "board-b:latest", "--json", "--store", store]);
    let doc: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(doc["run_id"], 2, "{doc}");

    for (args, expect) in [
        (vec!["show", "board-c:latest"], "no run of host 'board-c'"),
        (
            vec!["show", "board-b:1"],
            "run 1 was measured on board-a, not board-b",
        ),
        (vec!["list", "--since", "soon"], "--since"),
    ] {
        let mut args = args;
        args.extend(["--store", store]);
        let o = latscope(&args);
        let err = stderr(&o);
        assert_ne!(o.status.code(), Some(0), "{args:?}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(expect), "{args:?}: {err}");
    }
}
