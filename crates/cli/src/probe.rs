//! Starting the probe a cell names. Every probe runs behind the same
//! [`RunningProbe`] face, so the housekeeping loop drives them alike.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use latscope_probes::noise::NoiseProbe;
use latscope_probes::timer::TimerProbe;
use latscope_probes::udp::UdpProbe;
use latscope_probes::{Probe, ProbeError, RunningProbe};

use crate::plan::CellPlan;

/// A probe that is measuring.
pub type Running = Box<dyn RunningProbe>;

/// Starts the probe the cell names; returns once its threads measure.
pub fn start(cell: &CellPlan, stop: Arc<AtomicBool>) -> Result<Running, ProbeError> {
    let probe: Box<dyn Probe> = match (&cell.noise, &cell.udp) {
        (Some(n), _) => Box::new(NoiseProbe::new(n.clone())?),
        (None, Some(u)) => Box::new(UdpProbe::new(u.clone())?),
        (None, None) => Box::new(TimerProbe::new(cell.timer.clone())?),
    };
    probe.start(stop)
}
