//! An HdrHistogram interval log (format version 1.3), as Java's
//! `HistogramLogWriter` writes it and `HistogramLogProcessor` reads it: one
//! interval per cell × metric × CPU, each a base64 V2 deflate-compressed
//! histogram tagged `metric/cpu`.

use std::fmt::Write as _;
use std::time::Duration;

use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use latscope_stats::{Histogram, RunResult};

use super::{cpu_label, ExportError};

/// The unit of the values in the log.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HdrUnit {
    /// Nanoseconds, latscope's own unit (the HdrHistogram tools' default
    /// output ratio of 1e6 then prints milliseconds).
    #[default]
    Nanos,
    /// Whole microseconds (truncated).
    Micros,
}

impl HdrUnit {
    fn divisor(self) -> u64 {
        match self {
            HdrUnit::Nanos => 1,
            HdrUnit::Micros => 1000,
        }
    }
    fn name(self) -> &'static str {
        match self {
            HdrUnit::Nanos => "nanoseconds",
            HdrUnit::Micros => "microseconds",
        }
    }
}

/// latscope's histogram as an `hdrhistogram` one: each recording bucket's
/// count at its lowest value (the layouts agree: 1 ns unit, 3 significant
/// digits), divided into `unit`.
pub fn to_hdr(h: &Histogram, unit: HdrUnit) -> Result<hdrhistogram::Histogram<u64>, ExportError> {
    let mut out =
        hdrhistogram::Histogram::<u64>::new(3).map_err(|e| ExportError::Hdr(e.to_string()))?;
    for (low, _high, count) in h.buckets() {
        out.record_n(low / unit.divisor(), count)
            .map_err(|e| ExportError::Hdr(e.to_string()))?;
    }
    Ok(out)
}

/// Replaces the characters an interval-log tag may not hold.
fn tag_text(s: &str) -> String {
    s.chars()
        .map(|c| {
            if matches!(c, ',' | ' ' | '\r' | '\n') {
                '_'
            } else {
                c
            }
        })
        .collect()
}

/// The run as an HdrHistogram interval log: `#[...]` comment lines, then
/// `#[StartTime: ...]` and `#[BaseTime: ...]` (the run's wall-clock start),
/// the legend line, and one interval line per non-empty cell × metric × CPU:
/// `Tag=metric/cpu,start,length,max,histogram`. An interval's start is the
/// cell's start relative to the first cell's (seconds), its length the
/// cell's measured duration; cells with the same metric and CPU share the
/// tag, and a `#[cell ...]` comment before each cell's lines names it.
pub fn hdr_interval_log(run: &RunResult, unit: HdrUnit) -> Result<String, ExportError> {
    let mut header = String::new();
    let _ = writeln!(
        header,
        "#[Logged with latscope {}: run {} on {}]",
        run.meta.tool_version, run.meta.id, run.meta.hostname
    );
    let _ = writeln!(header, "#[Histogram log format version 1.3]");
    let _ = writeln!(header, "#[Values in {}]", unit.name());
    let start_s = run.meta.started_unix_ns.as_secs_f64();
    let _ = writeln!(header, "#[StartTime: {start_s:.3} (seconds since epoch)]");
    let _ = writeln!(header, "#[BaseTime: {start_s:.3} (seconds since epoch)]");
    header.push_str(
        "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n",
    );
    let mut bytes = header.into_bytes();
    let first = run
        .cells
        .iter()
        .map(|c| c.meta.monotonic_start_ns.as_u64())
        .min()
        .unwrap_or(0);
    let mut serializer = V2DeflateSerializer::new();
    let mut any = false;
    {
        let builder = IntervalLogWriterBuilder::new();
        let mut log = builder
            .begin_log_with(&mut bytes, &mut serializer)
            .map_err(|e| ExportError::Hdr(e.to_string()))?;
        for cell in &run.cells {
            let offset =
                Duration::from_nanos(cell.meta.monotonic_start_ns.as_u64().saturating_sub(first));
            let length = Duration::from_nanos(cell.meta.duration_ns.as_u64());
            log.write_comment(&format!(
                "[cell {}: probe {}, workload {}]",
                cell.meta.index, cell.meta.probe, cell.meta.workload
            ))
            .map_err(|e| ExportError::Hdr(e.to_string()))?;
            for m in cell.metrics.iter().filter(|m| !m.histogram.is_empty()) {
                let h = to_hdr(&m.histogram, unit)?;
                let tag = tag_text(&format!("{}/{}", m.name, cpu_label(m.cpu)));
                log.write_histogram(&h, offset, length, Tag::new(&tag))
                    .map_err(|e| ExportError::Hdr(e.to_string()))?;
                any = true;
            }
        }
    }
    if !any {
        return Err(ExportError::NoData(format!(
            "run {} has no samples, so there is no HdrHistogram log to export",
            run.meta.id
        )));
    }
    String::from_utf8(bytes).map_err(|e| ExportError::Hdr(e.to_string()))
}
