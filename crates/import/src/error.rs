/// Why a file could not be imported. Every message is one line that says
/// what is wrong with the file (or with the request), never a panic's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImportError {
    #[error("the file is empty")]
    Empty,

    #[error("the file is not text (byte {offset} is not UTF-8); latscope imports cyclictest, oslat and rtla output files")]
    NotText { offset: usize },

    #[error("not a format latscope imports (cyclictest --json, cyclictest -h histogram text, oslat --json, rtla timerlat hist text); if it is one of them, name it with --format")]
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
    #[error("{0}")]
    Option(String),
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

    /// Whether the request, not the file, is at fault (a usage error).
    pub fn is_usage(&self) -> bool {
        matches!(self, ImportError::Option(_))
    }
}
