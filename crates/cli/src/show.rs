//! `latscope list` and `latscope show`: read the store, never write it.

use latscope_report::RunListRow;
use latscope_store::Store;

use crate::args::{ListArgs, ShowArgs};
use crate::exit::{self, Exit};
use crate::output;

/// Whether kernel release `release` is `wanted` or one of its series:
/// `6.18` matches `6.18` and `6.18.44-rt12`, not `6.180`.
fn kernel_matches(release: &str, wanted: &str) -> bool {
    match release.strip_prefix(wanted) {
        Some(rest) => rest.is_empty() || rest.starts_with(['.', '-', '+']),
        None => false,
    }
}

pub fn list(args: &ListArgs) -> Result<i32, Exit> {
    let since = args
        .since
        .as_deref()
        .map(|t| {
            latscope_model::Nanos::parse_duration(t)
                .map_err(|e| Exit::usage(format!("--since: {e}")))
        })
        .transpose()?;
    let store = Store::open_existing(&args.store.store)?;
    let mut runs = store.list_runs()?;
    let now = latscope_engine::system::realtime_ns();
    runs.retain(|r| {
        args.host.as_ref().is_none_or(|h| r.meta.hostname == *h)
            && args
                .kernel
                .as_ref()
                .is_none_or(|k| kernel_matches(&r.system_kernel, k))
            && since.is_none_or(|d| r.meta.started_unix_ns.0 >= now.saturating_sub(d.0))
    });
    let filtered = args.host.is_some() || args.kernel.is_some() || since.is_some();
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
        let what = if filtered {
            "no runs match in"
        } else {
            "no runs in"
        };
        crate::output::print(&format!(
            "{what} {}\n",
            latscope_store::redact_arg(&args.store.store.display().to_string())
        ));
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

#[cfg(test)]
mod tests {
    use super::kernel_matches;

    #[test]
    fn a_kernel_series_matches_its_releases_only() {
        assert!(kernel_matches("6.18.44-fc-v657", "6.18"));
        assert!(kernel_matches("6.18", "6.18"));
        assert!(kernel_matches("6.18-rc3", "6.18"));
        assert!(!kernel_matches("6.180.1", "6.18"));
        assert!(!kernel_matches("6.1.2", "6.18"));
        assert!(kernel_matches("6.18.44-fc-v657", "6.18.44-fc-v657"));
    }
}
