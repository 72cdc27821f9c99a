//! Bad input: one clear line, a non-zero exit code, no panic, and the runs
//! already stored stay intact.

#![allow(clippy::unwrap_used)]

use crate::common::*;
use serde_json::Value;

/// A store holding one good run, and its list as JSON.
fn store_with_one_run(dir: &std::path::Path) -> (String, Value) {
    let store = store_in(dir);
    let s = store.to_str().unwrap().to_string();
    let cpu = online()[0].to_string();
    let o = latscope(&[
        "run",
        "--duration",
        "1s",
        "--cpus",
        &cpu,
        "--store",
        &s,
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = latscope(&["list", "--json", "--store", &s]);
    (s, serde_json::from_slice(&o.stdout).unwrap())
}

#[test]
fn bad_run_arguments_fail_cleanly_and_keep_stored_runs() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let (s, before) = store_with_one_run(dir.path());
    let cases: &[(&[&str], &str)] = &[
        (&["--period", "0ms"], "greater than 0"),
        (&["--period", "-1ms"], "invalid duration"),
        (&["--period", "11s"], "over the limit"),
        (&["--period", "1"], "invalid duration"),
        (&["--duration", "abc"], "invalid duration"),
        (&["--duration", "5 parsecs"], "invalid duration"),
        (&["--cpus", "999"], "not online"),
        (&["--cpus", "0-"], "invalid CPU list"),
        (&["--cpus", "x"], "invalid CPU list"),
        (&["--priority", "0"], "out of range"),
        (&["--priority", "100"], "out of range"),
        (&["--policy", "sporadic"], "invalid value"),
        (&["--timer-api", "select"], "invalid value"),
        (&["--phase", "random"], "relative timers"),
        (&["--threshold", "fast"], "invalid duration"),
        (&["--checkpoint", "1ms"], "at least 100ms"),
        (
            &["--duration", "1ms", "--period", "10ms"],
            "shorter than one period",
        ),
        (
            &["--probe", "noise", "--runtime", "0ms"],
            "--runtime must be",
        ),
        (&["--probe", "noise", "--runtime", "20s"], "at most 10s"),
        (&["--probe", "noise", "--pause", "-1ms"], "invalid duration"),
        (
            &["--probe", "noise", "--gap-ratio", "1"],
            "--gap-ratio must be",
        ),
        (
            &["--probe", "noise", "--gap-min", "soon"],
            "invalid duration",
        ),
        (&["--fp"], "need --probe noise"),
        (&["--pause", "0"], "need --probe noise"),
        (&["--stacks"], "need --trace"),
        (&["--probe", "jitter"], "invalid value"),
        (&["--timer-slack", "0"], "write `default`"),
        (&["--timer-slack", "0us"], "write `default`"),
        (&["--timer-slack", "50"], "invalid duration"),
        (&["--timer-slack", "soon"], "invalid duration"),
        (&["--timer-slack", "5s"], "over the limit"),
        (
            &["--probe", "noise", "--timer-slack", "50us"],
            "needs --probe timer",
        ),
        (&["--probe", "app", "--buffers", "0"], "--buffers 0"),
        (&["--probe", "app", "--buffers", "65"], "--buffers 65"),
        (
            &["--probe", "app", "--compute", "1ms"],
            "must be shorter than the period",
        ),
        (&["--probe", "app", "--compute", "lots"], "invalid duration"),
        (
            &["--probe", "app", "--app", "walkman"],
            "unknown application",
        ),
        (&["--probe", "app", "--trace"], "--trace needs"),
        (&["--buffers", "3"], "need --probe app"),
        (&["--app", "modem"], "need --probe app"),
    ];
    for (extra, expect) in cases {
        let mut args = vec!["run", "--store", &s];
        args.extend_from_slice(extra);
        if !extra.contains(&"--duration") {
            args.extend(["--duration", "1s"]);
        }
        let o = latscope(&args);
        assert_one_line_error(&o, 2);
        assert!(stderr(&o).contains(expect), "{extra:?}: {}", stderr(&o));
    }
    let o = latscope(&["list", "--json", "--store", &s]);
    let after: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(before, after, "stored runs untouched");
}

#[test]
fn unusable_stores_fail_cleanly() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    // A directory that does not exist.
    let missing = dir.path().join("no/such/dir/x.db");
    let o = latscope(&[
        "run",
        "--duration",
        "1s",
        "--store",
        missing.to_str().unwrap(),
    ]);
    assert_one_line_error(&o, 1);
    assert!(stderr(&o).contains("does not exist"), "{}", stderr(&o));
    // A directory where the file should be.
    let o = latscope(&[
        "run",
        "--duration",
        "1s",
        "--store",
        dir.path().to_str().unwrap(),
    ]);
    assert_one_line_error(&o, 1);
    // A file that is not a latscope store: refused and left as it was.
    let text = dir.path().join("notes.txt");
    let content = "my notes, not a database\n".repeat(40);
    std::fs::write(&text, &content).unwrap();
    for cmd in [
        &["run", "--duration", "1s"][..],
        &["list"][..],
        &["show", "latest"][..],
    ] {
        let mut args = cmd.to_vec();
        args.extend(["--store", text.to_str().unwrap()]);
        let o = latscope(&args);
        assert_one_line_error(&o, 1);
        assert!(
            stderr(&o).contains("not a latscope store"),
            "{}",
            stderr(&o)
        );
    }
    assert_eq!(std::fs::read_to_string(&text).unwrap(), content);
    // Another program's SQLite database.
    let other = dir.path().join("other.db");
    {
        let c = rusqlite::Connection::open(&other).unwrap();
        c.execute_batch("CREATE TABLE recipes(name TEXT); INSERT INTO recipes VALUES ('soup');")
            .unwrap();
    }
    let o = latscope(&[
        "run",
        "--duration",
        "1s",
        "--store",
        other.to_str().unwrap(),
    ]);
    assert_one_line_error(&o, 1);
    assert!(
        stderr(&o).contains("not a latscope store"),
        "{}",
        stderr(&o)
    );
    // show/list on a store that does not exist: not created.
    let nothing = dir.path().join("nothing.db");
    let o = latscope(&["list", "--store", nothing.to_str().unwrap()]);
    assert_one_line_error(&o, 1);
    assert!(!nothing.exists());
}

#[test]
fn a_newer_schema_is_refused_and_left_intact() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let (s, _) = store_with_one_run(dir.path());
    {
        let c = rusqlite::Connection::open(&s).unwrap();
        c.execute_batch("PRAGMA user_version = 999;").unwrap();
    }
    for args in [
        vec!["run", "--duration", "1s", "--store", &s],
        vec!["show", "latest", "--store", &s],
        vec!["list", "--store", &s],
    ] {
        let o = latscope(&args);
        assert_one_line_error(&o, 1);
        assert!(stderr(&o).contains("upgrade latscope"), "{}", stderr(&o));
    }
    let c = rusqlite::Connection::open(&s).unwrap();
    let v: i64 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, 999);
    let runs: i64 = c
        .query_row("SELECT count(*) FROM runs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(runs, 1);
}

#[test]
fn unknown_runs_fail_cleanly() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let (s, _) = store_with_one_run(dir.path());
    let o = latscope(&["show", "42", "--store", &s]);
    assert_one_line_error(&o, 1);
    assert!(stderr(&o).contains("42"), "{}", stderr(&o));
    let o = latscope(&["show", "yesterday", "--store", &s]);
    assert_one_line_error(&o, 1);
    let o = latscope(&["frobnicate"]);
    assert_one_line_error(&o, 2);
    // A timer run is no application-probe run to hold a forecast against.
    let o = latscope(&["forecast", "1", "--against", "1", "--store", &s]);
    assert_one_line_error(&o, 2);
    assert!(stderr(&o).contains("no app-probe cell"), "{}", stderr(&o));
}

#[test]
fn unwritable_json_path_fails_before_measuring() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let s = store_in(dir.path());
    let bad = dir.path().join("no/dir/out.json");
    let started = std::time::Instant::now();
    let o = latscope(&[
        "run",
        "--duration",
        "30s",
        "--store",
        s.to_str().unwrap(),
        "--json",
        bad.to_str().unwrap(),
    ]);
    assert_one_line_error(&o, 1);
    assert!(started.elapsed().as_secs() < 10, "failed before measuring");
}

#[test]
fn export_and_episodes_of_an_untraced_run_fail_cleanly() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let (s, before) = store_with_one_run(dir.path());
    let cases: &[(&[&str], i32, &str)] = &[
        (
            &["export", "latest", "--episode", "1", "--format", "perfetto"],
            1,
            "was not traced",
        ),
        (
            &["export", "42", "--episode", "1", "--format", "perfetto"],
            1,
            "no run 42",
        ),
        (
            &["export", "latest", "--episode", "1", "--format", "pdf"],
            2,
            "invalid value 'pdf'",
        ),
        (
            &[
                "export",
                "latest",
                "--episode",
                "one",
                "--format",
                "perfetto",
            ],
            2,
            "invalid value 'one'",
        ),
        (
            &["export", "latest", "--format", "perfetto"],
            2,
            "--episode",
        ),
    ];
    for (args, code, expect) in cases {
        let mut all = args.to_vec();
        all.extend(["--store", &s]);
        let o = latscope(&all);
        assert_one_line_error(&o, *code);
        assert!(stderr(&o).contains(expect), "{args:?}: {}", stderr(&o));
    }
    // A store that is not there is not created.
    let nothing = dir.path().join("nothing.db");
    let o = latscope(&[
        "export",
        "latest",
        "--episode",
        "1",
        "--format",
        "perfetto",
        "--store",
        nothing.to_str().unwrap(),
    ]);
    assert_one_line_error(&o, 1);
    assert!(!nothing.exists());
    // show --episodes on an untraced run explains, and succeeds.
    let o = latscope(&["show", "latest", "--episodes", "--store", &s]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("was not traced"), "{}", stdout(&o));
    let o = latscope(&["list", "--json", "--store", &s]);
    let after: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(before, after, "stored runs untouched");
}

/// A password holding `/`, `?`, `#`, `@` or a space, which the PostgreSQL
/// client reads up to the `@`, is not printed in the error of a store it
/// cannot reach (the command line a run stores is checked in
/// `args::tests`).
#[test]
fn a_password_with_special_characters_is_never_printed() {
    for password in ["Qz/7k", "Qz?7k", "Qz#7k", "Qz 7k", "Qz@7k"] {
        let url = format!("postgres://ada:{password}@127.0.0.1:1/fleet");
        let o = latscope(&["list", "--store", &url]);
        assert_ne!(o.status.code(), Some(0));
        let err = stderr(&o);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(
            !err.contains("Qz") && !err.contains("7k"),
            "{password:?}: {err}"
        );
    }
}
