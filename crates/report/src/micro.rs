//! A micro run (`latscope micro`) as text in the study's style (operation,
//! time per operation, counters per operation, interrupts per iteration),
//! as JSON and CSV, and two micro runs compared.

use latscope_model::{MicroContext, MicroResult};
use latscope_stats::micro::compare::BenchComparison;
use latscope_stats::micro::levels::{detect_levels, tlb_reach, CurvePoint, Level};
use latscope_stats::RunResult;
use serde::Serialize;

use crate::table::Table;
use crate::text::run_header;

/// The JSON document's schema tag.
pub const MICRO_JSON_SCHEMA: &str = "latscope-micro/1";

/// The line said on standard error as a benchmark is measured: its time
/// per operation, or why it was skipped.
pub fn micro_line(r: &MicroResult) -> String {
    match &r.skipped {
        Some(why) => format!("{:<28} skipped: {why}", r.bench),
        None => format!("{:<28} {}", r.bench, op_time(r.median_ns)),
    }
}

/// A per-operation time: sub-nanosecond digits below 10 ns, then ns, µs,
/// ms.
pub fn op_time(ns: f64) -> String {
    if !ns.is_finite() {
        "-".into()
    } else if ns < 10.0 {
        format!("{ns:.2}ns")
    } else if ns < 1_000.0 {
        format!("{ns:.1}ns")
    } else if ns < 1_000_000.0 {
        format!("{:.2}µs", ns / 1e3)
    } else {
        format!("{:.2}ms", ns / 1e6)
    }
}

/// A count per operation or iteration.
pub(crate) fn count(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(0.0) => "0".into(),
        Some(v) if v < 0.01 => format!("{v:.4}"),
        Some(v) if v < 10.0 => format!("{v:.2}"),
        Some(v) => format!("{v:.0}"),
    }
}

/// A counter's figure per operation for `r`; `None` when it was not read.
pub(crate) fn per_op(r: &MicroResult, name: &str) -> Option<f64> {
    r.counters
        .iter()
        .find(|c| c.name == name)
        .and_then(|c| c.per_op)
}

/// The groups of `results`, in the order they ran.
pub(crate) fn groups_in_order(results: &[MicroResult]) -> Vec<&str> {
    let mut groups: Vec<&str> = Vec::new();
    for r in results {
        if !groups.contains(&r.group.as_str()) {
            groups.push(&r.group);
        }
    }
    groups
}

/// Short column names of the counters.
fn counter_column(name: &str) -> String {
    match name {
        "task-clock" => "task-clock ns".into(),
        "context-switches" => "ctxsw".into(),
        "cpu-migrations" => "migr".into(),
        "minor-faults" => "minflt".into(),
        "major-faults" => "majflt".into(),
        other => other.into(),
    }
}

/// The counters that counted in any result, in order.
fn counted(results: &[MicroResult]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for r in results {
        for c in &r.counters {
            if c.per_op.is_some() && !names.contains(&c.name) {
                names.push(c.name.clone());
            }
        }
    }
    names
}

/// The memory curves: kind (the benchmark's name without its size) and
/// what it is in words.
pub const MEMORY_KINDS: [(&str, &str); 3] = [
    ("stride128", "128-byte stride"),
    ("random", "random order"),
    ("random_smallpages", "random order, 4 KiB pages"),
];

/// The memory curve of one kind (`stride128`, `random`,
/// `random_smallpages`).
pub fn curve(results: &[MicroResult], kind: &str) -> Vec<CurvePoint> {
    results
        .iter()
        .filter(|r| r.group == "memory" && r.skipped.is_none())
        .filter(|r| r.name.rsplit_once('_').map(|(k, _)| k) == Some(kind))
        .filter_map(|r| {
            r.bytes.map(|bytes| CurvePoint {
                bytes,
                ns: r.median_ns,
            })
        })
        .collect()
}

/// Bytes as the curve names sizes (`32K`, `1.5M`).
pub fn size(bytes: u64) -> String {
    latscope_stats::micro::size_name(bytes)
}

/// "32K (1.2ns) → 384K (4.1ns) → memory (95ns)".
pub(crate) fn levels_line(levels: &[Level]) -> String {
    levels
        .iter()
        .map(|l| match l.capacity_bytes {
            Some(c) => format!("{} ({})", size(c), op_time(l.ns)),
            None => format!("memory ({})", op_time(l.ns)),
        })
        .collect::<Vec<_>>()
        .join(" → ")
}

/// The run as text: header, counters the machine lacks, one table per
/// group, the memory levels beside sysfs's caches.
pub fn micro_text(
    run: &RunResult,
    context: Option<&MicroContext>,
    results: &[MicroResult],
) -> String {
    let mut out = run_header(run);
    if let Some(c) = context {
        out.push_str(&format!(
            "Null frame (two back-to-back clock reads, subtracted from every iteration): {}{}\n",
            op_time(c.null_ns),
            if c.quick { " · --quick" } else { "" }
        ));
        let mut missing: Vec<(String, Vec<&str>)> = Vec::new();
        for m in &c.counters {
            if let Some(why) = &m.unavailable {
                match missing.iter_mut().find(|(w, _)| w == why) {
                    Some((_, names)) => names.push(&m.name),
                    None => missing.push((why.clone(), vec![&m.name])),
                }
            }
        }
        for (why, names) in missing {
            out.push_str(&format!(
                "unavailable counters: {} ({why})\n",
                names.join(", ")
            ));
        }
    }
    let counters = counted(results);
    for g in groups_in_order(results) {
        out.push('\n');
        let mut header: Vec<String> = ["benchmark", "time/op", "min", "max", "sd", "ops/iter"]
            .into_iter()
            .map(String::from)
            .collect();
        header.extend(counters.iter().map(|c| format!("{}/op", counter_column(c))));
        header.extend(["irq/iter", "non-clock", "softirq"].map(String::from));
        let mut t = Table::new(header);
        let mut skipped = String::new();
        for r in results.iter().filter(|r| r.group == g) {
            if let Some(why) = &r.skipped {
                // Below the table: a reason is a sentence, not a column.
                skipped.push_str(&format!("{} skipped: {why}\n", r.bench));
                continue;
            }
            let mut row = vec![
                r.bench.clone(),
                op_time(r.median_ns),
                op_time(r.min_ns),
                op_time(r.max_ns),
                op_time(r.stddev_ns),
                r.ops_per_iteration.to_string(),
            ];
            for c in &counters {
                row.push(count(per_op(r, c)));
            }
            row.push(count(r.interrupts_per_iteration));
            row.push(count(r.non_timer_interrupts_per_iteration));
            row.push(count(r.softirqs_per_iteration));
            t.row(row);
        }
        if !t.is_empty() {
            out.push_str(&t.render());
        }
        out.push_str(&skipped);
    }
    let mut any = false;
    for (kind, _) in MEMORY_KINDS {
        let pts = curve(results, kind);
        if pts.len() >= 3 {
            if !any {
                out.push('\n');
                any = true;
            }
            out.push_str(&format!(
                "memory levels ({kind}): {}\n",
                levels_line(&detect_levels(&pts))
            ));
        }
    }
    if let Some(reach) = tlb_reach(
        &curve(results, "random"),
        &curve(results, "random_smallpages"),
    ) {
        out.push_str(&format!(
            "TLB reach (4 KiB pages): {} (beyond it a random load on 4 KiB pages costs at least 1.25 times one on huge pages)\n",
            size(reach)
        ));
    }
    if let Some(c) = context {
        let caches: Vec<String> = c
            .caches
            .iter()
            .filter(|c| c.kind != "Instruction")
            .map(|c| format!("L{} {}", c.level, size(c.bytes)))
            .collect();
        if !caches.is_empty() && results.iter().any(|r| r.group == "memory") {
            out.push_str(&format!("caches sysfs lists: {}\n", caches.join(", ")));
        }
    }
    out
}

/// The JSON document of a micro run.
#[derive(Serialize)]
pub struct MicroJson<'a> {
    pub schema: &'static str,
    pub run_id: i64,
    pub status: latscope_model::RunStatus,
    pub started_unix_ns: u64,
    pub command_line: &'a [String],
    pub tool_version: &'a str,
    pub system: &'a latscope_model::SystemInfo,
    pub context: Option<&'a MicroContext>,
    pub benchmarks: &'a [MicroResult],
    /// The levels detected in each memory curve.
    pub memory_levels: Vec<(String, Vec<Level>)>,
    /// The largest working set a random chase on 4 KiB pages covers
    /// without TLB misses costing 25 % more (bytes).
    pub tlb_reach_bytes: Option<u64>,
}

pub fn micro_json<'a>(
    run: &'a RunResult,
    context: Option<&'a MicroContext>,
    results: &'a [MicroResult],
) -> MicroJson<'a> {
    MicroJson {
        schema: MICRO_JSON_SCHEMA,
        run_id: run.meta.id.0,
        status: run.meta.status,
        started_unix_ns: run.meta.started_unix_ns.0,
        command_line: &run.meta.command_line,
        tool_version: &run.meta.tool_version,
        system: &run.system,
        context,
        benchmarks: results,
        tlb_reach_bytes: tlb_reach(
            &curve(results, "random"),
            &curve(results, "random_smallpages"),
        ),
        memory_levels: MEMORY_KINDS
            .into_iter()
            .filter_map(|(k, _)| {
                let pts = curve(results, k);
                (pts.len() >= 3).then(|| (k.to_string(), detect_levels(&pts)))
            })
            .collect(),
    }
}

/// One CSV field, quoted when it must be.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A micro run as CSV: a row per benchmark; a counter the machine lacks is
/// an empty field, never 0.
pub fn micro_csv(results: &[MicroResult]) -> String {
    let mut names: Vec<String> = Vec::new();
    for r in results {
        for c in &r.counters {
            if !names.contains(&c.name) {
                names.push(c.name.clone());
            }
        }
    }
    let mut header: Vec<String> = [
        "bench",
        "group",
        "name",
        "operation",
        "cpu",
        "other_cpu",
        "skipped",
        "iterations",
        "ops_per_iteration",
        "median_ns",
        "min_ns",
        "mean_ns",
        "stddev_ns",
        "max_ns",
        "overhead_ns",
        "bytes",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    header.extend(names.iter().map(|n| format!("{n}_per_op")));
    header.extend(
        [
            "interrupts_per_iteration",
            "non_timer_interrupts_per_iteration",
            "softirqs_per_iteration",
        ]
        .map(String::from),
    );
    let mut out = header.join(",") + "\n";
    let opt = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
    for r in results {
        let mut row = vec![
            field(&r.bench),
            field(&r.group),
            field(&r.name),
            field(&r.operation),
            r.cpu.to_string(),
            r.other_cpu.map_or(String::new(), |c| c.to_string()),
            field(r.skipped.as_deref().unwrap_or("")),
        ];
        if r.skipped.is_some() {
            row.resize(header.len(), String::new());
        } else {
            row.extend([
                r.iterations.to_string(),
                r.ops_per_iteration.to_string(),
                r.median_ns.to_string(),
                r.min_ns.to_string(),
                r.mean_ns.to_string(),
                r.stddev_ns.to_string(),
                r.max_ns.to_string(),
                r.overhead_ns.to_string(),
                r.bytes.map_or(String::new(), |b| b.to_string()),
            ]);
            for n in &names {
                row.push(opt(r
                    .counters
                    .iter()
                    .find(|c| &c.name == n)
                    .and_then(|c| c.per_op)));
            }
            row.push(opt(r.interrupts_per_iteration));
            row.push(opt(r.non_timer_interrupts_per_iteration));
            row.push(opt(r.softirqs_per_iteration));
        }
        out.push_str(&row.join(","));
        out.push('\n');
    }
    out
}

/// Two micro runs compared: one row per benchmark both measured.
pub fn micro_compare_text(base: i64, new: i64, rows: &[BenchComparison]) -> String {
    let mut t = Table::new([
        "benchmark".to_string(),
        format!("run {base}"),
        format!("run {new}"),
        "ratio".into(),
        "95% interval".into(),
        "verdict".into(),
    ]);
    for r in rows {
        t.row([
            r.bench.clone(),
            op_time(r.base_median_ns),
            op_time(r.new_median_ns),
            format!("{:.3}", r.ratio),
            r.ci.as_ref()
                .map_or("-".into(), |c| format!("{:.3}-{:.3}", c.low, c.high)),
            r.verdict.as_str().to_string(),
        ]);
    }
    let mut out = format!(
        "micro run {new} against run {base} (ratio = run {new} / run {base}; a verdict needs the interval to exclude 1 and a change of {:.0}% or more)\n",
        latscope_stats::micro::compare::MIN_EFFECT * 100.0
    );
    out.push_str(&t.render());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::MicroCounter;

    fn r(group: &str, name: &str, median: f64) -> MicroResult {
        MicroResult {
            bench: format!("{group}.{name}"),
            group: group.into(),
            name: name.into(),
            operation: "op".into(),
            median_ns: median,
            min_ns: median * 0.9,
            max_ns: median * 1.5,
            iterations: 50,
            ops_per_iteration: 1000,
            counters: vec![
                MicroCounter {
                    name: "task-clock".into(),
                    per_op: Some(median),
                    unavailable: None,
                },
                MicroCounter {
                    name: "cycles".into(),
                    per_op: None,
                    unavailable: Some("no PMU".into()),
                },
            ],
            interrupts_per_iteration: Some(0.5),
            ..MicroResult::default()
        }
    }

    #[test]
    fn times_keep_sub_nanosecond_digits() {
        assert_eq!(op_time(1.234), "1.23ns");
        assert_eq!(op_time(35.81), "35.8ns");
        assert_eq!(op_time(6_900.0), "6.90µs");
        assert_eq!(op_time(2.5e6), "2.50ms");
        assert_eq!(size(48 << 10), "48K");
        assert_eq!(size(3 << 19), "1.5M");
        assert_eq!(size(512), "512B");
    }

    #[test]
    fn csv_leaves_a_missing_counter_empty_never_zero() {
        let mut skipped = r("blit", "put_1bit", 0.0);
        skipped.skipped = Some("needs Xvfb, a, \"b\"".into());
        let csv = micro_csv(&[r("syscall", "getppid", 134.5), skipped]);
        let lines: Vec<&str> = csv.lines().collect();
        let header: Vec<&str> = lines[0].split(',').collect();
        let cycles = header.iter().position(|h| *h == "cycles_per_op").unwrap();
        let row: Vec<&str> = lines[1].split(',').collect();
        assert_eq!(row.len(), header.len());
        assert_eq!(row[cycles], "");
        assert_eq!(
            row[header.iter().position(|h| *h == "median_ns").unwrap()],
            "134.5"
        );
        assert!(
            lines[2].contains("\"needs Xvfb, a, \"\"b\"\"\""),
            "{}",
            lines[2]
        );
    }

    #[test]
    fn the_curve_takes_one_kind_with_its_sizes() {
        let mut a = r("memory", "random_32K", 1.5);
        a.bytes = Some(32 << 10);
        let mut b = r("memory", "stride128_32K", 1.2);
        b.bytes = Some(32 << 10);
        let pts = curve(&[a, b], "random");
        assert_eq!(
            pts,
            vec![CurvePoint {
                bytes: 32 << 10,
                ns: 1.5
            }]
        );
    }
}
