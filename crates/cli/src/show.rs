//! `latscope list` and `latscope show`: read the store, never write it.

use std::path::Path;

use latscope_model::Nanos;
use latscope_report::stored::{show_run, ShowAs};
use latscope_store::{RunFilter, Store};

use crate::args::{ListArgs, ShowArgs};
use crate::exit::{self, Exit};
use crate::output;

pub fn list(args: &ListArgs) -> Result<i32, Exit> {
    let since = args
        .since
        .as_deref()
        .map(|t| Nanos::parse_duration(t).map_err(|e| Exit::usage(format!("--since: {e}"))))
        .transpose()?;
    let filter = RunFilter {
        host: args.host.clone(),
        kernel: args.kernel.clone(),
        started_since: since
            .map(|d| Nanos(latscope_engine::system::realtime_ns().saturating_sub(d.0))),
    };
    let store = Store::open_existing(&args.store.store)?;
    let mut runs = store.list_runs()?;
    runs.retain(|r| filter.matches(r));
    let rows = latscope_report::list_rows(&runs);
    if args.json {
        output::write_json_doc(&latscope_report::list_json(&rows), Path::new("-"))?;
    } else {
        let store = latscope_store::redact_arg(&args.store.store.display().to_string());
        output::print(&latscope_report::list_text(
            &rows,
            !filter.is_empty(),
            &store,
        ));
    }
    Ok(exit::OK)
}

pub fn show(args: &ShowArgs) -> Result<i32, Exit> {
    let store = Store::open_existing(&args.store.store)?;
    let how = ShowAs {
        json: args.json,
        histogram: args.histogram,
        episodes: args.episodes,
    };
    let text = show_run(&store, &args.run, how).map_err(anyhow::Error::from)?;
    output::print(&text);
    Ok(exit::OK)
}
