//! `oslat --json=FILE` (rt-tests 2.x): the rt-tests header, then one
//! object per thread with `cpu`, `freq` (the TSC's MHz), `min`, `avg`,
//! `max` (µs), `duration` (s) and `histogram`. oslat times every
//! iteration of a loop that reads the TSC and counts an iteration of `d`
//! µs in bucket `floor(d) + 1`, labelled with that number (so `"1"` holds
//! the iterations shorter than 1 µs); its last bucket (32 by default,
//! `-b N`) also holds every longer iteration. `min` and `max` are in the
//! same rounded-up microseconds.
//!
//! latscope's noise probe records only the iterations long enough to be an
//! interruption (`noise.gap`). From oslat's buckets that is every
//! iteration of 1 µs or more (buckets 2 and up): each is stored at its
//! label, the upper end of its microsecond as oslat reports it, and the
//! shorter ones count as iterations only.

use latscope_model::{
    metric, CellSettings, Nanos, NoiseClock, NoiseCpuStats, NoiseSettings, Policy,
};
use latscope_record::{CellResult, MetricResult};
use serde_json::{Map, Value};

use crate::buckets::ToolHistogram;
use crate::cells::{cell, cpu, cpus_of, scheduling};
use crate::rt_tests::{self, ran, words};
use crate::{Format, ImportError, Imported, OptionError, Options};

const FORMAT: &str = "oslat-json";

/// oslat's default number of buckets (`-b`).
const DEFAULT_BUCKETS: u64 = 32;

/// A thread object with oslat's `freq`, or oslat's command line.
pub(crate) fn looks_like(obj: &Map<String, Value>) -> bool {
    let by_thread = match obj.get("thread") {
        Some(Value::Object(threads)) => threads
            .values()
            .next()
            .and_then(Value::as_object)
            .is_some_and(|t| t.contains_key("freq") && !t.contains_key("cycles")),
        _ => false,
    };
    by_thread
        || rt_tests::get(obj, "cmdline")
            .and_then(Value::as_str)
            .is_some_and(|c| ran(c, "oslat"))
}

/// What oslat's command line says: buckets, FIFO priority, duration, and
/// whether `-B` (bias) moved the buckets.
#[derive(Default)]
struct OslatArgs {
    buckets: Option<u64>,
    rtprio: Option<u32>,
    duration: Option<Nanos>,
    bias: bool,
}

fn oslat_args(words: &[&str]) -> Result<OslatArgs, ImportError> {
    let mut a = OslatArgs::default();
    let mut i = 0;
    let number = |what: &str, v: Option<&str>| -> Result<u64, ImportError> {
        v.and_then(|v| v.trim().parse().ok()).ok_or_else(|| {
            ImportError::invalid(
                FORMAT,
                format!(
                    "the command line it records: {what} {} is not a number",
                    v.unwrap_or("")
                ),
            )
        })
    };
    while i < words.len() {
        let w = words[i];
        i += 1;
        let (name, inline) = match w.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v)),
            _ => (w, None),
        };
        let mut value = || -> Option<&str> {
            if inline.is_some() {
                return inline;
            }
            i += 1;
            words.get(i - 1).copied()
        };
        match name {
            "-b" | "--bucket-size" => a.buckets = Some(number(name, value())?),
            "-f" | "--rtprio" => {
                let p = number(name, value())?;
                a.rtprio = u32::try_from(p).ok();
            }
            "-D" | "--duration" => {
                let v = value().unwrap_or("");
                a.duration = oslat_duration(v);
            }
            "-B" | "--bias" => a.bias = true,
            "-c" | "--cpu-list" | "-C" | "--cpu-main-thread" | "-m" | "--workload-mem" | "-w"
            | "--workload" | "-T" | "--trace-threshold" | "--json" => {
                value();
            }
            _ => {}
        }
    }
    Ok(a)
}

/// oslat's `-D`: seconds, or with `m`/`M`, `h`/`H`, `d`/`D`.
fn oslat_duration(text: &str) -> Option<Nanos> {
    let t = text.trim();
    let (num, mult) = match t.chars().last()? {
        'm' | 'M' => (&t[..t.len() - 1], 60),
        'h' | 'H' => (&t[..t.len() - 1], 3600),
        'd' | 'D' => (&t[..t.len() - 1], 86_400),
        's' | 'S' => (&t[..t.len() - 1], 1),
        _ => (t, 1),
    };
    let n: u64 = num.parse().ok()?;
    Some(Nanos::from_secs(n.checked_mul(mult)?))
}

pub(crate) fn read(text: &str, options: &Options) -> Result<Imported, ImportError> {
    let doc = rt_tests::parse_json(text, FORMAT)?;
    let obj = rt_tests::object(&doc, FORMAT)?;
    let header = rt_tests::header(obj, FORMAT)?;
    let threads = rt_tests::threads(obj, FORMAT)?;
    let command_line = header.command_line.clone().unwrap_or_default();
    let args = if ran(&command_line, "oslat") {
        oslat_args(&words(&command_line)[1..])?
    } else {
        OslatArgs::default()
    };
    if args.bias {
        return Err(ImportError::unsupported(
            FORMAT,
            "oslat ran with -B (--bias): its buckets are shifted by a bias the file does not record; run oslat without -B",
        ));
    }
    let last = args.buckets.unwrap_or(DEFAULT_BUCKETS);

    let mut notes = Vec::new();
    let mut metrics: Vec<MetricResult> = Vec::new();
    let mut stats = Vec::new();
    for (n, v) in threads {
        let Some((m, s)) = thread(n, v, last, &mut notes)? else {
            continue;
        };
        if metrics.iter().any(|x| x.cpu == m.cpu) {
            return Err(ImportError::invalid(
                FORMAT,
                format!("two threads ran on CPU {}", s.cpu),
            ));
        }
        metrics.push(m);
        stats.push(s);
    }
    if metrics.is_empty() {
        return Err(ImportError::invalid(FORMAT, "the file holds no iterations"));
    }
    notes.push(
        "oslat times every loop iteration; an iteration of 1 µs or more is stored as an interruption (noise.gap) at oslat's rounded-up microsecond, shorter ones count only as iterations; oslat does not record the shortest iteration".to_string(),
    );
    let c = noise_cell(&args, metrics, stats, options, &mut notes)?;
    Ok(rt_tests::imported(
        Format::OslatJson,
        header,
        vec![c],
        notes,
    ))
}

/// A thread's interruptions as `noise.gap` of its CPU, and its figures;
/// `None` for a thread that counted no iterations.
fn thread(
    n: u32,
    v: &Value,
    last: u64,
    notes: &mut Vec<String>,
) -> Result<Option<(MetricResult, NoiseCpuStats)>, ImportError> {
    let who = format!("thread {n}");
    let t = v
        .as_object()
        .ok_or_else(|| ImportError::invalid(FORMAT, format!("{who} is not an object")))?;
    let uint = |key: &str| -> Result<u64, ImportError> {
        t.get(key)
            .and_then(Value::as_u64)
            .ok_or_else(|| ImportError::invalid(FORMAT, format!("{who} has no {key} count")))
    };
    let cpu_id = cpu(
        t.get("cpu")
            .and_then(Value::as_i64)
            .ok_or_else(|| ImportError::invalid(FORMAT, format!("{who} has no cpu")))?,
        FORMAT,
        &who,
    )?
    .ok_or_else(|| ImportError::invalid(FORMAT, format!("{who} has a negative cpu")))?;
    let max = uint("max")?;
    let mhz = uint("freq")?;
    let seconds = t.get("duration").and_then(Value::as_f64).unwrap_or(0.0);
    let Buckets {
        iterations,
        gaps,
        last_count,
    } = buckets(t, &who, last)?;
    if iterations == 0 {
        notes.push(format!("{who} counted no iterations and is left out"));
        return Ok(None);
    }
    let (tool, overflow) = gap_histogram(gaps, last, last_count, max);
    let (m, note) = tool.metric(metric::NOISE_GAP, cpu_id, &who, FORMAT)?;
    if note.is_some() {
        notes.push(format!(
            "{who}: oslat's last bucket ({last} µs) holds {overflow} iterations of {} µs or more and the file does not say how long each was: stored at {last} µs, but the longest at the file's maximum, {}",
            last - 1,
            Nanos::from_micros(max)
        ));
    }
    let h = &m.histogram;
    let stats = NoiseCpuStats {
        cpu: cpu_id,
        clock: NoiseClock::Tsc,
        tsc_hz: mhz.saturating_mul(1_000_000),
        calibration_drift_ppb: 0,
        active_ns: Nanos((seconds.max(0.0) * 1e9).round() as u64),
        iterations,
        base_iteration_ps: 0,
        gap_threshold_ns: Nanos::from_micros(1),
        interruptions: h.count(),
        noise_ns: Nanos(u64::try_from(h.sum()).unwrap_or(u64::MAX)),
        max_gap_ns: h.max().unwrap_or(Nanos::ZERO),
        classes: Default::default(),
        steal_ns: None,
        findings: Vec::new(),
    };
    Ok(Some((m, stats)))
}

/// A thread's buckets as oslat counts them.
struct Buckets {
    /// Every iteration.
    iterations: u64,
    /// The buckets of 2 µs up to below the last.
    gaps: Vec<(u64, u64)>,
    /// The count of the last bucket.
    last_count: u64,
}

fn buckets(t: &Map<String, Value>, who: &str, last: u64) -> Result<Buckets, ImportError> {
    let Some(Value::Object(h)) = t.get("histogram") else {
        return Err(ImportError::invalid(
            FORMAT,
            format!("{who} has no histogram"),
        ));
    };
    let mut iterations: u64 = 0;
    let mut gaps: Vec<(u64, u64)> = Vec::new();
    let mut last_count = 0;
    for (k, c) in h {
        let (label, count) = rt_tests::bucket(FORMAT, who, k, c)?;
        if label == 0 || label > last {
            return Err(ImportError::invalid(
                FORMAT,
                format!("{who}: bucket \"{k}\" is outside oslat's 1 .. {last}"),
            ));
        }
        iterations = iterations.checked_add(count).ok_or_else(|| {
            ImportError::invalid(FORMAT, format!("{who}: the iteration count overflows"))
        })?;
        if label == last {
            last_count = count;
        } else if label >= 2 {
            gaps.push((label, count));
        }
    }
    Ok(Buckets {
        iterations,
        gaps,
        last_count,
    })
}

/// The interruptions as a tool histogram, and the iterations beyond its
/// range. The last bucket holds its own microsecond and every longer
/// iteration: beyond the range when the maximum says so.
fn gap_histogram(
    mut gaps: Vec<(u64, u64)>,
    last: u64,
    last_count: u64,
    max: u64,
) -> (ToolHistogram, u64) {
    let (overflow, range_end) = if last_count > 0 && max > last && last >= 2 {
        (last_count, Some(last))
    } else {
        if last_count > 0 && last >= 2 {
            gaps.push((last, last_count));
        }
        (0, None)
    };
    let tool = ToolHistogram {
        unit_ns: 1000,
        buckets: gaps,
        width: 1,
        overflow,
        range_end,
        // oslat's minimum is over every iteration, not the gaps.
        min: None,
        max: (max >= 2).then_some(max),
        avg: None,
    };
    (tool, overflow)
}

/// The one cell of an oslat file: its settings from the command line or
/// the options, its duration the longest thread's.
fn noise_cell(
    args: &OslatArgs,
    metrics: Vec<MetricResult>,
    mut stats: Vec<NoiseCpuStats>,
    options: &Options,
    notes: &mut Vec<String>,
) -> Result<CellResult, ImportError> {
    let from_file = Some(match args.rtprio {
        Some(p) if p > 0 => (Policy::Fifo, p),
        _ => (Policy::Other, 0),
    });
    let (policy, priority) = scheduling(from_file, options, (Policy::Other, 0, ""), notes)?;
    if options.period.is_some() {
        return Err(ImportError::Option(OptionError::NoPeriod));
    }
    let active = stats
        .iter()
        .map(|s| s.active_ns)
        .max()
        .unwrap_or(Nanos::ZERO);
    let mut settings = NoiseSettings {
        runtime_ns: active,
        pause_ns: Nanos::ZERO,
        gap_min_ns: Some(Nanos::from_micros(1)),
        ..NoiseSettings::default()
    };
    settings.common.policy = policy;
    settings.common.priority = priority;
    settings.common.cpus = cpus_of(&metrics);
    settings.common.duration_ns = args.duration;
    let mut c = cell(
        0,
        options.workload(),
        CellSettings::Noise(settings),
        active,
        metrics,
    );
    stats.sort_by_key(|s| s.cpu);
    c.noise = stats;
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_oslat_options() {
        let a = oslat_args(&[
            "-D",
            "2m",
            "--json=/tmp/x",
            "-f",
            "90",
            "-b",
            "64",
            "-c",
            "1-3",
        ])
        .unwrap_or_default();
        assert_eq!(a.duration, Some(Nanos::from_secs(120)));
        assert_eq!(a.rtprio, Some(90));
        assert_eq!(a.buckets, Some(64));
        assert!(!a.bias);
        assert!(oslat_args(&["--bias"]).is_ok_and(|a| a.bias));
        assert!(oslat_args(&["-b", "many"]).is_err());
    }
}
