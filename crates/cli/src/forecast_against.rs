//! `latscope forecast TIMER_RUN --against APP_RUN`: the underrun rate the
//! timer run forecasts for each application-probe cell's scheme, beside
//! the underruns that cell counted, with the exact test
//! ([`latscope_stats::forecast::pairing`], docs/app-probe.md). Either side
//! may name several runs (`2,4,6`), the blocks of an interleaved
//! measurement, whose cells are pooled per scheme and workload. Exit 3
//! when any forecast is refuted.

use anyhow::Context;
use latscope_stats::forecast::pairing::{pairs, CellRef, Pair, PairingError};
use latscope_stats::{CellResult, RunResult};

use crate::args::ForecastArgs;
use crate::exit::{self, Exit};

pub fn against(args: &ForecastArgs, app_runs: &str) -> Result<i32, Exit> {
    let store = latscope_store::Store::open_existing(&args.store.store)?;
    let timers = load_runs(&store, &args.run)?;
    let apps = load_runs(&store, app_runs)?;
    let names = |runs: &[RunResult]| {
        let ids: Vec<String> = runs.iter().map(|r| r.meta.id.0.to_string()).collect();
        ids.join(",")
    };
    let pairs = pairs(
        &cells(&timers).collect::<Vec<_>>(),
        &cells(&apps).collect::<Vec<_>>(),
    )
    .map_err(|e| refusal(e, &names(&timers), &names(&apps)))?;
    let refuted = pairs.iter().any(|p| p.comparison.refuted);
    let ids = |runs: &[RunResult]| runs.iter().map(|r| r.meta.id.0).collect::<Vec<_>>();
    let text = if args.json {
        let doc = serde_json::json!({
            "timer_run": timers[0].meta.id.0,
            "app_run": apps[0].meta.id.0,
            "timer_runs": ids(&timers),
            "app_runs": ids(&apps),
            "refute_at": latscope_stats::forecast::REFUTE_AT,
            "comparisons": pairs,
        });
        serde_json::to_string_pretty(&doc).context("cannot write JSON")? + "\n"
    } else {
        let mut t = String::new();
        for p in &pairs {
            t.push_str(&pair_text(p));
        }
        crate::colour::verdicts(&t)
    };
    crate::output::write(None, text.as_bytes(), crate::output::PUBLIC)?;
    Ok(if refuted { exit::THRESHOLD } else { exit::OK })
}

/// The runs `spec` names: one (an id, `latest`, `HOST:N`) or several
/// separated by commas, each once.
fn load_runs(store: &latscope_store::Store, spec: &str) -> Result<Vec<RunResult>, Exit> {
    let mut ids = Vec::new();
    for part in spec.split(',') {
        let id = store.resolve(part)?;
        if ids.contains(&id) {
            return Err(Exit::usage(format!(
                "run {} is named twice in '{spec}'",
                id.0
            )));
        }
        ids.push(id);
    }
    ids.into_iter()
        .map(|id| store.load_run(id).map_err(Exit::from))
        .collect()
}

/// A pairing refused, as one line naming the runs ("run 1,3 has no timer
/// cell …").
fn refusal(e: PairingError, timer_runs: &str, app_runs: &str) -> Exit {
    match e {
        PairingError::NoTimerLatency | PairingError::NoTimerCell { .. } => {
            Exit::usage(format!("run {timer_runs} has {}", e))
        }
        PairingError::NoAppCell => Exit::usage(format!("run {app_runs} has {}", e)),
        PairingError::Scheme { .. } => Exit::usage(e),
        PairingError::Forecast(_) => Exit::from(anyhow::Error::from(e)),
    }
}

fn cells(runs: &[RunResult]) -> impl Iterator<Item = (i64, &CellResult)> {
    runs.iter()
        .flat_map(|r| r.cells.iter().map(move |c| (r.meta.id.0, c)))
}

fn pair_text(p: &Pair) -> String {
    let c = &p.comparison;
    let s = &c.scheme;
    let ms = |ns: f64| ns / 1e6;
    let mut t = format!(
        "app {} ({}, {:.1} s) against timer {}: {:.3} ms x {} buffers, {:.3} ms compute, slack {:.3} ms\n",
        describe(&p.app_cells, None),
        p.workload,
        p.app_seconds,
        describe(&p.timer_cells, Some(p.timer_seconds)),
        ms(s.period_ns as f64),
        s.buffers,
        ms(s.compute_ns() as f64),
        ms(c.slack_ns as f64),
    );
    let line = |what: &str, r: &latscope_stats::forecast::Rate, source: String| {
        let hi = r
            .interval_per_hour
            .high
            .map_or("inf".to_string(), |h| format!("{h:.1}"));
        format!(
            "  {what:<10}{}{:.1} underruns/h  ({:.0}%: {:.1}-{hi})  {source}\n",
            if r.upper_bound { "< " } else { "" },
            r.per_hour,
            r.interval_per_hour.confidence * 100.0,
            r.interval_per_hour.low,
        )
    };
    let source = match c.predicted.events {
        Some(k) => format!(
            "{k} of {} wake-ups later than the slack",
            c.predicted.buffers
        ),
        None => format!(
            "extrapolated from the tail of {} wake-ups",
            c.predicted.buffers
        ),
    };
    t.push_str(&line("predicted", &c.predicted, source));
    t.push_str(&line(
        "observed",
        &c.observed,
        format!(
            "{} underruns in {} buffers",
            c.observed.events.unwrap_or(0),
            c.observed.buffers
        ),
    ));
    t.push_str(&format!("  test      {}: p = {:.3e}\n", c.test, c.p_value));
    t.push_str(&format!("  verdict   {}\n", c.verdict));
    if let Some(e) = &c.exposed {
        t.push_str(&format!(
            "  exposed   {:.1} underruns/h  ({:.0}%: {:.1}-{:.1})  the work exposed too: {} late + c x density ({} wake-ups in [s/2, 3s/2))\n",
            e.per_hour,
            e.interval_per_hour.confidence * 100.0,
            e.interval_per_hour.low,
            e.interval_per_hour.high.unwrap_or(f64::INFINITY),
            e.late,
            e.band,
        ));
        t.push_str(&format!("  verdict   {}\n", e.verdict));
    }
    if let Some(pc) = &p.preset {
        let word = |pass: bool| if pass { "PASS" } else { "FAIL" };
        t.push_str(&format!(
            "  preset    {}: forecast {} (MTTF {}{:.0} s), pipeline {} (MTTF {}{:.0} s{}), target {:.0} s: {}\n",
            pc.app,
            word(pc.forecast.pass),
            if pc.forecast.lower_bound { ">= " } else { "" },
            pc.forecast.mttf_s,
            word(pc.pipeline_pass),
            if c.observed.events == Some(0) { ">= " } else { "" },
            pc.pipeline_mttf_s,
            if pc.pipeline_conclusive { "" } else { ", inconclusive" },
            pc.forecast.target_s,
            if pc.confirmed { "confirmed" } else { "CONTRADICTED" },
        ));
    }
    t.push('\n');
    t
}

/// `run 3 cell 0`, or for cells pooled from several blocks `runs 3,5,7
/// (3 cells, 45.0 s)`.
fn describe(cells: &[CellRef], seconds: Option<f64>) -> String {
    if let [one] = cells {
        return format!("run {} cell {}", one.run, one.cell);
    }
    let mut runs: Vec<String> = Vec::new();
    for c in cells {
        let id = c.run.to_string();
        if !runs.contains(&id) {
            runs.push(id);
        }
    }
    let word = if runs.len() == 1 { "run" } else { "runs" };
    let time = seconds.map_or(String::new(), |s| format!(", {s:.1} s"));
    format!("{word} {} ({} cells{time})", runs.join(","), cells.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pooled_cells_are_named_by_their_runs_and_one_cell_by_itself() {
        let one = [CellRef { run: 3, cell: 0 }];
        assert_eq!(describe(&one, Some(20.0)), "run 3 cell 0");
        let two = [CellRef { run: 2, cell: 0 }, CellRef { run: 4, cell: 0 }];
        assert_eq!(describe(&two, None), "runs 2,4 (2 cells)");
        assert_eq!(describe(&two, Some(40.0)), "runs 2,4 (2 cells, 40.0 s)");
        let same_run = [CellRef { run: 5, cell: 0 }, CellRef { run: 5, cell: 1 }];
        assert_eq!(describe(&same_run, None), "run 5 (2 cells)");
    }

    #[test]
    fn a_refused_pairing_names_the_runs_as_before() {
        let e = refusal(PairingError::NoAppCell, "1", "2,4");
        assert_eq!(e.code, exit::USAGE);
        assert_eq!(
            e.error.to_string(),
            "run 2,4 has no app-probe cell with buffers: give a `latscope run --probe app` run"
        );
        let e = refusal(
            PairingError::NoTimerCell {
                workload: "io".into(),
                app_cell: 3,
            },
            "1,3",
            "2",
        );
        assert_eq!(
            e.error.to_string(),
            "run 1,3 has no timer cell under workload 'io' for app cell 3"
        );
    }
}
