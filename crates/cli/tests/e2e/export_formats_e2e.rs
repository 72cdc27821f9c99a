//! `latscope export RUN --format json|csv|csv-buckets|hdr|cyclictest|prometheus`
//! on a short real run, read by the real binary.

#![allow(clippy::unwrap_used)]

use crate::common::*;

fn run_once(dir: &std::path::Path) -> String {
    let store = store_in(dir);
    let s = store.to_str().unwrap().to_string();
    let _guard = serial();
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
        &s,
    ]);
    assert_eq!(o.status.code(), Some(0), "run failed: {}", stderr(&o));
    s
}

fn export(s: &str, args: &[&str]) -> String {
    let mut all = vec!["export", "latest"];
    all.extend(args);
    all.extend(["--store", s]);
    let o = latscope(&all);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    stdout(&o)
}

/// The samples of `timer.latency` on CPU 0 in the csv-buckets export whose
/// recording bucket starts at or below `ns`: what Prometheus's bucket at
/// `le` = `ns` counts.
fn buckets_csv_counts(csv: &str, ns: u64) -> u64 {
    csv.lines()
        .filter(|l| l.contains(",timer.latency,0,"))
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|f| f[3].parse::<u64>().unwrap() <= ns)
        .map(|f| f[5].parse::<u64>().unwrap())
        .sum()
}

/// `promtool check metrics` reads `text` from standard input and reports
/// no problem; without promtool, a visible skip notice.
fn promtool_accepts(text: &str) {
    let Some((status, printed)) = promtool_check(text) else {
        println!("skipped: needs promtool (apt-get install prometheus)");
        return;
    };
    assert!(
        status.success() && printed.trim().is_empty(),
        "promtool check metrics: {status}\n{printed}"
    );
}

#[test]
fn every_run_format_exports_a_real_run() {
    let dir = tempfile::tempdir().unwrap();
    let s = run_once(dir.path());

    // json: the documented run document
    let doc: serde_json::Value = serde_json::from_str(&export(&s, &["--format", "json"])).unwrap();
    assert_eq!(metrics(&doc, "timer.latency").len(), 1);

    // csv: header + one row per metric and CPU, counts matching the JSON
    let csv = export(&s, &["--format", "csv"]);
    let mut lines = csv.lines();
    assert!(lines
        .next()
        .unwrap()
        .starts_with("cell,probe,workload,metric,cpu,count,min_ns"));
    let lat: Vec<&str> = csv
        .lines()
        .find(|l| l.contains(",timer.latency,"))
        .unwrap()
        .split(',')
        .collect();
    assert_eq!(lat.len(), 15);
    assert_eq!(lat[4], "0");
    let count: u64 = lat[5].parse().unwrap();
    assert!(count > 1000, "2 s at 1 ms: {count}");

    // csv-buckets: bucket counts add up to the summary's count
    let buckets_csv = export(&s, &["--format", "csv-buckets"]);
    let sum: u64 = buckets_csv
        .lines()
        .filter(|l| l.contains(",timer.latency,"))
        .map(|l| l.rsplit(',').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(sum, count);

    // cyclictest: histogram lines, then the trailer; total + overflows = count
    let cyc = export(&s, &["--format", "cyclictest", "--max-us", "200"]);
    let rows = cyc
        .lines()
        .filter(|l| !l.starts_with('#'))
        .collect::<Vec<_>>();
    assert_eq!(rows.len(), 200);
    assert!(rows[7].starts_with("000007 "));
    let field = |name: &str| -> u64 {
        let line = cyc.lines().find(|l| l.starts_with(name)).unwrap();
        line[name.len()..].trim().parse().unwrap()
    };
    assert_eq!(field("# Total:") + field("# Histogram Overflows:"), count);
    assert!(field("# Max Latencies:") >= field("# Avg Latencies:"));

    // prometheus: one family per kind (source in labels, never in the
    // name), _count and +Inf match, the documented bounds in seconds
    let prom = export(&s, &["--format", "prometheus"]);
    assert!(prom.contains("# TYPE latscope_timer_latency_seconds histogram\n"));
    let types: Vec<&str> = prom.lines().filter(|l| l.starts_with("# TYPE ")).collect();
    let helps = prom.lines().filter(|l| l.starts_with("# HELP ")).count();
    assert_eq!(types.len(), helps);
    for t in &types {
        let family = t.split(' ').nth(2).unwrap();
        assert!(
            family.starts_with("latscope_")
                && family.ends_with("_seconds")
                && !family.chars().any(|c| c.is_ascii_digit()),
            "{t}"
        );
    }
    let series = "cell=\"0\",probe=\"timer\",workload=\"none\",cpu=\"0\"";
    assert!(
        prom.contains(&format!(
            "latscope_timer_latency_seconds_count{{{series}}} {count}\n"
        )),
        "{prom}"
    );
    let buckets: Vec<&str> = prom
        .lines()
        .filter(|l| l.starts_with(&format!("latscope_timer_latency_seconds_bucket{{{series},")))
        .collect();
    assert_eq!(buckets.len(), 52, "51 bounds and +Inf");
    assert!(buckets[0].contains("le=\"0.000001\"}"));
    assert!(buckets[1].contains("le=\"0.00000125\"}"));
    assert!(buckets[50].contains("le=\"0.1\"}"));
    assert_eq!(
        buckets[51],
        format!("latscope_timer_latency_seconds_bucket{{{series},le=\"+Inf\"}} {count}")
    );
    // the 20 µs bucket holds as many samples as the CSV buckets at or below 20 µs
    let at_or_below_20us: u64 = buckets_csv_counts(&buckets_csv, 20_000);
    assert!(
        buckets[13].ends_with(&format!("le=\"0.00002\"}} {at_or_below_20us}")),
        "{}",
        buckets[13]
    );
    promtool_accepts(&prom);

    // hdr: to a file, with the interval-log header and a tagged interval
    let out = dir.path().join("run.hlog");
    export(&s, &["--format", "hdr", "--output", out.to_str().unwrap()]);
    let hlog = std::fs::read_to_string(&out).unwrap();
    assert!(hlog.contains("#[StartTime: "));
    assert!(hlog.contains("#[BaseTime: "));
    assert!(hlog.contains(
        "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n"
    ));
    assert!(hlog
        .lines()
        .any(|l| l.starts_with("Tag=timer.latency/0,0.000,") && l.contains(",HISTF")));
    let us = export(&s, &["--format", "hdr", "--hdr-unit", "us"]);
    assert!(us.contains("#[Values in microseconds]"));
}

#[test]
fn bad_export_arguments_are_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let s = store.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["--format", "xml"], "invalid value 'xml'"),
        (
            &["--format", "csv", "--episode", "1"],
            "--episode goes with --format perfetto only",
        ),
        (&["--format", "perfetto"], "--episode"),
        (&["--format", "cyclictest", "--max-us", "0"], "--max-us"),
        (
            &["--format", "hdr", "--hdr-unit", "ms"],
            "invalid value 'ms'",
        ),
    ];
    for (args, expect) in cases {
        let mut all = vec!["export", "latest"];
        all.extend(args.iter());
        all.extend(["--store", s]);
        let o = latscope(&all);
        assert_one_line_error(&o, 2);
        assert!(stderr(&o).contains(expect), "{args:?}: {}", stderr(&o));
    }
    // a store that does not exist: an error, exit 1, one line
    let o = latscope(&["export", "latest", "--format", "csv", "--store", s]);
    assert_one_line_error(&o, 1);
}
