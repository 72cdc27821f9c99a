//! The interval histogram of each checkpoint: what is kept, that the
//! intervals add up to the cumulative metric, that a refused checkpoint
//! keeps none, retention, and stores from before schema version 13.

use latscope_record::IntervalSeries;

use super::checkpoint::open_with_cell;
use super::*;
use crate::tests::backends::each_backend;

const UNIX0: u64 = 1_700_000_000_000_000_000;

/// Cumulative histograms after `step` checkpoints: each step adds samples
/// to `timer.latency` on CPUs 0 and 1, to `timer.interval` (which keeps no
/// intervals) and, from step 2 on, to `udp.send`.
fn cumulative(step: u64) -> Vec<MetricResult> {
    let mut out = Vec::new();
    for cpu in 0..2u32 {
        let mut lat = MetricResult::new("timer.latency", Some(CpuId(cpu)));
        let mut gap = MetricResult::new("timer.interval", Some(CpuId(cpu)));
        for s in 1..=step {
            for k in 0..100 * s {
                lat.histogram
                    .record(5_000 + 37 * k + u64::from(cpu) * 11 + s);
                gap.histogram.record(1_000_000 + k);
            }
            // One large value per step, rising: every interval's max is new.
            lat.histogram.record(100_000 * s + u64::from(cpu));
        }
        out.push(lat);
        out.push(gap);
    }
    if step >= 2 {
        let mut udp = MetricResult::new("udp.send", None);
        for s in 2..=step {
            udp.histogram.record_n(20_000 + s, 10 * s);
        }
        out.push(udp);
    }
    out
}

fn checkpoint_at(step: u64, secs: u64) -> Checkpoint {
    Checkpoint {
        duration: Nanos::from_secs(secs),
        now_unix: Nanos(UNIX0 + secs * 1_000_000_000 + 50_000_000),
        metrics: cumulative(step),
        ..Checkpoint::default()
    }
}

fn series<'a>(all: &'a [IntervalSeries], name: &str, cpu: Option<u32>) -> &'a IntervalSeries {
    all.iter()
        .find(|s| s.metric == name && s.cpu == cpu.map(CpuId))
        .unwrap_or_else(|| panic!("no series {name} {cpu:?}"))
}

/// Every bucket of the intervals together equals the cumulative histogram.
fn assert_adds_up(s: &IntervalSeries, cumulative: &Histogram) {
    let total = s.total();
    assert_eq!(total.count(), cumulative.count(), "{}", s.metric);
    assert_eq!(total.sum(), cumulative.sum(), "{}", s.metric);
    assert_eq!(
        total.buckets().collect::<Vec<_>>(),
        cumulative.buckets().collect::<Vec<_>>(),
        "{}",
        s.metric
    );
    assert_eq!(total.max(), cumulative.max(), "{}", s.metric);
}

#[test]
fn intervals_add_up_to_the_cumulative_metric() {
    each_backend(|dir| {
        let (mut store, run, c) = open_with_cell(&dir.at("s.db"));
        for step in 1..=3 {
            store
                .write_checkpoint(run, c, &checkpoint_at(step, step))
                .unwrap();
        }
        // The final checkpoint of a cell at its planned end, just after a
        // periodic one at the same measured time: its few samples join the
        // last interval.
        store
            .write_checkpoint(run, c, &checkpoint_at(4, 3))
            .unwrap();

        let all = store.load_intervals(c).unwrap().unwrap();
        let names: Vec<(&str, Option<CpuId>)> =
            all.iter().map(|s| (s.metric.as_str(), s.cpu)).collect();
        assert_eq!(
            names,
            vec![
                ("timer.latency", Some(CpuId(0))),
                ("timer.latency", Some(CpuId(1))),
                ("udp.send", None),
            ],
            "timer.interval keeps no intervals"
        );
        let last = cumulative(4);
        for s in &all {
            let cum = &last
                .iter()
                .find(|m| m.name == s.metric && m.cpu == s.cpu)
                .unwrap()
                .histogram;
            assert_adds_up(s, cum);
        }
        let lat0 = series(&all, "timer.latency", Some(0));
        assert_eq!(lat0.intervals.len(), 3, "one per checkpoint time");
        assert_eq!(lat0.cell, 0);
        let bounds: Vec<(u64, u64)> = lat0
            .intervals
            .iter()
            .map(|i| (i.start.0 / 1_000_000_000, i.end.0 / 1_000_000_000))
            .collect();
        assert_eq!(bounds, vec![(0, 1), (1, 2), (2, 3)]);
        // The wall clock: the first starts its length before its end, the
        // others where the one before ended.
        let i = &lat0.intervals;
        assert_eq!(i[0].start_unix, Nanos(UNIX0 + 50_000_000));
        assert_eq!(i[1].start_unix, i[0].end_unix);
        assert_eq!(i[2].end_unix, Nanos(UNIX0 + 3_050_000_000));
        // Each interval holds its own step's samples (step 3 and 4 together
        // in the last), with its own maximum.
        let counts: Vec<u64> = i.iter().map(|i| i.histogram.count()).collect();
        assert_eq!(counts, vec![101, 201, 301 + 401]);
        assert_eq!(i[1].histogram.max(), Some(Nanos(200_000)));
        assert_eq!(i[2].histogram.max(), Some(Nanos(400_000)));
        // udp.send appeared at the second checkpoint: its first interval is
        // the second one of the cell.
        let udp = series(&all, "udp.send", None);
        assert_eq!(udp.intervals.len(), 2);
        assert_eq!(udp.intervals[0].start, Nanos::from_secs(1));
        // The samples and max columns repeat the histogram's.
        let (rows, samples): (i64, i64) = store
            .db
            .query_row(
                "SELECT COUNT(*), CAST(SUM(samples) AS BIGINT) FROM metric_intervals WHERE name = 'timer.latency'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!(rows, 6);
        let both: u64 = cumulative(4)
            .iter()
            .filter(|m| m.name == "timer.latency")
            .map(|m| m.histogram.count())
            .sum();
        assert_eq!(samples as u64, both);
    });
}

#[test]
fn a_failed_checkpoint_writes_no_interval() {
    each_backend(|dir| {
        let (mut store, run, c) = open_with_cell(&dir.at("s.db"));
        store
            .write_checkpoint(run, c, &checkpoint_at(1, 1))
            .unwrap();
        // Valid metrics, an invalid episode (episodes are numbered from 1):
        // the whole checkpoint is refused, its intervals with it.
        let mut bad = checkpoint_at(2, 2);
        bad.episodes = vec![episode(0, 0, 200_000)];
        let e = store.write_checkpoint(run, c, &bad).unwrap_err();
        assert!(matches!(e, StoreError::InvalidEpisode { .. }), "{e}");
        let all = store.load_intervals(c).unwrap().unwrap();
        assert_eq!(series(&all, "timer.latency", Some(0)).intervals.len(), 1);
        assert!(all.iter().all(|s| s.metric != "udp.send"));

        // The next checkpoint's interval spans the refused one's time too,
        // and the intervals still add up.
        store
            .write_checkpoint(run, c, &checkpoint_at(3, 3))
            .unwrap();
        let all = store.load_intervals(c).unwrap().unwrap();
        let lat1 = series(&all, "timer.latency", Some(1));
        let bounds: Vec<(Nanos, Nanos)> = lat1.intervals.iter().map(|i| (i.start, i.end)).collect();
        assert_eq!(
            bounds,
            vec![
                (Nanos::ZERO, Nanos::from_secs(1)),
                (Nanos::from_secs(1), Nanos::from_secs(3))
            ]
        );
        let cum = cumulative(3);
        for s in &all {
            let m = cum
                .iter()
                .find(|m| m.name == s.metric && m.cpu == s.cpu)
                .unwrap();
            assert_adds_up(s, &m.histogram);
        }
    });
}

#[test]
fn a_cell_without_checkpoint_intervals_says_so() {
    each_backend(|dir| {
        let (mut store, run, c) = open_with_cell(&dir.at("s.db"));
        assert_eq!(store.load_intervals(c).unwrap(), None, "no checkpoint yet");
        // An imported run is stored whole, not checkpointed: no intervals.
        let imported = latscope_record::RunResult {
            meta: run_meta(),
            system: system(),
            capabilities: caps(),
            cells: vec![latscope_record::CellResult {
                meta: cell(0),
                metrics: cumulative(2),
                trace: None,
                episodes: Vec::new(),
                noise: Vec::new(),
                timer: Vec::new(),
                udp: None,
                workload_stats: None,
            }],
        };
        let id = store.insert_run(&imported).unwrap();
        for cell in store.cell_ids(id).unwrap() {
            assert_eq!(store.load_intervals(cell).unwrap(), None);
        }
        assert!(matches!(
            store.load_intervals(CellId(999)),
            Err(StoreError::NoSuchCell(_))
        ));
        store
            .write_checkpoint(run, c, &checkpoint_at(1, 1))
            .unwrap();
        assert!(store.load_intervals(c).unwrap().is_some());
    });
}

#[test]
fn retention_deletes_a_runs_old_intervals_only() {
    each_backend(|dir| {
        let (mut store, run, c) = open_with_cell(&dir.at("s.db"));
        let other = store.create_run(&run_meta(), &system(), &caps()).unwrap();
        let oc = store.add_cell(other, &cell(0)).unwrap();
        for step in 1..=3 {
            store
                .write_checkpoint(run, c, &checkpoint_at(step, step))
                .unwrap();
            store
                .write_checkpoint(other, oc, &checkpoint_at(step, step))
                .unwrap();
        }
        // Intervals that ended before second 2.5 of the wall clock: the first
        // two (they end at 1.05 s and 2.05 s), of both CPUs and udp.send's one.
        let deleted = store
            .prune_intervals(run, Nanos(UNIX0 + 2_500_000_000))
            .unwrap();
        assert_eq!(deleted, 2 + 2 + 1);
        let left = store.load_intervals(c).unwrap().unwrap();
        assert!(left.iter().all(|s| s.intervals.len() == 1));
        assert_eq!(
            series(&left, "timer.latency", Some(0)).intervals[0].start,
            Nanos::from_secs(2)
        );
        let untouched = store.load_intervals(oc).unwrap().unwrap();
        assert_eq!(
            series(&untouched, "timer.latency", Some(0)).intervals.len(),
            3
        );
    });
}

#[test]
fn a_version_12_store_gains_the_interval_tables() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let (run, c) = {
        let (mut store, run, c) = open_with_cell(&dir.path().join("s.db"));
        store
            .write_checkpoint(run, c, &checkpoint_at(1, 1))
            .unwrap();
        (run, c)
    };
    // Back to version 12: the tables did not exist then.
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("DROP TABLE metric_intervals; DROP TABLE interval_marks")
            .unwrap();
        conn.pragma_update(None, "user_version", 12).unwrap();
    }
    let mut store = Store::open_existing(&path).unwrap();
    store.set_liveness_probe(always_alive);
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let loaded = store.load_run(run).unwrap();
    assert_eq!(
        sorted(loaded.cells[0].metrics.clone()),
        sorted(cumulative(1))
    );
    assert_eq!(store.load_intervals(c).unwrap(), None, "stored before 13");
    // A cell stored before, checkpointed again after the upgrade: its
    // first interval starts at its last stored checkpoint, not at 0.
    store
        .write_checkpoint(run, c, &checkpoint_at(2, 2))
        .unwrap();
    let all = store.load_intervals(c).unwrap().unwrap();
    let lat = series(&all, "timer.latency", Some(0));
    assert_eq!(lat.intervals.len(), 1);
    assert_eq!(lat.intervals[0].start, Nanos::from_secs(1));
    assert_eq!(lat.intervals[0].histogram.count(), 201);
}

#[test]
fn intervals_read_for_a_plot_are_merged_in_groups_that_add_up() {
    each_backend(|dir| {
        let (mut store, run, c) = open_with_cell(&dir.at("s.db"));
        for step in 1..=10 {
            store
                .write_checkpoint(run, c, &checkpoint_at(step, step))
                .unwrap();
        }
        let whole = store.load_intervals(c).unwrap().unwrap();
        let merged = store.load_intervals_merged(c, 3).unwrap().unwrap();
        assert_eq!(merged.len(), whole.len());
        for (m, w) in merged.iter().zip(&whole) {
            assert_eq!((&m.metric, m.cpu), (&w.metric, w.cpu));
            assert_eq!(m.stored, w.intervals.len());
            assert_eq!(w.merged, 1);
            // 10 (udp.send: 9) intervals in at most 3 groups of 4 (3).
            let size = w.intervals.len().div_ceil(3);
            assert_eq!(m.merged, size, "{}", m.metric);
            assert_eq!(m.intervals.len(), w.intervals.len().div_ceil(size));
            for (k, group) in w.intervals.chunks(size).enumerate() {
                let got = &m.intervals[k];
                let mut want = Histogram::new();
                for i in group {
                    want.merge(&i.histogram);
                }
                assert_eq!(got.histogram, want, "{} group {k}", m.metric);
                assert_eq!(got.start, group[0].start);
                assert_eq!(got.end, group[group.len() - 1].end);
                assert_eq!(got.start_unix, group[0].start_unix);
                assert_eq!(got.end_unix, group[group.len() - 1].end_unix);
            }
            assert_eq!(m.total(), w.total());
        }
        // As many points as intervals: nothing merged.
        let same = store.load_intervals_merged(c, 400).unwrap().unwrap();
        assert_eq!(same, whole);
    });
}

#[test]
fn intervals_read_pooled_merge_the_cpus_of_each_group() {
    each_backend(|dir| {
        let (mut store, run, c) = open_with_cell(&dir.at("s.db"));
        for step in 1..=10 {
            store
                .write_checkpoint(run, c, &checkpoint_at(step, step))
                .unwrap();
        }
        let merged = store.load_intervals_merged(c, 3).unwrap().unwrap();
        let pooled = store.load_intervals_pooled(c, 3).unwrap().unwrap();
        let mut names: Vec<&str> = merged.iter().map(|s| s.metric.as_str()).collect();
        names.dedup();
        assert_eq!(pooled.len(), names.len(), "one series per metric");
        for p in &pooled {
            assert_eq!(p.cpu, None);
            let per_cpu: Vec<_> = merged.iter().filter(|s| s.metric == p.metric).collect();
            assert_eq!(p.stored, per_cpu[0].stored, "{}", p.metric);
            assert_eq!(p.intervals.len(), per_cpu[0].intervals.len());
            for (k, got) in p.intervals.iter().enumerate() {
                let mut want = Histogram::new();
                for s in &per_cpu {
                    want.merge(&s.intervals[k].histogram);
                }
                assert_eq!(got.histogram, want, "{} group {k}", p.metric);
                assert_eq!(got.end, per_cpu[0].intervals[k].end);
            }
        }
    });
}
