//! Cells measured at the same time (`run --priorities`): consecutive timer
//! cells whose `together` lists name one another run as one group under
//! one workload, their probes' threads released with one time zero, so
//! that every priority's thread on a CPU sleeps until the same absolute
//! expiries and sees the same disturbances. Each cell is stored as any
//! other, with the list in its settings.

use std::ops::Range;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use latscope_probes::timer::{start_together, TimerProbe};
use latscope_probes::{ProbeError, Progress, RunningProbe, SettingError};

use crate::config::{CellSpec, ProbeSpec};
use crate::request::RequestError;

/// The run's cells as groups measured at once: consecutive cells with the
/// same non-empty `together` list form one group; every other cell is a
/// group of its own.
pub(crate) fn groups(cells: &[CellSpec]) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = Vec::new();
    for (i, c) in cells.iter().enumerate() {
        match out.last_mut() {
            Some(g) if !c.together.is_empty() && cells[g.start].together == c.together => {
                g.end = i + 1;
            }
            _ => out.push(i..i + 1),
        }
    }
    out
}

/// A group can run together: its cells are the ones its lists name, all
/// timer cells under one workload.
pub(crate) fn check(group: &[CellSpec]) -> Result<(), RequestError> {
    let Some(lead) = group.first() else {
        return Ok(());
    };
    if group.len() == 1 && lead.together.len() <= 1 {
        return Ok(());
    }
    let indices: Vec<u32> = group.iter().map(|c| c.index).collect();
    let ok = group.iter().all(|c| {
        c.together == indices
            && matches!(c.probe, ProbeSpec::Timer(_))
            && c.workload == lead.workload
            && c.load_level == lead.load_level
            && c.warmup == lead.warmup
    });
    match ok {
        true => Ok(()),
        false => Err(RequestError::NotTogether),
    }
}

/// Starts the group's probes: one cell's as always, several timer cells'
/// together (one barrier, one time zero, one expiry grid).
pub(crate) fn start(
    cells: &[CellSpec],
    stop: Arc<AtomicBool>,
) -> Result<Vec<Box<dyn RunningProbe>>, ProbeError> {
    if let [cell] = cells {
        return Ok(vec![cell.probe.build()?.start(stop)?]);
    }
    let probes = cells
        .iter()
        .map(|c| match &c.probe {
            ProbeSpec::Timer(t) => TimerProbe::new(t.clone()),
            _ => Err(ProbeError::Config(SettingError::NotTogether)),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(start_together(probes, stop)?
        .into_iter()
        .map(|r| Box::new(r) as Box<dyn RunningProbe>)
        .collect())
}

/// The group's progress as one: samples and overruns summed, the largest
/// latency.
pub(crate) fn progress<'a>(running: impl Iterator<Item = &'a dyn RunningProbe>) -> Progress {
    running.fold(Progress::default(), |mut p, r| {
        let q = r.progress();
        p.samples += q.samples;
        p.overruns += q.overruns;
        p.max_latency = p.max_latency.max(q.max_latency);
        p
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::{CpuSet, Nanos};

    fn cell(index: u32, together: &[u32]) -> CellSpec {
        let plan = crate::RunRequest::default()
            .plan(&CpuSet::parse("0").unwrap_or_default())
            .map(|p| p.probe);
        CellSpec {
            index,
            of: 6,
            probe: plan.unwrap_or_else(|e| panic!("{e}")),
            workload: "none".into(),
            load_level: "normal".into(),
            warmup: Nanos::ZERO,
            cpus: CpuSet::new(),
            together: together.to_vec(),
        }
    }

    #[test]
    fn consecutive_cells_naming_one_another_are_one_group() {
        let cells = [
            cell(0, &[]),
            cell(1, &[1, 2, 3]),
            cell(2, &[1, 2, 3]),
            cell(3, &[1, 2, 3]),
            cell(4, &[4, 5]),
            cell(5, &[4, 5]),
        ];
        assert_eq!(groups(&cells), vec![0..1, 1..4, 4..6]);
        for g in groups(&cells) {
            assert!(check(&cells[g]).is_ok());
        }
    }

    #[test]
    fn a_group_whose_lists_do_not_match_its_cells_is_refused() {
        let cells = [cell(0, &[0, 1, 2]), cell(1, &[0, 1, 2])];
        assert!(matches!(check(&cells), Err(RequestError::NotTogether)));
        let mut loaded = [cell(0, &[0, 1]), cell(1, &[0, 1])];
        loaded[1].workload = "cpu".into();
        assert!(matches!(check(&loaded), Err(RequestError::NotTogether)));
    }
}
