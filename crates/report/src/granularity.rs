//! Timer granularity in the reports: the line naming the resolution, the
//! tick and the slack a run measured under, and the note on a second mode
//! of `timer.interval` (wake-ups late by a tick or by the slack), found by
//! [`latscope_stats::late_mode`].

use latscope_model::{metric, CellSettings, CpuId, Nanos, PhaseName, SystemInfo};
use latscope_stats::{late_mode, CellResult, LateBy, LateMode, RunResult, Spacing};
use serde::Serialize;

/// One line on the timer granularity of the snapshot, or `None` for a run
/// stored before the snapshot had it.
pub fn granularity_line(run: &RunResult) -> Option<String> {
    let g = &run.system.granularity;
    if g.monotonic_res_ns.is_none() && g.default_slack_ns.is_none() {
        return None;
    }
    let mut parts = Vec::new();
    if let Some(res) = g.monotonic_res_ns {
        parts.push(format!("CLOCK_MONOTONIC resolution {}", Nanos(res)));
    }
    match (g.hres_active, g.hres_source.as_deref()) {
        (Some(on), Some(src)) => parts.push(format!(
            "high-resolution timers {} (from {src})",
            hres_word(on, &g.hres_inactive_cpus)
        )),
        (Some(on), None) => parts.push(format!(
            "high-resolution timers {}",
            hres_word(on, &g.hres_inactive_cpus)
        )),
        _ => {}
    }
    if let Some(tick) = g.tick_ns(run.system.hz) {
        parts.push(format!("tick {}", Nanos(tick)));
    }
    let mut slack = Vec::new();
    if let Some(ns) = run.capabilities.timer_slack_ns {
        slack.push(format!("measuring threads {}", slack_text(ns)));
    }
    if let Some(ns) = g.default_slack_ns {
        slack.push(format!("a normal thread {}", Nanos(ns)));
    }
    if !slack.is_empty() {
        parts.push(format!("timer slack: {}", slack.join(", ")));
    }
    Some(format!("timer granularity: {}", parts.join(" · ")))
}

fn hres_word(on: bool, off_cpus: &[u32]) -> String {
    match (on, off_cpus) {
        (true, _) => "on".into(),
        (false, []) => "off".into(),
        (false, cpus) => {
            let list: Vec<String> = cpus.iter().map(u32::to_string).collect();
            format!("off on CPU {}", list.join(","))
        }
    }
}

/// A slack in force: 0 is what the kernel gives real-time threads.
pub fn slack_text(ns: u64) -> String {
    if ns == 0 {
        "0 ns (real-time: the kernel gives none)".into()
    } else {
        Nanos(ns).to_string()
    }
}

/// Where a timer cell's wake-ups should lie: its period, the tick, and the
/// slack in force for its threads. `None` for other probes and for a
/// random phase, which records no `timer.interval`.
pub fn cell_spacing(system: &SystemInfo, rt_granted: bool, cell: &CellResult) -> Option<Spacing> {
    let CellSettings::Timer(t) = &cell.meta.settings else {
        return None;
    };
    if t.phase == PhaseName::Random {
        return None;
    }
    let real_time = t.common.policy.is_real_time() && rt_granted;
    let g = &system.granularity;
    Some(Spacing {
        period: t.period_ns,
        tick: g.tick_ns(system.hz).map(Nanos),
        slack: t
            .timer_slack
            .in_force(real_time, g.default_slack_ns)
            .map(Nanos),
    })
}

/// The second mode of each CPU's `timer.interval` in `cell`, where there
/// is one.
pub fn late_modes(run: &RunResult, cell: &CellResult) -> Vec<(Option<CpuId>, LateMode)> {
    let Some(spacing) = cell_spacing(&run.system, run.capabilities.rt_priority, cell) else {
        return Vec::new();
    };
    cell.metrics
        .iter()
        .filter(|m| m.name == metric::TIMER_INTERVAL)
        .filter_map(|m| Some((m.cpu, late_mode(&m.histogram, spacing)?)))
        .collect()
}

/// One sentence on a second mode.
pub fn late_mode_sentence(cpu: Option<CpuId>, m: &LateMode) -> String {
    let on = cpu.map_or_else(String::new, |c| format!(" on CPU {c}"));
    let by = match m.late_by {
        LateBy::Ticks(1) => format!("one tick ({})", m.expected_ns),
        LateBy::Ticks(k) => format!("{k} ticks ({})", m.expected_ns),
        LateBy::Slack => format!("the timer slack ({})", m.expected_ns),
    };
    let why = match m.late_by {
        LateBy::Ticks(_) => "wake-ups late by a tick: a timer served by the tick (low-resolution timers, a timer-wheel time-out) or a CPU held for a whole tick",
        LateBy::Slack => "the kernel spent the slack on some wake-ups and not on others",
    };
    format!(
        "timer.interval{on} has a second mode {by} after the period: {} wake-ups ({:.1} %) spaced {} more than the period; {why}",
        m.count,
        m.share * 100.0,
        m.offset_ns
    )
}

/// The granularity for the HTML report's system table: the text line
/// without its label; empty for a run from before the snapshot had it.
pub fn html_text(run: &RunResult) -> String {
    granularity_line(run)
        .and_then(|l| l.strip_prefix("timer granularity: ").map(str::to_string))
        .unwrap_or_default()
}

/// One sentence per CPU with a second mode, for the HTML report.
pub fn late_mode_notes(run: &RunResult, cell: &CellResult) -> Vec<String> {
    late_modes(run, cell)
        .iter()
        .map(|(cpu, m)| late_mode_sentence(*cpu, m))
        .collect()
}

/// The text lines for a cell's second modes, or nothing.
pub fn late_mode_lines(run: &RunResult, cell: &CellResult) -> String {
    late_modes(run, cell)
        .iter()
        .map(|(cpu, m)| format!("note: {}\n", late_mode_sentence(*cpu, m)))
        .collect()
}

/// `cells[].metrics[].late_mode` of `timer.interval` (docs/json.md).
#[derive(Serialize)]
pub struct LateModeJson {
    /// `tick` or `slack`.
    pub late_by: &'static str,
    /// How many ticks, for `tick`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ticks: Option<u32>,
    pub expected_ns: u64,
    pub offset_ns: u64,
    pub count: u64,
    pub share: f64,
}

pub fn late_mode_json(m: &LateMode) -> LateModeJson {
    let (late_by, ticks) = match m.late_by {
        LateBy::Ticks(k) => ("tick", Some(k)),
        LateBy::Slack => ("slack", None),
    };
    LateModeJson {
        late_by,
        ticks,
        expected_ns: m.expected_ns.0,
        offset_ns: m.offset_ns.0,
        count: m.count,
        share: (m.share * 1e4).round() / 1e4,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use latscope_model::Policy;
    use latscope_model::{
        Capabilities, CellMeta, RunId, RunMeta, RunStatus, TimerGranularity, TimerSettings,
        TimerSlack,
    };
    use latscope_stats::{Histogram, MetricResult};

    fn run_with(interval: Histogram, settings: TimerSettings, rt: bool) -> RunResult {
        let mut m = MetricResult::new(metric::TIMER_INTERVAL, Some(CpuId(1)));
        m.histogram = interval;
        RunResult {
            meta: RunMeta {
                status: RunStatus::Complete,
                pid: 1,
                hostname: "h".into(),
                tool_version: "0".into(),
                ..RunMeta::new(RunId(1), Nanos(0))
            },
            system: SystemInfo {
                hz: Some(250),
                granularity: TimerGranularity {
                    monotonic_res_ns: Some(1),
                    coarse_res_ns: Some(4_000_000),
                    hres_active: Some(true),
                    hres_source: Some("timer_list".into()),
                    hres_inactive_cpus: vec![],
                    default_slack_ns: Some(50_000),
                },
                ..SystemInfo::default()
            },
            capabilities: Capabilities {
                rt_priority: rt,
                timer_slack_ns: Some(if rt { 0 } else { 50_000 }),
                ..Capabilities::default()
            },
            cells: vec![CellResult::new(
                CellMeta::new(
                    0,
                    "none",
                    CellSettings::Timer(settings),
                    Nanos::from_secs(1),
                ),
                vec![m],
            )],
        }
    }

    /// 1 ms spacing, and `late` of 2,000 wake-ups `offset` later.
    fn bimodal(offset: u64, late: u64) -> Histogram {
        let mut h = Histogram::new();
        for i in 0..(2_000 - late) {
            h.record(1_000_000 + (i % 7) * 300);
        }
        for i in 0..late {
            h.record(1_000_000 + offset + (i % 7) * 300);
        }
        h
    }

    fn other_default() -> TimerSettings {
        let mut s = TimerSettings {
            timer_slack: TimerSlack::KernelDefault,
            ..TimerSettings::default()
        };
        s.common.policy = Policy::Other;
        s
    }

    #[test]
    fn the_granularity_line_names_resolution_tick_and_slack() {
        let run = run_with(Histogram::new(), other_default(), false);
        assert_eq!(
            granularity_line(&run).unwrap(),
            "timer granularity: CLOCK_MONOTONIC resolution 1ns · high-resolution timers on (from timer_list) · tick 4.00ms · timer slack: measuring threads 50.0µs, a normal thread 50.0µs"
        );
        let mut old = run.clone();
        old.system.granularity = TimerGranularity::default();
        assert_eq!(granularity_line(&old), None, "runs from before it");
    }

    #[test]
    fn a_slack_mode_is_named_for_a_normal_thread_with_the_default_slack() {
        let run = run_with(bimodal(50_000, 100), other_default(), false);
        let modes = late_modes(&run, &run.cells[0]);
        assert_eq!(modes.len(), 1);
        assert_eq!(modes[0].1.late_by, LateBy::Slack);
        let line = late_mode_lines(&run, &run.cells[0]);
        assert!(
            line.starts_with("note: timer.interval on CPU 1 has a second mode the timer slack (50.0µs) after the period: 100 wake-ups (5.0 %)"),
            "{line}"
        );
        // Under a real-time policy there is no slack to match it with.
        let mut fifo = other_default();
        fifo.common.policy = Policy::Fifo;
        let run = run_with(bimodal(50_000, 100), fifo, true);
        assert!(late_modes(&run, &run.cells[0]).is_empty());
    }

    #[test]
    fn the_html_report_shows_granularity_and_the_second_mode() {
        let run = run_with(bimodal(4_000_000, 100), TimerSettings::default(), true);
        let html = crate::html_report(&run, &[], &[]);
        assert!(html.contains("timer granularity"), "system table");
        assert!(html.contains("has a second mode one tick (4.00ms) after the period"));
        let run = run_with(bimodal(0, 0), TimerSettings::default(), true);
        assert!(!crate::html_report(&run, &[], &[]).contains("second mode"));
    }

    #[test]
    fn a_tick_mode_is_named_in_json() {
        let run = run_with(bimodal(4_000_000, 100), TimerSettings::default(), true);
        let modes = late_modes(&run, &run.cells[0]);
        let json = serde_json::to_value(late_mode_json(&modes[0].1)).unwrap();
        assert_eq!(json["late_by"], "tick");
        assert_eq!(json["ticks"], 1);
        assert_eq!(json["expected_ns"], 4_000_000);
        assert_eq!(json["count"], 100);
        assert_eq!(json["share"], 0.05);
    }
}
