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
        StoredError::Pairing { error, .. } if matches!(*error, PairingError::Forecast(_)) => {
            Exit::from(anyhow::Error::from(*error))
        }
        StoredError::NamedTwice { .. } | StoredError::Pairing { .. } => Exit::usage(e),
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
