//! The background load of a cell: started (and warmed up) before the probe,
//! watched while it runs, characterized once a second, stopped at the end,
//! on a stop request and (through the parent-death signal) when latscope is
//! killed.

use std::time::Duration;

use latscope_model::{CpuSet, WorkloadStats};
use latscope_platform::procstat::Sampler;
use latscope_probes::Clock;
use latscope_workloads::{LoadLevel, RtCounters, RunningWorkload, WorkloadSpec};

use crate::config::CellSpec;
use crate::request::RequestError;
use crate::stop::Stop;

/// Checks what a cell's workload needs before anything is measured: a
/// clear line for an unknown name or a missing program.
pub fn check(cell: &CellSpec) -> Result<(), RequestError> {
    if cell.workload == "none" {
        return Ok(());
    }
    let spec = WorkloadSpec::parse(&cell.workload).map_err(RequestError::Workload)?;
    latscope_workloads::check(&spec).map_err(RequestError::Workload)?;
    cell.load_level
        .parse::<LoadLevel>()
        .map_err(RequestError::LoadLevel)?;
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
    /// (time, counters) of the first reading, for an `rt:` workload.
    rt_first: Option<(u64, RtCounters)>,
}

/// Starts the cell's workload and waits out its warm-up.
pub fn start(cell: &CellSpec, stop: &Stop, clock: &dyn Clock) -> Result<CellLoad, String> {
    if cell.workload == "none" {
        return Ok(CellLoad {
            name: cell.workload.clone(),
            load: None,
            sampler: None,
            died: None,
            pty_first: None,
            rt_first: None,
        });
    }
    let spec = WorkloadSpec::parse(&cell.workload).map_err(|e| e.to_string())?;
    let level: LoadLevel = cell.load_level.parse().map_err(|e| format!("{e}"))?;
    if stop.stopped() {
        return Err("stopped before the workload started".into());
    }
    // The load runs on every online CPU: it is the machine that is loaded,
    // not only the measured CPUs.
    let load = latscope_workloads::start(
        &spec,
        level,
        &CpuSet::new(),
        Duration::from_nanos(cell.warmup.0),
    )
    .map_err(|e| format!("workload {}: {e}", cell.workload))?;
    let mut sampler = Sampler::new(&cell.cpu_set());
    for pid in load.netns_pids() {
        if let Ok(pid) = u32::try_from(pid) {
            sampler.watch_net_namespace(pid);
        }
    }
    let pty_first = load.pty_bytes().map(|b| (clock.monotonic_ns(), b));
    let rt_first = load.rt_counters().map(|c| (clock.monotonic_ns(), c));
    Ok(CellLoad {
        name: cell.workload.clone(),
        load: Some(load),
        sampler: Some(sampler),
        died: None,
        pty_first,
        rt_first,
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

    /// The characterization so far (for a checkpoint).
    pub fn stats(&self, clock: &dyn Clock) -> Option<WorkloadStats> {
        let mut st = self.sampler.as_ref()?.stats(&self.name);
        self.add_pty(&mut st, clock);
        self.add_rt(&mut st, clock);
        Some(st)
    }

    fn add_pty(&self, st: &mut WorkloadStats, clock: &dyn Clock) {
        if let (Some((t0, b0)), Some(load)) = (self.pty_first, self.load.as_ref()) {
            if let Some(b1) = load.pty_bytes() {
                let dt = clock.monotonic_ns().saturating_sub(t0);
                if dt > 0 {
                    st.pty_bytes_per_s = Some(b1.saturating_sub(b0) as f64 * 1e9 / dt as f64);
                }
            }
        }
    }

    fn add_rt(&self, st: &mut WorkloadStats, clock: &dyn Clock) {
        if let (Some((t0, c0)), Some(load)) = (self.rt_first, self.load.as_ref()) {
            if let Some(c1) = load.rt_counters() {
                let dt = clock.monotonic_ns().saturating_sub(t0);
                st.rt_load = c0.rates(&c1, dt);
            }
        }
    }

    /// Takes the last sample and stops the load: the final
    /// characterization, and a line when the load did not end cleanly.
    pub fn finish(mut self, clock: &dyn Clock) -> (Option<WorkloadStats>, Option<String>) {
        if let Some(s) = self.sampler.as_mut() {
            s.sample();
        }
        let mut stats = None;
        if let Some(s) = self.sampler.take() {
            let mut st = s.finish(&self.name);
            self.add_pty(&mut st, clock);
            self.add_rt(&mut st, clock);
            stats = Some(st);
        }
        let outcome = self.stop();
        if let (Some(st), Some(o)) = (stats.as_mut(), &outcome) {
            st.notes.push(o.clone());
        }
        (stats, outcome)
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
