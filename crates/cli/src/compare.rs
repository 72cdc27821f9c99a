//! `latscope compare RUN_A RUN_B [...]`: every run against the first, with
//! an exceedance test on the tail (see `latscope_stats::compare`), or for
//! micro runs every benchmark against the baseline's
//! ([`latscope_report::MicroComparison`]).

use latscope_report::stored::{stored_comparison, CompareRuns, StoredComparison, StoredError};
use latscope_report::MicroComparison;
use latscope_stats::compare::RunComparison;
use latscope_store::Store;

use crate::args::CompareArgs;
use crate::exit::{self, Exit};

pub fn compare(args: &CompareArgs) -> Result<i32, Exit> {
    for (flag, pct) in [
        ("--fail-if-worse", args.fail_if_worse),
        ("--fail-if-slower", args.fail_if_slower),
    ] {
        if let Some(pct) = pct.filter(|p| !p.is_finite() || *p < 0.0) {
            return Err(Exit::usage(format!(
                "{flag} wants a percentage of 0 or more, not {pct}"
            )));
        }
    }
    let store = Store::open_existing(&args.store.store)?;
    let runs = match args.hosts {
        true => CompareRuns::LatestOfEachHost,
        false => CompareRuns::Named(&args.runs),
    };
    match stored_comparison(&store, runs, args.fail_if_slower).map_err(refusal)? {
        StoredComparison::Micro(doc) => micro(args, &doc),
        StoredComparison::Latency(cmp) => latency(args, &cmp),
    }
}

/// A comparison refused, in the words of the flags.
fn refusal(e: StoredError) -> Exit {
    match e {
        StoredError::FewHosts { hosts } => Exit::usage(format!(
            "--hosts compares the latest run of each host, and this store has {hosts} host(s)"
        )),
        StoredError::MixedKinds => Exit::usage(
            "compare takes micro runs with micro runs and latency runs with latency runs",
        ),
        StoredError::NoRuns => Exit::usage("compare needs at least two runs"),
        e => Exit::from(anyhow::Error::from(e)),
    }
}

fn latency(args: &CompareArgs, cmp: &RunComparison) -> Result<i32, Exit> {
    if args.fail_if_slower.is_some() {
        return Err(Exit::usage(
            "--fail-if-slower compares micro runs; latency runs use --fail-if-worse",
        ));
    }
    if let Some(path) = &args.html {
        let page = latscope_report::compare_html(cmp);
        crate::output::write(Some(path), page.as_bytes(), crate::output::PUBLIC)?;
    }
    if args.json {
        let text = latscope_report::compare_json(cmp, args.fail_if_worse)?;
        crate::output::print(&format!("{text}\n"));
    } else {
        let colour = crate::colour::enabled();
        crate::output::print(&latscope_report::compare_text(cmp, colour));
    }
    Ok(args.fail_if_worse.map_or(exit::OK, |pct| {
        tripped(&latscope_report::compare_tripped(cmp, pct))
    }))
}

fn micro(args: &CompareArgs, doc: &MicroComparison) -> Result<i32, Exit> {
    if args.fail_if_worse.is_some() || args.html.is_some() {
        return Err(Exit::usage(
            "micro runs compare with --fail-if-slower and --json (--fail-if-worse and --html are for latency runs)",
        ));
    }
    if args.json {
        crate::output::write_json_doc(doc, std::path::Path::new("-"))?;
    } else {
        crate::output::print(&doc.text());
    }
    Ok(args
        .fail_if_slower
        .map_or(exit::OK, |pct| tripped(&doc.slower_lines(pct))))
}

/// Prints each threshold exceeded; the exit code for them.
fn tripped(lines: &[String]) -> i32 {
    for line in lines {
        eprintln!("latscope: {line}");
    }
    if lines.is_empty() {
        exit::OK
    } else {
        exit::THRESHOLD
    }
}
