//! `latscope compare RUN_A RUN_B [...]`: every run against the first, with
//! an exceedance test on the tail (see `latscope_stats::compare`).

use latscope_stats::compare::compare_runs;
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
    let by_host;
    let args = if args.hosts {
        let hosts = store.hosts()?;
        if hosts.len() < 2 {
            return Err(Exit::usage(format!(
                "--hosts compares the latest run of each host, and this store has {} host(s)",
                hosts.len()
            )));
        }
        by_host = CompareArgs {
            runs: hosts.iter().map(|h| format!("{h}:latest")).collect(),
            ..args.clone()
        };
        &by_host
    } else {
        args
    };
    if let Some(code) = crate::micro_compare::compare_micro(args, &store)? {
        return Ok(code);
    }
    if args.fail_if_slower.is_some() {
        return Err(Exit::usage(
            "--fail-if-slower compares micro runs; latency runs use --fail-if-worse",
        ));
    }
    let mut runs = Vec::with_capacity(args.runs.len());
    for spec in &args.runs {
        let id = store.resolve(spec)?;
        runs.push(store.load_run(id)?);
    }
    let Some((baseline, others)) = runs.split_first() else {
        return Err(Exit::usage("compare needs at least two runs"));
    };
    let others: Vec<_> = others.iter().collect();
    let cmp = compare_runs(baseline, &others);

    if let Some(path) = &args.html {
        crate::output::write(
            Some(path),
            latscope_report::compare_html(&cmp).as_bytes(),
            crate::output::PUBLIC,
        )?;
    }
    if args.json {
        let text = latscope_report::compare_json(&cmp, args.fail_if_worse)?;
        crate::output::print(&format!("{text}\n"));
    } else {
        crate::output::print(&latscope_report::compare_text(
            &cmp,
            crate::colour::enabled(),
        ));
    }

    let Some(pct) = args.fail_if_worse else {
        return Ok(exit::OK);
    };
    let tripped = latscope_report::compare_tripped(&cmp, pct);
    if tripped.is_empty() {
        return Ok(exit::OK);
    }
    for line in &tripped {
        eprintln!("latscope: {line}");
    }
    Ok(exit::THRESHOLD)
}
