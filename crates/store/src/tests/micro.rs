//! Micro runs: each benchmark's result stored with its cell in one write,
//! the run's context beside them, read back as written.

use super::*;
use crate::tests::backends::each_backend;
use latscope_model::{MicroContext, MicroCounter, MicroResult, MicroSettings};

fn micro_cell(index: u32, bench: &str) -> CellMeta {
    CellMeta {
        monotonic_start_ns: Nanos(1),
        ..CellMeta::new(
            index,
            "idle",
            CellSettings::Micro(MicroSettings {
                bench: bench.into(),
                iterations: 50,
                warmup: 5,
                cpu: 1,
                other_cpu: Some(0),
                ..MicroSettings::default()
            }),
            Nanos::ZERO,
        )
    }
}

fn result(bench: &str, median: f64) -> MicroResult {
    let (group, name) = bench.split_once('.').unwrap();
    MicroResult {
        bench: bench.into(),
        group: group.into(),
        name: name.into(),
        operation: "one call".into(),
        cpu: 1,
        iterations: 3,
        ops_per_iteration: 1000,
        median_ns: median,
        per_iteration_ns: vec![median - 1.0, median, median + 2.5],
        counters: vec![
            MicroCounter {
                name: "task-clock".into(),
                per_op: Some(median),
                unavailable: None,
            },
            MicroCounter {
                name: "cycles".into(),
                per_op: None,
                unavailable: Some("no hardware PMU".into()),
            },
        ],
        interrupts_per_iteration: Some(0.25),
        ..MicroResult::default()
    }
}

fn open(path: &Path) -> (Store, RunId) {
    let mut store = Store::open(path).unwrap();
    store.set_liveness_probe(always_alive);
    let run = store.create_run(&run_meta(), &system(), &caps()).unwrap();
    (store, run)
}

#[test]
fn a_micro_run_reads_back_as_written() {
    each_backend(|dir| {
        let (mut store, run) = open(&dir.at("s.db"));
        let context = MicroContext {
            null_ns: 41.5,
            caches: vec![latscope_model::CacheInfo {
                level: 1,
                kind: "Data".into(),
                bytes: 32 * 1024,
            }],
            counters: Vec::new(),
            quick: true,
        };
        store.set_micro_context(run, &context).unwrap();
        let a = result("syscall.getppid", 95.0);
        let b = result("vm.fault_anonymous", 700.25);
        store
            .add_micro_cell(run, &micro_cell(0, "syscall.getppid"), &a)
            .unwrap();
        store
            .add_micro_cell(run, &micro_cell(1, "vm.fault_anonymous"), &b)
            .unwrap();
        drop(store);

        let store = Store::open(&dir.at("s.db")).unwrap();
        let got = store.load_micro(run).unwrap().expect("a micro run");
        assert_eq!(got.context, Some(context));
        assert_eq!(got.cells.len(), 2);
        assert_eq!(got.cells[0].0, micro_cell(0, "syscall.getppid"));
        assert_eq!(got.cells[0].1, a);
        assert_eq!(got.cells[1].1, b);
        // The counter the machine lacks stays missing, with its reason.
        assert_eq!(got.cells[1].1.counters[1].per_op, None);
    });
}

#[test]
fn a_run_without_micro_cells_has_no_micro_results() {
    each_backend(|dir| {
        let (store, run, _) = super::checkpoint::open_with_cell(&dir.at("s.db"));
        assert_eq!(store.load_micro(run).unwrap(), None);
    });
}

#[test]
fn a_micro_result_under_other_settings_is_refused_and_stores_nothing() {
    each_backend(|dir| {
        let (mut store, run) = open(&dir.at("s.db"));
        let err = store
            .add_micro_cell(run, &cell(0), &result("syscall.getppid", 1.0))
            .unwrap_err();
        assert!(err.to_string().contains("micro") || err.to_string().contains("timer"));
        assert!(store.cell_ids(run).unwrap().is_empty());
        // A duplicate index fails inside the transaction: the first cell and
        // its result stay, nothing half-written is left.
        store
            .add_micro_cell(
                run,
                &micro_cell(0, "syscall.getppid"),
                &result("syscall.getppid", 1.0),
            )
            .unwrap();
        assert!(store
            .add_micro_cell(
                run,
                &micro_cell(0, "syscall.read"),
                &result("syscall.read", 2.0)
            )
            .is_err());
        let got = store.load_micro(run).unwrap().unwrap();
        assert_eq!(got.cells.len(), 1);
        assert_eq!(got.cells[0].1.bench, "syscall.getppid");
        // And the store still takes writes.
        store
            .add_micro_cell(
                run,
                &micro_cell(1, "syscall.read"),
                &result("syscall.read", 2.0),
            )
            .unwrap();
        assert_eq!(store.load_micro(run).unwrap().unwrap().cells.len(), 2);
    });
}
