//! Cells measured together through the engine with real timer threads
//! (SCHED_OTHER: no privilege needed; nothing is asserted about latency,
//! which is the CLI's known-answer test): one run, one cell per priority,
//! one time zero, each cell stored with its policy and the list of the
//! cells it ran with, its own samples on the shared grid.

use std::sync::Arc;

use latscope_engine::probes::RealClock;
use latscope_engine::{Env, Guards, MemorySink, Quiet, RunConfig, RunRequest, Stop};
use latscope_model::{metric, CpuId, CpuSet, Nanos, Policy, RunStatus};
use latscope_platform::SchedPolicy;

#[test]
fn priorities_run_as_cells_started_together_and_stored_apart() {
    let online: CpuSet = [CpuId(0)].into_iter().collect();
    let request = RunRequest {
        cpus: Some("0".into()),
        duration: Some(Nanos::from_millis(300)),
        priorities: vec![(SchedPolicy::Other, 0), (SchedPolicy::Batch, 0)],
        ..RunRequest::default()
    };
    let plan = request.plan(&online).unwrap();
    let cells = plan.cells();
    let config = RunConfig {
        checkpoint: Nanos::from_secs(10),
        trace: None,
        guards: Guards::NONE,
        command_line: vec!["test".into()],
        stop_above: None,
        unbounded: false,
    };
    let mut sink = MemorySink::new();
    let mut quiet = Quiet;
    let env = Env {
        clock: Arc::new(RealClock),
        stop: Stop::new(),
        observer: &mut quiet,
        names: &latscope_model::Neutral,
        system: Some(latscope_model::SystemInfo::default()),
        rescue: None,
    };
    let out = latscope_engine::run(&config, &cells, &online, &mut sink, env).unwrap();
    assert_eq!(
        out.status,
        RunStatus::Complete,
        "{:?}",
        out.result.meta.notes
    );
    let stored = &out.result.cells;
    assert_eq!(stored.len(), 2);
    let zero = stored[0].meta.monotonic_start_ns;
    for (i, (c, policy)) in stored
        .iter()
        .zip([Policy::Other, Policy::Batch])
        .enumerate()
    {
        assert_eq!(c.meta.index, i as u32);
        assert_eq!(c.meta.monotonic_start_ns, zero, "one time zero");
        let common = c.meta.settings.common();
        assert_eq!(common.policy, policy);
        assert_eq!(common.together, Some(vec![0, 1]));
        let lat = c
            .metrics
            .iter()
            .find(|m| m.name == metric::TIMER_LATENCY)
            .unwrap();
        // 300 ms at 1 ms: each thread woke for (nearly) every deadline.
        assert!(lat.histogram.count() >= 250, "{}", lat.histogram.count());
        assert!(c.meta.duration_ns >= Nanos::from_millis(290));
    }
}
