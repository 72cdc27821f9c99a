//! `latscope import`: the result files of the tools people already run —
//! cyclictest (`--json`, and the `-h` histogram text of its standard
//! output), oslat (`--json`) and rtla (`timerlat hist` text) — read into
//! latscope runs, so that `compare`, `report`, `forecast` and `show` work
//! on them beside latscope's own.
//!
//! Text in, a [`RunResult`] out; the caller stores it ([`import_file`]
//! reads the file itself, through a size limit, and checks what the user
//! says of it). Each format
//! has its module; [`buckets`] rebuilds another tool's histogram as
//! latscope's (each bucket's count at the value the tool gives the bucket,
//! samples beyond the tool's range kept with the file's maximum and a
//! note). What each format keeps and loses is in `docs/import.md`.
//!
//! The formats were learnt from the tools themselves: files written by
//! cyclictest and oslat 2.4 (rt-tests), and rtla's source
//! (`tools/tracing/rtla/src/timerlat_hist.c`) for its text.

mod buckets;
mod cells;
mod cyclictest_args;
mod cyclictest_hist;
mod cyclictest_json;
mod error;
mod file;
mod format;
mod imported;
mod oslat_json;
mod rt_tests;
mod rtla_hist;
mod time;

pub use error::{ImportError, OptionError};
pub use file::{import_file, FileError, FileRequest, ImportedFile, Statement, MAX_FILE_BYTES};
pub use format::{Format, FormatName, ImportOption, OptionNamer, Options, Unit};
pub use imported::{Imported, Origin};

/// The format of a file by its content; `None` when it is none of them.
pub fn detect(text: &str) -> Option<Format> {
    let t = text.trim_start();
    if t.starts_with('{') {
        let Ok(v) = rt_tests::parse_json(t, "json") else {
            // Not JSON as a whole (cut short, say): told by the command
            // line at its top or by its keys, so that reading it says
            // what is wrong.
            return match rt_tests::command_in(t) {
                Some("oslat") => Some(Format::OslatJson),
                Some("cyclictest") => Some(Format::CyclictestJson),
                _ if t.contains("\"freq\"") => Some(Format::OslatJson),
                _ if t.contains("\"cycles\"") => Some(Format::CyclictestJson),
                _ => None,
            };
        };
        let obj = v.as_object()?;
        if oslat_json::looks_like(obj) {
            return Some(Format::OslatJson);
        }
        if cyclictest_json::looks_like(obj) {
            return Some(Format::CyclictestJson);
        }
        return None;
    }
    if rtla_hist::looks_like(text) {
        return Some(Format::RtlaHist);
    }
    if cyclictest_hist::looks_like(text) {
        return Some(Format::CyclictestHist);
    }
    None
}

/// Reads a file's bytes in `format`, or in the format its content shows
/// when `format` is `None`.
pub fn import(
    bytes: &[u8],
    format: Option<Format>,
    options: &Options,
) -> Result<Imported, ImportError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ImportError::Empty);
    }
    let text = std::str::from_utf8(bytes).map_err(|e| ImportError::NotText {
        offset: e.valid_up_to(),
    })?;
    let format = match format {
        Some(f) => f,
        None => detect(text).ok_or(ImportError::NotRecognized)?,
    };
    if options.unit.is_some() && format != Format::CyclictestHist {
        return Err(ImportError::Option(OptionError::Unit { format }));
    }
    let read = match format {
        Format::CyclictestJson => cyclictest_json::read(text, options),
        Format::CyclictestHist => cyclictest_hist::read(text, options),
        Format::OslatJson => oslat_json::read(text, options),
        Format::RtlaHist => rtla_hist::read(text, options),
    };
    // The tools end their output with a newline: a text that does not,
    // and does not read, was cut short.
    let mut imported = match read {
        Err(ImportError::Invalid { format, what }) if !text.ends_with('\n') => {
            return Err(ImportError::truncated(
                format,
                format!("{what}, on a last line without its newline"),
            ))
        }
        other => other?,
    };
    // Each note once, in the order first said.
    let mut seen = std::collections::BTreeSet::new();
    imported.notes.retain(|n| seen.insert(n.clone()));
    if imported.samples() == 0 {
        return Err(ImportError::invalid(
            format.name(),
            "the file holds no samples",
        ));
    }
    Ok(imported)
}
