//! Snapshot tests of the run exports (CSV, cyclictest, HdrHistogram log,
//! Prometheus) on a fixed two-cell run, and a round trip of the HDR log
//! through the hdrhistogram crate's own reader and decoder.

#![allow(clippy::unwrap_used)]

use crate::common;
use common::promtool_check;

use base64::Engine as _;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::serialization::Deserializer;
use latscope_model::{Capabilities, CellMeta, CpuId, Nanos, RunId, RunMeta, RunStatus, SystemInfo};
use latscope_report::exports::{self, HdrUnit};
use latscope_stats::{CellResult, Histogram, Interval, IntervalSeries, MetricResult, RunResult};

fn metric(name: &str, cpu: Option<u32>, values: &[(u64, u64)]) -> MetricResult {
    let mut m = MetricResult::new(name, cpu.map(CpuId));
    for &(v, n) in values {
        m.histogram.record_n(v, n);
    }
    m
}

fn cell(index: u32, workload: &str, start_s: u64, metrics: Vec<MetricResult>) -> CellResult {
    CellResult::new(
        CellMeta {
            monotonic_start_ns: Nanos::from_secs(start_s),
            ..CellMeta::new(
                index,
                workload,
                latscope_model::CellSettings::default_for("timer").unwrap(),
                Nanos::from_secs(10),
            )
        },
        metrics,
    )
}

fn fixture() -> RunResult {
    let mut lat0 = metric(
        "timer.latency",
        Some(0),
        &[(1_500, 3), (2_200, 5), (3_999, 2), (7_100, 1), (12_000, 1)],
    );
    lat0.overruns = 1;
    let lat1 = metric(
        "timer.latency",
        Some(1),
        &[(900, 1), (2_000, 4), (5_500, 2)],
    );
    let irq = metric("irq.exec.24:eth0", None, &[(800, 2), (1_200, 1)]);
    let lat_cpu = metric(
        "timer.latency",
        Some(0),
        &[(4_000, 2), (6_000, 1), (300_000, 1)],
    );
    let empty = metric("timer.interval", Some(0), &[]);
    RunResult {
        meta: RunMeta {
            ended_unix_ns: Some(Nanos(1_795_730_661_000_000_000)),
            status: RunStatus::Complete,
            command_line: vec!["latscope".into(), "suite".into()],
            pid: 1,
            boot_id: "b".into(),
            hostname: "host".into(),
            tool_version: "0.1.0".into(),
            ..RunMeta::new(RunId(3), Nanos(1_795_730_639_250_000_000))
        },
        system: SystemInfo::default(),
        capabilities: Capabilities::default(),
        cells: vec![
            cell(0, "idle", 100, vec![irq, lat0, lat1]),
            cell(1, "cpu, heavy", 111, vec![empty, lat_cpu]),
        ],
    }
}

#[test]
fn summaries_csv_snapshot() {
    let expected = "\
cell,probe,workload,metric,cpu,count,min_ns,mean_ns,p50_ns,p90_ns,p99_ns,p99.9_ns,p99.99_ns,max_ns,overruns
0,timer,idle,irq.exec.24:eth0,all,3,800,933,800,1200,1200,1200,1200,1200,0
0,timer,idle,timer.latency,0,12,1500,3550,2201,7103,12000,12000,12000,12000,1
0,timer,idle,timer.latency,1,7,900,2843,2000,5500,5500,5500,5500,5500,0
1,timer,\"cpu, heavy\",timer.interval,0,0,,,,,,,,,0
1,timer,\"cpu, heavy\",timer.latency,0,4,4000,78500,4001,300000,300000,300000,300000,300000,0
";
    assert_eq!(exports::summaries_csv(&fixture()), expected);
}

#[test]
fn buckets_csv_snapshot() {
    let expected = "\
cell,metric,cpu,low_ns,high_ns,count
0,irq.exec.24:eth0,all,800,800,2
0,irq.exec.24:eth0,all,1200,1200,1
0,timer.latency,0,1500,1500,3
0,timer.latency,0,2200,2201,5
0,timer.latency,0,3998,3999,2
0,timer.latency,0,7100,7103,1
0,timer.latency,0,12000,12007,1
0,timer.latency,1,900,900,1
0,timer.latency,1,2000,2000,4
0,timer.latency,1,5500,5503,2
1,timer.latency,0,4000,4001,2
1,timer.latency,0,6000,6003,1
1,timer.latency,0,299776,300031,1
";
    assert_eq!(exports::buckets_csv(&fixture()), expected);
}

#[test]
fn cyclictest_snapshot() {
    let expected = "\
# latscope run 3: timer.latency as cyclictest -h 8
# column 0: cell 0 (timer, idle), cpu 0
# column 1: cell 0 (timer, idle), cpu 1
# column 2: cell 1 (timer, cpu, heavy), cpu 0
# Histogram
000000 000000\t000001\t000000
000001 000003\t000000\t000000
000002 000005\t000004\t000000
000003 000002\t000000\t000000
000004 000000\t000000\t000002
000005 000000\t000002\t000000
000006 000000\t000000\t000001
000007 000001\t000000\t000000
# Total: 000000011 000000007 000000003
# Min Latencies: 00001 00000 00004
# Avg Latencies: 00003 00002 00078
# Max Latencies: 00012 00005 00300
# Histogram Overflows: 00001 00000 00001
";
    assert_eq!(
        exports::cyclictest_histogram(&fixture(), 8).unwrap(),
        expected
    );
}

/// The fixture with a third cell holding every kind of metric the
/// Prometheus export names differently, a source that appears twice, a
/// sample above the top bucket, a name the export does not know, and a
/// workload name that needs escaping.
fn prom_fixture() -> RunResult {
    let mut run = fixture();
    let mut c = cell(
        2,
        "say \"hi\" \\ then\nnewline",
        122,
        vec![
            metric(
                "softirq.delay.NET_RX",
                None,
                &[(3_000, 2), (150_000_000, 1)],
            ),
            metric("softirq.exec.NET_RX", None, &[(1_100, 4)]),
            metric("irq.exec.24:eth0", None, &[(900, 1)]),
            metric("irq.exec.24:eth0", None, &[(2_600, 1)]),
            metric("irq.exec.vector:local_timer", None, &[(1_300, 3)]),
            metric("workqueue.exec.vmstat_update", None, &[(20_000, 1)]),
            metric("nmi.exec", None, &[(5_000, 1)]),
            metric("noise.gap", Some(1), &[(10_000, 2), (1_000_000, 1)]),
            metric("udp.send", Some(0), &[(8_000, 1)]),
            metric("future.metric", Some(0), &[(1_000, 1)]),
        ],
    );
    c.meta.probe = "noise".into();
    run.cells.push(c);
    run
}

/// The export's lines that start with `prefix`.
fn lines_of<'a>(text: &'a str, prefix: &str) -> Vec<&'a str> {
    text.lines().filter(|l| l.starts_with(prefix)).collect()
}

#[test]
fn prometheus_snapshot() {
    let text = exports::prometheus_text(&prom_fixture());
    // The whole export, so that any change to it shows up in review.
    let expected = include_str!("fixtures/prometheus.prom");
    if text != expected {
        let first = text
            .lines()
            .zip(expected.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(text.lines().count().min(expected.lines().count()));
        panic!(
            "prometheus export differs from tests/fixtures/prometheus.prom at line {}:\n  got      {:?}\n  expected {:?}",
            first + 1,
            text.lines().nth(first),
            expected.lines().nth(first)
        );
    }

    // One family per kind, in name order, each with one HELP and TYPE.
    assert_eq!(
        lines_of(&text, "# TYPE"),
        [
            "# TYPE latscope_future_metric_seconds histogram",
            "# TYPE latscope_irq_exec_seconds histogram",
            "# TYPE latscope_irq_vector_exec_seconds histogram",
            "# TYPE latscope_nmi_exec_seconds histogram",
            "# TYPE latscope_noise_gap_seconds histogram",
            "# TYPE latscope_softirq_delay_seconds histogram",
            "# TYPE latscope_softirq_exec_seconds histogram",
            "# TYPE latscope_timer_interval_seconds histogram",
            "# TYPE latscope_timer_latency_seconds histogram",
            "# TYPE latscope_udp_send_seconds histogram",
            "# TYPE latscope_workqueue_exec_seconds histogram",
        ]
    );
    assert_eq!(
        lines_of(&text, "# HELP latscope_irq_exec_seconds"),
        ["# HELP latscope_irq_exec_seconds Hard IRQ handler run time, per interrupt line and handler (latscope irq.exec.<N>:<name>)."]
    );
    assert_eq!(lines_of(&text, "# HELP").len(), 11);

    // irq.exec.24:eth0 in cell 0 (800 ns ×2, 1200 ns): the source in labels;
    // 1 µs and 1.25 µs are the first two bounds.
    let irq0 =
        "cell=\"0\",probe=\"timer\",workload=\"idle\",cpu=\"all\",irq=\"24\",handler=\"eth0\"";
    let irq_lines = lines_of(&text, &format!("latscope_irq_exec_seconds_bucket{{{irq0},"));
    assert_eq!(irq_lines.len(), 52, "51 bounds and +Inf");
    assert_eq!(
        irq_lines[..3],
        [
            format!("latscope_irq_exec_seconds_bucket{{{irq0},le=\"0.000001\"}} 2"),
            format!("latscope_irq_exec_seconds_bucket{{{irq0},le=\"0.00000125\"}} 3"),
            format!("latscope_irq_exec_seconds_bucket{{{irq0},le=\"0.0000016\"}} 3"),
        ]
    );
    assert_eq!(
        irq_lines[50..],
        [
            format!("latscope_irq_exec_seconds_bucket{{{irq0},le=\"0.1\"}} 3"),
            format!("latscope_irq_exec_seconds_bucket{{{irq0},le=\"+Inf\"}} 3"),
        ]
    );
    assert!(text.contains(&format!(
        "latscope_irq_exec_seconds_sum{{{irq0}}} 0.0000028\n"
    )));
    assert!(text.contains(&format!("latscope_irq_exec_seconds_count{{{irq0}}} 3\n")));

    // Cell 2 has irq.exec.24:eth0 twice (900 ns, 2600 ns): one series, merged.
    let w = "workload=\"say \\\"hi\\\" \\\\ then\\nnewline\"";
    let irq2 = format!("cell=\"2\",probe=\"noise\",{w},cpu=\"all\",irq=\"24\",handler=\"eth0\"");
    for (le, n) in [("0.000001", 1), ("0.0000025", 1), ("0.0000032", 2)] {
        let line = format!("latscope_irq_exec_seconds_bucket{{{irq2},le=\"{le}\"}} {n}\n");
        assert!(text.contains(&line), "{line}");
    }
    assert!(text.contains(&format!(
        "latscope_irq_exec_seconds_sum{{{irq2}}} 0.0000035\n"
    )));
    assert!(text.contains(&format!("latscope_irq_exec_seconds_count{{{irq2}}} 2\n")));
    assert_eq!(
        lines_of(&text, "latscope_irq_exec_seconds_count").len(),
        2,
        "one series per cell"
    );

    // softirq.delay.NET_RX (3 µs ×2, 150 ms): above 100 ms only +Inf counts.
    let sd = format!("cell=\"2\",probe=\"noise\",{w},cpu=\"all\",vector=\"NET_RX\"");
    for (le, n) in [("0.0000025", 0), ("0.0000032", 2), ("0.1", 2), ("+Inf", 3)] {
        let line = format!("latscope_softirq_delay_seconds_bucket{{{sd},le=\"{le}\"}} {n}\n");
        assert!(text.contains(&line), "{line}");
    }
    assert!(text.contains(&format!(
        "latscope_softirq_delay_seconds_sum{{{sd}}} 0.150006\n"
    )));

    // timer.latency in cell 1 (4 µs ×2, 6 µs, 300 µs): a sample on a bound
    // counts as at or below it.
    let tl = "cell=\"1\",probe=\"timer\",workload=\"cpu, heavy\",cpu=\"0\"";
    for (le, n) in [
        ("0.0000032", 0),
        ("0.000004", 2),
        ("0.000005", 2),
        ("0.0000063", 3),
        ("0.00025", 3),
        ("0.00032", 4),
    ] {
        let line = format!("latscope_timer_latency_seconds_bucket{{{tl},le=\"{le}\"}} {n}\n");
        assert!(text.contains(&line), "{line}");
    }

    // The other kinds' source labels and the fallback's metric label.
    for count in [
        format!("latscope_softirq_exec_seconds_count{{cell=\"2\",probe=\"noise\",{w},cpu=\"all\",vector=\"NET_RX\"}} 4"),
        format!("latscope_irq_vector_exec_seconds_count{{cell=\"2\",probe=\"noise\",{w},cpu=\"all\",vector=\"local_timer\"}} 3"),
        format!("latscope_workqueue_exec_seconds_count{{cell=\"2\",probe=\"noise\",{w},cpu=\"all\",function=\"vmstat_update\"}} 1"),
        format!("latscope_nmi_exec_seconds_count{{cell=\"2\",probe=\"noise\",{w},cpu=\"all\"}} 1"),
        format!("latscope_noise_gap_seconds_count{{cell=\"2\",probe=\"noise\",{w},cpu=\"1\"}} 3"),
        format!("latscope_udp_send_seconds_count{{cell=\"2\",probe=\"noise\",{w},cpu=\"0\"}} 1"),
        format!("latscope_future_metric_seconds_count{{cell=\"2\",probe=\"noise\",{w},cpu=\"0\",metric=\"future.metric\"}} 1"),
    ] {
        assert!(text.contains(&format!("{count}\n")), "{count}");
    }
    // The empty timer.interval of cell 1 is still a series, all zero.
    assert!(text.contains(
        "latscope_timer_interval_seconds_bucket{cell=\"1\",probe=\"timer\",workload=\"cpu, heavy\",cpu=\"0\",le=\"+Inf\"} 0\n"
    ));
}

/// The series name and labels of a sample line (everything before the
/// value), and its value.
fn sample(line: &str) -> (&str, f64) {
    let (series, value) = line.rsplit_once(' ').unwrap();
    (series, value.parse().unwrap())
}

#[test]
fn prometheus_families_are_contiguous_with_unique_monotonic_series() {
    let text = exports::prometheus_text(&prom_fixture());
    let mut families: Vec<&str> = Vec::new();
    let mut series = std::collections::HashSet::new();
    let mut current = "";
    let mut last_bucket: Option<f64> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let family = rest.split(' ').next().unwrap();
            assert!(!families.contains(&family), "{family} twice");
            families.push(family);
            current = family;
            continue;
        }
        if line.starts_with('#') {
            assert_eq!(line, format!("# TYPE {current} histogram"));
            continue;
        }
        let (name, value) = sample(line);
        assert!(
            name.starts_with(&format!("{current}_")),
            "{line} outside its family {current}"
        );
        assert!(series.insert(name.to_string()), "duplicate series {name}");
        // cumulative buckets never decrease, and +Inf equals _count
        if name.contains("_bucket{") {
            if let Some(prev) = last_bucket {
                assert!(value >= prev, "{line}");
            }
            last_bucket = Some(value);
        } else if name.contains("_count{") {
            assert_eq!(Some(value), last_bucket, "{line}: +Inf ≠ count");
            last_bucket = None;
        }
    }
    assert_eq!(families.len(), 11);
}

#[test]
fn prometheus_export_passes_promtool_check_metrics() {
    let text = exports::prometheus_text(&prom_fixture());
    let Some((status, printed)) = promtool_check(&text) else {
        println!("skipped: needs promtool (apt-get install prometheus)");
        return;
    };
    assert!(
        status.success() && printed.trim().is_empty(),
        "promtool check metrics: {status}\n{printed}"
    );
    // The check is not a rubber stamp: the same text with a family split
    // in two is refused.
    let split = format!(
        "{text}{}",
        lines_of(&text, "# HELP latscope_nmi").join("\n") + "\n"
    );
    let (status, printed) = promtool_check(&split).unwrap();
    assert!(!status.success(), "{printed}");
}

#[test]
fn hdr_log_snapshot() {
    let expected = "\
#[Logged with latscope 0.1.0: run 3 on host]
#[Histogram log format version 1.3]
#[Values in nanoseconds]
#[StartTime: 1795730639.250 (seconds since epoch)]
#[BaseTime: 1795730639.250 (seconds since epoch)]
\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"
#[cell 0: probe timer, workload idle]
Tag=irq.exec.24:eth0/all,0.000,10.000,1200.000,HISTFAAAACN4nJNpmSzMwMDAxgABzFCaEUoz2X+AMPbzsMxlYwIAUKgD9g==
Tag=timer.latency/0,0.000,10.000,12007.000,HISTFAAAADx4nC3GuxEAEBAA0XOMGZ8hEEj0csXRgWJE6hDpQQcEZ5O3pfUEABE4+RUMXTp8I+ttbA1qelwOH6QAB88=
Tag=timer.latency/1,0.000,10.000,5503.000,HISTFAAAADx4nAExAM7/HISTEwAAAAkAAAAAAAAAAwAAAAAAAAABAAAAAAAAH/8/8AAAAAAAAIcOApURCJsWBHFJBZs=
#[cell 1: probe timer, workload cpu, heavy]
Tag=timer.latency/0,11.000,10.000,300031.000,HISTFAAAADx4nAExAM7/HISTEwAAAAkAAAAAAAAAAwAAAAAAAAABAAAAAAAH//8/8AAAAAAAAJ8vBJUIAutaAoWUB0A=
";
    assert_eq!(
        exports::hdr_interval_log(&fixture(), HdrUnit::Nanos).unwrap(),
        expected
    );
}

/// Decodes every interval of an HDR log with the hdrhistogram crate's own
/// reader: (tag, start s, length s, histogram).
fn read_log(text: &str) -> Vec<(String, f64, f64, hdrhistogram::Histogram<u64>)> {
    let mut out = Vec::new();
    for entry in IntervalLogIterator::new(text.as_bytes()) {
        if let LogEntry::Interval(h) = entry.unwrap() {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(h.encoded_histogram())
                .unwrap();
            let hist: hdrhistogram::Histogram<u64> =
                Deserializer::new().deserialize(&mut &bytes[..]).unwrap();
            out.push((
                h.tag().unwrap().as_str().to_string(),
                h.start_timestamp().as_secs_f64(),
                h.duration().as_secs_f64(),
                hist,
            ));
        }
    }
    out
}

#[test]
fn hdr_log_round_trips_through_the_hdrhistogram_reader() {
    let run = fixture();
    let text = exports::hdr_interval_log(&run, HdrUnit::Nanos).unwrap();
    let intervals = read_log(&text);
    let tags: Vec<&str> = intervals.iter().map(|i| i.0.as_str()).collect();
    assert_eq!(
        tags,
        [
            "irq.exec.24:eth0/all",
            "timer.latency/0",
            "timer.latency/1",
            "timer.latency/0"
        ]
    );
    // cells in order, in the interval log's clock (the second cell starts 11 s in)
    assert_eq!(intervals[3].1, 11.0);
    assert_eq!(intervals[3].2, 10.0);
    let sources = [
        &run.cells[0].metrics[0],
        &run.cells[0].metrics[1],
        &run.cells[0].metrics[2],
        &run.cells[1].metrics[1],
    ];
    for ((_, _, _, decoded), m) in intervals.iter().zip(sources) {
        let h = &m.histogram;
        assert_eq!(decoded.len(), h.count());
        for q in [0.0, 0.5, 0.9, 0.99, 1.0] {
            let ours = h.quantile(q).unwrap().as_u64();
            let theirs = decoded.value_at_quantile(q);
            // Same recording bucket: latscope clamps to the exact min and
            // max, HdrHistogram picks its own end of the bucket.
            assert!(
                decoded.equivalent(theirs, ours),
                "q={q}: hdr {theirs} vs latscope {ours}"
            );
        }
        let ours: Vec<(u64, u64)> = h.buckets().map(|(lo, _, c)| (lo, c)).collect();
        let theirs: Vec<(u64, u64)> = decoded
            .iter_recorded()
            .map(|v| {
                (
                    decoded.lowest_equivalent(v.value_iterated_to()),
                    v.count_at_value(),
                )
            })
            .collect();
        assert_eq!(ours, theirs);
    }
}

/// `timer.latency` on CPU 0 of cell 0 of the fixture in two checkpoint
/// intervals (0-4 s and 4-10 s), and an interval series of a metric the
/// cell does not have (ignored).
fn checkpoint_intervals() -> Vec<IntervalSeries> {
    let run = fixture();
    let whole = &run.cells[0].metrics[1].histogram;
    let mut first = Histogram::new();
    let mut second = Histogram::new();
    for (low, _, count) in whole.buckets() {
        if low < 3_000 {
            first.record_n(low, count);
        } else {
            second.record_n(low, count);
        }
    }
    let interval = |start: u64, end: u64, histogram: Histogram| Interval {
        start: Nanos::from_secs(start),
        end: Nanos::from_secs(end),
        start_unix: Nanos(run.meta.started_unix_ns.0 + start * 1_000_000_000),
        end_unix: Nanos(run.meta.started_unix_ns.0 + end * 1_000_000_000),
        histogram,
    };
    vec![
        IntervalSeries {
            cell: 0,
            metric: "timer.latency".into(),
            cpu: Some(CpuId(0)),
            intervals: vec![interval(0, 4, first), interval(4, 10, second)],
            merged: 1,
            stored: 2,
            window: None,
        },
        IntervalSeries {
            cell: 1,
            metric: "udp.send".into(),
            cpu: None,
            intervals: vec![interval(0, 10, whole.clone())],
            merged: 1,
            stored: 1,
            window: None,
        },
    ]
}

#[test]
fn hdr_log_has_one_interval_per_checkpoint_where_the_store_kept_them() {
    let run = fixture();
    let text = exports::hdr_checkpoint_log(&run, &checkpoint_intervals(), HdrUnit::Nanos).unwrap();
    assert!(text.contains(
        "#[cell 0: one interval per checkpoint for timer.latency; one for the whole cell for the other metrics]\n"
    ));
    assert!(
        !text.contains("#[cell 1: one interval per checkpoint"),
        "cell 1 has no interval of its metrics"
    );
    let intervals = read_log(&text);
    let lines: Vec<(&str, f64, f64, u64)> = intervals
        .iter()
        .map(|(tag, start, length, h)| (tag.as_str(), *start, *length, h.len()))
        .collect();
    assert_eq!(
        lines,
        [
            // time order within the cell; whole-cell lines at its start
            ("irq.exec.24:eth0/all", 0.0, 10.0, 3),
            ("timer.latency/0", 0.0, 4.0, 8),
            ("timer.latency/1", 0.0, 10.0, 7),
            ("timer.latency/0", 4.0, 6.0, 4),
            ("timer.latency/0", 11.0, 10.0, 4),
        ]
    );
    // The intervals add up to the cell's histogram.
    let whole = &run.cells[0].metrics[1].histogram;
    let mut sum = hdrhistogram::Histogram::<u64>::new(3).unwrap();
    sum.add(&intervals[1].3).unwrap();
    sum.add(&intervals[3].3).unwrap();
    assert_eq!(sum.len(), whole.count());
    assert!(sum.equivalent(sum.max(), 12_000));
    // Without intervals: the one-interval-per-cell log, unchanged.
    assert_eq!(
        exports::hdr_checkpoint_log(&run, &[], HdrUnit::Nanos).unwrap(),
        exports::hdr_interval_log(&run, HdrUnit::Nanos).unwrap()
    );
}

#[test]
fn hdr_log_in_microseconds() {
    let text = exports::hdr_interval_log(&fixture(), HdrUnit::Micros).unwrap();
    assert!(text.contains("#[Values in microseconds]\n"));
    let intervals = read_log(&text);
    let lat0 = &intervals[1].3;
    assert_eq!(lat0.len(), 12);
    assert_eq!(lat0.min(), 1);
    assert_eq!(lat0.max(), 12);
    assert_eq!(lat0.count_at(2), 5);
}

#[test]
fn exports_of_a_run_without_data_are_errors_not_panics() {
    let mut run = fixture();
    run.cells.truncate(0);
    let e = exports::cyclictest_histogram(&run, 100).unwrap_err();
    assert_eq!(
        e.to_string(),
        "run 3 has no timer.latency measurements, so there is no cyclictest histogram to export"
    );
    assert!(exports::hdr_interval_log(&run, HdrUnit::Nanos).is_err());
    assert!(exports::cyclictest_histogram(&fixture(), 0).is_err());
    assert_eq!(
        exports::summaries_csv(&run).lines().count(),
        1,
        "header only"
    );
    assert_eq!(exports::prometheus_text(&run), "");
}

#[test]
fn rt_tests_json_snapshot() {
    let expected = r#"{
  "file_version": 1,
  "cmdline:": "latscope suite",
  "rt_test_version:": "latscope 0.1.0",
  "start_time": "Thu, 26 Nov 2026 22:03:59 +0000",
  "end_time": "Thu, 26 Nov 2026 22:04:21 +0000",
  "return_code": 0,
  "sysinfo": {
    "sysname": "Linux",
    "nodename": "",
    "release": "",
    "version": "",
    "machine": "",
    "realtime": 0
  },
  "num_threads": 3,
  "resolution_in_ns": 0,
  "thread": {
    "0": {
      "histogram": {
        "1": 3,
        "2": 5,
        "3": 2,
        "7": 1,
        "12": 1
      },
      "cycles": 12,
      "min": 1,
      "max": 12,
      "avg": 3.55,
      "cpu": 0,
      "node": -1
    },
    "1": {
      "histogram": {
        "0": 1,
        "2": 4,
        "5": 2
      },
      "cycles": 7,
      "min": 0,
      "max": 5,
      "avg": 2.84,
      "cpu": 1,
      "node": -1
    },
    "2": {
      "histogram": {
        "4": 2,
        "6": 1,
        "300": 1
      },
      "cycles": 4,
      "min": 4,
      "max": 300,
      "avg": 78.50,
      "cpu": 0,
      "node": -1
    }
  },
  "latscope": {"run_id":3,"threads":[{"cell":0,"settings":{"clock_read_ns":0,"cpus":"","period_ns":1000000,"phase":"fixed","policy":"fifo","priority":95,"probe":"timer","timer_api":"clock_nanosleep"},"workload":"idle"},{"cell":0,"settings":{"clock_read_ns":0,"cpus":"","period_ns":1000000,"phase":"fixed","policy":"fifo","priority":95,"probe":"timer","timer_api":"clock_nanosleep"},"workload":"idle"},{"cell":1,"settings":{"clock_read_ns":0,"cpus":"","period_ns":1000000,"phase":"fixed","policy":"fifo","priority":95,"probe":"timer","timer_api":"clock_nanosleep"},"workload":"cpu, heavy"}],"version":"0.1.0"}
}
"#;
    let text = exports::rt_tests_json(&fixture(), exports::RtTestsUnit::Micros).unwrap();
    assert_eq!(text, expected);
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["thread"]["2"]["cycles"], 4);

    // Nanoseconds: every bucket under its own lowest value, the extremes
    // exact.
    let ns = exports::rt_tests_json(&fixture(), exports::RtTestsUnit::Nanos).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&ns).unwrap();
    assert_eq!(doc["resolution_in_ns"], 1);
    let t = &doc["thread"]["0"];
    assert_eq!(
        (t["min"].as_u64(), t["max"].as_u64()),
        (Some(1_500), Some(12_000))
    );
    assert_eq!(t["histogram"]["3998"], 2);
    assert_eq!(t["histogram"]["12000"], 1);
    assert_eq!(t["avg"].as_f64(), Some(3550.0));

    let mut run = fixture();
    run.cells
        .iter_mut()
        .for_each(|c| c.metrics.retain(|m| m.name != "timer.latency"));
    let e = exports::rt_tests_json(&run, exports::RtTestsUnit::Micros).unwrap_err();
    assert_eq!(
        e.to_string(),
        "run 3 has no timer.latency measurements, so there is nothing for rt-tests JSON"
    );
}
