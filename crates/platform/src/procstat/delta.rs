//! From two readings of the counters to the rates of one sample, and from
//! the samples to the rates over a whole cell. Pure: the readings come in as
//! text (or parsed), the clock as a number.

use std::collections::BTreeMap;

use latscope_model::{
    CpuPercent, CpuSet, DiskRates, InterruptSource, Nanos, NetRates, WorkloadSecond,
};

use super::parse::{
    counted_disks, parse_cpu_table, parse_diskstats, parse_net_dev, parse_stat, parse_vmstat,
    sys_block_names, CpuTableRow, CpuTicks, DiskCounters, NetCounters, StatCounters, VmCounters,
};

/// The text of the files one reading consists of; `None` for a file that
/// could not be read.
#[derive(Clone, Debug, Default)]
pub struct ProcTexts {
    pub stat: Option<String>,
    pub interrupts: Option<String>,
    pub softirqs: Option<String>,
    pub diskstats: Option<String>,
    /// `/proc/net/dev` of latscope's own network namespace.
    pub net_dev: Option<String>,
    /// `/proc/<pid>/net/dev` of other namespaces, with a tag naming each
    /// (the interfaces are keyed `name@tag`).
    pub net_dev_other: Vec<(String, String)>,
    pub vmstat: Option<String>,
    /// The entries of `/sys/block`, when it could be listed.
    pub sys_block: Option<Vec<String>>,
}

/// The counters at one instant.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// CLOCK_MONOTONIC of the reading.
    pub at_ns: u64,
    pub stat: Option<StatCounters>,
    pub interrupts: Option<Vec<CpuTableRow>>,
    pub softirqs: Option<Vec<CpuTableRow>>,
    /// The counted disks only (see `parse::is_counted_disk`).
    pub disks: Option<BTreeMap<String, DiskCounters>>,
    /// Interfaces by name; those of other namespaces as `name@tag`.
    pub net: Option<BTreeMap<String, NetCounters>>,
    pub vm: Option<VmCounters>,
    /// System calls entered so far, summed over the CPUs' counters.
    pub syscalls: Option<u64>,
}

impl Snapshot {
    pub fn parse(at_ns: u64, texts: &ProcTexts, syscalls: Option<u64>) -> Snapshot {
        let whole = texts
            .sys_block
            .as_ref()
            .map(|names| sys_block_names(names.iter().map(String::as_str)));
        let mut net: Option<BTreeMap<String, NetCounters>> =
            texts.net_dev.as_deref().map(parse_net_dev);
        for (tag, text) in &texts.net_dev_other {
            let map = net.get_or_insert_with(BTreeMap::new);
            for (name, c) in parse_net_dev(text) {
                map.insert(format!("{name}@{tag}"), c);
            }
        }
        Snapshot {
            at_ns,
            stat: texts.stat.as_deref().map(parse_stat),
            interrupts: texts.interrupts.as_deref().and_then(parse_cpu_table),
            softirqs: texts.softirqs.as_deref().and_then(parse_cpu_table),
            disks: texts
                .diskstats
                .as_deref()
                .map(|t| counted_disks(&parse_diskstats(t), whole.as_ref())),
            net,
            vm: texts.vmstat.as_deref().map(parse_vmstat),
            syscalls,
        }
    }
}

/// One interrupt source's count over an interval.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceCount {
    pub description: String,
    pub total: u64,
    pub measured: u64,
}

/// What happened between two readings: counts, not rates.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Interval {
    pub elapsed_ns: u64,
    pub cpu: Option<CpuTicks>,
    pub cpu_all: Option<CpuTicks>,
    pub interrupts: Option<u64>,
    pub interrupts_measured: Option<u64>,
    pub context_switches: Option<u64>,
    pub processes: Option<u64>,
    pub syscalls: Option<u64>,
    pub softirqs: Option<u64>,
    pub disk: Option<DiskCounters>,
    pub net_lo: Option<NetCounters>,
    pub net: Option<NetCounters>,
    pub page_faults: Option<u64>,
    pub major_faults: Option<u64>,
    /// Instantaneous, at the end of the interval.
    pub runnable: Option<u64>,
    pub blocked: Option<u64>,
    /// By source (`/proc/interrupts` first column).
    pub sources: BTreeMap<String, SourceCount>,
    /// By softirq vector, all CPUs.
    pub vectors: BTreeMap<String, u64>,
}

fn diff(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    Some(b?.saturating_sub(a?))
}

/// A map's counters since `prev`, summed. A key that was not there before
/// counts from zero (an interface or device that appeared in between).
fn sum_since<T: Copy + Default>(
    prev: &BTreeMap<String, T>,
    next: &BTreeMap<String, T>,
    keep: impl Fn(&str) -> bool,
    since: impl Fn(&T, &T) -> T,
    add: impl Fn(&mut T, &T),
) -> T {
    let mut total = T::default();
    for (name, now) in next.iter().filter(|(n, _)| keep(n)) {
        let d = since(now, prev.get(name).unwrap_or(&T::default()));
        add(&mut total, &d);
    }
    total
}

fn is_loopback(key: &str) -> bool {
    key.split('@').next() == Some("lo")
}

/// The counts between two readings. `measured` selects the CPUs of
/// [`Interval::cpu`] and [`Interval::interrupts_measured`]; a measured CPU
/// missing from either reading (offline) is left out.
pub fn interval(prev: &Snapshot, next: &Snapshot, measured: &CpuSet) -> Interval {
    let mut out = Interval {
        elapsed_ns: next.at_ns.saturating_sub(prev.at_ns),
        syscalls: diff(prev.syscalls, next.syscalls),
        ..Interval::default()
    };
    if let (Some(a), Some(b)) = (&prev.stat, &next.stat) {
        out.cpu_all = match (&a.all, &b.all) {
            (Some(x), Some(y)) => Some(y.since(x)),
            _ => None,
        };
        let mut ticks: Option<CpuTicks> = None;
        for cpu in measured.iter() {
            if let (Some(x), Some(y)) = (a.per_cpu.get(&cpu.0), b.per_cpu.get(&cpu.0)) {
                ticks.get_or_insert_with(CpuTicks::default).add(&y.since(x));
            }
        }
        out.cpu = ticks;
        out.interrupts = diff(a.interrupts, b.interrupts);
        out.context_switches = diff(a.context_switches, b.context_switches);
        out.processes = diff(a.processes, b.processes);
    }
    if let Some(b) = &next.stat {
        out.runnable = b.procs_running;
        out.blocked = b.procs_blocked;
    }
    if let (Some(a), Some(b)) = (&prev.interrupts, &next.interrupts) {
        let before: BTreeMap<&str, &CpuTableRow> = a.iter().map(|r| (r.name.as_str(), r)).collect();
        let mut measured_total = 0u64;
        for row in b {
            let old = before.get(row.name.as_str());
            let total = row.total().saturating_sub(old.map_or(0, |o| o.total()));
            let on_measured = measured
                .iter()
                .filter_map(|c| {
                    let now = row.per_cpu.get(&c.0)?;
                    let then = old.and_then(|o| o.per_cpu.get(&c.0)).copied().unwrap_or(0);
                    Some(now.saturating_sub(then))
                })
                .fold(0u64, u64::saturating_add);
            measured_total = measured_total.saturating_add(on_measured);
            out.sources.insert(
                row.name.clone(),
                SourceCount {
                    description: row.description.clone(),
                    total,
                    measured: on_measured,
                },
            );
        }
        out.interrupts_measured = Some(measured_total);
    }
    if let (Some(a), Some(b)) = (&prev.softirqs, &next.softirqs) {
        let before: BTreeMap<&str, u64> = a.iter().map(|r| (r.name.as_str(), r.total())).collect();
        for row in b {
            let then = before.get(row.name.as_str()).copied().unwrap_or(0);
            out.vectors
                .insert(row.name.clone(), row.total().saturating_sub(then));
        }
        out.softirqs = Some(out.vectors.values().fold(0u64, |s, &n| s.saturating_add(n)));
    }
    if let (Some(a), Some(b)) = (&prev.disks, &next.disks) {
        out.disk = Some(sum_since(
            a,
            b,
            |_| true,
            DiskCounters::since,
            DiskCounters::add,
        ));
    }
    if let (Some(a), Some(b)) = (&prev.net, &next.net) {
        out.net_lo = Some(sum_since(
            a,
            b,
            is_loopback,
            NetCounters::since,
            NetCounters::add,
        ));
        out.net = Some(sum_since(
            a,
            b,
            |k| !is_loopback(k),
            NetCounters::since,
            NetCounters::add,
        ));
    }
    if let (Some(a), Some(b)) = (&prev.vm, &next.vm) {
        out.page_faults = diff(a.pgfault, b.pgfault);
        out.major_faults = diff(a.pgmajfault, b.pgmajfault);
    }
    out
}

/// Rounds a rate for storage: one decimal is far below what one-second
/// samples can resolve, and it keeps the stored samples short.
fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn per_second(count: u64, ns: u64) -> Option<f64> {
    (ns > 0).then(|| round1(count as f64 * 1e9 / ns as f64))
}

/// Shares in percent; `None` when no tick passed (an interval shorter than
/// a clock tick says nothing about them).
pub fn cpu_percent(t: &CpuTicks) -> Option<CpuPercent> {
    let total = t.total();
    if total == 0 {
        return None;
    }
    let p = |n: u64| round2(100.0 * n as f64 / total as f64);
    Some(CpuPercent {
        user: p(t.user),
        nice: p(t.nice),
        sys: p(t.system),
        irq: p(t.irq),
        softirq: p(t.softirq),
        steal: p(t.steal),
        idle: p(t.idle),
        iowait: p(t.iowait),
    })
}

fn disk_rates(d: &DiskCounters, ns: u64) -> Option<DiskRates> {
    Some(DiskRates {
        reads_per_s: per_second(d.reads, ns)?,
        writes_per_s: per_second(d.writes, ns)?,
        // 512-byte sectors: two to the KiB.
        read_kb_per_s: round1(per_second(d.read_sectors, ns)? / 2.0),
        write_kb_per_s: round1(per_second(d.write_sectors, ns)? / 2.0),
    })
}

fn net_rates(n: &NetCounters, ns: u64) -> Option<NetRates> {
    Some(NetRates {
        rx_packets_per_s: per_second(n.rx_packets, ns)?,
        tx_packets_per_s: per_second(n.tx_packets, ns)?,
        rx_kb_per_s: round1(per_second(n.rx_bytes, ns)? / 1024.0),
        tx_kb_per_s: round1(per_second(n.tx_bytes, ns)? / 1024.0),
    })
}

impl Interval {
    /// The interval as a sample ending `offset_ns` after the sampler's start.
    pub fn rates(&self, offset_ns: u64) -> WorkloadSecond {
        let ns = self.elapsed_ns;
        let rate = |c: Option<u64>| c.and_then(|c| per_second(c, ns));
        WorkloadSecond {
            offset_ns: Nanos(offset_ns),
            elapsed_ns: Nanos(ns),
            cpu: self.cpu.as_ref().and_then(cpu_percent),
            cpu_all: self.cpu_all.as_ref().and_then(cpu_percent),
            interrupts_per_s: rate(self.interrupts),
            interrupts_measured_per_s: rate(self.interrupts_measured),
            context_switches_per_s: rate(self.context_switches),
            processes_per_s: rate(self.processes),
            syscalls_per_s: rate(self.syscalls),
            softirqs_per_s: rate(self.softirqs),
            disk: self.disk.as_ref().and_then(|d| disk_rates(d, ns)),
            net_lo: self.net_lo.as_ref().and_then(|n| net_rates(n, ns)),
            net: self.net.as_ref().and_then(|n| net_rates(n, ns)),
            page_faults_per_s: rate(self.page_faults),
            major_faults_per_s: rate(self.major_faults),
            runnable: self.runnable.map(|n| n as f64),
            blocked: self.blocked.map(|n| n as f64),
        }
    }
}

/// A counter summed over the intervals that had it, with the time those
/// intervals covered: a figure missing for a while does not dilute its mean.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Tally<T> {
    value: T,
    ns: u64,
}

fn tally<T: Copy + Default>(
    acc: &mut Option<Tally<T>>,
    item: Option<T>,
    ns: u64,
    add: impl Fn(&mut T, &T),
) {
    if let Some(v) = item {
        let t = acc.get_or_insert_with(Tally::default);
        add(&mut t.value, &v);
        t.ns = t.ns.saturating_add(ns);
    }
}

fn add_u64(a: &mut u64, b: &u64) {
    *a = a.saturating_add(*b);
}

/// The samples of a cell added up.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Totals {
    pub samples: u32,
    pub elapsed_ns: u64,
    cpu: Option<Tally<CpuTicks>>,
    cpu_all: Option<Tally<CpuTicks>>,
    interrupts: Option<Tally<u64>>,
    interrupts_measured: Option<Tally<u64>>,
    context_switches: Option<Tally<u64>>,
    processes: Option<Tally<u64>>,
    syscalls: Option<Tally<u64>>,
    softirqs: Option<Tally<u64>>,
    disk: Option<Tally<DiskCounters>>,
    net_lo: Option<Tally<NetCounters>>,
    net: Option<Tally<NetCounters>>,
    page_faults: Option<Tally<u64>>,
    major_faults: Option<Tally<u64>>,
    /// Sum of the instantaneous values and how many there were.
    runnable: Option<Tally<u64>>,
    blocked: Option<Tally<u64>>,
    sources: BTreeMap<String, SourceCount>,
    sources_ns: u64,
    vectors: BTreeMap<String, u64>,
    vectors_ns: u64,
}

impl Totals {
    pub fn add(&mut self, i: &Interval) {
        let ns = i.elapsed_ns;
        self.samples = self.samples.saturating_add(1);
        self.elapsed_ns = self.elapsed_ns.saturating_add(ns);
        tally(&mut self.cpu, i.cpu, ns, CpuTicks::add);
        tally(&mut self.cpu_all, i.cpu_all, ns, CpuTicks::add);
        tally(&mut self.interrupts, i.interrupts, ns, add_u64);
        tally(
            &mut self.interrupts_measured,
            i.interrupts_measured,
            ns,
            add_u64,
        );
        tally(&mut self.context_switches, i.context_switches, ns, add_u64);
        tally(&mut self.processes, i.processes, ns, add_u64);
        tally(&mut self.syscalls, i.syscalls, ns, add_u64);
        tally(&mut self.softirqs, i.softirqs, ns, add_u64);
        tally(&mut self.disk, i.disk, ns, DiskCounters::add);
        tally(&mut self.net_lo, i.net_lo, ns, NetCounters::add);
        tally(&mut self.net, i.net, ns, NetCounters::add);
        tally(&mut self.page_faults, i.page_faults, ns, add_u64);
        tally(&mut self.major_faults, i.major_faults, ns, add_u64);
        // For the instantaneous values `ns` counts samples.
        tally(&mut self.runnable, i.runnable, 1, add_u64);
        tally(&mut self.blocked, i.blocked, 1, add_u64);
        if i.interrupts_measured.is_some() {
            self.sources_ns = self.sources_ns.saturating_add(ns);
            for (name, c) in &i.sources {
                let t = self.sources.entry(name.clone()).or_default();
                t.description.clone_from(&c.description);
                t.total = t.total.saturating_add(c.total);
                t.measured = t.measured.saturating_add(c.measured);
            }
        }
        if i.softirqs.is_some() {
            self.vectors_ns = self.vectors_ns.saturating_add(ns);
            for (name, n) in &i.vectors {
                let t = self.vectors.entry(name.clone()).or_default();
                *t = t.saturating_add(*n);
            }
        }
    }

    /// Rates over everything added, as one sample ending at `offset_ns`.
    pub fn mean(&self, offset_ns: u64) -> WorkloadSecond {
        fn rate(t: &Option<Tally<u64>>) -> Option<f64> {
            t.as_ref().and_then(|t| per_second(t.value, t.ns))
        }
        fn average(t: &Option<Tally<u64>>) -> Option<f64> {
            t.as_ref()
                .filter(|t| t.ns > 0)
                .map(|t| round2(t.value as f64 / t.ns as f64))
        }
        WorkloadSecond {
            offset_ns: Nanos(offset_ns),
            elapsed_ns: Nanos(self.elapsed_ns),
            cpu: self.cpu.as_ref().and_then(|t| cpu_percent(&t.value)),
            cpu_all: self.cpu_all.as_ref().and_then(|t| cpu_percent(&t.value)),
            interrupts_per_s: rate(&self.interrupts),
            interrupts_measured_per_s: rate(&self.interrupts_measured),
            context_switches_per_s: rate(&self.context_switches),
            processes_per_s: rate(&self.processes),
            syscalls_per_s: rate(&self.syscalls),
            softirqs_per_s: rate(&self.softirqs),
            disk: self.disk.as_ref().and_then(|t| disk_rates(&t.value, t.ns)),
            net_lo: self.net_lo.as_ref().and_then(|t| net_rates(&t.value, t.ns)),
            net: self.net.as_ref().and_then(|t| net_rates(&t.value, t.ns)),
            page_faults_per_s: rate(&self.page_faults),
            major_faults_per_s: rate(&self.major_faults),
            runnable: average(&self.runnable),
            blocked: average(&self.blocked),
        }
    }

    /// The `n` interrupt sources with the most interrupts, most first (ties
    /// by name); sources that did not fire are left out.
    pub fn top_interrupts(&self, n: usize) -> Vec<InterruptSource> {
        let mut all: Vec<(&String, &SourceCount)> =
            self.sources.iter().filter(|(_, c)| c.total > 0).collect();
        all.sort_by(|a, b| b.1.total.cmp(&a.1.total).then_with(|| a.0.cmp(b.0)));
        all.into_iter()
            .take(n)
            .map(|(name, c)| InterruptSource {
                source: name.clone(),
                description: c.description.clone(),
                per_s: per_second(c.total, self.sources_ns).unwrap_or(0.0),
                measured_per_s: per_second(c.measured, self.sources_ns).unwrap_or(0.0),
            })
            .collect()
    }

    /// Softirqs per second by vector.
    pub fn softirqs_per_s(&self) -> BTreeMap<String, f64> {
        self.vectors
            .iter()
            .filter_map(|(name, &n)| Some((name.clone(), per_second(n, self.vectors_ns)?)))
            .collect()
    }
}

/// The CPUs of a reading (its `cpuN` lines).
pub fn cpus_of(snapshot: &Snapshot) -> CpuSet {
    snapshot
        .stat
        .as_ref()
        .map(|s| {
            s.per_cpu
                .keys()
                .map(|&c| latscope_model::CpuId(c))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::CpuId;

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/procstat");

    fn texts(dir: &str) -> ProcTexts {
        let read = |f: &str| std::fs::read_to_string(format!("{FIXTURES}/{dir}/{f}")).ok();
        ProcTexts {
            stat: read("stat"),
            interrupts: read("interrupts"),
            softirqs: read("softirqs"),
            diskstats: read("diskstats"),
            net_dev: read("net_dev"),
            net_dev_other: Vec::new(),
            vmstat: read("vmstat"),
            sys_block: std::fs::read_to_string(format!("{FIXTURES}/sys_block"))
                .ok()
                .map(|t| t.lines().map(str::to_string).collect()),
        }
    }

    fn cpus(list: &str) -> CpuSet {
        CpuSet::parse(list).unwrap()
    }

    /// The two captured readings, taken to be exactly one second apart.
    fn pair() -> (Snapshot, Snapshot) {
        let a = Snapshot::parse(5_000_000_000, &texts("t0"), Some(1_000));
        let b = Snapshot::parse(6_000_000_000, &texts("t1"), Some(4_500));
        (a, b)
    }

    #[test]
    fn one_second_of_the_captured_machine() {
        let (a, b) = pair();
        let i = interval(&a, &b, &cpus("1"));
        assert_eq!(i.elapsed_ns, 1_000_000_000);
        // From the files: cpu1 user 110846 → 110884, system +2, idle +1.
        let cpu = i.cpu.unwrap();
        assert_eq!(
            (cpu.user, cpu.system, cpu.idle, cpu.total()),
            (38, 2, 1, 41)
        );
        assert_eq!(i.cpu_all.unwrap().user, 48);
        assert_eq!(i.syscalls, Some(3_500));
        // vda: 18 reads of 1616 sectors, 22 writes of 16432 sectors (the
        // 8 MiB written with O_DIRECT, and some).
        assert_eq!(
            i.disk,
            Some(DiskCounters {
                reads: 18,
                read_sectors: 1616,
                writes: 22,
                write_sectors: 16432,
            })
        );
        // Five 1000-byte datagrams over loopback: each sent and received.
        let lo = i.net_lo.unwrap();
        assert_eq!((lo.rx_packets, lo.tx_packets), (5, 5));
        assert_eq!((lo.rx_bytes, lo.tx_bytes), (5140, 5140));
        assert_eq!(i.net, Some(NetCounters::default()));
        assert_eq!(i.context_switches, Some(55789020 - 55788662));
        assert_eq!(i.processes, Some(49));
        assert_eq!((i.page_faults, i.major_faults), (Some(11034), Some(4)));

        let s = i.rates(1_000_000_000);
        let p = s.cpu.unwrap();
        assert_eq!((p.user, p.sys, p.idle), (92.68, 4.88, 2.44));
        assert_eq!(s.syscalls_per_s, Some(3500.0));
        let d = s.disk.unwrap();
        assert_eq!((d.reads_per_s, d.read_kb_per_s), (18.0, 808.0));
        assert_eq!((d.writes_per_s, d.write_kb_per_s), (22.0, 8216.0));
        let lo = s.net_lo.unwrap();
        assert_eq!((lo.packets_per_s(), lo.rx_kb_per_s), (10.0, 5.0));
        assert_eq!(s.interrupts_per_s, Some((28116118 - 28115855) as f64));
        assert!(s.interrupts_measured_per_s.unwrap() <= s.interrupts_per_s.unwrap());
        assert!(s.runnable.unwrap() >= 1.0);
        let vectors: u64 = i.vectors.values().sum();
        assert_eq!(i.softirqs, Some(vectors));
        assert!(i.vectors["TIMER"] > 0);
    }

    #[test]
    fn unknown_stays_unknown() {
        let (mut a, b) = pair();
        a.syscalls = None;
        a.net = None;
        let s = interval(&a, &b, &cpus("0-1")).rates(1);
        assert_eq!(s.syscalls_per_s, None);
        assert_eq!((s.net, s.net_lo), (None, None));
        assert!(s.disk.is_some());
        // No time passed: no rate, and no CPU shares without a tick.
        let z = interval(&b, &b, &cpus("0")).rates(0);
        assert_eq!((z.context_switches_per_s, z.cpu), (None, None));
        assert_eq!(
            z.runnable,
            b.stat
                .as_ref()
                .and_then(|s| s.procs_running)
                .map(|n| n as f64)
        );
    }

    #[test]
    fn offline_measured_cpus_are_left_out() {
        let (a, b) = pair();
        let i = interval(&a, &b, &cpus("1,7"));
        assert_eq!(i.cpu.unwrap().user, 38);
        assert_eq!(interval(&a, &b, &cpus("7")).cpu, None);
    }

    #[test]
    fn interfaces_of_other_namespaces_and_new_ones() {
        let own = "Inter-|\n face |\n    lo: 100 10 0 0 0 0 0 0 100 10 0 0 0 0 0 0\n  eth0: 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n";
        let own2 = "Inter-|\n face |\n    lo: 300 12 0 0 0 0 0 0 300 12 0 0 0 0 0 0\n  eth0: 2048 4 0 0 0 0 0 0 1024 1 0 0 0 0 0 0\n";
        let ns = "Inter-|\n face |\n    lo: 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n veth1: 10240 10 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n";
        let ns2 = "Inter-|\n face |\n    lo: 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n veth1: 20480 20 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n veth2: 0 0 0 0 0 0 0 0 5120 5 0 0 0 0 0 0\n";
        let t = |own: &str, ns: &str| ProcTexts {
            net_dev: Some(own.into()),
            net_dev_other: vec![("4026532000".into(), ns.into())],
            ..ProcTexts::default()
        };
        let a = Snapshot::parse(0, &t(own, ns), None);
        let b = Snapshot::parse(2_000_000_000, &t(own2, ns2), None);
        assert!(a.net.as_ref().unwrap().contains_key("veth1@4026532000"));
        let s = interval(&a, &b, &CpuSet::new()).rates(2_000_000_000);
        let lo = s.net_lo.unwrap();
        assert_eq!((lo.rx_packets_per_s, lo.tx_packets_per_s), (1.0, 1.0));
        let net = s.net.unwrap();
        // eth0 4 rx + veth1 10 rx over 2 s; tx: eth0 1 + veth2 (new) 5.
        assert_eq!((net.rx_packets_per_s, net.tx_packets_per_s), (7.0, 3.0));
        assert_eq!((net.rx_kb_per_s, net.tx_kb_per_s), (6.0, 3.0));
        assert!(!a.net.as_ref().unwrap().contains_key("veth2@4026532000"));
        assert_eq!(s.cpu, None);
    }

    #[test]
    fn totals_weigh_samples_by_their_time() {
        let (a, b) = pair();
        let mut late = b.clone();
        late.at_ns = a.at_ns + 3_000_000_000;
        let mut totals = Totals::default();
        let first = interval(&a, &b, &cpus("0-1"));
        totals.add(&first);
        // Second interval: three seconds, nothing counted but time.
        let mut second = interval(&b, &b, &cpus("0-1"));
        second.elapsed_ns = 3_000_000_000;
        totals.add(&second);
        let m = totals.mean(4_000_000_000);
        assert_eq!(totals.samples, 2);
        assert_eq!(m.elapsed_ns, Nanos(4_000_000_000));
        assert_eq!(m.syscalls_per_s, Some(875.0));
        let first_rate = first.rates(1).context_switches_per_s.unwrap();
        assert_eq!(m.context_switches_per_s, Some(round1(first_rate / 4.0)));
        // CPU shares come from the ticks: the idle interval had none.
        assert_eq!(m.cpu, first.rates(1).cpu);
        let runnable = b.stat.as_ref().and_then(|s| s.procs_running).unwrap() as f64;
        assert_eq!(m.runnable, Some(runnable));

        let top = totals.top_interrupts(5);
        assert!(!top.is_empty() && top.len() <= 5);
        assert!(top.windows(2).all(|w| w[0].per_s >= w[1].per_s));
        assert!(top
            .iter()
            .all(|s| s.per_s > 0.0 && s.measured_per_s <= s.per_s));
        let v = totals.softirqs_per_s();
        assert_eq!(v.len(), 10);
        assert_eq!(v["TIMER"], round1(first.vectors["TIMER"] as f64 / 4.0));
    }

    #[test]
    fn a_figure_missing_for_a_while_keeps_its_rate() {
        let (a, b) = pair();
        let mut totals = Totals::default();
        let mut i = interval(&a, &b, &cpus("0"));
        totals.add(&i);
        i.syscalls = None;
        totals.add(&i);
        assert_eq!(totals.mean(0).syscalls_per_s, Some(3500.0));
    }

    #[test]
    fn cpus_from_a_reading() {
        let (a, _) = pair();
        assert_eq!(cpus_of(&a), [CpuId(0), CpuId(1)].into_iter().collect());
        assert!(cpus_of(&Snapshot::default()).is_empty());
    }
}
