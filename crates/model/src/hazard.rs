use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// How much a finding of `latscope check` matters for real-time work.
///
/// Ordered: `Info < Warning < Hazard`, so the worst of a list is its `max`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing when reading results; nothing to fix.
    #[default]
    Info,
    /// Costs latency for some workloads or can be fixed at run time.
    Warning,
    /// Bounds latency badly for any real-time work; `check --strict` fails.
    Hazard,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Hazard => "hazard",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A severity name that is not `info`, `warning` or `hazard`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown severity `{0}` (expected info, warning or hazard)")]
pub struct SeverityError(pub String);

impl FromStr for Severity {
    type Err = SeverityError;

    fn from_str(s: &str) -> Result<Severity, SeverityError> {
        match s {
            "info" => Ok(Severity::Info),
            "warning" => Ok(Severity::Warning),
            "hazard" => Ok(Severity::Hazard),
            other => Err(SeverityError(other.to_string())),
        }
    }
}

/// One known latency hazard found on the machine, with what was seen and how
/// to remove it. The `id` is stable API (JSON, the store, `docs/concepts.md`);
/// the texts are for people and may be reworded.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Hazard {
    /// Short kebab-case name, e.g. `preemption`, `rt-throttling`.
    pub id: String,
    pub severity: Severity,
    /// The finding in a few words, e.g. "preemption model none".
    pub title: String,
    /// What was found and why it matters, one line.
    pub detail: String,
    /// What to do about it, one line.
    pub remedy: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn severities_order_and_round_trip() {
        assert!(Severity::Info < Severity::Warning && Severity::Warning < Severity::Hazard);
        for s in [Severity::Info, Severity::Warning, Severity::Hazard] {
            assert_eq!(s.as_str().parse::<Severity>(), Ok(s));
            assert_eq!(
                serde_json::to_string(&s).ok(),
                Some(format!("\"{}\"", s.as_str()))
            );
        }
        assert!("fatal".parse::<Severity>().is_err());
    }

    #[test]
    fn missing_fields_default() {
        let h: Hazard = serde_json::from_str(r#"{"id":"smt","severity":"warning"}"#)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(h.id, "smt");
        assert_eq!(h.severity, Severity::Warning);
        assert!(h.title.is_empty());
    }
}
