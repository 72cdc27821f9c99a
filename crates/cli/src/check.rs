//! `latscope check`: audit this machine for known latency hazards.
//!
//! The findings come from the same system snapshot every run stores
//! (`platform::sysinfo::snapshot`), so `check` says exactly what a run
//! started now would record in `system.hazards`. It reads `/proc` and
//! `/sys` and changes nothing.

use latscope_engine::system::sysinfo;

use crate::args::CheckArgs;
use crate::exit::{self, Exit};

/// `--strict` found a finding of severity `hazard` (DESIGN.md: 3, threshold
/// exceeded).
const HAZARD_FOUND: i32 = 3;

pub fn check(args: &CheckArgs) -> Result<i32, Exit> {
    let mut info = sysinfo::snapshot();
    if let Some(run) = &args.run {
        let store = latscope_store::Store::open_existing(&args.store.store)?;
        let run = store.load_run(store.resolve(run)?)?;
        latscope_report::quote_run_steal(&mut info.hazards, &run);
    }
    let findings = &info.hazards;
    let text = if args.json {
        let doc = latscope_report::check_json(&info.hostname, &info.kernel_release, findings);
        serde_json::to_string_pretty(&doc)? + "\n"
    } else {
        crate::colour::verdicts(&latscope_report::check_text(
            &info.hostname,
            &info.kernel_release,
            findings,
        ))
    };
    let hazards = latscope_report::HazardCounts::of(findings).hazard;
    let code = if args.strict && hazards > 0 {
        HAZARD_FOUND
    } else {
        exit::OK
    };
    crate::output::write(None, text.as_bytes(), crate::output::PUBLIC)?;
    if code == HAZARD_FOUND {
        let noun = if hazards == 1 { "hazard" } else { "hazards" };
        eprintln!("latscope: {hazards} {noun} found (--strict)");
    }
    Ok(code)
}
