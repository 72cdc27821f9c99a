//! What a background workload did to the machine while a cell ran: the
//! characterization of Bernadat's Table 3 (CPU shares, interrupts, context
//! switches, system calls, deferred work, disk and network traffic, page
//! faults, runnable tasks), sampled once a second.
//!
//! Rates are per second of elapsed time (CLOCK_MONOTONIC between two
//! readings), so a sample taken late still gives the right rate. A figure
//! that could not be measured is `None` (`null` in JSON), never 0: system
//! calls are only counted where perf may open tracepoint counters, and a
//! /proc file that cannot be read leaves its figures out.
//!
//! The figures are system-wide unless a field says otherwise, so they
//! include latscope's own activity: a timer probe makes one system call and
//! two context switches per wake-up, and the noise probe keeps its CPUs 100 %
//! busy in user mode.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::Nanos;

/// Shares of CPU time in percent, as `/proc/stat` splits it. They add up to
/// 100 (up to rounding) when any time passed. `user` and `nice` include the
/// time spent running guests (the kernel counts it in both places; latscope
/// counts it once).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuPercent {
    pub user: f64,
    pub nice: f64,
    pub sys: f64,
    /// Hard interrupt handlers.
    pub irq: f64,
    /// Deferred work (softirqs), in interrupt context or in ksoftirqd.
    pub softirq: f64,
    /// Time the hypervisor ran something else while this guest wanted the CPU.
    pub steal: f64,
    pub idle: f64,
    /// Idle with I/O outstanding.
    pub iowait: f64,
}

impl CpuPercent {
    /// Everything but idle and I/O wait.
    pub fn busy(&self) -> f64 {
        self.user + self.nice + self.sys + self.irq + self.softirq + self.steal
    }
}

/// Block device traffic of whole disks, per second. Loop, RAM and zram
/// devices, device-mapper and md devices (which would count the same I/O a
/// second time) and partitions are left out.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DiskRates {
    /// Reads completed per second.
    pub reads_per_s: f64,
    /// Writes completed per second.
    pub writes_per_s: f64,
    /// KiB read per second (1 KiB = 1024 bytes).
    pub read_kb_per_s: f64,
    /// KiB written per second.
    pub write_kb_per_s: f64,
}

/// Network traffic of a group of interfaces (from `/proc/net/dev`), per
/// second, received and transmitted apart.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NetRates {
    pub rx_packets_per_s: f64,
    pub tx_packets_per_s: f64,
    /// KiB received per second.
    pub rx_kb_per_s: f64,
    /// KiB transmitted per second.
    pub tx_kb_per_s: f64,
}

impl NetRates {
    /// Packets per second, received plus transmitted.
    pub fn packets_per_s(&self) -> f64 {
        self.rx_packets_per_s + self.tx_packets_per_s
    }
    /// KiB per second, received plus transmitted.
    pub fn kb_per_s(&self) -> f64 {
        self.rx_kb_per_s + self.tx_kb_per_s
    }
}

/// One sample: the rates over the interval since the previous sample, or,
/// as [`WorkloadStats::mean`], over the whole cell.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkloadSecond {
    /// End of the interval, from the sampler's start (its first reading).
    pub offset_ns: Nanos,
    /// Length of the interval.
    pub elapsed_ns: Nanos,
    /// CPU shares over the measured CPUs ([`WorkloadStats::cpus`]).
    pub cpu: Option<CpuPercent>,
    /// CPU shares over all online CPUs.
    pub cpu_all: Option<CpuPercent>,
    /// Interrupts per second, all sources and CPUs (`/proc/stat` `intr`,
    /// which includes the local timer, IPIs and other per-CPU vectors).
    pub interrupts_per_s: Option<f64>,
    /// Interrupts per second delivered to the measured CPUs
    /// (`/proc/interrupts`).
    pub interrupts_measured_per_s: Option<f64>,
    pub context_switches_per_s: Option<f64>,
    /// Tasks created per second (`/proc/stat` `processes`: every fork and
    /// clone, so threads count too).
    pub processes_per_s: Option<f64>,
    /// System calls entered per second on all CPUs (`raw_syscalls:sys_enter`
    /// counted by perf); `None` where perf may not count it.
    pub syscalls_per_s: Option<f64>,
    /// Softirqs run per second, all vectors and CPUs (`/proc/softirqs`).
    pub softirqs_per_s: Option<f64>,
    pub disk: Option<DiskRates>,
    /// The loopback interface. Each packet sent over loopback is counted
    /// twice, once transmitted and once received.
    pub net_lo: Option<NetRates>,
    /// Every other interface latscope can see (its own network namespace,
    /// plus the namespaces of processes it was told to watch).
    pub net: Option<NetRates>,
    /// Page faults per second, minor and major (`/proc/vmstat` `pgfault`).
    pub page_faults_per_s: Option<f64>,
    /// Major page faults (that needed I/O) per second (`pgmajfault`).
    pub major_faults_per_s: Option<f64>,
    /// Tasks runnable at the end of the interval (`/proc/stat`
    /// `procs_running`, which counts the sampling thread itself: an idle
    /// machine shows 1). In the mean, the average of the samples.
    pub runnable: Option<f64>,
    /// Tasks in uninterruptible sleep (`procs_blocked`), like `runnable`.
    pub blocked: Option<f64>,
}

/// One interrupt source and its rate over the cell.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InterruptSource {
    /// The first column of `/proc/interrupts`: an IRQ number (`41`) or an
    /// architecture vector's mnemonic (`LOC`, `RES`, `CAL`, `TLB`, ...).
    pub source: String,
    /// The rest of its line: for an IRQ, the chip, the hardware IRQ and
    /// trigger and the handlers' names (`PCI-MSIX-0000:00:04.0 1-edge
    /// virtio3-rx`); for a vector, the kernel's description.
    pub description: String,
    /// Over all CPUs, per second.
    pub per_s: f64,
    /// On the measured CPUs, per second.
    pub measured_per_s: f64,
}

impl InterruptSource {
    /// The description without the chip and trigger: for an IRQ line the
    /// handlers' names (`PCI-MSIX-0000:00:04.0 1-edge virtio3-rx` →
    /// `virtio3-rx`), the words after the trigger (`edge`, `level`,
    /// `fasteoi`, with or without a hardware IRQ number); for anything else
    /// the whole description.
    pub fn short_description(&self) -> &str {
        let d = self.description.as_str();
        let mut start = None;
        let mut pos = 0;
        for word in d.split(' ') {
            let w = word.to_ascii_lowercase();
            if w.ends_with("edge") || w.ends_with("level") || w.ends_with("fasteoi") {
                start = Some(pos + word.len() + 1);
            }
            pos += word.len() + 1;
        }
        match start.and_then(|s| d.get(s..)) {
            Some(rest) if !rest.trim().is_empty() => rest.trim(),
            _ => d,
        }
    }
}

/// The characterization of one cell's workload.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkloadStats {
    /// The workload's name as given (`idle`, `cpu`, `compile`, `custom:...`).
    pub workload: String,
    /// The measured CPUs, kernel list form (`0-1`): what
    /// [`WorkloadSecond::cpu`] and the `measured` interrupt rates cover.
    pub cpus: String,
    /// CLOCK_MONOTONIC of the sampler's first reading; each sample's
    /// `offset_ns` counts from here.
    pub start_ns: Nanos,
    /// Number of samples (normally one a second).
    pub samples: u32,
    /// Rates over all samples together (total counts over total time; not a
    /// mean of the per-second rates, so a late sample weighs as much as the
    /// time it covers). `runnable` and `blocked` are the mean of the samples.
    /// `offset_ns` and `elapsed_ns` give the time covered.
    pub mean: WorkloadSecond,
    /// The most frequent interrupt sources over the cell, highest rate
    /// first (at most [`WorkloadStats::TOP_INTERRUPTS`]).
    pub top_interrupts: Vec<InterruptSource>,
    /// Softirqs per second over the cell, per vector (`TIMER`, `NET_RX`,
    /// `BLOCK`, `SCHED`, `RCU`, ...), all CPUs.
    pub softirqs_per_s: BTreeMap<String, f64>,
    /// What could not be measured and why, one line each.
    pub notes: Vec<String>,
    /// Bytes per second pushed through the `tty` workload's
    /// pseudo-terminals (the kernel keeps no system-wide pty counter, so
    /// this comes from the workload's own processes); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pty_bytes_per_s: Option<f64>,
    /// What the threads of an `rt:` workload did (from their own
    /// scheduler statistics); absent for other workloads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rt_load: Option<RtLoadStats>,
    /// The samples in order.
    pub seconds: Vec<WorkloadSecond>,
}

/// What the SCHED_FIFO threads of an `rt:` workload achieved over the
/// cell, per thread on average.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RtLoadStats {
    /// Threads (one process each).
    pub threads: u32,
    /// CPU time the threads ran, in percent of the elapsed time (each
    /// thread's `/proc/<pid>/schedstat` run time, averaged over threads):
    /// BUSY/PERIOD when every burst ran in full.
    pub busy_percent: f64,
    /// Bursts per second per thread: the times a thread went to sleep at
    /// the end of a burst (its voluntary context switches). 1/PERIOD when
    /// no period was missed.
    pub bursts_per_s: f64,
}

impl WorkloadStats {
    /// How many interrupt sources [`WorkloadStats::top_interrupts`] keeps.
    pub const TOP_INTERRUPTS: usize = 5;

    /// The path of the first figure that is not a finite number
    /// (`seconds[3].cpu.user`), if any. JSON has no NaN or infinity:
    /// serde_json would write `null`, which reads back as another value or
    /// not at all, so such a characterization must not be stored.
    pub fn non_finite(&self) -> Option<String> {
        if let Some(f) = self.mean.non_finite() {
            return Some(format!("mean.{f}"));
        }
        for (i, s) in self.top_interrupts.iter().enumerate() {
            if !s.per_s.is_finite() {
                return Some(format!("top_interrupts[{i}].per_s"));
            }
            if !s.measured_per_s.is_finite() {
                return Some(format!("top_interrupts[{i}].measured_per_s"));
            }
        }
        if let Some(rt) = &self.rt_load {
            if !rt.busy_percent.is_finite() {
                return Some("rt_load.busy_percent".into());
            }
            if !rt.bursts_per_s.is_finite() {
                return Some("rt_load.bursts_per_s".into());
            }
        }
        if let Some((name, _)) = self.softirqs_per_s.iter().find(|(_, v)| !v.is_finite()) {
            return Some(format!("softirqs_per_s.{name}"));
        }
        self.seconds
            .iter()
            .enumerate()
            .find_map(|(i, s)| Some(format!("seconds[{i}].{}", s.non_finite()?)))
    }
}

impl CpuPercent {
    fn non_finite(&self) -> Option<&'static str> {
        [
            ("user", self.user),
            ("nice", self.nice),
            ("sys", self.sys),
            ("irq", self.irq),
            ("softirq", self.softirq),
            ("steal", self.steal),
            ("idle", self.idle),
            ("iowait", self.iowait),
        ]
        .into_iter()
        .find_map(|(name, v)| (!v.is_finite()).then_some(name))
    }
}

impl WorkloadSecond {
    /// The name of the first figure that is not a finite number, if any
    /// (see [`WorkloadStats::non_finite`]).
    pub fn non_finite(&self) -> Option<String> {
        let groups = [("cpu", &self.cpu), ("cpu_all", &self.cpu_all)];
        if let Some((group, field)) = groups
            .into_iter()
            .find_map(|(g, c)| Some((g, c.as_ref()?.non_finite()?)))
        {
            return Some(format!("{group}.{field}"));
        }
        let scalars = [
            ("interrupts_per_s", self.interrupts_per_s),
            ("interrupts_measured_per_s", self.interrupts_measured_per_s),
            ("context_switches_per_s", self.context_switches_per_s),
            ("processes_per_s", self.processes_per_s),
            ("syscalls_per_s", self.syscalls_per_s),
            ("softirqs_per_s", self.softirqs_per_s),
            ("page_faults_per_s", self.page_faults_per_s),
            ("major_faults_per_s", self.major_faults_per_s),
            ("runnable", self.runnable),
            ("blocked", self.blocked),
        ];
        if let Some((name, _)) = scalars
            .into_iter()
            .find(|(_, v)| v.is_some_and(|v| !v.is_finite()))
        {
            return Some(name.to_string());
        }
        let mut fields: Vec<(String, f64)> = Vec::new();
        if let Some(d) = &self.disk {
            fields.extend([
                ("disk.reads_per_s".to_string(), d.reads_per_s),
                ("disk.writes_per_s".to_string(), d.writes_per_s),
                ("disk.read_kb_per_s".to_string(), d.read_kb_per_s),
                ("disk.write_kb_per_s".to_string(), d.write_kb_per_s),
            ]);
        }
        for (group, n) in [("net_lo", &self.net_lo), ("net", &self.net)] {
            if let Some(n) = n {
                fields.extend([
                    (format!("{group}.rx_packets_per_s"), n.rx_packets_per_s),
                    (format!("{group}.tx_packets_per_s"), n.tx_packets_per_s),
                    (format!("{group}.rx_kb_per_s"), n.rx_kb_per_s),
                    (format!("{group}.tx_kb_per_s"), n.tx_kb_per_s),
                ]);
            }
        }
        fields
            .into_iter()
            .find_map(|(name, v)| (!v.is_finite()).then_some(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_json_with_nulls_for_the_unknown() {
        let second = WorkloadSecond {
            offset_ns: Nanos(1_000_000_000),
            elapsed_ns: Nanos(1_000_000_000),
            cpu: Some(CpuPercent {
                user: 50.0,
                idle: 50.0,
                ..CpuPercent::default()
            }),
            interrupts_per_s: Some(1234.5),
            net_lo: Some(NetRates {
                rx_packets_per_s: 3.0,
                tx_packets_per_s: 3.0,
                ..NetRates::default()
            }),
            ..WorkloadSecond::default()
        };
        let stats = WorkloadStats {
            workload: "cpu".into(),
            cpus: "0-1".into(),
            samples: 1,
            mean: second.clone(),
            pty_bytes_per_s: None,
            rt_load: None,
            seconds: vec![second],
            softirqs_per_s: [("TIMER".to_string(), 250.0)].into(),
            ..WorkloadStats::default()
        };
        let text = serde_json::to_string(&stats).unwrap();
        assert!(text.contains("\"syscalls_per_s\":null"), "{text}");
        let back: WorkloadStats = serde_json::from_str(&text).unwrap();
        assert_eq!(back, stats);
        let s = &back.seconds[0];
        assert_eq!(s.cpu.as_ref().map(CpuPercent::busy), Some(50.0));
        assert_eq!(s.net_lo.as_ref().map(NetRates::packets_per_s), Some(6.0));
        assert_eq!(back.non_finite(), None);
    }

    #[test]
    fn short_descriptions() {
        let short = |d: &str| {
            InterruptSource {
                description: d.to_string(),
                ..InterruptSource::default()
            }
            .short_description()
            .to_string()
        };
        assert_eq!(
            short("PCI-MSIX-0000:00:04.0 1-edge virtio3-rx"),
            "virtio3-rx"
        );
        assert_eq!(short("IO-APIC 9-fasteoi acpi"), "acpi");
        assert_eq!(
            short("IO-APIC 16-fasteoi ehci_hcd:usb1, snd_hda_intel:card0"),
            "ehci_hcd:usb1, snd_hda_intel:card0"
        );
        assert_eq!(short("GICv3 27 Level arch_timer"), "arch_timer");
        assert_eq!(short("Local timer interrupts"), "Local timer interrupts");
        // A line with no handler keeps its description.
        assert_eq!(short("IO-APIC 2-edge"), "IO-APIC 2-edge");
        assert_eq!(short(""), "");
    }

    #[test]
    fn non_finite_figures_are_named() {
        let mut stats = WorkloadStats {
            pty_bytes_per_s: None,
            rt_load: None,
            seconds: vec![WorkloadSecond::default(); 3],
            ..WorkloadStats::default()
        };
        assert_eq!(stats.non_finite(), None);
        stats.seconds[2].net = Some(NetRates {
            tx_kb_per_s: f64::INFINITY,
            ..NetRates::default()
        });
        assert_eq!(
            stats.non_finite().as_deref(),
            Some("seconds[2].net.tx_kb_per_s")
        );
        stats.seconds[1].cpu_all = Some(CpuPercent {
            steal: f64::NAN,
            ..CpuPercent::default()
        });
        assert_eq!(
            stats.non_finite().as_deref(),
            Some("seconds[1].cpu_all.steal")
        );
        stats.softirqs_per_s.insert("RCU".into(), f64::NAN);
        assert_eq!(stats.non_finite().as_deref(), Some("softirqs_per_s.RCU"));
        stats.mean.syscalls_per_s = Some(f64::NEG_INFINITY);
        assert_eq!(stats.non_finite().as_deref(), Some("mean.syscalls_per_s"));
    }
}
