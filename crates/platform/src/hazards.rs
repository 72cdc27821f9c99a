//! Known latency hazards: the settings of a machine that are known to cost
//! real-time threads latency, each with what was found and how to remove it.
//!
//! [`hazards`] is a pure function of the system snapshot and a few more
//! values read from `/proc` and `/sys` ([`Extra`]), so every rule is tested
//! on fixture sysroots and hand-made snapshots. A rule fires only on
//! evidence: a value the machine does not expose gives no finding rather
//! than a guessed one. `docs/concepts.md` ("Latency hazards") lists every
//! rule with its threshold and remedy; keep the two in step.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use latscope_model::{CpuId, CpuSet, Hazard, Severity, SystemInfo};

use crate::procstat::parse::{parse_stat, CpuTicks};
use crate::sysfs::{read_text, read_trimmed};

/// An enabled idle state whose declared exit latency exceeds this many
/// microseconds is a deep C-state. C1 exits in 1–2 µs, C1E in about 10;
/// C3 and deeper take tens to hundreds.
pub const DEEP_IDLE_LATENCY_US: u64 = 10;

/// Steal time at or above this share of all CPU time since boot, in basis
/// points (1/100 of a percent), is a hazard: 1%.
pub const STEAL_HAZARD_BP: u64 = 100;

/// A tick rate below this is reported (on kernels that are not PREEMPT_RT).
pub const MIN_HZ: u32 = 1000;

/// Clocksources read through a slow device or without the vDSO.
const SLOW_CLOCKSOURCES: [&str; 5] = ["hpet", "acpi_pm", "pit", "jiffies", "refined-jiffies"];

/// Stable finding ids (JSON, the store, docs/concepts.md).
pub mod ids {
    pub const PREEMPTION: &str = "preemption";
    pub const RT_THROTTLING: &str = "rt-throttling";
    pub const CPUFREQ: &str = "cpufreq";
    pub const C_STATES: &str = "c-states";
    pub const HALTPOLL: &str = "haltpoll";
    pub const SMT: &str = "smt";
    pub const ISOLATION: &str = "isolation";
    pub const TIMER_HZ: &str = "timer-hz";
    pub const THP: &str = "thp";
    pub const IRQBALANCE: &str = "irqbalance";
    pub const VIRTUALIZATION: &str = "virtualization";
    pub const STEAL: &str = "steal";
    pub const CLOCKSOURCE: &str = "clocksource";
    pub const SWAP: &str = "swap";
}

/// What the check reads beyond the system snapshot. `None` (or empty) is
/// "not readable here", which gives no finding.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Extra {
    /// `/sys/devices/system/cpu/isolated`: CPUs kept out of scheduler load
    /// balancing (`isolcpus=`, and isolated cpuset partitions on recent
    /// kernels). `Some("")` when the file exists and lists none.
    pub isolated: Option<String>,
    /// `/sys/devices/system/cpu/nohz_full` (absent without `NO_HZ_FULL`).
    pub nohz_full: Option<String>,
    /// The selected mode of `/sys/kernel/mm/transparent_hugepage/enabled`.
    pub thp_enabled: Option<String>,
    /// The selected mode of `.../transparent_hugepage/defrag`.
    pub thp_defrag: Option<String>,
    /// Process id of a running `irqbalance`.
    pub irqbalance_pid: Option<u32>,
    /// The `cpu` line of `/proc/stat`: all CPUs' time since boot.
    pub cpu_ticks: Option<CpuTicks>,
    /// The active swap areas of `/proc/swaps`; `None` when unreadable.
    pub swaps: Option<Vec<SwapArea>>,
    /// `/proc/sys/vm/swappiness`.
    pub swappiness: Option<u32>,
    /// Online CPUs that share a core with another online CPU, one group per
    /// core (from `topology/thread_siblings_list`).
    pub smt_siblings: Vec<CpuSet>,
    /// `/sys/module/haltpoll/parameters/guest_halt_poll_ns`.
    pub haltpoll_ns: Option<u64>,
}

/// One line of `/proc/swaps`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SwapArea {
    pub name: String,
    /// `partition` or `file`.
    pub kind: String,
    pub size_kib: u64,
    pub used_kib: u64,
}

impl Extra {
    /// Reads the extra values below `root` (`/` on the live machine). The
    /// snapshot gives the online CPUs, whose siblings are looked up.
    pub fn read(root: &Path, info: &SystemInfo) -> Extra {
        const CPU: &str = "sys/devices/system/cpu";
        const THP: &str = "sys/kernel/mm/transparent_hugepage";
        let online = CpuSet::parse(&info.cpus_online).unwrap_or_default();
        Extra {
            isolated: read_text(root, &format!("{CPU}/isolated")).map(|t| t.trim().to_string()),
            nohz_full: read_text(root, &format!("{CPU}/nohz_full")).map(|t| t.trim().to_string()),
            thp_enabled: read_text(root, &format!("{THP}/enabled")).and_then(|t| selected_mode(&t)),
            thp_defrag: read_text(root, &format!("{THP}/defrag")).and_then(|t| selected_mode(&t)),
            irqbalance_pid: find_process(root, "irqbalance"),
            cpu_ticks: read_text(root, "proc/stat").and_then(|t| parse_stat(&t).all),
            swaps: read_text(root, "proc/swaps").map(|t| parse_swaps(&t)),
            swappiness: read_trimmed(root, "proc/sys/vm/swappiness").and_then(|v| v.parse().ok()),
            smt_siblings: sibling_groups(&online, |cpu| {
                read_trimmed(
                    root,
                    &format!("{CPU}/cpu{}/topology/thread_siblings_list", cpu.0),
                )
            }),
            haltpoll_ns: read_trimmed(root, "sys/module/haltpoll/parameters/guest_halt_poll_ns")
                .and_then(|v| v.parse().ok()),
        }
    }
}

/// The word in brackets of a sysfs mode file: `always [madvise] never`
/// gives `madvise`.
pub fn selected_mode(text: &str) -> Option<String> {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix('[')?.strip_suffix(']'))
        .map(str::to_string)
}

/// The active swap areas listed by `/proc/swaps` (a header line, then one
/// line per area: name, type, size and used in KiB, priority). A name with
/// spaces is written by the kernel with `\040`, so splitting on whitespace
/// is safe.
pub fn parse_swaps(text: &str) -> Vec<SwapArea> {
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            Some(SwapArea {
                name: f.first()?.to_string(),
                kind: f.get(1)?.to_string(),
                size_kib: f.get(2)?.parse().ok()?,
                used_kib: f.get(3)?.parse().ok()?,
            })
        })
        .collect()
}

/// Groups of online CPUs that share a core: each CPU's sibling list,
/// restricted to online CPUs, kept when it holds more than one CPU, once.
fn sibling_groups(online: &CpuSet, siblings: impl Fn(CpuId) -> Option<String>) -> Vec<CpuSet> {
    let mut groups: Vec<CpuSet> = Vec::new();
    for cpu in online.iter() {
        let Some(set) = siblings(cpu).and_then(|t| CpuSet::parse(&t).ok()) else {
            continue;
        };
        let group: CpuSet = set.iter().filter(|c| online.contains(*c)).collect();
        if group.len() > 1 && !groups.contains(&group) {
            groups.push(group);
        }
    }
    groups
}

/// The pid of a process whose `comm` is `name`, from `<root>/proc/<pid>`.
fn find_process(root: &Path, name: &str) -> Option<u32> {
    let entries = fs::read_dir(root.join("proc")).ok()?;
    let mut pids: Vec<u32> = entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    pids.sort_unstable();
    pids.into_iter().find(|pid| {
        // A process can exit between the listing and the read: no match.
        read_trimmed(root, &format!("proc/{pid}/comm")).as_deref() == Some(name)
    })
}

fn finding(
    id: &str,
    severity: Severity,
    title: impl Into<String>,
    detail: impl Into<String>,
    remedy: impl Into<String>,
) -> Hazard {
    Hazard {
        id: id.to_string(),
        severity,
        title: title.into(),
        detail: detail.into(),
        remedy: remedy.into(),
    }
}

/// Every known hazard found in `info` and `extra`, worst first (findings of
/// one severity keep the order of the rules).
pub fn hazards(info: &SystemInfo, extra: &Extra) -> Vec<Hazard> {
    let mut out = Vec::new();
    out.extend(preemption(info));
    out.extend(rt_throttling(info));
    out.extend(cpufreq(info));
    out.extend(c_states(info));
    out.extend(haltpoll(info, extra));
    out.extend(smt(info, extra));
    out.extend(isolation(info, extra));
    out.extend(timer_hz(info));
    out.extend(thp(extra));
    out.extend(irqbalance(extra));
    out.extend(virtualization(info, extra));
    out.extend(steal(extra));
    out.extend(clocksource(info));
    out.extend(swap(extra));
    out.sort_by_key(|h| std::cmp::Reverse(h.severity));
    out
}

const PREEMPT_RT_GIVES: &str = "PREEMPT_RT also runs interrupt handlers and softirqs in \
     threads and makes spinlocks sleep, so almost all kernel code can be preempted";

fn preemption(info: &SystemInfo) -> Option<Hazard> {
    let dynamic = info.kernel_version.contains("PREEMPT_DYNAMIC");
    let remedy = if dynamic {
        "boot with preempt=full, or better run a PREEMPT_RT kernel"
    } else {
        "run a kernel built with CONFIG_PREEMPT, or better PREEMPT_RT"
    };
    let model = match info.preemption_model.as_deref() {
        Some(m) => m,
        None if info.kernel_version.is_empty() => return None,
        None => {
            return Some(finding(
                ids::PREEMPTION,
                Severity::Info,
                "preemption model unknown",
                "neither debugfs, preempt=, the kernel configuration nor the build string \
                 say which preemption model runs",
                "mount debugfs (sched/preempt) or provide /proc/config.gz to know",
            ))
        }
    };
    let (severity, detail) = match model {
        "rt" => return None,
        "none" => (
            Severity::Hazard,
            format!(
                "kernel code is never preempted: a woken real-time thread waits until the \
                 running kernel path returns to user space or sleeps, milliseconds under load; \
                 {PREEMPT_RT_GIVES}"
            ),
        ),
        "voluntary" => (
            Severity::Hazard,
            format!(
                "kernel code yields only at explicit preemption points: a woken real-time \
                 thread waits for the next one, which long kernel paths lack; {PREEMPT_RT_GIVES}"
            ),
        ),
        "lazy" => (
            Severity::Info,
            format!(
                "real-time threads preempt at once as with full; normal threads may wait up \
                 to a tick; {PREEMPT_RT_GIVES}"
            ),
        ),
        "full" => (
            Severity::Info,
            format!(
                "kernel code is preemptible except with interrupts, preemption or a spinlock \
                 held; {PREEMPT_RT_GIVES}"
            ),
        ),
        other => (
            Severity::Info,
            format!("unrecognised model `{other}`; {PREEMPT_RT_GIVES}"),
        ),
    };
    let remedy = match model {
        "full" | "lazy" => "for the tightest bounds run a PREEMPT_RT kernel",
        _ => remedy,
    };
    Some(finding(
        ids::PREEMPTION,
        severity,
        format!("preemption model {model}"),
        detail,
        remedy,
    ))
}

fn rt_throttling(info: &SystemInfo) -> Option<Hazard> {
    let runtime = info.rt_runtime_us.filter(|r| *r >= 0)?;
    let period = info.rt_period_us.unwrap_or(1_000_000);
    let pause = period.saturating_sub(runtime).max(0);
    Some(finding(
        ids::RT_THROTTLING,
        Severity::Warning,
        "RT throttling on",
        format!(
            "sched_rt_runtime_us = {runtime} of sched_rt_period_us = {period}: real-time \
             threads that use more than {runtime} µs of a period are stopped for the rest \
             of it ({pause} µs) while normal tasks run"
        ),
        "sysctl kernel.sched_rt_runtime_us=-1 (a runaway RT thread can then hang its CPU)",
    ))
}

/// CPUs by the text each one has, e.g. governors: `powersave → 2-3`.
fn group_cpus(values: &BTreeMap<u32, String>) -> Vec<(String, CpuSet)> {
    let mut groups: Vec<(String, CpuSet)> = Vec::new();
    for (cpu, value) in values {
        match groups.iter_mut().find(|(v, _)| v == value) {
            Some((_, set)) => set.insert(CpuId(*cpu)),
            None => groups.push((value.clone(), [CpuId(*cpu)].into_iter().collect())),
        }
    }
    groups
}

fn cpufreq(info: &SystemInfo) -> Option<Hazard> {
    if info.cpufreq_governors.is_empty() {
        if info.cpu_count == 0 {
            return None;
        }
        let detail = if info.hypervisor {
            "no cpufreq: the host sets the clock speed of this virtual machine's CPUs"
        } else {
            "no cpufreq: firmware or hardware sets the clock speed, out of the kernel's sight"
        };
        return Some(finding(
            ids::CPUFREQ,
            Severity::Info,
            "no cpufreq",
            detail,
            "on bare metal, select the firmware's performance power profile",
        ));
    }
    let slow: BTreeMap<u32, String> = info
        .cpufreq_governors
        .iter()
        .filter(|(_, g)| g.as_str() != "performance")
        .map(|(c, g)| (*c, g.clone()))
        .collect();
    if slow.is_empty() {
        return None;
    }
    let groups = group_cpus(&slow);
    let names: Vec<&str> = groups.iter().map(|(g, _)| g.as_str()).collect();
    let which: Vec<String> = groups
        .iter()
        .map(|(g, cpus)| format!("{g} on CPU {cpus}"))
        .collect();
    Some(finding(
        ids::CPUFREQ,
        Severity::Warning,
        format!("cpufreq governor {}", names.join(", ")),
        format!(
            "{}: an idle or lightly loaded CPU runs slowly and needs milliseconds to speed \
             up, so work after a wake-up takes longer",
            which.join(", ")
        ),
        "cpupower frequency-set -g performance (or write performance to cpufreq/scaling_governor)",
    ))
}

fn c_states(info: &SystemInfo) -> Option<Hazard> {
    let deep: Vec<String> = info
        .cpuidle_states
        .iter()
        .filter(|s| !s.disabled && s.latency_us > DEEP_IDLE_LATENCY_US)
        .map(|s| format!("{} ({} µs)", s.name, s.latency_us))
        .collect();
    if deep.is_empty() {
        return None;
    }
    let worst = info
        .cpuidle_states
        .iter()
        .filter(|s| !s.disabled)
        .map(|s| s.latency_us)
        .max()
        .unwrap_or(0);
    Some(finding(
        ids::C_STATES,
        Severity::Warning,
        "deep C-states enabled",
        format!(
            "idle states with exit latency over {DEEP_IDLE_LATENCY_US} µs are enabled: {}; a \
             wake-up from an idle CPU can first cost up to {worst} µs",
            deep.join(", ")
        ),
        "hold /dev/cpu_dma_latency at 0 while RT work runs (latscope run does), or disable \
         the states in cpuidle/stateN/disable",
    ))
}

fn haltpoll(info: &SystemInfo, extra: &Extra) -> Option<Hazard> {
    if info.cpuidle_driver.as_deref() != Some("haltpoll") {
        return None;
    }
    let poll = match extra.haltpoll_ns {
        Some(0) => "halt into the host at once (guest_halt_poll_ns 0)".to_string(),
        Some(ns) => format!("poll up to {ns} ns, then halt into the host"),
        None => "poll a while, then halt into the host".to_string(),
    };
    Some(finding(
        ids::HALTPOLL,
        Severity::Warning,
        "haltpoll idle in a VM",
        format!(
            "idle vCPUs {poll}: waking a halted vCPU takes a VM exit and the host's \
             scheduler, far more than the exit latency the state declares"
        ),
        "hold /dev/cpu_dma_latency at 0 so idle vCPUs poll (latscope run does), or raise \
         haltpoll.guest_halt_poll_ns",
    ))
}

fn smt(info: &SystemInfo, extra: &Extra) -> Option<Hazard> {
    let groups = &extra.smt_siblings;
    if groups.is_empty() && info.smt_active != Some(true) {
        return None;
    }
    let detail = if groups.is_empty() {
        "simultaneous multithreading is active".to_string()
    } else {
        let shown: Vec<String> = groups.iter().take(4).map(|g| g.to_string()).collect();
        let more = if groups.len() > 4 { " ..." } else { "" };
        format!(
            "{} cores run two or more online threads ({}{more})",
            groups.len(),
            shown.join("; ")
        )
    };
    Some(finding(
        ids::SMT,
        Severity::Warning,
        "SMT siblings online",
        format!(
            "{detail}: whatever runs on a sibling shares the core's execution units and caches \
             and slows the real-time thread down"
        ),
        "echo off > /sys/devices/system/cpu/smt/control (or boot with nosmt), or keep the RT \
         CPUs' siblings idle",
    ))
}

fn isolation(info: &SystemInfo, extra: &Extra) -> Option<Hazard> {
    let nonempty = |s: &Option<String>| s.as_deref().is_some_and(|v| !v.trim().is_empty());
    if nonempty(&extra.isolated)
        || nonempty(&extra.nohz_full)
        || nonempty(&info.isolcpus)
        || nonempty(&info.nohz_full)
    {
        return None;
    }
    // Evidence that isolation is really absent, not just unreadable.
    if extra.isolated.is_none() && info.kernel_cmdline.is_empty() {
        return None;
    }
    if info.cpu_count == 1 {
        return Some(finding(
            ids::ISOLATION,
            Severity::Info,
            "no isolated CPUs",
            "one CPU: real-time threads share it with everything else",
            "use a machine with a CPU to spare for real-time work",
        ));
    }
    Some(finding(
        ids::ISOLATION,
        Severity::Warning,
        "no isolated CPUs",
        "no isolcpus= or nohz_full=: every CPU runs other tasks, kernel threads, timer ticks \
         and RCU callbacks next to the real-time threads",
        "boot with isolcpus=managed_irq,domain,N nohz_full=N rcu_nocbs=N for the RT CPUs N",
    ))
}

fn timer_hz(info: &SystemInfo) -> Option<Hazard> {
    let hz = info.hz.filter(|hz| *hz > 0 && *hz < MIN_HZ)?;
    if info.preemption_model.as_deref() == Some("rt") {
        return None;
    }
    let tick_us = 1_000_000 / hz;
    Some(finding(
        ids::TIMER_HZ,
        Severity::Info,
        format!("timer frequency {hz} Hz"),
        format!(
            "a tick is {tick_us} µs: timeouts on the timer wheel round up to ticks, and a \
             normal-priority thread can wait a tick to preempt a busy one; high-resolution \
             timers (clock_nanosleep, timerfd) do not depend on HZ"
        ),
        "build with CONFIG_HZ_1000 if normal-priority threads or jiffy timeouts matter",
    ))
}

fn thp(extra: &Extra) -> Option<Hazard> {
    if extra.thp_enabled.as_deref() != Some("always") {
        return None;
    }
    let defrag = extra.thp_defrag.as_deref().unwrap_or("unknown");
    Some(finding(
        ids::THP,
        Severity::Warning,
        "transparent huge pages always",
        format!(
            "every anonymous mapping may get huge pages: a page fault can stall in memory \
             compaction (defrag {defrag}) and khugepaged rewrites page tables in the background"
        ),
        "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled",
    ))
}

fn irqbalance(extra: &Extra) -> Option<Hazard> {
    let pid = extra.irqbalance_pid?;
    Some(finding(
        ids::IRQBALANCE,
        Severity::Warning,
        "irqbalance running",
        format!(
            "irqbalance (pid {pid}) rewrites interrupt affinities every few seconds and can move \
             device interrupts onto the real-time CPUs"
        ),
        "stop it (systemctl disable --now irqbalance) and set /proc/irq/*/smp_affinity, or \
         ban the RT CPUs with IRQBALANCE_BANNED_CPULIST",
    ))
}

/// Steal time as a share of all CPU time since boot, in basis points.
fn steal_bp(ticks: &CpuTicks) -> Option<u64> {
    let total = ticks.total();
    (total > 0).then(|| ticks.steal.saturating_mul(10_000) / total)
}

fn percent(bp: u64) -> String {
    format!("{}.{:02}%", bp / 100, bp % 100)
}

fn virtualization(info: &SystemInfo, extra: &Extra) -> Option<Hazard> {
    if !info.hypervisor {
        return None;
    }
    let vendor = info
        .hypervisor_vendor
        .as_deref()
        .map(|v| format!(" ({v})"))
        .unwrap_or_default();
    let steal = extra
        .cpu_ticks
        .as_ref()
        .and_then(steal_bp)
        .map(|bp| format!("; steal time since boot {} of CPU time", percent(bp)))
        .unwrap_or_default();
    Some(finding(
        ids::VIRTUALIZATION,
        Severity::Warning,
        "virtual machine",
        format!(
            "running under a hypervisor{vendor}: the host can deschedule a vCPU at any moment \
             and interrupts arrive through it{steal}"
        ),
        "measure on bare metal, or give the VM dedicated, pinned host CPUs",
    ))
}

fn steal(extra: &Extra) -> Option<Hazard> {
    let bp = extra
        .cpu_ticks
        .as_ref()
        .and_then(steal_bp)
        .filter(|bp| *bp >= STEAL_HAZARD_BP)?;
    Some(finding(
        ids::STEAL,
        Severity::Hazard,
        format!("steal time {}", percent(bp)),
        format!(
            "the host ran something else on this machine's vCPUs for {} of their time since \
             boot (threshold {}): each such pause delays whatever the vCPU was to run",
            percent(bp),
            percent(STEAL_HAZARD_BP)
        ),
        "give the VM dedicated host CPUs, or move it to a less loaded host",
    ))
}

fn clocksource(info: &SystemInfo) -> Option<Hazard> {
    let current = info.clocksource.as_deref()?;
    if current == "tsc" {
        return None;
    }
    let tsc_there = info.available_clocksources.iter().any(|c| c == "tsc");
    if !tsc_there && !SLOW_CLOCKSOURCES.contains(&current) {
        // e.g. arch_sys_counter on arm64: as good as the TSC.
        return None;
    }
    let why = if SLOW_CLOCKSOURCES.contains(&current) {
        "reading it goes to a slow device or through a system call instead of the vDSO, \
         adding to every timestamp (a microsecond or more for hpet and acpi_pm)"
    } else {
        "the kernel or the boot options chose it over the TSC, which is the cheapest and \
         finest clock on x86"
    };
    let remedy = if tsc_there {
        "echo tsc > /sys/devices/system/clocksource/clocksource0/current_clocksource \
         (when the CPU has constant_tsc and nonstop_tsc)"
    } else {
        "boot with clocksource=tsc if the TSC is reliable (it was marked unstable or is absent)"
    };
    Some(finding(
        ids::CLOCKSOURCE,
        Severity::Warning,
        format!("clocksource {current}"),
        format!("the system clock is {current}: {why}"),
        remedy,
    ))
}

fn swap(extra: &Extra) -> Option<Hazard> {
    let areas = extra.swaps.as_deref().filter(|a| !a.is_empty())?;
    let size: u64 = areas.iter().map(|a| a.size_kib).sum();
    let used: u64 = areas.iter().map(|a| a.used_kib).sum();
    let names: Vec<&str> = areas.iter().map(|a| a.name.as_str()).collect();
    let swappiness = extra
        .swappiness
        .map(|s| format!(", swappiness {s}"))
        .unwrap_or_default();
    Some(finding(
        ids::SWAP,
        Severity::Warning,
        "swap enabled",
        format!(
            "{} ({} MiB, {} MiB used{swappiness}): memory of a process that is not locked can \
             be swapped out, and touching it again waits for I/O",
            names.join(", "),
            size / 1024,
            used / 1024
        ),
        "lock real-time memory with mlockall (latscope does), or swapoff -a",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sysinfo::snapshot_from;
    use latscope_model::IdleState;
    use std::path::PathBuf;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name)
    }

    fn by_id(list: &[Hazard]) -> Vec<(&str, Severity)> {
        list.iter().map(|h| (h.id.as_str(), h.severity)).collect()
    }

    fn find<'a>(list: &'a [Hazard], id: &str) -> &'a Hazard {
        list.iter()
            .find(|h| h.id == id)
            .unwrap_or_else(|| panic!("no finding {id} in {list:#?}"))
    }

    #[test]
    fn hazardous_box() {
        let info = snapshot_from(&fixture("sysroot-hazardous"));
        let list = &info.hazards;
        use Severity::*;
        // Worst first; within a severity, in the order of the rules.
        assert_eq!(
            by_id(list),
            [
                (ids::PREEMPTION, Hazard),
                (ids::STEAL, Hazard),
                (ids::RT_THROTTLING, Warning),
                (ids::CPUFREQ, Warning),
                (ids::C_STATES, Warning),
                (ids::SMT, Warning),
                (ids::ISOLATION, Warning),
                (ids::THP, Warning),
                (ids::IRQBALANCE, Warning),
                (ids::VIRTUALIZATION, Warning),
                (ids::CLOCKSOURCE, Warning),
                (ids::SWAP, Warning),
                (ids::TIMER_HZ, Info),
            ]
        );
        let p = find(list, ids::PREEMPTION);
        assert_eq!(p.title, "preemption model voluntary");
        assert!(p.detail.contains("PREEMPT_RT also runs interrupt handlers"));
        assert!(p.remedy.contains("preempt=full"), "{}", p.remedy);
        // cpu: 1000 user, 9000 idle... of 10_000 ticks, 300 stolen: 3%.
        assert_eq!(find(list, ids::STEAL).title, "steal time 3.00%");
        assert!(find(list, ids::VIRTUALIZATION)
            .detail
            .contains("(xen): the host can deschedule a vCPU at any moment and interrupts arrive through it; steal time since boot 3.00% of CPU time"));
        assert!(find(list, ids::RT_THROTTLING)
            .detail
            .contains("stopped for the rest of it (50000 µs)"));
        let f = find(list, ids::CPUFREQ);
        assert_eq!(f.title, "cpufreq governor powersave, schedutil");
        assert!(f
            .detail
            .starts_with("powersave on CPU 0-1,3, schedutil on CPU 2:"));
        let c = find(list, ids::C_STATES);
        assert!(
            c.detail.contains(
                ": C3 (33 µs), C6 (133 µs); a wake-up from an idle CPU can first cost up to 133 µs"
            ),
            "{}",
            c.detail
        );
        assert!(find(list, ids::SMT)
            .detail
            .starts_with("2 cores run two or more online threads (0,2; 1,3)"));
        assert!(find(list, ids::THP).detail.contains("(defrag always)"));
        assert!(find(list, ids::IRQBALANCE).detail.contains("(pid 812)"));
        assert_eq!(find(list, ids::CLOCKSOURCE).title, "clocksource hpet");
        assert!(find(list, ids::CLOCKSOURCE).remedy.starts_with("echo tsc"));
        assert!(find(list, ids::SWAP)
            .detail
            .starts_with("/dev/nvme0n1p3, /swapfile (3072 MiB, 512 MiB used, swappiness 60)"));
        assert_eq!(find(list, ids::TIMER_HZ).title, "timer frequency 250 Hz");
        assert!(find(list, ids::TIMER_HZ)
            .detail
            .starts_with("a tick is 4000 µs"));
        for h in list {
            for text in [&h.title, &h.detail, &h.remedy] {
                assert!(!text.is_empty() && !text.contains('\n'), "{h:?}");
            }
        }
    }

    #[test]
    fn clean_rt_box_has_no_findings() {
        let info = snapshot_from(&fixture("sysroot-rt"));
        assert_eq!(info.preemption_model.as_deref(), Some("rt"));
        assert!(info.hazards.is_empty(), "{:#?}", info.hazards);
        let extra = Extra::read(&fixture("sysroot-rt"), &info);
        // Everything was there to read: the silence is evidence.
        assert_eq!(extra.isolated.as_deref(), Some("2-3"));
        assert_eq!(extra.nohz_full.as_deref(), Some("2-3"));
        assert_eq!(extra.thp_enabled.as_deref(), Some("madvise"));
        assert_eq!(extra.swaps, Some(vec![]));
        assert_eq!(extra.swappiness, Some(10));
        assert_eq!(extra.irqbalance_pid, None);
        assert!(extra.smt_siblings.is_empty());
        assert_eq!(extra.cpu_ticks.map(|t| t.steal), Some(0));
    }

    #[test]
    fn nothing_readable_gives_nothing() {
        assert!(hazards(&SystemInfo::default(), &Extra::default()).is_empty());
        let root = fixture("does-not-exist");
        let info = snapshot_from(&root);
        assert_eq!(Extra::read(&root, &info), Extra::default());
    }

    fn rt_info() -> SystemInfo {
        snapshot_from(&fixture("sysroot-rt"))
    }

    #[test]
    fn preemption_models() {
        let extra = Extra::default();
        let mut info = rt_info();
        for (model, severity) in [
            ("none", Severity::Hazard),
            ("voluntary", Severity::Hazard),
            ("full", Severity::Info),
            ("lazy", Severity::Info),
        ] {
            info.preemption_model = Some(model.into());
            let list = hazards(&info, &extra);
            assert_eq!(find(&list, ids::PREEMPTION).severity, severity, "{model}");
        }
        // Not a PREEMPT_DYNAMIC build: preempt= would be ignored.
        info.preemption_model = Some("none".into());
        info.kernel_version = "#1 SMP Mon".into();
        let list = hazards(&info, &extra);
        assert!(find(&list, ids::PREEMPTION)
            .remedy
            .contains("CONFIG_PREEMPT"));
        info.preemption_model = None;
        let list = hazards(&info, &extra);
        assert_eq!(
            find(&list, ids::PREEMPTION).title,
            "preemption model unknown"
        );
    }

    #[test]
    fn thresholds() {
        let extra = Extra::default();
        let mut info = rt_info();
        // Exactly the threshold is not deep; one more is.
        info.cpuidle_states = vec![IdleState {
            name: "C1E".into(),
            latency_us: DEEP_IDLE_LATENCY_US,
            disabled: false,
        }];
        assert!(hazards(&info, &extra).is_empty());
        info.cpuidle_states[0].latency_us = DEEP_IDLE_LATENCY_US + 1;
        assert_eq!(
            by_id(&hazards(&info, &extra)),
            [(ids::C_STATES, Severity::Warning)]
        );
        info.cpuidle_states[0].disabled = true;
        assert!(hazards(&info, &extra).is_empty());

        // HZ 250 is fine on RT, reported otherwise.
        let mut info = rt_info();
        info.hz = Some(250);
        assert!(hazards(&info, &extra).is_empty());
        info.preemption_model = Some("full".into());
        let list = hazards(&info, &extra);
        assert_eq!(find(&list, ids::TIMER_HZ).severity, Severity::Info);

        // Steal: 0.99% is below the hazard, 1% is one.
        let info = rt_info();
        let ticks = |steal| CpuTicks {
            idle: 10_000 - steal,
            steal,
            ..CpuTicks::default()
        };
        let mut extra = Extra {
            cpu_ticks: Some(ticks(99)),
            ..Extra::default()
        };
        assert!(hazards(&info, &extra).is_empty());
        extra.cpu_ticks = Some(ticks(100));
        assert_eq!(
            find(&hazards(&info, &extra), ids::STEAL).title,
            "steal time 1.00%"
        );

        // RT throttling off is -1; 0 is "no RT time at all", which is on.
        let mut info = rt_info();
        info.rt_runtime_us = Some(0);
        assert_eq!(
            by_id(&hazards(&info, &Extra::default())),
            [(ids::RT_THROTTLING, Severity::Warning)]
        );
    }

    #[test]
    fn cpufreq_and_clocksource_cases() {
        let extra = Extra::default();
        let mut info = rt_info();
        info.cpufreq_governors.clear();
        let list = hazards(&info, &extra);
        assert_eq!(by_id(&list), [(ids::CPUFREQ, Severity::Info)]);
        assert!(find(&list, ids::CPUFREQ).detail.contains("firmware"));
        info.hypervisor = true;
        let list = hazards(&info, &extra);
        assert!(find(&list, ids::CPUFREQ).detail.contains("the host sets"));

        // arm64's counter is fine; kvm-clock with a TSC available is not.
        let mut info = rt_info();
        info.clocksource = Some("arch_sys_counter".into());
        info.available_clocksources = vec!["arch_sys_counter".into()];
        assert!(hazards(&info, &extra).is_empty());
        info.clocksource = Some("kvm-clock".into());
        info.available_clocksources = vec!["kvm-clock".into(), "tsc".into()];
        assert_eq!(
            by_id(&hazards(&info, &extra)),
            [(ids::CLOCKSOURCE, Severity::Warning)]
        );
        info.available_clocksources = vec!["hpet".into(), "acpi_pm".into()];
        info.clocksource = Some("acpi_pm".into());
        let list = hazards(&info, &extra);
        assert!(find(&list, ids::CLOCKSOURCE)
            .remedy
            .contains("clocksource=tsc"));
    }

    #[test]
    fn isolation_and_smt_cases() {
        let mut info = rt_info();
        info.isolcpus = None;
        info.nohz_full = None;
        // The cmdline still says nothing is isolated...
        info.kernel_cmdline = "ro quiet".into();
        let list = hazards(&info, &Extra::default());
        assert_eq!(by_id(&list), [(ids::ISOLATION, Severity::Warning)]);
        // ... unless sysfs says a cpuset partition is isolated.
        let extra = Extra {
            isolated: Some("3".into()),
            ..Extra::default()
        };
        assert!(hazards(&info, &extra).is_empty());
        info.cpu_count = 1;
        let list = hazards(&info, &Extra::default());
        assert_eq!(by_id(&list), [(ids::ISOLATION, Severity::Info)]);

        // smt/active alone is enough.
        let mut info = rt_info();
        info.smt_active = Some(true);
        let list = hazards(&info, &Extra::default());
        assert_eq!(
            find(&list, ids::SMT).detail.split(':').next(),
            Some("simultaneous multithreading is active")
        );
    }

    #[test]
    fn haltpoll_in_a_vm() {
        let mut info = rt_info();
        info.cpuidle_driver = Some("haltpoll".into());
        let mut extra = Extra {
            haltpoll_ns: Some(0),
            ..Extra::default()
        };
        let list = hazards(&info, &extra);
        assert_eq!(by_id(&list), [(ids::HALTPOLL, Severity::Warning)]);
        assert!(list[0]
            .detail
            .starts_with("idle vCPUs halt into the host at once (guest_halt_poll_ns 0): "));
        extra.haltpoll_ns = Some(200_000);
        let list = hazards(&info, &extra);
        assert!(list[0].detail.contains("poll up to 200000 ns, then halt"));
    }

    #[test]
    fn parsers() {
        assert_eq!(
            selected_mode("always [madvise] never\n").as_deref(),
            Some("madvise")
        );
        assert_eq!(selected_mode("always madvise never"), None);
        let swaps = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n\
                     /dev/zram0                              partition\t8388604\t\t0\t\t100\n\
                     garbage line\n";
        assert_eq!(
            parse_swaps(swaps),
            [SwapArea {
                name: "/dev/zram0".into(),
                kind: "partition".into(),
                size_kib: 8_388_604,
                used_kib: 0,
            }]
        );
        assert!(parse_swaps("Filename Type Size Used Priority\n").is_empty());
        let online = CpuSet::parse("0-3").unwrap();
        // cpu3 offline-sibling lists and unreadable ones are skipped.
        let groups = sibling_groups(&online, |cpu| match cpu.0 {
            0 | 4 => Some("0,4".into()),
            1 => Some("1-2".into()),
            2 => Some("1-2".into()),
            _ => None,
        });
        assert_eq!(groups, [CpuSet::parse("1-2").unwrap()]);
    }

    #[test]
    fn live_machine_check_runs() {
        let info = crate::sysinfo::snapshot();
        // Whatever the machine, every finding is complete and one line.
        for h in &info.hazards {
            assert!(!h.id.is_empty() && !h.title.is_empty() && !h.remedy.is_empty());
            assert!(!h.detail.contains('\n'));
        }
        let worst: Vec<Severity> = info.hazards.iter().map(|h| h.severity).collect();
        let mut sorted = worst.clone();
        sorted.sort_by_key(|s| std::cmp::Reverse(*s));
        assert_eq!(worst, sorted);
    }
}
