//! cyclictest's histogram text (`-h N`, or `-H N` with a column summing
//! the threads; on standard output, or the `--histfile`): `# Histogram`,
//! one line per bucket `0 .. N-1` (`%06d`, then each thread's count), then
//! `# Total:` (wake-ups inside the histogram), `# Min Latencies:`, `# Avg
//! Latencies:` (truncated), `# Max Latencies:` and `# Histogram
//! Overflows:` per thread, and the cycle numbers of the first overflows.
//! Without `-q` the status lines (`T: 0 (1234) P:95 I:1000 C: ...`) and
//! `policy: fifo: loadavg: ...` come before it; they give the interval,
//! priority and policy. `latscope export --format cyclictest` writes the
//! same text with `# column N: cell C (probe, workload), cpu K` lines,
//! which say each column's cell and CPU.
//!
//! The text does not say which CPU a thread ran on, nor its unit (`-N`
//! gives nanoseconds), nor the date, the machine or cyclictest's version.

use latscope_model::{metric, CellSettings, CpuId, Nanos, Policy, TimerSettings, DEFAULT_PERIOD};
use latscope_record::MetricResult;

use crate::buckets::ToolHistogram;
use crate::cells::{add_metric, cell, cpus_of, scheduling, setting};
use crate::{Format, ImportError, Imported, Options, Unit};

const FORMAT: &str = "cyclictest-hist";

/// A `# Histogram` line and the line of its first bucket (a file cut
/// before its trailer is still this format, and reading it says so).
pub(crate) fn looks_like(text: &str) -> bool {
    let mut lines = text.lines().map(str::trim_end);
    lines.any(|l| l == "# Histogram") && lines.next().is_some_and(|l| l.starts_with("000000 "))
}

/// The numbers after `label` on a trailer line.
fn numbers(line: &str, label: &str) -> Result<Vec<u64>, ImportError> {
    line[label.len()..]
        .split_whitespace()
        .map(|w| {
            w.parse::<u64>().map_err(|_| {
                ImportError::invalid(FORMAT, format!("\"{label}\" has \"{w}\", not a number"))
            })
        })
        .collect()
}

/// What a `T:` status line says: interval (µs) and priority.
fn status_line(line: &str) -> Option<(u32, u64, u32)> {
    // T: 0 ( 5315) P:90 I:500 C:   1982 Min: ...
    let rest = line.strip_prefix("T:")?;
    let thread: u32 = rest.split_whitespace().next()?.parse().ok()?;
    let field = |key: &str| -> Option<u64> {
        let at = rest.find(key)? + key.len();
        rest[at..].split_whitespace().next()?.parse().ok()
    };
    Some((thread, field("I:")?, u32::try_from(field("P:")?).ok()?))
}

/// A `# column N: cell C (probe, workload), cpu K` line of latscope's export.
fn column_line(line: &str) -> Option<(usize, u32, String, Option<u32>)> {
    let rest = line.strip_prefix("# column ")?;
    let (n, rest) = rest.split_once(": cell ")?;
    let (c, rest) = rest.split_once(" (")?;
    let (inside, rest) = rest.split_once("), cpu ")?;
    let workload = inside.split_once(", ")?.1.to_string();
    Some((
        n.parse().ok()?,
        c.parse().ok()?,
        workload,
        rest.trim().parse().ok(),
    ))
}

pub(crate) fn read(text: &str, options: &Options) -> Result<Imported, ImportError> {
    // Status lines are redrawn in place with terminal escapes: the last of
    // each thread wins.
    let clean = |l: &str| -> String {
        let mut s = l.trim_end().to_string();
        while let Some(at) = s.find('\u{1b}') {
            let end = s[at + 1..]
                .find(|c: char| c.is_ascii_alphabetic())
                .map_or(s.len(), |e| at + 2 + e);
            s.replace_range(at..end, "");
        }
        s
    };
    let lines: Vec<String> = text.lines().map(clean).collect();
    let start = lines
        .iter()
        .position(|l| l == "# Histogram")
        .ok_or_else(|| ImportError::truncated(FORMAT, "there is no \"# Histogram\" line"))?;

    let mut notes = Vec::new();
    let mut status: Vec<(u32, u64, u32)> = Vec::new();
    let mut policy: Option<Policy> = None;
    let mut columns: Vec<(usize, u32, String, Option<u32>)> = Vec::new();
    for l in &lines[..start] {
        if let Some(s) = status_line(l) {
            status.retain(|x| x.0 != s.0);
            status.push(s);
        } else if let Some(p) = l.strip_prefix("policy: ") {
            policy = match p.split(':').next().unwrap_or("").trim() {
                "fifo" => Some(Policy::Fifo),
                "rr" => Some(Policy::Rr),
                "other" | "normal" | "batch" | "idle" => Some(Policy::Other),
                _ => None,
            };
        } else if let Some(c) = column_line(l) {
            columns.push(c);
        }
    }

    // The bucket lines, then the trailer.
    let mut rows: Vec<Vec<u64>> = Vec::new();
    let mut i = start + 1;
    while let Some(l) = lines.get(i) {
        if l.starts_with('#') {
            break;
        }
        i += 1;
        if l.trim().is_empty() {
            continue;
        }
        let mut words = l.split_whitespace();
        let index: u64 = words.next().and_then(|w| w.parse().ok()).ok_or_else(|| {
            ImportError::invalid(FORMAT, format!("line {i}: \"{l}\" is not a histogram line"))
        })?;
        if index != rows.len() as u64 {
            return Err(ImportError::invalid(
                FORMAT,
                format!(
                    "line {i}: bucket {index} where bucket {} was due",
                    rows.len()
                ),
            ));
        }
        let counts = words
            .map(|w| w.parse::<u64>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| {
                ImportError::invalid(
                    FORMAT,
                    format!("line {i}: \"{l}\" has a count that is not a number"),
                )
            })?;
        if let Some(first) = rows.first() {
            if first.len() != counts.len() {
                return Err(ImportError::invalid(
                    FORMAT,
                    format!(
                        "line {i}: {} counts where the first line has {}",
                        counts.len(),
                        first.len()
                    ),
                ));
            }
        }
        rows.push(counts);
    }
    let trailer = |label: &str| -> Result<Vec<u64>, ImportError> {
        let line = lines[i.min(lines.len())..]
            .iter()
            .find(|l| l.starts_with(label))
            .ok_or_else(|| {
                ImportError::truncated(FORMAT, format!("there is no \"{label}\" line"))
            })?;
        numbers(line, label)
    };
    let total = trailer("# Total:")?;
    let min = trailer("# Min Latencies:")?;
    let avg = trailer("# Avg Latencies:")?;
    let max = trailer("# Max Latencies:")?;
    let overflows = trailer("# Histogram Overflows:")?;
    // Min and Avg never have -H's summary column: they count the threads.
    let threads = min.len();
    if threads == 0 || avg.len() != threads {
        return Err(ImportError::invalid(
            FORMAT,
            "\"# Min Latencies:\" and \"# Avg Latencies:\" name different numbers of threads",
        ));
    }
    for (label, v) in [
        ("# Total:", &total),
        ("# Max Latencies:", &max),
        ("# Histogram Overflows:", &overflows),
    ] {
        if v.len() != threads && v.len() != threads + 1 {
            return Err(ImportError::invalid(
                FORMAT,
                format!("\"{label}\" has {} values for {threads} threads", v.len()),
            ));
        }
    }
    if rows.is_empty() {
        return Err(ImportError::invalid(FORMAT, "the histogram has no lines"));
    }
    let width = rows[0].len();
    if width != threads && width != threads + 1 {
        return Err(ImportError::invalid(
            FORMAT,
            format!("the histogram has {width} columns for {threads} threads"),
        ));
    }
    if !columns.is_empty() && columns.len() != threads {
        return Err(ImportError::invalid(
            FORMAT,
            format!("{} \"# column\" lines for {threads} columns", columns.len()),
        ));
    }

    let unit = options.unit.unwrap_or(Unit::Micros);
    if options.unit.is_none() {
        notes.push(
            "cyclictest's histogram text does not say its unit: read as microseconds (give --unit ns for cyclictest -N)".to_string(),
        );
    }
    let range = rows.len() as u64;
    let mut cells: Vec<(u32, String, Vec<MetricResult>, u64)> = Vec::new();
    for t in 0..threads {
        let who = format!("thread {t}");
        let buckets: Vec<(u64, u64)> = rows
            .iter()
            .enumerate()
            .map(|(v, r)| (v as u64, r[t]))
            .collect();
        let in_range: u64 = buckets.iter().map(|b| b.1).fold(0, u64::saturating_add);
        if in_range != total[t] {
            return Err(ImportError::invalid(
                FORMAT,
                format!(
                    "{who}: the histogram lines add up to {in_range} but \"# Total:\" says {}",
                    total[t]
                ),
            ));
        }
        let cycles = in_range.checked_add(overflows[t]).ok_or_else(|| {
            ImportError::invalid(
                FORMAT,
                format!("{who}: the histogram's lines and overflows add up past 2^64"),
            )
        })?;
        if cycles == 0 {
            notes.push(format!("{who} counted no wake-ups and is left out"));
            continue;
        }
        let tool = ToolHistogram {
            unit_ns: unit.ns(),
            buckets,
            width: 1,
            overflow: overflows[t],
            range_end: Some(range),
            min: Some(min[t]),
            max: Some(max[t]),
            avg: Some(avg[t] as f64),
        };
        let rebuilt = tool
            .rebuild(&who)
            .map_err(|e| ImportError::invalid(FORMAT, e))?;
        notes.extend(rebuilt.note);
        let (index, workload, cpu) = match columns.get(t) {
            Some((_, c, w, Some(cpu))) => (*c, w.clone(), CpuId(*cpu)),
            _ => (0, options.workload(), CpuId(t as u32)),
        };
        let mut m = MetricResult::new(metric::TIMER_LATENCY, Some(cpu));
        m.histogram = rebuilt.histogram;
        match cells.iter_mut().find(|c| c.0 == index) {
            Some(c) => {
                add_metric(&mut c.2, m, &mut notes);
                c.3 = c.3.max(cycles);
            }
            None => cells.push((index, workload, vec![m], cycles)),
        }
    }
    if columns.is_empty() {
        notes.push(
            "cyclictest's histogram text does not say which CPU each thread ran on: thread N is stored as CPU N".to_string(),
        );
    }
    notes.push(
        "cyclictest's histogram text records no date, machine or version; the cycle numbers of overflows are not kept".to_string(),
    );

    // The status lines' interval and priority, when cyclictest printed them.
    let interval = status.iter().map(|s| s.1).max().map(Nanos::from_micros);
    if status
        .iter()
        .any(|s| Some(Nanos::from_micros(s.1)) != interval)
    {
        notes.push("the threads' intervals differ: the cell records the longest".to_string());
    }
    let priority = status.iter().map(|s| s.2).max();
    let file_sched = match (policy, priority) {
        (Some(p), Some(n)) => Some((p, if p == Policy::Other { 0 } else { n })),
        (None, Some(n)) if n > 0 => Some((Policy::Fifo, n)),
        _ => None,
    };
    let mut out = Vec::new();
    cells.sort_by_key(|c| c.0);
    for (index, workload, metrics, cycles) in cells {
        let period = setting(
            interval,
            options.period,
            "--period",
            "period",
            (DEFAULT_PERIOD, "cyclictest's default interval"),
            &mut notes,
        )?;
        let (policy, priority) = scheduling(
            file_sched,
            options,
            (Policy::Other, 0, "cyclictest's default"),
            &mut notes,
        )?;
        let mut s = TimerSettings {
            period_ns: period,
            ..TimerSettings::default()
        };
        s.common.policy = policy;
        s.common.priority = priority;
        s.common.cpus = cpus_of(&metrics);
        let duration = Nanos(period.0.saturating_mul(cycles));
        out.push(cell(
            index,
            workload,
            CellSettings::Timer(s),
            duration,
            metrics,
        ));
    }
    notes.dedup();
    Ok(Imported {
        format: Format::CyclictestHist,
        tool_version: None,
        command_line: None,
        started: None,
        ended: None,
        failed: None,
        system: Default::default(),
        cells: out,
        notes,
    })
}
