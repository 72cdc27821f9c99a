//! The noise, udp and app probes' configurations from a request, over the
//! timer configuration that carries what every probe shares.

use latscope_model::{CpuSet, Nanos, UdpPath};
use latscope_probes::app::{calibrate, AppConfig};
use latscope_probes::noise::NoiseConfig;
use latscope_probes::timer::TimerConfig;
use latscope_probes::udp::UdpConfig;

use super::{RequestError, RunRequest};
use crate::config::{ProbeSpec, TracePlan};
use crate::cpus::{cpus_in_order, udp_cpus, CpuChoiceError};

impl ProbeSpec {
    /// Checks the settings (one line naming the bad value). Here rather
    /// than with `ProbeSpec` in `config`, so that `config` does not import
    /// the request back.
    pub fn validate(&self) -> Result<(), RequestError> {
        match self {
            ProbeSpec::Timer(c) => c.validate()?,
            ProbeSpec::Noise(c) => c.validate()?,
            ProbeSpec::Udp(c) => c.validate()?,
            ProbeSpec::App(c) => c.validate()?,
            ProbeSpec::Custom { .. } => {}
        }
        Ok(())
    }
}

impl RunRequest {
    pub(super) fn noise_config(
        &self,
        timer: &TimerConfig,
        trace: Option<&TracePlan>,
    ) -> Result<NoiseConfig, RequestError> {
        let n = &self.noise;
        let cfg = NoiseConfig {
            cpus: timer.cpus.clone(),
            policy: timer.policy,
            priority: timer.priority,
            runtime: n.runtime.unwrap_or(Self::DEFAULT_RUNTIME),
            pause: n.pause.unwrap_or(match self.priorities.is_empty() {
                true => Self::DEFAULT_PAUSE,
                false => Self::DEFAULT_GROUP_PAUSE,
            }),
            gap_ratio: n.gap_ratio.unwrap_or(Self::DEFAULT_GAP_RATIO),
            gap_min: n.gap_min,
            fp: n.fp,
            threshold: timer.threshold,
            duration: timer.duration,
            handoff: trace.map_or(0, TracePlan::noise_handoff),
            force_vdso: false,
            duty: None,
        };
        cfg.validate()?;
        Ok(cfg)
    }

    /// The sender and receiver in the order the CPUs were written (`1,0`
    /// puts the sender on 1; a CPU set would sort them).
    pub(super) fn udp_config(
        &self,
        cpus: &CpuSet,
        timer: &TimerConfig,
        trace: Option<&TracePlan>,
    ) -> Result<UdpConfig, RequestError> {
        let listed: Vec<_> = match &self.cpus {
            Some(text) => cpus_in_order(text).map_err(CpuChoiceError::List)?,
            None => cpus.iter().collect(),
        };
        let (sender_cpu, receiver_cpu) =
            udp_cpus(&listed).ok_or_else(|| RequestError::UdpCpus(cpus.to_string()))?;
        let cfg = UdpConfig {
            sender_cpu,
            receiver_cpu,
            path: self.udp.path.unwrap_or(UdpPath::Loopback),
            period: timer.period,
            payload: self.udp.payload.unwrap_or(Self::DEFAULT_PAYLOAD),
            policy: timer.policy,
            priority: timer.priority,
            threshold: timer.threshold,
            duration: timer.duration,
            handoff: trace.map_or(0, TracePlan::udp_handoff),
        };
        cfg.validate()?;
        Ok(cfg)
    }

    /// The app probe's pipeline, its work calibrated on the first measured
    /// CPU.
    pub(super) fn app_config(&self, timer: &TimerConfig) -> Result<AppConfig, RequestError> {
        let compute = self.app.compute.unwrap_or(Nanos(0));
        let mut cfg = AppConfig {
            cpus: timer.cpus.clone(),
            period: timer.period,
            buffers: self.app.buffers.unwrap_or(Self::DEFAULT_BUFFERS),
            compute,
            compute_turns: 0,
            policy: timer.policy,
            priority: timer.priority,
            threshold: timer.threshold,
            duration: timer.duration,
            app: self.app.name.clone(),
        };
        cfg.validate()?;
        if let Some(&cpu) = cfg.cpus.first() {
            let c = calibrate(cpu, compute).map_err(|e| RequestError::Calibrate(e.to_string()))?;
            cfg.compute_turns = c.turns;
        }
        Ok(cfg)
    }
}
