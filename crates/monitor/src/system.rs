//! The machine's activity as Prometheus counters: what the suite's
//! workload characterization reports per second (interrupts, context
//! switches, new tasks, softirqs per vector, CPU time per mode), here as the
//! kernel's cumulative counts, so that `rate()` gives the same figures over
//! any window and they can be set beside the latency of the same minutes.
//! Read from `/proc/stat` and `/proc/softirqs` when `/metrics` is scraped,
//! on the endpoint's thread (never a measuring thread): a monitor has no
//! load of its own, the load is whatever the machine runs.

use std::collections::BTreeMap;
use std::path::Path;

use latscope_engine::system::procstat::parse::{parse_cpu_table, parse_stat, CpuTicks};

/// Kernel counters since boot; `None` where the file could not be read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SystemCounters {
    pub interrupts: Option<u64>,
    pub context_switches: Option<u64>,
    pub processes: Option<u64>,
    pub procs_running: Option<u64>,
    /// Per vector, all CPUs.
    pub softirqs: BTreeMap<String, u64>,
    /// Per CPU: ticks per mode (USER_HZ).
    pub cpu_ticks: BTreeMap<u32, CpuTicks>,
}

/// `/proc`'s CPU times are in USER_HZ ticks, 100 a second on every
/// architecture Linux runs on (the ABI fixes it for user space).
pub const USER_HZ: f64 = 100.0;

impl SystemCounters {
    /// Reads the counters under `proc` (`/proc`).
    pub fn read(proc: &Path) -> SystemCounters {
        let mut out = SystemCounters::default();
        if let Ok(text) = std::fs::read_to_string(proc.join("stat")) {
            let st = parse_stat(&text);
            out.interrupts = st.interrupts;
            out.context_switches = st.context_switches;
            out.processes = st.processes;
            out.procs_running = st.procs_running;
            out.cpu_ticks = st.per_cpu;
        }
        if let Some(rows) = std::fs::read_to_string(proc.join("softirqs"))
            .ok()
            .as_deref()
            .and_then(parse_cpu_table)
        {
            for r in rows {
                let n = r
                    .per_cpu
                    .values()
                    .fold(r.unsplit, |a, &b| a.saturating_add(b));
                out.softirqs.insert(r.name, n);
            }
        }
        out
    }

    /// (mode, ticks) of one CPU, in `node_exporter`'s mode names.
    pub fn modes(t: &CpuTicks) -> [(&'static str, u64); 8] {
        [
            ("user", t.user),
            ("nice", t.nice),
            ("system", t.system),
            ("idle", t.idle),
            ("iowait", t.iowait),
            ("irq", t.irq),
            ("softirq", t.softirq),
            ("steal", t.steal),
        ]
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn counters_come_from_proc_stat_and_softirqs() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("stat"),
            "cpu  10 0 5 100 0 1 2 3 0 0\ncpu0 4 0 2 50 0 1 1 2 0 0\ncpu1 6 0 3 50 0 0 1 1 0 0\nintr 12345 1 2 3\nctxt 678\nbtime 1\nprocesses 90\nprocs_running 2\nprocs_blocked 0\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("softirqs"),
            "                    CPU0       CPU1\n          HI:          1          2\n       TIMER:        100        200\n      NET_RX:          5          0\n",
        )
        .unwrap();
        let c = SystemCounters::read(dir.path());
        assert_eq!(c.interrupts, Some(12_345));
        assert_eq!(c.context_switches, Some(678));
        assert_eq!(c.processes, Some(90));
        assert_eq!(c.procs_running, Some(2));
        assert_eq!(c.softirqs["TIMER"], 300);
        assert_eq!(c.softirqs["NET_RX"], 5);
        assert_eq!(c.cpu_ticks[&1].user, 6);
        assert_eq!(SystemCounters::modes(&c.cpu_ticks[&0])[7], ("steal", 2));
        // A machine without the files: nothing, no error.
        let none = SystemCounters::read(&dir.path().join("missing"));
        assert_eq!(none, SystemCounters::default());
    }
}
