//! `compare` on a store: the runs named (or the latest run of each host)
//! read and compared, micro runs benchmark by benchmark
//! ([`MicroComparison`]), latency runs cell by cell
//! ([`latscope_stats::compare`]). Both kinds in one comparison is refused.

use latscope_model::MicroResult;
use latscope_stats::compare::{compare_runs, RunComparison};
use latscope_store::Store;

use super::StoredError;
use crate::MicroComparison;

/// Which runs to compare: the first is the baseline.
pub enum CompareRuns<'a> {
    /// Runs as the user names them (an id, `latest`, `HOST:N`).
    Named(&'a [String]),
    /// The latest run of each host of the store, hosts in order.
    LatestOfEachHost,
}

/// A comparison of stored runs, of the kind the baseline is.
pub enum StoredComparison {
    Latency(RunComparison),
    Micro(MicroComparison),
}

/// Compares the runs `runs` names; `fail_if_slower` is the micro
/// comparison's threshold in percent.
pub fn stored_comparison(
    store: &Store,
    runs: CompareRuns,
    fail_if_slower: Option<f64>,
) -> Result<StoredComparison, StoredError> {
    let specs = match runs {
        CompareRuns::Named(specs) => specs.to_vec(),
        CompareRuns::LatestOfEachHost => latest_of_each(&store.hosts()?)?,
    };
    let ids = specs
        .iter()
        .map(|s| store.resolve(s))
        .collect::<Result<Vec<_>, _>>()?;
    let mut micro = Vec::with_capacity(ids.len());
    for id in &ids {
        micro.push((id.0, store.load_micro(*id)?.map(|m| m.results())));
    }
    if let Some(micro) = all_micro(&micro)? {
        return Ok(StoredComparison::Micro(MicroComparison::new(
            &micro,
            fail_if_slower,
        )));
    }
    let runs = ids
        .into_iter()
        .map(|id| store.load_run(id))
        .collect::<Result<Vec<_>, _>>()?;
    let Some((baseline, others)) = runs.split_first() else {
        return Err(StoredError::NoRuns);
    };
    let others: Vec<_> = others.iter().collect();
    Ok(StoredComparison::Latency(compare_runs(baseline, &others)))
}

/// The specs of the latest run of each host; at least two hosts.
fn latest_of_each(hosts: &[String]) -> Result<Vec<String>, StoredError> {
    if hosts.len() < 2 {
        return Err(StoredError::FewHosts { hosts: hosts.len() });
    }
    Ok(hosts.iter().map(|h| format!("{h}:latest")).collect())
}

/// The micro results of each run when every run is a micro run, `None`
/// when none is; some of each is refused.
#[allow(clippy::type_complexity)]
fn all_micro(
    runs: &[(i64, Option<Vec<MicroResult>>)],
) -> Result<Option<Vec<(i64, &[MicroResult])>>, StoredError> {
    let micro: Vec<_> = runs
        .iter()
        .filter_map(|(id, m)| m.as_deref().map(|m| (*id, m)))
        .collect();
    match micro.len() {
        0 => Ok(None),
        n if n == runs.len() => Ok(Some(micro)),
        _ => Err(StoredError::MixedKinds),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn hosts_give_their_latest_runs_and_need_two() {
        let hosts = ["a".to_string(), "b".to_string()];
        assert_eq!(latest_of_each(&hosts).unwrap(), ["a:latest", "b:latest"]);
        assert!(matches!(
            latest_of_each(&hosts[..1]),
            Err(StoredError::FewHosts { hosts: 1 })
        ));
    }

    #[test]
    fn micro_runs_compare_only_with_micro_runs() {
        let latency = [(1, None), (2, None)];
        assert!(all_micro(&latency).unwrap().is_none());
        let micro = [(1, Some(Vec::new())), (2, Some(Vec::new()))];
        let ids: Vec<i64> = all_micro(&micro)
            .unwrap()
            .unwrap()
            .iter()
            .map(|r| r.0)
            .collect();
        assert_eq!(ids, [1, 2]);
        let mixed = [(1, Some(Vec::new())), (2, None)];
        assert!(matches!(all_micro(&mixed), Err(StoredError::MixedKinds)));
    }
}
