//! The rescue file of a run whose sink failed: the whole run, rendered by
//! the caller (the CLI: the run's JSON), written where it can be.

use std::path::{Path, PathBuf};

use crate::outcome::RunOutcome;

/// Writes `doc`, the whole of the outcome's run, to
/// `latscope-rescue-<start s>-<pid>.json` in `beside`'s directory (the
/// store's), else the current directory, else the temporary directory; for
/// this user only (0600: it holds the run's command line and
/// measurements). Returns the absolute path written, or why none could be.
pub fn write_rescue(outcome: &RunOutcome, doc: &[u8], beside: &Path) -> Result<PathBuf, String> {
    let meta = &outcome.result.meta;
    let name = format!(
        "latscope-rescue-{}-{}.json",
        meta.started_unix_ns.0 / 1_000_000_000,
        meta.pid
    );
    let mut dirs = Vec::new();
    if let Some(d) = beside.parent() {
        dirs.push(match d.as_os_str().is_empty() {
            true => PathBuf::from("."),
            false => d.to_path_buf(),
        });
    }
    dirs.push(PathBuf::from("."));
    dirs.push(std::env::temp_dir());
    let mut last = String::from("no directory to write the rescue file in");
    for d in dirs {
        // The error line names the file: absolute, so that it can be found
        // from any directory.
        let path = std::path::absolute(d.join(&name)).unwrap_or_else(|_| d.join(&name));
        match latscope_platform::files::write_atomically(&path, doc, 0o600) {
            Ok(()) => return Ok(path),
            Err(e) => last = format!("cannot write {}: {e}", path.display()),
        }
    }
    Err(last)
}
