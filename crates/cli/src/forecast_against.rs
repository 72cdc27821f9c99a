//! `latscope forecast TIMER_RUN --against APP_RUN`: the underrun rate the
//! timer run forecasts for each application-probe cell's scheme, beside
//! the underruns that cell counted, with the exact test
//! ([`latscope_stats::forecast::pairing`], docs/app-probe.md). Either side
//! may name several runs (`2,4,6`), the blocks of an interleaved
//! measurement, whose cells are pooled per scheme and workload. Exit 3
//! when any forecast is refuted.

use anyhow::Context;
use latscope_stats::forecast::pairing::{pairs, PairingError};
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
        let doc = latscope_report::pairing_json(&ids(&timers), &ids(&apps), &pairs);
        serde_json::to_string_pretty(&doc).context("cannot write JSON")? + "\n"
    } else {
        crate::colour::verdicts(&latscope_report::pairing_text(&pairs))
    };
    crate::output::print(&text);
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

#[cfg(test)]
mod tests {
    use super::*;

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
