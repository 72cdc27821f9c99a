//! A file read ([`Imported`]) and the run it becomes.

use latscope_model::{Capabilities, Nanos, RunId, RunMeta, RunSource, RunStatus, SystemInfo};
use latscope_record::{CellResult, RunResult};

use crate::Format;

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
    /// A file without a header (the tools' histogram texts): no version,
    /// command line, dates, failure or system.
    pub(crate) fn without_header(
        format: Format,
        cells: Vec<CellResult>,
        notes: Vec<String>,
    ) -> Imported {
        Imported {
            format,
            tool_version: None,
            command_line: None,
            started: None,
            ended: None,
            failed: None,
            system: SystemInfo::default(),
            cells,
            notes,
        }
    }

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
