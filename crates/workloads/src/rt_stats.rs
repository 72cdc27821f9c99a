//! What the threads of an `rt:` load did, read from their own scheduler
//! statistics: the kernel counts their run time and their sleeps.

use std::fs;

use latscope_model::RtLoadStats;

/// Totals over the `rt-load` processes at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RtCounters {
    /// Processes read (each one thread).
    pub threads: u32,
    /// Time they ran on a CPU, in ns (`/proc/<pid>/schedstat`, first field).
    pub run_ns: u64,
    /// Their voluntary context switches (`/proc/<pid>/status`): one per
    /// burst, when each burst ends in a sleep.
    pub sleeps: u64,
}

impl RtCounters {
    /// Adds the counters of `pid`; a process that is gone adds nothing.
    pub(crate) fn add_pid(&mut self, pid: i32) {
        let run = fs::read_to_string(format!("/proc/{pid}/schedstat"))
            .ok()
            .and_then(|t| parse_schedstat_run_ns(&t));
        let sleeps = fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|t| parse_voluntary_switches(&t));
        if let (Some(run), Some(sleeps)) = (run, sleeps) {
            self.threads += 1;
            self.run_ns += run;
            self.sleeps += sleeps;
        }
    }

    /// The rates between `self` (earlier) and `later`, `elapsed_ns` apart,
    /// per thread. None when no time passed or no thread was read.
    pub fn rates(&self, later: &RtCounters, elapsed_ns: u64) -> Option<RtLoadStats> {
        let threads = later.threads.min(self.threads);
        if elapsed_ns == 0 || threads == 0 {
            return None;
        }
        let per_thread_s = elapsed_ns as f64 * f64::from(threads) / 1e9;
        let run = later.run_ns.saturating_sub(self.run_ns) as f64 / 1e9;
        let sleeps = later.sleeps.saturating_sub(self.sleeps) as f64;
        Some(RtLoadStats {
            threads,
            busy_percent: 100.0 * run / per_thread_s,
            bursts_per_s: sleeps / per_thread_s,
        })
    }
}

/// The run time in ns: the first of the three fields of `schedstat`.
fn parse_schedstat_run_ns(text: &str) -> Option<u64> {
    text.split_whitespace().next()?.parse().ok()
}

/// `voluntary_ctxt_switches:\t123` from `/proc/<pid>/status`.
fn parse_voluntary_switches(text: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        l.strip_prefix("voluntary_ctxt_switches:")?
            .trim()
            .parse()
            .ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_proc_files() {
        assert_eq!(
            parse_schedstat_run_ns("123456789 2000 17\n"),
            Some(123_456_789)
        );
        assert_eq!(parse_schedstat_run_ns(""), None);
        let status =
            "Name:\tlatscope\nvoluntary_ctxt_switches:\t42\nnonvoluntary_ctxt_switches:\t7\n";
        assert_eq!(parse_voluntary_switches(status), Some(42));
        assert_eq!(parse_voluntary_switches("Name:\tx\n"), None);
    }

    #[test]
    fn rates_are_per_thread() {
        let a = RtCounters {
            threads: 2,
            run_ns: 1_000_000,
            sleeps: 10,
        };
        // Two threads over 2 s: 0.2 s of running each is 10 %, 400
        // sleeps in all is 100 per second each.
        let b = RtCounters {
            threads: 2,
            run_ns: 401_000_000,
            sleeps: 410,
        };
        let r = a.rates(&b, 2_000_000_000).unwrap();
        assert_eq!(r.threads, 2);
        assert!((r.busy_percent - 10.0).abs() < 1e-9, "{r:?}");
        assert!((r.bursts_per_s - 100.0).abs() < 1e-9, "{r:?}");
        assert_eq!(a.rates(&b, 0), None);
        assert_eq!(RtCounters::default().rates(&b, 1), None);
    }

    #[test]
    fn reads_this_process() {
        let mut c = RtCounters::default();
        c.add_pid(std::process::id() as i32);
        assert_eq!(c.threads, 1);
        assert!(c.run_ns > 0);
        let mut gone = RtCounters::default();
        gone.add_pid(i32::MAX);
        assert_eq!(gone, RtCounters::default());
    }
}
