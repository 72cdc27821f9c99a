//! `forecast TIMER_RUN --against APP_RUN` on a store: the runs each side
//! names read (several, `2,4,6`: the blocks of an interleaved measurement,
//! whose cells are pooled per scheme and workload) and their cells paired
//! ([`latscope_stats::forecast::pairing::pairs`]).

use latscope_stats::forecast::pairing::{pairs, Pair, PairingError};
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

/// A pairing refused, as one line naming the runs at fault ("run 1,3 has
/// no timer cell ...", the runs as the user lists them).
pub(super) fn refusal_line(e: &PairingError, timer_runs: &[i64], app_runs: &[i64]) -> String {
    let names = |ids: &[i64]| ids.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
    match e {
        PairingError::NoTimerLatency | PairingError::NoTimerCell { .. } => {
            format!("run {} has {e}", names(timer_runs))
        }
        PairingError::NoAppCell => format!("run {} has {e}", names(app_runs)),
        PairingError::Scheme { .. } | PairingError::Forecast(_) => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_pairing_names_the_runs_as_before() {
        let line = refusal_line(&PairingError::NoAppCell, &[1], &[2, 4]);
        assert_eq!(
            line,
            "run 2,4 has no app-probe cell with buffers: give a `latscope run --probe app` run"
        );
        let e = PairingError::NoTimerCell {
            workload: "io".into(),
            app_cell: 3,
        };
        assert_eq!(
            refusal_line(&e, &[1, 3], &[2]),
            "run 1,3 has no timer cell under workload 'io' for app cell 3"
        );
    }
}
