//! The settings every probe's cell records ([`CommonSettings`]): the
//! scheduling policy and priority, the CPUs, the planned time and the
//! workload's level. Flattened into each probe's settings (and the
//! micro-benchmarks' settings) by [`crate::CellSettings`].

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::Nanos;

/// A scheduling policy as the settings record it (`fifo`, `rr`, `other`,
/// `batch`, `idle`, `deadline`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Policy {
    // The CLI's default, so a record without a policy reads as one.
    #[default]
    Fifo,
    Rr,
    Other,
    Batch,
    Idle,
    Deadline,
}

impl Policy {
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Fifo => "fifo",
            Policy::Rr => "rr",
            Policy::Other => "other",
            Policy::Batch => "batch",
            Policy::Idle => "idle",
            Policy::Deadline => "deadline",
        }
    }

    /// FIFO and RR: the policies with a real-time priority.
    pub fn has_priority(self) -> bool {
        matches!(self, Policy::Fifo | Policy::Rr)
    }

    /// FIFO, RR and DEADLINE: above every fair-share thread, and given no
    /// timer slack by the kernel.
    pub fn is_real_time(self) -> bool {
        matches!(self, Policy::Fifo | Policy::Rr | Policy::Deadline)
    }
}

/// A `SCHED_DEADLINE` reservation as recorded: `runtime_ns` of CPU every
/// `period_ns`, within `deadline_ns` of each period's start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct DeadlineSettings {
    pub runtime_ns: Nanos,
    pub deadline_ns: Nanos,
    pub period_ns: Nanos,
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// The CLI's default priority, what a record without `priority` reads as.
pub const DEFAULT_PRIORITY: u32 = 95;

fn default_priority() -> u32 {
    DEFAULT_PRIORITY
}

/// What every probe's cell records.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CommonSettings {
    #[serde(default)]
    pub policy: Policy,
    /// The priority applied: 0 for `other`, `batch`, `idle` and
    /// `deadline` whatever was asked.
    #[serde(default = "default_priority")]
    pub priority: u32,
    /// The nice value asked for under `other` or `batch` (absent: the one
    /// inherited, 0 unless latscope itself was niced).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nice: Option<i32>,
    /// Under `rr`: the round-robin quantum the kernel reported
    /// (`sched_rr_get_interval`) for the measuring threads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rr_interval_ns: Option<Nanos>,
    /// The cells (indices in the run) measured at the same time as this
    /// one, on one shared expiry grid under one workload, this one included
    /// (`run --priorities`); absent: measured alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub together: Option<Vec<u32>>,
    /// Among the threads measured together at this cell's policy and
    /// priority (`run --priorities rr:50,rr:50`), this cell's number from
    /// 1 in the list's order; absent for the first (or only) one, so a
    /// list without a repeated priority stores what it always did. It
    /// tells the cells apart in labels ("rr 50 #2") and in `compare`,
    /// which pairs the n-th thread of a shared priority with the n-th.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<u32>,
    /// Under `deadline`: the reservation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<DeadlineSettings>,
    /// The measured CPUs as `--cpus` reads them ("0-1,3").
    #[serde(default)]
    pub cpus: String,
    /// The planned measuring time (the time actually measured is the
    /// cell's `duration_ns`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ns: Option<Nanos>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold_ns: Option<Nanos>,
    /// Cost of one clock read, measured when the run started.
    #[serde(default)]
    pub clock_read_ns: u64,
    /// `--load-level`, when a workload runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_level: Option<String>,
    /// `--warmup`, when a workload runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_ns: Option<Nanos>,
}

impl Default for CommonSettings {
    fn default() -> CommonSettings {
        CommonSettings {
            policy: Policy::Fifo,
            priority: DEFAULT_PRIORITY,
            nice: None,
            rr_interval_ns: None,
            together: None,
            instance: None,
            deadline: None,
            cpus: String::new(),
            duration_ns: None,
            threshold_ns: None,
            clock_read_ns: 0,
            load_level: None,
            warmup_ns: None,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::CellSettings;

    /// Settings stored before the policies beyond FIFO, RR and OTHER read
    /// back with no nice value, quantum or reservation; the new fields are
    /// written only when set, so a FIFO cell's JSON is as it was.
    #[test]
    fn old_settings_read_and_new_fields_appear_only_when_set() {
        let old = json!({
            "probe": "timer", "period_ns": 1000000, "policy": "rr", "priority": 50,
            "cpus": "0-1", "clock_read_ns": 20, "timer_api": "clock_nanosleep"
        });
        let s: CellSettings = serde_json::from_value(old).unwrap();
        let c = s.common();
        assert_eq!((c.policy, c.priority), (Policy::Rr, 50));
        assert_eq!((c.nice, c.rr_interval_ns, c.deadline), (None, None, None));
        let v = serde_json::to_value(&s).unwrap();
        for key in ["nice", "rr_interval_ns", "deadline"] {
            assert!(v.get(key).is_none(), "{key} written: {v}");
        }
    }

    #[test]
    fn the_new_policies_round_trip_with_their_parameters() {
        let mut s: CellSettings =
            serde_json::from_value(json!({"probe": "timer", "period_ns": 1000000})).unwrap();
        let c = s.common_mut();
        c.policy = Policy::Deadline;
        c.priority = 0;
        c.deadline = Some(DeadlineSettings {
            runtime_ns: Nanos::from_micros(100),
            deadline_ns: Nanos::from_micros(500),
            period_ns: Nanos::from_millis(1),
        });
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["policy"], "deadline");
        assert_eq!(v["deadline"]["runtime_ns"], 100_000);
        assert_eq!(v["deadline"]["deadline_ns"], 500_000);
        assert_eq!(v["deadline"]["period_ns"], 1_000_000);
        assert_eq!(serde_json::from_value::<CellSettings>(v).unwrap(), s);
        assert!(
            s.sched_label().starts_with("deadline "),
            "{}",
            s.sched_label()
        );
        assert_eq!(s.priority(), 0);
        let c = s.common_mut();
        (c.policy, c.deadline, c.nice) = (Policy::Batch, None, Some(5));
        assert_eq!(s.sched_label(), "batch nice 5");
        let c = s.common_mut();
        (c.policy, c.nice, c.rr_interval_ns) = (Policy::Rr, None, Some(Nanos::from_millis(100)));
        c.priority = 10;
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["rr_interval_ns"], 100_000_000);
        assert_eq!(s.sched_label(), "rr 10");
        // The quantum is measured, not configured: not part of the cell.
        assert_eq!(s.cell_identity().common().rr_interval_ns, None);
    }
}
