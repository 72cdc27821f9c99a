//! `latscope compare` of micro runs: every benchmark of each run against
//! the baseline's, by the ratio of medians with a bootstrap interval and a
//! verdict (see `latscope_stats::micro::compare`).

use latscope_model::MicroResult;
use latscope_stats::micro::compare::{compare_runs, slower_than, BenchComparison};
use latscope_store::Store;
use serde::Serialize;

use crate::args::CompareArgs;
use crate::exit::{self, Exit};

/// One compared run in `--json`.
#[derive(Serialize)]
struct Against {
    run: i64,
    benchmarks: Vec<BenchComparison>,
}

/// `--json`'s document.
#[derive(Serialize)]
struct Doc {
    schema: &'static str,
    baseline: i64,
    fail_if_slower: Option<f64>,
    runs: Vec<Against>,
}

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
    let (base_id, base) = &runs[0];
    let base = base.as_deref().unwrap_or_default();
    let mut doc = Doc {
        schema: "latscope-micro-compare/1",
        baseline: *base_id,
        fail_if_slower: args.fail_if_slower,
        runs: Vec::new(),
    };
    for (id, new) in &runs[1..] {
        let rows = compare_runs(base, new.as_deref().unwrap_or_default());
        if !args.json {
            crate::output::print(&latscope_report::micro_compare_text(*base_id, *id, &rows));
        }
        doc.runs.push(Against {
            run: *id,
            benchmarks: rows,
        });
    }
    if args.json {
        crate::output::write_json_doc(&doc, std::path::Path::new("-"))?;
    }
    let Some(pct) = args.fail_if_slower else {
        return Ok(Some(exit::OK));
    };
    let mut tripped = false;
    for against in &doc.runs {
        for r in slower_than(&against.benchmarks, pct) {
            tripped = true;
            eprintln!(
                "latscope: run {}: {} is SLOWER than run {}'s by {:.1}% (more than {pct}%)",
                against.run,
                r.bench,
                doc.baseline,
                (r.ratio - 1.0) * 100.0
            );
        }
    }
    Ok(Some(if tripped { exit::THRESHOLD } else { exit::OK }))
}
