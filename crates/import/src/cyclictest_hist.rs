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

use latscope_model::{metric, CellSettings, CpuId, Nanos, Policy};
use latscope_record::MetricResult;

use crate::buckets::ToolHistogram;
use crate::cells::{add_metric, cell, cpus_of, timer_settings};
use crate::{Format, ImportError, ImportOption, Imported, Options, Unit};

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

/// What the lines before `# Histogram` say: the threads' last status
/// lines, the policy, latscope's column lines.
#[derive(Default)]
struct Preamble {
    status: Vec<(u32, u64, u32)>,
    policy: Option<Policy>,
    columns: Vec<(usize, u32, String, Option<u32>)>,
}

impl Preamble {
    fn of(lines: &[String]) -> Preamble {
        let mut p = Preamble::default();
        for l in lines {
            if let Some(s) = status_line(l) {
                p.status.retain(|x| x.0 != s.0);
                p.status.push(s);
            } else if let Some(policy) = l.strip_prefix("policy: ") {
                p.policy = match policy.split(':').next().unwrap_or("").trim() {
                    "fifo" => Some(Policy::Fifo),
                    "rr" => Some(Policy::Rr),
                    "other" | "normal" | "batch" | "idle" => Some(Policy::Other),
                    _ => None,
                };
            } else if let Some(c) = column_line(l) {
                p.columns.push(c);
            }
        }
        p
    }

    /// The status lines' interval and priority, when cyclictest printed
    /// them, as the period and scheduling the file says.
    fn timer(&self, notes: &mut Vec<String>) -> (Option<Nanos>, Option<(Policy, u32)>) {
        let interval = self
            .status
            .iter()
            .map(|s| s.1)
            .max()
            .map(Nanos::from_micros);
        if self
            .status
            .iter()
            .any(|s| Some(Nanos::from_micros(s.1)) != interval)
        {
            notes.push("the threads' intervals differ: the cell records the longest".to_string());
        }
        let priority = self.status.iter().map(|s| s.2).max();
        let sched = match (self.policy, priority) {
            (Some(p), Some(n)) => Some((p, if p == Policy::Other { 0 } else { n })),
            (None, Some(n)) if n > 0 => Some((Policy::Fifo, n)),
            _ => None,
        };
        (interval, sched)
    }
}

/// The trailer's figures per thread (with `-H`, maybe a summary column).
struct Trailer {
    total: Vec<u64>,
    min: Vec<u64>,
    avg: Vec<u64>,
    max: Vec<u64>,
    overflows: Vec<u64>,
}

impl Trailer {
    /// The trailer lines after the histogram (from line index `from`).
    fn of(lines: &[String], from: usize) -> Result<Trailer, ImportError> {
        let trailer = |label: &str| -> Result<Vec<u64>, ImportError> {
            let line = lines[from.min(lines.len())..]
                .iter()
                .find(|l| l.starts_with(label))
                .ok_or_else(|| {
                    ImportError::truncated(FORMAT, format!("there is no \"{label}\" line"))
                })?;
            numbers(line, label)
        };
        let t = Trailer {
            total: trailer("# Total:")?,
            min: trailer("# Min Latencies:")?,
            avg: trailer("# Avg Latencies:")?,
            max: trailer("# Max Latencies:")?,
            overflows: trailer("# Histogram Overflows:")?,
        };
        // Min and Avg never have -H's summary column: they count the threads.
        let threads = t.min.len();
        if threads == 0 || t.avg.len() != threads {
            return Err(ImportError::invalid(
                FORMAT,
                "\"# Min Latencies:\" and \"# Avg Latencies:\" name different numbers of threads",
            ));
        }
        for (label, v) in [
            ("# Total:", &t.total),
            ("# Max Latencies:", &t.max),
            ("# Histogram Overflows:", &t.overflows),
        ] {
            if v.len() != threads && v.len() != threads + 1 {
                return Err(ImportError::invalid(
                    FORMAT,
                    format!("\"{label}\" has {} values for {threads} threads", v.len()),
                ));
            }
        }
        Ok(t)
    }

    fn threads(&self) -> usize {
        self.min.len()
    }
}

/// Status lines are redrawn in place with terminal escapes: the escapes
/// are taken out (the last line of each thread wins).
fn clean(l: &str) -> String {
    let mut s = l.trim_end().to_string();
    while let Some(at) = s.find('\u{1b}') {
        let end = s[at + 1..]
            .find(|c: char| c.is_ascii_alphabetic())
            .map_or(s.len(), |e| at + 2 + e);
        s.replace_range(at..end, "");
    }
    s
}

/// The bucket lines after `# Histogram` (at line index `start`): one row
/// of counts per bucket, and the index of the line after them.
fn rows(lines: &[String], start: usize) -> Result<(Vec<Vec<u64>>, usize), ImportError> {
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
    Ok((rows, i))
}

pub(crate) fn read(text: &str, options: &Options) -> Result<Imported, ImportError> {
    let lines: Vec<String> = text.lines().map(clean).collect();
    let start = lines
        .iter()
        .position(|l| l == "# Histogram")
        .ok_or_else(|| ImportError::truncated(FORMAT, "there is no \"# Histogram\" line"))?;
    let mut notes = Vec::new();
    let preamble = Preamble::of(&lines[..start]);
    let (rows, end) = rows(&lines, start)?;
    let trailer = Trailer::of(&lines, end)?;
    let threads = trailer.threads();
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
    let columns = &preamble.columns;
    if !columns.is_empty() && columns.len() != threads {
        return Err(ImportError::invalid(
            FORMAT,
            format!("{} \"# column\" lines for {threads} columns", columns.len()),
        ));
    }
    let unit = options.unit.unwrap_or(Unit::Micros);
    if options.unit.is_none() {
        notes.push(format!(
            "cyclictest's histogram text does not say its unit: read as microseconds (give {} ns for cyclictest -N)",
            options.names.name(ImportOption::Unit)
        ));
    }
    let mut cells: Vec<(u32, String, Vec<MetricResult>, u64)> = Vec::new();
    for t in 0..threads {
        let Some((m, cycles)) = thread_metric(t, &rows, &trailer, unit, columns, &mut notes)?
        else {
            continue;
        };
        let (index, workload) = match columns.get(t) {
            Some((_, c, w, Some(_))) => (*c, w.clone()),
            _ => (0, options.workload()),
        };
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
    let (interval, file_sched) = preamble.timer(&mut notes);
    let mut out = Vec::new();
    cells.sort_by_key(|c| c.0);
    for (index, workload, metrics, cycles) in cells {
        let mut s = timer_settings(
            interval,
            file_sched,
            options,
            "cyclictest's default interval",
            (Policy::Other, 0, "cyclictest's default"),
            &mut notes,
        )?;
        s.common.cpus = cpus_of(&metrics);
        let duration = Nanos(s.period_ns.0.saturating_mul(cycles));
        out.push(cell(
            index,
            workload,
            CellSettings::Timer(s),
            duration,
            metrics,
        ));
    }
    notes.dedup();
    Ok(Imported::without_header(Format::CyclictestHist, out, notes))
}

/// Thread `t`'s column as `timer.latency` of its CPU, and its cycles;
/// `None` for a thread that counted no wake-ups.
fn thread_metric(
    t: usize,
    rows: &[Vec<u64>],
    trailer: &Trailer,
    unit: Unit,
    columns: &[(usize, u32, String, Option<u32>)],
    notes: &mut Vec<String>,
) -> Result<Option<(MetricResult, u64)>, ImportError> {
    let who = format!("thread {t}");
    let buckets: Vec<(u64, u64)> = rows
        .iter()
        .enumerate()
        .map(|(v, r)| (v as u64, r[t]))
        .collect();
    let in_range: u64 = buckets.iter().map(|b| b.1).fold(0, u64::saturating_add);
    if in_range != trailer.total[t] {
        return Err(ImportError::invalid(
            FORMAT,
            format!(
                "{who}: the histogram lines add up to {in_range} but \"# Total:\" says {}",
                trailer.total[t]
            ),
        ));
    }
    let cycles = in_range.checked_add(trailer.overflows[t]).ok_or_else(|| {
        ImportError::invalid(
            FORMAT,
            format!("{who}: the histogram's lines and overflows add up past 2^64"),
        )
    })?;
    if cycles == 0 {
        notes.push(format!("{who} counted no wake-ups and is left out"));
        return Ok(None);
    }
    let tool = ToolHistogram {
        unit_ns: unit.ns(),
        buckets,
        width: 1,
        overflow: trailer.overflows[t],
        range_end: Some(rows.len() as u64),
        min: Some(trailer.min[t]),
        max: Some(trailer.max[t]),
        avg: Some(trailer.avg[t] as f64),
    };
    let cpu = match columns.get(t) {
        Some((_, _, _, Some(cpu))) => CpuId(*cpu),
        _ => CpuId(t as u32),
    };
    let (m, note) = tool.metric(metric::TIMER_LATENCY, cpu, &who, FORMAT)?;
    notes.extend(note);
    Ok(Some((m, cycles)))
}
