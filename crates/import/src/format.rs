//! What a file is read as: its format, and what the user says of a file
//! that does not say it itself.

use std::fmt;

use latscope_model::{Nanos, Policy};

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
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Unit {
    /// Microseconds (cyclictest's default).
    #[cfg_attr(feature = "clap", value(name = "us"))]
    Micros,
    /// Nanoseconds (cyclictest -N).
    #[cfg_attr(feature = "clap", value(name = "ns"))]
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
