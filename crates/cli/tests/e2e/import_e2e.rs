//! `latscope import` on files the real cyclictest and oslat write in the
//! test, checked against the tools' own figures; `export --format
//! rt-tests-json` read back by `import`; bad files refused in one line with
//! nothing stored. Tests that need rt-tests say `skipped: needs ...`.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;

use crate::common::*;
use serde_json::Value;

/// Whether `tool` runs here; a visible notice when not.
fn have(tool: &str) -> bool {
    let ok = Command::new(tool).arg("--help").output().is_ok();
    if !ok {
        println!("skipped: needs {tool} (apt-get install rt-tests)");
    }
    ok
}

fn import(store: &str, args: &[&str]) -> std::process::Output {
    let mut all = vec!["import"];
    all.extend(args);
    all.extend(["--store", store]);
    latscope(&all)
}

fn show_json(store: &str, run: &str) -> Value {
    let o = latscope(&["show", run, "--json", "--store", store]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

/// The metric of `doc`'s cell `cell` with `name` on `cpu`.
fn metric_of<'a>(doc: &'a Value, cell: usize, name: &str, cpu: u64) -> &'a Value {
    doc["cells"][cell]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name && m["cpu"] == cpu)
        .unwrap_or_else(|| panic!("no {name} on CPU {cpu}"))
}

/// The numbers after `label` on a line of cyclictest's histogram trailer.
fn trailer(text: &str, label: &str) -> Vec<u64> {
    let line = text.lines().find(|l| l.starts_with(label)).unwrap();
    line[label.len()..]
        .split_whitespace()
        .map(|w| w.parse().unwrap())
        .collect()
}

#[test]
fn cyclictest_files_import_with_cyclictests_own_counts_min_and_max() {
    if !have("cyclictest") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json_path = dir.path().join("ct.json");
    let store = store_in(dir.path()).to_str().unwrap().to_string();
    let mut args = vec![
        "-D".to_string(),
        "2".into(),
        "-i".into(),
        "1000".into(),
        "-h".into(),
        "200".into(),
        "-q".into(),
        "-t".into(),
        format!("--json={}", json_path.display()),
    ];
    if is_root() {
        args.extend(["-m".into(), "-p".into(), "95".into()]);
    }
    let out = {
        let _guard = shared();
        Command::new("cyclictest").args(&args).output().unwrap()
    };
    assert!(
        out.status.success(),
        "cyclictest: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let hist_path = dir.path().join("ct.txt");
    std::fs::write(&hist_path, &out.stdout).unwrap();
    let tool: Value = serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();

    let o = import(&store, &[json_path.to_str().unwrap(), "--label", "the VM"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).starts_with(&format!(
            "imported {} as run 1: cyclictest 2.40 (cyclictest-json)",
            json_path.display()
        )),
        "{}",
        stdout(&o)
    );
    let doc = show_json(&store, "1");
    assert_eq!(doc["source"]["tool"], "cyclictest");
    assert_eq!(doc["source"]["tool_version"], tool["rt_test_version:"]);
    assert_eq!(doc["source"]["label"], "the VM");
    assert_eq!(doc["system"]["kernel_release"], tool["sysinfo"]["release"]);
    assert_eq!(doc["cells"][0]["probe"], "timer");
    assert_eq!(doc["cells"][0]["settings"]["period_ns"], 1_000_000);
    let threads = tool["thread"].as_object().unwrap();
    for (k, t) in threads {
        let m = metric_of(&doc, 0, "timer.latency", t["cpu"].as_u64().unwrap());
        assert_eq!(m["count"], t["cycles"], "thread {k}");
        assert_eq!(
            m["min_ns"].as_u64(),
            Some(t["min"].as_u64().unwrap() * 1000),
            "thread {k}"
        );
        assert_eq!(
            m["max_ns"].as_u64(),
            Some(t["max"].as_u64().unwrap() * 1000),
            "thread {k}"
        );
    }

    // The histogram text of the same run: the trailer's figures.
    let o = import(&store, &[hist_path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (total, min, max, over) = (
        trailer(&text, "# Total:"),
        trailer(&text, "# Min Latencies:"),
        trailer(&text, "# Max Latencies:"),
        trailer(&text, "# Histogram Overflows:"),
    );
    let doc2 = show_json(&store, "2");
    assert_eq!(doc2["source"]["format"], "cyclictest-hist");
    for t in 0..min.len() {
        // cyclictest -t without -a pins thread N to CPU N, as the text
        // import assumes.
        let m = metric_of(&doc2, 0, "timer.latency", t as u64);
        assert_eq!(m["count"].as_u64(), Some(total[t] + over[t]), "thread {t}");
        assert_eq!(m["min_ns"].as_u64(), Some(min[t] * 1000), "thread {t}");
        assert_eq!(m["max_ns"].as_u64(), Some(max[t] * 1000), "thread {t}");
        // and the same buckets as the JSON's
        let j = metric_of(&doc, 0, "timer.latency", t as u64);
        assert_eq!(m["histogram"], j["histogram"], "thread {t}");
    }

    // list and show name the source; compare, report and forecast work.
    let o = latscope(&["list", "--store", &store]);
    assert!(
        stdout(&o).contains("cyclictest 2.40 · the VM"),
        "{}",
        stdout(&o)
    );
    let o = latscope(&["show", "1", "--store", &store]);
    assert!(
        stdout(&o).contains("imported from cyclictest 2.40 (cyclictest-json"),
        "{}",
        stdout(&o)
    );
    let o = latscope(&["compare", "1", "2", "--json", "--store", &store]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let html = dir.path().join("r.html");
    let o = latscope(&[
        "report",
        "1",
        "--html",
        html.to_str().unwrap(),
        "--store",
        &store,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(std::fs::read_to_string(&html)
        .unwrap()
        .contains("imported from"));
    let o = latscope(&["forecast", "1", "--store", &store]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn oslat_files_import_with_oslats_own_counts_and_maximum() {
    if !have("oslat") {
        return;
    }
    if !is_root() {
        println!("skipped: needs root for oslat (mlockall)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("os.json");
    let store = store_in(dir.path()).to_str().unwrap().to_string();
    let out = {
        let _guard = shared();
        Command::new("oslat")
            .args(["-D", "2", "-q", &format!("--json={}", path.display())])
            .output()
            .unwrap()
    };
    assert!(
        out.status.success(),
        "oslat: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let tool: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let o = import(&store, &[path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc = show_json(&store, "latest");
    assert_eq!(doc["source"]["tool"], "oslat");
    assert_eq!(doc["cells"][0]["probe"], "noise");
    for (k, t) in tool["thread"].as_object().unwrap() {
        let cpu = t["cpu"].as_u64().unwrap();
        let buckets: Vec<(u64, u64)> = t["histogram"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(b, c)| (b.parse().unwrap(), c.as_u64().unwrap()))
            .collect();
        let noise = doc["cells"][0]["noise"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["cpu"] == cpu)
            .unwrap();
        // oslat's count: every iteration, in its buckets
        assert_eq!(
            noise["iterations"].as_u64(),
            Some(buckets.iter().map(|b| b.1).sum()),
            "thread {k}"
        );
        // its maximum, in the longest interruption and the gap histogram
        let max_ns = t["max"].as_u64().unwrap() * 1000;
        assert_eq!(noise["max_gap_ns"].as_u64(), Some(max_ns), "thread {k}");
        let gaps = metric_of(&doc, 0, "noise.gap", cpu);
        let long: u64 = buckets.iter().filter(|b| b.0 >= 2).map(|b| b.1).sum();
        assert_eq!(gaps["count"].as_u64(), Some(long), "thread {k}");
        assert_eq!(noise["interruptions"].as_u64(), Some(long), "thread {k}");
        if long > 0 {
            assert_eq!(gaps["max_ns"].as_u64(), Some(max_ns), "thread {k}");
            let shortest = buckets
                .iter()
                .filter(|b| b.0 >= 2)
                .map(|b| b.0)
                .min()
                .unwrap();
            assert_eq!(gaps["min_ns"].as_u64(), Some(shortest * 1000), "thread {k}");
        }
        // oslat's own minimum is over every iteration: below 1 µs, which
        // latscope keeps as an iteration, not an interruption.
        assert_eq!(t["min"], 1, "thread {k}");
    }
}

/// Runs latscope for two seconds on CPU 0 and returns the store.
fn measured(dir: &Path) -> String {
    let store = store_in(dir).to_str().unwrap().to_string();
    let _guard = shared();
    let o = latscope(&[
        "run",
        "--duration",
        "2s",
        "--cpus",
        "0",
        "--warmup",
        "0s",
        "--quiet",
        "--store",
        &store,
    ]);
    assert_eq!(o.status.code(), Some(0), "run failed: {}", stderr(&o));
    store
}

#[test]
fn rt_tests_json_export_reads_back_as_the_same_histograms() {
    let dir = tempfile::tempdir().unwrap();
    let store = measured(dir.path());
    let original = show_json(&store, "1");

    // nanoseconds: the same buckets, counts, minimum and maximum
    let ns = dir.path().join("ns.json");
    let o = latscope(&[
        "export",
        "1",
        "--format",
        "rt-tests-json",
        "--unit",
        "ns",
        "-o",
        ns.to_str().unwrap(),
        "--store",
        &store,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&ns).unwrap()).unwrap();
    assert_eq!(file["resolution_in_ns"], 1);
    assert_eq!(file["num_threads"], 1);
    let o = import(&store, &[ns.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let back = show_json(&store, "2");
    let a = metric_of(&original, 0, "timer.latency", 0);
    let b = metric_of(&back, 0, "timer.latency", 0);
    assert_eq!(a["histogram"], b["histogram"]);
    for key in ["count", "min_ns", "max_ns", "p50_ns", "p99_ns", "p99.9_ns"] {
        assert_eq!(a[key], b[key], "{key}");
    }
    // the cell comes back with its settings: compare pairs it
    assert_eq!(
        original["cells"][0]["settings"],
        back["cells"][0]["settings"]
    );
    let o = latscope(&["compare", "1", "2", "--json", "--store", &store]);
    let cmp: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let row = cmp["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == "timer.latency")
        .unwrap();
    assert_eq!(row["versus"][0]["a"]["count"], a["count"], "{cmp}");

    // microseconds (cyclictest's default): the buckets cut to whole µs
    let us = dir.path().join("us.json");
    let o = latscope(&[
        "export",
        "1",
        "--format",
        "rt-tests-json",
        "-o",
        us.to_str().unwrap(),
        "--store",
        &store,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = import(&store, &[us.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let c = metric_of(&show_json(&store, "3"), 0, "timer.latency", 0).clone();
    assert_eq!(c["count"], a["count"]);
    assert_eq!(
        c["min_ns"].as_u64(),
        Some(a["min_ns"].as_u64().unwrap() / 1000 * 1000)
    );
    assert_eq!(
        c["max_ns"].as_u64(),
        Some(a["max_ns"].as_u64().unwrap() / 1000 * 1000)
    );
    // and exported again, the same file's histogram (below 1 ms, where
    // latscope's buckets are narrower than a microsecond)
    let o = latscope(&[
        "export",
        "3",
        "--format",
        "rt-tests-json",
        "--store",
        &store,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let again: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let first: Value = serde_json::from_str(&std::fs::read_to_string(&us).unwrap()).unwrap();
    let below_1ms = |t: &Value| -> Vec<(u64, u64)> {
        t["histogram"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.parse().unwrap(), v.as_u64().unwrap()))
            .filter(|(k, _)| *k < 1000)
            .collect()
    };
    let (t1, t2) = (&first["thread"]["0"], &again["thread"]["0"]);
    assert_eq!(below_1ms(t1), below_1ms(t2));
    for key in ["cycles", "min", "max", "cpu"] {
        assert_eq!(t1[key], t2[key], "{key}");
    }

    // latscope's own cyclictest histogram export reads back too
    let cyc = dir.path().join("ct.txt");
    let o = latscope(&[
        "export",
        "1",
        "--format",
        "cyclictest",
        "--max-us",
        "100",
        "-o",
        cyc.to_str().unwrap(),
        "--store",
        &store,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = import(
        &store,
        &[
            cyc.to_str().unwrap(),
            "--period",
            "1ms",
            "--policy",
            "fifo",
            "--priority",
            "95",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let d = metric_of(&show_json(&store, "4"), 0, "timer.latency", 0).clone();
    assert_eq!(d["count"], a["count"]);

    // an imported run exports too
    let o = latscope(&[
        "export",
        "2",
        "--format",
        "rt-tests-json",
        "--store",
        &store,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("{\n  \"file_version\": 1,\n  \"cmdline:\": "));
}

#[test]
fn bad_files_give_one_line_errors_and_store_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path()).to_str().unwrap().to_string();
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/../import/tests/fixtures");
    let good = std::fs::read_to_string(format!("{fixtures}/cyclictest-h50.json")).unwrap();
    let hist = std::fs::read_to_string(format!("{fixtures}/cyclictest-h50.txt")).unwrap();
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        p.to_str().unwrap().to_string()
    };
    let cases = [
        (write("empty.json", b""), "the file is empty"),
        (
            write("garbage.txt", b"this is not a latency file\n"),
            "not a format latscope imports",
        ),
        (
            write("binary.bin", &[0xff, 0x00, 0x13, 0x37, 0xfe]),
            "not text",
        ),
        (
            write("cut.json", &good.as_bytes()[..good.len() / 2]),
            "cut short",
        ),
        (
            write("cut.txt", &hist.as_bytes()[..hist.len() / 2]),
            "cut short",
        ),
        (
            write(
                "liar.json",
                good.replace("\"cycles\": 2000", "\"cycles\": 5").as_bytes(),
            ),
            "cycles is 5",
        ),
        (
            dir.path()
                .join("missing.json")
                .to_str()
                .unwrap()
                .to_string(),
            "cannot read",
        ),
        (dir.path().to_str().unwrap().to_string(), "cannot read"),
    ];
    for (path, want) in &cases {
        let o = import(&store, &[path]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{path}: {err}");
        assert_eq!(err.lines().count(), 1, "{path}: {err}");
        assert!(err.starts_with("latscope: error: "), "{err}");
        assert!(err.contains(want), "{path}: want {want:?} in {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    // A bad file never opens the store: it was not even created.
    assert!(!Path::new(&store).exists());

    let json = write("ok.json", good.as_bytes());
    for (args, want) in [
        (vec![json.as_str(), "--format", "xml"], "xml"),
        (vec![json.as_str(), "--priority", "0"], "outside 1-99"),
        (vec![json.as_str(), "--period", "5"], "invalid duration"),
        (
            vec![json.as_str(), "--unit", "ns"],
            "--unit is for cyclictest-hist",
        ),
        (
            vec![json.as_str(), "--period", "250us"],
            "the file records the period",
        ),
        (vec![json.as_str(), "--label", "two\nlines"], "one line"),
    ] {
        let o = import(&store, &args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: want {want:?} in {err}");
    }
    assert!(!Path::new(&store).exists());
    // A file named with the wrong format is refused too.
    let o = import(&store, &[&json, "--format", "rtla-hist"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("rtla-hist:"), "{}", stderr(&o));

    // After a good import, a bad one adds nothing.
    let o = import(&store, &[&json]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = import(&store, &[&cases[3].0]);
    assert_eq!(o.status.code(), Some(1));
    let o = latscope(&["list", "--json", "--store", &store]);
    let list: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert_eq!(list[0]["source"]["format"], "cyclictest-json");
}

/// A file no tool writes (endless, or past the size limit) is refused in one
/// line with the usage exit code.
#[test]
fn an_endless_or_huge_file_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let s = store.to_str().unwrap();
    let o = import(s, &["/dev/zero"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("larger than 256 MiB"), "{err}");
    // Refused before the store is opened: none is created.
    assert!(!store.exists());
}
