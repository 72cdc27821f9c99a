//! The latency hazards of `latscope check`: the full table the command
//! prints, and the short block that run summaries carry under their header.

use latscope_model::{Hazard, Severity};
use serde::Serialize;

use crate::table::Table;

/// The document `latscope check --json` prints.
#[derive(Debug, Serialize)]
pub struct CheckJson<'a> {
    pub hostname: &'a str,
    pub kernel_release: &'a str,
    /// Worst first, as stored in `system.hazards`.
    pub hazards: &'a [Hazard],
    pub counts: HazardCounts,
}

/// How many findings of each severity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct HazardCounts {
    pub hazard: usize,
    pub warning: usize,
    pub info: usize,
}

impl HazardCounts {
    pub fn of(hazards: &[Hazard]) -> HazardCounts {
        let n = |s: Severity| hazards.iter().filter(|h| h.severity == s).count();
        HazardCounts {
            hazard: n(Severity::Hazard),
            warning: n(Severity::Warning),
            info: n(Severity::Info),
        }
    }
}

/// The JSON document of `latscope check` for a machine's findings.
pub fn check_json<'a>(
    hostname: &'a str,
    kernel_release: &'a str,
    hazards: &'a [Hazard],
) -> CheckJson<'a> {
    CheckJson {
        hostname,
        kernel_release,
        hazards,
        counts: HazardCounts::of(hazards),
    }
}

/// What `latscope check` prints: the machine, then [`hazards_text`].
pub fn check_text(hostname: &str, kernel_release: &str, hazards: &[Hazard]) -> String {
    format!(
        "latscope check · {hostname} {kernel_release}\n\n{}",
        hazards_text(hazards)
    )
}

/// The findings as a table of severity, finding and remedy,
/// worst first, then what was found for each, one line per finding.
pub fn hazards_text(hazards: &[Hazard]) -> String {
    if hazards.is_empty() {
        return "no known latency hazards found\n".to_string();
    }
    let mut t = Table::new(["severity", "finding", "remedy"]).left_aligned(3);
    for h in hazards {
        t.row([h.severity.as_str(), h.title.as_str(), h.remedy.as_str()]);
    }
    let mut out = t.render();
    out.push_str("\nwhat was found:\n");
    for h in hazards {
        out.push_str(&format!("  {}: {}\n", h.id, h.detail));
    }
    out.push_str(&format!("\n{}\n", counts_line(hazards)));
    out
}

/// "1 hazard, 6 warnings, 2 info".
pub fn counts_line(hazards: &[Hazard]) -> String {
    let c = HazardCounts::of(hazards);
    let plural = |k: usize, word: &str| {
        if k == 1 || word == "info" {
            format!("{k} {word}")
        } else {
            format!("{k} {word}s")
        }
    };
    [
        plural(c.hazard, "hazard"),
        plural(c.warning, "warning"),
        plural(c.info, "info"),
    ]
    .join(", ")
}

/// The block under a run's header: one line per hazard or warning stored
/// with the run, titles only; informational findings are only counted.
/// Empty when the run has no findings (or predates the check).
pub fn hazards_block(hazards: &[Hazard]) -> String {
    if hazards.is_empty() {
        return String::new();
    }
    let mut out = String::from("hazards (latscope check explains each):\n");
    let shown: Vec<&Hazard> = hazards
        .iter()
        .filter(|h| h.severity > Severity::Info)
        .collect();
    for h in &shown {
        out.push_str(&format!("  {:<7}  {}\n", h.severity.as_str(), h.title));
    }
    let info = hazards.len() - shown.len();
    if info > 0 {
        out.push_str(&format!("  + {info} info\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(id: &str, severity: Severity, title: &str) -> Hazard {
        Hazard {
            id: id.into(),
            severity,
            title: title.into(),
            detail: format!("{title} was found"),
            remedy: format!("fix {id}"),
        }
    }

    fn sample() -> Vec<Hazard> {
        vec![
            h("preemption", Severity::Hazard, "preemption model none"),
            h("rt-throttling", Severity::Warning, "RT throttling on"),
            h("cpufreq", Severity::Info, "no cpufreq"),
        ]
    }

    #[test]
    fn table_then_details() {
        assert_eq!(
            hazards_text(&sample()),
            "severity  finding                remedy\n\
             hazard    preemption model none  fix preemption\n\
             warning   RT throttling on       fix rt-throttling\n\
             info      no cpufreq             fix cpufreq\n\
             \n\
             what was found:\n\
             \x20 preemption: preemption model none was found\n\
             \x20 rt-throttling: RT throttling on was found\n\
             \x20 cpufreq: no cpufreq was found\n\
             \n\
             1 hazard, 1 warning, 1 info\n"
        );
        assert_eq!(hazards_text(&[]), "no known latency hazards found\n");
    }

    #[test]
    fn header_block_lists_warnings_and_counts_info() {
        assert_eq!(
            hazards_block(&sample()),
            "hazards (latscope check explains each):\n\
             \x20 hazard   preemption model none\n\
             \x20 warning  RT throttling on\n\
             \x20 + 1 info\n"
        );
        assert_eq!(hazards_block(&[]), "");
        let mut two = sample();
        two.push(h("smt", Severity::Warning, "SMT siblings online"));
        assert_eq!(counts_line(&two), "1 hazard, 2 warnings, 1 info");
        assert_eq!(counts_line(&[]), "0 hazards, 0 warnings, 0 info");
    }

    #[test]
    fn json_keeps_field_order() {
        let list = sample();
        let text = serde_json::to_string(&check_json("host", "6.18.0", &list[..1]))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            text,
            r#"{"hostname":"host","kernel_release":"6.18.0","hazards":[{"id":"preemption","severity":"hazard","title":"preemption model none","detail":"preemption model none was found","remedy":"fix preemption"}],"counts":{"hazard":1,"warning":0,"info":0}}"#
        );
    }
}
