//! Recurring culprits: the causes whose episodes came with a period
//! ("every 2.00s ± 3.00ms: thread kworker/0:1"), as the trace analysis
//! found them. Nothing is printed when none did: the test says nothing on
//! weak evidence, and neither does the report.

use latscope_model::{RecurringCause, TraceSummary};

/// "thread kworker/0:1", "softirq TIMER".
fn cause_label(r: &RecurringCause) -> String {
    format!("{} {}", r.kind, r.name)
}

/// "≤ 1e-9": the bound on the chance that random times fit as well.
fn chance_text(r: &RecurringCause) -> String {
    format!("≤ 1e{}", r.log10_chance)
}

/// "41 episodes in 50 periods, 9 missing".
fn evidence_text(r: &RecurringCause) -> String {
    let mut s = format!(
        "{} episode{} over {} period{}",
        r.episodes,
        if r.episodes == 1 { "" } else { "s" },
        r.cycles,
        if r.cycles == 1 { "" } else { "s" }
    );
    if r.missing > 0 {
        s.push_str(&format!(", {} missing", r.missing));
    }
    s
}

/// One line: "every 2.00s ± 3.00ms: thread kworker/0:1 (41 episodes over
/// 50 periods, 9 missing; 1.50s to 101s into the cell; chance ≤ 1e-9)".
pub fn recurring_line(r: &RecurringCause) -> String {
    format!(
        "every {} ± {}: {} ({}; {} to {} into the cell; chance {})",
        r.period_ns,
        r.jitter_ns,
        cause_label(r),
        evidence_text(r),
        r.first_offset_ns,
        r.last_offset_ns,
        chance_text(r)
    )
}

/// "recurring: ..." lines for a cell's trace summary, or nothing.
pub fn recurring_text(t: &TraceSummary) -> String {
    t.recurring
        .iter()
        .map(|r| format!("recurring: {}\n", recurring_line(r)))
        .collect()
}

/// The HTML table's header and rows (empty rows when nothing recurred).
pub(crate) fn recurring_rows(t: &TraceSummary) -> ([&'static str; 7], Vec<Vec<String>>) {
    let header = [
        "cause",
        "kind",
        "every",
        "±",
        "episodes",
        "first – last",
        "chance",
    ];
    let rows = t
        .recurring
        .iter()
        .map(|r| {
            vec![
                r.name.clone(),
                r.kind.to_string(),
                r.period_ns.to_string(),
                r.jitter_ns.to_string(),
                evidence_text(r),
                format!("{} – {}", r.first_offset_ns, r.last_offset_ns),
                chance_text(r),
            ]
        })
        .collect();
    (header, rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::{CauseKind, Nanos};

    fn kworker() -> RecurringCause {
        RecurringCause {
            kind: CauseKind::Thread,
            name: "kworker/0:1".into(),
            period_ns: Nanos(2_000_000_000),
            jitter_ns: Nanos(3_000_000),
            episodes: 41,
            cycles: 49,
            missing: 9,
            first_offset_ns: Nanos(1_500_000_000),
            last_offset_ns: Nanos(99_500_000_000),
            log10_chance: -9,
        }
    }

    #[test]
    fn a_recurring_cause_reads_as_one_line() {
        assert_eq!(
            recurring_line(&kworker()),
            "every 2.00s ± 3.00ms: thread kworker/0:1 (41 episodes over 49 periods, 9 missing; 1.50s to 99.5s into the cell; chance ≤ 1e-9)"
        );
    }

    #[test]
    fn nothing_recurring_prints_nothing() {
        let mut t = TraceSummary::default();
        assert_eq!(recurring_text(&t), "");
        assert!(recurring_rows(&t).1.is_empty());
        t.recurring = vec![kworker(), kworker()];
        assert_eq!(recurring_text(&t).lines().count(), 2);
        assert!(recurring_text(&t).starts_with("recurring: every 2.00s"));
        assert_eq!(
            recurring_rows(&t).1[0][4],
            "41 episodes over 49 periods, 9 missing"
        );
    }
}
