//! Writing what the report crate renders: the run's JSON, and the rescue
//! file of a run the store could not take.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use latscope_stats::RunResult;

/// Writes the run's JSON to `path` (`-`: standard output).
pub fn write_json(run: &RunResult, path: &Path) -> anyhow::Result<()> {
    write_json_doc(&latscope_report::run_json(run), path)
}

/// Writes a JSON document to `path` (`-`: standard output), as
/// [`write_file`].
pub fn write_json_doc<T: serde::Serialize>(doc: &T, path: &Path) -> anyhow::Result<()> {
    let text = json_text(doc)?;
    if path == Path::new("-") {
        print(&text);
        return Ok(());
    }
    write_file(path, text.as_bytes())
}

/// A document as the JSON files hold it: pretty, with a final newline.
fn json_text<T: serde::Serialize>(doc: &T) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(doc).context("cannot encode JSON")? + "\n")
}

/// Writes an output file (mode 0644): to a new file of an unguessable name
/// beside it, renamed over `path`, so a reader never sees half and a
/// symbolic link at `path` is replaced, never followed (latscope runs as
/// root; `latscope_platform::files`).
pub fn write_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    latscope_platform::files::write_atomically(path, bytes, 0o644)
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Fails now, before measuring, if `path`'s directory cannot take a file
/// later (a new file of an unguessable name is created there and removed).
pub fn check_writable(path: &Path) -> anyhow::Result<()> {
    if path == Path::new("-") {
        return Ok(());
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    tempfile::NamedTempFile::new_in(dir)
        .map(drop)
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Writes a run the store could not take to a rescue file (its JSON, as
/// `--json` writes it): beside the store, else in the current directory,
/// else in the temporary directory. Returns the path written.
pub fn write_rescue(run: &RunResult, store: &Path) -> anyhow::Result<std::path::PathBuf> {
    write_rescue_doc(run, &latscope_report::run_json(run), store)
}

/// Writes `doc`, the whole of `run` (a microbenchmark run's document), as
/// [`write_rescue`] does.
pub fn write_rescue_doc<T: serde::Serialize>(
    run: &RunResult,
    doc: &T,
    store: &Path,
) -> anyhow::Result<std::path::PathBuf> {
    let name = format!(
        "latscope-rescue-{}-{}.json",
        run.meta.started_unix_ns.0 / 1_000_000_000,
        run.meta.pid
    );
    let mut dirs = Vec::new();
    if let Some(d) = store.parent() {
        dirs.push(if d.as_os_str().is_empty() {
            Path::new(".").to_path_buf()
        } else {
            d.to_path_buf()
        });
    }
    dirs.push(Path::new(".").to_path_buf());
    dirs.push(std::env::temp_dir());
    // The rescue holds the run's command line and measurements: for this
    // user only (0600), wherever it lands.
    let text = json_text(doc)?;
    let mut last = None;
    for d in dirs {
        // The error line names the file: absolute, so that it can be found
        // from any directory.
        let path = std::path::absolute(d.join(&name)).unwrap_or_else(|_| d.join(&name));
        match latscope_platform::files::write_atomically(&path, text.as_bytes(), 0o600) {
            Ok(()) => return Ok(path),
            Err(e) => last = Some(anyhow::anyhow!("cannot write {}: {e}", path.display())),
        }
    }
    Err(last.unwrap_or_else(|| anyhow::anyhow!("no directory to write the rescue file in")))
}

/// Writes `text` to standard output. A reader that stopped early
/// (`latscope list | head`) is not an error, and nor is any other failure
/// to print what is already stored: it is said once on standard error,
/// never a panic (which `print!` would be).
pub fn print(text: &str) {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        Err(e) => eprintln!("latscope: cannot write to standard output: {e}"),
        Ok(()) => {}
    }
}
