use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{Hazard, TimerGranularity};

/// A snapshot of what the machine and its kernel were set up to do when a run
/// started: everything that changes real-time behaviour and that a reader of
/// the results would ask about. A value the machine does not expose is `None`
/// (or empty), never a guess.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SystemInfo {
    pub hostname: String,
    /// `/etc/machine-id`: the machine's identity across renames and
    /// reinstalls of the same system (many hosts may share a hostname in a
    /// fleet); `None` where the file is missing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine_id: Option<String>,
    /// `uname -r`.
    pub kernel_release: String,
    /// `uname -v`: the build string, which names PREEMPT_RT / PREEMPT_DYNAMIC.
    pub kernel_version: String,
    /// `none`, `voluntary`, `full`, `lazy` or `rt`.
    pub preemption_model: Option<String>,
    /// Where the preemption model was read: `debugfs`, `cmdline`, `config` or `version`.
    pub preemption_source: Option<String>,
    /// The kernel tick rate, from the kernel configuration.
    pub hz: Option<u32>,
    pub clocksource: Option<String>,
    pub available_clocksources: Vec<String>,
    pub cpu_model: Option<String>,
    /// Online logical CPUs.
    pub cpu_count: u32,
    /// The online CPUs as a kernel-style list.
    pub cpus_online: String,
    /// Whether simultaneous multithreading is active; `None` when unknown.
    pub smt_active: Option<bool>,
    /// cpufreq governor per CPU; empty when the machine has no cpufreq.
    pub cpufreq_governors: BTreeMap<u32, String>,
    pub cpuidle_driver: Option<String>,
    pub cpuidle_governor: Option<String>,
    /// The idle states of the first online CPU, shallowest first.
    pub cpuidle_states: Vec<IdleState>,
    /// The CPU reports that it runs under a hypervisor.
    pub hypervisor: bool,
    pub hypervisor_vendor: Option<String>,
    pub kernel_cmdline: String,
    pub isolcpus: Option<String>,
    pub nohz_full: Option<String>,
    pub rcu_nocbs: Option<String>,
    /// `/proc/sys/kernel/sched_rt_runtime_us` (-1: throttling off).
    pub rt_runtime_us: Option<i64>,
    pub rt_period_us: Option<i64>,
    /// Whether the TSC is constant and non-stop (cpuinfo flags).
    pub tsc_constant_nonstop: bool,
    /// The timer granularity in force: clock resolutions, high-resolution
    /// timers, the default slack. Empty in runs stored before it existed.
    #[serde(default)]
    pub granularity: TimerGranularity,
    /// What `latscope check` finds on this machine, worst first; stored
    /// with every run so that a result carries the hazards it was measured
    /// under. Runs recorded before the check existed have none.
    #[serde(default)]
    pub hazards: Vec<Hazard>,
}

/// The preemption model `uname -v` (the kernel's build string) names:
/// `PREEMPT_RT` is RT and a plain `PREEMPT` is full preemption;
/// `PREEMPT_DYNAMIC` is decided at boot, so the build string does not say
/// which, and no `PREEMPT` at all leaves none and voluntary apart. Here
/// rather than in the platform crate because stored and imported build
/// strings are read the same way.
pub fn preempt_from_version(version: &str) -> Option<&'static str> {
    let words: Vec<&str> = version.split_whitespace().collect();
    // Old RT patch sets wrote `PREEMPT RT`, current kernels `PREEMPT_RT`.
    let rt = words.contains(&"PREEMPT_RT") || words.windows(2).any(|w| w == ["PREEMPT", "RT"]);
    if rt {
        Some("rt")
    } else if words.contains(&"PREEMPT_DYNAMIC") {
        None
    } else if words.contains(&"PREEMPT") {
        Some("full")
    } else {
        None
    }
}

/// One cpuidle state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct IdleState {
    pub name: String,
    /// Exit latency the driver declares, µs.
    pub latency_us: u64,
    pub disabled: bool,
}

/// What the run asked for and what it actually obtained. Results taken
/// without real-time priority or locked memory are not real-time results,
/// and every report says so.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Capabilities {
    /// Effective uid is 0.
    pub root: bool,
    /// CAP_SYS_NICE in the effective set.
    pub cap_sys_nice: bool,
    /// CAP_IPC_LOCK in the effective set.
    pub cap_ipc_lock: bool,
    /// RLIMIT_RTPRIO soft limit (`u64::MAX` for unlimited).
    pub rlimit_rtprio: u64,
    /// The measuring threads run at the requested policy and priority.
    pub rt_priority: bool,
    /// `mlockall(MCL_CURRENT | MCL_FUTURE)` succeeded.
    pub mlock: bool,
    /// `/dev/cpu_dma_latency` was held at 0 for the run.
    pub dma_latency: bool,
    /// Timer slack in force for the measuring threads, ns, as the kernel
    /// reported it back once they were set up (the largest over the
    /// threads): 1 is the least that can be set, 0 what the kernel gives a
    /// real-time thread. Runs before latscope read it back recorded the 1
    /// they asked for. `None` when it could not be read.
    pub timer_slack_ns: Option<u64>,
    /// Kernel tracepoints were read (`--trace`).
    #[serde(default)]
    pub tracepoints: bool,
    /// `cpu-clock` stack samples with kernel call chains were taken
    /// (`--stacks`).
    #[serde(default)]
    pub stack_samples: bool,
    /// One line for each thing that was asked for and not obtained.
    pub missing: Vec<String>,
}
