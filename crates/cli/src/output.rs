//! Writing what the report crate renders, through one writer ([`write`]):
//! exports, pages, the run's JSON; and the JSON of the rescue file of a
//! run the store could not take, which the engine writes.

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

/// Fails now, before measuring, if `path` (not `-`) cannot be written
/// later.
pub fn check_writable(path: &Path) -> anyhow::Result<()> {
    match destination(Some(path)) {
        Some(p) => latscope_platform::files::check_writable(p)
            .with_context(|| format!("cannot write {}", path.display())),
        None => Ok(()),
    }
}

/// The rescue file of a run whose store failed (its JSON, as `--json`
/// writes it, beside the store): the engine writes it through this.
pub fn rescue_json<T: serde::Serialize>(
    o: &latscope_engine::RunOutcome,
    doc: &T,
    store: &Path,
) -> Result<std::path::PathBuf, String> {
    let text = json_text(doc).map_err(|e| format!("{e:#}"))?;
    latscope_engine::write_rescue(o, text.as_bytes(), store)
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
