//! Application-probe cells held against timer cells: for each scheme
//! (period, buffers, work, preset) and workload, the underruns its
//! pipelines counted beside those the timer cells of that workload predict
//! ([`compare_underruns`]), with the preset's verdict checked where the
//! cells ran one (`latscope forecast TIMER --against APP`, docs/app-probe.md).
//!
//! The cells may come from several runs, the blocks of an interleaved
//! measurement in which timer and pipeline take turns so that both meet
//! the same disturbances: app cells of one scheme and workload are pooled
//! (their underruns and buffers added), and so are the timer cells of that
//! workload (their histograms merged over every CPU and block, their
//! measured time added; the per-deadline histogram only when every block
//! has one). Where the timer cells hold one workload only, they stand for
//! every app cell's.

use latscope_model::{metric, CellSettings, Nanos};
use serde::Serialize;

use super::{
    compare_underruns, pool_cpus, AppPreset, BufferScheme, Comparison, Compute, ForecastError,
    Losses, Measured, ObservedUnderruns, Pooled, TailOptions, Verdict,
};
use crate::{CellResult, Histogram, MetricResult};

/// Why cells could not be held against each other.
#[derive(Debug, thiserror::Error)]
pub enum PairingError {
    #[error("no timer.latency to forecast from: give a timer-probe run")]
    NoTimerLatency,
    #[error("no timer cell under workload '{workload}' for app cell {app_cell}")]
    NoTimerCell { workload: String, app_cell: u32 },
    #[error("no app-probe cell with buffers: give a `latscope run --probe app` run")]
    NoAppCell,
    #[error("app cell {app_cell}: {reason}")]
    Scheme { app_cell: u32, reason: String },
    #[error("cannot forecast: {0}")]
    Forecast(#[from] ForecastError),
}

/// One cell of one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CellRef {
    pub run: i64,
    pub cell: u32,
}

/// The app cells of one scheme under one workload, held against the timer
/// cells of that workload.
#[derive(Debug, Serialize)]
pub struct Pair {
    pub timer_cells: Vec<CellRef>,
    pub app_cells: Vec<CellRef>,
    pub workload: String,
    pub app_seconds: f64,
    pub timer_seconds: f64,
    #[serde(flatten)]
    pub comparison: Comparison,
    /// For a cell run with `--app NAME`: the forecast's verdict for the
    /// preset and the pipeline's own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preset: Option<PresetCheck>,
}

#[derive(Debug, Serialize)]
pub struct PresetCheck {
    pub app: String,
    pub forecast: Verdict,
    /// The pipeline's observed mean time between underruns, seconds (a
    /// lower bound when none was seen).
    pub pipeline_mttf_s: f64,
    pub pipeline_pass: bool,
    /// The pipeline's interval excludes the target.
    pub pipeline_conclusive: bool,
    /// Forecast and pipeline agree on PASS or FAIL.
    pub confirmed: bool,
}

/// What app cells share to be pooled: the workload and the whole scheme.
#[derive(Clone, Debug, PartialEq, Eq)]
struct SchemeKey {
    workload: String,
    period_ns: u64,
    buffers: u32,
    compute_ns: u64,
    app: Option<String>,
}

/// Every scheme's pooled app cells (`(run, cell)`) against the timer
/// cells of its workload, in the order each scheme was first measured.
pub fn pairs(
    timers: &[(i64, &CellResult)],
    apps: &[(i64, &CellResult)],
) -> Result<Vec<Pair>, PairingError> {
    let timer_cells: Vec<(i64, &CellResult)> = timers
        .iter()
        .filter(|(_, c)| c.metrics.iter().any(|m| m.name == metric::TIMER_LATENCY))
        .copied()
        .collect();
    if timer_cells.is_empty() {
        return Err(PairingError::NoTimerLatency);
    }
    let mut out = Vec::new();
    for (key, group) in app_groups(apps) {
        let timer = timer_cells_for(&timer_cells, &key.workload).ok_or_else(|| {
            PairingError::NoTimerCell {
                workload: key.workload.clone(),
                app_cell: group[0].1.meta.index,
            }
        })?;
        if let Some(pair) = pair(&key, &group, &timer)? {
            out.push(pair);
        }
    }
    if out.is_empty() {
        return Err(PairingError::NoAppCell);
    }
    Ok(out)
}

/// The app cells, grouped by workload and scheme, in the order each group
/// was first measured.
fn app_groups<'a>(apps: &[(i64, &'a CellResult)]) -> Vec<(SchemeKey, Vec<(i64, &'a CellResult)>)> {
    let mut groups: Vec<(SchemeKey, Vec<(i64, &'a CellResult)>)> = Vec::new();
    for &(run, cell) in apps {
        let CellSettings::App(s) = &cell.meta.settings else {
            continue;
        };
        let key = SchemeKey {
            workload: cell.meta.workload.clone(),
            period_ns: s.period_ns.0,
            buffers: s.buffers,
            compute_ns: s.compute_ns.0,
            app: s.app.clone(),
        };
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, group)) => group.push((run, cell)),
            None => groups.push((key, vec![(run, cell)])),
        }
    }
    groups
}

/// The timer cells of `workload`; where none is, and every timer cell has
/// one workload, all of them.
fn timer_cells_for<'a>(
    timer_cells: &[(i64, &'a CellResult)],
    workload: &str,
) -> Option<Vec<(i64, &'a CellResult)>> {
    let same: Vec<_> = timer_cells
        .iter()
        .filter(|(_, c)| c.meta.workload == workload)
        .copied()
        .collect();
    if !same.is_empty() {
        return Some(same);
    }
    let first = &timer_cells.first()?.1.meta.workload;
    timer_cells
        .iter()
        .all(|(_, c)| &c.meta.workload == first)
        .then(|| timer_cells.to_vec())
}

/// The timer cells' `timer.latency` over every CPU and cell: histograms
/// merged, measured time added. The per-deadline histogram is kept only
/// when every cell has one.
fn pool_timer_cells(cells: &[(i64, &CellResult)]) -> Option<Pooled> {
    let mut metric = MetricResult::new(metric::TIMER_LATENCY, None);
    let mut corrected = Some(Histogram::new());
    let mut measured = 0u64;
    let mut cpus = Vec::new();
    let mut any = false;
    for (_, cell) in cells {
        let Some(p) = pool_cpus(cell, metric::TIMER_LATENCY, &[], &[]) else {
            continue;
        };
        any = true;
        metric.histogram.merge(&p.metric.histogram);
        corrected = match (corrected, &p.metric.corrected) {
            (Some(mut all), Some(c)) => {
                all.merge(c);
                Some(all)
            }
            _ => None,
        };
        measured = measured.saturating_add(p.measured.0);
        for c in p.cpus {
            if !cpus.contains(&c) {
                cpus.push(c);
            }
        }
    }
    metric.corrected = corrected;
    any.then(|| Pooled {
        metric,
        cpus,
        measured: Nanos(measured),
        timeline: Vec::new(),
        parts: Vec::new(),
        snapshots: Vec::new(),
    })
}

fn seconds(cells: &[(i64, &CellResult)]) -> f64 {
    cells
        .iter()
        .map(|(_, c)| c.meta.duration_ns.0 as f64 / 1e9)
        .sum()
}

fn refs(cells: &[(i64, &CellResult)]) -> Vec<CellRef> {
    cells
        .iter()
        .map(|(run, c)| CellRef {
            run: *run,
            cell: c.meta.index,
        })
        .collect()
}

/// One scheme's app cells against its timer cells; `None` when either
/// side has nothing to count.
fn pair(
    key: &SchemeKey,
    apps: &[(i64, &CellResult)],
    timers: &[(i64, &CellResult)],
) -> Result<Option<Pair>, PairingError> {
    let scheme = BufferScheme::new(key.period_ns, key.buffers, Compute::Nanos(key.compute_ns))
        .map_err(|e| PairingError::Scheme {
            app_cell: apps[0].1.meta.index,
            reason: e.to_string(),
        })?;
    let Some(pooled) = pool_timer_cells(timers) else {
        return Ok(None);
    };
    let wake = Measured::wakeups(&pooled.metric, pooled.measured, &TailOptions::default())?;
    let count = |name: &str| -> u64 {
        apps.iter()
            .flat_map(|(_, c)| c.metrics.iter())
            .filter(|m| m.name == name)
            .map(|m| m.histogram.count())
            .sum()
    };
    let observed = ObservedUnderruns {
        underruns: count(metric::APP_UNDERRUN),
        buffers: count(metric::APP_RESPONSE),
    };
    if observed.buffers == 0 {
        return Ok(None);
    }
    let comparison = compare_underruns(&wake, &scheme, observed);
    let preset = key
        .app
        .as_deref()
        .and_then(AppPreset::find)
        .map(|p| preset_check(p, &pooled, &wake, &comparison))
        .transpose()?;
    Ok(Some(Pair {
        timer_cells: refs(timers),
        app_cells: refs(apps),
        workload: key.workload.clone(),
        app_seconds: seconds(apps),
        timer_seconds: seconds(timers),
        comparison,
        preset,
    }))
}

/// The preset's verdict as `latscope forecast --app` gives it (late
/// wake-ups for a preset that loses one buffer per stall, late deadlines
/// for one that loses every late deadline), and the pipeline's, which
/// counts one underrun per stall: for the latter presets a lower count
/// than their late deadlines, so the pipeline's FAIL is conclusive and
/// its PASS optimistic.
fn preset_check(
    preset: &AppPreset,
    pooled: &Pooled,
    wake: &Measured<'_>,
    c: &Comparison,
) -> Result<PresetCheck, PairingError> {
    let forecast = match preset.losses {
        Losses::PerStall => super::verdict(preset, wake),
        Losses::PerDeadline => {
            let dl = Measured::deadlines(&pooled.metric, pooled.measured, &TailOptions::default())?;
            super::verdict(preset, &dl)
        }
    };
    let o = &c.observed;
    let hours = 1.0 / 3600.0;
    let mttf = |per_hour: f64| {
        if per_hour > 0.0 {
            1.0 / (per_hour * hours)
        } else {
            f64::INFINITY
        }
    };
    let k = o.events.unwrap_or(0);
    let pipeline_mttf_s = if k == 0 {
        o.buffers as f64 * c.scheme.period_s()
    } else {
        mttf(o.per_hour)
    };
    let pipeline_pass = pipeline_mttf_s >= preset.target_s;
    let low = o.interval_per_hour.high.map_or(0.0, mttf);
    let high = mttf(o.interval_per_hour.low);
    let pipeline_conclusive = if pipeline_pass {
        low >= preset.target_s
    } else {
        high < preset.target_s
    };
    Ok(PresetCheck {
        app: preset.name.to_string(),
        confirmed: forecast.pass == pipeline_pass,
        forecast,
        pipeline_mttf_s,
        pipeline_pass,
        pipeline_conclusive,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::{AppSettings, CellMeta, CpuId, TimerSettings};

    const SECOND: u64 = 1_000_000_000;

    fn cell(
        index: u32,
        workload: &str,
        settings: CellSettings,
        metrics: Vec<MetricResult>,
    ) -> CellResult {
        CellResult::new(
            CellMeta::new(index, workload, settings, Nanos(20 * SECOND)),
            metrics,
        )
    }

    /// A 20 s timer cell at 1 ms: 20,000 wake-ups, `late` of them 900 µs.
    fn timer(workload: &str, late: u64) -> CellResult {
        let mut m = MetricResult::new(metric::TIMER_LATENCY, Some(CpuId(0)));
        m.histogram.record_n(50_000, 20_000 - late);
        m.histogram.record_n(900_000, late);
        cell(
            0,
            workload,
            CellSettings::Timer(TimerSettings::default()),
            vec![m],
        )
    }

    /// A 20 s pipeline of 1 ms buffers: 20,000 buffers, `underruns` late.
    fn app(index: u32, workload: &str, buffers: u32, underruns: u64) -> CellResult {
        let settings = AppSettings {
            period_ns: Nanos(1_000_000),
            buffers,
            compute_ns: Nanos(600_000),
            ..AppSettings::default()
        };
        let mut u = MetricResult::new(metric::APP_UNDERRUN, Some(CpuId(0)));
        u.histogram.record_n(300_000, underruns);
        let mut r = MetricResult::new(metric::APP_RESPONSE, Some(CpuId(0)));
        r.histogram.record_n(700_000, 20_000);
        cell(index, workload, CellSettings::App(settings), vec![u, r])
    }

    #[test]
    fn interleaved_blocks_are_pooled_per_scheme_and_workload() {
        // Runs 1 and 3 timer blocks, 2 and 4 app blocks with two schemes each.
        let (t1, t3) = (timer("none", 10), timer("none", 30));
        let (a2, b2, a4, b4) = (
            app(0, "none", 2, 12),
            app(1, "none", 3, 0),
            app(0, "none", 2, 28),
            app(1, "none", 3, 0),
        );
        let timers = [(1, &t1), (3, &t3)];
        let apps = [(2, &a2), (2, &b2), (4, &a4), (4, &b4)];
        let pairs = pairs(&timers, &apps).unwrap();
        assert_eq!(pairs.len(), 2, "one comparison per scheme");
        let p = &pairs[0];
        assert_eq!(p.comparison.scheme.buffers, 2);
        let cells = |v: &[(i64, u32)]| -> Vec<CellRef> {
            v.iter().map(|&(run, cell)| CellRef { run, cell }).collect()
        };
        assert_eq!(p.timer_cells, cells(&[(1, 0), (3, 0)]));
        assert_eq!(p.app_cells, cells(&[(2, 0), (4, 0)]));
        assert_eq!((p.app_seconds, p.timer_seconds), (40.0, 40.0));
        // 40 of 40,000 wake-ups later than the 0.4 ms slack; 40 underruns
        // in 40,000 buffers: the same rate, not refuted.
        assert_eq!(p.comparison.predicted.events, Some(40));
        assert_eq!(p.comparison.predicted.buffers, 40_000);
        assert_eq!(p.comparison.observed.events, Some(40));
        assert_eq!(p.comparison.observed.buffers, 40_000);
        assert!(!p.comparison.refuted);
        // The second scheme has 1.4 ms of slack: nothing late on either side.
        assert_eq!(pairs[1].comparison.scheme.buffers, 3);
        assert_eq!(pairs[1].comparison.observed.events, Some(0));
        assert_eq!(pairs[1].app_cells, cells(&[(2, 1), (4, 1)]));
    }

    #[test]
    fn an_app_cell_meets_the_timer_cells_of_its_own_workload() {
        let (idle, busy) = (timer("none", 0), timer("cpu", 40));
        let a = app(0, "cpu", 2, 35);
        let p = pairs(&[(1, &idle), (2, &busy)], &[(3, &a)]).unwrap();
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].timer_cells, vec![CellRef { run: 2, cell: 0 }]);
        assert_eq!(p[0].comparison.predicted.events, Some(40));
        // No timer cell of the workload, and two workloads to choose from.
        let io = app(0, "io", 2, 1);
        let e = pairs(&[(1, &idle), (2, &busy)], &[(3, &io)]).err().unwrap();
        assert!(
            matches!(e, PairingError::NoTimerCell { ref workload, app_cell: 0 } if workload == "io"),
            "{e}"
        );
        // Timer cells of one workload stand for any app cell's.
        let p = pairs(&[(1, &idle)], &[(3, &io)]).unwrap();
        assert_eq!(p[0].timer_cells, vec![CellRef { run: 1, cell: 0 }]);
        // Neither side holds anything to compare.
        assert!(matches!(
            pairs(&[], &[(3, &io)]),
            Err(PairingError::NoTimerLatency)
        ));
        assert!(matches!(
            pairs(&[(1, &idle)], &[(2, &busy)]),
            Err(PairingError::NoAppCell)
        ));
    }
}
