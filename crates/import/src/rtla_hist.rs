//! `rtla timerlat hist` text, as `tools/tracing/rtla/src/timerlat_hist.c`
//! prints it: a header (`# RTLA timerlat histogram`, `# Time unit is
//! microseconds (us)` or `nanoseconds (ns)`, `# Duration:   0 00:00:10`),
//! the column line (`Index   IRQ-000   Thr-000   Usr-000 ...`, one column
//! per kind and CPU that counted anything), one line per bucket with its
//! value (`bucket × bucket size`) and counts (buckets whose counts are all
//! zero are left out unless `--with-zeros`), then `over:` (samples beyond
//! the histogram), `count:`, `min:`, `avg:`, `max:` per column (`-` where
//! a column counted nothing), the same over all CPUs after `ALL:`, and a
//! line when trace events were missed.
//!
//! The IRQ column is the timer interrupt's latency (latscope's
//! `timer.irq`); the thread latency — to rtla's user-space thread (`Usr`)
//! when there is one, else to its kernel thread (`Thr`) — is
//! `timer.latency`.

use latscope_model::{metric, CellSettings, Nanos, Policy, TimerSettings, DEFAULT_PERIOD};
use latscope_record::MetricResult;

use crate::buckets::ToolHistogram;
use crate::cells::{add_metric, cell, cpu, cpus_of, scheduling, setting};
use crate::{Format, ImportError, Imported, Options};

const FORMAT: &str = "rtla-hist";

/// rtla's banner, or its column line.
pub(crate) fn looks_like(text: &str) -> bool {
    text.lines().any(|l| {
        let l = l.trim();
        l == "# RTLA timerlat histogram"
            || (l.starts_with("Index")
                && l.split_whitespace()
                    .nth(1)
                    .is_some_and(|c| c.starts_with("IRQ-") || c.starts_with("Thr-")))
    })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Irq,
    Thread,
    User,
}

impl Kind {
    fn label(self) -> &'static str {
        match self {
            Kind::Irq => "IRQ",
            Kind::Thread => "Thr",
            Kind::User => "Usr",
        }
    }
}

fn column(name: &str) -> Option<(Kind, i64)> {
    let (kind, cpu) = name.split_once('-')?;
    let kind = match kind {
        "IRQ" => Kind::Irq,
        "Thr" => Kind::Thread,
        "Usr" => Kind::User,
        _ => return None,
    };
    Some((kind, cpu.parse().ok()?))
}

/// `  0 00:00:10` (days, then hours:minutes:seconds).
fn duration(text: &str) -> Option<Nanos> {
    let mut parts = text.split_whitespace();
    let days: u64 = parts.next()?.parse().ok()?;
    let hms: Vec<u64> = parts
        .next()?
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let [h, m, s] = hms.as_slice() else {
        return None;
    };
    // Checked: a duration no clock reaches is no duration.
    let secs = days
        .checked_mul(86_400)?
        .checked_add(h.checked_mul(3600)?)?
        .checked_add(m.checked_mul(60)?)?
        .checked_add(*s)?;
    Some(Nanos(secs.checked_mul(1_000_000_000)?))
}

/// The values after a row's label; `-` (nothing counted) is `None`.
fn values(rest: &str, n: usize, line: usize) -> Result<Vec<Option<u64>>, ImportError> {
    let v: Vec<Option<u64>> = rest
        .split_whitespace()
        .map(|w| match w {
            "-" => Ok(None),
            w => w.parse().map(Some).map_err(|_| {
                ImportError::invalid(FORMAT, format!("line {line}: \"{w}\" is not a number"))
            }),
        })
        .collect::<Result<_, _>>()?;
    if v.len() != n {
        return Err(ImportError::invalid(
            FORMAT,
            format!("line {line}: {} values for {n} columns", v.len()),
        ));
    }
    Ok(v)
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

pub(crate) fn read(text: &str, options: &Options) -> Result<Imported, ImportError> {
    let mut notes = Vec::new();
    let mut unit_ns = None;
    let mut header_duration = None;
    let mut columns: Option<Vec<(Kind, i64)>> = None;
    let mut rows: Vec<(u64, Vec<u64>)> = Vec::new();
    let mut over: Option<Vec<u64>> = None;
    let mut summary: [Option<Vec<Option<u64>>>; 4] = [None, None, None, None];
    let mut all = false;
    for (n, raw) in text.lines().enumerate() {
        let line = n + 1;
        let l = raw.trim();
        if l.contains("events missed") {
            notes.push(format!("rtla said: {l}"));
            continue;
        }
        if let Some(unit) = l.strip_prefix("# Time unit is ") {
            unit_ns = Some(if unit.starts_with("nanoseconds") {
                1
            } else {
                1000
            });
            continue;
        }
        if let Some(d) = l.strip_prefix("# Duration:") {
            header_duration = duration(d);
            continue;
        }
        if l.starts_with('#') || l.is_empty() || all {
            continue;
        }
        if let Some(rest) = l.strip_prefix("Index") {
            let cols = rest
                .split_whitespace()
                .map(|c| {
                    column(c).ok_or_else(|| {
                        ImportError::invalid(
                            FORMAT,
                            format!("line {line}: \"{c}\" is not a column rtla prints"),
                        )
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            columns = Some(cols);
            continue;
        }
        let Some(cols) = &columns else {
            // Before the column line: what rtla printed before its table.
            continue;
        };
        let n_cols = cols.len();
        let (label, rest) = l.split_once(char::is_whitespace).unwrap_or((l, ""));
        match label {
            "over:" => {
                over = Some(
                    values(rest, n_cols, line)?
                        .into_iter()
                        .map(|v| v.unwrap_or(0))
                        .collect(),
                )
            }
            "count:" | "min:" | "avg:" | "max:" => {
                let i = ["count:", "min:", "avg:", "max:"]
                    .iter()
                    .position(|x| *x == label)
                    .unwrap_or(0);
                summary[i] = Some(values(rest, n_cols, line)?);
            }
            "ALL:" => all = true,
            _ => {
                if over.is_some() {
                    // After the table: whatever else rtla printed.
                    continue;
                }
                let index: u64 = label.parse().map_err(|_| {
                    ImportError::invalid(
                        FORMAT,
                        format!("line {line}: \"{l}\" is not a histogram line"),
                    )
                })?;
                if rows.last().is_some_and(|(last, _)| *last >= index) {
                    return Err(ImportError::invalid(
                        FORMAT,
                        format!(
                            "line {line}: bucket {index} after bucket {}",
                            rows.last().map_or(0, |r| r.0)
                        ),
                    ));
                }
                let v = values(rest, n_cols, line)?
                    .into_iter()
                    .map(|v| {
                        v.ok_or_else(|| {
                            ImportError::invalid(
                                FORMAT,
                                format!("line {line}: a bucket counts \"-\""),
                            )
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                rows.push((index, v));
            }
        }
    }
    let Some(cols) = columns else {
        return Err(ImportError::unsupported(
            FORMAT,
            "there is no \"Index\" line naming the columns (rtla ran with --no-header or --no-index); run rtla timerlat hist without them",
        ));
    };
    let Some(over) = over else {
        return Err(ImportError::truncated(FORMAT, "there is no \"over:\" line"));
    };
    let unit_ns = unit_ns.unwrap_or_else(|| {
        notes.push(
            "the file does not say its time unit: read as microseconds, rtla's default".to_string(),
        );
        1000
    });
    if summary[0].is_none() {
        notes.push("the file has no count/min/avg/max lines (rtla --no-summary): the minimum and maximum are the buckets'".to_string());
    }
    // rtla prints `bucket × size`: the size divides every value; with
    // --with-zeros (a line of zeros) it is the step and the last line ends
    // the range.
    let size = rows
        .windows(2)
        .map(|w| w[1].0 - w[0].0)
        .chain(rows.first().map(|r| r.0))
        .fold(0, gcd)
        .max(1);
    let with_zeros = rows.iter().any(|(_, v)| v.iter().all(|&c| c == 0));
    let range_end = if with_zeros {
        rows.last().map(|r| r.0 + size)
    } else {
        None
    };

    let mut by_cpu: Vec<MetricResult> = Vec::new();
    let users: Vec<i64> = cols
        .iter()
        .filter(|c| c.0 == Kind::User)
        .map(|c| c.1)
        .collect();
    let mut longest = 0u64;
    for (j, &(kind, cpu_n)) in cols.iter().enumerate() {
        let who = format!("CPU {cpu_n} ({})", kind.label());
        let buckets: Vec<(u64, u64)> = rows.iter().map(|(i, v)| (*i, v[j])).collect();
        let pick = |k: usize| summary[k].as_ref().and_then(|s| s[j]);
        let in_range: u64 = buckets.iter().map(|b| b.1).fold(0, u64::saturating_add);
        let total = in_range.saturating_add(over[j]);
        if let Some(count) = pick(0) {
            if count != total {
                return Err(ImportError::invalid(
                    FORMAT,
                    format!(
                        "{who}: the buckets and over: add up to {total} but count: says {count}"
                    ),
                ));
            }
        }
        if total == 0 {
            continue;
        }
        if kind == Kind::Thread && users.contains(&cpu_n) {
            notes.push(format!(
                "{who}: rtla's kernel-side thread latency is not kept; the user-space one (Usr) is timer.latency"
            ));
            continue;
        }
        let tool = ToolHistogram {
            unit_ns,
            buckets,
            width: size,
            overflow: over[j],
            range_end,
            min: pick(1),
            max: pick(3),
            avg: pick(2).map(|a| a as f64),
        };
        let rebuilt = tool
            .rebuild(&who)
            .map_err(|e| ImportError::invalid(FORMAT, e))?;
        if let Some(note) = rebuilt.note {
            notes.push(match range_end {
                Some(_) => note,
                None => format!(
                    "{note} (rtla does not print the histogram's size: its range is taken to end after the highest bucket printed)"
                ),
            });
        }
        let cpu_id = cpu(cpu_n, FORMAT, &who)?
            .ok_or_else(|| ImportError::invalid(FORMAT, format!("{who}: a negative CPU")))?;
        let name = match kind {
            Kind::Irq => metric::TIMER_IRQ,
            Kind::Thread | Kind::User => metric::TIMER_LATENCY,
        };
        if kind != Kind::Irq {
            longest = longest.max(total);
        }
        let mut m = MetricResult::new(name, Some(cpu_id));
        m.histogram = rebuilt.histogram;
        add_metric(&mut by_cpu, m, &mut notes);
    }
    if by_cpu.is_empty() {
        return Err(ImportError::invalid(FORMAT, "the file holds no samples"));
    }
    if cols.iter().any(|c| c.0 == Kind::Thread) && users.is_empty() {
        notes.push(
            "rtla's thread latency (expiry → its timerlat thread runs, in the kernel) is stored as timer.latency; latscope measures to its own code in user space".to_string(),
        );
    }
    notes.push("rtla's text records no date, machine or version".to_string());

    let period = setting(
        None,
        options.period,
        "--period",
        "period",
        (DEFAULT_PERIOD, "the timerlat tracer's default period"),
        &mut notes,
    )?;
    let (policy, priority) = scheduling(
        None,
        options,
        (Policy::Fifo, 95, "the timerlat threads' default"),
        &mut notes,
    )?;
    let mut s = TimerSettings {
        period_ns: period,
        ..TimerSettings::default()
    };
    s.common.policy = policy;
    s.common.priority = priority;
    s.common.cpus = cpus_of(&by_cpu);
    let duration = header_duration.unwrap_or(Nanos(period.0.saturating_mul(longest)));
    let c = cell(
        0,
        options.workload(),
        CellSettings::Timer(s),
        duration,
        by_cpu,
    );
    Ok(Imported {
        format: Format::RtlaHist,
        tool_version: None,
        command_line: None,
        started: None,
        ended: None,
        failed: None,
        system: Default::default(),
        cells: vec![c],
        notes,
    })
}
