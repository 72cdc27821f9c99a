//! A PostgreSQL server that stops answering (its processes stopped with
//! SIGSTOP: the kernel still accepts connections and acknowledges data, so
//! neither TCP nor the server's own timeouts notice) while a run writes to
//! it. The run keeps measuring and buffers, reconnects once the server
//! answers again and stores what it buffered; stopped again and sent
//! SIGTERM, it exits within seconds with its data kept or rescued (the
//! rescue file holds every sample measured). On a
//! cluster of the test's own: the shared test server is never stopped.

#![allow(clippy::unwrap_used)]

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::common::pg_cluster::Cluster;
use crate::common::postgres::query_i64;
use crate::common::*;

/// The run's URL sets a statement timeout of 2 s and a connect timeout of
/// 2 s, as a user may (docs/store.md, "Timeouts"): a call's deadline is
/// then 3 s (the statement's timeout and a second), half the default's, and
/// the test half as long. The mechanism tested is the same.
const URL_TIMEOUTS: &str = "connect_timeout=2&options=-c%20statement_timeout%3D2s";
/// How long the server stays stopped in the first phase: longer than a
/// call's deadline (3 s) plus the pause before the next connect (5 s).
const STALL: Duration = Duration::from_secs(10);
/// How long the server stays stopped in the second phase before SIGTERM:
/// long enough for the next checkpoints (one a second) to have sent a call
/// the server leaves unanswered, so that the signal finds the run blocked
/// in that call (whose deadline is 3 s) or failing at once after it.
const STOPPED_BEFORE_TERM: Duration = Duration::from_secs(3);
/// How long latscope may take to exit on SIGTERM while the server is
/// stopped.
const EXIT_BOUND: Duration = Duration::from_secs(10);

/// Timeline seconds stored (0 before the run made its tables).
fn stored_seconds(url: &str) -> i64 {
    let mut c = ::postgres::Client::connect(url, ::postgres::NoTls).expect("the test cluster");
    c.query_one(
        "SELECT COALESCE(CAST(sum(seconds) AS BIGINT), 0) FROM timeline_chunks \
         WHERE metric = 'timer.latency'",
        &[],
    )
    .map_or(0, |r| r.get(0))
}

fn wait_exit(child: &mut Child, bound: Duration) -> Option<Duration> {
    let t = Instant::now();
    while t.elapsed() < bound {
        if child.try_wait().unwrap().is_some() {
            return Some(t.elapsed());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

#[test]
fn a_server_that_stops_answering_holds_up_neither_the_run_nor_its_exit() {
    if !is_root() {
        println!("skipped: needs root to measure and to run a PostgreSQL cluster");
        return;
    }
    let Some(pg) = Cluster::start() else { return };
    let _g = shared();
    let cwd = tempfile::tempdir().unwrap();
    let url = format!("{}?{URL_TIMEOUTS}", pg.url);
    let u = url.as_str();
    let mut run = bin()
        .args([
            "run",
            "--duration",
            "90s",
            "--checkpoint",
            "1s",
            "--quiet",
            "--store",
            u,
        ])
        .current_dir(cwd.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while stored_seconds(u) == 0 {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "no checkpoint stored"
        );
        assert!(run.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(Duration::from_millis(200));
    }
    let cpus = query_i64(
        u,
        "SELECT count(DISTINCT cpu) FROM timeline_chunks WHERE metric = 'timer.latency'",
    );

    // Phase 1: the server stops answering for longer than a call's deadline.
    let before = stored_seconds(u);
    pg.signal("STOP");
    std::thread::sleep(STALL);
    assert!(
        run.try_wait().unwrap().is_none(),
        "the run ended while the server was stopped"
    );
    pg.signal("CONT");
    let resumed = Instant::now();
    // Within a few checkpoints it reconnects and stores what it measured
    // meanwhile: every second of the stall, on every CPU.
    let want = before + STALL.as_secs() as i64 * cpus;
    let mut after = stored_seconds(u);
    while after < want {
        assert!(
            resumed.elapsed() < Duration::from_secs(20),
            "{after} timeline seconds stored 20 s after the server answered again, \
             want {want} ({before} before a stall of {STALL:?} on {cpus} CPUs)"
        );
        std::thread::sleep(Duration::from_millis(500));
        after = stored_seconds(u);
    }
    println!(
        "stall of {STALL:?}: {before} seconds stored before, {after} {:?} after the server answered again",
        resumed.elapsed()
    );

    // Phase 2: stopped again, then SIGTERM: latscope exits within seconds.
    pg.signal("STOP");
    std::thread::sleep(STOPPED_BEFORE_TERM);
    let measured = t0.elapsed();
    let ok = std::process::Command::new("kill")
        .args(["-TERM", &run.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let exited = wait_exit(&mut run, Duration::from_secs(60));
    pg.signal("CONT");
    let o = run.wait_with_output().unwrap();
    println!(
        "exit {:?} after SIGTERM took {exited:?}; it said: {}",
        o.status.code(),
        stderr(&o).trim()
    );
    let exited = exited.expect("latscope did not exit within 60 s of SIGTERM");
    assert!(
        exited < EXIT_BOUND,
        "latscope took {exited:?} to exit on SIGTERM with the server stopped"
    );

    // Its data is kept: in the store, or in the rescue file, which imports.
    let rescue: Vec<_> = std::fs::read_dir(cwd.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("latscope-rescue-"))
        })
        .collect();
    if let Some(file) = rescue.first() {
        // The rescue is the run's JSON: every sample measured, the stalls'
        // included (at least 500 wake-ups a second of each CPU at the
        // default 1 ms interval, which takes 1,000).
        assert!(stderr(&o).contains("latscope-rescue-"), "{}", stderr(&o));
        let doc = read_json(file);
        assert_eq!(doc["schema"], "latscope.run.v1");
        let count: u64 = metrics(&doc, "timer.latency")
            .iter()
            .filter_map(|m| m["count"].as_u64())
            .sum();
        let want = (measured.as_secs().saturating_sub(5)) * 500 * cpus as u64;
        println!("rescued: {} with {count} timer samples", file.display());
        assert!(
            count >= want,
            "the rescue holds {count} samples, want {want} ({measured:?} on {cpus} CPUs)"
        );
    } else {
        let total = stored_seconds(u);
        println!("no rescue file; {total} seconds stored");
        assert!(
            total >= after + STOPPED_BEFORE_TERM.as_secs() as i64 * cpus,
            "no rescue file and only {total} seconds stored (had {after} before the second stall)"
        );
    }
}
