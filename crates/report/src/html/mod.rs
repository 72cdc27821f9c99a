//! The HTML report: one self-contained page for a stored run — system and
//! `check` findings, workload characterization, the summary matrix, per
//! cell and metric the log-log histogram, the exceedance curve, the
//! per-second maxima, the percentiles over time of the checkpoint
//! intervals and the per-hour maxima, the decomposition of traced
//! wake-ups, the busiest interrupt and deferred-work sources, the episodes
//! with their causes, and the forecast (time to buffer underrun against
//! buffering, application verdicts).
//!
//! Everything is inline (SVG plots, one style sheet): no script, no font
//! or image to fetch, so the page opens offline, prints, and can be mailed.
//! A section appears only when the run holds its data. Like the rest of
//! this crate it takes stored values and returns a `String`; the caller
//! loads the run and its timelines ([`Timeline`]) and writes the file.

mod bars;
mod cell;
mod diagnostics;
mod episodes;
mod escape;
mod forecast;
mod held;
mod intervals;
pub use intervals::MAX_POINTS as INTERVAL_PLOT_POINTS;
mod micro;
mod page;
mod sources;
pub mod svg;

use std::fmt::Write as _;

use latscope_model::{metric, CpuId, Nanos, Severity, WorkloadStats};
use latscope_stats::blocks::ObservedBlocks;
use latscope_stats::forecast::{CellSnapshot, ForecastReport};
use latscope_stats::{CellResult, Histogram, IntervalSeries, RunResult, SecondStats};

pub use cell::is_plotted;
pub use escape::escape;
pub use forecast::report_forecast;
pub use micro::micro_html;
use page::{para, table};

/// One metric's per-second timeline on one CPU of one cell, as the store
/// keeps it (second 0 = the cell's start).
#[derive(Clone, Debug, PartialEq)]
pub struct Timeline {
    /// The cell's index in the run.
    pub cell: u32,
    pub metric: String,
    pub cpu: Option<CpuId>,
    /// The cell second `seconds[0]` is: 0, or later for a monitor whose
    /// oldest seconds the retention deleted.
    pub first_second: u64,
    pub seconds: Vec<SecondStats>,
}

/// The report of `run` as a complete HTML document. `timelines` holds the
/// per-second maxima the store has for the run's metrics (any subset; a
/// metric without one has no time plot), `snapshots` the histograms it kept
/// at the cells' checkpoints (any subset; the forecast's checks use them).
pub fn html_report(run: &RunResult, timelines: &[Timeline], snapshots: &[CellSnapshot]) -> String {
    html_report_observed(run, timelines, snapshots, None)
}

/// [`html_report`] with, for a monitor run, the observed worst case of the
/// wake-up latency per minute, hour, day and week from its windows.
pub fn html_report_observed(
    run: &RunResult,
    timelines: &[Timeline],
    snapshots: &[CellSnapshot],
    observed: Option<&ObservedBlocks>,
) -> String {
    html_report_full(run, timelines, snapshots, observed, &[])
}

/// [`html_report_observed`] with the checkpoint intervals the store kept
/// (any subset; [`IntervalSeries::cell`] names the cell): per cell and
/// metric that has them, the percentiles over time (p50, p99, p99.9 and
/// the maximum of each interval).
pub fn html_report_full(
    run: &RunResult,
    timelines: &[Timeline],
    snapshots: &[CellSnapshot],
    observed: Option<&ObservedBlocks>,
    intervals: &[IntervalSeries],
) -> String {
    let forecast = forecast::report_forecast(run, timelines, snapshots);
    html_report_page(run, timelines, forecast.as_ref(), observed, intervals, &[])
}

/// The page of [`html_report_full`] with the forecast computed by the
/// caller (for a long monitor, from the part of the run whose timeline is
/// stored: see `latscope report`) and `forecast_notes` above it.
pub fn html_report_page(
    run: &RunResult,
    timelines: &[Timeline],
    forecast: Option<&ForecastReport>,
    observed: Option<&ObservedBlocks>,
    intervals: &[IntervalSeries],
    forecast_notes: &[String],
) -> String {
    let mut page = Sections::default();
    page.add("system", "Run and system", run_and_system(run));
    page.add("findings", "Latency hazards (check)", findings(run));
    page.add("workloads", "Workload characterization", workloads(run));
    page.add("matrix", "Worst case per metric and workload", matrix(run));
    if let Some(o) = observed {
        page.add(
            "observed",
            "Observed worst case per minute, hour, day and week (monitor)",
            observed_section(o),
        );
    }
    for c in &run.cells {
        let id = format!("cell-{}", c.meta.index);
        let title = format!(
            "Cell {} · {} probe · workload {}",
            c.meta.index, c.meta.probe, c.meta.workload
        );
        let notes = crate::granularity::late_mode_notes(run, c);
        page.add(
            &id,
            &title,
            cell::cell_section(c, timelines, intervals, &notes),
        );
    }
    page.add(
        "forecast",
        "Forecast: buffering and applications",
        forecast::forecast_section(forecast, forecast_notes),
    );

    let note = format!(
        "{} on {} · kernel {} · {} cell(s). All latencies are per CPU; plots use microseconds.",
        crate::format_utc(run.meta.started_unix_ns),
        run.meta.hostname,
        run.system.kernel_release,
        run.cells.len()
    );
    document(run, &note, &page.toc, &page.body)
}

/// The monitor's block maxima: complete blocks only, so a partial day never
/// passes for a quiet one.
fn observed_section(o: &ObservedBlocks) -> String {
    let rows: Vec<Vec<String>> = [
        ("minute", &o.minute),
        ("hour", &o.hour),
        ("day", &o.day),
        ("week", &o.week),
    ]
    .iter()
    .map(|(name, b)| crate::blocks::block_row(name, b).to_vec())
    .collect();
    let mut out = para(
        "The largest timer.latency (all CPUs) of each UTC minute the minute windows still hold (7 days by default) and of each complete UTC hour, day and week the monitor measured (from its hour windows): observed, not forecast. Quartiles by nearest rank.",
        None,
    );
    out.push_str(&table(&crate::blocks::BLOCK_COLUMNS, &rows, 1));
    out
}

/// A page's sections as they are added, and its table of contents.
#[derive(Default)]
pub(super) struct Sections {
    pub body: String,
    pub toc: Vec<(String, String)>,
}

impl Sections {
    /// Adds a section with an entry in the contents; an empty one is left
    /// out.
    pub fn add(&mut self, id: &str, title: &str, content: String) {
        if content.is_empty() {
            return;
        }
        self.toc.push((id.to_string(), title.to_string()));
        let _ = write!(
            self.body,
            "<section id=\"{id}\"><h2>{}</h2>{content}</section>",
            escape(title)
        );
    }
}

/// The page around `body`: head, title, the one-line `note`, the contents.
fn document(run: &RunResult, note: &str, toc: &[(String, String)], body: &str) -> String {
    let title = format!("latscope report · run {}", run.meta.id);
    let mut out = String::with_capacity(body.len() + 4096);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"latscope {}\">\n<title>{}</title>\n<style>{}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
        escape(&run.meta.tool_version),
        escape(&title),
        page::STYLE,
        escape(&title)
    );
    let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(note));
    out.push_str("<nav><h2>Contents</h2><ul>");
    for (id, t) in toc {
        let _ = write!(out, "<li><a href=\"#{id}\">{}</a></li>", escape(t));
    }
    out.push_str("</ul></nav>\n");
    out.push_str(body);
    out.push_str("\n</body>\n</html>\n");
    out
}

/// A definition list of `(term, value)`, skipping empty values.
fn key_values(items: &[(&str, String)]) -> String {
    let mut out = String::from("<dl class=\"kv\">");
    for (k, v) in items {
        if v.is_empty() {
            continue;
        }
        let _ = write!(out, "<dt>{}</dt><dd>{}</dd>", escape(k), escape(v));
    }
    out.push_str("</dl>");
    out
}

fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.to_string()
}

fn opt_text<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map_or_else(String::new, |t| t.to_string())
}

fn run_and_system(run: &RunResult) -> String {
    let m = &run.meta;
    let s = &run.system;
    let c = &run.capabilities;
    let duration = m
        .ended_unix_ns
        .map(|e| Nanos(e.0.saturating_sub(m.started_unix_ns.0)).to_string())
        .unwrap_or_default();
    let mut out = String::from("<h3>Run</h3>");
    out.push_str(&key_values(&[
        ("run", m.id.to_string()),
        ("status", m.status.to_string()),
        ("started (UTC)", crate::format_utc(m.started_unix_ns)),
        (
            "ended (UTC)",
            m.ended_unix_ns.map(crate::format_utc).unwrap_or_default(),
        ),
        ("wall time", duration),
        ("command", m.command_line.join(" ")),
        (
            "imported from",
            m.source
                .as_ref()
                .map(|s| s.to_string().replacen("imported from ", "", 1))
                .unwrap_or_default(),
        ),
        (
            "tool's command",
            m.source
                .as_ref()
                .and_then(|s| s.command_line.clone())
                .unwrap_or_default(),
        ),
        ("host", m.hostname.clone()),
        ("latscope", m.tool_version.clone()),
        ("notes", m.notes.join("; ")),
    ]));
    out.push_str("<h3>System</h3>");
    let rt = match (s.rt_runtime_us, s.rt_period_us) {
        (Some(-1), _) => "off (sched_rt_runtime_us = -1)".to_string(),
        (Some(r), Some(p)) => format!("{r} µs of every {p} µs"),
        _ => String::new(),
    };
    let governors: Vec<String> = {
        let mut g: Vec<&String> = s.cpufreq_governors.values().collect();
        g.dedup();
        g.into_iter().cloned().collect()
    };
    out.push_str(&key_values(&[
        (
            "kernel",
            format!("{} {}", s.kernel_release, s.kernel_version),
        ),
        (
            "preemption model",
            match (&s.preemption_model, &s.preemption_source) {
                (Some(p), Some(src)) => format!("{p} (from {src})"),
                (Some(p), None) => p.clone(),
                _ => String::new(),
            },
        ),
        ("HZ", opt_text(&s.hz)),
        ("timer granularity", crate::granularity::html_text(run)),
        ("clocksource", opt_text(&s.clocksource)),
        ("CPU", opt_text(&s.cpu_model)),
        (
            "CPUs online",
            format!("{} ({})", s.cpu_count, s.cpus_online),
        ),
        ("SMT active", s.smt_active.map(yes_no).unwrap_or_default()),
        ("cpufreq governor", governors.join(", ")),
        (
            "cpuidle",
            match (&s.cpuidle_driver, &s.cpuidle_governor) {
                (Some(d), Some(g)) => format!("{d} / {g}"),
                (Some(d), None) => d.clone(),
                _ => String::new(),
            },
        ),
        (
            "idle states",
            s.cpuidle_states
                .iter()
                .map(|st| {
                    format!(
                        "{} ({} µs{})",
                        st.name,
                        st.latency_us,
                        if st.disabled { ", disabled" } else { "" }
                    )
                })
                .collect::<Vec<_>>()
                .join(", "),
        ),
        (
            "hypervisor",
            if s.hypervisor {
                s.hypervisor_vendor
                    .clone()
                    .unwrap_or_else(|| "yes".to_string())
            } else {
                "no".to_string()
            },
        ),
        ("RT throttling", rt),
        ("isolcpus", opt_text(&s.isolcpus)),
        ("nohz_full", opt_text(&s.nohz_full)),
        ("rcu_nocbs", opt_text(&s.rcu_nocbs)),
        ("TSC constant and non-stop", yes_no(s.tsc_constant_nonstop)),
        ("kernel command line", s.kernel_cmdline.clone()),
    ]));
    if let Some(source) = &m.source {
        out.push_str("<h3>What the run obtained</h3>");
        out.push_str(&para(
            &format!(
                "Not recorded: the run was imported from {}, whose file does not say whether it obtained real-time priority or locked memory.",
                source.tool_and_version()
            ),
            None,
        ));
        return out;
    }
    out.push_str("<h3>What the run obtained</h3>");
    out.push_str(&key_values(&[
        ("real-time priority", yes_no(c.rt_priority)),
        ("memory locked", yes_no(c.mlock)),
        ("cpu_dma_latency held at 0", yes_no(c.dma_latency)),
        (
            "timer slack",
            c.timer_slack_ns
                .map(crate::granularity::slack_text)
                .unwrap_or_default(),
        ),
        ("tracepoints", yes_no(c.tracepoints)),
        ("stack samples", yes_no(c.stack_samples)),
        ("not obtained", c.missing.join("; ")),
    ]));
    if !c.rt_priority || !c.mlock {
        out.push_str(&para(
            "These results were taken without real-time priority or without locked memory: they are not real-time results.",
            Some("fail"),
        ));
    }
    out
}

fn findings(run: &RunResult) -> String {
    let hazards = &run.system.hazards;
    if hazards.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<div class=\"scroll\"><table><thead><tr><th>severity</th><th>finding</th><th>what was found</th><th>remedy</th></tr></thead><tbody>",
    );
    for h in hazards {
        let class = match h.severity {
            Severity::Hazard => "sev-hazard",
            Severity::Warning => "sev-warning",
            Severity::Info => "",
        };
        let _ = write!(
            out,
            "<tr><td class=\"{class}\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            h.severity,
            escape(&h.title),
            escape(&h.detail),
            escape(&h.remedy)
        );
    }
    out.push_str("</tbody></table></div>");
    out
}

fn opt_rate(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_string(), crate::workload::rate)
}

fn workloads(run: &RunResult) -> String {
    let cells: Vec<&CellResult> = run
        .cells
        .iter()
        .filter(|c| c.workload_stats.is_some())
        .collect();
    if cells.is_empty() {
        return String::new();
    }
    let header = [
        "cell",
        "workload",
        "samples",
        "usr %",
        "sys %",
        "irq %",
        "sirq %",
        "steal %",
        "iowait %",
        "idle %",
        "intr/s",
        "ctxsw/s",
        "syscall/s",
        "softirq/s",
        "disk rd/s",
        "disk wr/s",
        "disk B/s",
        "pkt/s",
        "net B/s",
        "faults/s",
        "runnable",
    ];
    let mut rows = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    let mut sources = String::new();
    for c in &cells {
        let Some(w) = &c.workload_stats else {
            continue;
        };
        rows.push(workload_row(c.meta.index, w));
        for n in &w.notes {
            let line = format!("cell {}: {n}", c.meta.index);
            if !notes.contains(&line) {
                notes.push(line);
            }
        }
        sources.push_str(&workload_sources_item(c.meta.index, w));
    }
    let mut out = para(
        "What each cell's background load did to the machine, as means over the cell (CPU shares over all CPUs; rates per second; bytes in powers of 1024).",
        Some("note"),
    );
    out.push_str(&table(&header, &rows, 2));
    if !sources.is_empty() {
        let _ = write!(
            out,
            "<h4>Busiest interrupt sources and softirqs</h4><ul>{sources}</ul>"
        );
    }
    for n in notes {
        out.push_str(&para(&n, Some("note")));
    }
    out
}

/// One row of the workloads table: cell `index`'s workload and the means
/// of what it did to the machine.
fn workload_row(index: u32, w: &WorkloadStats) -> Vec<String> {
    let m = &w.mean;
    let mut r = vec![index.to_string(), w.workload.clone(), w.samples.to_string()];
    match &m.cpu_all {
        Some(p) => r.extend(
            [
                p.user + p.nice,
                p.sys,
                p.irq,
                p.softirq,
                p.steal,
                p.iowait,
                p.idle,
            ]
            .map(|v| format!("{v:.1}")),
        ),
        None => r.extend(vec!["-".to_string(); 7]),
    }
    r.extend([
        opt_rate(m.interrupts_per_s),
        opt_rate(m.context_switches_per_s),
        opt_rate(m.syscalls_per_s),
        opt_rate(m.softirqs_per_s),
    ]);
    match &m.disk {
        Some(d) => r.extend([
            crate::workload::rate(d.reads_per_s),
            crate::workload::rate(d.writes_per_s),
            crate::workload::bytes(d.read_kb_per_s + d.write_kb_per_s),
        ]),
        None => r.extend(vec!["-".to_string(); 3]),
    }
    let nets: Vec<_> = [&m.net_lo, &m.net].into_iter().flatten().collect();
    if nets.is_empty() {
        r.extend(["-".to_string(), "-".to_string()]);
    } else {
        r.push(crate::workload::rate(
            nets.iter().map(|n| n.packets_per_s()).sum(),
        ));
        r.push(crate::workload::bytes(
            nets.iter().map(|n| n.kb_per_s()).sum(),
        ));
    }
    r.push(opt_rate(m.page_faults_per_s));
    r.push(
        m.runnable
            .map_or_else(|| "-".to_string(), |v| format!("{v:.1}")),
    );
    r
}

/// Cell `index`'s busiest interrupt sources and softirqs, as a list item
/// (empty when it saw none).
fn workload_sources_item(index: u32, w: &WorkloadStats) -> String {
    let irqs: Vec<String> = w
        .top_interrupts
        .iter()
        .map(|s| {
            format!(
                "{} {}/s ({})",
                s.source,
                crate::workload::rate(s.per_s),
                s.short_description()
            )
        })
        .collect();
    let mut vectors: Vec<(&String, &f64)> =
        w.softirqs_per_s.iter().filter(|(_, &v)| v > 0.0).collect();
    vectors.sort_by(|a, b| b.1.total_cmp(a.1).then_with(|| a.0.cmp(b.0)));
    let vectors: Vec<String> = vectors
        .iter()
        .map(|(n, &v)| format!("{n} {}/s", crate::workload::rate(v)))
        .collect();
    if irqs.is_empty() && vectors.is_empty() {
        return String::new();
    }
    format!(
        "<li>cell {} · {}: interrupts {}; softirqs {}</li>",
        index,
        escape(&w.workload),
        escape(&if irqs.is_empty() {
            "none".to_string()
        } else {
            irqs.join(", ")
        }),
        escape(&if vectors.is_empty() {
            "none".to_string()
        } else {
            vectors.join(", ")
        })
    )
}

/// The metrics the matrix and the forecast summarize, per probe.
pub(crate) fn headline_metric(probe: &str) -> Option<&'static str> {
    match probe {
        "timer" => Some(metric::TIMER_LATENCY),
        "noise" => Some(metric::NOISE_GAP),
        _ => None,
    }
}

/// "fifo 95", "other": the scheduling setting of a cell.
pub(crate) fn setting(c: &CellResult) -> String {
    c.meta.settings.sched_label()
}

/// All CPUs of one metric in one cell merged.
pub(crate) fn pooled(c: &CellResult, name: &str) -> Histogram {
    let mut h = Histogram::new();
    for m in c.metrics.iter().filter(|m| m.name == name) {
        h.merge(&m.histogram);
    }
    h
}

fn matrix(run: &RunResult) -> String {
    let mut workloads: Vec<&str> = Vec::new();
    let mut rows: Vec<(String, Vec<(String, Histogram)>)> = Vec::new();
    for c in &run.cells {
        let Some(name) = headline_metric(&c.meta.probe) else {
            continue;
        };
        let h = pooled(c, name);
        if h.is_empty() {
            continue;
        }
        if !workloads.contains(&c.meta.workload.as_str()) {
            workloads.push(&c.meta.workload);
        }
        let key = format!("{name} · {}", setting(c));
        let idx = match rows.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                rows.push((key, Vec::new()));
                rows.len() - 1
            }
        };
        let by_workload = &mut rows[idx].1;
        match by_workload.iter_mut().find(|(w, _)| *w == c.meta.workload) {
            Some((_, acc)) => acc.merge(&h),
            None => by_workload.push((c.meta.workload.clone(), h)),
        }
    }
    if rows.is_empty() {
        return String::new();
    }
    let mut header = vec!["metric · setting".to_string()];
    header.extend(workloads.iter().map(|w| w.to_string()));
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|(key, by)| {
            let mut r = vec![key.clone()];
            for w in &workloads {
                r.push(match by.iter().find(|(name, _)| name == w) {
                    Some((_, h)) => format!(
                        "{} ({})",
                        page::opt_ns(h.max()),
                        page::opt_ns(h.quantile(0.999))
                    ),
                    None => "-".to_string(),
                });
            }
            r
        })
        .collect();
    let mut out = para(
        "Worst case per workload, the 99.9th percentile in brackets; all measured CPUs pooled (after Bernadat's Table 15).",
        Some("note"),
    );
    out.push_str(&table(&header, &body, 1));
    out
}

#[cfg(test)]
mod tests;
