//! `latscope export RUN --format json|csv|csv-buckets|hdr|cyclictest|rt-tests-json|prometheus`:
//! a whole run in the formats other tools read (`hdr` with one interval per
//! checkpoint where the store kept them); and
//! `latscope export RUN --episode K --format perfetto`: one episode of a
//! traced run, with the kernel events around it, as a file a trace viewer
//! opens. Reads the store, never writes it.

use std::io::Write;
use std::path::Path;

use anyhow::{anyhow, Context};
use latscope_store::Store;

use latscope_report::exports::{self, HdrUnit, RtTestsUnit};

use crate::args::{ExportArgs, ExportFormat, HdrUnitArg, UnitArg};
use crate::exit::{self, Exit};

/// Writes `text` to `path` (through a temporary name, so a reader never
/// sees half a file), or to standard output.
fn write(text: &str, path: Option<&Path>) -> anyhow::Result<()> {
    match path {
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())
                .and_then(|()| out.flush())
                .context("cannot write to standard output")
        }
        Some(path) => crate::output::write_file(path, text.as_bytes()),
    }
}

pub fn export(args: &ExportArgs) -> Result<i32, Exit> {
    match (args.format, args.episode) {
        (ExportFormat::Perfetto, Some(k)) => return export_episode(args, k),
        (ExportFormat::Perfetto, None) => {
            return Err(Exit::usage(
                "--format perfetto exports one episode: give it with --episode K",
            ))
        }
        (_, Some(_)) => return Err(Exit::usage(
            "--episode goes with --format perfetto only; the other formats export the whole run",
        )),
        (_, None) => {}
    }
    if args.unit.is_some() && args.format != ExportFormat::RtTestsJson {
        return Err(Exit::usage(
            "--unit goes with --format rt-tests-json (the unit of --format hdr is --hdr-unit)",
        ));
    }
    let store = Store::open_existing(&args.store.store)?;
    let id = store.resolve(&args.run)?;
    let run = store.load_run(id)?;
    if let Some(micro) = store.load_micro(id)? {
        let results = micro.results();
        let text = match args.format {
            ExportFormat::Json => {
                serde_json::to_string_pretty(&latscope_report::micro_json(
                    &run,
                    micro.context.as_ref(),
                    &results,
                ))
                .context("cannot encode the run as JSON")?
                    + "\n"
            }
            ExportFormat::Csv => latscope_report::micro_csv(&results),
            _ => {
                return Err(Exit::usage(format!(
                    "run {id} is a micro run: it exports as --format json or csv (the other formats hold latency histograms)"
                )))
            }
        };
        write(&text, args.output.as_deref())?;
        return Ok(exit::OK);
    }
    let text = match args.format {
        ExportFormat::Json => {
            serde_json::to_string_pretty(&latscope_report::run_json(&run))
                .context("cannot encode the run as JSON")?
                + "\n"
        }
        ExportFormat::Csv => exports::summaries_csv(&run),
        ExportFormat::CsvBuckets => exports::buckets_csv(&run),
        ExportFormat::Hdr => {
            let unit = match args.hdr_unit {
                HdrUnitArg::Ns => HdrUnit::Nanos,
                HdrUnitArg::Us => HdrUnit::Micros,
            };
            let intervals = checkpoint_intervals(&store, id)?;
            if intervals.is_none() {
                eprintln!(
                    "note: run {id} was stored without checkpoint intervals (by a latscope before them, or imported): the log has one interval per cell and metric"
                );
            }
            exports::hdr_checkpoint_log(&run, &intervals.unwrap_or_default(), unit)
                .map_err(anyhow::Error::from)?
        }
        ExportFormat::Cyclictest => {
            exports::cyclictest_histogram(&run, args.max_us).map_err(anyhow::Error::from)?
        }
        ExportFormat::RtTestsJson => {
            let unit = match args.unit {
                Some(UnitArg::Ns) => RtTestsUnit::Nanos,
                Some(UnitArg::Us) | None => RtTestsUnit::Micros,
            };
            exports::rt_tests_json(&run, unit).map_err(anyhow::Error::from)?
        }
        ExportFormat::Prometheus => exports::prometheus_text(&run),
        ExportFormat::Perfetto => unreachable_perfetto()?,
    };
    write(&text, args.output.as_deref())?;
    Ok(exit::OK)
}

/// The checkpoint intervals the store kept for the run's cells; `None`
/// when it kept them for none.
fn checkpoint_intervals(
    store: &Store,
    id: latscope_model::RunId,
) -> anyhow::Result<Option<Vec<latscope_stats::IntervalSeries>>> {
    let mut all = Vec::new();
    let mut any = false;
    for cell in store.cell_ids(id)? {
        if let Some(series) = store.load_intervals(cell)? {
            any = true;
            all.extend(series);
        }
    }
    Ok(any.then_some(all))
}

/// Perfetto is handled before the store is read; kept as an error rather
/// than a panic should the dispatch above change.
fn unreachable_perfetto() -> anyhow::Result<String> {
    Err(anyhow!("--format perfetto needs --episode K"))
}

fn export_episode(args: &ExportArgs, k: u32) -> Result<i32, Exit> {
    let store = Store::open_existing(&args.store.store)?;
    let id = store.resolve(&args.run)?;
    let run = store.load_run(id)?;
    let Some(episode) = run
        .cells
        .iter()
        .flat_map(|c| c.episodes.iter())
        .find(|e| e.seq == k)
    else {
        return Err(anyhow!(latscope_report::episode_missing(&run, k)).into());
    };
    let Some(window) = store.load_episode_window(id, k)? else {
        return Err(anyhow!(
            "the kernel events of episode {k} of run {id} were not kept (the event-window cap was reached), so there is nothing to export; `latscope show {id} --episodes` has its breakdown"
        )
        .into());
    };
    let doc = latscope_report::perfetto_trace(id, episode, &window);
    let text = serde_json::to_string(&doc).context("cannot encode the trace as JSON")? + "\n";
    write(&text, args.output.as_deref())?;
    Ok(exit::OK)
}
