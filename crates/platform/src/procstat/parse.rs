//! Parsers for the /proc files the workload characterization reads. Each
//! takes the file's text and returns its counters; none touches the file
//! system, so they are tested on captured files. Lines a parser does not
//! understand are skipped rather than failing the whole file: the kernel
//! adds lines and columns over the years, and a figure left out is better
//! than a sample lost.

use std::collections::{BTreeMap, BTreeSet};

/// Time a CPU (or all CPUs) spent in each state, in clock ticks
/// (USER_HZ, normally 100 a second), from a `cpu` line of `/proc/stat`.
/// The guest columns are left out: the kernel already counts guest time in
/// `user` and `nice`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTicks {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuTicks {
    pub fn total(&self) -> u64 {
        self.user
            .saturating_add(self.nice)
            .saturating_add(self.system)
            .saturating_add(self.idle)
            .saturating_add(self.iowait)
            .saturating_add(self.irq)
            .saturating_add(self.softirq)
            .saturating_add(self.steal)
    }

    /// Field by field `self - earlier`, never below 0 (`iowait` is known to
    /// step backwards on tickless kernels).
    pub fn since(&self, earlier: &CpuTicks) -> CpuTicks {
        CpuTicks {
            user: self.user.saturating_sub(earlier.user),
            nice: self.nice.saturating_sub(earlier.nice),
            system: self.system.saturating_sub(earlier.system),
            idle: self.idle.saturating_sub(earlier.idle),
            iowait: self.iowait.saturating_sub(earlier.iowait),
            irq: self.irq.saturating_sub(earlier.irq),
            softirq: self.softirq.saturating_sub(earlier.softirq),
            steal: self.steal.saturating_sub(earlier.steal),
        }
    }

    pub fn add(&mut self, other: &CpuTicks) {
        self.user = self.user.saturating_add(other.user);
        self.nice = self.nice.saturating_add(other.nice);
        self.system = self.system.saturating_add(other.system);
        self.idle = self.idle.saturating_add(other.idle);
        self.iowait = self.iowait.saturating_add(other.iowait);
        self.irq = self.irq.saturating_add(other.irq);
        self.softirq = self.softirq.saturating_add(other.softirq);
        self.steal = self.steal.saturating_add(other.steal);
    }
}

/// The counters of `/proc/stat` the characterization uses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatCounters {
    /// The `cpu` line: all online CPUs.
    pub all: Option<CpuTicks>,
    /// The `cpuN` lines (offline CPUs have none).
    pub per_cpu: BTreeMap<u32, CpuTicks>,
    /// First number of `intr`: interrupts since boot, all sources.
    pub interrupts: Option<u64>,
    pub context_switches: Option<u64>,
    /// Forks and clones since boot.
    pub processes: Option<u64>,
    pub procs_running: Option<u64>,
    pub procs_blocked: Option<u64>,
}

fn parse_cpu_ticks(fields: &[&str]) -> Option<CpuTicks> {
    // Kernels before 2.6.11 lack steal; a missing trailing column is 0.
    let mut n = [0u64; 8];
    if fields.len() < 4 {
        return None;
    }
    for (slot, text) in n.iter_mut().zip(fields) {
        *slot = text.parse().ok()?;
    }
    Some(CpuTicks {
        user: n[0],
        nice: n[1],
        system: n[2],
        idle: n[3],
        iowait: n[4],
        irq: n[5],
        softirq: n[6],
        steal: n[7],
    })
}

/// Parses `/proc/stat`.
pub fn parse_stat(text: &str) -> StatCounters {
    let mut out = StatCounters::default();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let Some(key) = words.next() else { continue };
        let rest: Vec<&str> = words.collect();
        let first = || rest.first().and_then(|w| w.parse::<u64>().ok());
        match key {
            "cpu" => out.all = parse_cpu_ticks(&rest),
            "intr" => out.interrupts = first(),
            "ctxt" => out.context_switches = first(),
            "processes" => out.processes = first(),
            "procs_running" => out.procs_running = first(),
            "procs_blocked" => out.procs_blocked = first(),
            _ => {
                if let Some(cpu) = key.strip_prefix("cpu").and_then(|n| n.parse().ok()) {
                    if let Some(ticks) = parse_cpu_ticks(&rest) {
                        out.per_cpu.insert(cpu, ticks);
                    }
                }
            }
        }
    }
    out
}

/// One row of a per-CPU table (`/proc/interrupts`, `/proc/softirqs`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuTableRow {
    /// The first column without its colon: `41`, `LOC`, `NET_RX`.
    pub name: String,
    /// Counts by CPU number, for the CPUs of the header.
    pub per_cpu: BTreeMap<u32, u64>,
    /// A count that is not split by CPU (`ERR:` and `MIS:` of
    /// `/proc/interrupts` have a single number).
    pub unsplit: u64,
    /// The text after the counts, whitespace collapsed: chip, hardware IRQ
    /// and handlers, or a vector's description. Empty for softirqs.
    pub description: String,
}

impl CpuTableRow {
    pub fn total(&self) -> u64 {
        self.per_cpu
            .values()
            .fold(self.unsplit, |a, &b| a.saturating_add(b))
    }
}

/// Parses a table with a `CPU0 CPU1 ...` header and one row per source:
/// `/proc/interrupts` and `/proc/softirqs`. Offline CPUs have no column, so
/// the header decides which CPU each count belongs to. Returns `None`
/// without a header.
pub fn parse_cpu_table(text: &str) -> Option<Vec<CpuTableRow>> {
    let mut lines = text.lines();
    let header = lines.next()?;
    let cpus: Vec<u32> = header
        .split_whitespace()
        .map(|w| w.strip_prefix("CPU").and_then(|n| n.parse().ok()))
        .collect::<Option<_>>()?;
    if cpus.is_empty() {
        return None;
    }
    let mut rows = Vec::new();
    for line in lines {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        let name = name.trim();
        if name.is_empty() {
            continue;
        }
        let mut row = CpuTableRow {
            name: name.to_string(),
            ..CpuTableRow::default()
        };
        let mut words = rest.split_whitespace().peekable();
        let mut counts = Vec::with_capacity(cpus.len());
        while counts.len() < cpus.len() {
            match words.peek().and_then(|w| w.parse::<u64>().ok()) {
                Some(n) => {
                    counts.push(n);
                    words.next();
                }
                None => break,
            }
        }
        if counts.len() == cpus.len() {
            row.per_cpu = cpus.iter().copied().zip(counts).collect();
        } else {
            // ERR: and MIS: (one system-wide number), or a truncated line.
            row.unsplit = counts.iter().fold(0u64, |a, &b| a.saturating_add(b));
        }
        row.description = words.collect::<Vec<_>>().join(" ");
        rows.push(row);
    }
    Some(rows)
}

/// Counters of one block device from `/proc/diskstats`. Sectors are always
/// 512 bytes there, whatever the device's own sector size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiskCounters {
    pub reads: u64,
    pub read_sectors: u64,
    pub writes: u64,
    pub write_sectors: u64,
}

impl DiskCounters {
    pub fn since(&self, earlier: &DiskCounters) -> DiskCounters {
        DiskCounters {
            reads: self.reads.saturating_sub(earlier.reads),
            read_sectors: self.read_sectors.saturating_sub(earlier.read_sectors),
            writes: self.writes.saturating_sub(earlier.writes),
            write_sectors: self.write_sectors.saturating_sub(earlier.write_sectors),
        }
    }

    pub fn add(&mut self, other: &DiskCounters) {
        self.reads = self.reads.saturating_add(other.reads);
        self.read_sectors = self.read_sectors.saturating_add(other.read_sectors);
        self.writes = self.writes.saturating_add(other.writes);
        self.write_sectors = self.write_sectors.saturating_add(other.write_sectors);
    }
}

/// Parses `/proc/diskstats`: every device, by name.
pub fn parse_diskstats(text: &str) -> BTreeMap<String, DiskCounters> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        // major minor name, then at least the 11 fields of Linux 2.6.
        if words.len() < 14 {
            continue;
        }
        let n = |i: usize| words.get(i).and_then(|w| w.parse::<u64>().ok());
        let (Some(reads), Some(read_sectors), Some(writes), Some(write_sectors)) =
            (n(3), n(5), n(7), n(9))
        else {
            continue;
        };
        out.insert(
            words[2].to_string(),
            DiskCounters {
                reads,
                read_sectors,
                writes,
                write_sectors,
            },
        );
    }
    out
}

/// Devices whose I/O is not disk I/O (loop, RAM, zram: memory) or is
/// counted again on the disks below them (device-mapper, md RAID).
const NOT_DISKS: [&str; 5] = ["loop", "ram", "zram", "dm-", "md"];

/// Whether the traffic of block device `name` counts as disk traffic.
///
/// The rule: whole devices only (a partition's I/O is also counted on its
/// disk), and no loop, RAM, zram, device-mapper (`dm-`) or md device.
/// `whole_disks` is the list of
/// `/sys/block` (where the kernel lists whole devices only, with `!` for
/// `/`); without it, a device is taken for a partition when another device
/// of `all` is its name followed by digits or by `p` and digits (`sda1`,
/// `nvme0n1p2`, `mmcblk0p1`).
pub fn is_counted_disk(
    name: &str,
    whole_disks: Option<&BTreeSet<String>>,
    all: &BTreeSet<&str>,
) -> bool {
    if NOT_DISKS.iter().any(|p| name.starts_with(p)) {
        return false;
    }
    match whole_disks {
        Some(whole) => whole.contains(name),
        None => !all.iter().any(|&disk| {
            name.strip_prefix(disk).is_some_and(|rest| {
                let digits = rest.strip_prefix('p').unwrap_or(rest);
                disk != name && !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
            })
        }),
    }
}

/// The names listed in `/sys/block`, with the kernel's `!` turned back into
/// the `/` that `/proc/diskstats` shows (`cciss!c0d0`).
pub fn sys_block_names<'a>(entries: impl IntoIterator<Item = &'a str>) -> BTreeSet<String> {
    entries.into_iter().map(|e| e.replace('!', "/")).collect()
}

/// The counted disks (see [`is_counted_disk`]).
pub fn counted_disks(
    disks: &BTreeMap<String, DiskCounters>,
    whole_disks: Option<&BTreeSet<String>>,
) -> BTreeMap<String, DiskCounters> {
    let all: BTreeSet<&str> = disks.keys().map(String::as_str).collect();
    disks
        .iter()
        .filter(|(name, _)| is_counted_disk(name, whole_disks, &all))
        .map(|(name, c)| (name.clone(), *c))
        .collect()
}

/// Counters of one network interface from `/proc/net/dev`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NetCounters {
    pub rx_bytes: u64,
    pub rx_packets: u64,
    pub tx_bytes: u64,
    pub tx_packets: u64,
}

impl NetCounters {
    pub fn since(&self, earlier: &NetCounters) -> NetCounters {
        NetCounters {
            rx_bytes: self.rx_bytes.saturating_sub(earlier.rx_bytes),
            rx_packets: self.rx_packets.saturating_sub(earlier.rx_packets),
            tx_bytes: self.tx_bytes.saturating_sub(earlier.tx_bytes),
            tx_packets: self.tx_packets.saturating_sub(earlier.tx_packets),
        }
    }

    pub fn add(&mut self, other: &NetCounters) {
        self.rx_bytes = self.rx_bytes.saturating_add(other.rx_bytes);
        self.rx_packets = self.rx_packets.saturating_add(other.rx_packets);
        self.tx_bytes = self.tx_bytes.saturating_add(other.tx_bytes);
        self.tx_packets = self.tx_packets.saturating_add(other.tx_packets);
    }
}

/// Parses `/proc/net/dev` (or `/proc/<pid>/net/dev`): every interface of
/// that network namespace, by name.
pub fn parse_net_dev(text: &str) -> BTreeMap<String, NetCounters> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        // The two header lines contain '|', interface lines do not.
        if line.contains('|') {
            continue;
        }
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        let n: Vec<u64> = rest
            .split_whitespace()
            .map_while(|w| w.parse().ok())
            .collect();
        // Receive: bytes packets errs drop fifo frame compressed multicast;
        // transmit: bytes packets ...
        if n.len() < 10 {
            continue;
        }
        out.insert(
            name.trim().to_string(),
            NetCounters {
                rx_bytes: n[0],
                rx_packets: n[1],
                tx_bytes: n[8],
                tx_packets: n[9],
            },
        );
    }
    out
}

/// Page fault counters from `/proc/vmstat`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VmCounters {
    /// Minor and major faults.
    pub pgfault: Option<u64>,
    pub pgmajfault: Option<u64>,
}

pub fn parse_vmstat(text: &str) -> VmCounters {
    let mut out = VmCounters::default();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let (Some(key), Some(value)) = (words.next(), words.next()) else {
            continue;
        };
        let value = value.parse().ok();
        match key {
            "pgfault" => out.pgfault = value,
            "pgmajfault" => out.pgmajfault = value,
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/procstat");

    fn fixture(rel: &str) -> String {
        std::fs::read_to_string(format!("{FIXTURES}/{rel}")).unwrap()
    }

    #[test]
    fn stat_of_this_machine() {
        let s = parse_stat(&fixture("t0/stat"));
        let all = s.all.unwrap();
        assert_eq!(
            all,
            CpuTicks {
                user: 197809,
                nice: 6547,
                system: 43046,
                idle: 1112344,
                iowait: 7085,
                irq: 0,
                softirq: 952,
                steal: 1097,
            }
        );
        assert_eq!(s.per_cpu.len(), 2);
        assert_eq!(s.per_cpu[&1].user, 110846);
        assert_eq!(s.interrupts, Some(28115855));
        assert_eq!(s.context_switches, Some(55788662));
        assert!(s.processes.unwrap() > 100_000);
        assert_eq!(s.procs_running.map(|n| n >= 1), Some(true));
        assert!(s.procs_blocked.is_some());
    }

    #[test]
    fn stat_variants() {
        // An old kernel without steal and guest columns, an offline CPU 1,
        // and a line latscope does not know.
        let text = "cpu  10 0 5 100 1 0 0\ncpu0 10 0 5 100 1 0 0\ncpu2 1 2 3 4\n\
                    intr 77 1 2\nfuture_field 3\nctxt 9\nprocesses x\n";
        let s = parse_stat(text);
        assert_eq!(s.all.unwrap().steal, 0);
        assert_eq!(s.all.unwrap().total(), 116);
        assert_eq!(s.per_cpu.keys().copied().collect::<Vec<_>>(), [0, 2]);
        assert_eq!(s.interrupts, Some(77));
        assert_eq!(s.context_switches, Some(9));
        assert_eq!(s.processes, None);
        assert_eq!(s.procs_running, None);
        assert_eq!(parse_stat(""), StatCounters::default());
    }

    #[test]
    fn ticks_never_go_backwards() {
        let a = CpuTicks {
            iowait: 10,
            user: 5,
            ..CpuTicks::default()
        };
        let b = CpuTicks {
            iowait: 8,
            user: 7,
            ..CpuTicks::default()
        };
        let d = b.since(&a);
        assert_eq!((d.user, d.iowait), (2, 0));
    }

    #[test]
    fn interrupts_of_this_machine() {
        let rows = parse_cpu_table(&fixture("t0/interrupts")).unwrap();
        let get = |n: &str| rows.iter().find(|r| r.name == n).unwrap();
        let rx = get("41");
        assert_eq!(rx.description, "PCI-MSIX-0000:00:04.0 1-edge virtio3-rx");
        assert_eq!(rx.per_cpu.keys().copied().collect::<Vec<_>>(), [0, 1]);
        let loc = get("LOC");
        assert_eq!(loc.description, "Local timer interrupts");
        assert!(loc.total() > 1_000_000);
        let err = get("ERR");
        assert!(err.per_cpu.is_empty());
        assert_eq!(err.unsplit, 0);
        assert_eq!(get("26").description, "IO-APIC 4-edge ttyS0");
    }

    #[test]
    fn interrupts_with_an_offline_cpu_and_shared_handlers() {
        let text = "           CPU0       CPU2\n\
                    \x20 9:          3          4   IO-APIC   9-fasteoi   acpi\n\
                    \x2016:         10          0   IO-APIC  16-fasteoi   ehci_hcd:usb1, snd_hda_intel:card0\n\
                    \x20MIS:          7\n\
                    garbage line\n";
        let rows = parse_cpu_table(text).unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].per_cpu, BTreeMap::from([(0, 3), (2, 4)]));
        assert_eq!(rows[0].description, "IO-APIC 9-fasteoi acpi");
        assert_eq!(
            rows[1].description,
            "IO-APIC 16-fasteoi ehci_hcd:usb1, snd_hda_intel:card0"
        );
        assert_eq!((rows[2].name.as_str(), rows[2].total()), ("MIS", 7));
        assert!(parse_cpu_table("").is_none());
        assert!(parse_cpu_table("nonsense\n").is_none());
    }

    #[test]
    fn softirqs_of_this_machine() {
        let rows = parse_cpu_table(&fixture("t0/softirqs")).unwrap();
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED",
                "HRTIMER", "RCU"
            ]
        );
        assert!(rows
            .iter()
            .all(|r| r.description.is_empty() && r.per_cpu.len() == 2));
    }

    #[test]
    fn diskstats_and_the_disk_rule() {
        let disks = parse_diskstats(&fixture("t0/diskstats"));
        assert_eq!(disks.len(), 10);
        assert_eq!(
            disks["vda"],
            DiskCounters {
                reads: 796068,
                read_sectors: 113686018,
                writes: 92375,
                write_sectors: 42015856,
            }
        );
        let listed = fixture("sys_block");
        let whole = sys_block_names(listed.lines());
        let counted = counted_disks(&disks, Some(&whole));
        assert_eq!(counted.keys().collect::<Vec<_>>(), ["vda"]);
        // Without /sys/block the names alone give the same answer here.
        assert_eq!(
            counted_disks(&disks, None).keys().collect::<Vec<_>>(),
            ["vda"]
        );
    }

    #[test]
    fn partitions_and_stacked_devices_are_not_counted_twice() {
        let names = [
            "sda",
            "sda1",
            "sda12",
            "nvme0n1",
            "nvme0n1p1",
            "nvme0n10",
            "mmcblk0",
            "mmcblk0p2",
            "dm-0",
            "md127",
            "sr0",
            "zram0",
            "ram3",
            "loop9",
        ];
        let all: BTreeSet<&str> = names.into_iter().collect();
        let by_name: Vec<&str> = names
            .into_iter()
            .filter(|n| is_counted_disk(n, None, &all))
            .collect();
        // The name rule mistakes namespace 10 for partition 0 of namespace 1.
        assert_eq!(by_name, ["sda", "nvme0n1", "mmcblk0", "sr0"]);
        // /sys/block knows better.
        let whole = sys_block_names(["sda", "nvme0n1", "nvme0n10", "mmcblk0", "sr0", "dm-0"]);
        let by_sys: Vec<&str> = names
            .into_iter()
            .filter(|n| is_counted_disk(n, Some(&whole), &all))
            .collect();
        assert_eq!(by_sys, ["sda", "nvme0n1", "nvme0n10", "mmcblk0", "sr0"]);
        assert!(sys_block_names(["cciss!c0d0"]).contains("cciss/c0d0"));
    }

    #[test]
    fn net_dev_of_this_machine() {
        let net = parse_net_dev(&fixture("t0/net_dev"));
        assert_eq!(
            net.keys().map(String::as_str).collect::<Vec<_>>(),
            ["eth0", "ifb0", "ifb1", "lo"]
        );
        assert_eq!(net["lo"].rx_packets, net["lo"].tx_packets);
        assert_eq!(net["lo"].rx_bytes, 4896976048);
        assert_eq!(net["lo"].tx_packets, 4584868);
        // Large counters run into the colon.
        let joined = "Inter-|\n face |\n  eth1:123456789012 5 0 0 0 0 0 0 7 8 0 0 0 0 0 0\n";
        let n = parse_net_dev(joined);
        assert_eq!(n["eth1"].rx_bytes, 123456789012);
        assert_eq!((n["eth1"].tx_bytes, n["eth1"].tx_packets), (7, 8));
    }

    #[test]
    fn vmstat_faults() {
        let vm = parse_vmstat(&fixture("t0/vmstat"));
        assert!(vm.pgfault.unwrap() > vm.pgmajfault.unwrap());
        assert_eq!(parse_vmstat("nr_free_pages 5\n"), VmCounters::default());
    }
}
