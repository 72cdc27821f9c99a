//! Building the cells of an imported run: one metric per CPU (threads that
//! shared a CPU merged), the settings the file says or the user gave, and
//! the cell itself.

use latscope_model::{
    CellMeta, CellSettings, CpuId, CpuSet, Nanos, Policy, TimerSettings, DEFAULT_PERIOD,
};
use latscope_record::{CellResult, MetricResult};

use crate::{ImportError, ImportOption, OptionError, OptionNamer, Options};

/// The largest CPU number accepted (the kernel's NR_CPUS limit is 8192).
const MAX_CPU: i64 = 8191;

/// A CPU number from a file; `None` for a negative one (not pinned).
pub(crate) fn cpu(n: i64, format: &'static str, who: &str) -> Result<Option<CpuId>, ImportError> {
    if n < 0 {
        return Ok(None);
    }
    if n > MAX_CPU {
        return Err(ImportError::invalid(
            format,
            format!("{who} ran on CPU {n}, beyond any machine's"),
        ));
    }
    Ok(Some(CpuId(n as u32)))
}

/// Adds `m` to `metrics`, merging it into a metric of the same name and
/// CPU if there is one (two threads on one CPU: latscope keeps one
/// histogram per CPU), with a note.
pub(crate) fn add_metric(
    metrics: &mut Vec<MetricResult>,
    m: MetricResult,
    notes: &mut Vec<String>,
) {
    if let Some(same) = metrics
        .iter_mut()
        .find(|x| x.name == m.name && x.cpu == m.cpu)
    {
        same.histogram.merge(&m.histogram);
        let cpu = m.cpu.map_or_else(|| "all".to_string(), |c| c.to_string());
        let note = format!(
            "several threads measured {} on CPU {cpu}: their histograms are merged",
            m.name
        );
        if !notes.contains(&note) {
            notes.push(note);
        }
        return;
    }
    metrics.push(m);
    metrics.sort_by(|a, b| (&a.name, a.cpu).cmp(&(&b.name, b.cpu)));
}

/// The CPUs of some metrics, kernel-style (`0-3`).
pub(crate) fn cpus_of(metrics: &[MetricResult]) -> String {
    metrics
        .iter()
        .filter_map(|m| m.cpu)
        .collect::<CpuSet>()
        .to_string()
}

/// A value the file may say and the user may give: the file's when it
/// says it (the user giving it too is an error, not an override), the
/// user's when not, else `default` with a note naming the option.
pub(crate) fn setting<T: PartialEq + Copy + std::fmt::Display>(
    from_file: Option<T>,
    from_user: Option<T>,
    option: (ImportOption, &OptionNamer),
    what: &'static str,
    default: (T, &str),
    notes: &mut Vec<String>,
) -> Result<T, ImportError> {
    let (key, names) = option;
    let option = names.name(key);
    match (from_file, from_user) {
        (Some(f), Some(u)) if f != u => Err(ImportError::Option(OptionError::Recorded {
            option: key,
            what,
            recorded: f.to_string(),
        })),
        (Some(f), _) => Ok(f),
        (None, Some(u)) => {
            notes.push(format!(
                "the {what} ({u}) is as given with {option}; the file does not record it"
            ));
            Ok(u)
        }
        (None, None) => {
            notes.push(format!(
                "the file does not record the {what}: stored as {}, {}; give {option} if it was another",
                default.0, default.1
            ));
            Ok(default.0)
        }
    }
}

/// Policy and priority from the file, the options or defaults.
pub(crate) fn scheduling(
    from_file: Option<(Policy, u32)>,
    options: &Options,
    default: (Policy, u32, &str),
    notes: &mut Vec<String>,
) -> Result<(Policy, u32), ImportError> {
    let policy = setting(
        from_file.map(|f| f.0),
        options.policy,
        (ImportOption::Policy, &options.names),
        "scheduling policy",
        (default.0, default.2),
        notes,
    )?;
    let priority = setting(
        from_file.map(|f| f.1),
        options.priority,
        (ImportOption::Priority, &options.names),
        "priority",
        (default.1, default.2),
        notes,
    )?;
    Ok((policy, if policy.has_priority() { priority } else { 0 }))
}

/// A timer cell's period and scheduling: the file's, else the user's, else
/// the tool's defaults (`period_default` says why the default period,
/// `sched_default` is the policy, priority and why), with notes.
pub(crate) fn timer_settings(
    file_period: Option<Nanos>,
    file_sched: Option<(Policy, u32)>,
    options: &Options,
    period_default: &str,
    sched_default: (Policy, u32, &str),
    notes: &mut Vec<String>,
) -> Result<TimerSettings, ImportError> {
    let period = setting(
        file_period,
        options.period,
        (ImportOption::Period, &options.names),
        "period",
        (DEFAULT_PERIOD, period_default),
        notes,
    )?;
    let (policy, priority) = scheduling(file_sched, options, sched_default, notes)?;
    let mut s = TimerSettings {
        period_ns: period,
        ..TimerSettings::default()
    };
    s.common.policy = policy;
    s.common.priority = priority;
    Ok(s)
}

/// One cell.
pub(crate) fn cell(
    index: u32,
    workload: String,
    settings: CellSettings,
    duration: Nanos,
    metrics: Vec<MetricResult>,
) -> CellResult {
    CellResult::new(CellMeta::new(index, &workload, settings, duration), metrics)
}
