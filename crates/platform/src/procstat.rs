//! Workload characterization: what the machine did while a cell ran, read
//! from /proc once a second (Bernadat's Table 3).
//!
//! A [`Sampler`] reads `/proc/stat`, `/proc/interrupts`, `/proc/softirqs`,
//! `/proc/diskstats`, `/proc/net/dev` and `/proc/vmstat`, and counts system
//! calls with one perf counter per CPU on the `raw_syscalls:sys_enter`
//! tracepoint (counting mode: the kernel adds to a number, no records are
//! written). Each [`Sampler::sample`] turns the counters' growth since the
//! previous call into rates over the time that really passed.
//!
//! The parsing ([`parse`]) and the arithmetic ([`delta`]) are pure functions
//! over text and numbers, tested on files captured from a real machine; this
//! module only reads the files and the counters. It is meant for
//! latscope's housekeeping thread, never a measuring one: it allocates,
//! reads files and makes system calls.
//!
//! The cost, measured on the 2-vCPU test VM: a sample takes about 0.2 ms of
//! CPU on the housekeeping thread; while the counters are open every system
//! call on the machine costs about 30 ns more (the tracepoint's slow path:
//! `getppid` 95 → 125 ns). [`SamplerOptions::count_syscalls`] turns the
//! counting off.
//!
//! What is not here: pseudo-terminal traffic. The kernel keeps no
//! system-wide byte counter for ptys (`/proc/tty/driver/serial` covers
//! serial ports only), so the `tty` workload counts the bytes it pushes
//! itself.

pub mod delta;
pub mod parse;

use std::fs;
use std::path::{Path, PathBuf};

use latscope_model::{CpuSet, WorkloadSecond, WorkloadStats};

use crate::monotonic_ns;
use crate::perf::{PerfEvent, PerfEventAttr};
use delta::{cpus_of, interval, ProcTexts, Snapshot, Totals};

/// A sample over less time than this is returned without rates and not
/// recorded: it would only divide noise by almost nothing.
const MIN_INTERVAL_NS: u64 = 1_000_000;

/// Where the tracepoint's id is, below a tracefs root.
const SYS_ENTER_ID: &str = "events/raw_syscalls/sys_enter/id";

/// How a [`Sampler`] reads the system.
#[derive(Clone, Debug)]
pub struct SamplerOptions {
    /// The directory holding `proc/` and `sys/` (`/` on the live machine; a
    /// copy in tests).
    pub root: PathBuf,
    /// Count system calls with perf (needs root or CAP_PERFMON, or a low
    /// `perf_event_paranoid`, and tracefs for the tracepoint's id).
    pub count_syscalls: bool,
    /// A tracefs directory (the one holding `events/`); `None`: look for a
    /// mounted one. The sampler never mounts tracefs itself.
    pub tracefs: Option<PathBuf>,
}

impl Default for SamplerOptions {
    fn default() -> SamplerOptions {
        SamplerOptions {
            root: PathBuf::from("/"),
            count_syscalls: true,
            tracefs: None,
        }
    }
}

/// A network namespace other than latscope's whose interfaces are counted.
#[derive(Debug)]
struct WatchedNamespace {
    pid: u32,
    /// The namespace's inode number, as `/proc/<pid>/ns/net` names it.
    inode: String,
}

/// Samples the system's activity once a second while a cell runs.
#[derive(Debug)]
pub struct Sampler {
    root: PathBuf,
    cpus: CpuSet,
    counters: Vec<PerfEvent>,
    namespaces: Vec<WatchedNamespace>,
    own_namespace: Option<String>,
    start_ns: u64,
    prev: Snapshot,
    totals: Totals,
    seconds: Vec<WorkloadSecond>,
    notes: Vec<String>,
}

impl Sampler {
    /// Starts sampling the live machine: opens the system-call counters
    /// where allowed and takes the first reading. `cpus` are the measured
    /// CPUs (empty: all online CPUs). Never fails: what cannot be read is
    /// left out of the samples and named in [`Sampler::notes`].
    pub fn new(cpus: &CpuSet) -> Sampler {
        Sampler::with_options(cpus, SamplerOptions::default())
    }

    /// [`Sampler::new`] with a different root, a given tracefs, or without
    /// counting system calls.
    pub fn with_options(cpus: &CpuSet, options: SamplerOptions) -> Sampler {
        let mut sampler = Sampler {
            root: options.root,
            cpus: cpus.clone(),
            counters: Vec::new(),
            namespaces: Vec::new(),
            own_namespace: None,
            start_ns: 0,
            prev: Snapshot::default(),
            totals: Totals::default(),
            seconds: Vec::new(),
            notes: Vec::new(),
        };
        sampler.own_namespace = sampler.namespace_of("self");
        // The CPUs to count on come from the first reading; the counters
        // must exist before the reading that starts the first interval.
        let mut first = sampler.read();
        if sampler.cpus.is_empty() {
            sampler.cpus = cpus_of(&first);
        }
        if options.count_syscalls {
            match open_syscall_counters(&sampler.root, options.tracefs.as_deref(), &first) {
                Ok(counters) => {
                    sampler.counters = counters;
                    first = sampler.read();
                }
                Err(e) => sampler.note(format!("system calls not counted: {e}")),
            }
        } else {
            sampler.note("system calls not counted: not asked for".to_string());
        }
        sampler.start_ns = first.at_ns;
        sampler.prev = first;
        sampler
    }

    /// The measured CPUs.
    pub fn cpus(&self) -> &CpuSet {
        &self.cpus
    }

    /// Whether system calls are being counted.
    pub fn counts_syscalls(&self) -> bool {
        !self.counters.is_empty()
    }

    /// What could not be measured and why, one line each.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Counts the interfaces of `pid`'s network namespace too (a workload
    /// that sends its traffic between private namespaces: latscope's own
    /// `/proc/net/dev` does not see it). Returns false, and changes nothing,
    /// when that namespace is latscope's own or already watched. Traffic
    /// counts from this call on; the watch ends when the process is gone.
    pub fn watch_net_namespace(&mut self, pid: u32) -> bool {
        let Some(inode) = self.namespace_of(&pid.to_string()) else {
            return false;
        };
        if Some(&inode) == self.own_namespace.as_ref()
            || self.namespaces.iter().any(|n| n.inode == inode)
        {
            return false;
        }
        let Some(text) = self.read_text(&format!("proc/{pid}/net/dev")) else {
            return false;
        };
        // Start its interfaces at their present counts, so that the traffic
        // before the watch is not taken for traffic of the next second.
        if let Some(prev) = self.prev.net.as_mut() {
            for (name, c) in parse::parse_net_dev(&text) {
                prev.insert(format!("{name}@{inode}"), c);
            }
        }
        self.namespaces.push(WatchedNamespace { pid, inode });
        true
    }

    /// Reads the counters and returns the rates since the previous call (or
    /// since the start), recording them. Called less than a millisecond
    /// after the previous one, it returns a sample with no figures and
    /// records nothing.
    pub fn sample(&mut self) -> WorkloadSecond {
        let next = self.read();
        let i = interval(&self.prev, &next, &self.cpus);
        let offset = next.at_ns.saturating_sub(self.start_ns);
        if i.elapsed_ns < MIN_INTERVAL_NS {
            return WorkloadSecond {
                offset_ns: latscope_model::Nanos(offset),
                elapsed_ns: latscope_model::Nanos(i.elapsed_ns),
                ..WorkloadSecond::default()
            };
        }
        self.totals.add(&i);
        let second = i.rates(offset);
        self.seconds.push(second.clone());
        self.prev = next;
        second
    }

    /// The characterization so far (for checkpoints), named `workload`.
    pub fn stats(&self, workload: &str) -> WorkloadStats {
        self.build(workload, self.seconds.clone())
    }

    /// The characterization of the whole cell. Reads nothing: call
    /// [`Sampler::sample`] first to cover the time since the last sample.
    pub fn finish(mut self, workload: &str) -> WorkloadStats {
        let seconds = std::mem::take(&mut self.seconds);
        self.build(workload, seconds)
    }

    fn build(&self, workload: &str, seconds: Vec<WorkloadSecond>) -> WorkloadStats {
        WorkloadStats {
            workload: workload.to_string(),
            cpus: self.cpus.to_string(),
            start_ns: latscope_model::Nanos(self.start_ns),
            samples: self.totals.samples,
            mean: self
                .totals
                .mean(self.prev.at_ns.saturating_sub(self.start_ns)),
            top_interrupts: self.totals.top_interrupts(WorkloadStats::TOP_INTERRUPTS),
            softirqs_per_s: self.totals.softirqs_per_s(),
            notes: self.notes.clone(),
            pty_bytes_per_s: None,
            rt_load: None,
            seconds,
        }
    }

    fn note(&mut self, line: String) {
        if !self.notes.contains(&line) {
            self.notes.push(line);
        }
    }

    fn read_text(&self, rel: &str) -> Option<String> {
        fs::read_to_string(self.root.join(rel)).ok()
    }

    /// The inode of the network namespace of `/proc/<who>` (`self` or a
    /// pid), from the `net:[4026531840]` link.
    fn namespace_of(&self, who: &str) -> Option<String> {
        let link = fs::read_link(self.root.join(format!("proc/{who}/ns/net"))).ok()?;
        let text = link.to_string_lossy();
        let inode = text.strip_prefix("net:[")?.strip_suffix(']')?;
        Some(inode.to_string())
    }

    /// One reading of everything.
    fn read(&mut self) -> Snapshot {
        let mut texts = ProcTexts::default();
        let mut missing = Vec::new();
        for (slot, rel) in [
            (&mut texts.stat, "proc/stat"),
            (&mut texts.interrupts, "proc/interrupts"),
            (&mut texts.softirqs, "proc/softirqs"),
            (&mut texts.diskstats, "proc/diskstats"),
            (&mut texts.net_dev, "proc/net/dev"),
            (&mut texts.vmstat, "proc/vmstat"),
        ] {
            match fs::read_to_string(self.root.join(rel)) {
                Ok(t) => *slot = Some(t),
                Err(e) => missing.push(format!("cannot read /{rel}: {e}")),
            }
        }
        texts.sys_block = fs::read_dir(self.root.join("sys/block")).ok().map(|dir| {
            dir.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        });
        let mut gone = Vec::new();
        for (i, ns) in self.namespaces.iter().enumerate() {
            // A pid reused by a process of another namespace must not bring
            // that namespace's counters since boot into the next sample.
            let same = self.namespace_of(&ns.pid.to_string()).as_ref() == Some(&ns.inode);
            match self.read_text(&format!("proc/{}/net/dev", ns.pid)) {
                Some(text) if same => texts.net_dev_other.push((ns.inode.clone(), text)),
                _ => gone.push(i),
            }
        }
        for i in gone.into_iter().rev() {
            self.namespaces.remove(i);
        }
        let syscalls = self.read_syscalls();
        for line in missing {
            self.note(line);
        }
        Snapshot::parse(monotonic_ns(), &texts, syscalls)
    }

    fn read_syscalls(&mut self) -> Option<u64> {
        if self.counters.is_empty() {
            return None;
        }
        let mut total = 0u64;
        for c in &self.counters {
            match c.read_count() {
                Ok(n) => total = total.saturating_add(n),
                Err(e) => {
                    self.note(format!("system calls not counted: {e}"));
                    self.counters.clear();
                    return None;
                }
            }
        }
        Some(total)
    }
}

/// The mount points of tracefs in the text of `/proc/mounts`, with the
/// octal escapes (`\040` for a blank) undone.
pub fn tracefs_mount_points(mounts: &str) -> Vec<PathBuf> {
    mounts
        .lines()
        .filter_map(|line| {
            let mut f = line.split_whitespace();
            let (_source, target, fstype) = (f.next()?, f.next()?, f.next()?);
            (fstype == "tracefs").then(|| PathBuf::from(unescape_octal(target)))
        })
        .collect()
}

fn unescape_octal(s: &str) -> String {
    let mut out = Vec::with_capacity(s.len());
    let mut rest = s.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        let code = (b == b'\\')
            .then(|| tail.get(..3))
            .flatten()
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)))
            .and_then(|d| {
                let v = d.iter().fold(0u32, |v, c| v * 8 + u32::from(c - b'0'));
                u8::try_from(v).ok()
            });
        match code {
            Some(c) => {
                out.push(c);
                rest = &tail[3..];
            }
            None => {
                out.push(b);
                rest = tail;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The id of `raw_syscalls:sys_enter`: from `tracefs` when given, else from
/// a mounted tracefs or the two usual places.
fn sys_enter_id(root: &Path, tracefs: Option<&Path>) -> Result<u64, String> {
    let candidates: Vec<PathBuf> = match tracefs {
        Some(t) => vec![t.to_path_buf()],
        None => {
            let mounts = fs::read_to_string(root.join("proc/mounts")).unwrap_or_default();
            tracefs_mount_points(&mounts)
                .into_iter()
                .map(|p| root.join(p.strip_prefix("/").unwrap_or(&p)))
                .chain([
                    root.join("sys/kernel/tracing"),
                    root.join("sys/kernel/debug/tracing"),
                ])
                .collect()
        }
    };
    let mut last = None;
    for dir in &candidates {
        let path = dir.join(SYS_ENTER_ID);
        match fs::read_to_string(&path) {
            Ok(text) => {
                return text
                    .trim()
                    .parse()
                    .map_err(|_| format!("{} holds '{}', not an id", path.display(), text.trim()))
            }
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                last = Some(format!("cannot read {}: {e}", path.display()));
            }
            Err(_) => {}
        }
    }
    Err(last.unwrap_or_else(|| {
        "tracefs is not mounted (or has no raw_syscalls:sys_enter); mount it on /sys/kernel/tracing"
            .to_string()
    }))
}

/// One counting `raw_syscalls:sys_enter` counter per CPU of `reading`,
/// system-wide (every task). All or none.
fn open_syscall_counters(
    root: &Path,
    tracefs: Option<&Path>,
    reading: &Snapshot,
) -> Result<Vec<PerfEvent>, String> {
    let id = sys_enter_id(root, tracefs)?;
    let cpus = cpus_of(reading);
    if cpus.is_empty() {
        return Err("no CPU found in /proc/stat".to_string());
    }
    let attr = PerfEventAttr::tracepoint_counter(id);
    cpus.iter()
        .map(|cpu| PerfEvent::open_cpu(&attr, cpu.0).map_err(|e| e.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::PERF_TYPE_TRACEPOINT;

    #[test]
    fn a_sampler_can_move_to_the_housekeeping_thread() {
        fn is_send<T: Send>() {}
        is_send::<Sampler>();
    }

    #[test]
    fn tracefs_mounts() {
        let mounts = "proc /proc proc rw 0 0\n\
                      nodev /sys/kernel/tracing tracefs rw,relatime 0 0\n\
                      tracefs /mnt/my\\040trace tracefs rw 0 0\n\
                      debugfs /sys/kernel/debug debugfs rw 0 0\n";
        assert_eq!(
            tracefs_mount_points(mounts),
            [
                PathBuf::from("/sys/kernel/tracing"),
                PathBuf::from("/mnt/my trace")
            ]
        );
        assert_eq!(unescape_octal("a\\134b\\04"), "a\\b\\04");
        assert!(tracefs_mount_points("").is_empty());
    }

    #[test]
    fn sys_enter_id_from_a_given_tracefs() {
        let dir = std::env::temp_dir().join(format!("latscope-procstat-{}", std::process::id()));
        let events = dir.join("events/raw_syscalls/sys_enter");
        fs::create_dir_all(&events).unwrap();
        fs::write(events.join("id"), "321\n").unwrap();
        assert_eq!(sys_enter_id(Path::new("/nonexistent"), Some(&dir)), Ok(321));
        fs::write(events.join("id"), "x\n").unwrap();
        assert!(sys_enter_id(Path::new("/"), Some(&dir)).is_err());
        fs::remove_dir_all(&dir).unwrap();
        let e = sys_enter_id(Path::new("/nonexistent"), None).unwrap_err();
        assert!(e.contains("tracefs is not mounted"), "{e}");
    }

    #[test]
    fn tracepoint_counter_preset() {
        let a = PerfEventAttr::tracepoint_counter(460);
        assert_eq!(a.type_(), PERF_TYPE_TRACEPOINT);
        assert_eq!(a.config(), 460);
        assert_eq!((a.get_sample_period(), a.get_sample_type()), (0, 0));
        assert_eq!(a.get_read_format(), 0);
        // Enabled at open, no clock, no sample ids: nothing but a count.
        assert_eq!((a.flag_bits(), a.clockid()), (0, 0));
    }

    #[test]
    fn a_missing_proc_gives_notes_not_figures() {
        let cpus = CpuSet::parse("0").unwrap();
        let mut s = Sampler::with_options(
            &cpus,
            SamplerOptions {
                root: PathBuf::from("/nonexistent"),
                count_syscalls: false,
                tracefs: None,
            },
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
        let second = s.sample();
        assert_eq!(second.cpu, None);
        assert_eq!(second.context_switches_per_s, None);
        assert_eq!(second.syscalls_per_s, None);
        assert!(!s.counts_syscalls());
        let stats = s.finish("idle");
        assert_eq!(stats.samples, 1);
        assert_eq!(stats.cpus, "0");
        assert!(stats.notes.iter().any(|n| n.contains("/proc/stat")));
        assert!(stats
            .notes
            .iter()
            .any(|n| n.contains("system calls not counted")));
    }

    #[test]
    fn too_short_a_sample_is_not_recorded() {
        let mut s = Sampler::with_options(
            &CpuSet::new(),
            SamplerOptions {
                count_syscalls: false,
                ..SamplerOptions::default()
            },
        );
        assert!(!s.cpus().is_empty());
        let quick = s.sample();
        if quick.elapsed_ns.0 < MIN_INTERVAL_NS {
            assert_eq!(quick.cpu_all, None);
            assert_eq!(s.stats("idle").samples, 0);
        }
    }
}
