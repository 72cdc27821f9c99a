//! `latscope import`: the result files of the tools people already run —
//! cyclictest (`--json`, and the `-h` histogram text of its standard
//! output), oslat (`--json`) and rtla (`timerlat hist` text) — read into
//! latscope runs, so that `compare`, `report`, `forecast` and `show` work
//! on them beside latscope's own.
//!
//! Pure: text in, a [`RunResult`] out; the caller stores it. Each format
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
mod oslat_json;
mod rt_tests;
mod rtla_hist;
mod time;

use std::fmt;

use latscope_model::{
    Capabilities, Nanos, Policy, RunId, RunMeta, RunSource, RunStatus, SystemInfo,
};
use latscope_record::{CellResult, RunResult};

pub use error::ImportError;

/// A file format `import` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `cyclictest --json=FILE`.
    CyclictestJson,
    /// cyclictest's standard output with `-h N` (or `-H N`), usually with
    /// `-q`: the histogram and its `# Total/Min/Avg/Max/Histogram
    /// Overflows` lines.
    CyclictestHist,
    /// `oslat --json=FILE`.
    OslatJson,
    /// `rtla timerlat hist`'s standard output.
    RtlaHist,
}

impl Format {
    pub const ALL: [Format; 4] = [
        Format::CyclictestJson,
        Format::CyclictestHist,
        Format::OslatJson,
        Format::RtlaHist,
    ];

    /// The name `--format` takes.
    pub fn name(self) -> &'static str {
        match self {
            Format::CyclictestJson => "cyclictest-json",
            Format::CyclictestHist => "cyclictest-hist",
            Format::OslatJson => "oslat-json",
            Format::RtlaHist => "rtla-hist",
        }
    }

    /// The tool that writes it.
    pub fn tool(self) -> &'static str {
        match self {
            Format::CyclictestJson | Format::CyclictestHist => "cyclictest",
            Format::OslatJson => "oslat",
            Format::RtlaHist => "rtla",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// The unit of a cyclictest histogram text, which does not say it: µs,
/// or ns when cyclictest ran with `-N`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Micros,
    Nanos,
}

impl Unit {
    pub(crate) fn ns(self) -> u64 {
        match self {
            Unit::Micros => 1000,
            Unit::Nanos => 1,
        }
    }
}

/// What the user says of a file that does not say it itself.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The timer's period (cyclictest's `-i`, rtla's `-p`).
    pub period: Option<Nanos>,
    /// The measuring threads' policy and priority.
    pub policy: Option<Policy>,
    pub priority: Option<u32>,
    /// The unit of a cyclictest histogram text.
    pub unit: Option<Unit>,
    /// The background load the tool ran under, as latscope names
    /// workloads (default `none`: latscope ran none).
    pub workload: Option<String>,
}

impl Options {
    pub(crate) fn workload(&self) -> String {
        self.workload.clone().unwrap_or_else(|| "none".to_string())
    }
}

/// A file read, before it becomes a run.
#[derive(Clone, Debug)]
pub struct Imported {
    pub format: Format,
    /// The tool's version, when the file says it.
    pub tool_version: Option<String>,
    /// The tool's command line, when the file records it.
    pub command_line: Option<String>,
    pub started: Option<Nanos>,
    pub ended: Option<Nanos>,
    /// Why the tool's own run failed, when the file says it did.
    pub failed: Option<String>,
    pub system: SystemInfo,
    pub cells: Vec<CellResult>,
    /// What was assumed, mapped approximately or lost, one line each.
    pub notes: Vec<String>,
}

/// What the run says of the import itself.
#[derive(Clone, Debug)]
pub struct Origin {
    /// The file's name as given.
    pub file: String,
    pub label: Option<String>,
    /// Now.
    pub imported: Nanos,
    /// The file's modification time, for files that carry no dates.
    pub file_time: Option<Nanos>,
    /// `latscope import ...` as typed.
    pub command_line: Vec<String>,
    /// latscope's version.
    pub latscope_version: String,
}

impl Imported {
    /// Samples over every cell and metric.
    pub fn samples(&self) -> u64 {
        self.cells
            .iter()
            .flat_map(|c| c.metrics.iter())
            .map(|m| m.histogram.count())
            .sum()
    }

    /// The run to store. Without dates in the file, the run ends at the
    /// file's modification time (the tool wrote the file as it ended) and
    /// starts its longest cell's duration before, and a note says so.
    pub fn into_run(self, origin: Origin) -> RunResult {
        let mut notes = self.notes;
        let longest = self
            .cells
            .iter()
            .map(|c| c.meta.duration_ns)
            .max()
            .unwrap_or(Nanos::ZERO);
        let (started, ended) = match (self.started, self.ended, origin.file_time) {
            (Some(s), e, _) => (s, e),
            (None, Some(e), _) => (e.saturating_sub(longest), Some(e)),
            (None, None, Some(t)) => {
                notes.push(
                    "the file records no dates: the run is dated by the file's modification time, taken as its end".to_string(),
                );
                (t.saturating_sub(longest), Some(t))
            }
            (None, None, None) => {
                notes.push("the file records no dates: the run is dated by its import".to_string());
                (origin.imported, Some(origin.imported))
            }
        };
        let status = match &self.failed {
            Some(why) => {
                notes.push(why.clone());
                RunStatus::Failed
            }
            None => RunStatus::Complete,
        };
        RunResult {
            meta: RunMeta {
                id: RunId(0),
                started_unix_ns: started,
                ended_unix_ns: ended,
                checkpoint_unix_ns: None,
                status,
                command_line: origin.command_line,
                pid: 0,
                boot_id: String::new(),
                hostname: self.system.hostname.clone(),
                tool_version: origin.latscope_version,
                notes,
                source: Some(RunSource {
                    tool: self.format.tool().to_string(),
                    tool_version: self.tool_version,
                    format: self.format.name().to_string(),
                    file: origin.file,
                    command_line: self.command_line,
                    label: origin.label,
                    imported_unix_ns: origin.imported,
                }),
            },
            system: self.system,
            // What the tool obtained (priority, locked memory) is in no
            // file: unknown, not refused.
            capabilities: Capabilities::default(),
            cells: self.cells,
        }
    }
}

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
        return Err(ImportError::Option(format!(
            "--unit is for cyclictest-hist files, which do not say their unit; a {format} file does"
        )));
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
