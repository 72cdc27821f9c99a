//! `latscope forecast RUN`: turn a stored run's distributions into answers
//! an application designer can use — the exceedance curve, the worst case
//! per hour, day and week, pseudo worst cases for permissible miss rates,
//! the mean time to underrun of a buffering scheme (and its grid over
//! buffer sizes and counts), and verdicts for application presets.
//!
//! Glue only: the arguments become [`ForecastOptions`] (checked by
//! [`ForecastOptions::from_request`]), [`stored_forecast`] reads the run
//! and computes its forecast, `latscope_report` renders it.

use anyhow::Context;
use latscope_report::stored::{stored_forecast, StoredForecast};
use latscope_stats::forecast::{ForecastOptions, ForecastRequest, ForecastRequestError};

use crate::args::ForecastArgs;
use crate::exit::{self, Exit};

pub fn forecast(args: &ForecastArgs) -> Result<i32, Exit> {
    if let Some(app_run) = &args.against {
        return crate::forecast_against::against(args, app_run);
    }
    let request = ForecastRequest {
        usage: &args.usage,
        period_ms: args.period_ms,
        buffers: args.buffers,
        compute_ms: args.compute_ms,
        app: args.app.as_deref(),
        all_apps: args.apps,
        cells: args.cell.as_deref(),
    };
    let options = ForecastOptions::from_request(&request).map_err(|e| match e {
        ForecastRequestError::UnknownUsage(_) => Exit::usage(format!("--usage: {e}")),
        ForecastRequestError::BadScheme => Exit::usage(
            "--period-ms must be positive, --buffers at least 1, --compute-ms 0 or more",
        ),
        ForecastRequestError::Scheme(_) => Exit::usage(e),
        ForecastRequestError::UnknownApp(_) => Exit::usage(format!("--app: {e}")),
        ForecastRequestError::BadCells(_) => Exit::usage(format!("--cell: {e}")),
    })?;

    let store = latscope_store::Store::open_existing(&args.store.store)?;
    let id = store.resolve(&args.run)?;
    let StoredForecast {
        report,
        observed,
        cuts,
    } = stored_forecast(&store, id, &options).map_err(anyhow::Error::from)?;
    // Only the one application asked for decides the exit code, and only
    // on the wake-up latency (noise gaps are no deadline).
    let any_fail = args.app.is_some() && report.wakeup_verdict_failed();
    if let Some(path) = &args.grid_csv {
        crate::output::write(
            Some(path),
            latscope_report::grid_csv(&report).as_bytes(),
            crate::output::PUBLIC,
        )?;
    }
    let text = if args.json {
        let doc = latscope_report::forecast_document(&report, observed.as_ref(), &cuts)
            .context("cannot write JSON")?;
        serde_json::to_string_pretty(&doc).context("cannot write JSON")? + "\n"
    } else {
        crate::colour::verdicts(&latscope_report::forecast_document_text(
            &report,
            args.grid_csv.is_some(),
            observed.as_ref(),
            &cuts,
        ))
    };
    crate::output::print(&text);
    Ok(if any_fail { exit::THRESHOLD } else { exit::OK })
}
