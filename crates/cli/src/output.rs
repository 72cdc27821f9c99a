//! Writing what the report crate renders, through one writer ([`write`]):
//! exports, pages, the run's JSON, and the rescue file of a run the store
//! could not take.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use latscope_stats::RunResult;

/// Where an output goes: a file, or standard output (`-`, or no file).
pub fn destination(path: Option<&Path>) -> Option<&Path> {
    path.filter(|p| *p != Path::new("-"))
}

/// The one writer of the CLI's outputs: `bytes` to `path`, or to standard
/// output when `path` is `None`. A file is written as
/// `latscope_platform::files::write_atomically` does (a new file of an
/// unguessable name beside it, with `mode`, renamed over `path`): a reader
/// never sees half of it, and a symbolic link at `path` is replaced, never
/// followed (latscope runs as root). On standard output, a reader that
/// stopped early (`| head`) is not an error.
pub fn write(path: Option<&Path>, bytes: &[u8], mode: u32) -> anyhow::Result<()> {
    let Some(path) = path else {
        let mut out = std::io::stdout().lock();
        return match out.write_all(bytes).and_then(|()| out.flush()) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            r => r.context("cannot write to standard output"),
        };
    };
    latscope_platform::files::write_atomically(path, bytes, mode)
        .with_context(|| format!("cannot write {}", path.display()))
}

/// An output file's mode: readable by all (0644).
pub const PUBLIC: u32 = 0o644;
/// A file that holds a run's command line: this user's only (0600).
pub const PRIVATE: u32 = 0o600;

/// Writes the run's JSON to `path` (`-`: standard output).
pub fn write_json(run: &RunResult, path: &Path) -> anyhow::Result<()> {
    write_json_doc(&latscope_report::run_json(run), path)
}

/// Writes a JSON document to `path` (`-`: standard output, as [`print`]),
/// as [`write`].
pub fn write_json_doc<T: serde::Serialize>(doc: &T, path: &Path) -> anyhow::Result<()> {
    let text = json_text(doc)?;
    match destination(Some(path)) {
        None => {
            print(&text);
            Ok(())
        }
        to => write(to, text.as_bytes(), PUBLIC),
    }
}

/// A document as the JSON files hold it: pretty, with a final newline.
fn json_text<T: serde::Serialize>(doc: &T) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(doc).context("cannot encode JSON")? + "\n")
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
        match write(Some(&path), text.as_bytes(), PRIVATE) {
            Ok(()) => return Ok(path),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| anyhow::anyhow!("no directory to write the rescue file in")))
}

/// Writes `text` to standard output. A reader that stopped early
/// (`latscope list | head`) is not an error, and nor is any other failure
/// to print what is already stored: it is said once on standard error,
/// never a panic (which `print!` would be).
pub fn print(text: &str) {
    if let Err(e) = write(None, text.as_bytes(), PUBLIC) {
        eprintln!("latscope: {e:#}");
    }
}
