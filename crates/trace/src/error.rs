//! One error type for the tracing layer, with one-line messages.
//!
//! Permission problems get their own variant because they are the common
//! failure and the fix is the user's (run as root, grant CAP_PERFMON, lower
//! `perf_event_paranoid`): the CLI matches on [`TraceError::is_permission`]
//! to say so, and degrades to a run without tracing.

use std::io;
use std::path::PathBuf;

use latscope_platform::perf::PerfError;

#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error(
        "{what}: permission denied (needs root or CAP_PERFMON; perf_event_paranoid={})",
        paranoid_text(*.paranoid)
    )]
    Permission { what: String, paranoid: Option<i32> },
    #[error("tracefs is not available: {0}")]
    NoTracefs(String),
    #[error("required tracepoint {event} is unavailable: {reason}")]
    MissingEvent { event: String, reason: String },
    #[error("format of {event}: {reason}")]
    Format { event: String, reason: String },
    #[error("{0}")]
    Perf(PerfError),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
    #[error("recording {}: {reason}", .path.display())]
    Recording { path: PathBuf, reason: String },
    #[error("kernel symbols are unavailable: {0}")]
    SymbolsUnavailable(String),
    #[error("{0}")]
    Invalid(String),
}

/// `s` with its control characters (newlines, terminal escapes) escaped:
/// messages that quote untrusted text (a recording's header) stay on one
/// line and print nothing but text.
pub(crate) fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

fn paranoid_text(p: Option<i32>) -> String {
    p.map_or_else(|| "unknown".to_string(), |p| p.to_string())
}

impl TraceError {
    /// Whether the failure is a missing permission rather than a missing
    /// kernel feature or a bug.
    pub fn is_permission(&self) -> bool {
        matches!(self, TraceError::Permission { .. })
    }

    /// `perf_event_paranoid` as read when a permission error happened.
    pub fn paranoid(&self) -> Option<i32> {
        match self {
            TraceError::Permission { paranoid, .. } => *paranoid,
            _ => None,
        }
    }

    pub(crate) fn io(what: impl Into<String>, source: io::Error) -> TraceError {
        let what = what.into();
        // EACCES and EPERM both map to PermissionDenied.
        if source.kind() == io::ErrorKind::PermissionDenied {
            return TraceError::Permission {
                what,
                paranoid: latscope_platform::perf::perf_event_paranoid(),
            };
        }
        TraceError::Io { what, source }
    }
}

impl From<PerfError> for TraceError {
    fn from(e: PerfError) -> TraceError {
        match e {
            PerfError::Permission { what, paranoid } => TraceError::Permission { what, paranoid },
            other => TraceError::Perf(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permission_is_distinguishable_and_one_line() {
        let e = TraceError::from(PerfError::Permission {
            what: "perf_event_open(type 2, config 372, cpu 0)".to_string(),
            paranoid: Some(2),
        });
        assert!(e.is_permission());
        assert_eq!(e.paranoid(), Some(2));
        let msg = e.to_string();
        assert!(
            msg.contains("CAP_PERFMON") && msg.contains("perf_event_paranoid=2"),
            "{msg}"
        );
        assert!(!msg.contains('\n'));
        let e = TraceError::io(
            "cannot read x",
            io::Error::from_raw_os_error(13), // EACCES
        );
        assert!(e.is_permission());
        let e = TraceError::io("cannot read x", io::Error::from_raw_os_error(2));
        assert!(!e.is_permission());
    }
}
