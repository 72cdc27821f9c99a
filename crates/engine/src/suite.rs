//! Suites: a matrix of probes × workloads × scheduling settings, run as the
//! cells of one run, one cell at a time. What `latscope suite` runs, and
//! what a monitoring daemon repeats: the presets, the parsing of the three
//! lists, and the grid of cells built from the probes' base settings.

use latscope_model::{CpuSet, Nanos};
use latscope_platform::SchedPolicy;
use latscope_probes::noise::NoiseConfig;
use latscope_probes::timer::TimerConfig;
use latscope_probes::udp::UdpConfig;

use crate::config::{CellSpec, ProbeSpec};
use crate::cpus::CpuChoiceError;
use crate::request::{ProbeKind, RequestError, RunPlan, RunRequest};
use crate::workload_list::{split_workloads, WorkloadListError};

/// What a preset runs, written as a user would write the lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Preset {
    /// Probes, e.g. `timer,noise,udp`.
    pub probes: &'static str,
    /// Workloads, e.g. `idle,cpu,memory,net`.
    pub workloads: &'static str,
    /// The length of each cell, e.g. `10s`.
    pub cell_duration: &'static str,
    /// Policies and priorities, e.g. `95,other` (see [`parse_priorities`]).
    pub priorities: &'static str,
}

impl Preset {
    /// A few minutes: every probe under idle, cpu, memory and net, 10 s
    /// cells at FIFO 95.
    pub const QUICK: Preset = Preset {
        probes: "timer,noise,udp",
        workloads: "idle,cpu,memory,net",
        cell_duration: "10s",
        priorities: "95",
    };
    /// About 45 minutes: every probe under every workload, 45 s cells, at
    /// FIFO 95 and as a normal thread.
    pub const STANDARD: Preset = Preset {
        probes: "timer,noise,udp",
        workloads: "idle,cpu,memory,compile,disk,net,tty,fork,timer",
        cell_duration: "45s",
        priorities: "95,other",
    };
    /// Hours: as [`Preset::STANDARD`] with 5 min cells, so that per-hour
    /// statistics mean something.
    pub const LONG: Preset = Preset {
        probes: "timer,noise,udp",
        workloads: "idle,cpu,memory,compile,disk,net,tty,fork,timer",
        cell_duration: "5m",
        priorities: "95,other",
    };
}

/// A probe a suite can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SuiteProbe {
    Timer,
    Noise,
    Udp,
}

/// A list of a suite that does not parse, or a cell that cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    /// A name in the probe list that is no probe.
    #[error("unknown probe '{0}' (timer, noise, udp)")]
    UnknownProbe(String),
    /// The workload list.
    #[error(transparent)]
    Workloads(#[from] WorkloadListError),
    /// An item of the priority list.
    #[error("'{0}' is not a priority 1-99, rr:N, fifo:N, other, batch or idle")]
    Priority(String),
    /// The base has no settings for a probe of the matrix.
    #[error("no {0} plan")]
    NoBase(&'static str),
    /// The base request breaks a rule.
    #[error(transparent)]
    Request(#[from] RequestError),
}

/// `timer,noise,udp`; a probe named twice runs once.
pub fn parse_probes(list: &str) -> Result<Vec<SuiteProbe>, SuiteError> {
    let mut out = Vec::new();
    for p in list.split(',').map(str::trim) {
        let probe = match p {
            "timer" => SuiteProbe::Timer,
            "noise" => SuiteProbe::Noise,
            "udp" => SuiteProbe::Udp,
            other => return Err(SuiteError::UnknownProbe(other.to_string())),
        };
        if !out.contains(&probe) {
            out.push(probe);
        }
    }
    Ok(out)
}

/// `95` → FIFO 95, `other` → SCHED_OTHER (priority 0), `batch` and
/// `idle` likewise, `rr:50` → RR 50, `fifo:50` → FIFO 50; a setting named
/// twice runs once.
pub fn parse_priorities(list: &str) -> Result<Vec<(SchedPolicy, u32)>, SuiteError> {
    let items = crate::request::parse_priority_list(list).map_err(|e| match e {
        RequestError::PriorityItem(item) => SuiteError::Priority(item),
        other => SuiteError::Request(other),
    })?;
    let mut out = Vec::with_capacity(items.len());
    for p in items {
        if !out.contains(&p) {
            out.push(p);
        }
    }
    Ok(out)
}

/// What a suite measures: its three lists, parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SuiteMatrix {
    pub probes: Vec<SuiteProbe>,
    /// Workload names as given (checked when the run is prepared).
    pub workloads: Vec<String>,
    pub priorities: Vec<(SchedPolicy, u32)>,
}

impl SuiteMatrix {
    /// Parses the probe, workload and priority lists, in that order (the
    /// first bad one is the error).
    pub fn parse(probes: &str, workloads: &str, priorities: &str) -> Result<Self, SuiteError> {
        Ok(SuiteMatrix {
            probes: parse_probes(probes)?,
            workloads: split_workloads(workloads)?,
            priorities: parse_priorities(priorities)?,
        })
    }

    /// The number of cells: probes × workloads × settings.
    pub fn len(&self) -> usize {
        self.probes.len() * self.workloads.len() * self.priorities.len()
    }

    /// Whether the matrix has no cell.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The run's plan and its cells from `base`, the request every cell
    /// starts from (its probe is ignored; its workloads are the matrix's).
    /// The noise and udp probes keep the least timer slack; the udp probe
    /// sends and receives on the first two of the request's CPUs.
    pub fn plan(
        &self,
        base: &RunRequest,
        online: &CpuSet,
    ) -> Result<(RunPlan, Vec<CellSpec>), SuiteError> {
        let timer = RunRequest {
            probe: ProbeKind::Timer,
            workloads: self.workloads.clone(),
            ..base.clone()
        };
        let plan = timer.plan(online)?;
        let other = |probe| RunRequest {
            probe,
            timer: crate::request::TimerOptions {
                slack: None,
                ..base.timer.clone()
            },
            ..base.clone()
        };
        let noise = match self.probes.contains(&SuiteProbe::Noise) {
            true => match other(ProbeKind::Noise).plan(online)?.probe {
                ProbeSpec::Noise(n) => Some(n),
                _ => None,
            },
            false => None,
        };
        let udp = match self.probes.contains(&SuiteProbe::Udp) {
            true => {
                let mut r = other(ProbeKind::Udp);
                if let Some(list) = &base.cpus {
                    let set = CpuSet::parse(list).map_err(|e| {
                        SuiteError::Request(RequestError::Cpus(CpuChoiceError::List(e)))
                    })?;
                    let two: Vec<String> = set.iter().take(2).map(|c| c.to_string()).collect();
                    r.cpus = Some(two.join(","));
                }
                match r.plan(online)?.probe {
                    ProbeSpec::Udp(u) => Some(u),
                    _ => None,
                }
            }
            false => None,
        };
        let suite_base = SuiteBase {
            timer: plan.timer.clone(),
            noise,
            udp,
            load_level: plan.load_level.clone(),
            warmup: plan.warmup,
            cpus: plan.cpus.clone(),
        };
        let cells = self.cells(&suite_base)?;
        Ok((plan, cells))
    }

    /// The cells, numbered: for each workload, each probe, each setting,
    /// the probe's base settings at that policy and priority.
    pub fn cells(&self, base: &SuiteBase) -> Result<Vec<CellSpec>, SuiteError> {
        let mut cells: Vec<CellSpec> = Vec::with_capacity(self.len());
        for workload in &self.workloads {
            for probe in &self.probes {
                for &(policy, priority) in &self.priorities {
                    // `other` parses to priority 0; the engine checks every
                    // cell's settings before it measures.
                    let mut timer = base.timer.clone();
                    timer.policy = policy;
                    timer.priority = priority;
                    let probe = match probe {
                        SuiteProbe::Timer => ProbeSpec::Timer(timer),
                        SuiteProbe::Noise => {
                            let mut n = base.noise.clone().ok_or(SuiteError::NoBase("noise"))?;
                            n.policy = timer.policy;
                            n.priority = timer.priority;
                            ProbeSpec::Noise(n)
                        }
                        SuiteProbe::Udp => {
                            let mut u = base.udp.clone().ok_or(SuiteError::NoBase("udp"))?;
                            u.policy = timer.policy;
                            u.priority = timer.priority;
                            ProbeSpec::Udp(u)
                        }
                    };
                    cells.push(CellSpec {
                        index: cells.len() as u32,
                        of: 0,
                        probe,
                        workload: workload.clone(),
                        load_level: base.load_level.clone(),
                        warmup: base.warmup,
                        cpus: base.cpus.clone(),
                        together: Vec::new(),
                        instance: 0,
                    });
                }
            }
        }
        let n = cells.len() as u32;
        for c in &mut cells {
            c.of = n;
        }
        Ok(cells)
    }
}

/// The settings every cell of a suite starts from; each cell replaces the
/// policy and priority with its own.
#[derive(Clone, Debug)]
pub struct SuiteBase {
    /// The timer probe's settings (and what every probe shares: CPUs,
    /// duration, threshold).
    pub timer: TimerConfig,
    /// The noise probe's, when the matrix runs it.
    pub noise: Option<NoiseConfig>,
    /// The udp probe's, when the matrix runs it.
    pub udp: Option<UdpConfig>,
    pub load_level: String,
    pub warmup: Nanos,
    /// The CPUs as the user gave them (recorded with the settings).
    pub cpus: CpuSet,
}

impl SuiteMatrix {
    /// The grid in one line: `cells` cells of `per_cell` measuring, each
    /// after `warmup`.
    pub fn describe(&self, cells: usize, per_cell: Nanos, warmup: Nanos) -> String {
        let total = Nanos((per_cell.0 + warmup.0).saturating_mul(cells as u64));
        format!(
            "{cells} cells ({} probe(s) x {} workload(s) x {} setting(s)), about {total} in all",
            self.probes.len(),
            self.workloads.len(),
            self.priorities.len()
        )
    }
}

#[cfg(test)]
mod tests {
    use latscope_model::CpuId;
    use latscope_probes::timer::{Phase, TimerApi};

    use super::*;

    #[test]
    fn the_grid_is_described_in_one_line() {
        let m = SuiteMatrix::parse("timer,noise,udp", "idle,cpu", "95,other")
            .map_err(|e| e.to_string());
        assert_eq!(
            m.map(|m| m.describe(12, Nanos::from_secs(10), Nanos::from_secs(2))),
            Ok(
                "12 cells (3 probe(s) x 2 workload(s) x 2 setting(s)), about 144s in all"
                    .to_string()
            )
        );
    }

    #[test]
    fn priorities_read_like_the_studies_compared_them() {
        let p = parse_priorities("95,50,other").unwrap_or_default();
        assert_eq!(
            p,
            vec![
                (SchedPolicy::Fifo, 95),
                (SchedPolicy::Fifo, 50),
                (SchedPolicy::Other, 0)
            ]
        );
        assert_eq!(
            parse_priorities("rr:10").unwrap_or_default(),
            vec![(SchedPolicy::Rr, 10)]
        );
        assert_eq!(
            parse_priorities("batch,idle,batch").unwrap_or_default(),
            vec![(SchedPolicy::Batch, 0), (SchedPolicy::Idle, 0)]
        );
        assert!(matches!(
            parse_priorities("95,0"),
            Err(SuiteError::Priority(p)) if p == "0"
        ));
        assert!(parse_priorities("fast").is_err());
        assert!(matches!(
            parse_probes("timer,jitter"),
            Err(SuiteError::UnknownProbe(p)) if p == "jitter"
        ));
    }

    fn timer() -> TimerConfig {
        TimerConfig {
            cpus: vec![CpuId(0)],
            period: Nanos::from_millis(1),
            policy: SchedPolicy::Fifo,
            priority: 95,
            nice: None,
            api: TimerApi::ClockNanosleep,
            phase: Phase::Fixed,
            threshold: None,
            duration: Some(Nanos::from_secs(10)),
            handoff: 0,
            noise_duty: None,
            timer_slack: Default::default(),
        }
    }

    #[test]
    fn the_grid_runs_every_probe_under_every_workload_at_every_setting() {
        let m = SuiteMatrix::parse("timer", "idle,cpu", "95,other").unwrap();
        let base = SuiteBase {
            timer: timer(),
            noise: None,
            udp: None,
            load_level: "normal".into(),
            warmup: Nanos::from_secs(2),
            cpus: [CpuId(0)].into_iter().collect(),
        };
        let cells = m.cells(&base).unwrap();
        assert_eq!(cells.len(), m.len());
        let labels: Vec<String> = cells.iter().map(CellSpec::label).collect();
        assert_eq!(
            labels,
            [
                "timer, fifo 95, idle",
                "timer, other, idle",
                "timer, fifo 95, cpu",
                "timer, other, cpu"
            ]
        );
        assert!(cells.iter().all(|c| c.of == 4));
        assert_eq!(cells[3].index, 3);
        // A probe without base settings is an error, not a panic.
        let m = SuiteMatrix::parse("noise", "idle", "95").unwrap();
        assert!(matches!(m.cells(&base), Err(SuiteError::NoBase("noise"))));
    }
}
