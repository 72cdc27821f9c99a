//! A second mode in the spacing of periodic wake-ups (`timer.interval`):
//! wake-ups late by one tick, or by the timer slack.
//!
//! Jones & Regehr's Table 2 shows the callbacks of a 1 ms timer spaced not
//! around 1 ms but in two groups a clock tick apart: the timer could only
//! fire on a tick. On Linux the same shape appears when a timer is served
//! by the tick instead of a high-resolution timer (low-resolution mode,
//! timer-wheel time-outs), when something holds the CPU for a whole tick,
//! or, for a normal thread, when the kernel spends the timer slack on some
//! wake-ups and not on others. A mean and a standard deviation hide it; a
//! histogram shows it at once. This module finds it in the histogram: the
//! main mode at the period, and a second mode at the period plus k ticks
//! (or plus the slack) holding a share of the wake-ups worth naming, with
//! a clear valley between the two.

use latscope_model::Nanos;

use crate::Histogram;

/// The least share of wake-ups a second mode must hold to be named.
pub const MIN_SHARE: f64 = 0.01;
/// ... and the least number of them, so that a short run's stray samples
/// are not called a mode.
pub const MIN_COUNT: u64 = 10;
/// Offsets below this cannot be told from ordinary jitter.
pub const MIN_OFFSET: Nanos = Nanos::from_micros(10);
/// The most ticks after the period searched.
pub const MAX_TICKS: u32 = 4;

/// Bins between the two modes' centres: the offset is cut into this many,
/// the modes take three bins each, the valley the three in the middle.
const BINS: i64 = 8;
/// The valley's mean bin must hold at most this fraction of the second
/// mode's fullest bin.
const VALLEY_RATIO: f64 = 0.25;

/// What a second mode's distance from the period matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LateBy {
    /// `k` ticks (1/HZ).
    Ticks(u32),
    /// The timer slack in force.
    Slack,
}

/// A second mode in the spacing of wake-ups.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LateMode {
    pub late_by: LateBy,
    /// The distance the mode was searched at: k × tick, or the slack.
    pub expected_ns: Nanos,
    /// Its measured distance from the period: the mean of its samples less
    /// the period.
    pub offset_ns: Nanos,
    /// Wake-ups in the second mode, and their share of all.
    pub count: u64,
    pub share: f64,
}

/// Where to look: the period, the tick and the slack in force (either may
/// be unknown; a slack below [`MIN_OFFSET`] is not searched).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spacing {
    pub period: Nanos,
    pub tick: Option<Nanos>,
    pub slack: Option<Nanos>,
}

/// The second mode of `interval` (a `timer.interval` histogram) one or
/// more ticks, or the slack, after the period; the fullest one when
/// several qualify, `None` when none does.
pub fn late_mode(interval: &Histogram, spacing: Spacing) -> Option<LateMode> {
    let total = interval.count();
    if total < MIN_COUNT || spacing.period.0 == 0 {
        return None;
    }
    // Each bucket as its midpoint: at 1-10 ms the buckets are 0.5-8 µs
    // wide, far finer than the bins used here.
    let mids: Vec<(u64, u64)> = interval
        .buckets()
        .map(|(lo, hi, c)| (lo + (hi - lo) / 2, c))
        .collect();
    let max = interval.max().map_or(0, |m| m.0);
    let ticks = spacing.tick.into_iter().flat_map(|t| {
        (1..=MAX_TICKS).map(move |k| (LateBy::Ticks(k), Nanos(t.0.saturating_mul(u64::from(k)))))
    });
    let slack = spacing
        .slack
        .filter(|s| !near_a_tick(*s, spacing.tick))
        .map(|s| (LateBy::Slack, s));
    ticks
        .chain(slack)
        .filter(|(_, d)| *d >= MIN_OFFSET && spacing.period.0.saturating_add(d.0 / 2) <= max)
        .filter_map(|(late_by, d)| mode_at(&mids, total, spacing.period, late_by, d))
        .max_by(|a, b| {
            a.count
                .cmp(&b.count)
                .then(b.expected_ns.cmp(&a.expected_ns))
        })
}

/// A slack within a bin of some k ticks is searched as ticks, so that one
/// mode is not named twice.
fn near_a_tick(slack: Nanos, tick: Option<Nanos>) -> bool {
    let Some(t) = tick.filter(|t| t.0 > 0) else {
        return false;
    };
    (1..=u64::from(MAX_TICKS)).any(|k| slack.0.abs_diff(t.0 * k) <= slack.0 / BINS as u64)
}

/// The mode `d` after the period, if the bins say there is one: the bins
/// are `d / 8` wide and centred on `period + i × d / 8`.
fn mode_at(
    mids: &[(u64, u64)],
    total: u64,
    period: Nanos,
    late_by: LateBy,
    d: Nanos,
) -> Option<LateMode> {
    let width = i64::try_from((d.0 / BINS as u64).max(1)).unwrap_or(i64::MAX);
    let period_ns = i64::try_from(period.0).unwrap_or(i64::MAX);
    // Bins −1 ..= BINS + 3, at index + 1.
    let mut bins = [0u64; (BINS + 5) as usize];
    let (mut sum, mut n) = (0u128, 0u64);
    for &(mid, c) in mids {
        let from_period = i64::try_from(mid).unwrap_or(i64::MAX) - period_ns;
        let i = (from_period + width / 2).div_euclid(width);
        if let Some(slot) = usize::try_from(i + 1).ok().and_then(|k| bins.get_mut(k)) {
            *slot += c;
        }
        if (BINS - 1..=BINS + 1).contains(&i) {
            sum += u128::from(mid) * u128::from(c);
            n += c;
        }
    }
    let bin = |i: i64| bins[(i + 1) as usize];
    let main: u64 = (-1..=1).map(bin).sum();
    let main_peak = (-1..=1).map(bin).max().unwrap_or(0);
    let peak = (BINS - 1..=BINS + 1).map(bin).max().unwrap_or(0);
    let valley = (BINS / 2 - 1..=BINS / 2 + 1).map(bin).sum::<u64>() as f64 / 3.0;
    let beyond = bin(BINS + 2).max(bin(BINS + 3));
    let share = n as f64 / total as f64;
    let is_mode = n >= MIN_COUNT
        && share >= MIN_SHARE
        && main >= n
        && main_peak >= peak
        && valley <= VALLEY_RATIO * peak as f64
        && peak >= beyond;
    is_mode.then(|| LateMode {
        late_by,
        expected_ns: d,
        offset_ns: Nanos(u64::try_from(sum / u128::from(n)).unwrap_or(u64::MAX))
            .saturating_sub(period),
        count: n,
        share,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const PERIOD: Nanos = Nanos::from_millis(1);
    const TICK: Nanos = Nanos::from_millis(4);
    const SLACK: Nanos = Nanos::from_micros(50);

    /// A deterministic spread of `n` samples around `centre`, roughly
    /// normal with standard deviation `sd` (a sum of uniform draws).
    fn around(h: &mut Histogram, centre: u64, sd: u64, n: u64) {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..n {
            let mut s = 0i64;
            for _ in 0..12 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                s += (x % 1_000) as i64;
            }
            // 12 uniforms on [0, 1000): mean 6000, sd ~1000.
            let v = centre as i64 + (s - 6_000) * sd as i64 / 1_000;
            h.record(v.max(1) as u64);
        }
    }

    fn spacing(slack: Option<Nanos>) -> Spacing {
        Spacing {
            period: PERIOD,
            tick: Some(TICK),
            slack,
        }
    }

    #[test]
    fn unimodal_spacing_has_no_second_mode() {
        let mut h = Histogram::new();
        around(&mut h, PERIOD.0, 8_000, 20_000);
        assert_eq!(late_mode(&h, spacing(Some(SLACK))), None);
        // Nor with a long tail that has no valley.
        for v in (1_000_000..6_000_000).step_by(2_000) {
            h.record(v);
        }
        assert_eq!(late_mode(&h, spacing(Some(SLACK))), None);
    }

    #[test]
    fn five_percent_one_tick_late_is_named() {
        let mut h = Histogram::new();
        around(&mut h, PERIOD.0, 8_000, 19_000);
        around(&mut h, PERIOD.0 + TICK.0, 30_000, 1_000);
        let m = late_mode(&h, spacing(Some(SLACK))).unwrap();
        assert_eq!(m.late_by, LateBy::Ticks(1));
        assert_eq!(m.expected_ns, TICK);
        assert_eq!(m.count, 1_000);
        assert!((m.share - 0.05).abs() < 1e-9, "{}", m.share);
        assert!(m.offset_ns.0.abs_diff(TICK.0) < 10_000, "{}", m.offset_ns);
        // Two ticks late is named as two.
        let mut h = Histogram::new();
        around(&mut h, PERIOD.0, 8_000, 19_000);
        around(&mut h, PERIOD.0 + 2 * TICK.0, 30_000, 1_000);
        assert_eq!(
            late_mode(&h, spacing(None)).unwrap().late_by,
            LateBy::Ticks(2)
        );
    }

    #[test]
    fn a_slack_sized_second_mode_is_named_as_slack() {
        let mut h = Histogram::new();
        around(&mut h, PERIOD.0, 2_000, 19_000);
        around(&mut h, PERIOD.0 + SLACK.0, 2_000, 1_000);
        let m = late_mode(&h, spacing(Some(SLACK))).unwrap();
        assert_eq!(m.late_by, LateBy::Slack);
        assert_eq!(m.expected_ns, SLACK);
        assert!((m.share - 0.05).abs() < 0.002, "{}", m.share);
        assert!(m.offset_ns.0.abs_diff(SLACK.0) < 2_000, "{}", m.offset_ns);
        // Without a slack in force, nothing to match it with.
        assert_eq!(late_mode(&h, spacing(None)), None);
    }

    #[test]
    fn too_few_or_too_small_is_not_a_mode() {
        let mut h = Histogram::new();
        around(&mut h, PERIOD.0, 8_000, 19_950);
        around(&mut h, PERIOD.0 + TICK.0, 30_000, 50);
        assert_eq!(late_mode(&h, spacing(None)), None, "0.25 % is below 1 %");
        let mut h = Histogram::new();
        around(&mut h, PERIOD.0, 8_000, 50);
        around(&mut h, PERIOD.0 + TICK.0, 30_000, 5);
        assert_eq!(late_mode(&h, spacing(None)), None, "5 wake-ups");
        assert_eq!(late_mode(&Histogram::new(), spacing(None)), None);
    }

    #[test]
    fn the_main_mode_must_be_at_the_period() {
        // Most wake-ups a tick late: the period is not the main mode.
        let mut h = Histogram::new();
        around(&mut h, PERIOD.0, 8_000, 1_000);
        around(&mut h, PERIOD.0 + TICK.0, 8_000, 19_000);
        assert_eq!(late_mode(&h, spacing(None)), None);
    }

    #[test]
    fn a_slack_near_a_tick_is_searched_as_ticks() {
        assert!(near_a_tick(Nanos::from_micros(3_900), Some(TICK)));
        assert!(!near_a_tick(SLACK, Some(TICK)));
        assert!(!near_a_tick(SLACK, None));
    }
}
