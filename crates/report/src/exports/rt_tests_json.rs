//! The JSON file `cyclictest --json` writes (rt-tests 2.4), for
//! `timer.latency`: pipelines that parse cyclictest's results take
//! latscope's runs unchanged. The layout, key order and spelling are
//! cyclictest's, including its `"cmdline:"` and `"rt_test_version:"`
//! keys; a `"latscope"` object at the end (which cyclictest's readers
//! ignore) gives each thread's cell and settings, so that `latscope
//! import` reads the file back into the same cells.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use latscope_model::{metric, CellSettings, Nanos, RunStatus};
use latscope_stats::{Histogram, RunResult};
use serde_json::json;

use super::ExportError;
use crate::time::format_rfc2822;

/// The unit of the values, as cyclictest's `resolution_in_ns` says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum RtTestsUnit {
    /// Microseconds (cyclictest's default).
    ///
    /// `resolution_in_ns: 0`.
    #[cfg_attr(feature = "clap", value(name = "us"))]
    Micros,
    /// Nanoseconds (cyclictest -N).
    ///
    /// `resolution_in_ns: 1`.
    #[cfg_attr(feature = "clap", value(name = "ns"))]
    Nanos,
}

impl RtTestsUnit {
    fn ns(self) -> u64 {
        match self {
            RtTestsUnit::Micros => 1000,
            RtTestsUnit::Nanos => 1,
        }
    }
}

/// A JSON string literal.
fn string(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

/// The histogram as cyclictest's buckets, whole units of the values
/// (cyclictest cuts latencies to whole units): a latscope bucket counts
/// under the first whole unit it holds, or the unit it lies in when it
/// holds none, so a histogram imported from whole units exports as it
/// came (below about 1 ms, where latscope's buckets are narrower than a
/// microsecond). The buckets holding the minimum and the maximum count
/// under theirs, so that `min` and `max` name the first and last buckets
/// as in a file cyclictest wrote.
fn buckets(h: &Histogram, unit: u64) -> BTreeMap<u64, u64> {
    let (min, max) = match (h.min(), h.max()) {
        (Some(a), Some(b)) => (a.0, b.0),
        _ => return BTreeMap::new(),
    };
    let mut out = BTreeMap::new();
    for (low, high, count) in h.buckets() {
        let key = if (low..=high).contains(&max) {
            max / unit
        } else if (low..=high).contains(&min) {
            min / unit
        } else {
            let first = low.div_ceil(unit);
            if first.saturating_mul(unit) <= high {
                first
            } else {
                low / unit
            }
        };
        *out.entry(key).or_insert(0) += count;
    }
    out
}

/// The run's `timer.latency` histograms in cyclictest's JSON layout: one
/// thread per cell × CPU in run order, each with its `histogram` (every
/// non-empty bucket: nothing lies beyond its range, so `cycles` is their
/// sum), `cycles`, `min`, `max`, `avg` (two decimals), `cpu` and `node`
/// (-1: not known). The header says what the run says of itself:
/// latscope's command line, `"latscope VERSION"` as the version, the
/// run's start and end (UTC), return code 0 (1 for a failed run), and the
/// system (`machine` empty: latscope does not record it).
pub fn rt_tests_json(run: &RunResult, unit: RtTestsUnit) -> Result<String, ExportError> {
    let per = unit.ns();
    let mut threads = Vec::new();
    let mut ext = Vec::new();
    for cell in &run.cells {
        for m in cell
            .metrics
            .iter()
            .filter(|m| m.name == metric::TIMER_LATENCY && !m.histogram.is_empty())
        {
            let Some(cpu) = m.cpu else { continue };
            threads.push((cpu, &m.histogram));
            let mut entry = json!({ "cell": cell.meta.index, "workload": cell.meta.workload });
            if let CellSettings::Timer(_) = cell.meta.settings {
                entry["settings"] = serde_json::to_value(&cell.meta.settings)
                    .map_err(|e| ExportError::NoData(format!("cannot encode settings: {e}")))?;
            }
            ext.push(entry);
        }
    }
    if threads.is_empty() {
        return Err(ExportError::NoData(format!(
            "run {} has no timer.latency measurements, so there is nothing for rt-tests JSON",
            run.meta.id
        )));
    }
    let s = &run.system;
    let started = run.meta.started_unix_ns;
    let ended = run
        .meta
        .ended_unix_ns
        .or(run.meta.checkpoint_unix_ns)
        .unwrap_or(started);
    let mut out = String::from("{\n  \"file_version\": 1,\n");
    let _ = writeln!(
        out,
        "  \"cmdline:\": {},",
        string(&run.meta.command_line.join(" "))
    );
    let _ = writeln!(
        out,
        "  \"rt_test_version:\": {},",
        string(&format!("latscope {}", run.meta.tool_version))
    );
    let _ = writeln!(out, "  \"start_time\": \"{}\",", format_rfc2822(started));
    let _ = writeln!(out, "  \"end_time\": \"{}\",", format_rfc2822(ended));
    let code = i32::from(run.meta.status == RunStatus::Failed);
    let _ = writeln!(out, "  \"return_code\": {code},");
    out.push_str("  \"sysinfo\": {\n    \"sysname\": \"Linux\",\n");
    let _ = writeln!(out, "    \"nodename\": {},", string(&s.hostname));
    let _ = writeln!(out, "    \"release\": {},", string(&s.kernel_release));
    let _ = writeln!(out, "    \"version\": {},", string(&s.kernel_version));
    out.push_str("    \"machine\": \"\",\n");
    let rt = i32::from(s.preemption_model.as_deref() == Some("rt"));
    let _ = writeln!(out, "    \"realtime\": {rt}\n  }},");
    let _ = writeln!(out, "  \"num_threads\": {},", threads.len());
    let _ = writeln!(
        out,
        "  \"resolution_in_ns\": {},",
        i32::from(unit == RtTestsUnit::Nanos)
    );
    out.push_str("  \"thread\": {\n");
    for (i, (cpu, h)) in threads.iter().enumerate() {
        let _ = writeln!(out, "    \"{i}\": {{");
        out.push_str("      \"histogram\": {");
        let rows: Vec<String> = buckets(h, per)
            .iter()
            .map(|(v, c)| format!("        \"{v}\": {c}"))
            .collect();
        if rows.is_empty() {
            out.push_str("      },\n");
        } else {
            let _ = write!(out, "\n{}\n      }},\n", rows.join(",\n"));
        }
        let value = |n: Option<Nanos>| n.map_or(0, |n| n.0 / per);
        let mean = h.mean().map_or(0.0, |m| m.0 as f64 / per as f64);
        let _ = writeln!(out, "      \"cycles\": {},", h.count());
        let _ = writeln!(out, "      \"min\": {},", value(h.min()));
        let _ = writeln!(out, "      \"max\": {},", value(h.max()));
        let _ = writeln!(out, "      \"avg\": {mean:.2},");
        let _ = writeln!(out, "      \"cpu\": {},", cpu.0);
        out.push_str("      \"node\": -1\n");
        let comma = if i + 1 == threads.len() { "" } else { "," };
        let _ = writeln!(out, "    }}{comma}");
    }
    out.push_str("  },\n");
    let ext = json!({
        "version": run.meta.tool_version,
        "run_id": run.meta.id.0,
        "threads": ext,
    });
    let _ = writeln!(out, "  \"latscope\": {ext}");
    out.push_str("}\n");
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn extremes_name_the_first_and_last_buckets() {
        let mut h = Histogram::new();
        // 1,000,100 ns lies in a 512 ns bucket that starts at 999,936.
        for v in [10_500, 20_000, 1_000_100] {
            h.record(v);
        }
        let us = buckets(&h, 1000);
        assert_eq!(us.keys().copied().collect::<Vec<_>>(), [10, 20, 1000]);
        // 17 000 ns lies in the bucket 16 992 ..= 17 007: it counts as 17 µs,
        // and a value below it in that bucket does too.
        let mut h2 = Histogram::new();
        for v in [5_000, 17_000, 16_995, 90_000] {
            h2.record(v);
        }
        assert_eq!(buckets(&h2, 1000).get(&17), Some(&2));
        let ns = buckets(&h, 1);
        assert_eq!(
            ns.keys().copied().collect::<Vec<_>>(),
            [10_500, 20_000, 1_000_100]
        );
        assert!(buckets(&Histogram::new(), 1).is_empty());
    }
}
