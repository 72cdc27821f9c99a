//! A checkpoint is one transaction: all of it or none of it.

use super::*;
use crate::tests::backends::each_backend;

pub(super) fn open_with_cell(path: &Path) -> (Store, RunId, CellId) {
    let mut store = Store::open(path).unwrap();
    store.set_liveness_probe(always_alive);
    let run = store.create_run(&run_meta(), &system(), &caps()).unwrap();
    let cell_id = store.add_cell(run, &cell(0)).unwrap();
    (store, run, cell_id)
}

fn full_checkpoint(scale: u64, first_second: u64) -> Checkpoint {
    Checkpoint {
        duration: Nanos::from_secs(10 * scale),
        now_unix: Nanos(1_700_000_010_000_000_000 + scale),
        metrics: metrics(scale),
        timeline: vec![chunk(
            "timer.latency",
            Some(CpuId(0)),
            first_second,
            10,
            scale,
        )],
        noise: vec![noise(0, scale)],
        timer: vec![early(1, scale)],
        udp: None,
        workload: None,
        episodes: Vec::new(),
        windows: Vec::new(),
        trace_summary: None,
    }
}

#[test]
fn a_checkpoint_writes_every_table_together() {
    each_backend(|dir| {
        let (mut store, run, cell_id) = open_with_cell(&dir.at("s.db"));
        store
            .write_checkpoint(run, cell_id, &full_checkpoint(1, 0))
            .unwrap();
        let loaded = store.load_run(run).unwrap();
        let c = &loaded.cells[0];
        assert_eq!(c.meta.duration_ns, Nanos::from_secs(10));
        assert_eq!(sorted(c.metrics.clone()), sorted(metrics(1)));
        assert_eq!(c.noise, vec![noise(0, 1)]);
        assert_eq!(c.timer, vec![early(1, 1)]);
        let tl = store
            .load_timeline(cell_id, "timer.latency", Some(CpuId(0)))
            .unwrap();
        assert_eq!(tl.len(), 10);
    });
}

#[test]
fn a_failing_checkpoint_leaves_the_previous_one_whole() {
    each_backend(|dir| {
        let (mut store, run, cell_id) = open_with_cell(&dir.at("s.db"));
        store
            .write_checkpoint(run, cell_id, &full_checkpoint(1, 0))
            .unwrap();
        // The second checkpoint's metrics, timeline and noise figures are all
        // valid, but its episode is not (episodes are numbered from 1): the
        // store must refuse all of it, not keep the parts written before.
        let mut bad = full_checkpoint(2, 10);
        bad.episodes = vec![episode(0, 0, 200_000)];
        let e = store.write_checkpoint(run, cell_id, &bad).unwrap_err();
        assert!(matches!(e, StoreError::InvalidEpisode { .. }), "{e}");
        let loaded = store.load_run(run).unwrap();
        let c = &loaded.cells[0];
        assert_eq!(
            c.meta.duration_ns,
            Nanos::from_secs(10),
            "duration of the first"
        );
        assert_eq!(sorted(c.metrics.clone()), sorted(metrics(1)));
        assert_eq!(c.noise, vec![noise(0, 1)]);
        let tl = store
            .load_timeline(cell_id, "timer.latency", Some(CpuId(0)))
            .unwrap();
        assert_eq!(tl.len(), 10, "no chunk of the refused checkpoint");
        let kept = store.load_snapshots(cell_id).unwrap();
        assert_eq!(kept.len(), 1, "no snapshot of the refused checkpoint");
        assert_eq!(kept[0].at, Nanos::from_secs(10));
    });
}

#[test]
fn a_full_disk_is_one_clear_error_and_loses_nothing_stored() {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, run, cell_id) = open_with_cell(&dir.path().join("s.db"));
    store
        .write_checkpoint(run, cell_id, &full_checkpoint(1, 0))
        .unwrap();
    // Cap the file at its present size: the next checkpoint that needs a
    // new page fails with SQLITE_FULL, as on a full disk.
    let pages: i64 = store
        .db
        .query_row("PRAGMA page_count", [], |r| r.get(0))
        .unwrap();
    store
        .db
        .query_row(&format!("PRAGMA max_page_count = {pages}"), [], |_| Ok(()))
        .unwrap();
    let mut big = full_checkpoint(2, 10);
    big.timeline = (0..200)
        .map(|i| chunk("timer.latency", Some(CpuId(0)), 10 + i * 100, 100, i))
        .collect();
    let e = store.write_checkpoint(run, cell_id, &big).unwrap_err();
    assert!(matches!(e, StoreError::Full { .. }), "{e:?}");
    let line = e.to_string();
    assert!(line.contains("disk is full"), "{line}");
    assert_eq!(line.matches("full").count(), 1, "said once: {line}");
    assert!(!line.contains('\n'));
    let ok: String = store
        .db
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
    let loaded = store.load_run(run).unwrap();
    assert_eq!(sorted(loaded.cells[0].metrics.clone()), sorted(metrics(1)));
}

#[test]
fn space_is_held_back_from_the_new_run_to_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, run, _) = open_with_cell(&dir.path().join("s.db"));
    assert!(store.reserve.is_some(), "held once the run is recorded");
    store
        .finish_run(
            run,
            RunStatus::Failed,
            Nanos(1_700_000_020_000_000_000),
            &[],
        )
        .unwrap();
    assert!(store.reserve.is_none(), "given back when the run ends");
}
