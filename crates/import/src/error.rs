use crate::{Format, ImportOption, OptionNamer};

/// Why a file could not be imported. Every message is one line that says
/// what is wrong with the file (or with the request), never a panic's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImportError {
    #[error("the file is empty")]
    Empty,

    #[error("the file is not text (byte {offset} is not UTF-8); latscope imports cyclictest, oslat and rtla output files")]
    NotText { offset: usize },

    #[error("{}", not_recognized(&OptionNamer::default()))]
    NotRecognized,

    /// Invalid JSON; `what` is the JSON parser's message, with its line and
    /// column.
    #[error("{format}: not valid JSON ({what}){}", if *truncated { "; the file looks cut short" } else { "" })]
    Json {
        format: &'static str,
        what: String,
        truncated: bool,
    },

    /// The file ends before a part every such file has.
    #[error("{format}: {what}; the file looks cut short")]
    Truncated { format: &'static str, what: String },

    /// The file is of the format but says something impossible.
    #[error("{format}: {what}")]
    Invalid { format: &'static str, what: String },

    /// The file is of the format but was written in a mode latscope does
    /// not read (the message says which and what to do).
    #[error("{format}: {what}")]
    Unsupported { format: &'static str, what: String },

    /// An option given to `import` that the file makes meaningless.
    #[error("{}", .0.line(&OptionNamer::default()))]
    Option(OptionError),
}

/// An option given to `import` that the file makes meaningless.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OptionError {
    /// A unit for a file that says its own.
    Unit { format: Format },
    /// The file records what `option` gives (`what`), as `recorded`,
    /// which is not what was given.
    Recorded {
        option: ImportOption,
        what: &'static str,
        recorded: String,
    },
    /// A period for a file of oslat, whose loop has none.
    NoPeriod,
}

impl OptionError {
    /// The line, the options named by `names`.
    pub fn line(&self, names: &OptionNamer) -> String {
        match self {
            OptionError::Unit { format } => format!(
                "{} is for cyclictest-hist files, which do not say their unit; a {format} file does",
                names.name(ImportOption::Unit)
            ),
            OptionError::Recorded {
                option,
                what,
                recorded,
            } => format!(
                "the file records the {what} ({recorded}); {} is for files that do not",
                names.name(*option)
            ),
            OptionError::NoPeriod => format!(
                "{} is for timer files; oslat's loop has no period",
                names.name(ImportOption::Period)
            ),
        }
    }
}

fn not_recognized(names: &OptionNamer) -> String {
    format!(
        "not a format latscope imports (cyclictest --json, cyclictest -h histogram text, oslat --json, rtla timerlat hist text); if it is one of them, name it with {}",
        names.name(ImportOption::Format)
    )
}

impl ImportError {
    pub(crate) fn invalid(format: &'static str, what: impl Into<String>) -> ImportError {
        ImportError::Invalid {
            format,
            what: what.into(),
        }
    }

    pub(crate) fn truncated(format: &'static str, what: impl Into<String>) -> ImportError {
        ImportError::Truncated {
            format,
            what: what.into(),
        }
    }

    pub(crate) fn unsupported(format: &'static str, what: impl Into<String>) -> ImportError {
        ImportError::Unsupported {
            format,
            what: what.into(),
        }
    }

    /// The line, the options named by `names` (`Display` names them in
    /// plain words).
    pub fn line(&self, names: &OptionNamer) -> String {
        match self {
            ImportError::NotRecognized => not_recognized(names),
            ImportError::Option(e) => e.line(names),
            other => other.to_string(),
        }
    }

    /// Whether the request, not the file, is at fault (a usage error).
    pub fn is_usage(&self) -> bool {
        matches!(self, ImportError::Option(_))
    }
}
