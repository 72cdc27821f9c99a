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
use latscope_record::MetricResult;
use serde_json::{Map, Value};

use crate::buckets::ToolHistogram;
use crate::cells::{add_metric, cell, cpu, cpus_of, scheduling, setting};
use crate::cyclictest_args::CyclictestArgs;
use crate::rt_tests::{self, ran, words};
use crate::{Format, ImportError, Imported, Options};

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
    let obj = doc
        .as_object()
        .ok_or_else(|| ImportError::invalid(FORMAT, "the file is not a JSON object"))?;
    let header = rt_tests::header(obj, FORMAT)?;
    let Some(Value::Object(thread_objs)) = obj.get("thread") else {
        return Err(ImportError::truncated(
            FORMAT,
            "there is no \"thread\" object",
        ));
    };
    let mut threads = Vec::with_capacity(thread_objs.len());
    for (k, v) in thread_objs {
        let n: u32 = k
            .parse()
            .map_err(|_| ImportError::invalid(FORMAT, format!("thread \"{k}\" is not numbered")))?;
        threads.push(thread(n, v)?);
    }
    threads.sort_by_key(|t| t.number);
    if let Some(n) = obj.get("num_threads").and_then(Value::as_u64) {
        if n != threads.len() as u64 {
            return Err(ImportError::truncated(
                FORMAT,
                format!("num_threads is {n} but {} threads are there", threads.len()),
            ));
        }
    }
    if threads.is_empty() {
        return Err(ImportError::invalid(FORMAT, "there are no threads"));
    }

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
    let unit_ns = match obj.get("resolution_in_ns").and_then(Value::as_u64) {
        Some(1) => 1,
        Some(0) | None => 1000,
        Some(other) => {
            return Err(ImportError::invalid(
                FORMAT,
                format!("resolution_in_ns is {other}; cyclictest writes 0 (µs) or 1 (ns)"),
            ))
        }
    };

    // What the file says of the measurement: cyclictest's command line
    // (its defaults where an option is absent), or latscope's object.
    let (file_period, file_sched, timer_api) = if from_cyclictest {
        let (policy, priority, note) = args.scheduling(threads.len());
        notes.extend(note);
        let (api, note) = args.timer_api();
        notes.extend(note);
        (
            Some(Nanos::from_micros(args.interval_us.unwrap_or(1000))),
            Some((policy, priority)),
            api,
        )
    } else {
        (None, None, TimerApiName::ClockNanosleep)
    };

    // Cells by index: latscope's export may hold several.
    let mut cells: Vec<Pending> = Vec::new();
    for (i, t) in threads.iter().enumerate() {
        let who = format!("thread {}", t.number);
        if t.cycles == 0 {
            notes.push(format!("{who} ran no cycles and is left out"));
            continue;
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
        let (index, workload, settings) = match &ext {
            Some(ext) => (
                ext[i].cell,
                ext[i].workload.clone(),
                ext[i].settings.clone(),
            ),
            None => (0, options.workload(), None),
        };
        match cells.iter_mut().find(|c| c.index == index) {
            Some(c) => {
                add_metric(&mut c.metrics, m, &mut notes);
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

    let mut out = Vec::with_capacity(cells.len());
    for Pending {
        index,
        workload,
        settings: ext_settings,
        metrics,
        cycles,
    } in cells
    {
        let settings = match ext_settings {
            Some(s) => {
                setting(
                    Some(s.period_ns),
                    options.period,
                    "--period",
                    "period",
                    (DEFAULT_PERIOD, ""),
                    &mut notes,
                )?;
                let sched = Some((s.common.policy, s.common.priority));
                scheduling(sched, options, (Policy::Other, 0, ""), &mut notes)?;
                s
            }
            None => {
                let period = setting(
                    file_period,
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
                    timer_api,
                    period_ns: period,
                    ..TimerSettings::default()
                };
                s.common.policy = policy;
                s.common.priority = priority;
                s.common.duration_ns = args.duration;
                s
            }
        };
        let mut settings = settings;
        settings.common.cpus = cpus_of(&metrics);
        // cyclictest wakes once per interval: its cycles are the time it
        // measured.
        let duration = Nanos(settings.period_ns.0.saturating_mul(cycles));
        out.push(cell(
            index,
            workload,
            CellSettings::Timer(settings),
            duration,
            metrics,
        ));
    }
    if let Some(m) = &header.machine {
        notes.push(format!("measured on a {m} machine (uname -m)"));
    }
    Ok(Imported {
        format: Format::CyclictestJson,
        tool_version: header.version,
        command_line: header.command_line,
        started: header.started,
        ended: header.ended,
        failed: header
            .return_code
            .filter(|&c| c != 0)
            .map(|c| format!("cyclictest exited with return code {c}")),
        system: header.system,
        cells: out,
        notes,
    })
}
