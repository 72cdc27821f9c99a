//! `forecast TIMER_RUN --against APP_RUN` on a store: the runs each side
//! names read (several, `2,4,6`: the blocks of an interleaved measurement,
//! whose cells are pooled per scheme and workload) and their cells paired
//! ([`latscope_stats::forecast::pairing::pairs`]).

use latscope_stats::forecast::pairing::{pairs, Pair};
use latscope_stats::{CellResult, RunResult};
use latscope_store::Store;

use super::StoredError;

/// The paired cells of the runs each side named.
pub struct StoredPairing {
    pub timer_runs: Vec<i64>,
    pub app_runs: Vec<i64>,
    pub pairs: Vec<Pair>,
}

/// Pairs the timer runs `timer_spec` names with the app runs `app_spec`
/// names.
pub fn stored_pairing(
    store: &Store,
    timer_spec: &str,
    app_spec: &str,
) -> Result<StoredPairing, StoredError> {
    let timers = load_runs(store, timer_spec)?;
    let apps = load_runs(store, app_spec)?;
    let ids = |runs: &[RunResult]| runs.iter().map(|r| r.meta.id.0).collect::<Vec<_>>();
    let (timer_runs, app_runs) = (ids(&timers), ids(&apps));
    match pairs(&cells(&timers), &cells(&apps)) {
        Ok(pairs) => Ok(StoredPairing {
            timer_runs,
            app_runs,
            pairs,
        }),
        Err(error) => Err(StoredError::Pairing {
            error: Box::new(error),
            timer_runs,
            app_runs,
        }),
    }
}

/// The runs `spec` names: one (an id, `latest`, `HOST:N`) or several
/// separated by commas, each once.
fn load_runs(store: &Store, spec: &str) -> Result<Vec<RunResult>, StoredError> {
    let mut ids = Vec::new();
    for part in spec.split(',') {
        let id = store.resolve(part)?;
        if ids.contains(&id) {
            return Err(StoredError::NamedTwice {
                run: id.0,
                spec: spec.to_string(),
            });
        }
        ids.push(id);
    }
    let runs = ids.into_iter().map(|id| store.load_run(id));
    Ok(runs.collect::<Result<_, _>>()?)
}

fn cells(runs: &[RunResult]) -> Vec<(i64, &CellResult)> {
    runs.iter()
        .flat_map(|r| r.cells.iter().map(move |c| (r.meta.id.0, c)))
        .collect()
}
