//! The observed worst case per hour, day and week of a monitor run (from
//! its stored hour windows), as a table.

use latscope_model::Nanos;
use latscope_stats::blocks::{BlockStats, ObservedBlocks};

use crate::table::Table;

fn cell(n: Option<Nanos>) -> String {
    n.map_or_else(|| "-".to_string(), |n| n.to_string())
}

/// `Observed worst case of <metric> per hour, day and week (N hours stored)`
/// and one row per block length: how many complete blocks, the worst, the
/// median and the best block maximum.
pub fn observed_blocks_text(metric: &str, o: &ObservedBlocks) -> String {
    let mut t = Table::new(["block", "measured", "worst", "median", "best"]);
    for (name, s) in [("hour", &o.hour), ("day", &o.day), ("week", &o.week)] {
        let BlockStats {
            blocks,
            worst,
            median,
            best,
        } = s;
        t.row([
            name.to_string(),
            blocks.to_string(),
            cell(*worst),
            cell(*median),
            cell(*best),
        ]);
    }
    format!(
        "\nObserved worst case of {metric} per hour, day and week (monitor windows; complete UTC days and weeks only)\n{}",
        t.render()
    )
}
