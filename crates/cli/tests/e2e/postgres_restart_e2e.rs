//! A PostgreSQL server restarted while a run writes to it: the run goes on
//! measuring, its connection is opened again, and every checkpoint is
//! stored. Alone on the server (`fresh_database_alone`): the restart cuts
//! every connection to it, other tests' too.

#![allow(clippy::unwrap_used)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::postgres::{fresh_database_alone, query_i64};
use crate::common::*;

/// `pg_ctl ACTION` on the test server (as its user: needs root).
fn server(action: &str) {
    let ctl = std::env::var("LATSCOPE_TEST_PG_CTL").unwrap();
    let data = std::env::var("LATSCOPE_TEST_PG_DATA").unwrap();
    let t0 = Instant::now();
    let status = Command::new("runuser")
        .args([
            "-u", "postgres", "--", &ctl, "-D", &data, "-w", action, "-m", "fast",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "pg_ctl {action}: {status}");
    println!("pg_ctl {action} took {:?}", t0.elapsed());
}

#[test]
fn a_server_restarted_and_a_server_down_for_seconds_during_a_run_lose_nothing() {
    let Some(db) = fresh_database_alone() else {
        return;
    };
    if std::env::var_os("LATSCOPE_TEST_PG_CTL").is_none() || !is_root() {
        println!("skipped: needs root and PostgreSQL's pg_ctl (LATSCOPE_TEST_PG_CTL from .ci/postgres) to restart the server");
        return;
    }
    let _g = shared();
    let u = db.url.as_str();
    let run = bin()
        .args([
            "run",
            "--duration",
            "10s",
            "--checkpoint",
            "1s",
            "--quiet",
            "--store",
            u,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    // A restart between two checkpoints: the connection is found closed
    // and opened again before the next one.
    std::thread::sleep(Duration::from_millis(2_500));
    server("restart");
    // Then the server away for about three checkpoints: they fail, the run
    // keeps their timeline seconds, and the first after the server is back
    // carries them.
    std::thread::sleep(Duration::from_millis(5_000).saturating_sub(t0.elapsed()));
    server("stop");
    std::thread::sleep(Duration::from_millis(3_000));
    server("start");
    let o = run.wait_with_output().unwrap();
    println!("the run said: {}", stderr(&o).trim());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        query_i64(u, "SELECT count(*) FROM runs WHERE status = 'complete'"),
        1
    );
    // Every second of both CPUs is stored: the checkpoints during the
    // restart were carried by later ones.
    let cpus = query_i64(
        u,
        "SELECT count(DISTINCT cpu) FROM metrics WHERE name = 'timer.latency' AND kind = 'raw'",
    );
    let seconds = query_i64(
        u,
        "SELECT CAST(sum(seconds) AS BIGINT) FROM timeline_chunks WHERE metric = 'timer.latency'",
    );
    println!("{seconds} timeline seconds stored for {cpus} CPUs over 10 s");
    assert!(
        seconds >= 10 * cpus,
        "{seconds} seconds stored, {} measured",
        10 * cpus
    );
    let samples = query_i64(
        u,
        "SELECT CAST(sum(samples) AS BIGINT) FROM metrics WHERE name = 'timer.latency' AND kind = 'raw'",
    );
    assert!(samples >= 10 * cpus * 900, "{samples} samples");
    // The run's notes say what happened.
    let o = latscope(&["show", "1", "--json", "--store", u]);
    let doc: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let notes = doc["notes"].to_string();
    println!("notes: {notes}");
    assert!(notes.contains("opened again"), "{notes}");
    assert!(notes.contains("nothing was lost"), "{notes}");
}
