//! Whole runs written at once (`Store::insert_run`, for `latscope
//! import`): read back as written, stored whole or not at all, and the
//! run's source kept beside it (schema version 11).

use super::*;
use crate::tests::backends::each_backend;
use latscope_model::RunSource;
use latscope_record::{CellResult, RunResult};

fn source() -> RunSource {
    RunSource {
        tool: "cyclictest".into(),
        tool_version: Some("2.40".into()),
        format: "cyclictest-json".into(),
        file: "board7.json".into(),
        command_line: Some("cyclictest -m -q -h 200 --json=board7.json".into()),
        label: Some("board 7".into()),
        imported_unix_ns: Nanos(1_800_000_000_000_000_000),
    }
}

fn cell_result(meta: CellMeta, duration: Nanos) -> CellResult {
    CellResult::new(
        CellMeta {
            duration_ns: duration,
            ..meta
        },
        Vec::new(),
    )
}

/// A run with one cell of each kind of figure the store keeps.
fn whole_run() -> RunResult {
    let mut timer = cell_result(cell(0), Nanos::from_secs(8));
    timer.metrics = sorted(metrics(1));
    timer.timer = vec![TimerCpuStats {
        cpu: CpuId(1),
        early_wakeups: 3,
        max_early_ns: Nanos(420),
    }];
    timer.episodes = vec![episode(1, 0, 600_000), episode(2, 1, 700_000)];
    timer.trace = Some(summary());
    timer.workload_stats = Some(workload(3));
    let mut noise_c = cell_result(noise_cell(1), Nanos::from_secs(2));
    noise_c.noise = vec![noise(0, 1), noise(1, 2)];
    let mut gap = MetricResult::new("noise.gap", Some(CpuId(0)));
    gap.histogram = hist(&[1_000, 2_000, 32_000, 3_461_000]);
    gap.histogram.set_sum(3_500_000);
    noise_c.metrics = vec![gap];
    let mut udp_c = cell_result(udp_cell(2), Nanos::from_secs(1));
    udp_c.udp = Some(udp(1));
    RunResult {
        meta: RunMeta {
            status: RunStatus::Complete,
            ended_unix_ns: Some(Nanos(1_700_000_010_000_000_000)),
            checkpoint_unix_ns: None,
            pid: 0,
            boot_id: String::new(),
            source: Some(source()),
            ..run_meta()
        },
        system: system(),
        capabilities: caps(),
        cells: vec![timer, noise_c, udp_c],
    }
}

fn count(store: &Store, table: &str) -> i64 {
    store
        .db
        .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
        .unwrap()
}

#[test]
fn a_whole_run_is_stored_at_once_and_reads_back_as_written() {
    each_backend(|dir| {
        let path = dir.at("s.db");
        let mut store = Store::open(&path).unwrap();
        let first = store.create_run(&run_meta(), &system(), &caps()).unwrap();
        let run = whole_run();
        let id = store.insert_run(&run).unwrap();
        assert_eq!(id, RunId(first.0 + 1));
        drop(store);

        let store = Store::open_existing(&path).unwrap();
        let loaded = store.load_run(id).unwrap();
        let mut want = run.clone();
        want.meta.id = id;
        assert_eq!(loaded, want);
        // The custom sum of a rebuilt histogram survives the store.
        assert_eq!(loaded.cells[1].metrics[0].histogram.sum(), 3_500_000);

        let listed = store.list_runs().unwrap();
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[0].meta.source, None);
        assert_eq!(listed[1].meta.source, Some(source()));
        assert_eq!(listed[1].max_timer_latency, Some(Nanos(50_000)));
        // Each cell's metrics are its snapshot at its duration, as a final
        // checkpoint leaves them.
        let c0 = store.cell_ids(id).unwrap()[0];
        let snaps = store.load_snapshots(c0).unwrap();
        assert_eq!(snaps.len(), 1);
        assert_eq!(snaps[0].at, Nanos::from_secs(8));
    });
}

#[test]
fn a_run_that_fails_part_way_leaves_nothing() {
    each_backend(|dir| {
        let path = dir.at("s.db");
        let mut store = Store::open(&path).unwrap();

        // The last cell's settings name another probe.
        let mut bad = whole_run();
        bad.cells[2].meta.probe = "timer".into();
        let e = store.insert_run(&bad).unwrap_err();
        assert!(matches!(e, StoreError::MismatchedSettings { .. }), "{e}");

        // Two cells with one index.
        let mut twice = whole_run();
        twice.cells[2].meta.index = 0;
        let e = store.insert_run(&twice).unwrap_err();
        assert!(matches!(e, StoreError::DuplicateCell { .. }), "{e}");

        // The same CPU twice in the last cell's noise figures.
        let mut dup = whole_run();
        dup.cells[1].noise = vec![noise(0, 1), noise(0, 2)];
        assert!(store.insert_run(&dup).is_err());

        // A count beyond what SQLite holds, in the last cell.
        let mut huge = whole_run();
        let mut u = udp(1);
        u.sent = u64::MAX;
        huge.cells[2].udp = Some(u);
        let e = store.insert_run(&huge).unwrap_err();
        assert!(matches!(e, StoreError::OutOfRange { .. }), "{e}");

        for table in [
            "runs",
            "systems",
            "capabilities",
            "cells",
            "metrics",
            "metric_snapshots",
            "noise_stats",
            "timer_stats",
            "episodes",
            "trace_summaries",
            "workload_stats",
            "udp_stats",
        ] {
            assert_eq!(count(&store, table), 0, "{table}");
        }
        assert!(store.list_runs().unwrap().is_empty());
        // And the store takes the good run afterwards.
        let id = store.insert_run(&whole_run()).unwrap();
        assert_eq!(store.load_run(id).unwrap().cells.len(), 3);
    });
}

#[test]
fn a_version_10_store_gains_the_source_column_and_keeps_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v10.db");
    let mut store = Store::open(&path).unwrap();
    let run = store.create_run(&run_meta(), &system(), &caps()).unwrap();
    let c = store.add_cell(run, &cell(0)).unwrap();
    store
        .checkpoint(run, c, Nanos::from_secs(1), &metrics(1), &[], Nanos(1))
        .unwrap();
    drop(store);
    // Back to version 10: the column did not exist then.
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "DROP INDEX runs_uuid; ALTER TABLE runs DROP COLUMN uuid; \
             ALTER TABLE runs DROP COLUMN source",
        )
        .unwrap();
        conn.pragma_update(None, "user_version", 10).unwrap();
    }

    let mut store = Store::open_existing(&path).unwrap();
    store.set_liveness_probe(always_alive);
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let loaded = store.load_run(run).unwrap();
    assert_eq!(loaded.meta.source, None);
    // Schema 12 gave the old run a uuid.
    assert_eq!(store.run_uuid(run).unwrap().len(), 36);
    assert_eq!(loaded.meta.notes, run_meta().notes);
    assert_eq!(loaded.cells[0].metrics, sorted(metrics(1)));
    let id = store.insert_run(&whole_run()).unwrap();
    assert_eq!(store.load_run(id).unwrap().meta.source, Some(source()));
}

#[test]
fn a_source_that_is_not_json_or_not_a_source_is_refused_or_reported() {
    each_backend(|dir| {
        let path = dir.at("s.db");
        let mut store = Store::open(&path).unwrap();
        let id = store.insert_run(&whole_run()).unwrap();
        let garbage = store
            .db
            .execute("UPDATE runs SET source = 'not json' WHERE id = ?1", [id.0]);
        assert!(garbage.is_err(), "the schema refuses text that is not JSON");
        store
            .db
            .execute("UPDATE runs SET source = '[1, 2]' WHERE id = ?1", [id.0])
            .unwrap();
        let e = store.load_run(id).unwrap_err();
        assert!(matches!(e, StoreError::Corrupt { .. }), "{e}");
        assert!(one_line(&e).contains("source"), "{e}");
    });
}
