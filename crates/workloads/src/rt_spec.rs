//! The periodic real-time load as the user writes it:
//! `rt:PRIO,BUSY/PERIOD[,xTHREADS][,cpuLIST]`, e.g. `rt:90,500us/10ms`,
//! `rt:80,2ms/20ms,x2,cpu1`, `rt:50,1ms/5ms,x4,cpu0-1`.
//!
//! The words are cyclictest's: a priority (`-p`), a busy time out of every
//! interval (`-i`), a thread count (`-t`) and an affinity list (`-a`),
//! where threads are spread over the listed CPUs in turn.

use std::fmt;
use std::hash::{Hash, Hasher};

use latscope_model::CpuSet;

use crate::WorkloadError;

/// The prefix of the real-time load.
pub(crate) const RT_PREFIX: &str = "rt:";

/// One `rt:` load: THREADS SCHED_FIFO threads at PRIO, each busy for BUSY
/// out of every PERIOD, pinned in turn to the CPUs of `cpus` (or free to
/// run anywhere when it is None).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RtLoad {
    pub priority: u32,
    pub busy_ns: u64,
    pub period_ns: u64,
    pub threads: u32,
    pub cpus: Option<CpuSet>,
}

/// Whether a comma-separated piece of a workload list continues an `rt:`
/// spec rather than naming a workload: a priority (digits), BUSY/PERIOD
/// (has a `/`), `xN` or `cpuLIST` (`cpu` and a digit). No workload name
/// looks like any of these.
pub fn continues_rt(piece: &str) -> bool {
    let p = piece.trim();
    let digit_after = |prefix: &str| {
        p.strip_prefix(prefix)
            .and_then(|r| r.chars().next())
            .is_some_and(|c| c.is_ascii_digit())
    };
    (!p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
        || p.contains('/')
        || digit_after("x")
        || digit_after("cpu")
}

/// By its written form (CpuSet has no Hash of its own).
impl Hash for RtLoad {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.to_string().hash(state);
    }
}

impl RtLoad {
    /// Parses what follows `rt:`; `whole` is the spec as written, for the
    /// error.
    pub(crate) fn parse(whole: &str, body: &str) -> Result<RtLoad, WorkloadError> {
        let bad = |why: String| WorkloadError::Invalid {
            spec: whole.trim().to_string(),
            why,
        };
        let mut parts = body.split(',').map(str::trim);
        let prio_text = parts.next().unwrap_or("");
        let priority: u32 = prio_text
            .parse()
            .ok()
            .filter(|p| (1..=99).contains(p))
            .ok_or_else(|| bad(format!("priority '{prio_text}' is not 1 to 99")))?;
        let timing = parts.next().ok_or_else(|| {
            bad("needs BUSY/PERIOD after the priority, e.g. rt:90,500us/10ms".into())
        })?;
        let (busy_text, period_text) = timing
            .split_once('/')
            .ok_or_else(|| bad(format!("'{timing}' is not BUSY/PERIOD, e.g. 500us/10ms")))?;
        let busy_ns = duration_ns(busy_text).map_err(|w| bad(format!("busy time {w}")))?;
        let period_ns = duration_ns(period_text).map_err(|w| bad(format!("period {w}")))?;
        if busy_ns >= period_ns {
            return Err(bad(format!(
                "busy time {busy_text} is not shorter than the period {period_text}"
            )));
        }
        let mut load = RtLoad {
            priority,
            busy_ns,
            period_ns,
            threads: 1,
            cpus: None,
        };
        for part in parts {
            if let Some(n) = part.strip_prefix('x') {
                load.threads = n
                    .parse()
                    .ok()
                    .filter(|n| (1..=1024).contains(n))
                    .ok_or_else(|| bad(format!("thread count '{part}' is not x1 to x1024")))?;
            } else if let Some(list) = part.strip_prefix("cpu") {
                let set = CpuSet::parse(list)
                    .ok()
                    .filter(|s| !s.is_empty())
                    .ok_or_else(|| bad(format!("'{part}' is not cpuN or cpuN-M")))?;
                load.cpus = Some(set);
            } else {
                return Err(bad(format!(
                    "unknown part '{part}' (xN for threads, cpuN or cpuN-M to pin)"
                )));
            }
        }
        Ok(load)
    }

    /// The percentage of each period a thread asks to be busy.
    pub fn duty_percent(&self) -> f64 {
        self.busy_ns as f64 * 100.0 / self.period_ns as f64
    }
}

/// `500us`, `10ms`, `1s`, `250000ns`: a positive whole number and a unit.
fn duration_ns(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let scale: u64 = match unit {
        "ns" => 1,
        "us" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        _ => return Err(format!("'{t}' needs a unit: ns, us, ms or s")),
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("'{t}' is not a whole number with a unit"))?;
    match n.checked_mul(scale) {
        Some(0) => Err(format!("'{t}' must be more than 0")),
        Some(ns) if ns <= 60_000_000_000 => Ok(ns),
        _ => Err(format!("'{t}' is longer than 60s")),
    }
}

fn write_duration(f: &mut fmt::Formatter<'_>, ns: u64) -> fmt::Result {
    for (unit, scale) in [("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1_000)] {
        if ns.is_multiple_of(scale) {
            return write!(f, "{}{unit}", ns / scale);
        }
    }
    write!(f, "{ns}ns")
}

/// The parseable form: `rt:90,500us/10ms,x2,cpu1`.
impl fmt::Display for RtLoad {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{RT_PREFIX}{},", self.priority)?;
        write_duration(f, self.busy_ns)?;
        f.write_str("/")?;
        write_duration(f, self.period_ns)?;
        if self.threads != 1 {
            write!(f, ",x{}", self.threads)?;
        }
        if let Some(cpus) = &self.cpus {
            write!(f, ",cpu{cpus}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<RtLoad, WorkloadError> {
        RtLoad::parse(text, text.strip_prefix(RT_PREFIX).unwrap_or(text))
    }

    #[test]
    fn parses_the_documented_forms() {
        let l = parse("rt:90,500us/10ms").unwrap();
        assert_eq!(
            l,
            RtLoad {
                priority: 90,
                busy_ns: 500_000,
                period_ns: 10_000_000,
                threads: 1,
                cpus: None
            }
        );
        assert_eq!(l.duty_percent(), 5.0);
        let l = parse("rt:1, 2ms/1s ,x4,cpu0-1").unwrap();
        assert_eq!(
            (l.priority, l.busy_ns, l.period_ns),
            (1, 2_000_000, 1_000_000_000)
        );
        assert_eq!(l.threads, 4);
        assert_eq!(l.cpus.unwrap().to_string(), "0-1");
        for text in [
            "rt:90,500us/10ms",
            "rt:99,1500ns/3ms,x2,cpu1",
            "rt:5,1s/2s,cpu0-3",
        ] {
            assert_eq!(parse(text).unwrap().to_string(), text);
        }
    }

    #[test]
    fn bad_specs_name_the_part() {
        let cases = [
            ("rt:0,1ms/2ms", "priority '0' is not 1 to 99"),
            ("rt:100,1ms/2ms", "priority '100' is not 1 to 99"),
            ("rt:x,1ms/2ms", "priority 'x' is not 1 to 99"),
            ("rt:90", "needs BUSY/PERIOD"),
            ("rt:90,1ms", "'1ms' is not BUSY/PERIOD"),
            ("rt:90,0us/10ms", "busy time '0us' must be more than 0"),
            ("rt:90,1ms/0ms", "period '0ms' must be more than 0"),
            ("rt:90,1/10ms", "busy time '1' needs a unit"),
            ("rt:90,1.5ms/10ms", "busy time '1.5ms' needs a unit"),
            (
                "rt:90,10ms/10ms",
                "busy time 10ms is not shorter than the period 10ms",
            ),
            ("rt:90,20ms/10ms", "is not shorter"),
            ("rt:90,1ms/61s", "period '61s' is longer than 60s"),
            ("rt:90,1ms/10ms,x0", "thread count 'x0'"),
            ("rt:90,1ms/10ms,cpux", "'cpux' is not cpuN or cpuN-M"),
            ("rt:90,1ms/10ms,cpu3-1", "'cpu3-1' is not cpuN"),
            ("rt:90,1ms/10ms,fast", "unknown part 'fast'"),
        ];
        for (text, want) in cases {
            let err = parse(text).unwrap_err().to_string();
            assert!(
                err.starts_with(&format!("bad workload '{text}': ")),
                "{err}"
            );
            assert!(err.contains(want), "{text}: {err}");
            assert!(!err.contains('\n'));
        }
    }

    #[test]
    fn list_pieces_that_continue_an_rt_spec() {
        for p in ["90", "500us/10ms", "x2", "cpu1", " cpu0-3 "] {
            assert!(continues_rt(p), "{p}");
        }
        for p in ["cpu", "idle", "hackbench", "", "xy", "custom:a"] {
            assert!(!continues_rt(p), "{p}");
        }
    }
}
