//! The run's history: the cumulative histograms stored at its checkpoints
//! (every ten seconds by default), from which the histogram of any part of
//! the run between two checkpoints is exact ([`Histogram::since`]).
//!
//! Two checks need it:
//!
//! * **the out-of-sample test of the tail fit itself** ([`validate_fit`]):
//!   the same checked model ([`Measured`]: the threshold chosen by
//!   stability, the extremal index from the part's per-second maxima) is
//!   fitted to the histogram at the checkpoint nearest two thirds of the
//!   run, predicts how many seconds of the rest hold a sample above a level
//!   `L`, and the count seen there (from the per-second maxima) is compared
//!   with an exact Poisson test. `L` is where the fit expects about
//!   [`super::diagnostics::VALIDATION_EXPECTED`] clusters in the rest, and
//!   never below the fit's threshold;
//! * **forecasts per part** of a run that changed ([`part_forecasts`]): the
//!   change points found in the per-second maxima
//!   ([`super::checks::segments`]) are moved to the nearest checkpoint, and
//!   each part gets its own checked model and pseudo worst cases, so that a
//!   run whose load changed half-way is not forecast as one mixture.
//!
//! Without stored checkpoints (runs from before schema 8, or imported ones)
//! the validation falls back to the per-second maxima alone
//! ([`super::diagnostics::validate`]) and no part forecasts are made.

use latscope_model::Nanos;
use serde::Serialize;

use crate::Histogram;

use super::checks::ALPHA;
use super::pseudo::PseudoWorstCases;
use super::validation::{
    poisson_two_sided, validation_level, CpuSeconds, Validation, ValidationMethod,
    VALIDATION_EXPECTED,
};
use super::{Measured, TailOptions, PERMISSIBLE_MISS_INTERVALS};

/// Fewest seconds (of the cell) the first part of the validation covers.
pub const MIN_FIT_SECONDS: f64 = 30.0;
/// Fewest seconds (of the cell) the tested part covers.
pub const MIN_TEST_SECONDS: f64 = 20.0;
/// Shortest part (seconds of the cell) a run is split into.
pub const MIN_PART_SECONDS: f64 = 30.0;

/// A metric's cumulative histograms (its CPUs pooled) at a cell's
/// checkpoints, and what a refit needs.
#[derive(Clone, Copy, Debug)]
pub struct History<'a> {
    /// `(cell time, cumulative histogram)`, ascending; the whole run's
    /// histogram is the end.
    pub snapshots: &'a [(Nanos, Histogram)],
    /// The cell's duration (per CPU).
    pub cell_duration: Nanos,
    pub tail: &'a TailOptions,
}

impl History<'_> {
    fn cell_s(&self) -> f64 {
        self.cell_duration.0 as f64 / 1e9
    }

    /// The histogram between cell times `from` and `to` (`None` for an end
    /// of the run), or `None` when the checkpoints do not add up.
    fn between(
        &self,
        whole: &Histogram,
        from: Option<usize>,
        to: Option<usize>,
    ) -> Option<Histogram> {
        let end = match to {
            Some(i) => &self.snapshots.get(i)?.1,
            None => whole,
        };
        match from {
            Some(i) => end.since(&self.snapshots.get(i)?.1),
            None => Some(end.clone()),
        }
    }
}

fn secs(n: Nanos) -> f64 {
    n.0 as f64 / 1e9
}

/// The per-second maxima of seconds `[from, to)` of every CPU.
fn maxima_between(cpus: &[CpuSeconds<'_>], from: usize, to: usize) -> Vec<Vec<u64>> {
    cpus.iter()
        .map(|c| {
            let to = to.min(c.seconds.len());
            let from = from.min(to);
            c.seconds[from..to].iter().map(|s| s.max).collect()
        })
        .collect()
}

/// The out-of-sample test of the checked tail model of `m` (see the module
/// documentation), or why there is none.
pub fn validate_fit(
    m: &Measured<'_>,
    cpus: &[CpuSeconds<'_>],
    history: &History<'_>,
) -> Result<Validation, String> {
    let total = history.cell_s();
    if total < MIN_FIT_SECONDS + MIN_TEST_SECONDS {
        return Err(format!(
            "not validated: the run is {total:.0} s long; fitting {MIN_FIT_SECONDS:.0} s and testing {MIN_TEST_SECONDS:.0} s needs {:.0} more",
            MIN_FIT_SECONDS + MIN_TEST_SECONDS - total
        ));
    }
    let target = total * 2.0 / 3.0;
    let (index, (at, first)) = history
        .snapshots
        .iter()
        .enumerate()
        .filter(|(_, (at, _))| {
            let s = secs(*at);
            s >= MIN_FIT_SECONDS && total - s >= MIN_TEST_SECONDS
        })
        .min_by(|a, b| {
            let da = (secs(a.1 .0) - target).abs();
            let db = (secs(b.1 .0) - target).abs();
            da.total_cmp(&db)
        })
        .ok_or_else(|| {
            "not validated: no checkpoint leaves 30 s to fit and 20 s to test".to_string()
        })?;
    let later = history
        .between(m.histogram(), Some(index), None)
        .ok_or_else(|| "not validated: the stored checkpoints do not add up".to_string())?;
    let ncpu = cpus.len().max(1) as u64;
    let cut = secs(*at).round() as usize;
    let first_maxima = maxima_between(cpus, 0, cut);
    let first_series: Vec<&[u64]> = first_maxima.iter().map(Vec::as_slice).collect();
    let fitted = Measured::new(first, Nanos(at.0.saturating_mul(ncpu)), false, history.tail)
        .map_err(|e| format!("not validated: {e} in the first {:.0} s", secs(*at)))?
        .with_timeline(&first_series);
    let fit = fitted.tail().map_err(|e| {
        format!(
            "not validated: no fit to the first {:.0} s ({e})",
            secs(*at)
        )
    })?;
    let theta = fitted.theta();
    let n_later = later.count() as f64;
    // The seconds of the rest that hold samples (an empty one can hold no
    // exceedance, and is no trial).
    let late_seconds: Vec<u64> = cpus
        .iter()
        .flat_map(|c| c.seconds.iter().skip(cut))
        .filter(|s| s.count > 0)
        .map(|s| s.max)
        .collect();
    let s_later = late_seconds.len() as f64;
    if n_later <= 0.0 || s_later <= 0.0 {
        return Err("not validated: the rest of the run holds no samples".to_string());
    }
    // The level about VALIDATION_EXPECTED clusters of the rest exceed.
    let (level_ns, tail_p) = validation_level(fit, VALIDATION_EXPECTED / (theta * n_later));
    let clusters = theta * n_later * tail_p;
    // Clusters arrive as a Poisson process: a second holds at least one
    // with probability 1 − e^(−c/S), as the extremal index assumes.
    let predicted = s_later * -(-clusters / s_later).exp_m1();
    let observed = late_seconds.iter().filter(|&&v| v > level_ns).count() as u64;
    let p_value = poisson_two_sided(observed, predicted);
    Ok(Validation {
        method: ValidationMethod::TailFit,
        fit_seconds: (secs(*at) * ncpu as f64).round() as usize,
        test_seconds: late_seconds.len(),
        level_ns,
        predicted,
        observed,
        p_value,
        passed: p_value >= ALPHA,
    })
}

/// The forecast of one part of a run that changed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PartForecast {
    /// Cell seconds the part covers.
    pub from_s: f64,
    pub to_s: f64,
    pub samples: u64,
    /// Its largest sample (at bucket resolution where it is not the run's
    /// latest record).
    pub max_ns: u64,
    /// Its tail model's threshold and shape, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threshold_ns: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shape: Option<f64>,
    /// Its pseudo worst cases, by the same rules as the whole run's.
    pub pseudo_worst_case: PseudoWorstCases,
}

/// Where a cut at cell second `s` goes: the nearest checkpoint's index.
fn nearest_checkpoint(snapshots: &[(Nanos, Histogram)], s: f64) -> Option<usize> {
    snapshots
        .iter()
        .enumerate()
        .min_by(|a, b| {
            (secs(a.1 .0) - s)
                .abs()
                .total_cmp(&(secs(b.1 .0) - s).abs())
        })
        .map(|(i, _)| i)
}

/// The checkpoints a run is cut at, from change points at cell seconds
/// `cuts`: each moved to the nearest checkpoint, and dropped where it would
/// leave a part shorter than [`MIN_PART_SECONDS`].
pub fn cut_points(history: &History<'_>, cuts: &[usize]) -> Vec<usize> {
    let total = history.cell_s();
    let mut at: Vec<usize> = cuts
        .iter()
        .filter_map(|&c| nearest_checkpoint(history.snapshots, c as f64))
        .collect();
    at.sort_unstable();
    at.dedup();
    let mut kept = Vec::new();
    let mut last = 0.0;
    for i in at {
        let s = secs(history.snapshots[i].0);
        if s - last >= MIN_PART_SECONDS && total - s >= MIN_PART_SECONDS {
            kept.push(i);
            last = s;
        }
    }
    kept
}

/// The forecasts of the parts of `m`'s run between the checkpoints `cuts`
/// ([`cut_points`]); empty without a cut.
pub fn part_forecasts(
    m: &Measured<'_>,
    cpus: &[CpuSeconds<'_>],
    history: &History<'_>,
    cuts: &[usize],
) -> Vec<PartForecast> {
    if cuts.is_empty() {
        return Vec::new();
    }
    let ncpu = cpus.len().max(1) as u64;
    let mut bounds: Vec<Option<usize>> = vec![None];
    bounds.extend(cuts.iter().map(|&c| Some(c)));
    bounds.push(None);
    let time = |b: Option<usize>, end: Nanos| b.map_or(end, |i| history.snapshots[i].0);
    let mut parts = Vec::new();
    for w in bounds.windows(2) {
        let (from, to) = (w[0], w[1]);
        let from_t = time(from, Nanos::ZERO);
        let to_t = time(to, history.cell_duration);
        let Some(h) = history.between(m.histogram(), from, to) else {
            return Vec::new();
        };
        let span = Nanos(to_t.0.saturating_sub(from_t.0).saturating_mul(ncpu));
        let (a, b) = (secs(from_t).round() as usize, secs(to_t).round() as usize);
        let maxima = maxima_between(cpus, a, b);
        let series: Vec<&[u64]> = maxima.iter().map(Vec::as_slice).collect();
        let part = match Measured::new(&h, span, false, history.tail) {
            Ok(p) => p.with_timeline(&series),
            Err(_) => continue,
        };
        let tail = part.tail().ok();
        parts.push(PartForecast {
            from_s: secs(from_t),
            to_s: secs(to_t),
            samples: h.count(),
            max_ns: h.max().map_or(0, |x| x.0),
            threshold_ns: tail.map(|t| t.threshold_ns),
            shape: tail.map(|t| t.fit.gpd.shape),
            pseudo_worst_case: PseudoWorstCases(
                PERMISSIBLE_MISS_INTERVALS
                    .iter()
                    .map(|&(label, s)| (label, part.exceeded_once_per(s)))
                    .collect(),
            ),
        });
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forecast::diagnostics::diagnose;
    use crate::forecast::test_rng::Rng;
    use crate::SecondStats;

    /// A simulated cell on one CPU: `seconds` seconds of `per_second`
    /// samples drawn by `draw(second)`, with a checkpoint every ten seconds.
    struct Cell {
        whole: Histogram,
        snapshots: Vec<(Nanos, Histogram)>,
        seconds: Vec<SecondStats>,
    }

    fn cell(seconds: usize, per_second: usize, mut draw: impl FnMut(usize) -> u64) -> Cell {
        let mut whole = Histogram::new();
        let mut snapshots = Vec::new();
        let mut stats = Vec::new();
        for s in 0..seconds {
            let mut max = 0;
            for _ in 0..per_second {
                let v = draw(s);
                whole.record(v);
                max = max.max(v);
            }
            stats.push(SecondStats {
                count: per_second as u64,
                max,
                above: 0,
            });
            if (s + 1) % 10 == 0 && s + 1 < seconds {
                snapshots.push((Nanos::from_secs(s as u64 + 1), whole.clone()));
            }
        }
        Cell {
            whole,
            snapshots,
            seconds: stats,
        }
    }

    /// Wake-up latencies: 20 µs plus an exponential of mean 5 µs, times
    /// `scale`.
    fn latency(rng: &mut Rng, scale: f64) -> u64 {
        ((20_000.0 - rng.uniform().ln() * 5_000.0) * scale) as u64
    }

    fn diagnose_cell(c: &Cell, tail: &TailOptions) -> crate::forecast::diagnostics::Diagnostics {
        let d = Nanos::from_secs(c.seconds.len() as u64);
        let series = [c.seconds.iter().map(|s| s.max).collect::<Vec<u64>>()];
        let series: Vec<&[u64]> = series.iter().map(Vec::as_slice).collect();
        let m = Measured::new(&c.whole, d, false, tail)
            .unwrap()
            .with_timeline(&series);
        let history = History {
            snapshots: &c.snapshots,
            cell_duration: d,
            tail,
        };
        diagnose(
            &m,
            &[CpuSeconds {
                cpu: Some(0),
                seconds: &c.seconds,
            }],
            Some(&history),
        )
    }

    /// The refitted model predicts the rest of a stationary run in nearly
    /// every seed (a test at the 1 % level fails about one in a hundred),
    /// and a stationary run is not cut.
    #[test]
    fn the_tail_model_is_validated_on_a_stationary_run() {
        let tail = TailOptions::default();
        let mut passed = 0;
        for seed in 1..=20u64 {
            let mut rng = Rng(seed);
            let c = cell(300, 200, |_| latency(&mut rng, 1.0));
            let d = Nanos::from_secs(300);
            let m = Measured::new(&c.whole, d, false, &tail).unwrap();
            let history = History {
                snapshots: &c.snapshots,
                cell_duration: d,
                tail: &tail,
            };
            let cpus = [CpuSeconds {
                cpu: Some(0),
                seconds: &c.seconds,
            }];
            let v = validate_fit(&m, &cpus, &history).expect("validated");
            assert_eq!(v.method, ValidationMethod::TailFit);
            assert_eq!(v.fit_seconds, 200, "{v:?}");
            assert_eq!(v.test_seconds, 100, "{v:?}");
            assert!(v.predicted > 3.0 && v.predicted < 15.0, "{v:?}");
            passed += usize::from(v.passed);
        }
        assert!(passed >= 18, "{passed} of 20 validated");
        let mut rng = Rng(1);
        let c = cell(300, 200, |_| latency(&mut rng, 1.0));
        assert!(diagnose_cell(&c, &tail).parts.is_empty());
    }

    /// A run whose latencies grow by half after 200 s: the refitted model
    /// fails on the rest, and the run is forecast in two parts cut at the
    /// checkpoint of 200 s, the later one worse.
    #[test]
    fn a_changed_run_fails_validation_and_is_forecast_per_part() {
        let tail = TailOptions::default();
        let mut rng = Rng(7);
        let c = cell(300, 200, |s| {
            latency(&mut rng, if s >= 200 { 1.5 } else { 1.0 })
        });
        let d = diagnose_cell(&c, &tail);
        let v = d.validation.expect("a validation");
        assert!(!v.passed, "{v:?}");
        assert!(v.observed as f64 > 3.0 * v.predicted, "{v:?}");
        assert_eq!(d.parts.len(), 2, "{:?}", d.parts);
        let (a, b) = (&d.parts[0], &d.parts[1]);
        assert_eq!((a.from_s, a.to_s, b.to_s), (0.0, 200.0, 300.0));
        assert_eq!(a.samples + b.samples, c.whole.count());
        assert_eq!(b.max_ns, c.whole.max().unwrap().0);
        let ten = |p: &PartForecast| p.pseudo_worst_case.0[0].1.clone().map(|e| e.latency_ns);
        assert!(ten(b).unwrap() > ten(a).unwrap(), "{:?}", d.parts);
    }

    #[test]
    fn cuts_move_to_checkpoints_and_short_parts_are_not_made() {
        let snapshots: Vec<(Nanos, Histogram)> = (1..30)
            .map(|i| (Nanos::from_secs(i * 10), Histogram::new()))
            .collect();
        let tail = TailOptions::default();
        let h = History {
            snapshots: &snapshots,
            cell_duration: Nanos::from_secs(300),
            tail: &tail,
        };
        // 104 -> 100 s (index 9); 117 -> 120 s is only 20 s later; 285
        // leaves 15 s.
        assert_eq!(cut_points(&h, &[117, 104, 285]), vec![9]);
        assert_eq!(cut_points(&h, &[12, 151]), vec![14]);
    }

    /// A short run says what it lacks; one without a checkpoint in reach
    /// says so.
    #[test]
    fn a_short_run_is_not_validated() {
        let tail = TailOptions::default();
        let mut rng = Rng(3);
        let c = cell(40, 200, |_| latency(&mut rng, 1.0));
        let d = diagnose_cell(&c, &tail);
        let why = d.validation_skipped.expect("skipped");
        assert!(why.contains("needs 10 more"), "{why}");
    }
}
