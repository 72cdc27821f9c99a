//! Every command on a PostgreSQL store, end to end on the real binary and a
//! real server (`LATSCOPE_TEST_POSTGRES`; `.ci/postgres` starts one): runs,
//! imports, monitors and micro runs stored there, read back by list, show,
//! report, compare, forecast and export; eight processes writing at once;
//! push and pull between SQLite and PostgreSQL, a push killed part-way; and
//! the password never shown. (A server restart during a run is
//! `postgres_restart_e2e.rs`, which has the server to itself: it would cut
//! these tests' connections.)

#![allow(clippy::unwrap_used)]

use std::process::{Output, Stdio};
use std::time::Duration;

use crate::common::postgres::{fresh_database, password, query_i64};
use crate::common::*;

/// Runs latscope; asserts it succeeded and did not show the password.
fn ok(args: &[&str], secret: &str) -> Output {
    let o = latscope(args);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    no_secret(&o, secret, args);
    o
}

fn no_secret(o: &Output, secret: &str, what: &[&str]) {
    if secret.is_empty() {
        return;
    }
    assert!(!stdout(o).contains(secret), "{what:?} shows the password");
    assert!(!stderr(o).contains(secret), "{what:?} shows the password");
}

#[test]
fn every_command_works_on_a_postgres_store_and_never_shows_the_password() {
    let Some(db) = fresh_database() else { return };
    let _g = shared();
    let secret = password(&db.url).unwrap_or_default();
    let u = db.url.as_str();
    let dir = tempfile::tempdir().unwrap();

    ok(
        &["run", "--duration", "2s", "--quiet", "--store", u],
        &secret,
    );
    ok(
        &["run", "--duration", "2s", "--quiet", "--store", u],
        &secret,
    );
    ok(
        &[
            "import",
            &import_fixture("cyclictest-h50.json"),
            "--store",
            u,
        ],
        &secret,
    );
    ok(
        &[
            "micro",
            "--quick",
            "--bench",
            "syscall.getppid",
            "--quiet",
            "--store",
            u,
        ],
        &secret,
    );
    // A monitor writes its windows there too.
    let mut d = crate::common::daemon::Daemon::start(&["--persist", "1s", "--store", u]);
    // Until its first checkpoint has stored a window (every second).
    let t0 = std::time::Instant::now();
    while query_i64(u, "SELECT count(*) FROM monitor_windows") == 0 {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "no monitor window stored in 20 s: {:?}",
            d.lines.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    d.signal("TERM");
    assert_eq!(d.wait(Duration::from_secs(20)), Some(0));
    assert!(
        !d.lines
            .lock()
            .unwrap()
            .iter()
            .any(|l| !secret.is_empty() && l.contains(&secret)),
        "the monitor shows the password"
    );
    assert!(query_i64(u, "SELECT count(*) FROM monitor_windows") > 0);

    let list = stdout(&ok(&["list", "--store", u], &secret));
    assert_eq!(
        list.lines()
            .filter(|l| l.trim_start().starts_with(char::is_numeric))
            .count(),
        5,
        "{list}"
    );
    let shown = stdout(&ok(&["show", "1", "--store", u], &secret));
    assert!(shown.contains("timer.latency"), "{shown}");
    let json: serde_json::Value = serde_json::from_str(&stdout(&ok(
        &["show", "1", "--json", "--store", u],
        &secret,
    )))
    .unwrap();
    let line = json["command_line"].to_string();
    if !secret.is_empty() {
        assert!(
            line.contains("***"),
            "the command line keeps no password: {line}"
        );
    }
    let html = dir.path().join("r.html");
    ok(
        &[
            "report",
            "1",
            "--html",
            html.to_str().unwrap(),
            "--store",
            u,
        ],
        &secret,
    );
    assert!(std::fs::metadata(&html).unwrap().len() > 10_000);
    let cmp = stdout(&ok(&["compare", "1", "2", "--store", u], &secret));
    assert!(cmp.contains("timer.latency"), "{cmp}");
    ok(&["forecast", "1", "--store", u], &secret);
    ok(
        &["export", "3", "--format", "rt-tests-json", "--store", u],
        &secret,
    );
    ok(&["show", "4", "--store", u], &secret);
    // The environment names the store as well; --help does not show it.
    let o = bin()
        .args(["list"])
        .env("LATSCOPE_STORE", u)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    no_secret(&o, &secret, &["list with LATSCOPE_STORE"]);
    let o = bin()
        .args(["list", "--help"])
        .env("LATSCOPE_STORE", u)
        .output()
        .unwrap();
    no_secret(&o, &secret, &["list --help with LATSCOPE_STORE"]);
    // What the store holds: no password anywhere in runs' rows.
    if !secret.is_empty() {
        let leaks = query_i64(
            u,
            &format!(
                "SELECT count(*) FROM runs WHERE command_line LIKE '%{secret}%' OR notes LIKE '%{secret}%'"
            ),
        );
        assert_eq!(leaks, 0, "a run keeps the password");
    }
}

#[test]
fn eight_processes_writing_runs_at_once_lose_nothing() {
    let Some(db) = fresh_database() else { return };
    let _g = shared();
    let u = db.url.as_str();
    let children: Vec<_> = (0..8)
        .map(|_| {
            bin()
                .args([
                    "run",
                    "--duration",
                    "3s",
                    "--checkpoint",
                    "500ms",
                    "--quiet",
                ])
                .args(["--store", u])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    assert_eq!(query_i64(u, "SELECT count(*) FROM runs"), 8);
    assert_eq!(
        query_i64(u, "SELECT count(*) FROM runs WHERE status = 'complete'"),
        8
    );
    assert_eq!(query_i64(u, "SELECT count(DISTINCT uuid) FROM runs"), 8);
    // Every second of every CPU of every run is stored once: each run's
    // timer.latency timeline covers its cell's length without a gap or a
    // second written twice.
    let cpus = query_i64(
        u,
        "SELECT count(DISTINCT cpu) FROM metrics WHERE name = 'timer.latency' AND kind = 'raw'",
    );
    let expect = 8 * cpus * 3;
    let seconds = query_i64(
        u,
        "SELECT CAST(sum(seconds) AS BIGINT) FROM timeline_chunks WHERE metric = 'timer.latency'",
    );
    let distinct = query_i64(
        u,
        "SELECT count(*) FROM (SELECT DISTINCT cell_id, cpu, first_second FROM timeline_chunks \
         WHERE metric = 'timer.latency') AS starts",
    );
    let chunks = query_i64(
        u,
        "SELECT count(*) FROM timeline_chunks WHERE metric = 'timer.latency'",
    );
    println!("8 runs: {seconds} timeline seconds in {chunks} chunks, expected {expect}");
    assert!(
        seconds >= expect && seconds <= expect + 8 * cpus,
        "{seconds} stored seconds for {expect} measured"
    );
    assert_eq!(distinct, chunks, "a chunk stored twice");
    let o = latscope(&["list", "--store", u]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// Per run uuid: its number of metric rows (either engine).
fn metric_rows(store: &str) -> Vec<(String, i64)> {
    const SQL: &str = "SELECT r.uuid, count(m.id) FROM runs r JOIN cells c ON c.run_id = r.id \
                       LEFT JOIN metrics m ON m.cell_id = c.id GROUP BY r.uuid ORDER BY r.uuid";
    if store.starts_with("postgres") {
        let mut c = ::postgres::Client::connect(store, ::postgres::NoTls).unwrap();
        c.query(SQL, &[])
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect()
    } else {
        let conn = rusqlite::Connection::open(store).unwrap();
        let mut stmt = conn.prepare(SQL).unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }
}

/// A SQLite store of `runs` imported runs, cyclictest's and oslat's in
/// turn: each file read once and stored as `latscope import` stores it
/// (`import_file`, then `insert_run`, which gives each run a uuid of its
/// own), in this process rather than by 120 runs of the binary, which
/// took most of the test's time.
fn local_runs(store: &std::path::Path, runs: i64) {
    let files: Vec<_> = ["cyclictest-h50.json", "oslat.json"]
        .iter()
        .map(|f| {
            let path = std::path::PathBuf::from(import_fixture(f));
            let mut req = latscope_import::FileRequest::new(&path);
            req.command_line = vec![
                "latscope".into(),
                "import".into(),
                path.display().to_string(),
            ];
            req.latscope_version = env!("CARGO_PKG_VERSION");
            latscope_import::import_file(&req).unwrap()
        })
        .collect();
    let mut st = latscope_store::Store::open(store).unwrap();
    for i in 0..runs {
        st.insert_run(&files[(i % 2) as usize].run).unwrap();
    }
}

#[test]
fn a_push_to_postgres_killed_part_way_leaves_only_whole_runs_and_pull_brings_them_back() {
    let Some(db) = fresh_database() else { return };
    let _g = shared();
    let secret = password(&db.url).unwrap_or_default();
    let u = db.url.as_str();
    let dir = tempfile::tempdir().unwrap();
    let local = store_in(dir.path());
    let l = local.to_str().unwrap();
    let runs = 120;
    local_runs(&local, runs);
    let mut child = bin()
        .args(["push", "--to", u, "--store", l])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(400));
    let _ = child.kill(); // SIGKILL
    let _ = child.wait();
    let tables = query_i64(
        u,
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'runs'",
    );
    let before = if tables > 0 {
        query_i64(u, "SELECT count(*) FROM runs")
    } else {
        0
    };
    println!("killed after 400 ms: {before} of {runs} runs copied");
    if before > 0 {
        let full = metric_rows(l);
        for (uuid, n) in metric_rows(u) {
            let want = full.iter().find(|(x, _)| *x == uuid).unwrap().1;
            assert_eq!(n, want, "run {uuid} copied in part");
        }
        let bare = query_i64(
            u,
            "SELECT count(*) FROM runs r WHERE NOT EXISTS (SELECT 1 FROM cells c WHERE c.run_id = r.id)",
        );
        assert_eq!(bare, 0, "a run without its cells");
    }
    let o = ok(&["push", "--to", u, "--store", l], &secret);
    assert!(
        stdout(&o).contains(&format!("{} copied, {before} already there", runs - before)),
        "{}",
        stdout(&o)
    );
    assert!(stdout(&o).contains(&db.shown), "{}", stdout(&o));
    assert_eq!(metric_rows(l), metric_rows(u));
    // Pushing again stores nothing twice.
    let o = ok(&["push", "--to", u, "--store", l], &secret);
    assert!(
        stdout(&o).contains(&format!("0 copied, {runs} already there")),
        "{}",
        stdout(&o)
    );
    // Pull back into a new SQLite store: the same runs, read the same.
    let back = dir.path().join("back.db");
    let b = back.to_str().unwrap();
    let o = ok(&["pull", "--from", u, "--store", b], &secret);
    assert!(
        stdout(&o).contains(&format!("{runs} copied")),
        "{}",
        stdout(&o)
    );
    assert_eq!(metric_rows(l), metric_rows(b));
    let a = stdout(&ok(&["show", "7", "--store", l], &secret));
    let c = stdout(&ok(&["show", "7", "--store", b], &secret));
    assert_eq!(a, c);
}

#[test]
fn a_wrong_password_or_an_unreachable_server_is_one_line() {
    let Some(db) = fresh_database() else { return };
    let Some(secret) = password(&db.url) else {
        return;
    };
    let wrong = db.url.replace(&format!(":{secret}@"), ":wrong-4711@");
    for (url, says) in [
        (wrong.as_str(), "password authentication failed"),
        ("postgres://latscope:wrong-4711@127.0.0.1:1/x", "refused"),
    ] {
        for args in [
            vec!["list", "--store", url],
            vec!["run", "--duration", "1s", "--store", url],
        ] {
            let o = latscope(&args);
            assert_ne!(o.status.code(), Some(0), "{args:?}");
            let err = stderr(&o);
            assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
            assert!(err.contains(says), "{args:?}: {err}");
            assert!(!err.contains("wrong-4711"), "{args:?}: {err}");
            assert!(!stdout(&o).contains("wrong-4711"), "{args:?}");
        }
    }
}
