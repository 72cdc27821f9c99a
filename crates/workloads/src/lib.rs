//! Named background loads: latency is measured on a loaded machine.
//!
//! A workload ([`WorkloadSpec`]: `idle`, `cpu`, `memory`, `compile`, `disk`,
//! `net`, `tty`, `fork`, `timer`, `hackbench`, `rt:PRIO,BUSY/PERIOD`,
//! `custom:CMD ARGS`) at a [`LoadLevel`] is a
//! set of processes in process groups of their own. Its life:
//!
//! 1. [`check`] — are the programs it needs installed (stress-ng, make, cc,
//!    ip) and may it do what it does (network namespaces need root)? A
//!    missing one is one line naming the package to install.
//! 2. [`start`] — start the processes, wait the warm-up, fail if the load
//!    died during it.
//! 3. [`RunningWorkload::poll`] while the probes measure — a load that dies
//!    is described, and the cell gets marked.
//! 4. [`RunningWorkload::stop`] (or drop) — SIGTERM to every group, SIGKILL
//!    after a grace period, namespaces and temporary directories gone.
//!
//! Nothing outlives latscope: every process latscope starts gets a
//! parent-death signal, and programs that start children of their own
//! (stress-ng, make, custom commands) run under a guard — latscope itself
//! in the hidden helper mode `latscope __workload guard -- PROGRAM ARGS` —
//! that ends its whole group when latscope goes away, even by `kill -9`.
//! The loads latscope generates itself (CPU spinners, pty pumps, network
//! senders and receivers, the exec storm) are helper modes of the same
//! binary; [`helper_main`] runs them and must be called first thing in
//! `main`.

mod check;
mod compile;
mod helper;
mod plan;
mod rt_spec;
mod rt_stats;
mod running;
mod spec;

use std::fmt;
use std::str::FromStr;

pub use check::check;
pub use helper::{helper_main, HELPER_ARG};
pub use plan::commands;
pub use rt_spec::{continues_rt, RtLoad};
pub use rt_stats::RtCounters;
pub use running::{start, RunningWorkload, WorkloadOutcome};
pub use spec::{split_list, WorkloadSpec};

/// How hard a workload pushes. What each level means per workload is in
/// `docs/workloads.md` and [`commands`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum LoadLevel {
    Light,
    #[default]
    Normal,
    Heavy,
}

impl LoadLevel {
    pub const ALL: [LoadLevel; 3] = [LoadLevel::Light, LoadLevel::Normal, LoadLevel::Heavy];

    pub fn as_str(self) -> &'static str {
        match self {
            LoadLevel::Light => "light",
            LoadLevel::Normal => "normal",
            LoadLevel::Heavy => "heavy",
        }
    }
}

impl fmt::Display for LoadLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for LoadLevel {
    type Err = WorkloadError;
    fn from_str(s: &str) -> Result<LoadLevel, WorkloadError> {
        match s.trim() {
            "light" => Ok(LoadLevel::Light),
            "normal" => Ok(LoadLevel::Normal),
            "heavy" => Ok(LoadLevel::Heavy),
            other => Err(WorkloadError::BadLevel(other.to_string())),
        }
    }
}

/// Everything that can go wrong with a workload, each in one line.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    #[error("unknown workload '{0}' (known: idle, cpu, memory, compile, disk, net, tty, fork, timer, hackbench, rt:PRIO,BUSY/PERIOD, custom:CMD ARGS)")]
    Unknown(String),
    #[error("bad workload '{spec}': {why}")]
    Invalid { spec: String, why: String },
    #[error("unknown load level '{0}' (light, normal or heavy)")]
    BadLevel(String),
    #[error(
        "workload {workload} needs {program}, which is not installed (apt-get install {package})"
    )]
    Missing {
        workload: String,
        program: String,
        package: String,
    },
    #[error("workload {workload} needs {what}")]
    Unsupported { workload: String, what: String },
    #[error("cannot start workload {workload}: {what}")]
    Start { workload: String, what: String },
    #[error("workload {workload} died during warm-up: {detail}")]
    DiedDuringWarmup { workload: String, detail: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_round_trip() {
        for level in LoadLevel::ALL {
            assert_eq!(level.as_str().parse::<LoadLevel>().unwrap(), level);
        }
        let err = "extreme".parse::<LoadLevel>().unwrap_err().to_string();
        assert_eq!(err, "unknown load level 'extreme' (light, normal or heavy)");
        assert_eq!(LoadLevel::default(), LoadLevel::Normal);
    }

    /// The command line's value names are the settings' names.
    #[cfg(feature = "clap")]
    #[test]
    fn clap_names_are_the_level_names() {
        use clap::ValueEnum;
        let names: Vec<_> = LoadLevel::value_variants()
            .iter()
            .map(|l| l.to_possible_value().unwrap().get_name().to_string())
            .collect();
        assert_eq!(names, LoadLevel::ALL.map(|l| l.as_str().to_string()));
    }
}
