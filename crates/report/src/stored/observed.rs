//! A monitor run's observed worst case of the wake-up latency per minute,
//! hour, day and week, from its stored minute and hour windows (over
//! every CPU): what
//! `show`, `report` and `forecast` add for a monitor. Nothing for other
//! runs, which have no windows.

use latscope_model::{metric, Nanos, RunId};
use latscope_stats::blocks::{hour_maxima, observed_blocks, HourMax, ObservedBlocks};
use latscope_store::{Span, Store, StoreError};

/// The blocks of `id`'s hour windows of `timer.latency`, or `None` when
/// the run has none (not a monitor). Only windows the run measured whole
/// count: a monitor started at 07:19 and stopped at 08:21 has measured no
/// whole hour (its 07:00 and 08:00 windows hold 41 and 21 minutes), nor
/// its first and last minute.
pub fn observed(store: &Store, id: RunId) -> Result<Option<ObservedBlocks>, StoreError> {
    let meta = store.load_meta(id)?;
    let from = meta.started_unix_ns;
    let to = meta
        .ended_unix_ns
        .or(meta.checkpoint_unix_ns)
        .unwrap_or(from);
    let whole = |span: Span| {
        move |&(start, _): &(Nanos, Nanos)| start >= from && start.0 + span.length().0 <= to.0
    };
    let maxima = store.window_maxima(id, Span::Hour, metric::TIMER_LATENCY)?;
    if maxima.is_empty() {
        return Ok(None);
    }
    let hours = hour_maxima(
        maxima
            .into_iter()
            .filter(whole(Span::Hour))
            .map(|(start_unix, max)| HourMax { start_unix, max }),
    );
    let minutes = store.window_maxima(id, Span::Minute, metric::TIMER_LATENCY)?;
    Ok(Some(observed_blocks(&hours).with_minutes(
        minutes.into_iter().filter(whole(Span::Minute)),
    )))
}

/// The table of [`observed`], or nothing.
pub fn observed_text(store: &Store, id: RunId) -> Result<String, StoreError> {
    Ok(observed(store, id)?
        .map(|o| crate::blocks::observed_blocks_text(metric::TIMER_LATENCY, &o))
        .unwrap_or_default())
}
