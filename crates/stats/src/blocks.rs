//! The worst case per minute, hour, day and week as observed, from a
//! monitor's stored minute and hour windows: for a machine monitored for weeks these are not
//! forecasts but counts of what happened. A day (a week) is counted only
//! when every one of its 24 (168) UTC hours was measured, so a partial day
//! never passes for a quiet one.

use serde::Serialize;

use latscope_model::Nanos;

const HOUR_NS: u64 = 3_600_000_000_000;
const MINUTE_NS: u64 = 60_000_000_000;

/// One measured hour: its start (Unix) and its largest value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HourMax {
    pub start_unix: Nanos,
    pub max: Nanos,
}

/// The maxima of one block length (hour, day, week).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BlockStats {
    /// Complete blocks measured.
    pub blocks: usize,
    /// The largest block maximum.
    pub worst: Option<Nanos>,
    /// The upper quartile of the block maxima (nearest rank: the
    /// `ceil(3n/4)`-th smallest): a quarter of the blocks were worse.
    pub upper_quartile: Option<Nanos>,
    /// The median block maximum (the lower middle for an even count).
    pub median: Option<Nanos>,
    /// The lower quartile (the `ceil(n/4)`-th smallest).
    pub lower_quartile: Option<Nanos>,
    /// The smallest block maximum: the best block.
    pub best: Option<Nanos>,
}

/// Worst cases per minute, hour, day and week.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ObservedBlocks {
    /// From the minute windows (kept 7 days by default), when the caller
    /// had them ([`ObservedBlocks::with_minutes`]); no blocks otherwise.
    pub minute: BlockStats,
    pub hour: BlockStats,
    pub day: BlockStats,
    pub week: BlockStats,
}

fn stats(mut maxima: Vec<Nanos>) -> BlockStats {
    maxima.sort_unstable();
    let n = maxima.len();
    // The k-th smallest (1-based) for the nearest-rank quantile q.
    let rank = |q: usize| maxima.get((n * q).div_ceil(4).max(1) - 1).copied();
    BlockStats {
        blocks: n,
        worst: maxima.last().copied(),
        upper_quartile: rank(3),
        median: maxima.get(n.saturating_sub(1) / 2).copied(),
        lower_quartile: rank(1),
        best: maxima.first().copied(),
    }
}

impl ObservedBlocks {
    /// With the worst case per minute from `minutes`: each stored minute
    /// window's start and largest value, one entry per CPU (the largest
    /// per minute counts).
    pub fn with_minutes(mut self, minutes: impl IntoIterator<Item = (Nanos, Nanos)>) -> Self {
        let mut by_minute: std::collections::BTreeMap<u64, Nanos> = Default::default();
        for (start, max) in minutes {
            let e = by_minute.entry(start.0 / MINUTE_NS).or_insert(Nanos::ZERO);
            *e = (*e).max(max);
        }
        self.minute = stats(by_minute.into_values().collect());
        self
    }
}

/// Blocks of `hours_per_block` consecutive hours aligned to the Unix epoch
/// (UTC days; weeks from Thursday 1970-01-01), complete ones only.
fn blocks(hours: &[HourMax], hours_per_block: u64) -> Vec<Nanos> {
    let mut by_block: std::collections::BTreeMap<u64, (u64, Nanos)> = Default::default();
    let mut seen = std::collections::BTreeSet::new();
    for h in hours {
        let hour = h.start_unix.0 / HOUR_NS;
        if !seen.insert(hour) {
            continue;
        }
        let e = by_block
            .entry(hour / hours_per_block)
            .or_insert((0, Nanos::ZERO));
        e.0 += 1;
        e.1 = e.1.max(h.max);
    }
    by_block
        .into_values()
        .filter(|(n, _)| *n == hours_per_block)
        .map(|(_, max)| max)
        .collect()
}

/// The observed worst cases of `hours` (one entry per measured hour; the
/// largest over CPUs when there are several, duplicates of an hour merged).
pub fn observed_blocks(hours: &[HourMax]) -> ObservedBlocks {
    ObservedBlocks {
        minute: stats(Vec::new()),
        hour: stats(blocks(hours, 1)),
        day: stats(blocks(hours, 24)),
        week: stats(blocks(hours, 168)),
    }
}

/// Merges per-CPU hour maxima into one per hour (the largest).
pub fn hour_maxima(per_cpu: impl IntoIterator<Item = HourMax>) -> Vec<HourMax> {
    let mut by_hour: std::collections::BTreeMap<u64, Nanos> = Default::default();
    for h in per_cpu {
        let e = by_hour
            .entry(h.start_unix.0 / HOUR_NS)
            .or_insert(Nanos::ZERO);
        *e = (*e).max(h.max);
    }
    by_hour
        .into_iter()
        .map(|(hour, max)| HourMax {
            start_unix: Nanos(hour * HOUR_NS),
            max,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::forecast::{Horizon, UsageModel};

    fn hour(i: u64, max_us: u64) -> HourMax {
        HourMax {
            start_unix: Nanos(i * HOUR_NS),
            max: Nanos::from_micros(max_us),
        }
    }

    #[test]
    fn only_complete_days_and_weeks_count() {
        // Day 0 complete (hours 0-23), day 1 has 23 hours: one day only.
        let mut hs: Vec<HourMax> = (0..24).map(|i| hour(i, 50 + i)).collect();
        hs.extend((24..47).map(|i| hour(i, 900)));
        let o = observed_blocks(&hs);
        assert_eq!(o.hour.blocks, 47);
        assert_eq!(o.hour.worst, Some(Nanos::from_micros(900)));
        assert_eq!(o.hour.best, Some(Nanos::from_micros(50)));
        assert_eq!(o.day.blocks, 1, "the partial day does not count");
        assert_eq!(o.day.worst, Some(Nanos::from_micros(73)));
        assert_eq!(o.week.blocks, 0);
        assert_eq!(o.week.worst, None);
        assert!(o
            .for_horizon(Horizon::Week, &UsageModel::CONTINUOUS)
            .is_none());
        assert!(o
            .for_horizon(Horizon::Day, &UsageModel::CONTINUOUS)
            .is_some());
        let office = UsageModel::preset("office").unwrap();
        assert!(
            o.for_horizon(Horizon::Day, &office).is_none(),
            "an office day is not a UTC day"
        );
        assert!(o.for_horizon(Horizon::Hour, &office).is_some());
    }

    #[test]
    fn minutes_merge_their_cpus_and_count_once_each() {
        let m = |i: u64, us: u64| (Nanos(i * MINUTE_NS), Nanos::from_micros(us));
        let o = observed_blocks(&[hour(0, 9)]).with_minutes([m(0, 5), m(0, 7), m(1, 3), m(2, 90)]);
        assert_eq!(o.minute.blocks, 3);
        assert_eq!(o.minute.worst, Some(Nanos::from_micros(90)));
        assert_eq!(o.minute.median, Some(Nanos::from_micros(7)));
        assert_eq!(o.minute.best, Some(Nanos::from_micros(3)));
        assert_eq!(observed_blocks(&[hour(0, 9)]).minute.blocks, 0);
    }

    #[test]
    fn quartiles_are_nearest_ranks() {
        // Hours 1..=8 µs: quartiles 2 and 6, median 4 (lower middle).
        let hs: Vec<HourMax> = (0..8).map(|i| hour(i, i + 1)).collect();
        let o = observed_blocks(&hs);
        assert_eq!(o.hour.lower_quartile, Some(Nanos::from_micros(2)));
        assert_eq!(o.hour.median, Some(Nanos::from_micros(4)));
        assert_eq!(o.hour.upper_quartile, Some(Nanos::from_micros(6)));
        let one = observed_blocks(&[hour(0, 9)]);
        assert_eq!(one.hour.lower_quartile, Some(Nanos::from_micros(9)));
        assert_eq!(one.hour.upper_quartile, Some(Nanos::from_micros(9)));
    }

    #[test]
    fn a_full_week_of_hours_is_seven_days_and_one_week() {
        // Weeks start at hour 0 of the epoch; 168 hours from there.
        let hs: Vec<HourMax> = (0..168)
            .map(|i| hour(i, if i == 100 { 2_000 } else { 30 }))
            .collect();
        let o = observed_blocks(&hs);
        assert_eq!(o.day.blocks, 7);
        assert_eq!(o.day.median, Some(Nanos::from_micros(30)));
        assert_eq!(o.day.worst, Some(Nanos::from_micros(2_000)));
        assert_eq!(o.week.blocks, 1);
        assert_eq!(o.week.worst, Some(Nanos::from_micros(2_000)));
    }

    #[test]
    fn cpus_merge_into_the_largest_per_hour() {
        let merged = hour_maxima([hour(3, 10), hour(3, 40), hour(4, 5)]);
        assert_eq!(merged, vec![hour(3, 40), hour(4, 5)]);
    }
}
