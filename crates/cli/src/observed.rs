//! A monitor run's observed worst case of the wake-up latency per minute,
//! hour, day and week, from its stored minute and hour windows (over
//! every CPU): what
//! `show`, `report` and `forecast` add for a monitor. Nothing for other
//! runs, which have no windows.

use latscope_model::{metric, RunId};
use latscope_stats::blocks::{hour_maxima, observed_blocks, HourMax, ObservedBlocks};
use latscope_store::{Span, Store};

use crate::exit::Exit;

/// The blocks of `id`'s hour windows of `timer.latency`, or `None` when
/// the run has none (not a monitor).
pub fn observed(store: &Store, id: RunId) -> Result<Option<ObservedBlocks>, Exit> {
    let maxima = store.window_maxima(id, Span::Hour, metric::TIMER_LATENCY)?;
    let hours = hour_maxima(
        maxima
            .into_iter()
            .map(|(start_unix, max)| HourMax { start_unix, max }),
    );
    if hours.is_empty() {
        return Ok(None);
    }
    let minutes = store.window_maxima(id, Span::Minute, metric::TIMER_LATENCY)?;
    Ok(Some(observed_blocks(&hours).with_minutes(minutes)))
}

/// The table of [`observed`], or nothing.
pub fn observed_text(store: &Store, id: RunId) -> Result<String, Exit> {
    Ok(observed(store, id)?
        .map(|o| latscope_report::observed_blocks_text(metric::TIMER_LATENCY, &o))
        .unwrap_or_default())
}
