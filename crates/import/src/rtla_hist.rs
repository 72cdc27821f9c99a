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

use latscope_model::{metric, CellSettings, Nanos, Policy};
use latscope_record::MetricResult;

use crate::buckets::ToolHistogram;
use crate::cells::{add_metric, cell, cpu, cpus_of, timer_settings};
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

/// What the text holds, as read line by line.
#[derive(Default)]
struct Table {
    unit_ns: Option<u64>,
    header_duration: Option<Nanos>,
    columns: Option<Vec<(Kind, i64)>>,
    rows: Vec<(u64, Vec<u64>)>,
    over: Option<Vec<u64>>,
    /// count, min, avg, max.
    summary: [Option<Vec<Option<u64>>>; 4],
    /// Past the `ALL:` line: the totals over CPUs, not read.
    all: bool,
}

impl Table {
    fn of(text: &str, notes: &mut Vec<String>) -> Result<Table, ImportError> {
        let mut t = Table::default();
        for (n, raw) in text.lines().enumerate() {
            t.line(n + 1, raw.trim(), notes)?;
        }
        Ok(t)
    }

    fn line(&mut self, line: usize, l: &str, notes: &mut Vec<String>) -> Result<(), ImportError> {
        if l.contains("events missed") {
            notes.push(format!("rtla said: {l}"));
            return Ok(());
        }
        if let Some(unit) = l.strip_prefix("# Time unit is ") {
            self.unit_ns = Some(if unit.starts_with("nanoseconds") {
                1
            } else {
                1000
            });
            return Ok(());
        }
        if let Some(d) = l.strip_prefix("# Duration:") {
            self.header_duration = duration(d);
            return Ok(());
        }
        if l.starts_with('#') || l.is_empty() || self.all {
            return Ok(());
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
            self.columns = Some(cols);
            return Ok(());
        }
        let Some(cols) = &self.columns else {
            // Before the column line: what rtla printed before its table.
            return Ok(());
        };
        let n_cols = cols.len();
        let (label, rest) = l.split_once(char::is_whitespace).unwrap_or((l, ""));
        match label {
            "over:" => {
                self.over = Some(
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
                self.summary[i] = Some(values(rest, n_cols, line)?);
            }
            "ALL:" => self.all = true,
            // After the table: whatever else rtla printed.
            _ if self.over.is_some() => {}
            _ => self.row(label, rest, l, line, n_cols)?,
        }
        Ok(())
    }

    /// A histogram line: its bucket and counts.
    fn row(
        &mut self,
        label: &str,
        rest: &str,
        l: &str,
        line: usize,
        n_cols: usize,
    ) -> Result<(), ImportError> {
        let index: u64 = label.parse().map_err(|_| {
            ImportError::invalid(
                FORMAT,
                format!("line {line}: \"{l}\" is not a histogram line"),
            )
        })?;
        if let Some((last, _)) = self.rows.last().filter(|(last, _)| *last >= index) {
            return Err(ImportError::invalid(
                FORMAT,
                format!("line {line}: bucket {index} after bucket {last}"),
            ));
        }
        let v = values(rest, n_cols, line)?
            .into_iter()
            .map(|v| {
                v.ok_or_else(|| {
                    ImportError::invalid(FORMAT, format!("line {line}: a bucket counts \"-\""))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.rows.push((index, v));
        Ok(())
    }

    /// rtla prints `bucket × size`: the size divides every value; with
    /// --with-zeros (a line of zeros) it is the step and the last line
    /// ends the range. The size, and the range's end if known.
    fn layout(&self) -> (u64, Option<u64>) {
        let rows = &self.rows;
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
        (size, range_end)
    }
}

pub(crate) fn read(text: &str, options: &Options) -> Result<Imported, ImportError> {
    let mut notes = Vec::new();
    let table = Table::of(text, &mut notes)?;
    let Some(cols) = &table.columns else {
        return Err(ImportError::unsupported(
            FORMAT,
            "there is no \"Index\" line naming the columns (rtla ran with --no-header or --no-index); run rtla timerlat hist without them",
        ));
    };
    let Some(over) = &table.over else {
        return Err(ImportError::truncated(FORMAT, "there is no \"over:\" line"));
    };
    let unit_ns = table.unit_ns.unwrap_or_else(|| {
        notes.push(
            "the file does not say its time unit: read as microseconds, rtla's default".to_string(),
        );
        1000
    });
    if table.summary[0].is_none() {
        notes.push("the file has no count/min/avg/max lines (rtla --no-summary): the minimum and maximum are the buckets'".to_string());
    }
    let (size, range_end) = table.layout();
    let mut by_cpu: Vec<MetricResult> = Vec::new();
    let users: Vec<i64> = cols
        .iter()
        .filter(|c| c.0 == Kind::User)
        .map(|c| c.1)
        .collect();
    let mut longest = 0u64;
    for (j, &(kind, cpu_n)) in cols.iter().enumerate() {
        let who = format!("CPU {cpu_n} ({})", kind.label());
        let buckets: Vec<(u64, u64)> = table.rows.iter().map(|(i, v)| (*i, v[j])).collect();
        let pick = |k: usize| table.summary[k].as_ref().and_then(|s| s[j]);
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
        let m = column_metric(&tool, kind, cpu_n, &who, &mut notes)?;
        if kind != Kind::Irq {
            longest = longest.max(total);
        }
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
    let mut s = timer_settings(
        None,
        None,
        options,
        "the timerlat tracer's default period",
        (Policy::Fifo, 95, "the timerlat threads' default"),
        &mut notes,
    )?;
    s.common.cpus = cpus_of(&by_cpu);
    let duration = table
        .header_duration
        .unwrap_or(Nanos(s.period_ns.0.saturating_mul(longest)));
    let c = cell(
        0,
        options.workload(),
        CellSettings::Timer(s),
        duration,
        by_cpu,
    );
    Ok(Imported::without_header(Format::RtlaHist, vec![c], notes))
}

/// A column's histogram as its metric: `timer.irq` for IRQ, else
/// `timer.latency`.
fn column_metric(
    tool: &ToolHistogram,
    kind: Kind,
    cpu_n: i64,
    who: &str,
    notes: &mut Vec<String>,
) -> Result<MetricResult, ImportError> {
    let rebuilt = tool
        .rebuild(who)
        .map_err(|e| ImportError::invalid(FORMAT, e))?;
    if let Some(note) = rebuilt.note {
        notes.push(match tool.range_end {
            Some(_) => note,
            None => format!(
                "{note} (rtla does not print the histogram's size: its range is taken to end after the highest bucket printed)"
            ),
        });
    }
    let cpu_id = cpu(cpu_n, FORMAT, who)?
        .ok_or_else(|| ImportError::invalid(FORMAT, format!("{who}: a negative CPU")))?;
    let name = match kind {
        Kind::Irq => metric::TIMER_IRQ,
        Kind::Thread | Kind::User => metric::TIMER_LATENCY,
    };
    let mut m = MetricResult::new(name, Some(cpu_id));
    m.histogram = rebuilt.histogram;
    Ok(m)
}
