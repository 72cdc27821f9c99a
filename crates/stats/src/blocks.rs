//! The worst case per hour, day and week as observed, from a monitor's
//! stored hour windows: for a machine monitored for weeks these are not
//! forecasts but counts of what happened. A day (a week) is counted only
//! when every one of its 24 (168) UTC hours was measured, so a partial day
//! never passes for a quiet one.

use serde::Serialize;

use latscope_model::Nanos;

const HOUR_NS: u64 = 3_600_000_000_000;

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
    /// The median block maximum (the lower middle for an even count).
    pub median: Option<Nanos>,
    /// The smallest block maximum: the best block.
    pub best: Option<Nanos>,
}

/// Worst cases per hour, day and week.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ObservedBlocks {
    pub hour: BlockStats,
    pub day: BlockStats,
    pub week: BlockStats,
}

fn stats(mut maxima: Vec<Nanos>) -> BlockStats {
    maxima.sort_unstable();
    BlockStats {
        blocks: maxima.len(),
        worst: maxima.last().copied(),
        median: maxima.get(maxima.len().saturating_sub(1) / 2).copied(),
        best: maxima.first().copied(),
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
