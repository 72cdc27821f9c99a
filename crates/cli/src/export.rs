//! `latscope export RUN --format json|csv|csv-buckets|hdr|cyclictest|rt-tests-json|prometheus`:
//! a whole run in the formats other tools read (`hdr` with one interval per
//! checkpoint where the store kept them); and
//! `latscope export RUN --episode K --format perfetto`: one episode of a
//! traced run, with the kernel events around it, as a file a trace viewer
//! opens. Reads the store, never writes it: `latscope_report::stored`
//! reads and exports the run, [`crate::output::write`] puts the bytes in
//! the file.

use anyhow::anyhow;
use latscope_report::exports::{ChoiceError, ExportError, Format, FormatChoice};
use latscope_report::stored::{export_run, StoredError};
use latscope_store::Store;

use crate::args::ExportArgs;
use crate::exit::{self, Exit};

pub fn export(args: &ExportArgs) -> Result<i32, Exit> {
    let format = format(args)?;
    let store = Store::open_existing(&args.store.store)?;
    let id = store.resolve(&args.run)?;
    let exported = match export_run(&store, id, format) {
        Ok(e) => e,
        Err(StoredError::Export(e)) => return Err(refusal(e, id)),
        Err(e) => return Err(anyhow::Error::from(e).into()),
    };
    if exported.without_intervals {
        eprintln!(
            "note: run {id} was stored without checkpoint intervals (by a latscope before them, or imported): the log has one interval per cell and metric"
        );
    }
    crate::output::write(
        crate::output::destination(args.output.as_deref()),
        &exported.bytes,
        crate::output::PUBLIC,
    )?;
    Ok(exit::OK)
}

/// The format and its options from the flags, which must go together.
fn format(args: &ExportArgs) -> Result<Format, Exit> {
    let choice = FormatChoice {
        name: args.format,
        episode: args.episode,
        hdr_unit: args.hdr_unit,
        max_us: args.max_us,
        unit: args.unit,
    };
    choice.format().map_err(|e| {
        Exit::usage(match e {
            ChoiceError::EpisodeWithoutPerfetto => {
                "--episode goes with --format perfetto only; the other formats export the whole run"
            }
            ChoiceError::UnitWithoutRtTests => {
                "--unit goes with --format rt-tests-json (the unit of --format hdr is --hdr-unit)"
            }
            ChoiceError::PerfettoWithoutEpisode => {
                "--format perfetto exports one episode: give it with --episode K"
            }
        })
    })
}

/// An export refused, as one line naming the run and the flags.
fn refusal(e: ExportError, id: latscope_model::RunId) -> Exit {
    match e {
        ExportError::MicroFormat => Exit::usage(format!(
            "run {id} is a micro run: it exports as --format json or csv (the other formats hold latency histograms)"
        )),
        ExportError::WindowNotKept(k) => anyhow!(
            "the kernel events of episode {k} of run {id} were not kept (the event-window cap was reached), so there is nothing to export; `latscope show {id} --episodes` has its breakdown"
        )
        .into(),
        e => anyhow::Error::from(e).into(),
    }
}
