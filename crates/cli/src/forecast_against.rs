//! `latscope forecast TIMER_RUN --against APP_RUN`: the underrun rate the
//! timer run forecasts for each application-probe cell's scheme, beside
//! the underruns that cell counted, with the exact test
//! ([`latscope_stats::forecast::pairing`], docs/app-probe.md). Either side
//! may name several runs (`2,4,6`), the blocks of an interleaved
//! measurement, whose cells are pooled per scheme and workload. Exit 3
//! when any forecast is refuted.

use anyhow::Context;
use latscope_report::stored::{stored_pairing, StoredError};
use latscope_stats::forecast::pairing::PairingError;

use crate::args::ForecastArgs;
use crate::exit::{self, Exit};

pub fn against(args: &ForecastArgs, app_runs: &str) -> Result<i32, Exit> {
    let store = latscope_store::Store::open_existing(&args.store.store)?;
    let paired = stored_pairing(&store, &args.run, app_runs).map_err(|e| match e {
        StoredError::NamedTwice { .. } => Exit::usage(e),
        StoredError::Pairing {
            error,
            timer_runs,
            app_runs,
        } => refusal(*error, &names(&timer_runs), &names(&app_runs)),
        e => Exit::from(anyhow::Error::from(e)),
    })?;
    let refuted = paired.pairs.iter().any(|p| p.comparison.refuted);
    let text = if args.json {
        let doc =
            latscope_report::pairing_json(&paired.timer_runs, &paired.app_runs, &paired.pairs);
        serde_json::to_string_pretty(&doc).context("cannot write JSON")? + "\n"
    } else {
        crate::colour::verdicts(&latscope_report::pairing_text(&paired.pairs))
    };
    crate::output::print(&text);
    Ok(if refuted { exit::THRESHOLD } else { exit::OK })
}

/// Run ids as the user lists them: `1,3`.
fn names(ids: &[i64]) -> String {
    let ids: Vec<String> = ids.iter().map(i64::to_string).collect();
    ids.join(",")
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
