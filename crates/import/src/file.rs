//! `latscope import FILE` as a library call: the file read (through a
//! size limit), what the user says of it checked, the run built with its
//! origin. The caller stores the run; nothing here writes.

use std::path::Path;
use std::time::SystemTime;

use latscope_model::{Nanos, Policy};
use latscope_record::RunResult;

use crate::{import, Format, ImportError, OptionNamer, Options, Origin, Unit};

/// The largest file read: the tools' result files are kilobytes to
/// megabytes (the largest fixture here, cyclictest's JSON with its
/// histogram of two threads, is 37 KB).
pub const MAX_FILE_BYTES: u64 = 256 << 20;

/// What is asked of one file: the user's statements as given.
#[derive(Clone, Debug)]
pub struct FileRequest<'a> {
    pub path: &'a Path,
    /// `None`: told from the content.
    pub format: Option<Format>,
    pub label: Option<&'a str>,
    pub workload: Option<&'a str>,
    pub period: Option<Nanos>,
    pub policy: Option<Policy>,
    /// As given: 1-99, or 0 with a policy without priority.
    pub priority: Option<i64>,
    pub unit: Option<Unit>,
    /// How notes stored with the run and error lines name the options.
    pub names: OptionNamer,
    pub command_line: Vec<String>,
    pub latscope_version: &'a str,
}

impl<'a> FileRequest<'a> {
    /// `path`, with nothing said of it.
    pub fn new(path: &'a Path) -> FileRequest<'a> {
        FileRequest {
            path,
            format: None,
            label: None,
            workload: None,
            period: None,
            policy: None,
            priority: None,
            unit: None,
            names: OptionNamer::default(),
            command_line: Vec::new(),
            latscope_version: "",
        }
    }
}

/// Which of the user's statements is at fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Statement {
    Label,
    Workload,
}

/// Why a file could not be imported, before or while reading it.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("the period must be more than 0")]
    PeriodZero,
    #[error("priority {0} is outside 1-99 (0 only with a policy without priority)")]
    Priority(i64),
    #[error("the {what:?} wants one line of text, not {text:?}")]
    NotOneLine { what: Statement, text: String },
    #[error("cannot read {path}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot import {path}: larger than {} MiB, which no result file of cyclictest, oslat or rtla is", MAX_FILE_BYTES >> 20)]
    TooLarge { path: String },
    #[error("cannot import {path}: {error}")]
    Import { path: String, error: ImportError },
}

impl FileError {
    /// The line, `import`'s options named by `names` (as
    /// [`ImportError::line`]).
    pub fn line(&self, names: &OptionNamer) -> String {
        match self {
            FileError::Import { path, error } => {
                format!("cannot import {path}: {}", error.line(names))
            }
            other => other.to_string(),
        }
    }
}

/// An imported file: the run to store and the samples it holds.
pub struct ImportedFile {
    pub run: RunResult,
    pub samples: u64,
}

/// Reads and checks `req.path` into a run; refuses bad statements before
/// the file is read.
pub fn import_file(req: &FileRequest<'_>) -> Result<ImportedFile, FileError> {
    let options = options(req)?;
    let label = req
        .label
        .map(|l| one_line(l, Statement::Label))
        .transpose()?;
    let path = req.path.display().to_string();
    let bytes = read_capped(req.path)?;
    let imported = import(&bytes, req.format, &options).map_err(|error| FileError::Import {
        path: path.clone(),
        error,
    })?;
    let file_time = std::fs::metadata(req.path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(unix_ns);
    let samples = imported.samples();
    let origin = Origin {
        file: path,
        label,
        imported: unix_ns(SystemTime::now()).unwrap_or(Nanos::ZERO),
        file_time,
        command_line: req.command_line.clone(),
        latscope_version: req.latscope_version.to_string(),
    };
    Ok(ImportedFile {
        run: imported.into_run(origin),
        samples,
    })
}

fn options(req: &FileRequest<'_>) -> Result<Options, FileError> {
    if req.period == Some(Nanos::ZERO) {
        return Err(FileError::PeriodZero);
    }
    let priority = match req.priority {
        None => None,
        Some(p @ 1..=99) => u32::try_from(p).ok(),
        Some(0) if req.policy.is_some_and(|p| !p.has_priority()) => Some(0),
        Some(p) => return Err(FileError::Priority(p)),
    };
    Ok(Options {
        period: req.period,
        policy: req.policy,
        priority,
        unit: req.unit,
        workload: req
            .workload
            .map(|w| one_line(w, Statement::Workload))
            .transpose()?,
        names: req.names,
    })
}

fn unix_ns(t: SystemTime) -> Option<Nanos> {
    let d = t.duration_since(SystemTime::UNIX_EPOCH).ok()?;
    u64::try_from(d.as_nanos()).ok().map(Nanos)
}

/// A one-line text without control characters, trimmed.
fn one_line(text: &str, what: Statement) -> Result<String, FileError> {
    let t = text.trim();
    if t.is_empty() || t.chars().any(char::is_control) {
        return Err(FileError::NotOneLine {
            what,
            text: text.to_string(),
        });
    }
    Ok(t.to_string())
}

/// `path`'s bytes, refused past [`MAX_FILE_BYTES`] (read through a limit,
/// so a FIFO or a device that never ends is refused too).
fn read_capped(path: &Path) -> Result<Vec<u8>, FileError> {
    use std::io::Read;
    let read = |source| FileError::Read {
        path: path.display().to_string(),
        source,
    };
    let file = std::fs::File::open(path).map_err(read)?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(read)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(FileError::TooLarge {
            path: path.display().to_string(),
        });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_are_checked_before_the_file_is_read() {
        let missing = Path::new("/nonexistent/latscope-import-test");
        let mut req = FileRequest::new(missing);
        req.label = Some("two\nlines");
        assert!(matches!(
            import_file(&req),
            Err(FileError::NotOneLine {
                what: Statement::Label,
                ..
            })
        ));
        req.label = None;
        req.priority = Some(0);
        assert!(matches!(import_file(&req), Err(FileError::Priority(0))));
        req.policy = Some(Policy::Other);
        assert!(matches!(import_file(&req), Err(FileError::Read { .. })));
        req.period = Some(Nanos::ZERO);
        assert!(matches!(import_file(&req), Err(FileError::PeriodZero)));
    }
}
