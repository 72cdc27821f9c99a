//! Where a run came from when latscope did not measure it: `latscope
//! import` reads other tools' result files (cyclictest, oslat, rtla) into
//! runs, and every such run says which tool and file it came from.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::Nanos;

/// The tool and file an imported run was read from. A run latscope
/// measured itself has none.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunSource {
    /// The tool that measured: `cyclictest`, `oslat` or `rtla`.
    pub tool: String,
    /// Its version as the file gives it (`2.40`); `None` when the file
    /// does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_version: Option<String>,
    /// The format read, as `import --format` names it (`cyclictest-json`,
    /// `cyclictest-hist`, `oslat-json`, `rtla-hist`).
    pub format: String,
    /// The file's name as it was given to `import`.
    pub file: String,
    /// The tool's own command line, when the file records it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_line: Option<String>,
    /// The user's label (`import --label`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// When the file was imported, nanoseconds since the Unix epoch.
    pub imported_unix_ns: Nanos,
}

impl RunSource {
    /// "cyclictest 2.40", or the tool alone when its version is unknown.
    pub fn tool_and_version(&self) -> String {
        match &self.tool_version {
            Some(v) => format!("{} {v}", self.tool),
            None => self.tool.clone(),
        }
    }
}

/// `imported from cyclictest 2.40 (cyclictest-json, ct.json) · board 7`.
impl fmt::Display for RunSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = format!(
            "imported from {} ({}, {})",
            self.tool_and_version(),
            self.format,
            self.file
        );
        if let Some(label) = &self.label {
            text.push_str(" · ");
            text.push_str(label);
        }
        f.pad(&text)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn source() -> RunSource {
        RunSource {
            tool: "cyclictest".into(),
            tool_version: Some("2.40".into()),
            format: "cyclictest-json".into(),
            file: "ct.json".into(),
            command_line: Some("cyclictest -q -h 100".into()),
            label: None,
            imported_unix_ns: Nanos(1),
        }
    }

    #[test]
    fn describes_itself_in_one_line() {
        let mut s = source();
        assert_eq!(
            s.to_string(),
            "imported from cyclictest 2.40 (cyclictest-json, ct.json)"
        );
        s.tool_version = None;
        s.label = Some("board 7".into());
        assert_eq!(
            s.to_string(),
            "imported from cyclictest (cyclictest-json, ct.json) · board 7"
        );
    }

    #[test]
    fn json_leaves_out_what_is_unknown() {
        let mut s = source();
        s.command_line = None;
        let v = serde_json::to_value(&s).unwrap();
        assert!(v.get("command_line").is_none());
        assert!(v.get("label").is_none());
        assert_eq!(v["tool_version"], "2.40");
        assert_eq!(serde_json::from_value::<RunSource>(v).unwrap(), s);
    }
}
