//! The hypervisor's share, per episode and per run (docs/tracing.md,
//! "The hypervisor's share").

use latscope_model::{Breakdown, CauseKind, Nanos, StealSource, TraceSummary};
use latscope_stats::RunResult;

fn percent(part: Nanos, whole: Nanos) -> String {
    format!("{:.1} %", part.0 as f64 * 100.0 / whole.0.max(1) as f64)
}

/// The episode's steal, as its text says it.
pub fn episode_steal(b: &Breakdown) -> String {
    match (b.steal_source, b.steal_ns) {
        (Some(src), Some(total)) if src.per_wakeup() => {
            let hv: u64 = b
                .causes
                .iter()
                .filter(|c| c.kind == CauseKind::Hypervisor)
                .map(|c| c.duration_ns.0)
                .sum();
            format!(
                "steal {total} ({}): {} from arming to the callback (a bound; {} of it the hypervisor share), {} from the callback to the switch-in (inside the sched phase's shares)",
                source_name(src),
                b.steal_irq_ns.unwrap_or_default(),
                Nanos(hv),
                b.steal_sched_ns.unwrap_or_default(),
            )
        }
        (_, Some(s)) => {
            format!("steal {s} (hypervisor, over the housekeeping interval, not split)")
        }
        (_, None) => "steal unknown".to_string(),
    }
}

fn source_name(s: StealSource) -> &'static str {
    match s {
        StealSource::StealClock => "paravirtual steal clock",
        StealSource::Cpustat => "kernel steal accounting, tick-granular",
        StealSource::ProcStat => "/proc/stat",
    }
}

/// "hypervisor: X of Y episode time (Z %)" for a cell, with /proc/stat's
/// steal over the cell; `None` for runs stored before it was kept or
/// without episodes.
pub fn hypervisor_line(t: &TraceSummary) -> Option<String> {
    let src = t.steal_source?;
    let episode_ns = Nanos(
        t.cause_totals
            .iter()
            .fold(0u64, |a, c| a.saturating_add(c.total_ns.0)),
    );
    if episode_ns.0 == 0 {
        return None;
    }
    let run = t.proc_stat_steal_ns.map_or_else(String::new, |s| {
        format!("; /proc/stat steal over the cell {s}")
    });
    Some(if src.per_wakeup() {
        format!(
            "hypervisor: {} of {episode_ns} episode time ({}, {}){run}",
            t.hypervisor_ns,
            percent(t.hypervisor_ns, episode_ns),
            source_name(src)
        )
    } else {
        format!("hypervisor: not split (steal over the housekeeping interval, not split){run}")
    })
}

/// The episode's steal in its trace-viewer slice's arguments, when known.
pub fn steal_args(b: &Breakdown, args: &mut serde_json::Value) {
    let Some(map) = args.as_object_mut() else {
        return;
    };
    let fields = [
        ("steal_ns", b.steal_ns),
        ("steal_irq_ns", b.steal_irq_ns),
        ("steal_sched_ns", b.steal_sched_ns),
    ];
    for (key, v) in fields {
        if let Some(v) = v {
            map.insert(key.into(), v.0.into());
        }
    }
    if let Some(s) = b.steal_source {
        map.insert("steal_source".into(), s.as_str().into());
    }
}

/// `check --run`: the steal findings (`steal`, `virtualization`) say what
/// they read, /proc/stat since boot (the snapshot's figure), then what
/// `run` measured of the hypervisor, when it did ([`run_steal_note`]).
pub fn quote_run_steal(findings: &mut [latscope_model::Hazard], run: &RunResult) {
    let Some(note) = run_steal_note(run) else {
        return;
    };
    for h in findings
        .iter_mut()
        .filter(|h| h.id == "steal" || h.id == "virtualization")
    {
        h.detail.push_str(&format!("; {note}"));
    }
}

/// What run `run` measured of the hypervisor, for `check --run`: the
/// hypervisor's share of its episodes' time where the steal clock was read
/// per wake-up, and /proc/stat's steal over its traced cells. `None` when
/// no cell was traced.
pub fn run_steal_note(run: &RunResult) -> Option<String> {
    let traced: Vec<&TraceSummary> = run.cells.iter().filter_map(|c| c.trace.as_ref()).collect();
    if traced.is_empty() {
        return None;
    }
    let sum = |f: &dyn Fn(&TraceSummary) -> u64| Nanos(traced.iter().map(|t| f(t)).sum());
    let episode_ns = sum(&|t| t.cause_totals.iter().map(|c| c.total_ns.0).sum());
    let split = traced
        .iter()
        .any(|t| t.steal_source.is_some_and(StealSource::per_wakeup));
    let proc_stat = sum(&|t| t.proc_stat_steal_ns.map_or(0, |n| n.0));
    let measured = if split {
        format!(
            "the hypervisor took {} of its {episode_ns} of episode time ({}, steal read per wake-up)",
            sum(&|t| t.hypervisor_ns.0),
            percent(sum(&|t| t.hypervisor_ns.0), episode_ns)
        )
    } else {
        format!("its {episode_ns} of episode time was not split by steal (perf backend, or no steal counter)")
    };
    Some(format!(
        "in run {}, {measured}; /proc/stat steal over its traced cells {proc_stat}",
        run.meta.id
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::CauseTotal;

    fn summary(src: Option<StealSource>) -> TraceSummary {
        TraceSummary {
            steal_source: src,
            hypervisor_ns: Nanos(250_000),
            proc_stat_steal_ns: Some(Nanos(10_000_000)),
            cause_totals: vec![CauseTotal {
                kind: CauseKind::Thread,
                name: "burner".into(),
                episodes: 2,
                total_ns: Nanos(1_000_000),
                max_ns: Nanos(600_000),
            }],
            ..TraceSummary::default()
        }
    }

    #[test]
    fn the_run_line_says_the_share_or_that_it_was_not_split() {
        let line = hypervisor_line(&summary(Some(StealSource::StealClock))).unwrap_or_default();
        assert!(
            line.starts_with("hypervisor: 250µs of 1.00ms episode time (25"),
            "{line}"
        );
        assert!(
            line.contains("/proc/stat steal over the cell 10.0ms"),
            "{line}"
        );
        let perf = hypervisor_line(&summary(Some(StealSource::ProcStat))).unwrap_or_default();
        assert!(perf.contains("not split"), "{perf}");
        assert_eq!(hypervisor_line(&summary(None)), None);
    }
}
