//! The CPUs a caller names: a kernel-style list checked against the online
//! CPUs, the same list in the order written, and the udp probe's pair.

use latscope_model::{CpuId, CpuSet, CpuSetError};

/// A CPU list that does not parse or names a CPU that is not online.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CpuChoiceError {
    #[error(transparent)]
    List(#[from] CpuSetError),
    #[error("CPU {offline} is not online (online CPUs: {online})")]
    Offline { offline: CpuSet, online: CpuSet },
}

/// `text` (`0,1`, `0-3`) as a set of CPUs, every one of them online.
pub fn select_cpus(text: &str, online: &CpuSet) -> Result<CpuSet, CpuChoiceError> {
    let set = CpuSet::parse(text)?;
    let offline: CpuSet = set.iter().filter(|c| !online.contains(*c)).collect();
    if !offline.is_empty() {
        return Err(CpuChoiceError::Offline {
            offline,
            online: online.clone(),
        });
    }
    Ok(set)
}

/// The CPUs of `text` in the order written, each once: `1,0` is `[1, 0]`
/// (a [`CpuSet`] would sort them); a range counts up.
pub fn cpus_in_order(text: &str) -> Result<Vec<CpuId>, CpuSetError> {
    let mut v: Vec<CpuId> = Vec::new();
    for item in text.split(',') {
        let set = CpuSet::parse(item)?;
        v.extend(set.iter().filter(|c| !v.contains(c)).collect::<Vec<_>>());
    }
    Ok(v)
}

/// Why a measuring CPU and its partner could not be chosen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PairError {
    #[error(transparent)]
    Choice(#[from] CpuChoiceError),
    /// Not one or two CPUs.
    #[error("the measuring CPU and at most one partner (e.g. 1,0), not '{0}'")]
    Count(String),
}

/// A measuring CPU and its partner (the microbenchmarks across two CPUs):
/// `text` in the order written, one or two CPUs, all online; by default
/// the last online CPU and the one before it.
pub fn measuring_pair(
    text: Option<&str>,
    online: &CpuSet,
) -> Result<(CpuId, Option<CpuId>), PairError> {
    let chosen: Vec<CpuId> = match text {
        Some(t) => {
            let v = cpus_in_order(t).map_err(CpuChoiceError::List)?;
            if v.is_empty() || v.len() > 2 {
                return Err(PairError::Count(t.to_string()));
            }
            if let Some(c) = v.iter().find(|c| !online.contains(**c)) {
                return Err(PairError::Choice(CpuChoiceError::Offline {
                    offline: std::iter::once(*c).collect(),
                    online: online.clone(),
                }));
            }
            v
        }
        None => online
            .iter()
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .take(2)
            .collect(),
    };
    match chosen[..] {
        [cpu, ..] => Ok((cpu, chosen.get(1).copied())),
        [] => Err(PairError::Count(String::new())),
    }
}

/// The online CPUs not `measured` (none when every CPU is): where the
/// threshold actions and a monitor's endpoint run.
pub fn housekeeping_cpus(online: &CpuSet, measured: &CpuSet) -> Vec<CpuId> {
    online.iter().filter(|c| !measured.contains(*c)).collect()
}

/// The udp probe's (sender, receiver) CPUs: one CPU for both, or two in
/// that order; `None` for any other number.
pub fn udp_cpus(cpus: &[CpuId]) -> Option<(CpuId, CpuId)> {
    match cpus {
        [one] => Some((*one, *one)),
        [a, b] => Some((*a, *b)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_checked_against_the_online_cpus() {
        let online = CpuSet::parse("0-3").unwrap();
        assert_eq!(select_cpus("1,3", &online).unwrap().to_string(), "1,3");
        let e = select_cpus("2-5", &online).unwrap_err();
        assert_eq!(e.to_string(), "CPU 4-5 is not online (online CPUs: 0-3)");
        assert!(matches!(
            select_cpus("x", &online),
            Err(CpuChoiceError::List(_))
        ));
    }

    #[test]
    fn the_measuring_pair_is_in_the_order_written_or_the_last_two_online() {
        let online = CpuSet::parse("0-3").unwrap();
        let pair = |t| measuring_pair(t, &online);
        assert_eq!(pair(None), Ok((CpuId(3), Some(CpuId(2)))));
        assert_eq!(pair(Some("1,0")), Ok((CpuId(1), Some(CpuId(0)))));
        assert_eq!(pair(Some("2")), Ok((CpuId(2), None)));
        assert_eq!(pair(Some("0-2")), Err(PairError::Count("0-2".into())));
        let e = pair(Some("1,7")).unwrap_err();
        assert_eq!(e.to_string(), "CPU 7 is not online (online CPUs: 0-3)");
    }

    #[test]
    fn the_order_written_is_kept_for_the_udp_pair() {
        let v = cpus_in_order("3,1-2,1").unwrap();
        assert_eq!(v, vec![CpuId(3), CpuId(1), CpuId(2)]);
        assert_eq!(udp_cpus(&v[..2]), Some((CpuId(3), CpuId(1))));
        assert_eq!(udp_cpus(&v[..1]), Some((CpuId(3), CpuId(3))));
        assert_eq!(udp_cpus(&v), None);
    }
}
