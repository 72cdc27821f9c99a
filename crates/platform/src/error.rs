use std::io;

/// A system call failed. Messages name the call and what it was for, in one
/// line, so the binary can show them as they are.
#[derive(Debug, thiserror::Error)]
pub enum PlatformError {
    #[error("{what}: {source}")]
    Os {
        what: String,
        #[source]
        source: io::Error,
    },
    #[error("{0}")]
    Invalid(String),
}

impl PlatformError {
    pub(crate) fn last_os(what: impl Into<String>) -> PlatformError {
        PlatformError::Os {
            what: what.into(),
            source: io::Error::last_os_error(),
        }
    }
    pub(crate) fn from_code(what: impl Into<String>, code: i32) -> PlatformError {
        PlatformError::Os {
            what: what.into(),
            source: io::Error::from_raw_os_error(code),
        }
    }
}
