//! The event counters read around every iteration: the software ones the
//! kernel always has (task clock, context switches, migrations, minor and
//! major page faults) and the hardware ones a PMU gives (cycles,
//! instructions, cache references and misses, dTLB and iTLB misses, branch
//! misses), each a `perf_event_open` counter of the measuring thread,
//! counting user and kernel mode alike as Chen et al. report every count.
//!
//! A counter the machine lacks (no PMU on most VMs, or a perf permission
//! refused) is **unavailable**, with the reason, and never reported as 0.

use latscope_platform::perf::{
    hw_cache_read_miss, PerfEvent, PerfEventAttr, MAX_GROUP, PERF_COUNT_HW_BRANCH_MISSES,
    PERF_COUNT_HW_CACHE_DTLB, PERF_COUNT_HW_CACHE_ITLB, PERF_COUNT_HW_CACHE_MISSES,
    PERF_COUNT_HW_CACHE_REFERENCES, PERF_COUNT_HW_CPU_CYCLES, PERF_COUNT_HW_INSTRUCTIONS,
    PERF_COUNT_SW_CONTEXT_SWITCHES, PERF_COUNT_SW_CPU_MIGRATIONS, PERF_COUNT_SW_PAGE_FAULTS_MAJ,
    PERF_COUNT_SW_PAGE_FAULTS_MIN, PERF_COUNT_SW_TASK_CLOCK, PERF_TYPE_HARDWARE,
    PERF_TYPE_HW_CACHE, PERF_TYPE_SOFTWARE,
};
use serde::Serialize;

/// One counter latscope asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterSpec {
    /// The name in tables and JSON (perf's spelling).
    pub name: &'static str,
    pub type_: u32,
    pub config: u64,
}

/// Every counter, software first.
pub const COUNTERS: [CounterSpec; 12] = [
    CounterSpec {
        name: "task-clock",
        type_: PERF_TYPE_SOFTWARE,
        config: PERF_COUNT_SW_TASK_CLOCK,
    },
    CounterSpec {
        name: "context-switches",
        type_: PERF_TYPE_SOFTWARE,
        config: PERF_COUNT_SW_CONTEXT_SWITCHES,
    },
    CounterSpec {
        name: "cpu-migrations",
        type_: PERF_TYPE_SOFTWARE,
        config: PERF_COUNT_SW_CPU_MIGRATIONS,
    },
    CounterSpec {
        name: "minor-faults",
        type_: PERF_TYPE_SOFTWARE,
        config: PERF_COUNT_SW_PAGE_FAULTS_MIN,
    },
    CounterSpec {
        name: "major-faults",
        type_: PERF_TYPE_SOFTWARE,
        config: PERF_COUNT_SW_PAGE_FAULTS_MAJ,
    },
    CounterSpec {
        name: "cycles",
        type_: PERF_TYPE_HARDWARE,
        config: PERF_COUNT_HW_CPU_CYCLES,
    },
    CounterSpec {
        name: "instructions",
        type_: PERF_TYPE_HARDWARE,
        config: PERF_COUNT_HW_INSTRUCTIONS,
    },
    CounterSpec {
        name: "cache-references",
        type_: PERF_TYPE_HARDWARE,
        config: PERF_COUNT_HW_CACHE_REFERENCES,
    },
    CounterSpec {
        name: "cache-misses",
        type_: PERF_TYPE_HARDWARE,
        config: PERF_COUNT_HW_CACHE_MISSES,
    },
    CounterSpec {
        name: "dTLB-load-misses",
        type_: PERF_TYPE_HW_CACHE,
        config: hw_cache_read_miss(PERF_COUNT_HW_CACHE_DTLB),
    },
    CounterSpec {
        name: "iTLB-load-misses",
        type_: PERF_TYPE_HW_CACHE,
        config: hw_cache_read_miss(PERF_COUNT_HW_CACHE_ITLB),
    },
    CounterSpec {
        name: "branch-misses",
        type_: PERF_TYPE_HARDWARE,
        config: PERF_COUNT_HW_BRANCH_MISSES,
    },
];

/// Whether a counter could be opened.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Availability {
    pub name: &'static str,
    /// Why it is unavailable; `None` when it counts.
    pub unavailable: Option<String>,
}

/// The counters of the calling thread, opened once and read around each
/// iteration. The four software events other than the clock
/// (context switches, migrations, minor and major faults) are one
/// `perf_event_open` group read with one `read`; `task-clock` and each
/// hardware counter are events of their own (docs/micro.md says why: a
/// clock event in a group undercounts on this kernel, and a hardware group
/// larger than the PMU's counters would never be scheduled). Reading costs
/// one `read` per event or group; that cost is part of the *Null*
/// correction.
pub struct Counters {
    /// Per counter of [`COUNTERS`]: how it is read, or why it cannot be.
    slots: Vec<Result<Slot, String>>,
    /// The software group's leader (its first member), when it opened.
    leader: Option<PerfEvent>,
    /// The events of the group's other members, kept open.
    _members: Vec<PerfEvent>,
    /// Members in the group, the leader included.
    group_len: usize,
}

/// How one counter is read.
enum Slot {
    Alone(PerfEvent),
    /// Position in the group's read.
    InGroup(usize),
}

/// The configs of the software group, in [`COUNTERS`] order (slots 1-4).
const GROUP_SLOTS: std::ops::Range<usize> = 1..5;

/// One reading: a count per counter of [`COUNTERS`], `None` where
/// unavailable (or where the read failed).
pub type Reading = [Option<u64>; COUNTERS.len()];

impl Counters {
    /// Opens every counter of [`COUNTERS`] for the calling thread.
    pub fn open() -> Counters {
        let alone = |spec: &CounterSpec| {
            PerfEvent::open(&PerfEventAttr::counter(spec.type_, spec.config), 0, -1)
                .map(Slot::Alone)
                .map_err(|e| e.to_string())
        };
        let mut slots: Vec<Result<Slot, String>> = Vec::with_capacity(COUNTERS.len());
        let mut leader = None;
        let mut members = Vec::new();
        let mut group_len = 0;
        for (i, spec) in COUNTERS.iter().enumerate() {
            if !GROUP_SLOTS.contains(&i) {
                slots.push(alone(spec));
                continue;
            }
            let attr = PerfEventAttr::counter(spec.type_, spec.config);
            let opened = match &leader {
                None => PerfEvent::open(&attr.read_group(), 0, -1).map(|ev| {
                    leader = Some(ev);
                }),
                Some(l) => PerfEvent::open_in(&attr, 0, -1, Some(l)).map(|ev| members.push(ev)),
            };
            slots.push(match opened {
                Ok(()) => {
                    group_len += 1;
                    Ok(Slot::InGroup(group_len - 1))
                }
                Err(e) => Err(e.to_string()),
            });
        }
        Counters {
            slots,
            leader,
            _members: members,
            group_len,
        }
    }

    /// No counters at all (every one unavailable for `why`).
    pub fn none(why: &str) -> Counters {
        Counters {
            slots: COUNTERS.iter().map(|_| Err(why.to_string())).collect(),
            leader: None,
            _members: Vec::new(),
            group_len: 0,
        }
    }

    /// Which counters count, and why the others do not.
    pub fn availability(&self) -> Vec<Availability> {
        COUNTERS
            .iter()
            .zip(&self.slots)
            .map(|(spec, slot)| Availability {
                name: spec.name,
                unavailable: slot.as_ref().err().cloned(),
            })
            .collect()
    }

    /// The task clock alone (one `read`), for the Null benchmark of a
    /// counter read; `None` when unavailable.
    pub fn read_task_clock(&self) -> Option<u64> {
        match self.slots.first()? {
            Ok(Slot::Alone(ev)) => ev.read_count().ok(),
            _ => None,
        }
    }

    /// The counts now: one `read` for the software group, one per other
    /// event. No allocation.
    pub fn read(&self) -> Reading {
        let mut out: Reading = [None; COUNTERS.len()];
        let mut group = [0u64; MAX_GROUP];
        let group_ok = match &self.leader {
            Some(l) => l.read_group(&mut group[..self.group_len]).is_ok(),
            None => false,
        };
        for (slot, s) in out.iter_mut().zip(&self.slots) {
            *slot = match s {
                Ok(Slot::Alone(ev)) => ev.read_count().ok(),
                Ok(Slot::InGroup(k)) if group_ok => Some(group[*k]),
                _ => None,
            };
        }
        out
    }

    /// How many `read` calls one [`Counters::read`] makes.
    pub fn reads(&self) -> usize {
        let alone = self
            .slots
            .iter()
            .filter(|s| matches!(s, Ok(Slot::Alone(_))))
            .count();
        alone + usize::from(self.leader.is_some())
    }
}

/// The change of each counter between two readings: `None` where either
/// reading lacks it or it went backwards.
pub fn difference(before: &Reading, after: &Reading) -> Reading {
    let mut out: Reading = [None; COUNTERS.len()];
    for ((slot, b), a) in out.iter_mut().zip(before).zip(after) {
        if let (Some(b), Some(a)) = (b, a) {
            *slot = a.checked_sub(*b);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_keep_unavailable_counters_unavailable() {
        let mut a: Reading = [None; COUNTERS.len()];
        let mut b: Reading = [None; COUNTERS.len()];
        a[0] = Some(10);
        b[0] = Some(25);
        a[1] = Some(5);
        b[1] = Some(3);
        b[2] = Some(7);
        let d = difference(&a, &b);
        assert_eq!(d[0], Some(15));
        assert_eq!(d[1], None, "backwards is no count");
        assert_eq!(d[2], None, "missing before is no count");
        assert!(d[3..].iter().all(Option::is_none));
    }

    /// On a real kernel the software counters open (as root or with a
    /// permissive perf_event_paranoid) and count this thread's work; a
    /// counter that cannot open says why rather than reading 0.
    #[test]
    fn the_software_counters_count_this_thread() {
        let c = Counters::open();
        let avail = c.availability();
        assert_eq!(avail.len(), COUNTERS.len());
        for a in &avail {
            if let Some(why) = &a.unavailable {
                assert!(!why.is_empty(), "{}", a.name);
            }
        }
        if avail[0].unavailable.is_some() {
            eprintln!(
                "skipped: perf counters unavailable here ({:?})",
                avail[0].unavailable
            );
            return;
        }
        let before = c.read();
        let mut v: Vec<u64> = Vec::new();
        for i in 0..200_000u64 {
            v.push(std::hint::black_box(i));
        }
        let after = c.read();
        let d = difference(&before, &after);
        // task-clock is in nanoseconds of this thread's CPU time.
        assert!(d[0].is_some_and(|ns| ns > 0), "{d:?}");
        // Growing a vector touches fresh pages: minor faults, read
        // through the software group.
        assert!(d[3].is_some_and(|n| n > 0), "{d:?}");
        if avail[1..5].iter().all(|a| a.unavailable.is_none()) {
            let hardware = avail[5..]
                .iter()
                .filter(|a| a.unavailable.is_none())
                .count();
            assert_eq!(
                c.reads(),
                2 + hardware,
                "task-clock, the group, each hardware event"
            );
        }
        assert!(c
            .availability()
            .iter()
            .zip(&after)
            .all(|(a, r)| a.unavailable.is_none() == r.is_some()));
    }
}
