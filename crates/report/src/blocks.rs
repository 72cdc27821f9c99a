//! The observed worst case per minute, hour, day and week of a monitor run (from
//! its stored hour windows), as a table.

use latscope_model::Nanos;
use latscope_stats::blocks::{BlockStats, ObservedBlocks};

use crate::table::Table;

fn cell(n: Option<Nanos>) -> String {
    n.map_or_else(|| "-".to_string(), |n| n.to_string())
}

/// The columns of a table of block maxima.
pub const BLOCK_COLUMNS: [&str; 7] = [
    "block",
    "measured",
    "worst",
    "upper quartile",
    "median",
    "lower quartile",
    "best",
];

/// One row of [`BLOCK_COLUMNS`]: how many complete blocks, and their
/// maxima's worst, quartiles, median and best.
pub fn block_row(name: &str, s: &BlockStats) -> [String; 7] {
    [
        name.to_string(),
        s.blocks.to_string(),
        cell(s.worst),
        cell(s.upper_quartile),
        cell(s.median),
        cell(s.lower_quartile),
        cell(s.best),
    ]
}

/// A horizon's observed blocks in one phrase: `observed over 168 whole
/// hours (monitor windows): median 40.0µs, quartiles 35.0µs–52.0µs, best
/// 20.0µs, worst 2.00ms`.
pub fn monitor_blocks_phrase(name: &str, s: &BlockStats) -> String {
    format!(
        "observed over {} whole {name}s (monitor windows): median {}, quartiles {}–{}, best {}, worst {}",
        s.blocks,
        cell(s.median),
        cell(s.lower_quartile),
        cell(s.upper_quartile),
        cell(s.best),
        cell(s.worst)
    )
}

/// `Observed worst case of <metric> per minute, hour, day and week`
/// and one row per block length: how many complete blocks, the worst, the
/// median and the best block maximum.
pub fn observed_blocks_text(metric: &str, o: &ObservedBlocks) -> String {
    let mut t = Table::new(BLOCK_COLUMNS);
    for (name, s) in [
        ("minute", &o.minute),
        ("hour", &o.hour),
        ("day", &o.day),
        ("week", &o.week),
    ] {
        t.row(block_row(name, s));
    }
    format!(
        "\nObserved worst case of {metric} per minute, hour, day and week (monitor windows the run measured whole; complete UTC days and weeks only)\n{}",
        t.render()
    )
}
