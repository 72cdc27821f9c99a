//! `latscope export --format hdr` with one interval per checkpoint, read by
//! an independent HdrHistogram reader: the Python `hdrhistogram` package
//! (module `hdrh`, HdrHistogram_py), a port of the Java HistogramLogReader
//! and of its V2 compressed-histogram decoder.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Stdio};

use crate::common::*;
use latscope_model::CpuId;
use latscope_store::Store;

const SKIP: &str = "skipped: needs the Python hdrhistogram package (pip install hdrhistogram)";

/// Reads an interval log with HdrHistogram_py and prints one line per
/// interval: tag, start and end (ms since the epoch, as the reader puts
/// them), total count.
const READER: &str = r#"
import sys
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader

reader = HistogramLogReader(sys.argv[1], HdrHistogram(1, 3600 * 10**9, 3))
while True:
    h = reader.get_next_interval_histogram()
    if h is None:
        break
    print("%s %.3f %.3f %d" % (h.get_tag(), h.get_start_time_stamp(),
                               h.get_end_time_stamp(), h.get_total_count()))
"#;

fn python_has_hdrh() -> bool {
    Command::new("python3")
        .args(["-c", "import hdrh.log, hdrh.histogram"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// One interval as the Python reader saw it.
#[derive(Debug)]
struct Read {
    tag: String,
    start_ms: f64,
    end_ms: f64,
    count: u64,
}

fn read_with_python(log: &Path) -> Vec<Read> {
    let o = Command::new("python3")
        .args(["-c", READER])
        .arg(log)
        .output()
        .unwrap();
    assert!(o.status.success(), "hdrh reader: {}", stderr(&o));
    stdout(&o)
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            Read {
                tag: f[0].to_string(),
                start_ms: f[1].parse().unwrap(),
                end_ms: f[2].parse().unwrap(),
                count: f[3].parse().unwrap(),
            }
        })
        .collect()
}

fn export_hdr(store: &str, out: &Path) -> String {
    let o = latscope(&[
        "export",
        "latest",
        "--format",
        "hdr",
        "--output",
        out.to_str().unwrap(),
        "--store",
        store,
    ]);
    assert_eq!(o.status.code(), Some(0), "export: {}", stderr(&o));
    stderr(&o)
}

#[test]
fn the_hdr_log_has_one_interval_per_checkpoint_read_by_hdrhistogram_py() {
    if !python_has_hdrh() {
        println!("{SKIP}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let s = store.to_str().unwrap();
    {
        let _guard = serial();
        let o = latscope(&[
            "run",
            "--duration",
            "5s",
            "--checkpoint",
            "1s",
            "--cpus",
            "0",
            "--warmup",
            "0s",
            "--quiet",
            "--store",
            s,
        ]);
        assert_eq!(o.status.code(), Some(0), "run: {}", stderr(&o));
    }
    let log = dir.path().join("run.hlog");
    let notes = export_hdr(s, &log);
    assert!(!notes.contains("note:"), "{notes}");

    // What the store kept: the checkpoints (every one of a 5 s cell is
    // among its snapshots), the intervals, the cumulative metric.
    let db = Store::open_existing(&store).unwrap();
    let id = db.resolve("latest").unwrap();
    let cell = db.cell_ids(id).unwrap()[0];
    let checkpoints = db.load_snapshots(cell).unwrap().len();
    let series = db.load_intervals(cell).unwrap().unwrap();
    let lat = series
        .iter()
        .find(|s| s.metric == "timer.latency" && s.cpu == Some(CpuId(0)))
        .unwrap();
    let run = db.load_run(id).unwrap();
    let total = run.cells[0]
        .metrics
        .iter()
        .find(|m| m.name == "timer.latency" && m.cpu == Some(CpuId(0)))
        .unwrap()
        .histogram
        .count();

    let read = read_with_python(&log);
    let intervals: Vec<&Read> = read.iter().filter(|r| r.tag == "timer.latency/0").collect();
    println!(
        "hdrh read {} intervals of timer.latency/0 for {checkpoints} checkpoints: {:?}",
        intervals.len(),
        intervals.iter().map(|r| r.count).collect::<Vec<_>>()
    );
    assert!(
        (4..=6).contains(&checkpoints),
        "5 s at --checkpoint 1s: {checkpoints} checkpoints"
    );
    assert_eq!(intervals.len(), checkpoints, "one interval per checkpoint");
    assert_eq!(lat.intervals.len(), checkpoints);
    let theirs: Vec<u64> = intervals.iter().map(|r| r.count).collect();
    let ours: Vec<u64> = lat.intervals.iter().map(|i| i.histogram.count()).collect();
    assert_eq!(theirs, ours, "per-interval totals");
    assert_eq!(
        theirs.iter().sum::<u64>(),
        total,
        "they add up to the run's"
    );
    // At 1 ms, about 1,000 wake-ups a second in each interval.
    assert!(theirs.iter().all(|&n| n > 500), "{theirs:?}");
    // Back to back in the reader's clock: each starts where the one before
    // ended (the log's millisecond resolution).
    for w in intervals.windows(2) {
        assert!((w[1].start_ms - w[0].end_ms).abs() <= 1.0, "{w:?}");
    }
    let first = intervals[0].start_ms / 1e3;
    let started = run.meta.started_unix_ns.as_secs_f64();
    assert!(
        (first - started).abs() < 1.0,
        "the first interval starts with the run: {first} vs {started}"
    );
    // The metric that keeps no intervals: one for the whole cell.
    assert_eq!(
        read.iter().filter(|r| r.tag == "timer.interval/0").count(),
        1
    );

    // The report plots the same intervals over time, with a table row
    // each.
    let o = latscope(&["report", "latest", "--html", "-", "--store", s]);
    assert_eq!(o.status.code(), Some(0), "report: {}", stderr(&o));
    let html = stdout(&o);
    let at = html.find("<h4>Percentiles over time</h4>").unwrap();
    let part = &html[at..];
    assert!(part.contains(&format!("CPU 0: p50, p99, p99.9 and the largest sample of the samples recorded between consecutive checkpoints ({checkpoints} checkpoint intervals")));
    let table = &part[..part.find("</table>").unwrap()];
    assert_eq!(table.matches("<tr><td>").count(), checkpoints, "{table}");

    // A run stored without intervals (as before schema 13): a note, and
    // one interval per cell and metric with the whole histogram.
    {
        let conn = rusqlite::Connection::open(&store).unwrap();
        conn.execute_batch("DELETE FROM metric_intervals; DELETE FROM interval_marks")
            .unwrap();
    }
    let old = dir.path().join("old.hlog");
    let notes = export_hdr(s, &old);
    assert!(
        notes.contains("note: run 1 was stored without checkpoint intervals"),
        "{notes}"
    );
    assert_eq!(notes.lines().count(), 1, "{notes}");
    let read = read_with_python(&old);
    let whole: Vec<&Read> = read.iter().filter(|r| r.tag == "timer.latency/0").collect();
    assert_eq!(whole.len(), 1);
    assert_eq!(whole[0].count, total);
}
