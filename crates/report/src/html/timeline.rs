//! The per-second timelines the report plots, as the store hands them over.

use latscope_model::CpuId;
use latscope_stats::forecast::CpuTimeline;
use latscope_stats::SecondStats;

/// One metric's per-second timeline on one CPU of one cell, as the store
/// keeps it (second 0 = the cell's start).
#[derive(Clone, Debug, PartialEq)]
pub struct Timeline {
    /// The cell's index in the run.
    pub cell: u32,
    pub metric: String,
    pub cpu: Option<CpuId>,
    /// The cell second `seconds[0]` is: 0, or later for a monitor whose
    /// oldest seconds the retention deleted.
    pub first_second: u64,
    pub seconds: Vec<SecondStats>,
}

impl Timeline {
    /// The timeline as the forecast reads it, borrowed.
    pub fn as_cpu_timeline(&self) -> CpuTimeline<'_> {
        CpuTimeline {
            cell: self.cell,
            metric: &self.metric,
            cpu: self.cpu,
            seconds: &self.seconds,
        }
    }
}
