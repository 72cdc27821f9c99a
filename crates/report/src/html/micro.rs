//! The HTML page of a micro run: the run and system, the study-style table
//! of every benchmark, a bar chart of the time per operation per group,
//! and the memory curve (time per load against the working set, log-log)
//! with the levels detected in it and the caches sysfs lists.

use latscope_model::{MicroContext, MicroResult};
use latscope_stats::micro::levels::detect_levels;
use latscope_stats::RunResult;

use super::bars::{stacked_bars, StackedBar};
use super::page::{figure, para, table};
use super::svg::{Mark, Plot, Scale, Series};
use crate::micro::{count, curve, groups_in_order, levels_line, op_time, per_op, size};

/// The page of a micro run.
pub fn micro_html(
    run: &RunResult,
    context: Option<&MicroContext>,
    results: &[MicroResult],
) -> String {
    let mut page = super::Sections::default();
    page.add("system", "Run and system", super::run_and_system(run));
    page.add("table", "Benchmarks", benchmark_table(context, results));
    for g in groups_in_order(results).iter().filter(|g| **g != "memory") {
        page.add(
            &format!("group-{g}"),
            &format!("Group {g}"),
            group_bars(g, results),
        );
    }
    page.add("memory", "Memory hierarchy", memory(context, results));
    let note = format!(
        "{} on {} · kernel {} · {} benchmark(s). Times are per operation, the Null frame subtracted.",
        crate::format_utc(run.meta.started_unix_ns),
        run.meta.hostname,
        run.system.kernel_release,
        results.len()
    );
    super::document(run, &note, &page.toc, &page.body)
}

fn benchmark_table(context: Option<&MicroContext>, results: &[MicroResult]) -> String {
    let mut out = String::new();
    if let Some(c) = context {
        out.push_str(&para(
            &format!(
                "Each benchmark ran on its own CPU, warmed up, then timed over its iterations; the Null frame ({}: two back-to-back clock reads) was subtracted from every timed iteration before dividing by the operations in it; the counters come from a second pass of counted iterations.",
                op_time(c.null_ns)
            ),
            Some("note"),
        ));
        let missing: Vec<&str> = c
            .counters
            .iter()
            .filter(|m| m.unavailable.is_some())
            .map(|m| m.name.as_str())
            .collect();
        if !missing.is_empty() {
            out.push_str(&para(
                &format!(
                    "Counters this machine lacks (shown as -, never 0): {}.",
                    missing.join(", ")
                ),
                Some("note"),
            ));
        }
    }
    let header = [
        "benchmark",
        "operation",
        "time/op",
        "min",
        "max",
        "sd",
        "ops/iter",
        "task-clock ns/op",
        "ctxsw/op",
        "minflt/op",
        "irq/iter",
        "non-clock irq/iter",
        "softirq/iter",
    ];
    let counter = |r: &MicroResult, n: &str| count(per_op(r, n));
    let rows: Vec<Vec<String>> = results
        .iter()
        .map(|r| match &r.skipped {
            Some(why) => {
                let mut row = vec![r.bench.clone(), format!("skipped: {why}")];
                row.resize(header.len(), String::new());
                row
            }
            None => vec![
                r.bench.clone(),
                r.operation.clone(),
                op_time(r.median_ns),
                op_time(r.min_ns),
                op_time(r.max_ns),
                op_time(r.stddev_ns),
                r.ops_per_iteration.to_string(),
                counter(r, "task-clock"),
                counter(r, "context-switches"),
                counter(r, "minor-faults"),
                count(r.interrupts_per_iteration),
                count(r.non_timer_interrupts_per_iteration),
                count(r.softirqs_per_iteration),
            ],
        })
        .collect();
    out.push_str(&table(&header, &rows, 2));
    out
}

/// The median time per operation of a group's benchmarks as bars (µs).
fn group_bars(group: &str, results: &[MicroResult]) -> String {
    let bars: Vec<StackedBar> = results
        .iter()
        .filter(|r| r.group == group && r.skipped.is_none())
        .map(|r| StackedBar {
            label: r.name.clone(),
            parts: vec![("median".into(), r.median_ns / 1e3)],
        })
        .collect();
    let svg = stacked_bars(
        &format!("{group}: time per operation"),
        "µs per operation (median over iterations)",
        &["median".into()],
        &bars,
    );
    if svg.is_empty() {
        return String::new();
    }
    figure(
        &svg,
        &format!("The {group} benchmarks: median time per operation."),
    )
}

fn memory(context: Option<&MicroContext>, results: &[MicroResult]) -> String {
    let mut series = Vec::new();
    let mut levels_text = Vec::new();
    let mut level_segments = Vec::new();
    for (kind, label) in crate::micro::MEMORY_KINDS {
        let mut pts = curve(results, kind);
        if pts.len() < 3 {
            continue;
        }
        pts.sort_by_key(|p| p.bytes);
        series.push(Series::new(
            label,
            Mark::LineDots,
            pts.iter().map(|p| (p.bytes as f64, p.ns)).collect(),
        ));
        let levels = detect_levels(&pts);
        for l in &levels {
            level_segments.push(vec![(l.from_bytes as f64, l.ns), (l.to_bytes as f64, l.ns)]);
        }
        levels_text.push(format!("{label}: {}", levels_line(&levels)));
    }
    if series.is_empty() {
        return String::new();
    }
    if !level_segments.is_empty() {
        series.push(Series {
            name: "detected levels".into(),
            mark: Mark::Line,
            segments: level_segments,
            hollow: Vec::new(),
        });
    }
    let caches: Vec<(String, u64)> = context
        .map(|c| {
            c.caches
                .iter()
                .filter(|c| c.kind != "Instruction")
                .map(|c| (format!("L{} {}", c.level, size(c.bytes)), c.bytes))
                .collect()
        })
        .unwrap_or_default();
    let (lo, hi) = series
        .iter()
        .flat_map(|s| s.segments.iter().flatten().map(|p| p.1))
        .fold((f64::INFINITY, 0.0f64), |(a, b), y| (a.min(y), b.max(y)));
    if !caches.is_empty() && lo.is_finite() && lo > 0.0 {
        series.push(Series {
            name: "caches sysfs lists".into(),
            mark: Mark::Line,
            segments: caches
                .iter()
                .map(|(_, b)| vec![(*b as f64, lo), (*b as f64, hi)])
                .collect(),
            hollow: Vec::new(),
        });
    }
    let Some(plot) = Plot::fit(
        "Time per load against the working set",
        ("working set (bytes)", Scale::Log),
        ("ns per load", Scale::Log),
        series,
    ) else {
        return String::new();
    };
    let mut out = figure(
        &plot.render(),
        "Pointer chase: one dependent load per operation. The flat stretches are the levels of the hierarchy; vertical lines mark the caches sysfs lists.",
    );
    let mut items = levels_text;
    if let Some(reach) = latscope_stats::micro::levels::tlb_reach(
        &curve(results, "random"),
        &curve(results, "random_smallpages"),
    ) {
        items.push(format!(
            "TLB reach with 4 KiB pages: {} (beyond it a random load on 4 KiB pages costs at least 1.25 times one on huge pages).",
            size(reach)
        ));
    }
    if !caches.is_empty() {
        items.push(format!(
            "sysfs: {}",
            caches
                .iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    for i in items {
        out.push_str(&para(&i, None));
    }
    out
}
