//! The background load of a cell: started (and warmed up) before the probe,
//! watched while it runs, characterized once a second, stopped at the end,
//! on Ctrl-C and (through the parent-death signal) when latscope is killed.

use std::time::Duration;

use anyhow::Context;
use latscope_model::{CpuSet, WorkloadStats};
use latscope_platform::procstat::Sampler;
use latscope_platform::StopSignals;
use latscope_store::{CellId, Store};
use latscope_workloads::{LoadLevel, RunningWorkload, WorkloadSpec};

use crate::plan::CellPlan;

/// Checks what a cell's workload needs before anything is measured: a
/// clear line for an unknown name or a missing program.
pub fn check(cell: &CellPlan) -> Result<(), String> {
    if cell.workload == "none" {
        return Ok(());
    }
    let spec = WorkloadSpec::parse(&cell.workload).map_err(|e| format!("--workload: {e}"))?;
    latscope_workloads::check(&spec).map_err(|e| format!("--workload: {e}"))?;
    cell.load_level
        .parse::<LoadLevel>()
        .map_err(|e| format!("--load-level: {e}"))?;
    Ok(())
}

/// A running workload and its characterization (nothing for `none`).
pub struct CellLoad {
    name: String,
    load: Option<RunningWorkload>,
    sampler: Option<Sampler>,
    died: Option<String>,
    /// (time, bytes) of the first pty reading, for the tty workload.
    pty_first: Option<(u64, u64)>,
}

pub fn start(cell: &CellPlan, _online: &CpuSet, signals: &StopSignals) -> anyhow::Result<CellLoad> {
    if cell.workload == "none" {
        return Ok(CellLoad {
            name: cell.workload.clone(),
            load: None,
            sampler: None,
            died: None,
            pty_first: None,
        });
    }
    let spec = WorkloadSpec::parse(&cell.workload)?;
    let level: LoadLevel = cell.load_level.parse()?;
    if signals.stopped() {
        anyhow::bail!("stopped before the workload started");
    }
    // The load runs on every online CPU: it is the machine that is loaded,
    // not only the measured CPUs.
    let load = latscope_workloads::start(
        &spec,
        level,
        &CpuSet::new(),
        Duration::from_nanos(cell.warmup.0),
    )
    .with_context(|| format!("workload {}", cell.workload))?;
    let mut sampler = Sampler::new(&cell.cpus);
    for pid in load.netns_pids() {
        if let Ok(pid) = u32::try_from(pid) {
            sampler.watch_net_namespace(pid);
        }
    }
    let pty_first = load
        .pty_bytes()
        .map(|b| (latscope_platform::monotonic_ns(), b));
    Ok(CellLoad {
        name: cell.workload.clone(),
        load: Some(load),
        sampler: Some(sampler),
        died: None,
        pty_first,
    })
}

impl CellLoad {
    /// Once a second: a characterization sample, and whether the load is
    /// still alive.
    pub fn tick(&mut self) {
        if let Some(s) = self.sampler.as_mut() {
            s.sample();
        }
        if self.died.is_none() {
            if let Some(l) = self.load.as_mut() {
                self.died = l.poll();
            }
        }
    }

    /// Why the load stopped early, if it did.
    pub fn died(&self) -> Option<String> {
        self.died.clone()
    }

    fn stats(&self) -> Option<WorkloadStats> {
        let mut st = self.sampler.as_ref()?.stats(&self.name);
        self.add_pty(&mut st);
        Some(st)
    }

    fn add_pty(&self, st: &mut WorkloadStats) {
        if let (Some((t0, b0)), Some(load)) = (self.pty_first, self.load.as_ref()) {
            if let Some(b1) = load.pty_bytes() {
                let dt = latscope_platform::monotonic_ns().saturating_sub(t0);
                if dt > 0 {
                    st.pty_bytes_per_s = Some(b1.saturating_sub(b0) as f64 * 1e9 / dt as f64);
                }
            }
        }
    }

    pub fn checkpoint(&mut self, store: &mut Store, cell: CellId) -> anyhow::Result<()> {
        if let Some(st) = self.stats() {
            store.set_workload_stats(cell, &st)?;
        }
        Ok(())
    }

    /// Takes the last sample, stores the characterization, stops the load.
    pub fn finish(mut self, store: &mut Store, cell: CellId) -> anyhow::Result<Option<String>> {
        if let Some(s) = self.sampler.as_mut() {
            s.sample();
        }
        let mut stats = None;
        if let Some(s) = self.sampler.take() {
            let mut st = s.finish(&self.name);
            self.add_pty(&mut st);
            stats = Some(st);
        }
        let outcome = self.stop();
        if let Some(mut st) = stats {
            if let Some(o) = &outcome {
                st.notes.push(o.clone());
            }
            store
                .set_workload_stats(cell, &st)
                .context("cannot store the workload characterization")?;
        }
        Ok(outcome)
    }

    /// Stops the load (idempotent); a line when it did not end cleanly.
    pub fn stop(&mut self) -> Option<String> {
        let out = self.load.take()?.stop();
        if out.clean() {
            return None;
        }
        let mut parts = Vec::new();
        if let Some(d) = &out.died {
            parts.push(format!("died: {d}"));
        }
        if !out.survivors.is_empty() {
            parts.push(format!(
                "processes that could not be ended: {:?}",
                out.survivors
            ));
        }
        parts.extend(out.cleanup_errors.iter().cloned());
        Some(format!("workload {}: {}", out.workload, parts.join("; ")))
    }
}
