//! Comparing runs: is run B's tail really worse than run A's?
//!
//! Cells are matched across runs by probe, workload and every setting but
//! the run-specific ones ([`CellSettings::same_cell_as`]): a 1 ms and a
//! 100 µs timer run are different cells, two runs of different lengths are
//! the same cell. Metrics are matched by name, with the CPUs of a cell
//! pooled (their histograms merged). Every run is compared with the
//! first, the baseline.
//!
//! Two statements are made about the tail of each metric:
//!
//! * **Exceedance test** (what `--fail-if-worse` gates on). The threshold is
//!   the baseline's p99.9. Under "same distribution", every sample above it is
//!   equally likely to come from either run, so given `k = k_A + k_B`
//!   exceedances in total, `k_B ~ Binomial(k, n_B / (n_A + n_B))`. The
//!   one-sided p-values `P(X ≥ k_B)` (worse) and `P(X ≤ k_B)` (better) are
//!   computed exactly. This is the conditional test for two Poisson rates: it
//!   needs no model of the latency distribution, it accounts for the
//!   baseline's own sampling noise and for the histogram's bucket resolution
//!   (both counts use the same bucket boundary), and it stays exact with few
//!   exceedances, where normal approximations fail.
//! * **Bootstrap interval** of the p99.9 ratio B/A, for reading, not gating.
//!   A multinomial resample of a histogram's bucket counts has as its r-th
//!   smallest value `F⁻¹(U₍ᵣ₎)`, where `U₍ᵣ₎ ~ Beta(r, n − r + 1)` is the r-th
//!   order statistic of n uniforms; drawing that Beta variate (as a ratio of
//!   two gamma variates) gives the resampled p99.9 exactly, without building
//!   n-sample resamples. [`BOOTSTRAP_RESAMPLES`] resamples with a fixed seed,
//!   so the same runs always give the same interval.
//!
//! Both assume independent samples. Latency samples are not quite that (a
//! long disturbance can delay several consecutive wake-ups), so p-values near
//! [`ALPHA`] deserve a longer run rather than a conclusion.

use std::collections::BTreeMap;
use std::fmt;

use latscope_model::{CellSettings, Nanos, RunId};
use serde::Serialize;

use crate::Histogram;
use crate::{CellResult, RunResult};

/// Significance level of the exceedance test.
pub const ALPHA: f64 = 0.01;
/// Resamples drawn for the bootstrap interval of the p99.9 ratio.
pub const BOOTSTRAP_RESAMPLES: u32 = 400;
/// Confidence of the bootstrap interval.
pub const CI_LEVEL: f64 = 0.95;
const SEED: u64 = 0x6c61_7473_636f_7065; // "latscope"
/// The quantile whose comparison is "the tail".
pub const TAIL_QUANTILE: f64 = 0.999;

/// What identifies a cell across runs.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct CellKey {
    pub probe: String,
    pub workload: String,
    /// `settings.policy`.
    pub policy: Option<String>,
    /// `settings.priority` (0 under `other`).
    pub priority: Option<i64>,
    /// The settings that identify the cell: the cell's own without the
    /// clock-read cost and the planned duration
    /// ([`CellSettings::cell_identity`]).
    pub settings: CellSettings,
}

impl CellKey {
    pub fn of(cell: &CellResult) -> CellKey {
        let s = &cell.meta.settings;
        CellKey {
            probe: cell.meta.probe.clone(),
            workload: cell.meta.workload.clone(),
            policy: Some(s.policy().as_str().to_string()),
            priority: Some(i64::from(s.priority())),
            settings: s.cell_identity(),
        }
    }
}

impl fmt::Display for CellKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = format!("{}/{}", self.probe, self.workload);
        match (&self.policy, self.priority) {
            (Some(p), Some(n)) if p == "fifo" || p == "rr" => text.push_str(&format!("/{p}:{n}")),
            (Some(p), _) => text.push_str(&format!("/{p}")),
            (None, Some(n)) => text.push_str(&format!("/prio:{n}")),
            (None, None) => {}
        }
        // The n-th thread at a priority shared in one group: paired with
        // the n-th of the other run.
        if let Some(n) = self.settings.common().instance {
            text.push_str(&format!("#{n}"));
        }
        // A period other than the probe's default tells apart cells that
        // would otherwise read the same (a 1 ms and a 100 µs timer cell).
        let default_period =
            CellSettings::default_for(self.settings.probe_name()).and_then(|d| d.period());
        if let Some(p) = self
            .settings
            .period()
            .filter(|p| Some(*p) != default_period)
        {
            text.push_str(&format!("/{p}"));
        }
        // Measured at once with other priorities (`run --priorities`):
        // another cell than the same priority measured alone.
        if self.settings.common().together.is_some() {
            text.push_str("/together");
        }
        f.pad(&text)
    }
}

/// The figures shown for one distribution.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct DistStats {
    pub count: u64,
    pub p50: Nanos,
    pub p99: Nanos,
    pub p999: Nanos,
    pub max: Nanos,
}

impl DistStats {
    pub fn of(h: &Histogram) -> Option<DistStats> {
        Some(DistStats {
            count: h.count(),
            p50: h.quantile(0.50)?,
            p99: h.quantile(0.99)?,
            p999: h.quantile(TAIL_QUANTILE)?,
            max: h.max()?,
        })
    }
}

/// The exceedance test's conclusion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// B has significantly more samples above A's p99.9 (p < [`ALPHA`]).
    Worse,
    /// B has significantly fewer samples above A's p99.9.
    Better,
    /// No difference at this significance level.
    NoDifference,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Worse => "worse",
            Verdict::Better => "better",
            Verdict::NoDifference => "no difference",
        }
    }
}

/// The exceedance test of B against A.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct TailTest {
    /// A's p99.9: the exceedance threshold.
    pub threshold: Nanos,
    /// A's samples above the threshold (at bucket resolution).
    pub above_a: u64,
    /// B's samples above the threshold.
    pub above_b: u64,
    /// B's exceedances expected if B were distributed like A.
    pub expected_b: f64,
    /// P(at least `above_b`) under "same distribution".
    pub p_worse: f64,
    /// P(at most `above_b`) under "same distribution".
    pub p_better: f64,
    pub verdict: Verdict,
}

/// A bootstrap confidence interval of the ratio of B's p99.9 to A's.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RatioCi {
    pub low: f64,
    pub high: f64,
    pub level: f64,
    pub resamples: u32,
}

/// Run B's distribution of one metric against the baseline's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MetricComparison {
    pub a: DistStats,
    pub b: DistStats,
    /// B/A for p50, p99, p99.9 and max (`None` where A's figure is 0).
    pub ratio_p50: Option<f64>,
    pub ratio_p99: Option<f64>,
    pub ratio_p999: Option<f64>,
    pub ratio_max: Option<f64>,
    pub tail: TailTest,
    pub p999_ratio_ci: Option<RatioCi>,
}

impl MetricComparison {
    /// `--fail-if-worse PCT`: B's p99.9 exceeds A's by more than `pct`
    /// percent *and* the exceedance test finds B's tail worse. The maximum is
    /// shown but never gates: a single sample cannot be tested.
    pub fn tail_worse_by(&self, pct: f64) -> bool {
        let limit = 1.0 + pct / 100.0;
        self.tail.verdict == Verdict::Worse && self.ratio_p999.is_some_and(|r| r > limit)
    }
}

/// Compares B with A; `None` when either is empty.
pub fn compare(a: &Histogram, b: &Histogram) -> Option<MetricComparison> {
    let sa = DistStats::of(a)?;
    let sb = DistStats::of(b)?;
    let ratio = |x: Nanos, y: Nanos| (x.0 > 0).then(|| y.0 as f64 / x.0 as f64);
    let tail = exceedance_test(a, b, sa.p999);
    Some(MetricComparison {
        a: sa,
        b: sb,
        ratio_p50: ratio(sa.p50, sb.p50),
        ratio_p99: ratio(sa.p99, sb.p99),
        ratio_p999: ratio(sa.p999, sb.p999),
        ratio_max: ratio(sa.max, sb.max),
        tail,
        p999_ratio_ci: bootstrap_ratio_ci(a, b, TAIL_QUANTILE, BOOTSTRAP_RESAMPLES, SEED),
    })
}

/// The exceedance test with `threshold` (A's p99.9) as the boundary.
pub fn exceedance_test(a: &Histogram, b: &Histogram, threshold: Nanos) -> TailTest {
    let (na, nb) = (a.count(), b.count());
    let above_a = a.count_above(threshold.0);
    let above_b = b.count_above(threshold.0);
    let k = above_a + above_b;
    let share = if na + nb == 0 {
        0.5
    } else {
        nb as f64 / (na + nb) as f64
    };
    let expected_b = if na == 0 {
        0.0
    } else {
        above_a as f64 * nb as f64 / na as f64
    };
    let p_worse = binomial_upper_tail(k, share, above_b);
    let p_better = binomial_lower_tail(k, share, above_b);
    let verdict = if p_worse < ALPHA {
        Verdict::Worse
    } else if p_better < ALPHA {
        Verdict::Better
    } else {
        Verdict::NoDifference
    };
    TailTest {
        threshold,
        above_a,
        above_b,
        expected_b,
        p_worse,
        p_better,
        verdict,
    }
}

/// ln(n!) : exact sum below 256, Stirling's series above (error < 1e-12).
fn ln_factorial(n: u64) -> f64 {
    if n < 256 {
        return (2..=n).map(|i| (i as f64).ln()).sum();
    }
    let x = n as f64;
    x * x.ln() - x + 0.5 * (2.0 * std::f64::consts::PI * x).ln() + 1.0 / (12.0 * x)
        - 1.0 / (360.0 * x * x * x)
}

fn ln_binomial_pmf(n: u64, p: f64, k: u64) -> f64 {
    let ln_choose = ln_factorial(n) - ln_factorial(k) - ln_factorial(n - k);
    let a = if k == 0 { 0.0 } else { k as f64 * p.ln() };
    let b = if k == n {
        0.0
    } else {
        (n - k) as f64 * (1.0 - p).ln()
    };
    ln_choose + a + b
}

/// P(X ≥ k) for X ~ Binomial(n, p).
pub(crate) fn binomial_upper_tail(n: u64, p: f64, k: u64) -> f64 {
    if k == 0 {
        return 1.0;
    }
    if k > n || p <= 0.0 {
        return 0.0;
    }
    if p >= 1.0 {
        return 1.0;
    }
    let odds = p / (1.0 - p);
    let mut term = ln_binomial_pmf(n, p, k).exp();
    let mut sum = 0.0;
    let mut j = k;
    loop {
        sum += term;
        if j == n || (term < sum * 1e-17 && j as f64 > n as f64 * p) {
            break;
        }
        term *= (n - j) as f64 / (j + 1) as f64 * odds;
        j += 1;
    }
    sum.min(1.0)
}

/// P(X ≤ k) for X ~ Binomial(n, p).
pub(crate) fn binomial_lower_tail(n: u64, p: f64, k: u64) -> f64 {
    if k >= n {
        return 1.0;
    }
    if p <= 0.0 {
        return 1.0;
    }
    if p >= 1.0 {
        return 0.0;
    }
    let inv_odds = (1.0 - p) / p;
    let mut term = ln_binomial_pmf(n, p, k).exp();
    let mut sum = 0.0;
    let mut j = k;
    loop {
        sum += term;
        if j == 0 || (term < sum * 1e-17 && (j as f64) < n as f64 * p) {
            break;
        }
        term *= j as f64 / (n - j + 1) as f64 * inv_odds;
        j -= 1;
    }
    sum.min(1.0)
}

/// A small deterministic generator (SplitMix64): reproducible, no dependency.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1).
    fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }

    /// Gamma(shape, 1) for shape ≥ 1 (Marsaglia & Tsang, 2000).
    fn gamma(&mut self, shape: f64) -> f64 {
        let d = shape - 1.0 / 3.0;
        let c = 1.0 / (9.0 * d).sqrt();
        loop {
            let x = self.normal();
            let v = 1.0 + c * x;
            if v <= 0.0 {
                continue;
            }
            let v = v * v * v;
            let u = self.uniform();
            if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
                return d * v;
            }
        }
    }

    /// Beta(a, b) for a, b ≥ 1, as a ratio of gamma variates.
    fn beta(&mut self, a: f64, b: f64) -> f64 {
        let x = self.gamma(a);
        let y = self.gamma(b);
        x / (x + y)
    }
}

/// A histogram's inverse CDF, as `Histogram::quantile` reports values.
struct Inverse {
    /// (cumulative count, reported value) per non-empty bucket.
    steps: Vec<(u64, u64)>,
    total: u64,
}

impl Inverse {
    fn of(h: &Histogram) -> Option<Inverse> {
        let (min, max) = (h.min()?.0, h.max()?.0);
        let mut seen = 0;
        let steps = h
            .buckets()
            .map(|(_, high, c)| {
                seen += c;
                (seen, high.min(max).max(min))
            })
            .collect();
        Some(Inverse {
            steps,
            total: h.count(),
        })
    }

    /// The value of rank `r` (1-based).
    fn at_rank(&self, r: u64) -> u64 {
        let i = self.steps.partition_point(|&(cum, _)| cum < r);
        self.steps
            .get(i)
            .or(self.steps.last())
            .map_or(0, |&(_, v)| v)
    }

    /// One bootstrap replicate of the `q` quantile.
    fn resampled_quantile(&self, q: f64, rng: &mut Rng) -> u64 {
        let n = self.total;
        let r = ((q * n as f64).ceil() as u64).clamp(1, n);
        let u = rng.beta(r as f64, (n - r + 1) as f64);
        let rank = ((u * n as f64).ceil() as u64).clamp(1, n);
        self.at_rank(rank)
    }
}

/// Percentile bootstrap interval of quantile_B(q) / quantile_A(q); `None`
/// when either histogram is empty or A's resampled quantile can be 0.
pub fn bootstrap_ratio_ci(
    a: &Histogram,
    b: &Histogram,
    q: f64,
    resamples: u32,
    seed: u64,
) -> Option<RatioCi> {
    let (ia, ib) = (Inverse::of(a)?, Inverse::of(b)?);
    if resamples == 0 {
        return None;
    }
    let mut rng = Rng(seed);
    let mut ratios = Vec::with_capacity(resamples as usize);
    for _ in 0..resamples {
        let qa = ia.resampled_quantile(q, &mut rng);
        let qb = ib.resampled_quantile(q, &mut rng);
        if qa == 0 {
            return None;
        }
        ratios.push(qb as f64 / qa as f64);
    }
    ratios.sort_by(f64::total_cmp);
    let tail = (1.0 - CI_LEVEL) / 2.0;
    let pick = |p: f64| {
        let i = ((p * (ratios.len() - 1) as f64).round() as usize).min(ratios.len() - 1);
        ratios[i]
    };
    Some(RatioCi {
        low: pick(tail),
        high: pick(1.0 - tail),
        level: CI_LEVEL,
        resamples,
    })
}

/// A cell's metrics by name, with the CPUs merged.
pub fn pooled_metrics(cells: &[&CellResult]) -> BTreeMap<String, Histogram> {
    let mut out: BTreeMap<String, Histogram> = BTreeMap::new();
    for cell in cells {
        for m in &cell.metrics {
            out.entry(m.name.clone()).or_default().merge(&m.histogram);
        }
    }
    out
}

/// One metric of one cell: the baseline and every other run against it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MetricRow {
    pub cell: CellKey,
    pub metric: String,
    pub baseline: DistStats,
    /// One per compared run, in order; `None` where that run lacks the
    /// cell or metric, or has no samples of it.
    pub versus: Vec<Option<MetricComparison>>,
    /// The pooled histograms, for plots (not serialized).
    #[serde(skip)]
    pub histograms: Vec<Option<Histogram>>,
}

/// The comparison of runs with the first.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunComparison {
    /// The baseline first.
    pub runs: Vec<RunId>,
    pub rows: Vec<MetricRow>,
    /// Cells or metrics present in a compared run but not in the baseline.
    pub unmatched: Vec<String>,
}

impl RunComparison {
    /// The (run, cell, metric) comparisons that trip `--fail-if-worse pct`.
    pub fn worse_by(&self, pct: f64) -> Vec<(RunId, &MetricRow, &MetricComparison)> {
        let mut out = Vec::new();
        for row in &self.rows {
            for (i, c) in row.versus.iter().enumerate() {
                if let (Some(c), Some(&run)) = (c, self.runs.get(i + 1)) {
                    if c.tail_worse_by(pct) {
                        out.push((run, row, c));
                    }
                }
            }
        }
        out
    }
}

fn by_key(run: &RunResult) -> BTreeMap<CellKey, BTreeMap<String, Histogram>> {
    let mut cells: BTreeMap<CellKey, Vec<&CellResult>> = BTreeMap::new();
    for c in &run.cells {
        cells.entry(CellKey::of(c)).or_default().push(c);
    }
    cells
        .into_iter()
        .map(|(k, v)| (k, pooled_metrics(&v)))
        .collect()
}

/// Compares every run in `others` with `baseline`.
pub fn compare_runs(baseline: &RunResult, others: &[&RunResult]) -> RunComparison {
    let base = by_key(baseline);
    let rest: Vec<_> = others.iter().map(|r| by_key(r)).collect();
    let mut rows = Vec::new();
    for (key, metrics) in &base {
        for (name, ha) in metrics {
            let Some(baseline_stats) = DistStats::of(ha) else {
                continue;
            };
            let hs: Vec<Option<Histogram>> = rest
                .iter()
                .map(|r| r.get(key).and_then(|m| m.get(name)).cloned())
                .collect();
            let versus = hs
                .iter()
                .map(|hb| hb.as_ref().and_then(|hb| compare(ha, hb)))
                .collect();
            let mut histograms = vec![Some(ha.clone())];
            histograms.extend(hs);
            rows.push(MetricRow {
                cell: key.clone(),
                metric: name.clone(),
                baseline: baseline_stats,
                versus,
                histograms,
            });
        }
    }
    let mut unmatched = Vec::new();
    for (run, cells) in others.iter().zip(&rest) {
        for (key, metrics) in cells {
            for name in metrics.keys() {
                if !base.get(key).is_some_and(|m| m.contains_key(name)) {
                    unmatched.push(format!("run {}: {key} {name}", run.meta.id));
                }
            }
        }
    }
    RunComparison {
        runs: std::iter::once(baseline.meta.id)
            .chain(others.iter().map(|r| r.meta.id))
            .collect(),
        rows,
        unmatched,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_second_thread_at_a_shared_priority_is_its_own_cell_with_its_number() {
        let key = |instance: Option<u32>| {
            let mut s = CellSettings::Noise(latscope_model::NoiseSettings::default());
            let c = s.common_mut();
            c.policy = latscope_model::Policy::Rr;
            c.priority = 50;
            c.together = Some(vec![0, 1]);
            c.instance = instance;
            CellKey {
                probe: "noise".into(),
                workload: "none".into(),
                policy: Some("rr".into()),
                priority: Some(50),
                settings: s.cell_identity(),
            }
        };
        let (first, second) = (key(None), key(Some(2)));
        assert_ne!(first, second);
        assert_eq!(first.to_string(), "noise/none/rr:50/together");
        assert_eq!(second.to_string(), "noise/none/rr:50#2/together");
    }

    /// `n` samples: mostly 10–19 µs, a tail of `tail` samples spread over
    /// `[tail_low, 2 × tail_low)`, laid out deterministically.
    fn hist(n: u64, tail: u64, tail_low: u64) -> Histogram {
        let mut h = Histogram::new();
        for i in 0..n - tail {
            h.record(10_000 + (i * 7919) % 9_000);
        }
        for i in 0..tail {
            h.record(tail_low + (i * 104_729) % tail_low);
        }
        h
    }

    #[test]
    fn binomial_tails_match_known_values() {
        // Binomial(10, 0.5): P(X >= 8) = 56/1024, P(X <= 2) = 56/1024.
        assert!((binomial_upper_tail(10, 0.5, 8) - 56.0 / 1024.0).abs() < 1e-12);
        assert!((binomial_lower_tail(10, 0.5, 2) - 56.0 / 1024.0).abs() < 1e-12);
        assert_eq!(binomial_upper_tail(10, 0.5, 0), 1.0);
        assert_eq!(binomial_lower_tail(10, 0.5, 10), 1.0);
        // Large n through Stirling: symmetric, so P(X >= n/2) just above 0.5.
        let p = binomial_upper_tail(100_000, 0.5, 50_000);
        assert!((p - 0.501_261).abs() < 1e-4, "{p}");
    }

    #[test]
    fn ln_factorial_is_continuous_at_the_switch() {
        let exact: f64 = (2..=300u64).map(|i| (i as f64).ln()).sum();
        assert!((ln_factorial(300) - exact).abs() < 1e-9);
    }

    #[test]
    fn a_heavier_tail_is_detected() {
        let a = hist(100_000, 100, 50_000);
        let b = hist(100_000, 1_000, 200_000);
        let c = compare(&a, &b).unwrap();
        assert_eq!(c.tail.verdict, Verdict::Worse);
        assert!(c.tail.p_worse < 1e-12, "{:?}", c.tail);
        assert!(c.ratio_p999.unwrap() > 3.0);
        let ci = c.p999_ratio_ci.unwrap();
        assert!(ci.low > 1.5, "{ci:?}");
        assert!(c.tail_worse_by(10.0));
        // The other way round it is better, and never trips the gate.
        let r = compare(&b, &a).unwrap();
        assert_eq!(r.tail.verdict, Verdict::Better);
        assert!(!r.tail_worse_by(10.0));
    }

    #[test]
    fn equal_distributions_are_not_flagged() {
        let a = hist(200_000, 200, 50_000);
        let c = compare(&a, &a).unwrap();
        assert_eq!(c.tail.verdict, Verdict::NoDifference);
        assert_eq!(c.ratio_p999, Some(1.0));
        let ci = c.p999_ratio_ci.unwrap();
        assert!(ci.low <= 1.0 && ci.high >= 1.0, "{ci:?}");
        assert!(!c.tail_worse_by(0.0));
        // Same shape, different sample (another layout of the same mix).
        let mut b = Histogram::new();
        for i in 0..199_800u64 {
            b.record(10_000 + (i * 6_007) % 9_000);
        }
        for i in 0..200u64 {
            b.record(50_000 + (i * 7_727) % 50_000);
        }
        let c = compare(&a, &b).unwrap();
        assert_eq!(c.tail.verdict, Verdict::NoDifference, "{:?}", c.tail);
        assert!(!c.tail_worse_by(10.0));
    }

    #[test]
    fn bootstrap_is_reproducible() {
        let a = hist(10_000, 20, 50_000);
        let b = hist(10_000, 40, 60_000);
        let x = bootstrap_ratio_ci(&a, &b, 0.999, 200, 7).unwrap();
        let y = bootstrap_ratio_ci(&a, &b, 0.999, 200, 7).unwrap();
        assert_eq!(x, y);
        assert!(x.low <= x.high);
    }

    #[test]
    fn empty_histograms_are_not_compared() {
        assert!(compare(&Histogram::new(), &hist(100, 1, 50_000)).is_none());
    }

    fn timer_cell(workload: &str, period: Nanos, clock_read: u64, secs: u64) -> CellResult {
        use latscope_model::{CellMeta, CommonSettings, TimerSettings};
        let mut m = crate::MetricResult::new("timer.latency", None);
        m.histogram = hist(10_000, 10, 50_000);
        CellResult::new(
            CellMeta::new(
                0,
                workload,
                CellSettings::Timer(TimerSettings {
                    period_ns: period,
                    common: CommonSettings {
                        clock_read_ns: clock_read,
                        duration_ns: Some(Nanos::from_secs(secs)),
                        ..CommonSettings::default()
                    },
                    ..TimerSettings::default()
                }),
                Nanos::from_secs(secs),
            ),
            vec![m],
        )
    }

    fn run_of(id: i64, cells: Vec<CellResult>) -> RunResult {
        RunResult {
            meta: latscope_model::RunMeta {
                id: RunId(id),
                started_unix_ns: Nanos(0),
                ended_unix_ns: None,
                checkpoint_unix_ns: None,
                status: latscope_model::RunStatus::Complete,
                command_line: vec![],
                pid: 0,
                boot_id: String::new(),
                hostname: String::new(),
                tool_version: String::new(),
                notes: vec![],
                source: None,
            },
            system: Default::default(),
            capabilities: Default::default(),
            cells,
        }
    }

    #[test]
    fn cells_match_by_all_their_settings_but_the_run_specific_ones() {
        let ms = Nanos::from_millis(1);
        let us100 = Nanos::from_micros(100);
        let a = run_of(1, vec![timer_cell("idle", ms, 24, 10)]);
        // Another clock-read cost and length: the same cell.
        let same = run_of(2, vec![timer_cell("idle", ms, 31, 60)]);
        let cmp = compare_runs(&a, &[&same]);
        assert_eq!(cmp.rows.len(), 1);
        assert!(cmp.rows[0].versus[0].is_some(), "{:?}", cmp.rows[0]);
        assert!(cmp.unmatched.is_empty(), "{:?}", cmp.unmatched);
        // Another period: a different cell, never compared with the 1 ms one.
        let faster = run_of(3, vec![timer_cell("idle", us100, 24, 10)]);
        let cmp = compare_runs(&a, &[&faster]);
        assert_eq!(cmp.rows.len(), 1);
        assert!(cmp.rows[0].versus[0].is_none(), "{:?}", cmp.rows[0]);
        assert_eq!(cmp.unmatched.len(), 1, "{:?}", cmp.unmatched);
        assert_eq!(
            cmp.unmatched[0],
            "run 3: timer/idle/fifo:95/100µs timer.latency"
        );
        // Another workload with the same settings: different too.
        let other = run_of(4, vec![timer_cell("cpu", ms, 24, 10)]);
        assert!(compare_runs(&a, &[&other]).rows[0].versus[0].is_none());
        // The key keeps the identity only.
        let key = CellKey::of(&a.cells[0]);
        assert_eq!(key.settings.common().clock_read_ns, 0);
        assert_eq!(key.settings.period(), Some(ms));
        assert_eq!(key.to_string(), "timer/idle/fifo:95");
    }

    #[test]
    fn cells_measured_together_match_one_another_not_cells_measured_alone() {
        let ms = Nanos::from_millis(1);
        let together = |id: i64, cells: Vec<u32>| {
            let mut c = timer_cell("idle", ms, 20, 10);
            c.meta.settings.common_mut().together = Some(cells);
            run_of(id, vec![c])
        };
        // Cell 0 of [0, 1] in one run, cell 0 of [0, 1, 2] in the other:
        // which cells they ran with is not part of the cell.
        let a = together(1, vec![0, 1]);
        let b = together(2, vec![0, 1, 2]);
        assert!(compare_runs(&a, &[&b]).rows[0].versus[0].is_some());
        let alone = run_of(3, vec![timer_cell("idle", ms, 20, 10)]);
        assert!(compare_runs(&a, &[&alone]).rows[0].versus[0].is_none());
        assert_eq!(
            CellKey::of(&a.cells[0]).to_string(),
            "timer/idle/fifo:95/together"
        );
    }
}
