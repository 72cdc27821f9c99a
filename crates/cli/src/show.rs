//! `latscope list` and `latscope show`: read the store, never write it.

use latscope_report::RunListRow;
use latscope_store::Store;

use crate::args::{ListArgs, ShowArgs};
use crate::exit::{self, Exit};
use crate::output;

pub fn list(args: &ListArgs) -> Result<i32, Exit> {
    let store = Store::open_existing(&args.store.store)?;
    let runs = store.list_runs()?;
    let rows: Vec<RunListRow<'_>> = runs
        .iter()
        .map(|r| RunListRow {
            meta: &r.meta,
            cells: &r.cells,
            kernel: &r.system_kernel,
            max_timer_latency: r.max_timer_latency,
        })
        .collect();
    if args.json {
        let doc = latscope_report::list_json(&rows);
        let text = serde_json::to_string_pretty(&doc).map_err(anyhow::Error::from)?;
        crate::output::print(&format!("{text}\n"));
        return Ok(exit::OK);
    }
    if runs.is_empty() {
        crate::output::print(&format!("no runs in {}\n", args.store.store.display()));
        return Ok(exit::OK);
    }
    crate::output::print(&latscope_report::list_table(&rows));
    Ok(exit::OK)
}

pub fn show(args: &ShowArgs) -> Result<i32, Exit> {
    let store = Store::open_existing(&args.store.store)?;
    let id = store.resolve(&args.run)?;
    let run = store.load_run(id)?;
    if let Some(micro) = store.load_micro(id)? {
        let results = micro.results();
        let context = micro.context.as_ref();
        if args.json {
            crate::output::write_json_doc(
                &latscope_report::micro_json(&run, context, &results),
                std::path::Path::new("-"),
            )?;
        } else {
            crate::output::print(&latscope_report::micro_text(&run, context, &results));
        }
        return Ok(exit::OK);
    }
    if args.json {
        output::write_json(&run, std::path::Path::new("-"))?;
    } else {
        let mut text = latscope_report::run_summary(&run, args.histogram);
        text.push_str(&crate::observed::observed_text(&store, id)?);
        if args.episodes {
            text.push_str(&latscope_report::episodes_text(&run));
        }
        crate::output::print(&text);
    }
    Ok(exit::OK)
}
