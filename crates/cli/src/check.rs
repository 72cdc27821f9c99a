//! `latscope check`: audit this machine for known latency hazards.
//!
//! The findings come from the same system snapshot every run stores
//! (`platform::sysinfo::snapshot`), so `check` says exactly what a run
//! started now would record in `system.hazards`. It reads `/proc` and
//! `/sys` and changes nothing.

use std::io::{ErrorKind, Write};

use anyhow::Context;
use latscope_engine::system::sysinfo;

use crate::args::CheckArgs;
use crate::exit::{self, Exit};

/// `--strict` found a finding of severity `hazard` (DESIGN.md: 3, threshold
/// exceeded).
const HAZARD_FOUND: i32 = 3;

pub fn check(args: &CheckArgs) -> Result<i32, Exit> {
    let info = sysinfo::snapshot();
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
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        // A reader that stopped early (`| head`) is not an error.
        Err(e) if e.kind() == ErrorKind::BrokenPipe => {}
        r => r.context("cannot write to standard output")?,
    }
    if code == HAZARD_FOUND {
        let noun = if hazards == 1 { "hazard" } else { "hazards" };
        eprintln!("latscope: {hazards} {noun} found (--strict)");
    }
    Ok(code)
}
