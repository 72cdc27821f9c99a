//! Copying runs between stores (push, pull): every row of the run, once,
//! recognised again by its uuid; a running run is refused.

use super::*;
use crate::tests::backends::each_backend;
use crate::{Copied, Span, Window};

fn measured_run(store: &mut Store) -> RunId {
    let run = store.create_run(&run_meta(), &system(), &caps()).unwrap();
    for index in 0..2 {
        let cell_id = store.add_cell(run, &cell(index)).unwrap();
        let cp = Checkpoint {
            duration: Nanos::from_secs(10),
            now_unix: Nanos(1_700_000_010_000_000_000),
            metrics: metrics(u64::from(index) + 1),
            timeline: vec![chunk("timer.latency", Some(CpuId(0)), 0, 10, 3)],
            noise: vec![noise(0, 2)],
            timer: vec![early(1, 2)],
            udp: None,
            workload: None,
            episodes: Vec::new(),
            windows: Vec::new(),
            trace_summary: None,
        };
        store.write_checkpoint(run, cell_id, &cp).unwrap();
    }
    store
        .put_window(
            run,
            &Window {
                span: Span::Minute,
                start_unix: Nanos::from_secs(1_700_000_040),
                metric: "timer.latency".into(),
                cpu: Some(CpuId(0)),
                histogram: hist(&[5_000, 7_000]),
            },
        )
        .unwrap();
    store
        .finish_run(
            run,
            RunStatus::Complete,
            Nanos(1_700_000_020_000_000_000),
            &[],
        )
        .unwrap();
    run
}

#[test]
fn a_copied_run_is_the_same_run_and_a_second_copy_finds_it() {
    each_backend(|dir| {
        let mut here = Store::open(&dir.at("here.db")).unwrap();
        let mut there = Store::open(&dir.at("there.db")).unwrap();
        // The target numbers runs its own way: it has one already.
        measured_run(&mut there);
        let run = measured_run(&mut here);

        let copied = here.copy_run(run, &mut there).unwrap();
        let Copied::Stored(new) = copied else {
            panic!("{copied:?}")
        };
        assert_ne!(new, run);
        assert_eq!(here.run_uuid(run).unwrap(), there.run_uuid(new).unwrap());
        let mut a = here.load_run(run).unwrap();
        let b = there.load_run(new).unwrap();
        a.meta.id = new;
        assert_eq!(a, b);
        let cells_here = here.cell_ids(run).unwrap();
        let cells_there = there.cell_ids(new).unwrap();
        for (h, t) in cells_here.iter().zip(&cells_there) {
            assert_eq!(
                here.load_timeline(*h, "timer.latency", Some(CpuId(0)))
                    .unwrap(),
                there
                    .load_timeline(*t, "timer.latency", Some(CpuId(0)))
                    .unwrap()
            );
            assert_eq!(
                here.load_snapshots(*h).unwrap().len(),
                there.load_snapshots(*t).unwrap().len()
            );
        }
        assert_eq!(
            here.windows(run, Span::Minute, Nanos::ZERO).unwrap(),
            there.windows(new, Span::Minute, Nanos::ZERO).unwrap()
        );

        // Again: found, not stored twice.
        assert_eq!(
            here.copy_run(run, &mut there).unwrap(),
            Copied::Present(new)
        );
        assert_eq!(there.list_runs().unwrap().len(), 2);
        // And back the other way: it is the same run.
        assert_eq!(
            there.copy_run(new, &mut here).unwrap(),
            Copied::Present(run)
        );
    });
}

#[test]
fn a_run_still_being_measured_is_not_copied() {
    each_backend(|dir| {
        let mut here = Store::open(&dir.at("here.db")).unwrap();
        here.set_liveness_probe(always_alive);
        let mut there = Store::open(&dir.at("there.db")).unwrap();
        let run = here.create_run(&run_meta(), &system(), &caps()).unwrap();
        let e = here.copy_run(run, &mut there).unwrap_err();
        assert_eq!(
            one_line(&e),
            format!("run {run} is still being measured: copy it once it has ended")
        );
        assert!(there.list_runs().unwrap().is_empty());
    });
}

#[test]
fn every_run_has_a_distinct_uuid() {
    each_backend(|dir| {
        let mut store = Store::open(&dir.at("s.db")).unwrap();
        let a = store.create_run(&run_meta(), &system(), &caps()).unwrap();
        let b = store.create_run(&run_meta(), &system(), &caps()).unwrap();
        let (ua, ub) = (store.run_uuid(a).unwrap(), store.run_uuid(b).unwrap());
        assert_ne!(ua, ub);
        assert_eq!(ua.len(), 36);
        assert_eq!(store.find_uuid(&ub).unwrap(), Some(b));
        assert_eq!(store.find_uuid("nope").unwrap(), None);
    });
}

/// A source store's catalog is another user's: a table or column it adds,
/// named to break out of a quoted identifier, never reaches the SQL. The
/// run is copied whole, the target's schema stays latscope's own.
#[test]
fn names_from_the_source_catalog_never_reach_the_sql() {
    each_backend(|dir| {
        let mut here = Store::open(&dir.at("here.db")).unwrap();
        let mut there = Store::open(&dir.at("there.db")).unwrap();
        let run = measured_run(&mut here);
        here.db
            .execute_batch(
                "CREATE TABLE \"evil\"\"; DROP TABLE runs; --\" (cell_id INTEGER, x TEXT); \
                 ALTER TABLE noise_stats ADD COLUMN \"y\"\") VALUES (1); DROP TABLE cells; --\" TEXT",
            )
            .unwrap();
        let copied = here.copy_run(run, &mut there).unwrap();
        let Copied::Stored(new) = copied else {
            panic!("{copied:?}")
        };
        let mut a = here.load_run(run).unwrap();
        a.meta.id = new;
        assert_eq!(a, there.load_run(new).unwrap());
        let tables: Vec<String> = match there.db.dialect() {
            crate::Dialect::Sqlite => there
                .collect(
                    "SELECT name FROM sqlite_schema WHERE type = 'table'",
                    [],
                    |r| r.get(0),
                )
                .unwrap(),
            crate::Dialect::Postgres => there
                .collect(
                    "SELECT relname::text FROM pg_class c JOIN pg_namespace n \
                     ON n.oid = c.relnamespace WHERE n.nspname = current_schema() \
                     AND c.relkind = 'r'",
                    [],
                    |r| r.get(0),
                )
                .unwrap(),
        };
        assert!(tables.iter().all(|t| !t.contains("evil")), "{tables:?}");
        assert!(tables.iter().any(|t| t == "runs") && tables.iter().any(|t| t == "cells"));
    });
}
