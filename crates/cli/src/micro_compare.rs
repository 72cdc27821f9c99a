//! `latscope compare` of micro runs: every benchmark of each run against
//! the baseline's ([`latscope_report::MicroComparison`]).

use latscope_model::MicroResult;
use latscope_report::MicroComparison;
use latscope_store::Store;

use crate::args::CompareArgs;
use crate::exit::{self, Exit};

/// Compares when the baseline is a micro run; `None` when it is not (the
/// latency comparison then runs). A micro run against a latency run is a
/// usage error.
pub fn compare_micro(args: &CompareArgs, store: &Store) -> Result<Option<i32>, Exit> {
    let mut runs: Vec<(i64, Option<Vec<MicroResult>>)> = Vec::new();
    for spec in &args.runs {
        let id = store.resolve(spec)?;
        let micro = store.load_micro(id)?.map(|m| m.results());
        runs.push((id.0, micro));
    }
    let micro_count = runs.iter().filter(|(_, m)| m.is_some()).count();
    if micro_count == 0 {
        return Ok(None);
    }
    if micro_count != runs.len() {
        return Err(Exit::usage(
            "compare takes micro runs with micro runs and latency runs with latency runs",
        ));
    }
    if args.fail_if_worse.is_some() || args.html.is_some() {
        return Err(Exit::usage(
            "micro runs compare with --fail-if-slower and --json (--fail-if-worse and --html are for latency runs)",
        ));
    }
    let runs: Vec<(i64, &[MicroResult])> = runs
        .iter()
        .map(|(id, m)| (*id, m.as_deref().unwrap_or_default()))
        .collect();
    let doc = MicroComparison::new(&runs, args.fail_if_slower);
    if args.json {
        crate::output::write_json_doc(&doc, std::path::Path::new("-"))?;
    } else {
        crate::output::print(&doc.text());
    }
    let Some(pct) = args.fail_if_slower else {
        return Ok(Some(exit::OK));
    };
    let tripped = doc.slower_lines(pct);
    for line in &tripped {
        eprintln!("latscope: {line}");
    }
    Ok(Some(if tripped.is_empty() {
        exit::OK
    } else {
        exit::THRESHOLD
    }))
}
