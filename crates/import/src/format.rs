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

/// The format asked for: one of them, or `auto`, none (the file's content
/// tells). A value's first paragraph is its description in `import --help`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum FormatName {
    /// Tell the format from the file's content.
    Auto,
    /// `cyclictest --json=FILE`.
    CyclictestJson,
    /// cyclictest's standard output with `-h N` (or `-H N`).
    CyclictestHist,
    /// `oslat --json=FILE`.
    OslatJson,
    /// `rtla timerlat hist`'s standard output.
    RtlaHist,
}

impl FormatName {
    /// The format asked for, `None` for `auto`.
    pub fn format(self) -> Option<Format> {
        match self {
            FormatName::Auto => None,
            FormatName::CyclictestJson => Some(Format::CyclictestJson),
            FormatName::CyclictestHist => Some(Format::CyclictestHist),
            FormatName::OslatJson => Some(Format::OslatJson),
            FormatName::RtlaHist => Some(Format::RtlaHist),
        }
    }
}

/// The command line's value names are the formats' names.
#[cfg(all(test, feature = "clap"))]
#[test]
fn clap_names_are_the_format_names() {
    use clap::ValueEnum;
    for c in FormatName::value_variants() {
        let name = c.to_possible_value().map(|v| v.get_name().to_string());
        assert_eq!(
            name.as_deref(),
            Some(c.format().map_or("auto", Format::name))
        );
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

/// An option of `import` that a note or an error speaks of; the front end
/// names it ([`OptionNamer`]), the library never spells a flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImportOption {
    Format,
    Period,
    Policy,
    Priority,
    Unit,
}

impl ImportOption {
    /// The option's stable identifier (`period`); the command line's
    /// option is `--` and the key.
    pub fn key(self) -> &'static str {
        match self {
            ImportOption::Format => "format",
            ImportOption::Period => "period",
            ImportOption::Policy => "policy",
            ImportOption::Priority => "priority",
            ImportOption::Unit => "unit",
        }
    }

    /// In plain words: `the period option`.
    pub fn neutral(self) -> String {
        format!("the {} option", self.key())
    }
}

/// How the front end names [`ImportOption`]s in notes stored with the run
/// and in error lines; by default in plain words ([`ImportOption::neutral`]).
#[derive(Clone, Copy)]
pub struct OptionNamer(pub fn(ImportOption) -> String);

impl OptionNamer {
    pub fn name(&self, o: ImportOption) -> String {
        (self.0)(o)
    }
}

impl Default for OptionNamer {
    fn default() -> OptionNamer {
        OptionNamer(ImportOption::neutral)
    }
}

impl std::fmt::Debug for OptionNamer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OptionNamer")
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
    /// How the notes name the options.
    pub names: OptionNamer,
}

impl Options {
    pub(crate) fn workload(&self) -> String {
        self.workload.clone().unwrap_or_else(|| "none".to_string())
    }
}
