use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::{CellSettings, Nanos, RunSource};

/// A run's number in its store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RunId(pub i64);

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Where a run stands. A run is `Running` from its first checkpoint until it
/// ends; one whose process died without ending it is reported as
/// `Interrupted` by the store (its data up to the last checkpoint is kept).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Running,
    Complete,
    Interrupted,
    Failed,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Complete => "complete",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Failed => "failed",
        }
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl FromStr for RunStatus {
    type Err = RunStatusError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "running" => Ok(RunStatus::Running),
            "complete" => Ok(RunStatus::Complete),
            "interrupted" => Ok(RunStatus::Interrupted),
            "failed" => Ok(RunStatus::Failed),
            other => Err(RunStatusError(other.to_string())),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown run status '{0}'")]
pub struct RunStatusError(pub String);

/// What is known about a run apart from its measurements.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunMeta {
    pub id: RunId,
    /// Wall-clock start, nanoseconds since the Unix epoch.
    pub started_unix_ns: Nanos,
    /// Wall-clock end; `None` while running or when the process died.
    pub ended_unix_ns: Option<Nanos>,
    /// Wall-clock time of the last checkpoint written.
    pub checkpoint_unix_ns: Option<Nanos>,
    pub status: RunStatus,
    /// The command line, argument by argument, as the user typed it.
    pub command_line: Vec<String>,
    /// The measuring process, so a store can tell a live run from a dead one.
    pub pid: u32,
    /// `/proc/sys/kernel/random/boot_id`: a pid only means something within one boot.
    pub boot_id: String,
    pub hostname: String,
    /// latscope's version that took the run.
    pub tool_version: String,
    /// Free-form remarks recorded with the run (e.g. "process died after last checkpoint").
    pub notes: Vec<String>,
    /// The tool and file the run was imported from (`latscope import`);
    /// `None` for a run latscope measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<RunSource>,
}

impl RunMeta {
    /// A run as it starts: `Running`, nothing ended or checkpointed yet, no
    /// command line, process, host or notes recorded. Callers (and test
    /// fixtures) set what they know with struct update syntax:
    /// `RunMeta { hostname: "h".into(), ..RunMeta::new(id, started) }`.
    pub fn new(id: RunId, started_unix_ns: Nanos) -> RunMeta {
        RunMeta {
            id,
            started_unix_ns,
            ended_unix_ns: None,
            checkpoint_unix_ns: None,
            status: RunStatus::Running,
            command_line: Vec::new(),
            pid: 0,
            boot_id: String::new(),
            hostname: String::new(),
            tool_version: String::new(),
            notes: Vec::new(),
            source: None,
        }
    }
}

/// One cell of a run: one probe under one workload with one group of settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellMeta {
    /// Position in the run, from 0.
    pub index: u32,
    pub probe: String,
    pub workload: String,
    /// The probe's settings as they were applied (period, policy, priority,
    /// ...); their variant names the same probe as `probe`.
    pub settings: CellSettings,
    /// How long the probe measured: until the end, the interrupt, or the last checkpoint.
    pub duration_ns: Nanos,
    /// CLOCK_MONOTONIC at the start of measurement; timeline seconds count from here.
    pub monotonic_start_ns: Nanos,
}

impl CellMeta {
    /// Cell `index` of `settings`' probe (which names it) under `workload`,
    /// measured for `duration_ns` from monotonic time 0.
    pub fn new(index: u32, workload: &str, settings: CellSettings, duration_ns: Nanos) -> CellMeta {
        CellMeta {
            index,
            probe: settings.probe_name().to_string(),
            workload: workload.to_string(),
            settings,
            duration_ns,
            monotonic_start_ns: Nanos(0),
        }
    }
}
