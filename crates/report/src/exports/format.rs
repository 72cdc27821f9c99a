//! The one exporter interface: [`export`] writes a run, in one [`Format`],
//! as bytes to any [`Write`]. Where the bytes go (a file created
//! atomically, standard output) is the caller's business.
//!
//! The formats are an enum, not a trait with one implementation each: the
//! set is closed (the CLI's `--format` lists it), each format's options
//! (the HDR log's unit, the cyclictest histogram's size) travel in its
//! variant, and one `match` makes every caller handle every format and
//! every format say which runs it takes (a micro run exports as JSON or
//! CSV only; Perfetto needs a traced episode).

use std::io::Write;

use latscope_model::{EpisodeWindow, MicroContext, MicroResult};
use latscope_stats::{IntervalSeries, RunResult};

use super::{
    buckets_csv, cyclictest_histogram, hdr_checkpoint_log, prometheus_text, rt_tests_json,
    summaries_csv, ExportError, HdrUnit, RtTestsUnit,
};

/// An export format and its options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The run as JSON (the schema of `run --json`; a micro run's own).
    Json,
    /// Summaries per cell, metric and CPU (a micro run: its results).
    Csv,
    /// Histogram buckets per cell, metric and CPU.
    CsvBuckets,
    /// HdrHistogram interval log, one interval per checkpoint where the
    /// input has them ([`ExportInput::intervals`]).
    Hdr(HdrUnit),
    /// cyclictest's `-h` histogram text of timer.latency, `max_us` buckets.
    Cyclictest { max_us: u32 },
    /// The JSON file `cyclictest --json` writes.
    RtTestsJson(RtTestsUnit),
    /// Prometheus text exposition of the run's histograms.
    Prometheus,
    /// Chrome / Perfetto JSON trace of episode `episode` (sequence number).
    Perfetto { episode: u32 },
}

/// A micro run's results, which replace the latency histograms.
#[derive(Debug, Clone, Copy)]
pub struct MicroInput<'a> {
    pub context: Option<&'a MicroContext>,
    pub results: &'a [MicroResult],
}

/// What an export reads: the run as stored and, per format, what the
/// store keeps beside it.
#[derive(Debug, Clone, Copy)]
pub struct ExportInput<'a> {
    pub run: &'a RunResult,
    /// A micro run's results (`None`: a latency run).
    pub micro: Option<MicroInput<'a>>,
    /// [`Format::Hdr`]: the checkpoint intervals of the run's cells
    /// (`None`: not kept; the log then has one interval per cell and metric).
    pub intervals: Option<&'a [IntervalSeries]>,
    /// [`Format::Perfetto`]: the kernel events kept around the episode
    /// (`None`: not kept).
    pub episode_window: Option<&'a EpisodeWindow>,
}

impl<'a> ExportInput<'a> {
    /// A latency run with nothing kept beside it.
    pub fn run(run: &'a RunResult) -> ExportInput<'a> {
        ExportInput {
            run,
            micro: None,
            intervals: None,
            episode_window: None,
        }
    }
}

/// Writes `input` in `format` to `out`.
pub fn export(
    format: Format,
    input: &ExportInput<'_>,
    out: &mut dyn Write,
) -> Result<(), ExportError> {
    let text = match (format, input.micro) {
        (Format::Perfetto { episode }, _) => perfetto(input, episode)?,
        (_, Some(micro)) => micro_text(format, input, micro)?,
        (_, None) => run_text(format, input)?,
    };
    out.write_all(text.as_bytes())?;
    Ok(())
}

fn micro_text(
    format: Format,
    input: &ExportInput<'_>,
    micro: MicroInput<'_>,
) -> Result<String, ExportError> {
    match format {
        Format::Json => json(&crate::micro_json(input.run, micro.context, micro.results)),
        Format::Csv => Ok(crate::micro_csv(micro.results)),
        _ => Err(ExportError::MicroFormat),
    }
}

fn run_text(format: Format, input: &ExportInput<'_>) -> Result<String, ExportError> {
    let run = input.run;
    match format {
        Format::Json => json(&crate::run_json(run)),
        Format::Csv => Ok(summaries_csv(run)),
        Format::CsvBuckets => Ok(buckets_csv(run)),
        Format::Hdr(unit) => hdr_checkpoint_log(run, input.intervals.unwrap_or_default(), unit),
        Format::Cyclictest { max_us } => cyclictest_histogram(run, max_us),
        Format::RtTestsJson(unit) => rt_tests_json(run, unit),
        Format::Prometheus => Ok(prometheus_text(run)),
        Format::Perfetto { episode } => perfetto(input, episode),
    }
}

fn perfetto(input: &ExportInput<'_>, k: u32) -> Result<String, ExportError> {
    let Some(episode) = input
        .run
        .cells
        .iter()
        .flat_map(|c| c.episodes.iter())
        .find(|e| e.seq == k)
    else {
        return Err(ExportError::NoEpisode(crate::episode_missing(input.run, k)));
    };
    let window = input.episode_window.ok_or(ExportError::WindowNotKept(k))?;
    let doc = crate::perfetto_trace(input.run.meta.id, episode, window);
    Ok(serde_json::to_string(&doc)? + "\n")
}

/// A document as the JSON exports hold it: pretty, with a final newline.
fn json<T: serde::Serialize>(doc: &T) -> Result<String, ExportError> {
    Ok(serde_json::to_string_pretty(doc)? + "\n")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use latscope_model::{CellMeta, CellSettings, Nanos, RunId, RunMeta};
    use latscope_stats::{CellResult, MetricResult};

    fn run() -> RunResult {
        let mut m = MetricResult::new("timer.latency", None);
        for i in 0..100u64 {
            m.histogram.record(10_000 + i);
        }
        let meta = CellMeta {
            index: 0,
            probe: "timer".into(),
            workload: "idle".into(),
            settings: CellSettings::default_for("timer").unwrap(),
            duration_ns: Nanos(1_000_000_000),
            monotonic_start_ns: Nanos(0),
        };
        RunResult {
            meta: RunMeta::new(RunId(7), Nanos(0)),
            system: Default::default(),
            capabilities: Default::default(),
            cells: vec![CellResult::new(meta, vec![m])],
        }
    }

    fn bytes(format: Format, input: &ExportInput<'_>) -> Result<Vec<u8>, ExportError> {
        let mut out = Vec::new();
        export(format, input, &mut out).map(|()| out)
    }

    #[test]
    fn each_format_writes_what_its_function_renders() {
        let run = run();
        let input = ExportInput::run(&run);
        let text = |f| String::from_utf8(bytes(f, &input).unwrap()).unwrap();
        assert_eq!(text(Format::Csv), summaries_csv(&run));
        assert_eq!(text(Format::CsvBuckets), buckets_csv(&run));
        assert_eq!(text(Format::Prometheus), prometheus_text(&run));
        assert_eq!(
            text(Format::Cyclictest { max_us: 50 }),
            cyclictest_histogram(&run, 50).unwrap()
        );
        assert_eq!(
            text(Format::Hdr(HdrUnit::Micros)),
            hdr_checkpoint_log(&run, &[], HdrUnit::Micros).unwrap()
        );
        let json: serde_json::Value = serde_json::from_str(&text(Format::Json)).unwrap();
        assert_eq!(json["run_id"], 7);
        assert!(text(Format::Json).ends_with("}\n"));
    }

    #[test]
    fn a_micro_run_takes_json_and_csv_only_and_perfetto_needs_a_kept_episode() {
        let run = run();
        let mut input = ExportInput::run(&run);
        input.micro = Some(MicroInput {
            context: None,
            results: &[],
        });
        assert!(bytes(Format::Csv, &input).is_ok());
        assert!(bytes(Format::Json, &input).is_ok());
        assert!(matches!(
            bytes(Format::Prometheus, &input),
            Err(ExportError::MicroFormat)
        ));
        // The run has no episode 3: the error says which it has.
        assert!(matches!(
            bytes(Format::Perfetto { episode: 3 }, &ExportInput::run(&run)),
            Err(ExportError::NoEpisode(_))
        ));
    }
}
