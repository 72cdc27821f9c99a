//! Snapshot tests of the run exports (CSV, cyclictest, HdrHistogram log,
//! Prometheus) on a fixed two-cell run, and a round trip of the HDR log
//! through the hdrhistogram crate's own reader and decoder.

#![allow(clippy::unwrap_used)]

use base64::Engine as _;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::serialization::Deserializer;
use latscope_model::{Capabilities, CellMeta, CpuId, Nanos, RunId, RunMeta, RunStatus, SystemInfo};
use latscope_report::exports::{self, HdrUnit};
use latscope_stats::{CellResult, MetricResult, RunResult};

fn metric(name: &str, cpu: Option<u32>, values: &[(u64, u64)]) -> MetricResult {
    let mut m = MetricResult::new(name, cpu.map(CpuId));
    for &(v, n) in values {
        m.histogram.record_n(v, n);
    }
    m
}

fn cell(index: u32, workload: &str, start_s: u64, metrics: Vec<MetricResult>) -> CellResult {
    CellResult {
        meta: CellMeta {
            index,
            probe: "timer".into(),
            workload: workload.into(),
            settings: latscope_model::CellSettings::default_for("timer").unwrap(),
            duration_ns: Nanos::from_secs(10),
            monotonic_start_ns: Nanos::from_secs(start_s),
        },
        metrics,
        trace: None,
        episodes: Vec::new(),
        noise: Vec::new(),
        timer: Vec::new(),
        udp: None,
        workload_stats: None,
    }
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
            id: RunId(3),
            started_unix_ns: Nanos(1_795_730_639_250_000_000),
            ended_unix_ns: Some(Nanos(1_795_730_661_000_000_000)),
            checkpoint_unix_ns: None,
            status: RunStatus::Complete,
            command_line: vec!["latscope".into(), "suite".into()],
            pid: 1,
            boot_id: "b".into(),
            hostname: "host".into(),
            tool_version: "0.1.0".into(),
            notes: vec![],
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

#[test]
fn prometheus_snapshot() {
    let text = exports::prometheus_text(&fixture());
    let expected_irq = "\
# HELP latscope_irq_exec_24_eth0_seconds latscope metric irq.exec.24:eth0 of run 3 (seconds).
# TYPE latscope_irq_exec_24_eth0_seconds histogram
latscope_irq_exec_24_eth0_seconds_bucket{cell=\"0\",probe=\"timer\",workload=\"idle\",cpu=\"all\",le=\"0.000001\"} 2
latscope_irq_exec_24_eth0_seconds_bucket{cell=\"0\",probe=\"timer\",workload=\"idle\",cpu=\"all\",le=\"0.000002\"} 3
latscope_irq_exec_24_eth0_seconds_bucket{cell=\"0\",probe=\"timer\",workload=\"idle\",cpu=\"all\",le=\"0.000004\"} 3
latscope_irq_exec_24_eth0_seconds_bucket{cell=\"0\",probe=\"timer\",workload=\"idle\",cpu=\"all\",le=\"0.000008\"} 3
latscope_irq_exec_24_eth0_seconds_bucket{cell=\"0\",probe=\"timer\",workload=\"idle\",cpu=\"all\",le=\"0.000016\"} 3
latscope_irq_exec_24_eth0_seconds_bucket{cell=\"0\",probe=\"timer\",workload=\"idle\",cpu=\"all\",le=\"0.000032\"} 3
latscope_irq_exec_24_eth0_seconds_bucket{cell=\"0\",probe=\"timer\",workload=\"idle\",cpu=\"all\",le=\"0.000064\"} 3
latscope_irq_exec_24_eth0_seconds_bucket{cell=\"0\",probe=\"timer\",workload=\"idle\",cpu=\"all\",le=\"0.000128\"} 3
latscope_irq_exec_24_eth0_seconds_bucket{cell=\"0\",probe=\"timer\",workload=\"idle\",cpu=\"all\",le=\"0.000256\"} 3
latscope_irq_exec_24_eth0_seconds_bucket{cell=\"0\",probe=\"timer\",workload=\"idle\",cpu=\"all\",le=\"0.000512\"} 3
latscope_irq_exec_24_eth0_seconds_bucket{cell=\"0\",probe=\"timer\",workload=\"idle\",cpu=\"all\",le=\"0.001024\"} 3
latscope_irq_exec_24_eth0_seconds_bucket{cell=\"0\",probe=\"timer\",workload=\"idle\",cpu=\"all\",le=\"0.002048\"} 3
latscope_irq_exec_24_eth0_seconds_bucket{cell=\"0\",probe=\"timer\",workload=\"idle\",cpu=\"all\",le=\"0.004096\"} 3
latscope_irq_exec_24_eth0_seconds_bucket{cell=\"0\",probe=\"timer\",workload=\"idle\",cpu=\"all\",le=\"0.008192\"} 3
latscope_irq_exec_24_eth0_seconds_bucket{cell=\"0\",probe=\"timer\",workload=\"idle\",cpu=\"all\",le=\"0.016384\"} 3
latscope_irq_exec_24_eth0_seconds_bucket{cell=\"0\",probe=\"timer\",workload=\"idle\",cpu=\"all\",le=\"0.032768\"} 3
latscope_irq_exec_24_eth0_seconds_bucket{cell=\"0\",probe=\"timer\",workload=\"idle\",cpu=\"all\",le=\"0.065536\"} 3
latscope_irq_exec_24_eth0_seconds_bucket{cell=\"0\",probe=\"timer\",workload=\"idle\",cpu=\"all\",le=\"0.131072\"} 3
latscope_irq_exec_24_eth0_seconds_bucket{cell=\"0\",probe=\"timer\",workload=\"idle\",cpu=\"all\",le=\"0.262144\"} 3
latscope_irq_exec_24_eth0_seconds_bucket{cell=\"0\",probe=\"timer\",workload=\"idle\",cpu=\"all\",le=\"0.524288\"} 3
latscope_irq_exec_24_eth0_seconds_bucket{cell=\"0\",probe=\"timer\",workload=\"idle\",cpu=\"all\",le=\"1.048576\"} 3
latscope_irq_exec_24_eth0_seconds_bucket{cell=\"0\",probe=\"timer\",workload=\"idle\",cpu=\"all\",le=\"+Inf\"} 3
latscope_irq_exec_24_eth0_seconds_sum{cell=\"0\",probe=\"timer\",workload=\"idle\",cpu=\"all\"} 0.0000028
latscope_irq_exec_24_eth0_seconds_count{cell=\"0\",probe=\"timer\",workload=\"idle\",cpu=\"all\"} 3
";
    let irq: String = text
        .lines()
        .filter(|l| l.contains("irq_exec"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(irq, expected_irq);
    let expected_cell1 = "\
latscope_timer_latency_seconds_bucket{cell=\"1\",probe=\"timer\",workload=\"cpu, heavy\",cpu=\"0\",le=\"0.000001\"} 0
latscope_timer_latency_seconds_bucket{cell=\"1\",probe=\"timer\",workload=\"cpu, heavy\",cpu=\"0\",le=\"0.000002\"} 0
latscope_timer_latency_seconds_bucket{cell=\"1\",probe=\"timer\",workload=\"cpu, heavy\",cpu=\"0\",le=\"0.000004\"} 2
latscope_timer_latency_seconds_bucket{cell=\"1\",probe=\"timer\",workload=\"cpu, heavy\",cpu=\"0\",le=\"0.000008\"} 3
latscope_timer_latency_seconds_bucket{cell=\"1\",probe=\"timer\",workload=\"cpu, heavy\",cpu=\"0\",le=\"0.000016\"} 3
latscope_timer_latency_seconds_bucket{cell=\"1\",probe=\"timer\",workload=\"cpu, heavy\",cpu=\"0\",le=\"0.000032\"} 3
latscope_timer_latency_seconds_bucket{cell=\"1\",probe=\"timer\",workload=\"cpu, heavy\",cpu=\"0\",le=\"0.000064\"} 3
latscope_timer_latency_seconds_bucket{cell=\"1\",probe=\"timer\",workload=\"cpu, heavy\",cpu=\"0\",le=\"0.000128\"} 3
latscope_timer_latency_seconds_bucket{cell=\"1\",probe=\"timer\",workload=\"cpu, heavy\",cpu=\"0\",le=\"0.000256\"} 3
latscope_timer_latency_seconds_bucket{cell=\"1\",probe=\"timer\",workload=\"cpu, heavy\",cpu=\"0\",le=\"0.000512\"} 4
latscope_timer_latency_seconds_bucket{cell=\"1\",probe=\"timer\",workload=\"cpu, heavy\",cpu=\"0\",le=\"0.001024\"} 4
latscope_timer_latency_seconds_bucket{cell=\"1\",probe=\"timer\",workload=\"cpu, heavy\",cpu=\"0\",le=\"0.002048\"} 4
latscope_timer_latency_seconds_bucket{cell=\"1\",probe=\"timer\",workload=\"cpu, heavy\",cpu=\"0\",le=\"0.004096\"} 4
latscope_timer_latency_seconds_bucket{cell=\"1\",probe=\"timer\",workload=\"cpu, heavy\",cpu=\"0\",le=\"0.008192\"} 4
latscope_timer_latency_seconds_bucket{cell=\"1\",probe=\"timer\",workload=\"cpu, heavy\",cpu=\"0\",le=\"0.016384\"} 4
latscope_timer_latency_seconds_bucket{cell=\"1\",probe=\"timer\",workload=\"cpu, heavy\",cpu=\"0\",le=\"0.032768\"} 4
latscope_timer_latency_seconds_bucket{cell=\"1\",probe=\"timer\",workload=\"cpu, heavy\",cpu=\"0\",le=\"0.065536\"} 4
latscope_timer_latency_seconds_bucket{cell=\"1\",probe=\"timer\",workload=\"cpu, heavy\",cpu=\"0\",le=\"0.131072\"} 4
latscope_timer_latency_seconds_bucket{cell=\"1\",probe=\"timer\",workload=\"cpu, heavy\",cpu=\"0\",le=\"0.262144\"} 4
latscope_timer_latency_seconds_bucket{cell=\"1\",probe=\"timer\",workload=\"cpu, heavy\",cpu=\"0\",le=\"0.524288\"} 4
latscope_timer_latency_seconds_bucket{cell=\"1\",probe=\"timer\",workload=\"cpu, heavy\",cpu=\"0\",le=\"1.048576\"} 4
latscope_timer_latency_seconds_bucket{cell=\"1\",probe=\"timer\",workload=\"cpu, heavy\",cpu=\"0\",le=\"+Inf\"} 4
latscope_timer_latency_seconds_sum{cell=\"1\",probe=\"timer\",workload=\"cpu, heavy\",cpu=\"0\"} 0.000314
latscope_timer_latency_seconds_count{cell=\"1\",probe=\"timer\",workload=\"cpu, heavy\",cpu=\"0\"} 4
";
    let cell1: String = text
        .lines()
        .filter(|l| l.contains("timer_latency") && l.contains("cell=\"1\""))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(cell1, expected_cell1);
    // One HELP and TYPE per family, families in name order.
    let types: Vec<&str> = text.lines().filter(|l| l.starts_with("# TYPE")).collect();
    assert_eq!(
        types,
        [
            "# TYPE latscope_irq_exec_24_eth0_seconds histogram",
            "# TYPE latscope_timer_interval_seconds histogram",
            "# TYPE latscope_timer_latency_seconds histogram",
        ]
    );
    assert_eq!(text.lines().filter(|l| l.starts_with("# HELP")).count(), 3);
    assert!(text.contains(
        "latscope_timer_latency_seconds_count{cell=\"0\",probe=\"timer\",workload=\"idle\",cpu=\"1\"} 7\n"
    ));
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
