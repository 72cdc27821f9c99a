//! Store faults on the real binary: a disk that fills up during a run, a
//! store locked by another process, a file that is not a store, a truncated
//! store, a store from a newer latscope. Each gives one clear error line and
//! a non-zero exit, never a panic, and nothing already stored is lost
//! (docs/concepts.md, "When the store fails").

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::common::*;
use serde_json::Value;

/// Runs latscope in `cwd` (where a rescue file may land).
fn latscope_in(cwd: &Path, args: &[&str]) -> Output {
    bin()
        .current_dir(cwd)
        .args(args)
        .output()
        .expect("run latscope")
}

/// Asserts one error line, `latscope: error: ...`, with exit `code`; returns it.
fn error_line(o: &Output, code: i32) -> String {
    assert_one_line_error(o, code);
    let line = stderr(o).trim().to_string();
    assert!(line.starts_with("latscope: error: "), "{line}");
    line
}

/// A store in `dir` holding one complete 1 s run on the first CPU.
fn store_with_one_run(dir: &Path) -> PathBuf {
    let store = store_in(dir);
    let cpu = online()[0].to_string();
    let o = latscope_in(
        dir,
        &[
            "run",
            "--duration",
            "1s",
            "--cpus",
            &cpu,
            "--store",
            store.to_str().unwrap(),
            "--quiet",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    store
}

/// `latscope show RUN --json` of a run that must load.
fn show_json(store: &Path, run: &str) -> Value {
    let o = latscope(&["show", run, "--store", store.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(0), "show {run}: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn integrity(store: &Path) -> String {
    let c = rusqlite::Connection::open(store).unwrap();
    c.query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap()
}

/// The rescue files in `dir`.
fn rescue_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("latscope-rescue-"))
        })
        .collect()
}

/// A small tmpfs, unmounted when dropped (also when the test fails).
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// `None` (with a visible line) when it cannot be mounted.
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "none"])
            .arg(dir.path())
            .output()
            .is_ok_and(|o| o.status.success());
        if !ok {
            eprintln!("skipped: needs root to mount a tmpfs");
            return None;
        }
        Some(Tmpfs { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let unmounted = Command::new("umount")
            .arg(self.dir.path())
            .status()
            .is_ok_and(|s| s.success());
        if !unmounted {
            let _ = Command::new("umount")
                .arg("-l")
                .arg(self.dir.path())
                .status();
        }
    }
}

/// Fills the file system of `dir` until a write fails, then gives back
/// `free` bytes: the disk is full but for `free`.
fn fill_leaving(dir: &Path, free: u64) {
    use std::io::Write;
    let path = dir.join("filler");
    let mut f = std::fs::File::create(&path).unwrap();
    let block = [0u8; 4096];
    let mut written = 0u64;
    while f.write_all(&block).is_ok() {
        written += block.len() as u64;
    }
    f.set_len(written.saturating_sub(free)).unwrap();
}

/// What is left free on a full tmpfs for the run that fills it: room for the
/// new run, the 128 KiB the store holds back for the run's end, and a few
/// checkpoints of a 200 µs timer on one CPU (each grows the WAL by about
/// 64 KiB), but not for 6 s of them (about 450 KiB).
const FREE_FOR_RUN: u64 = (288 + 128) * 1024;

#[test]
fn a_disk_full_during_a_run_keeps_the_store_and_rescues_the_whole_run() {
    let _g = serial();
    let cpu = online()[0].to_string();
    let Some(fs) = Tmpfs::mount("1200k") else {
        return;
    };
    let cwd = tempfile::tempdir().unwrap();
    let store = store_with_one_run(fs.path());
    let s = store.to_str().unwrap();
    let first = show_json(&store, "1");
    fill_leaving(fs.path(), FREE_FOR_RUN);

    let json = cwd.path().join("out.json");
    let o = latscope_in(
        cwd.path(),
        &[
            "run",
            "--duration",
            "6s",
            "--checkpoint",
            "1s",
            "--period",
            "200us",
            "--cpus",
            &cpu,
            "--store",
            s,
            "--json",
            json.to_str().unwrap(),
        ],
    );
    let line = error_line(&o, 1);
    eprintln!("latscope printed: {line}");
    assert!(line.contains("the disk is full"), "{line}");
    assert!(
        line.contains("the store keeps the run up to its last good checkpoint"),
        "{line}"
    );
    // The summary of the whole run is still printed.
    assert!(stdout(&o).contains("timer.latency"), "{}", stdout(&o));

    // The rescue file: named in the line, the whole run as `--json` writes
    // it.
    let named = line
        .split("the whole run is in ")
        .nth(1)
        .unwrap_or_else(|| panic!("no rescue path in: {line}"));
    let rescue = PathBuf::from(named);
    assert!(rescue.is_absolute(), "{named}");
    assert!(rescue.is_file(), "no rescue file at {}", rescue.display());
    // Beside the store when it fits there, else in the current directory.
    // Which one depends on how much the failed checkpoint left free: the
    // 128 KiB the store held back is released for the run's end, and seen
    // once in CI, the rescue file then fitted beside the store.
    let parent = rescue
        .canonicalize()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let beside = fs.path().canonicalize().unwrap();
    let fallback = cwd.path().canonicalize().unwrap();
    assert!(
        parent == beside || parent == fallback,
        "rescue file in {}",
        parent.display()
    );
    if parent == fallback {
        assert!(
            rescue_files(fs.path()).is_empty(),
            "nothing left on the full disk"
        );
    }
    let doc = read_json(&rescue);
    assert_eq!(read_json(&json), doc, "--json holds the same run");
    assert_eq!(doc["schema"], "latscope.run.v1");
    assert_eq!(doc["status"], "complete");
    let duration = doc["cells"][0]["duration_ns"].as_u64().unwrap();
    assert!(duration >= 5_500_000_000, "rescued {duration} ns of 6 s");
    let lat = metrics(&doc, "timer.latency");
    assert_eq!(lat.len(), 1, "one CPU measured");
    let samples = lat[0]["count"].as_u64().unwrap();
    assert!(samples >= 27_000, "{samples} samples of about 30,000");

    // The store: intact, the first run as it was, the failed run kept up
    // to its last good checkpoint.
    assert_eq!(integrity(&store), "ok");
    assert_eq!(show_json(&store, "1"), first, "the first run is intact");
    let run = doc["run_id"].as_u64().unwrap();
    assert_eq!(run, 2, "the rescue file carries the run's id in the store");
    let stored = show_json(&store, "2");
    let stored_ns = stored["cells"][0]["duration_ns"].as_u64().unwrap_or(0);
    assert!(
        stored_ns < duration,
        "the store has {stored_ns} ns, the rescue file {duration} ns"
    );
    // The space the store held back for the end of the run (128 KiB)
    // fits the final status: the stored run is failed, with its cause.
    let notes = stored["notes"].to_string();
    assert_eq!(stored["status"], "failed", "{stored}");
    assert!(notes.contains("the disk is full"), "{notes}");
    println!(
        "stored {:.2} s of the failed run; rescued {:.2} s ({samples} samples) in {}",
        stored_ns as f64 / 1e9,
        duration as f64 / 1e9,
        rescue.display()
    );
}

#[test]
fn a_store_locked_by_another_process_fails_before_measuring() {
    let cpu = online()[0].to_string();
    let dir = tempfile::tempdir().unwrap();
    // The measuring lock only while the stored run is measured: then
    // latscope waits on the store's lock and fails before its measuring
    // threads start (asserted below: nothing was measured), so those 5 s
    // pass beside the other tests; what is asserted of them is SQLite's
    // busy timeout, which a neighbour's run cannot shorten.
    let store = {
        let _g = serial();
        store_with_one_run(dir.path())
    };
    let s = store.to_str().unwrap();
    let first = show_json(&store, "1");
    let holder = rusqlite::Connection::open(&store).unwrap();
    holder.execute_batch("BEGIN EXCLUSIVE").unwrap();

    let started = Instant::now();
    let o = latscope_in(
        dir.path(),
        &["run", "--duration", "1s", "--cpus", &cpu, "--store", s],
    );
    let waited = started.elapsed();
    let line = error_line(&o, 1);
    eprintln!("latscope printed: {line}");
    assert!(
        line.contains("stayed locked by another process for 5 s"),
        "{line}"
    );
    assert!(
        waited >= Duration::from_millis(4_500),
        "gave up after {waited:?}, not the 5 s busy timeout"
    );
    assert!(rescue_files(dir.path()).is_empty(), "nothing was measured");
    // Readers do not wait for the lock.
    assert_eq!(show_json(&store, "1"), first);

    holder.execute_batch("ROLLBACK").unwrap();
    drop(holder);
    assert_eq!(integrity(&store), "ok");
    assert_eq!(show_json(&store, "1"), first, "the stored run is intact");
    let o = latscope(&["list", "--json", "--store", s]);
    let runs: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(runs.as_array().unwrap().len(), 1, "no run added: {runs}");
}

#[test]
fn files_that_are_not_stores_are_refused_and_left_as_they_were() {
    let _g = serial();
    let cpu = online()[0].to_string();
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "my notes, not a database\n".repeat(40)).unwrap();
    let other = dir.path().join("other.db");
    {
        let c = rusqlite::Connection::open(&other).unwrap();
        c.execute_batch("CREATE TABLE recipes(name TEXT); INSERT INTO recipes VALUES ('soup');")
            .unwrap();
    }
    for file in [&text, &other] {
        let before = std::fs::read(file).unwrap();
        let f = file.to_str().unwrap();
        for args in [
            vec!["run", "--duration", "1s", "--cpus", &cpu, "--store", f],
            vec!["show", "latest", "--store", f],
            vec!["list", "--store", f],
        ] {
            let o = latscope_in(dir.path(), &args);
            let line = error_line(&o, 1);
            assert!(line.contains("is not a latscope store"), "{line}");
            eprintln!("latscope printed: {line}");
        }
        assert_eq!(std::fs::read(file).unwrap(), before, "{f} unchanged");
    }
    assert!(rescue_files(dir.path()).is_empty());
}

#[test]
fn a_truncated_store_gives_one_line_and_is_not_written() {
    let _g = serial();
    let cpu = online()[0].to_string();
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_one_run(dir.path());
    let size = std::fs::metadata(&store).unwrap().len();
    for (name, len) in [("half.db", size / 2), ("100b.db", 100)] {
        let cut = dir.path().join(name);
        std::fs::copy(&store, &cut).unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&cut)
            .unwrap()
            .set_len(len)
            .unwrap();
        let before = std::fs::read(&cut).unwrap();
        let c = cut.to_str().unwrap();
        for args in [
            vec!["show", "latest", "--store", c],
            vec!["list", "--store", c],
            vec!["run", "--duration", "5s", "--cpus", &cpu, "--store", c],
        ] {
            let started = Instant::now();
            let o = latscope_in(dir.path(), &args);
            let line = error_line(&o, 1);
            eprintln!("latscope printed ({len} bytes): {line}");
            assert!(
                line.contains("is damaged (") && line.contains("give another path")
                    || line.contains("is not a latscope store"),
                "{line}"
            );
            assert!(
                started.elapsed() < Duration::from_secs(4),
                "{args:?} failed before measuring"
            );
        }
        assert_eq!(std::fs::read(&cut).unwrap(), before, "{name} unchanged");
    }
    assert!(rescue_files(dir.path()).is_empty());
    // The store it was cut from is untouched.
    assert_eq!(integrity(&store), "ok");
    show_json(&store, "1");
}

#[test]
fn a_store_from_a_newer_latscope_is_refused_and_left_as_it_was() {
    let _g = serial();
    let cpu = online()[0].to_string();
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_one_run(dir.path());
    {
        let c = rusqlite::Connection::open(&store).unwrap();
        c.execute_batch("PRAGMA user_version = 99;").unwrap();
    }
    let before = std::fs::read(&store).unwrap();
    let s = store.to_str().unwrap();
    for args in [
        vec!["run", "--duration", "1s", "--cpus", &cpu, "--store", s],
        vec!["show", "latest", "--store", s],
        vec!["list", "--store", s],
    ] {
        let o = latscope_in(dir.path(), &args);
        let line = error_line(&o, 1);
        eprintln!("latscope printed: {line}");
        assert!(
            line.contains("has schema version 99, newer than version")
                && line.contains("upgrade latscope"),
            "{line}"
        );
    }
    assert_eq!(std::fs::read(&store).unwrap(), before, "store unchanged");
    assert!(rescue_files(dir.path()).is_empty());
    assert_eq!(integrity(&store), "ok");
}
