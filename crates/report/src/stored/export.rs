//! A stored run exported ([`crate::exports::export`]) with what the store
//! keeps beside it: a micro run's results, an HDR log's checkpoint
//! intervals, a Perfetto trace's episode window.

use latscope_model::RunId;
use latscope_store::Store;

use super::StoredError;
use crate::exports::{export, ExportInput, Format, MicroInput};

/// An exported run.
pub struct Exported {
    pub bytes: Vec<u8>,
    /// An HDR log of a latency run stored without checkpoint intervals (by
    /// a latscope before them, or imported): one interval per cell and
    /// metric.
    pub without_intervals: bool,
}

/// Exports run `id` in `format`.
pub fn export_run(store: &Store, id: RunId, format: Format) -> Result<Exported, StoredError> {
    let run = store.load_run(id)?;
    let micro = store.load_micro(id)?;
    let results = micro.as_ref().map(|m| m.results());
    let mut input = ExportInput::run(&run);
    input.micro = micro
        .as_ref()
        .zip(results.as_deref())
        .map(|(m, results)| MicroInput {
            context: m.context.as_ref(),
            results,
        });
    let (intervals, window);
    let mut without_intervals = false;
    match format {
        Format::Hdr(_) if input.micro.is_none() => {
            intervals = store.load_run_intervals(id)?;
            without_intervals = intervals.is_none();
            input.intervals = intervals.as_deref();
        }
        Format::Perfetto { episode } => {
            window = store.load_episode_window(id, episode)?;
            input.episode_window = window.as_ref();
        }
        _ => {}
    }
    let mut bytes = Vec::new();
    export(format, &input, &mut bytes)?;
    Ok(Exported {
        bytes,
        without_intervals,
    })
}
