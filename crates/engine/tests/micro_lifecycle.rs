//! `latscope micro` through the run lifecycle, with benchmarks that take a
//! few milliseconds (an empty operation): every benchmark a cell, a stop
//! that keeps the finished ones, a session that cannot start, a sink that
//! fails. What the real benchmarks measure is in the CLI's `micro_e2e`.
#![allow(clippy::unwrap_used)]

use std::cell::RefCell;
use std::path::PathBuf;
use std::sync::Arc;

use latscope_engine::probes::RealClock;
use latscope_engine::{
    run_micro, EngineError, Env, MemorySink, MicroPlan, Observer, RunOutcome, Sink, SinkError, Stop,
};
use latscope_micro::bench::{BenchError, Operation};
use latscope_micro::ops::Benchmark;
use latscope_micro::session::SessionOptions;
use latscope_model::{
    Capabilities, CellMeta, CellSettings, MicroContext, MicroResult, Nanos, RunId, RunMeta,
    RunStatus, SystemInfo,
};
use latscope_record::{CellKey, Checkpoint};

/// An operation that does nothing: a benchmark of a few milliseconds.
struct Empty;

impl Operation for Empty {
    fn run(&mut self, ops: u64) -> Result<(), BenchError> {
        std::hint::black_box(ops);
        Ok(())
    }
}

fn empty(name: &str) -> Benchmark {
    Benchmark::new("test", name, "nothing", false, |_| {
        Ok(Box::new(Empty) as Box<dyn Operation>)
    })
}

/// A benchmark that asks the run to stop while it is measured.
fn stopping(name: &str, stop: &Stop) -> Benchmark {
    let stop = stop.clone();
    Benchmark::new("test", name, "nothing", false, move |_| {
        stop.request(2);
        Ok(Box::new(Empty) as Box<dyn Operation>)
    })
}

fn plan(benchmarks: Vec<Benchmark>, cpu: u32) -> MicroPlan {
    let mut options = SessionOptions::new(cpu, None, true);
    options.iterations = 3;
    options.warmup = 0;
    MicroPlan {
        benchmarks,
        options,
        command_line: vec!["latscope".into(), "micro".into()],
    }
}

/// Records the benchmarks as the engine reports them.
#[derive(Default)]
struct Seen(Vec<String>);

impl Observer for Seen {
    fn micro_result(&mut self, r: &MicroResult) {
        self.0.push(r.bench.clone());
    }
}

fn env<'a>(stop: &Stop, seen: &'a mut Seen) -> Env<'a> {
    Env {
        clock: Arc::new(RealClock),
        stop: stop.clone(),
        observer: seen,
        names: &latscope_model::Neutral,
        system: Some(SystemInfo::default()),
        rescue: None,
    }
}

fn benches(sink: &MemorySink) -> Vec<String> {
    sink.micro().iter().map(|r| r.bench.clone()).collect()
}

#[test]
fn every_benchmark_is_a_cell_with_its_result() {
    let stop = Stop::new();
    let mut seen = Seen::default();
    let mut sink = MemorySink::new();
    let p = plan(vec![empty("a"), empty("b"), empty("c")], 0);
    let out = run_micro(&p, &mut sink, env(&stop, &mut seen)).unwrap();
    assert_eq!(out.status, RunStatus::Complete);
    assert!(out.sink_error.is_none());
    assert_eq!(seen.0, ["test.a", "test.b", "test.c"]);
    assert_eq!(benches(&sink), ["test.a", "test.b", "test.c"]);
    assert!(sink.micro_context().is_some(), "the context is recorded");
    let run = sink.run().unwrap();
    assert_eq!(run.meta.status, RunStatus::Complete);
    assert!(run.meta.notes.is_empty(), "{:?}", run.meta.notes);
    assert_eq!(run.cells.len(), 3);
    for (i, c) in run.cells.iter().enumerate() {
        assert_eq!(c.meta.index, i as u32);
        assert_eq!(c.meta.probe, "micro");
        let CellSettings::Micro(m) = &c.meta.settings else {
            panic!("{:?}", c.meta.settings)
        };
        assert_eq!(m.iterations, 3);
        assert!(c.meta.duration_ns > Nanos::ZERO);
    }
    // The outcome's copy holds the same.
    assert_eq!(out.micro.len(), 3);
    assert!(out
        .micro
        .iter()
        .all(|r| r.skipped.is_none() && r.iterations == 3));
}

#[test]
fn a_stop_keeps_every_finished_benchmark_and_says_how_many() {
    let stop = Stop::new();
    let mut seen = Seen::default();
    let mut sink = MemorySink::new();
    let p = plan(
        vec![empty("a"), stopping("b", &stop), empty("c"), empty("d")],
        0,
    );
    let out = run_micro(&p, &mut sink, env(&stop, &mut seen)).unwrap();
    // The benchmark running at the stop finishes; none starts after it.
    assert_eq!(out.status, RunStatus::Interrupted);
    assert_eq!(benches(&sink), ["test.a", "test.b"]);
    let run = sink.run().unwrap();
    assert_eq!(run.meta.status, RunStatus::Interrupted);
    assert_eq!(run.meta.notes, ["interrupted after 2 of 4 benchmarks"]);
    assert_eq!(run.cells.len(), 2);
}

#[test]
fn a_session_that_cannot_start_fails_the_run_with_its_reason() {
    let stop = Stop::new();
    let mut seen = Seen::default();
    let mut sink = MemorySink::new();
    // No machine has CPU 100000: the session cannot pin to it.
    let p = plan(vec![empty("a")], 100_000);
    let err = run_micro(&p, &mut sink, env(&stop, &mut seen)).unwrap_err();
    assert!(matches!(err, EngineError::Micro(_)), "{err:?}");
    assert!(err.to_string().contains("CPU 100000"), "{err}");
    let run = sink.run().unwrap();
    assert_eq!(run.meta.status, RunStatus::Failed);
    assert_eq!(run.meta.notes, [err.to_string()]);
    assert!(run.cells.is_empty());
    assert!(seen.0.is_empty());
}

/// A sink that refuses the microbenchmark numbered `fail_at` (from 0).
struct Refusing {
    inner: MemorySink,
    fail_at: usize,
    added: usize,
}

impl Sink for Refusing {
    fn create_run(
        &mut self,
        meta: &RunMeta,
        system: &SystemInfo,
        caps: &Capabilities,
    ) -> Result<RunId, SinkError> {
        self.inner.create_run(meta, system, caps)
    }
    fn update_capabilities(&mut self, run: RunId, caps: &Capabilities) -> Result<(), SinkError> {
        self.inner.update_capabilities(run, caps)
    }
    fn add_cell(&mut self, run: RunId, meta: &CellMeta) -> Result<CellKey, SinkError> {
        self.inner.add_cell(run, meta)
    }
    fn checkpoint(&mut self, run: RunId, cell: CellKey, cp: &Checkpoint) -> Result<(), SinkError> {
        self.inner.checkpoint(run, cell, cp)
    }
    fn finish_run(
        &mut self,
        run: RunId,
        status: RunStatus,
        ended_unix: Nanos,
        notes: &[String],
    ) -> Result<(), SinkError> {
        self.inner.finish_run(run, status, ended_unix, notes)
    }
    fn set_micro_context(&mut self, run: RunId, context: &MicroContext) -> Result<(), SinkError> {
        self.inner.set_micro_context(run, context)
    }
    fn add_micro_cell(
        &mut self,
        run: RunId,
        meta: &CellMeta,
        result: &MicroResult,
    ) -> Result<CellKey, SinkError> {
        self.added += 1;
        if self.added - 1 == self.fail_at {
            return Err(SinkError("disk full".into()));
        }
        self.inner.add_micro_cell(run, meta, result)
    }
}

#[test]
fn a_failing_sink_does_not_stop_the_benchmarks_and_the_whole_run_is_rescued() {
    let stop = Stop::new();
    let mut seen = Seen::default();
    let mut sink = Refusing {
        inner: MemorySink::new(),
        fail_at: 1,
        added: 0,
    };
    let rescued = RefCell::new(Vec::new());
    let rescue = |o: &RunOutcome| -> Result<PathBuf, String> {
        rescued
            .borrow_mut()
            .push(o.micro.iter().map(|r| r.bench.clone()).collect::<Vec<_>>());
        Ok(PathBuf::from("/rescue.json"))
    };
    let mut e = env(&stop, &mut seen);
    e.rescue = Some(&rescue);
    let p = plan(vec![empty("a"), empty("b"), empty("c")], 0);
    let out = run_micro(&p, &mut sink, e).unwrap();
    // The measurement completed; the sink holds what it took and says why
    // it is incomplete; the outcome and the rescue hold every benchmark.
    assert_eq!(out.status, RunStatus::Complete);
    assert_eq!(out.sink_error, Some(SinkError("disk full".into())));
    assert_eq!(benches(&sink.inner), ["test.a", "test.c"]);
    let stored = sink.inner.run().unwrap();
    assert_eq!(stored.meta.status, RunStatus::Failed);
    assert!(
        stored.meta.notes[0].starts_with("the store failed during the run (disk full)"),
        "{:?}",
        stored.meta.notes
    );
    assert_eq!(out.micro.len(), 3);
    assert_eq!(
        rescued.into_inner(),
        [vec!["test.a", "test.b", "test.c"]],
        "the rescue is written once, with the whole run"
    );
    assert_eq!(out.rescued, Some(Ok(PathBuf::from("/rescue.json"))));
    assert_eq!(out.result.cells.len(), 3);
}
