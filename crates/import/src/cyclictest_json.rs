//! `cyclictest --json=FILE` (rt-tests 2.x): the rt-tests header, then
//! `num_threads`, `resolution_in_ns` (1 with `-N`) and one object per
//! thread with its `histogram` (the non-empty buckets of `-h N`, bucket
//! `"k"` holding the wake-ups `k` µs late, latency cut to whole units),
//! `cycles`, `min`, `max`, `avg` and `cpu`. Wake-ups beyond the histogram
//! are in `cycles` only. The file written by `latscope export --format
//! rt-tests-json` has the same layout plus a `"latscope"` object that
//! gives each thread's cell and settings back.

use latscope_model::{
    metric, CellSettings, CpuId, Nanos, Policy, TimerApiName, TimerSettings, DEFAULT_PERIOD,
};
use latscope_record::{CellResult, MetricResult};
use serde_json::{Map, Value};

use crate::buckets::ToolHistogram;
use crate::cells::{add_metric, cell, cpu, cpus_of, scheduling, setting, timer_settings};
use crate::cyclictest_args::CyclictestArgs;
use crate::rt_tests::{self, ran, words};
use crate::{Format, ImportError, ImportOption, Imported, Options};

const FORMAT: &str = "cyclictest-json";

/// A thread object with the keys cyclictest writes.
pub(crate) fn looks_like(obj: &Map<String, Value>) -> bool {
    match obj.get("thread") {
        Some(Value::Object(threads)) => threads
            .values()
            .next()
            .and_then(Value::as_object)
            .is_some_and(|t| t.contains_key("cycles")),
        _ => false,
    }
}

/// What latscope's own export says of one thread.
struct LatscopeThread {
    cell: u32,
    workload: String,
    settings: Option<TimerSettings>,
}

/// The `"latscope"` object of a file latscope exported, one entry per
/// thread; `None` when the file has none.
fn latscope_threads(obj: &Map<String, Value>) -> Result<Option<Vec<LatscopeThread>>, ImportError> {
    let Some(ext) = obj.get("latscope") else {
        return Ok(None);
    };
    let bad = |what: &str| ImportError::invalid(FORMAT, format!("the \"latscope\" object {what}"));
    let threads = ext
        .get("threads")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("has no \"threads\" array"))?;
    threads
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let cell = t
                .get("cell")
                .and_then(Value::as_u64)
                .and_then(|c| u32::try_from(c).ok())
                .ok_or_else(|| bad(&format!("gives thread {i} no cell")))?;
            let workload = t
                .get("workload")
                .and_then(Value::as_str)
                .filter(|w| !w.is_empty())
                .ok_or_else(|| bad(&format!("gives thread {i} no workload")))?
                .to_string();
            // Only a timer cell's settings are given (a simulated cell's
            // are not a timer's).
            let settings = match t.get("settings").cloned() {
                None => None,
                Some(v) => match CellSettings::from_json("timer", v) {
                    Ok(CellSettings::Timer(s)) => Some(s),
                    Ok(_) => {
                        return Err(bad(&format!("gives thread {i} settings of another probe")))
                    }
                    Err(e) => {
                        return Err(bad(&format!("gives thread {i} unreadable settings ({e})")))
                    }
                },
            };
            Ok(LatscopeThread {
                cell,
                workload,
                settings,
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// A cell being gathered from the threads: its index, workload, the
/// settings latscope's export gave, its metrics and its most cycles.
struct Pending {
    index: u32,
    workload: String,
    settings: Option<TimerSettings>,
    metrics: Vec<MetricResult>,
    cycles: u64,
}

/// One thread as the file has it.
struct Thread {
    number: u32,
    buckets: Vec<(u64, u64)>,
    cycles: u64,
    min: Option<u64>,
    max: Option<u64>,
    avg: Option<f64>,
    cpu: Option<i64>,
}

fn thread(number: u32, v: &Value) -> Result<Thread, ImportError> {
    let who = format!("thread {number}");
    let obj = v
        .as_object()
        .ok_or_else(|| ImportError::invalid(FORMAT, format!("{who} is not an object")))?;
    let uint = |key: &str| -> Result<Option<u64>, ImportError> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(x) => x.as_u64().map(Some).ok_or_else(|| {
                ImportError::invalid(FORMAT, format!("{who}: {key} is {x}, not a count"))
            }),
        }
    };
    let cycles = uint("cycles")?
        .ok_or_else(|| ImportError::invalid(FORMAT, format!("{who} has no cycles")))?;
    let mut buckets = Vec::new();
    match obj.get("histogram") {
        Some(Value::Object(h)) => {
            for (k, c) in h {
                buckets.push(rt_tests::bucket(FORMAT, &who, k, c)?);
            }
        }
        None | Some(Value::Null) => {}
        Some(other) => {
            return Err(ImportError::invalid(
                FORMAT,
                format!("{who}: histogram is {other}, not an object"),
            ))
        }
    }
    Ok(Thread {
        number,
        buckets,
        cycles,
        min: uint("min")?,
        max: uint("max")?,
        avg: obj.get("avg").and_then(Value::as_f64),
        cpu: obj.get("cpu").and_then(Value::as_i64),
    })
}

pub(crate) fn read(text: &str, options: &Options) -> Result<Imported, ImportError> {
    let doc = rt_tests::parse_json(text, FORMAT)?;
    let obj = rt_tests::object(&doc, FORMAT)?;
    let header = rt_tests::header(obj, FORMAT)?;
    let threads = rt_tests::threads(obj, FORMAT)?
        .into_iter()
        .map(|(n, v)| thread(n, v))
        .collect::<Result<Vec<_>, _>>()?;
    let mut notes = Vec::new();
    let command_line = header.command_line.clone().unwrap_or_default();
    let from_cyclictest = ran(&command_line, "cyclictest");
    let args = if from_cyclictest {
        CyclictestArgs::parse(&words(&command_line)[1..]).map_err(|e| {
            ImportError::invalid(FORMAT, format!("the command line it records: {e}"))
        })?
    } else {
        CyclictestArgs::default()
    };
    let ext = latscope_threads(obj)?;
    if let Some(ext) = &ext {
        if ext.len() != threads.len() {
            return Err(ImportError::invalid(
                FORMAT,
                format!(
                    "the \"latscope\" object describes {} threads but the file has {}",
                    ext.len(),
                    threads.len()
                ),
            ));
        }
    }
    let unit_ns = resolution(obj)?;
    let facts = Facts::of(&args, from_cyclictest, threads.len(), &mut notes);
    let pending = pending_cells(
        &threads,
        ext.as_deref(),
        &args,
        unit_ns,
        options,
        &mut notes,
    )?;
    let cells = pending
        .into_iter()
        .map(|p| p.into_cell(&facts, &args, options, &mut notes))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rt_tests::imported(
        Format::CyclictestJson,
        header,
        cells,
        notes,
    ))
}

/// The unit of the buckets: ns with `resolution_in_ns` 1, else µs.
fn resolution(obj: &Map<String, Value>) -> Result<u64, ImportError> {
    match obj.get("resolution_in_ns").and_then(Value::as_u64) {
        Some(1) => Ok(1),
        Some(0) | None => Ok(1000),
        Some(other) => Err(ImportError::invalid(
            FORMAT,
            format!("resolution_in_ns is {other}; cyclictest writes 0 (µs) or 1 (ns)"),
        )),
    }
}

/// What the file says of the measurement: cyclictest's command line (its
/// defaults where an option is absent), or nothing (latscope's object
/// says it per cell).
struct Facts {
    period: Option<Nanos>,
    sched: Option<(Policy, u32)>,
    timer_api: TimerApiName,
}

impl Facts {
    fn of(
        args: &CyclictestArgs,
        from_cyclictest: bool,
        threads: usize,
        notes: &mut Vec<String>,
    ) -> Facts {
        if !from_cyclictest {
            return Facts {
                period: None,
                sched: None,
                timer_api: TimerApiName::ClockNanosleep,
            };
        }
        let (policy, priority, note) = args.scheduling(threads);
        notes.extend(note);
        let (timer_api, note) = args.timer_api();
        notes.extend(note);
        Facts {
            period: Some(Nanos::from_micros(args.interval_us.unwrap_or(1000))),
            sched: Some((policy, priority)),
            timer_api,
        }
    }
}

/// The cells by index (latscope's export may hold several), each with the
/// metrics of its threads.
fn pending_cells(
    threads: &[Thread],
    ext: Option<&[LatscopeThread]>,
    args: &CyclictestArgs,
    unit_ns: u64,
    options: &Options,
    notes: &mut Vec<String>,
) -> Result<Vec<Pending>, ImportError> {
    let mut cells: Vec<Pending> = Vec::new();
    for (i, t) in threads.iter().enumerate() {
        let Some(m) = thread_metric(t, args, unit_ns, notes)? else {
            continue;
        };
        let (index, workload, settings) = match ext {
            Some(ext) => (
                ext[i].cell,
                ext[i].workload.clone(),
                ext[i].settings.clone(),
            ),
            None => (0, options.workload(), None),
        };
        match cells.iter_mut().find(|c| c.index == index) {
            Some(c) => {
                add_metric(&mut c.metrics, m, notes);
                c.cycles = c.cycles.max(t.cycles);
            }
            None => cells.push(Pending {
                index,
                workload,
                settings,
                metrics: vec![m],
                cycles: t.cycles,
            }),
        }
    }
    cells.sort_by_key(|c| c.index);
    Ok(cells)
}

/// A thread's histogram as `timer.latency` of its CPU; `None` for a
/// thread that ran no cycles.
fn thread_metric(
    t: &Thread,
    args: &CyclictestArgs,
    unit_ns: u64,
    notes: &mut Vec<String>,
) -> Result<Option<MetricResult>, ImportError> {
    let who = format!("thread {}", t.number);
    if t.cycles == 0 {
        notes.push(format!("{who} ran no cycles and is left out"));
        return Ok(None);
    }
    let in_range: u64 = t.buckets.iter().map(|b| b.1).fold(0, u64::saturating_add);
    let overflow = t.cycles.checked_sub(in_range).ok_or_else(|| {
        ImportError::invalid(
            FORMAT,
            format!(
                "{who}: the histogram holds {in_range} wake-ups but cycles is {}",
                t.cycles
            ),
        )
    })?;
    if in_range == 0 && args.histogram.is_none() {
        return Err(ImportError::unsupported(
            FORMAT,
            format!(
                "{who} has no histogram: cyclictest ran without -h, and count, min, average and max alone are not a distribution; run cyclictest with -h N (e.g. -h 1000)"
            ),
        ));
    }
    let tool = ToolHistogram {
        unit_ns,
        buckets: t.buckets.clone(),
        width: 1,
        overflow,
        range_end: args.histogram,
        min: t.min,
        max: t.max,
        avg: t.avg,
    };
    let rebuilt = tool
        .rebuild(&who)
        .map_err(|e| ImportError::invalid(FORMAT, e))?;
    notes.extend(rebuilt.note);
    let cpu_id = match t.cpu.map(|c| cpu(c, FORMAT, &who)).transpose()?.flatten() {
        Some(c) => c,
        None => {
            notes.push(format!(
                "{who} was not pinned to a CPU: stored as CPU {}",
                t.number
            ));
            CpuId(t.number)
        }
    };
    let mut m = MetricResult::new(metric::TIMER_LATENCY, Some(cpu_id));
    m.histogram = rebuilt.histogram;
    Ok(Some(m))
}

impl Pending {
    fn into_cell(
        self,
        facts: &Facts,
        args: &CyclictestArgs,
        options: &Options,
        notes: &mut Vec<String>,
    ) -> Result<CellResult, ImportError> {
        let mut settings = match self.settings {
            Some(s) => {
                // The file says them: the options may only agree.
                setting(
                    Some(s.period_ns),
                    options.period,
                    (ImportOption::Period, &options.names),
                    "period",
                    (DEFAULT_PERIOD, ""),
                    notes,
                )?;
                let sched = Some((s.common.policy, s.common.priority));
                scheduling(sched, options, (Policy::Other, 0, ""), notes)?;
                s
            }
            None => {
                let mut s = timer_settings(
                    facts.period,
                    facts.sched,
                    options,
                    "cyclictest's default interval",
                    (Policy::Other, 0, "cyclictest's default"),
                    notes,
                )?;
                s.timer_api = facts.timer_api;
                s.common.duration_ns = args.duration;
                s
            }
        };
        settings.common.cpus = cpus_of(&self.metrics);
        // cyclictest wakes once per interval: its cycles are the time it
        // measured.
        let duration = Nanos(settings.period_ns.0.saturating_mul(self.cycles));
        Ok(cell(
            self.index,
            self.workload,
            CellSettings::Timer(settings),
            duration,
            self.metrics,
        ))
    }
}
