//! `latscope push` and `latscope pull` on the real binary: each run copied
//! once, whole or not at all, even when the push is killed part-way.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use crate::common::*;

fn count(store: &Path, sql: &str) -> i64 {
    let conn = rusqlite::Connection::open(store).unwrap();
    conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

/// Per run uuid: its number of metric rows.
fn metric_rows(store: &Path) -> Vec<(String, i64)> {
    let conn = rusqlite::Connection::open(store).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT r.uuid, count(m.id) FROM runs r JOIN cells c ON c.run_id = r.id \
             LEFT JOIN metrics m ON m.cell_id = c.id GROUP BY r.uuid ORDER BY r.uuid",
        )
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn push_copies_each_run_once_and_pull_brings_runs_back() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let local = store_in(dir.path());
    let shared = dir.path().join("shared.db");
    let l = local.to_str().unwrap();
    let s = shared.to_str().unwrap();
    let o = latscope(&["run", "--duration", "1s", "--quiet", "--store", l]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = latscope(&[
        "import",
        &import_fixture("cyclictest-h50.json"),
        "--store",
        l,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));

    let o = latscope(&["push", "--to", s, "--store", l]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("2 copied, 0 already there"),
        "{}",
        stdout(&o)
    );
    let o = latscope(&["push", "--to", s, "--store", l]);
    assert!(
        stdout(&o).contains("0 copied, 2 already there"),
        "{}",
        stdout(&o)
    );
    assert_eq!(count(&shared, "SELECT count(*) FROM runs"), 2);
    assert_eq!(metric_rows(&local), metric_rows(&shared));
    // The copy reads like the original.
    let a = stdout(&latscope(&["show", "1", "--store", l]));
    let b = stdout(&latscope(&["show", "1", "--store", s]));
    assert_eq!(a, b);

    // Pull one run into a third store, by selector.
    let third = dir.path().join("third.db");
    let t = third.to_str().unwrap();
    let o = latscope(&["pull", "--from", s, "latest", "--store", t]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("1 copied"), "{}", stdout(&o));
    assert_eq!(count(&third, "SELECT count(*) FROM runs"), 1);

    // Bad targets: one line each.
    for (args, expect) in [
        (
            vec![
                "push",
                "--to",
                "postgres://u:s3cret@127.0.0.1:1/db",
                "--store",
                l,
            ],
            "postgres://u@127.0.0.1:1/db",
        ),
        (
            vec!["pull", "--from", "/nonexistent/x.db", "--store", t],
            "x.db",
        ),
        (vec!["push", "--to", s, "99", "--store", l], "99"),
    ] {
        let o = latscope(&args);
        let err = stderr(&o);
        assert_ne!(o.status.code(), Some(0), "{args:?}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(expect), "{args:?}: {err}");
        assert!(!err.contains("s3cret"), "the password is shown: {err}");
    }
}

#[test]
fn a_push_killed_part_way_leaves_only_whole_runs_and_a_second_push_completes_it() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let local = store_in(dir.path());
    let shared = dir.path().join("shared.db");
    let l = local.to_str().unwrap();
    let s = shared.to_str().unwrap();
    let runs = 120;
    for i in 0..runs {
        let f = if i % 2 == 0 {
            "cyclictest-h50.json"
        } else {
            "oslat.json"
        };
        let o = latscope(&["import", &import_fixture(f), "--store", l]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    let mut child = bin()
        .args(["push", "--to", s, "--store", l])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(150));
    let _ = child.kill();
    let _ = child.wait();
    let before: i64 = if shared.exists() {
        count(&shared, "SELECT count(*) FROM runs")
    } else {
        0
    };
    println!("killed after 150 ms: {before} of {runs} runs copied");
    // Whatever was copied is whole: each run has all its metric rows.
    if before > 0 {
        let full = metric_rows(&local);
        for (uuid, n) in metric_rows(&shared) {
            let want = full.iter().find(|(u, _)| *u == uuid).unwrap().1;
            assert_eq!(n, want, "run {uuid} copied in part");
        }
        let cells = count(
            &shared,
            "SELECT count(*) FROM runs r WHERE NOT EXISTS (SELECT 1 FROM cells c WHERE c.run_id = r.id)",
        );
        assert_eq!(cells, 0, "a run without its cells");
    }
    let o = latscope(&["push", "--to", s, "--store", l]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains(&format!("{} copied, {before} already there", runs - before)),
        "{}",
        stdout(&o)
    );
    assert_eq!(metric_rows(&local), metric_rows(&shared));
}
