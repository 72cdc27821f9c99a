//! Printing and writing what the report crate renders.

use std::fs;
use std::io::Write;
use std::path::Path;

use anyhow::Context;
use latscope_stats::RunResult;

/// The summary a run prints and `show` repeats.
pub fn summary(run: &RunResult, histogram: bool) -> String {
    let mut out = latscope_report::run_header(run);
    out.push_str(&latscope_report::summary_tables(run));
    if histogram {
        out.push_str(&latscope_report::histogram_tables(run));
    }
    out
}

/// Writes the run's JSON to `path` (`-`: standard output). The file is
/// written to a temporary name and renamed, so a reader never sees half.
pub fn write_json(run: &RunResult, path: &Path) -> anyhow::Result<()> {
    let doc = serde_json::to_string_pretty(&latscope_report::run_json(run))
        .context("cannot encode the run as JSON")?;
    if path == Path::new("-") {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{doc}").context("cannot write JSON to standard output")?;
        return Ok(());
    }
    let tmp = path.with_extension("json.tmp");
    fs::write(&tmp, doc + "\n").with_context(|| format!("cannot write {}", tmp.display()))?;
    fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// Fails now, before measuring, if `path` cannot be written later.
pub fn check_writable(path: &Path) -> anyhow::Result<()> {
    if path == Path::new("-") {
        return Ok(());
    }
    let tmp = path.with_extension("json.tmp");
    fs::write(&tmp, b"").with_context(|| format!("cannot write {}", path.display()))?;
    let _ = fs::remove_file(&tmp);
    Ok(())
}
