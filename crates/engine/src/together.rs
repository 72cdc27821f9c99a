//! Cells measured at the same time (`run --priorities`): consecutive timer
//! (or noise) cells whose `together` lists name one another run as one
//! group under one workload, their probes' threads released with one time
//! zero, so that every priority's timer thread on a CPU sleeps until the
//! same absolute expiries and sees the same disturbances, and every noise
//! thread competes for its CPU from the same instant (two at one RR
//! priority take turns by the quantum: Bernadat's Table 6). Each cell is
//! stored as any other, with the list in its settings.

use std::ops::Range;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use latscope_model::{Nanos, NoiseCpuStats};
use latscope_platform::SchedPolicy;
use latscope_probes::noise::{self, NoiseProbe};
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
/// timer cells or all noise cells, under one workload.
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
            && matches!(
                (&c.probe, &lead.probe),
                (ProbeSpec::Timer(_), ProbeSpec::Timer(_))
                    | (ProbeSpec::Noise(_), ProbeSpec::Noise(_))
            )
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
/// together (one barrier, one time zero, one expiry grid), several noise
/// cells' together (one barrier, one time zero).
pub(crate) fn start(
    cells: &[CellSpec],
    stop: Arc<AtomicBool>,
) -> Result<Vec<Box<dyn RunningProbe>>, ProbeError> {
    if let [cell] = cells {
        return Ok(vec![cell.probe.build()?.start(stop)?]);
    }
    if let Some(ProbeSpec::Noise(_)) = cells.first().map(|c| &c.probe) {
        return start_noise(cells, stop);
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

fn start_noise(
    cells: &[CellSpec],
    stop: Arc<AtomicBool>,
) -> Result<Vec<Box<dyn RunningProbe>>, ProbeError> {
    let probes = cells
        .iter()
        .map(|c| match &c.probe {
            ProbeSpec::Noise(n) => NoiseProbe::new(n.clone()),
            _ => Err(ProbeError::Config(SettingError::NotTogether)),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(noise::start_together(probes, stop)?
        .into_iter()
        .map(|r| Box::new(r) as Box<dyn RunningProbe>)
        .collect())
}

/// The CPUs on which a noise cell of a group never spun (no active time):
/// a thread at the same FIFO priority (or a higher one) held the CPU for
/// the whole cell, and its `noise.gap` is empty there rather than one gap
/// as long as the cell. The note that says so; none for a cell measured
/// alone or one that spun everywhere.
pub(crate) fn never_ran_note(cell: &CellSpec, noise: &[NoiseCpuStats]) -> Option<String> {
    if cell.together.len() < 2 || !matches!(cell.probe, ProbeSpec::Noise(_)) {
        return None;
    }
    let idle: Vec<String> = noise
        .iter()
        .filter(|n| n.active_ns == Nanos::ZERO)
        .map(|n| n.cpu.to_string())
        .collect();
    if idle.is_empty() {
        return None;
    }
    let (policy, _) = cell.probe.policy();
    let why = match policy {
        SchedPolicy::Fifo => "a thread of the group at the same FIFO priority (or a higher one) held the CPU: FIFO threads of one priority do not take turns, and RT throttling stops them all",
        _ => "a thread of the group at a higher priority held the CPU",
    };
    Some(format!(
        "never ran on CPU {} (no active time, no samples): {why}",
        idle.join(", ")
    ))
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
    use latscope_model::{CpuId, CpuSet};

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
            instance: 0,
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

    fn noise_cell(index: u32, together: &[u32], policy: SchedPolicy) -> CellSpec {
        let r = crate::RunRequest {
            probe: crate::request::ProbeKind::Noise,
            ..crate::RunRequest::default()
        };
        let mut probe = r
            .plan(&CpuSet::parse("0").unwrap_or_default())
            .map(|p| p.probe)
            .unwrap_or_else(|e| panic!("{e}"));
        if let ProbeSpec::Noise(n) = &mut probe {
            n.policy = policy;
        }
        CellSpec {
            probe,
            ..cell(index, together)
        }
    }

    fn noise_stats(cpu: u32, active_ns: u64) -> NoiseCpuStats {
        NoiseCpuStats {
            cpu: CpuId(cpu),
            clock: latscope_model::NoiseClock::Tsc,
            tsc_hz: 0,
            calibration_drift_ppb: 0,
            active_ns: Nanos(active_ns),
            iterations: 0,
            base_iteration_ps: 0,
            gap_threshold_ns: Nanos(0),
            interruptions: 0,
            noise_ns: Nanos(0),
            max_gap_ns: Nanos(0),
            classes: Default::default(),
            steal_ns: None,
            findings: Vec::new(),
        }
    }

    #[test]
    fn noise_cells_form_a_group_but_not_with_timer_cells() {
        let noise = [
            noise_cell(0, &[0, 1], SchedPolicy::Rr),
            noise_cell(1, &[0, 1], SchedPolicy::Rr),
        ];
        assert_eq!(groups(&noise), vec![0..2]);
        assert!(check(&noise).is_ok());
        let mixed = [noise_cell(0, &[0, 1], SchedPolicy::Fifo), cell(1, &[0, 1])];
        assert!(matches!(check(&mixed), Err(RequestError::NotTogether)));
    }

    #[test]
    fn a_noise_thread_that_never_spun_is_told_not_given_a_fake_gap() {
        let fifo = noise_cell(1, &[0, 1], SchedPolicy::Fifo);
        let note = never_ran_note(&fifo, &[noise_stats(1, 0)]).unwrap_or_default();
        assert!(note.starts_with("never ran on CPU 1"), "{note}");
        assert!(note.contains("same FIFO priority"), "{note}");
        // It spun: nothing to say; alone: nothing to say.
        assert!(never_ran_note(&fifo, &[noise_stats(1, 5_000_000)]).is_none());
        let alone = noise_cell(0, &[], SchedPolicy::Fifo);
        assert!(never_ran_note(&alone, &[noise_stats(1, 0)]).is_none());
        // Timer cells have no active time to judge.
        assert!(never_ran_note(&cell(0, &[0, 1]), &[noise_stats(1, 0)]).is_none());
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
