//! Clusters of exceedances and the extremal index.
//!
//! Latencies above a high threshold come in clusters: a hypervisor stall of
//! 5 ms at a 1 ms period makes one late wake-up in the raw series and a run
//! of late deadlines (5, 4, 3, 2, 1 ms) in the coordinated-omission
//! corrected one; an interrupt storm makes several in a row. A return level
//! that counts every exceedance as an independent event overstates how
//! often a deadline is missed *for a new reason*, and a buffering scheme
//! that loses one buffer per stall loses it once per cluster, not once per
//! late deadline.
//!
//! **Runs declustering** (Smith & Weissman, *J. R. Statist. Soc. B* 56,
//! 1994; Coles 2001, chapter 5) on the run's per-second maxima: a cluster
//! begins with a second whose maximum is above the threshold and ends once
//! `run_length` consecutive seconds stay at or below it. The **extremal
//! index** `θ = clusters / exceedances` (the runs estimator) is the
//! reciprocal of the mean cluster size; with the exceedance probability `ζ`
//! of the threshold, clusters occur at rate `θ ζ` per sample, and the level
//! exceeded by at least one cluster once in `N` samples is
//! `u + σ/ξ ((N ζ θ)^ξ − 1)` (Coles 2001, chapter 5).
//!
//! The per-second timeline is the finest time order a run keeps. Two
//! clusters in the same second read as one, which makes the runs estimator
//! too small when exceedances are frequent; [`Clusters::resolved`] says
//! whether they are rare enough (at most [`MAX_BUSY_FRACTION`] of the
//! seconds hold one) for the count to be trusted.
//!
//! The forecasts use [`estimate_extremal_index`], which corrects for that
//! merging: if clusters arrive as a Poisson process of μ per second, a
//! fraction `1 − e^{−μ}` of the seconds holds at least one, so the `B`
//! busy seconds of `S` give `μ̂ = −ln(1 − B/S)` and `θ̂ = min(1, μ̂ S / k)`.
//! Independent exceedances then give θ̂ ≈ 1 whatever their rate, and a
//! stall that the corrected series sees as five late deadlines gives 1/5.
//! A cluster that spans several seconds counts once per second it touches,
//! which makes θ̂ too large, never too small: return levels and miss rates
//! come out higher, the safe side. The estimate is taken at the forecast's
//! threshold, or higher where more than half the seconds would be busy.

use serde::Serialize;

/// Seconds at or below the threshold that end a cluster, by default.
pub const DEFAULT_RUN_LENGTH: usize = 1;
/// Largest fraction of seconds above the threshold for which clusters are
/// told apart at one-second resolution.
pub const MAX_BUSY_FRACTION: f64 = 0.2;

/// One cluster of exceedances.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Cluster {
    /// Which series (CPU) it is in.
    pub series: usize,
    /// Its first and last second above the threshold.
    pub first_second: usize,
    pub last_second: usize,
    /// The largest value in it.
    pub max: u64,
}

/// The clusters above a threshold.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Clusters {
    pub threshold: u64,
    pub run_length: usize,
    /// Seconds observed (over all series).
    pub seconds: usize,
    /// Seconds whose maximum is above the threshold.
    pub busy_seconds: usize,
    /// Samples above the threshold (k), as counted by the histogram.
    pub exceedances: u64,
    pub clusters: Vec<Cluster>,
}

impl Clusters {
    /// Finds the clusters of every series (one per CPU: a cluster never
    /// spans two) above `threshold`. `exceedances` is the number of samples
    /// above it (from the histogram; at least one per busy second).
    pub fn find(
        series: &[&[u64]],
        threshold: u64,
        run_length: usize,
        exceedances: u64,
    ) -> Clusters {
        let run_length = run_length.max(1);
        let mut clusters = Vec::new();
        let mut seconds = 0;
        let mut busy_seconds = 0;
        for (s, maxima) in series.iter().enumerate() {
            seconds += maxima.len();
            let mut open: Option<Cluster> = None;
            let mut quiet = 0;
            for (t, &m) in maxima.iter().enumerate() {
                if m > threshold {
                    busy_seconds += 1;
                    quiet = 0;
                    match &mut open {
                        Some(c) => {
                            c.last_second = t;
                            c.max = c.max.max(m);
                        }
                        None => {
                            open = Some(Cluster {
                                series: s,
                                first_second: t,
                                last_second: t,
                                max: m,
                            })
                        }
                    }
                } else if open.is_some() {
                    quiet += 1;
                    if quiet >= run_length {
                        clusters.extend(open.take());
                    }
                }
            }
            clusters.extend(open);
        }
        Clusters {
            threshold,
            run_length,
            seconds,
            busy_seconds,
            exceedances: exceedances.max(busy_seconds as u64),
            clusters,
        }
    }

    /// The number of clusters.
    pub fn count(&self) -> usize {
        self.clusters.len()
    }

    /// θ = clusters / exceedances, in (0, 1]; `None` without exceedances.
    pub fn extremal_index(&self) -> Option<f64> {
        (self.exceedances > 0).then(|| self.count() as f64 / self.exceedances as f64)
    }

    /// The mean number of exceedances per cluster (1/θ).
    pub fn mean_size(&self) -> Option<f64> {
        (self.count() > 0).then(|| self.exceedances as f64 / self.count() as f64)
    }

    /// Clusters per second of measurement.
    pub fn rate_per_second(&self) -> f64 {
        if self.seconds == 0 {
            0.0
        } else {
            self.count() as f64 / self.seconds as f64
        }
    }

    /// Whether clusters are rare enough to be told apart at one-second
    /// resolution (see the module documentation).
    pub fn resolved(&self) -> bool {
        self.seconds > 0 && (self.busy_seconds as f64) <= MAX_BUSY_FRACTION * self.seconds as f64
    }

    /// The cluster maxima, largest first.
    pub fn maxima(&self) -> Vec<u64> {
        let mut m: Vec<u64> = self.clusters.iter().map(|c| c.max).collect();
        m.sort_unstable_by(|a, b| b.cmp(a));
        m
    }
}

/// Fewest busy seconds an extremal index is estimated from.
pub const MIN_BUSY_SECONDS: usize = 10;
/// Largest fraction of busy seconds the Poisson correction is trusted at.
pub const MAX_CORRECTED_BUSY_FRACTION: f64 = 0.5;

/// The extremal index the forecasts use (see the module documentation).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExtremalIndex {
    /// Where it was estimated: samples strictly above this (ns).
    pub threshold_ns: u64,
    /// θ̂, in (0, 1].
    pub theta: f64,
    /// Samples above the threshold (k).
    pub exceedances: u64,
    /// Seconds holding at least one (B), of `seconds` (S).
    pub busy_seconds: usize,
    pub seconds: usize,
    /// Clusters by runs declustering with a run length of one second.
    pub clusters: usize,
}

/// θ̂ of `series` (per-second maxima, one series per CPU) for the samples of
/// `h` above `from` or, where more than half the seconds hold one, above
/// the median of the per-second maxima. `None` with fewer than
/// [`MIN_BUSY_SECONDS`] busy seconds: too few to tell.
pub fn estimate_extremal_index(
    series: &[&[u64]],
    h: &crate::Histogram,
    from: u64,
) -> Option<ExtremalIndex> {
    let mut all: Vec<u64> = series.iter().flat_map(|s| s.iter().copied()).collect();
    if all.is_empty() {
        return None;
    }
    all.sort_unstable();
    let seconds = all.len();
    let busy_at = |u: u64| seconds - all.partition_point(|&m| m <= u);
    let mut threshold = from;
    if busy_at(threshold) as f64 > MAX_CORRECTED_BUSY_FRACTION * seconds as f64 {
        threshold = threshold.max(all[seconds / 2]);
    }
    let k = h.count_above(threshold);
    let c = Clusters::find(series, threshold, DEFAULT_RUN_LENGTH, k);
    if c.busy_seconds < MIN_BUSY_SECONDS || c.exceedances == 0 {
        return None;
    }
    let busy = c.busy_seconds as f64 / seconds as f64;
    let mu = -(1.0 - busy.min(MAX_CORRECTED_BUSY_FRACTION)).ln();
    let theta = (mu * seconds as f64 / c.exceedances as f64).min(1.0);
    Some(ExtremalIndex {
        threshold_ns: threshold,
        theta,
        exceedances: c.exceedances,
        busy_seconds: c.busy_seconds,
        seconds,
        clusters: c.count(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_of_late_seconds_is_one_cluster() {
        let cpu0: &[u64] = &[10, 50, 900, 800, 20, 10, 950, 10, 10];
        let c = Clusters::find(&[cpu0], 100, 1, 9);
        assert_eq!(c.count(), 2);
        assert_eq!(c.clusters[0].first_second, 2);
        assert_eq!(c.clusters[0].last_second, 3);
        assert_eq!(c.clusters[0].max, 900);
        assert_eq!(c.clusters[1].max, 950);
        assert_eq!(c.busy_seconds, 3);
        assert_eq!(c.extremal_index(), Some(2.0 / 9.0));
        assert_eq!(c.mean_size(), Some(4.5));
        assert_eq!(c.maxima(), vec![950, 900]);
        // With a longer run length the gap of two quiet seconds joins them.
        let joined = Clusters::find(&[cpu0], 100, 3, 9);
        assert_eq!(joined.count(), 1);
        assert_eq!(joined.clusters[0].max, 950);
    }

    #[test]
    fn clusters_stay_within_their_cpu_and_open_ones_are_closed() {
        let cpu0: &[u64] = &[10, 500];
        let cpu1: &[u64] = &[600, 10];
        let c = Clusters::find(&[cpu0, cpu1], 100, 1, 2);
        assert_eq!(c.count(), 2);
        assert_eq!((c.clusters[0].series, c.clusters[1].series), (0, 1));
        assert_eq!(c.seconds, 4);
        assert_eq!(c.rate_per_second(), 0.5);
        assert!(!c.resolved(), "half the seconds are busy");
    }

    /// 30 minutes at 1 kHz: wake-ups of 20 µs plus an exponential 5 µs, and
    /// in about one second in fifty a stall seen as five late deadlines in a
    /// row (5, 4, 3, 2, 1 ms), as the coordinated-omission corrected series
    /// shows one. The extremal index is 1/5.
    #[test]
    fn the_extremal_index_of_bursts_of_five_is_a_fifth() {
        let mut rng = crate::forecast::test_rng::Rng(42);
        let mut uniform = move || rng.uniform();
        let mut h = crate::Histogram::new();
        let mut maxima = vec![0u64; 1800];
        let mut burst = 0u64;
        let mut stalls = 0;
        for i in 0..1_800_000usize {
            let v = if burst > 0 {
                burst -= 1;
                (burst + 1) * 1_000_000
            } else if uniform() < 0.02 / 1000.0 {
                stalls += 1;
                burst = 4;
                5_000_000
            } else {
                20_000 + (-uniform().ln() * 5_000.0) as u64
            };
            h.record(v);
            let m = &mut maxima[i / 1000];
            *m = (*m).max(v);
        }
        let u = 500_000;
        let c = Clusters::find(&[&maxima], u, DEFAULT_RUN_LENGTH, h.count_above(u));
        assert!(stalls >= 20, "{stalls} stalls");
        assert!(c.resolved(), "{} busy seconds of 1800", c.busy_seconds);
        let theta = c.extremal_index().unwrap();
        println!("{stalls} stalls, {} clusters, θ = {theta:.3}", c.count());
        assert!((theta - 0.2).abs() <= 0.03, "θ = {theta}");
        assert_eq!(c.maxima()[0], 5_000_000);
    }

    /// The same run as above: the corrected estimate is also a fifth, and
    /// independent exceedances at 0.4 per second (a third of the seconds
    /// busy, many holding two) give about 1, where the runs estimator
    /// merges them (same second, or neighbours) and gives about a half.
    #[test]
    fn the_poisson_corrected_index_is_a_fifth_for_bursts_and_one_for_independent_exceedances() {
        let mut rng = crate::forecast::test_rng::Rng(7);
        let mut uniform = move || rng.uniform();
        let mut h = crate::Histogram::new();
        let mut maxima = vec![0u64; 3600];
        let mut burst = 0u64;
        let mut indep = crate::Histogram::new();
        let mut indep_maxima = vec![0u64; 3600];
        for i in 0..3_600_000usize {
            let base = 20_000 + (-uniform().ln() * 5_000.0) as u64;
            let v = if burst > 0 {
                burst -= 1;
                (burst + 1) * 1_000_000
            } else if uniform() < 0.02 / 1000.0 {
                burst = 4;
                5_000_000
            } else {
                base
            };
            h.record(v);
            maxima[i / 1000] = maxima[i / 1000].max(v);
            let w = if uniform() < 0.4 / 1000.0 {
                1_000_000 + (uniform() * 1_000_000.0) as u64
            } else {
                base
            };
            indep.record(w);
            indep_maxima[i / 1000] = indep_maxima[i / 1000].max(w);
        }
        let b = estimate_extremal_index(&[&maxima], &h, 500_000).unwrap();
        println!("bursts: {b:?}");
        assert!((b.theta - 0.2).abs() <= 0.03, "θ = {}", b.theta);
        let i = estimate_extremal_index(&[&indep_maxima], &indep, 500_000).unwrap();
        let runs = Clusters::find(&[&indep_maxima], 500_000, 1, i.exceedances)
            .extremal_index()
            .unwrap();
        println!("independent: {i:?}, runs estimator {runs:.3}");
        assert!(i.theta >= 0.9, "θ = {}", i.theta);
        assert!(runs < 0.85, "the runs estimator merges: {runs}");
        // Too few busy seconds: no estimate.
        let quiet = vec![0u64; 100];
        assert!(estimate_extremal_index(&[&quiet], &h, 500_000).is_none());
    }

    #[test]
    fn a_busy_threshold_is_raised_to_the_median_second() {
        // Every second is above 100; the maxima are 1..=100 µs.
        let maxima: Vec<u64> = (1..=100).map(|i| i * 1_000).collect();
        let mut h = crate::Histogram::new();
        for &m in &maxima {
            h.record(m);
        }
        let e = estimate_extremal_index(&[&maxima], &h, 100).unwrap();
        assert_eq!(e.threshold_ns, 51_000);
        assert_eq!(e.busy_seconds, 49);
        assert!(e.theta <= 1.0);
    }

    #[test]
    fn exceedances_are_at_least_the_busy_seconds() {
        let cpu0: &[u64] = &[500, 10, 500];
        let c = Clusters::find(&[cpu0], 100, 1, 0);
        assert_eq!(c.exceedances, 2);
        assert_eq!(c.extremal_index(), Some(1.0));
        let none = Clusters::find(&[&[1, 2, 3]], 100, 1, 0);
        assert_eq!(none.extremal_index(), None);
        assert_eq!(none.mean_size(), None);
        assert!(none.resolved());
    }
}
