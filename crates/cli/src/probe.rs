//! The probes `latscope run` can drive, behind one face for the
//! housekeeping loop: progress, snapshots for checkpoints, the end.

use std::sync::Arc;

use latscope_model::{CpuId, NoiseCpuStats, TimerCpuStats, UdpStats};
use latscope_probes::noise::{FinishedNoiseProbe, RunningNoiseProbe};
use latscope_probes::timer::{
    FinishedTimerProbe, ProbeError, Progress, RunningTimerProbe, ThreadSetup,
};
use latscope_probes::udp::{FinishedUdpProbe, RunningUdpProbe};
use latscope_probes::SampleRing;
use latscope_stats::{MetricResult, TimelineChunk};

pub enum Running {
    Timer(RunningTimerProbe),
    Noise(RunningNoiseProbe),
    Udp(RunningUdpProbe),
}

pub enum Finished {
    Timer(FinishedTimerProbe),
    Noise(FinishedNoiseProbe),
    Udp(FinishedUdpProbe),
}

impl Running {
    pub fn setups(&self) -> &[ThreadSetup] {
        match self {
            Running::Timer(p) => p.setups(),
            Running::Noise(p) => p.setups(),
            Running::Udp(p) => p.setups(),
        }
    }

    pub fn start_ns(&self) -> u64 {
        match self {
            Running::Timer(p) => p.start_ns(),
            Running::Noise(p) => p.start_ns(),
            Running::Udp(p) => p.start_ns(),
        }
    }

    pub fn finished(&self) -> bool {
        match self {
            Running::Timer(p) => p.finished(),
            Running::Noise(p) => p.finished(),
            Running::Udp(p) => p.finished(),
        }
    }

    pub fn progress(&self) -> Progress {
        match self {
            Running::Timer(p) => p.progress(),
            Running::Noise(p) => p.progress(),
            Running::Udp(p) => p.progress(),
        }
    }

    pub fn results(&self) -> Vec<MetricResult> {
        match self {
            Running::Timer(p) => p.results(),
            Running::Noise(p) => p.results(),
            Running::Udp(p) => p.results(),
        }
    }

    pub fn drain_timeline(&self) -> Vec<TimelineChunk> {
        match self {
            Running::Timer(p) => p.drain_timeline(),
            Running::Noise(p) => p.drain_timeline(),
            Running::Udp(p) => p.drain_timeline(),
        }
    }

    pub fn handoffs(&self) -> Vec<(CpuId, i32, Arc<SampleRing>)> {
        match self {
            Running::Timer(p) => p.handoffs(),
            Running::Noise(p) => p.handoffs(),
            Running::Udp(p) => p.handoffs(),
        }
    }

    /// Noise figures so far (empty for the timer probe).
    pub fn noise_stats(&self) -> Vec<NoiseCpuStats> {
        match self {
            Running::Timer(_) | Running::Udp(_) => Vec::new(),
            Running::Noise(p) => p.stats(),
        }
    }

    /// Early wake-ups so far, per CPU (empty for the other probes).
    pub fn timer_stats(&self) -> Vec<TimerCpuStats> {
        match self {
            Running::Timer(p) => p.timer_stats(),
            _ => Vec::new(),
        }
    }

    /// The UDP probe's counts so far (None for the other probes).
    pub fn udp_stats(&self) -> Option<UdpStats> {
        match self {
            Running::Udp(p) => Some(p.stats()),
            _ => None,
        }
    }

    pub fn join(self) -> Result<Finished, ProbeError> {
        Ok(match self {
            Running::Timer(p) => Finished::Timer(p.join()?),
            Running::Noise(p) => Finished::Noise(p.join()?),
            Running::Udp(p) => Finished::Udp(p.join()?),
        })
    }
}

impl Finished {
    pub fn error(&self) -> Option<&ProbeError> {
        match self {
            Finished::Timer(p) => p.error.as_ref(),
            Finished::Noise(p) => p.error.as_ref(),
            Finished::Udp(p) => p.error.as_ref(),
        }
    }

    pub fn results(&self) -> Vec<MetricResult> {
        match self {
            Finished::Timer(p) => p.results(),
            Finished::Noise(p) => p.results(),
            Finished::Udp(p) => p.results(),
        }
    }

    pub fn drain_timeline(&self) -> Vec<TimelineChunk> {
        match self {
            Finished::Timer(p) => p.drain_timeline(),
            Finished::Noise(p) => p.drain_timeline(),
            Finished::Udp(p) => p.drain_timeline(),
        }
    }

    pub fn lost_timeline_seconds(&self) -> u64 {
        match self {
            Finished::Timer(p) => p.lost_timeline_seconds(),
            Finished::Noise(p) => p.lost_timeline_seconds(),
            Finished::Udp(p) => p.lost_timeline_seconds(),
        }
    }

    pub fn noise_stats(&self) -> Vec<NoiseCpuStats> {
        match self {
            Finished::Timer(_) | Finished::Udp(_) => Vec::new(),
            Finished::Noise(p) => p.stats(),
        }
    }

    pub fn timer_stats(&self) -> Vec<TimerCpuStats> {
        match self {
            Finished::Timer(p) => p.timer_stats(),
            _ => Vec::new(),
        }
    }

    pub fn udp_stats(&self) -> Option<UdpStats> {
        match self {
            Finished::Udp(p) => Some(p.stats()),
            _ => None,
        }
    }
}
