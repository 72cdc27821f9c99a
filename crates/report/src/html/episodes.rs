//! The episodes of a traced cell: what took the time of each long latency
//! (a stacked bar per episode, the shares by kind of cause), the causes
//! over all episodes, and per episode its parts, main causes, the thread
//! that blocked ours and the kernel functions sampled meanwhile — the
//! "latency cause" tool of Cota-Robles & Held.

use latscope_model::{CauseKind, Episode, Nanos};
use latscope_stats::CellResult;

use super::bars::{stacked_bars, StackedBar};
use super::page::{figure, para, table, table_with, us};

/// Episodes drawn and listed (the longest); the rest are counted.
const SHOWN: usize = 30;
/// Causes and stack functions named per episode.
const NAMED: usize = 3;

const KINDS: [CauseKind; 10] = [
    CauseKind::Idle,
    CauseKind::TimerIrq,
    CauseKind::Irq,
    CauseKind::Softirq,
    CauseKind::Nmi,
    CauseKind::Thread,
    CauseKind::Wakeup,
    CauseKind::Return,
    CauseKind::Hypervisor,
    CauseKind::Unexplained,
];

fn kind_shares(e: &Episode) -> Vec<(String, f64)> {
    KINDS
        .iter()
        .map(|k| {
            let ns: u64 = e
                .breakdown
                .causes
                .iter()
                .filter(|c| c.kind == *k)
                .map(|c| c.duration_ns.0)
                .sum();
            (k.as_str().to_string(), us(ns))
        })
        .filter(|(_, v)| *v > 0.0)
        .collect()
}

fn cause_text(c: &latscope_model::Cause) -> String {
    let mut s = format!("{} {}", c.kind, c.name);
    if let Some(pid) = c.pid {
        s.push_str(&format!(" [{pid}]"));
    }
    if let (Some(pol), Some(prio)) = (&c.policy, c.priority) {
        s.push_str(&format!(" {pol} {prio}"));
    }
    s.push_str(&format!(" {}", c.duration_ns));
    if !c.parts.is_empty() {
        let inside: Vec<String> = c
            .parts
            .iter()
            .take(3)
            .map(|p| format!("{} {}", p.name, p.duration_ns))
            .collect();
        s.push_str(&format!(" ({})", inside.join(", ")));
    }
    s
}

pub(super) fn episodes_section(c: &CellResult) -> String {
    let total_seen = c.trace.as_ref().map_or(0, |t| t.episodes_total);
    if c.episodes.is_empty() && total_seen == 0 {
        return String::new();
    }
    let mut out = String::from("<h3>Episodes: what the long latencies were made of</h3>");
    if let Some(t) = &c.trace {
        out.push_str(&para(
            &format!(
                "{} sample(s) above {} were seen, {} kept in full (cap {}).",
                t.episodes_total, t.threshold_ns, t.episodes_kept, t.episode_cap
            ),
            Some("note"),
        ));
        if !t.cause_totals.is_empty() {
            let header = ["cause", "kind", "episodes", "total", "longest"];
            let rows: Vec<Vec<String>> = t
                .cause_totals
                .iter()
                .take(crate::TOP_SOURCES)
                .map(|ct| {
                    vec![
                        ct.name.clone(),
                        ct.kind.to_string(),
                        ct.episodes.to_string(),
                        ct.total_ns.to_string(),
                        ct.max_ns.to_string(),
                    ]
                })
                .collect();
            out.push_str("<h4>Causes over all episodes</h4>");
            out.push_str(&table(&header, &rows, 2));
        }
        let (header, rows) = crate::recurring::recurring_rows(t);
        if !rows.is_empty() {
            out.push_str("<h4>Causes that recurred with a period</h4>");
            out.push_str(&table(&header, &rows, 2));
        }
        out.push_str(&super::held::held_section(t));
    }
    if c.episodes.is_empty() {
        return out;
    }
    let mut shown: Vec<&Episode> = c.episodes.iter().collect();
    shown.sort_by(|a, b| b.latency_ns.cmp(&a.latency_ns).then(a.seq.cmp(&b.seq)));
    shown.truncate(SHOWN);
    let categories: Vec<String> = KINDS.iter().map(|k| k.as_str().to_string()).collect();
    let bars: Vec<StackedBar> = shown
        .iter()
        .map(|e| StackedBar {
            label: format!("#{} CPU {}", e.seq, e.cpu.0),
            parts: kind_shares(e),
        })
        .collect();
    let svg = stacked_bars(
        &format!("cell {}: causes per episode", c.meta.index),
        "share of the latency (µs)",
        &categories,
        &bars,
    );
    if !svg.is_empty() {
        out.push_str(&figure(
            &svg,
            "The longest episodes' latencies split by kind of cause: idle (late out of idle), timer_irq (the interrupt that delivered our timer), irq and softirq (other handlers), thread (another thread ran), wakeup and return (our own path), hypervisor (steal read per wake-up), unexplained.",
        ));
    }
    let header = [
        "#",
        "CPU",
        "at",
        "latency",
        "irq",
        "sched",
        "return",
        "main causes",
        "blocked by",
        "kernel functions sampled",
        "held the CPU",
    ];
    let rows: Vec<Vec<String>> = shown
        .iter()
        .map(|e| {
            let b = &e.breakdown;
            let causes: Vec<String> = b.causes.iter().take(NAMED).map(cause_text).collect();
            let stacks: Vec<String> = e
                .stacks
                .iter()
                .take(NAMED)
                .map(|s| match &s.module {
                    Some(m) => format!("{} [{m}] × {}", s.function, s.samples),
                    None => format!("{} × {}", s.function, s.samples),
                })
                .collect();
            let mut latency = e.latency_ns.to_string();
            if !b.complete {
                latency.push_str(" (incomplete)");
            }
            vec![
                e.seq.to_string(),
                e.cpu.0.to_string(),
                format!("{:.3} s", e.offset_ns.0 as f64 / 1e9),
                latency,
                b.irq_ns.to_string(),
                b.sched_ns.to_string(),
                b.return_ns.to_string(),
                causes.join("; "),
                b.blocking.as_ref().map(cause_text).unwrap_or_default(),
                stacks.join("; "),
                super::held::held_cell(e),
            ]
        })
        .collect();
    out.push_str("<h4>The longest episodes</h4>");
    out.push_str(&table_with(&header, &rows, |i| i <= 6));
    if c.episodes.len() > SHOWN {
        out.push_str(&para(
            &format!(
                "{} shorter episode(s) are stored; `latscope show --episodes` lists them all.",
                c.episodes.len() - SHOWN
            ),
            Some("note"),
        ));
    }
    let unexplained: u64 = c
        .episodes
        .iter()
        .map(|e| e.breakdown.unexplained_ns.0)
        .sum();
    if unexplained > 0 {
        out.push_str(&para(
            &format!(
                "{} of the episodes' time is unexplained: no OS event accounts for it (interrupts disabled, or the hypervisor).",
                Nanos(unexplained)
            ),
            Some("note"),
        ));
    }
    if let Some(line) = c.trace.as_ref().and_then(crate::steal::hypervisor_line) {
        out.push_str(&para(&line, Some("note")));
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use latscope_model::{CellMeta, CellSettings, RecurringCause, TraceSummary};

    fn cell(recurring: Vec<RecurringCause>) -> CellResult {
        let settings =
            serde_json::json!({"policy": "fifo", "priority": 80, "period_ns": 1_000_000});
        CellResult {
            trace: Some(TraceSummary {
                episodes_total: 30,
                recurring,
                ..TraceSummary::default()
            }),
            ..CellResult::new(
                CellMeta::new(
                    0,
                    "none",
                    CellSettings::from_json("timer", settings).unwrap(),
                    Nanos::from_secs(60),
                ),
                Vec::new(),
            )
        }
    }

    #[test]
    fn recurring_causes_get_a_table_and_none_get_no_heading() {
        assert!(!episodes_section(&cell(Vec::new())).contains("recurred"));
        let html = episodes_section(&cell(vec![RecurringCause {
            kind: CauseKind::Thread,
            name: "kworker/<0>".into(),
            period_ns: Nanos(2_000_000_000),
            jitter_ns: Nanos(3_000_000),
            episodes: 25,
            cycles: 29,
            missing: 5,
            first_offset_ns: Nanos(1_000_000_000),
            last_offset_ns: Nanos(59_000_000_000),
            log10_chance: -12,
        }]));
        assert!(
            html.contains("Causes that recurred with a period"),
            "{html}"
        );
        for want in [
            "kworker/&lt;0&gt;",
            "2.00s",
            "3.00ms",
            "25 episodes over 29 periods, 5 missing",
            "≤ 1e-12",
        ] {
            assert!(html.contains(want), "{want} in {html}");
        }
    }
}
