//! What a study's run measured, in the form the pairing reads: per cell
//! its workload, duration and histograms (per CPU), and the forecast's
//! worst case per hour, day and week where latscope makes one; per micro
//! benchmark its result. Built from a stored run, or written by hand in
//! tests.

use latscope_model::{MicroResult, Nanos};
use latscope_stats::forecast::{forecast_report, ForecastOptions, Provenance};
use latscope_stats::{Histogram, RunResult};

/// One metric of one cell on one CPU (`None`: not per CPU).
#[derive(Clone, Debug)]
pub struct MetricFigures {
    pub name: String,
    pub cpu: Option<u32>,
    pub histogram: Histogram,
}

/// The forecast worst case over one horizon: the latency (ns) and
/// whether it was read from the data or extrapolated, or why there is none.
pub type HorizonFigure = Result<(u64, Provenance), String>;

/// A metric's forecast worst case per hour, day and week (continuous use).
#[derive(Clone, Debug)]
pub struct ForecastFigures {
    pub metric: String,
    pub hour: HorizonFigure,
    pub day: HorizonFigure,
    pub week: HorizonFigure,
}

/// One cell of the run.
#[derive(Clone, Debug)]
pub struct CellFigures {
    pub index: u32,
    pub workload: String,
    pub duration: Nanos,
    pub metrics: Vec<MetricFigures>,
    pub forecasts: Vec<ForecastFigures>,
}

impl CellFigures {
    /// `name`'s histogram, its CPUs merged.
    pub fn merged(&self, name: &str) -> Option<Histogram> {
        merge(self.metrics.iter().filter(|m| m.name == name))
    }

    /// The metric whose name starts with `prefix` with the largest
    /// maximum (its CPUs merged), with its name's rest (`TIMER` of
    /// `softirq.delay.TIMER`).
    pub fn worst_of_family(&self, prefix: &str) -> Option<(String, Histogram)> {
        let mut names: Vec<&str> = self
            .metrics
            .iter()
            .filter_map(|m| m.name.strip_prefix(prefix))
            .collect();
        names.sort_unstable();
        names.dedup();
        names
            .into_iter()
            .filter_map(|rest| Some((rest.to_string(), self.merged(&format!("{prefix}{rest}"))?)))
            .max_by_key(|(_, h)| h.max().map(|n| n.0).unwrap_or(0))
    }

    /// The forecast of `metric`, if one was made.
    pub fn forecast(&self, metric: &str) -> Option<&ForecastFigures> {
        self.forecasts.iter().find(|f| f.metric == metric)
    }
}

fn merge<'a>(metrics: impl Iterator<Item = &'a MetricFigures>) -> Option<Histogram> {
    let mut out: Option<Histogram> = None;
    for m in metrics {
        match &mut out {
            Some(h) => h.merge(&m.histogram),
            None => out = Some(m.histogram.clone()),
        }
    }
    out.filter(|h| !h.is_empty())
}

/// Everything a study's run measured.
#[derive(Clone, Debug, Default)]
pub struct RunFigures {
    /// The stored run's id (`None` in tests).
    pub run_id: Option<i64>,
    pub cells: Vec<CellFigures>,
    pub micro: Vec<MicroResult>,
}

impl RunFigures {
    /// The figures of a stored run (and its micro results), with the
    /// forecast of every metric latscope forecasts.
    pub fn from_run(run: &RunResult, micro: Vec<MicroResult>) -> RunFigures {
        let report = forecast_report(run, &[], &[], &ForecastOptions::new()).ok();
        let cells = run
            .cells
            .iter()
            .map(|c| {
                let forecasts = report
                    .as_ref()
                    .and_then(|r| r.cells.iter().find(|f| f.index == c.meta.index))
                    .map(|f| {
                        f.metrics
                            .iter()
                            .map(|m| ForecastFigures {
                                metric: m.name.clone(),
                                hour: horizon(&m.worst_case.hour),
                                day: horizon(&m.worst_case.day),
                                week: horizon(&m.worst_case.week),
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                CellFigures {
                    index: c.meta.index,
                    workload: c.meta.workload.clone(),
                    duration: c.meta.duration_ns,
                    metrics: c
                        .metrics
                        .iter()
                        .map(|m| MetricFigures {
                            name: m.name.clone(),
                            cpu: m.cpu.map(|c| c.0),
                            histogram: m.histogram.clone(),
                        })
                        .collect(),
                    forecasts,
                }
            })
            .collect();
        RunFigures {
            run_id: Some(run.meta.id.0),
            cells,
            micro,
        }
    }

    /// The cell numbered `index`.
    pub fn cell(&self, index: u32) -> Option<&CellFigures> {
        self.cells.iter().find(|c| c.index == index)
    }

    /// The micro result of benchmark `id` that ran.
    pub fn micro(&self, id: &str) -> Option<&MicroResult> {
        self.micro.iter().find(|r| r.bench == id)
    }
}

fn horizon(h: &latscope_stats::forecast::HorizonForecast) -> HorizonFigure {
    match &h.estimate {
        Ok(e) => Ok((e.latency_ns, e.provenance)),
        Err(e) => Err(e.to_string()),
    }
}
