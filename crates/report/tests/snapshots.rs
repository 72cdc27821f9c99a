//! Snapshot tests of the rendered text and JSON on a fixed run.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use latscope_model::{Capabilities, CellMeta, CpuId, Nanos, RunId, RunMeta, RunStatus, SystemInfo};
use latscope_stats::{CellResult, Histogram, MetricResult, RunResult};

fn fixture() -> RunResult {
    let mut lat = MetricResult::new("timer.latency", Some(CpuId(1)));
    let mut corrected = Histogram::new();
    for v in [10_000u64, 12_000, 15_000, 40_000, 2_500_000] {
        lat.histogram.record(v);
        corrected.record(v);
    }
    corrected.record(1_500_000);
    corrected.record(500_000);
    lat.corrected = Some(corrected);
    lat.overruns = 1;
    lat.missed_deadlines = 2;
    lat.threshold = Some(Nanos::from_micros(100));
    lat.above_threshold = Some(1);
    let mut iv = MetricResult::new("timer.interval", Some(CpuId(1)));
    for v in [999_000u64, 1_001_000, 1_000_500, 3_500_000] {
        iv.histogram.record(v);
    }
    let mut settings = BTreeMap::new();
    settings.insert(
        "timer_api".to_string(),
        serde_json::json!("clock_nanosleep"),
    );
    settings.insert("period_ns".to_string(), serde_json::json!(1_000_000));
    settings.insert("policy".to_string(), serde_json::json!("fifo"));
    settings.insert("priority".to_string(), serde_json::json!(95));
    settings.insert("phase".to_string(), serde_json::json!("fixed"));
    RunResult {
        meta: RunMeta {
            ended_unix_ns: Some(Nanos(1_795_730_644_000_000_000)),
            status: RunStatus::Complete,
            command_line: vec!["latscope".into(), "run".into()],
            pid: 1,
            boot_id: "b".into(),
            hostname: "host".into(),
            tool_version: "0.1.0".into(),
            ..RunMeta::new(RunId(7), Nanos(1_795_730_639_000_000_000))
        },
        system: SystemInfo {
            hostname: "host".into(),
            kernel_release: "6.18.0".into(),
            preemption_model: Some("none".into()),
            hz: Some(250),
            clocksource: Some("tsc".into()),
            cpu_count: 2,
            hypervisor: true,
            ..SystemInfo::default()
        },
        capabilities: Capabilities {
            missing: vec!["memory not locked".into()],
            ..Capabilities::default()
        },
        cells: vec![CellResult {
            meta: CellMeta::new(
                0,
                "none",
                latscope_model::CellSettings::from_json(
                    "timer",
                    serde_json::Value::Object(settings.into_iter().collect()),
                )
                .unwrap(),
                Nanos::from_secs(5),
            ),
            // Stored order (alphabetical) puts interval first; the text
            // must still lead with latency.
            metrics: vec![iv, lat],
            trace: None,
            episodes: Vec::new(),
            noise: Vec::new(),
            timer: Vec::new(),
            udp: None,
            workload_stats: None,
        }],
    }
}

#[test]
fn summary_text() {
    let run = fixture();
    let text = latscope_report::run_header(&run) + &latscope_report::summary_tables(&run);
    let expected = "\
latscope run 7 · complete · started 2026-11-26 22:03:59 UTC · 5.00s long
host 6.18.0 · preempt none · HZ 250 · clocksource tsc · 2 CPUs · virtual machine
note: memory not locked

cell 0: timer probe (clock_nanosleep, 1.00ms period, fifo 95) · workload none · 5.00s measured

timer.latency — intended expiry → user code runs
CPU  samples     min   mean     p50     p90     p99   p99.9  p99.99     max  overruns  >100µs
1          5  10.0µs  515µs  15.0µs  2.50ms  2.50ms  2.50ms  2.50ms  2.50ms         1       1

timer.latency, per deadline (coordinated-omission corrected: each deadline skipped by an overrun counted with the latency it would have had)
CPU  samples     min   mean     p50     p90     p99   p99.9  p99.99     max  missed
1          7  10.0µs  654µs  40.0µs  2.50ms  2.50ms  2.50ms  2.50ms  2.50ms       2

timer.interval — spacing between consecutive wake-ups
CPU  samples    min    mean     p50     p90     p99   p99.9  p99.99     max
1          4  999µs  1.63ms  1.00ms  3.50ms  3.50ms  3.50ms  3.50ms  3.50ms
";
    assert_eq!(text, expected, "\n{text}");
}

#[test]
fn histogram_text() {
    let run = fixture();
    let text = latscope_report::histogram_tables(&run);
    assert!(
        text.starts_with("\ncell 0: timer.latency, samples per range\nrange"),
        "{text}"
    );
    assert!(text.contains("8–16 µs"), "{text}");
    // 10 000, 12 000 and 15 000 ns fall in 8–16 µs.
    let line = text.lines().find(|l| l.starts_with("8–16 µs")).unwrap();
    assert!(line.trim_end().ends_with('3'), "{line}");
    let line = text
        .lines()
        .find(|l| l.starts_with("2048–4096 µs"))
        .unwrap();
    assert!(line.trim_end().ends_with('1'), "{line}");
}

#[test]
fn json_document() {
    let run = fixture();
    let v = serde_json::to_value(latscope_report::run_json(&run)).unwrap();
    assert_eq!(v["schema"], "latscope.run.v1");
    assert_eq!(v["run_id"], 7);
    assert_eq!(v["status"], "complete");
    // The documented settings object: the old keys, and the probe's tag.
    let settings = &v["cells"][0]["settings"];
    assert_eq!(settings["probe"], "timer");
    assert_eq!(settings["timer_api"], "clock_nanosleep");
    assert_eq!(settings["period_ns"], 1_000_000);
    assert_eq!(settings["policy"], "fifo");
    assert_eq!(settings["priority"], 95);
    assert_eq!(settings["phase"], "fixed");
    let lat = &v["cells"][0]["metrics"][1];
    assert_eq!(lat["name"], "timer.latency");
    assert_eq!(lat["cpu"], 1);
    assert_eq!(lat["count"], 5);
    assert_eq!(lat["min_ns"], 10_000);
    assert_eq!(lat["max_ns"], 2_500_000);
    assert_eq!(lat["overruns"], 1);
    assert_eq!(lat["missed_deadlines"], 2);
    assert_eq!(lat["threshold_ns"], 100_000);
    assert_eq!(lat["above_threshold"], 1);
    assert_eq!(lat["corrected"]["count"], 7);
    assert_eq!(lat["histogram"].as_array().unwrap().len(), 5);
    assert_eq!(lat["histogram"][0], serde_json::json!([10_000, 10_007, 1]));
}

#[test]
fn early_wakeups_are_shown_only_when_a_cpu_woke_early() {
    use latscope_model::TimerCpuStats;
    let mut run = fixture();
    // Counted, none early: no line, but the JSON has them.
    run.cells[0].timer = vec![TimerCpuStats {
        cpu: CpuId(1),
        early_wakeups: 0,
        max_early_ns: Nanos::ZERO,
    }];
    let text = latscope_report::summary_tables(&run);
    assert!(!text.contains("before its deadline"), "{text}");
    let v = serde_json::to_value(latscope_report::run_json(&run)).unwrap();
    assert_eq!(
        v["cells"][0]["timer_stats"],
        serde_json::json!([{"cpu": 1, "early_wakeups": 0, "max_early_ns": 0}])
    );

    run.cells[0].timer = vec![
        TimerCpuStats {
            cpu: CpuId(0),
            early_wakeups: 0,
            max_early_ns: Nanos::ZERO,
        },
        TimerCpuStats {
            cpu: CpuId(1),
            early_wakeups: 3,
            max_early_ns: Nanos(1_500),
        },
    ];
    let text = latscope_report::summary_tables(&run);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("before its deadline"))
        .collect();
    assert_eq!(
        lines,
        ["warning: the timer woke before its deadline (counted as 0 ns in timer.latency): CPU 1 3× (up to 1.50µs early)"],
        "{text}"
    );
    let v = serde_json::to_value(latscope_report::run_json(&run)).unwrap();
    assert_eq!(v["cells"][0]["timer_stats"][1]["early_wakeups"], 3);
    assert_eq!(v["cells"][0]["timer_stats"][1]["max_early_ns"], 1_500);

    // Not counted (another probe, or stored before schema 6): no key.
    run.cells[0].timer.clear();
    let v = serde_json::to_value(latscope_report::run_json(&run)).unwrap();
    assert!(v["cells"][0].get("timer_stats").is_none());
}

/// An imported run: the header names its source and leaves out what the
/// file did not say; `list` gains a source column; the JSON has `source`.
#[test]
fn an_imported_run_says_where_it_came_from() {
    let mut run = fixture();
    run.meta.source = Some(latscope_model::RunSource {
        tool: "cyclictest".into(),
        tool_version: Some("2.40".into()),
        format: "cyclictest-hist".into(),
        file: "board7.txt".into(),
        command_line: None,
        label: Some("board 7".into()),
        imported_unix_ns: Nanos(1),
    });
    run.system = SystemInfo::default();
    run.capabilities = Capabilities::default();
    let header = latscope_report::run_header(&run);
    assert_eq!(
        header,
        "\
latscope run 7 · complete · started 2026-11-26 22:03:59 UTC · 5.00s long
imported from cyclictest 2.40 (cyclictest-hist, board7.txt) · board 7
system not recorded
"
    );
    let v = serde_json::to_value(latscope_report::run_json(&run)).unwrap();
    assert_eq!(v["source"]["tool"], "cyclictest");
    assert_eq!(v["source"]["label"], "board 7");
    assert!(serde_json::to_value(latscope_report::run_json(&fixture()))
        .unwrap()
        .get("source")
        .is_none());

    let own = fixture();
    let rows = |runs: &[&RunResult]| -> String {
        let rows: Vec<latscope_report::RunListRow<'_>> = runs
            .iter()
            .map(|r| latscope_report::RunListRow {
                meta: &r.meta,
                cells: std::slice::from_ref(&r.cells[0].meta),
                kernel: &r.system.kernel_release,
                max_timer_latency: r.cells[0].metrics[1].histogram.max(),
            })
            .collect();
        latscope_report::list_table(&rows)
    };
    let only_own = rows(&[&own]);
    assert!(!only_own.contains("source"), "{only_own}");
    let both = rows(&[&own, &run]);
    let lines: Vec<&str> = both.lines().collect();
    assert!(lines[0].trim_end().ends_with("source"), "{both}");
    assert!(lines[1].trim_end().ends_with("latscope"), "{both}");
    assert!(
        lines[2].trim_end().ends_with("cyclictest 2.40 · board 7"),
        "{both}"
    );
}
