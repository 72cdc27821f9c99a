//! The experiment design of each study: what `latscope study NAME` runs,
//! in its quick form (CI: at most about 15 s of measuring) and its full
//! form (the study's own scale).

use latscope_engine::probes::{Phase, TimerApi};
use latscope_engine::request::ProbeKind;
use latscope_engine::MicroPlan;
use latscope_engine::{CellSpec, RequestError, RunPlan, RunRequest};
use latscope_micro::session::{select, SessionError, SessionOptions};
use latscope_model::{CpuSet, Nanos, Policy};

/// The studies `latscope study` reproduces, in the order it lists them.
pub const STUDY_IDS: [&str; 4] = ["cota-robles-held", "jones-regehr", "bernadat", "chen-et-al"];

/// What one cell of a probe design measures (the workload aside).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CellKind {
    /// The timer probe with this API, phase and scheduling.
    Timer {
        api: TimerApi,
        phase: Phase,
        policy: Policy,
        priority: Option<u32>,
    },
    /// The noise probe (a CPU-bound loop's interruptions).
    Noise,
    /// The udp probe (loopback send and receive).
    Udp,
}

/// A design run as one stored run of probe cells: for each workload, one
/// cell of each kind, in that order.
#[derive(Clone, Debug, PartialEq)]
pub struct ProbeDesign {
    pub workloads: Vec<&'static str>,
    pub kinds: Vec<CellKind>,
    /// Each cell's measured time, and the warm-up before it.
    pub cell: Nanos,
    pub warmup: Nanos,
    /// Whether the run is traced (`--trace`: the irq/softirq/thread
    /// decomposition).
    pub trace: bool,
    /// CPUs to measure (`None`: every online CPU).
    pub cpus: Option<&'static str>,
    /// Whether the kinds of one workload run together, on one expiry grid
    /// (`run --priorities`): timer kinds that differ only in priority.
    pub together: bool,
}

/// A design run as a `latscope micro` run of these benchmarks.
#[derive(Clone, Debug, PartialEq)]
pub struct MicroDesign {
    pub benches: Vec<&'static str>,
    pub quick: bool,
}

/// A study's design.
#[derive(Clone, Debug, PartialEq)]
pub enum Design {
    Probe(ProbeDesign),
    Micro(MicroDesign),
}

const FIFO_HIGH: CellKind = CellKind::Timer {
    api: TimerApi::ClockNanosleep,
    phase: Phase::Fixed,
    policy: Policy::Fifo,
    priority: Some(95),
};
const FIFO_MED: CellKind = CellKind::Timer {
    api: TimerApi::ClockNanosleep,
    phase: Phase::Fixed,
    policy: Policy::Fifo,
    priority: Some(50),
};
/// Bernadat's multimedia timer: a periodic timer.
pub(crate) const PERIODIC: CellKind = CellKind::Timer {
    api: TimerApi::Timerfd,
    phase: Phase::Fixed,
    policy: Policy::Fifo,
    priority: Some(95),
};
/// Bernadat's SleepEx(): a relative sleep started at a random phase.
pub(crate) const SLEEP: CellKind = CellKind::Timer {
    api: TimerApi::Nanosleep,
    phase: Phase::Random,
    policy: Policy::Fifo,
    priority: Some(95),
};
/// The high (28) and medium (24) real-time priorities of Cota-Robles &
/// Held's Table 3, in that order.
pub(crate) const COTA_KINDS: [CellKind; 2] = [FIFO_HIGH, FIFO_MED];

/// The design of study `id`, quick or full; `None` for an unknown id.
pub fn design(id: &str, quick: bool) -> Option<Design> {
    let secs = Nanos::from_secs;
    let d = match (id, quick) {
        // Both priorities woken by the same interrupts, as in the paper's
        // Figure 4, and in half the time of one after the other.
        ("cota-robles-held", true) => together(probe(&["idle", "cpu"], &COTA_KINDS, secs(3), true)),
        ("cota-robles-held", false) => together(probe(
            &["idle", "compile", "disk", "net", "memory"],
            &COTA_KINDS,
            secs(3600),
            true,
        )),
        ("jones-regehr", true) => probe(&["idle"], &[PERIODIC], secs(5), false),
        ("jones-regehr", false) => probe(&["idle"], &[PERIODIC], secs(10), false),
        ("bernadat", true) => probe(
            &["idle", "cpu"],
            &[CellKind::Noise, PERIODIC, CellKind::Udp],
            secs(2),
            true,
        ),
        ("bernadat", false) => probe(
            &["idle", "cpu", "compile", "memory", "disk", "net", "tty"],
            &[CellKind::Noise, PERIODIC, SLEEP, CellKind::Udp],
            secs(300),
            true,
        ),
        // The cold small-file test drops the page cache first, which takes
        // tens of seconds on a machine with much of it: not in the quick
        // design.
        ("chen-et-al", quick) => Design::Micro(MicroDesign {
            benches: CHEN_BENCHES
                .into_iter()
                .filter(|b| !quick || *b != COLD_FILES)
                .collect(),
            quick,
        }),
        _ => return None,
    };
    Some(d)
}

/// The small-file disk test, cold.
pub(crate) const COLD_FILES: &str = "fs.read_8K_files_cold";

/// The micro benchmarks behind Chen et al.'s Null, Syscall, Exec,
/// small-file, metadata and Bitblt tests.
pub(crate) const CHEN_BENCHES: [&str; 7] = [
    "null.perf_read",
    "syscall.dup_close",
    "process.fork_exec_static",
    "process.fork_exec_dynamic",
    COLD_FILES,
    "fs.create_fsync_delete",
    "blit.put_image_1bit",
];

fn probe(workloads: &[&'static str], kinds: &[CellKind], cell: Nanos, trace: bool) -> Design {
    let quick = cell < Nanos::from_secs(10);
    Design::Probe(ProbeDesign {
        workloads: workloads.to_vec(),
        kinds: kinds.to_vec(),
        cell,
        warmup: if quick {
            Nanos::from_millis(500)
        } else {
            RunRequest::DEFAULT_WARMUP
        },
        trace,
        cpus: None,
        together: false,
    })
}

/// `design` with its kinds of one workload run together.
fn together(design: Design) -> Design {
    match design {
        Design::Probe(p) => Design::Probe(ProbeDesign {
            together: true,
            ..p
        }),
        d => d,
    }
}

impl Design {
    /// How long the design measures, in words (for `--list` and the
    /// table's heading).
    pub fn describe(&self) -> String {
        match self {
            Design::Probe(p) => {
                let n = p.workloads.len() * p.kinds.len();
                let total = Nanos(p.cell.0.saturating_mul(p.measured_cells() as u64));
                format!(
                    "{n} cell(s) ({} x {} probe setting(s){}) of {} each: {} of measuring{}",
                    p.workloads.join(","),
                    p.kinds.len(),
                    if p.together { " measured together" } else { "" },
                    human(p.cell),
                    human(total),
                    if p.trace { ", traced" } else { "" }
                )
            }
            Design::Micro(m) => format!(
                "latscope micro{} over {}",
                if m.quick { " --quick" } else { "" },
                m.benches.join(",")
            ),
        }
    }
}

/// A duration as a reader counts it: `3 s`, `5 min`, `10 h`.
fn human(n: Nanos) -> String {
    let s = n.0 / 1_000_000_000;
    match s {
        s if s >= 3600 && s % 3600 == 0 => format!("{} h", s / 3600),
        s if s >= 3600 => format!("{:.1} h", s as f64 / 3600.0),
        s if s >= 60 => format!("{} min", s / 60),
        s => format!("{s} s"),
    }
}

impl ProbeDesign {
    /// How many cell durations the design measures for: one per workload
    /// when its kinds run together, one per cell otherwise.
    pub fn measured_cells(&self) -> usize {
        match self.together {
            true => self.workloads.len(),
            false => self.workloads.len() * self.kinds.len(),
        }
    }

    /// The workload and kind of cell `index`.
    pub fn cell(&self, index: u32) -> Option<(&'static str, CellKind)> {
        let k = self.kinds.len();
        let i = index as usize;
        let workload = self.workloads.get(i.checked_div(k)?)?;
        Some((workload, self.kinds[i % k]))
    }

    /// The request every cell starts from.
    fn base(&self) -> RunRequest {
        let d = RunRequest::default();
        RunRequest {
            cpus: self.cpus.map(str::to_string),
            duration: Some(self.cell),
            warmup: self.warmup,
            workloads: self.workloads.iter().map(|w| w.to_string()).collect(),
            trace: latscope_engine::request::TraceOptions {
                on: self.trace,
                ..d.trace.clone()
            },
            ..d
        }
    }

    /// The run's plan and its cells, checked against the online CPUs.
    pub fn plan(&self, online: &CpuSet) -> Result<(RunPlan, Vec<CellSpec>), RequestError> {
        let base = self.base();
        let plan = base.plan(online)?;
        let mut probes = Vec::with_capacity(self.kinds.len());
        for kind in &self.kinds {
            // Traced like the run: the timer probe then hands its samples
            // to the tracer (the irq/softirq/thread decomposition).
            let mut r = RunRequest {
                workloads: Vec::new(),
                ..base.clone()
            };
            match *kind {
                CellKind::Timer {
                    api,
                    phase,
                    policy,
                    priority,
                } => {
                    r.timer.api = api;
                    r.timer.phase = phase;
                    r.policy = policy;
                    r.priority = priority;
                }
                CellKind::Noise => r.probe = ProbeKind::Noise,
                CellKind::Udp => r.probe = ProbeKind::Udp,
            }
            probes.push(r.plan(online)?.probe);
        }
        let of = (self.workloads.len() * probes.len()) as u32;
        let mut cells = Vec::with_capacity(of as usize);
        for workload in &self.workloads {
            let first = cells.len() as u32;
            let group: Vec<u32> = match self.together {
                true => (first..first + probes.len() as u32).collect(),
                false => Vec::new(),
            };
            for probe in &probes {
                cells.push(CellSpec {
                    index: cells.len() as u32,
                    of,
                    probe: probe.clone(),
                    workload: workload.to_string(),
                    load_level: plan.load_level.clone(),
                    warmup: plan.warmup,
                    cpus: plan.cpus.clone(),
                    together: group.clone(),
                    instance: 0,
                });
            }
        }
        Ok((plan, cells))
    }
}

impl MicroDesign {
    /// The micro plan on `cpu` (with `other` for the benchmarks across two
    /// CPUs); `command_line` is recorded with the run.
    pub fn plan(
        &self,
        cpu: u32,
        other: Option<u32>,
        command_line: Vec<String>,
    ) -> Result<MicroPlan, SessionError> {
        let names: Vec<String> = self.benches.iter().map(|b| b.to_string()).collect();
        Ok(MicroPlan {
            benchmarks: select(&names, self.quick)?,
            options: SessionOptions::new(cpu, other, self.quick),
            command_line,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_study_has_a_short_quick_design_and_a_documented_full_one() {
        for id in STUDY_IDS {
            for quick in [true, false] {
                let d = design(id, quick).expect("a design");
                if let (Design::Probe(p), true) = (&d, quick) {
                    let cells = p.measured_cells() as u64;
                    assert!(p.cell.0 * cells <= Nanos::from_secs(15).0, "{id}");
                }
                assert!(!d.describe().is_empty());
            }
        }
        assert!(design("jones", true).is_none());
    }

    #[test]
    fn cells_are_numbered_workload_major() {
        let Some(Design::Probe(p)) = design("bernadat", true) else {
            panic!("bernadat is a probe design");
        };
        assert_eq!(p.cell(0), Some(("idle", CellKind::Noise)));
        assert_eq!(p.cell(4), Some(("cpu", PERIODIC)));
        assert_eq!(p.cell(6), None);
    }

    #[test]
    fn cota_robles_held_runs_its_two_priorities_together_per_workload() {
        let Some(Design::Probe(p)) = design("cota-robles-held", true) else {
            panic!("cota-robles-held is a probe design");
        };
        let online = CpuSet::parse("0").expect("a CPU list");
        let (_, cells) = p.plan(&online).expect("a plan");
        let groups: Vec<&[u32]> = cells.iter().map(|c| c.together.as_slice()).collect();
        assert_eq!(groups, [&[0, 1][..], &[0, 1], &[2, 3], &[2, 3]]);
        assert_eq!(p.measured_cells(), 2);
        assert!(Design::Probe(p).describe().contains("measured together"));
        let Some(Design::Probe(b)) = design("bernadat", true) else {
            panic!("bernadat is a probe design");
        };
        let (_, cells) = b.plan(&online).expect("a plan");
        assert!(cells.iter().all(|c| c.together.is_empty()));
    }
}
