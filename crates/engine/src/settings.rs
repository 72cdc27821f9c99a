//! A cell as the settings the store records: the one place that
//! turns probe configurations into [`CellSettings`], so that what `show`,
//! `compare`, the report and `sched` read back is written once.

use latscope_model::{
    AppSettings, CellSettings, CommonSettings, DeadlineSettings, NoiseSettings, PhaseName, Policy,
    TimerApiName, TimerSettings, UdpSettings,
};
use latscope_platform::SchedPolicy;
use latscope_probes::timer::{Phase, TimerApi};
use latscope_probes::ThreadSetup;

use crate::config::{CellSpec, ProbeSpec};

impl CellSpec {
    /// The settings stored with the cell; `clock_read_ns` is the cost of
    /// one clock read measured when the run started. (Here rather than
    /// with `CellSpec` in `config`, so that neither module imports the
    /// other back.)
    pub fn settings(&self, clock_read_ns: u64) -> CellSettings {
        cell_settings(self, clock_read_ns)
    }
}

/// The settings of `cell` as applied; `clock_read_ns` is the cost of one
/// clock read measured when the run started.
fn cell_settings(cell: &CellSpec, clock_read_ns: u64) -> CellSettings {
    let loaded = cell.workload != "none";
    let sched = cell.probe.policy().0;
    let common = CommonSettings {
        policy: policy(sched),
        priority: cell.probe.effective_priority(),
        nice: match &cell.probe {
            ProbeSpec::Timer(t) => t.nice,
            _ => None,
        },
        rr_interval_ns: None,
        together: (!cell.together.is_empty()).then(|| cell.together.clone()),
        instance: (cell.instance > 0).then_some(cell.instance + 1),
        deadline: match sched {
            SchedPolicy::Deadline(d) => Some(DeadlineSettings {
                runtime_ns: d.runtime,
                deadline_ns: d.deadline,
                period_ns: d.period,
            }),
            _ => None,
        },
        cpus: cell.cpus.to_string(),
        duration_ns: cell.probe.duration(),
        threshold_ns: cell.probe.threshold(),
        clock_read_ns,
        load_level: loaded.then(|| cell.load_level.clone()),
        warmup_ns: loaded.then_some(cell.warmup),
    };
    match &cell.probe {
        ProbeSpec::Timer(t) => CellSettings::Timer(TimerSettings {
            timer_api: timer_api(t.api),
            period_ns: t.period,
            phase: match t.phase {
                Phase::Random => PhaseName::Random,
                Phase::Fixed => PhaseName::Fixed,
            },
            noise_duty: t.noise_duty,
            timer_slack: t.timer_slack,
            common,
        }),
        ProbeSpec::Noise(n) => CellSettings::Noise(NoiseSettings {
            runtime_ns: n.runtime,
            pause_ns: n.pause,
            gap_ratio: n.gap_ratio,
            gap_min_ns: n.gap_min,
            fp: n.fp,
            common,
        }),
        ProbeSpec::Udp(u) => CellSettings::Udp(UdpSettings {
            path: u.path,
            period_ns: u.period,
            // Validated to at most 65,507 bytes (a UDP/IPv4 datagram).
            payload_bytes: u32::try_from(u.payload).unwrap_or(u32::MAX),
            sender_cpu: u.sender_cpu.0,
            receiver_cpu: u.receiver_cpu.0,
            common,
        }),
        ProbeSpec::App(a) => CellSettings::App(AppSettings {
            period_ns: a.period,
            buffers: a.buffers,
            compute_ns: a.compute,
            compute_loops: a.compute_turns,
            app: a.app.clone(),
            common,
        }),
        ProbeSpec::Custom { settings, .. } => {
            let mut s = settings.clone();
            *s.common_mut() = common;
            s
        }
    }
}

fn policy(p: SchedPolicy) -> Policy {
    match p {
        SchedPolicy::Fifo => Policy::Fifo,
        SchedPolicy::Rr => Policy::Rr,
        SchedPolicy::Other => Policy::Other,
        SchedPolicy::Batch => Policy::Batch,
        SchedPolicy::Idle => Policy::Idle,
        SchedPolicy::Deadline(_) => Policy::Deadline,
    }
}

/// The settings with the round-robin quantum the measuring threads
/// obtained under SCHED_RR (the first one reported: the kernel gives every
/// RR thread the same, `sched_rr_timeslice_ms`).
pub(crate) fn with_rr_quantum(mut settings: CellSettings, setups: &[ThreadSetup]) -> CellSettings {
    settings.common_mut().rr_interval_ns = setups
        .iter()
        .find_map(|s| s.rr_interval_ns)
        .map(latscope_model::Nanos);
    settings
}

fn timer_api(api: TimerApi) -> TimerApiName {
    match api {
        TimerApi::ClockNanosleep => TimerApiName::ClockNanosleep,
        TimerApi::Nanosleep => TimerApiName::Nanosleep,
        TimerApi::Timerfd => TimerApiName::Timerfd,
        TimerApi::PosixTimer => TimerApiName::PosixTimer,
        TimerApi::Epoll => TimerApiName::Epoll,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::{CpuId, CpuSet, Nanos, UdpPath};
    use latscope_probes::noise::NoiseConfig;
    use latscope_probes::timer::TimerConfig;
    use latscope_probes::udp::UdpConfig;
    use serde_json::json;

    fn timer_config() -> TimerConfig {
        TimerConfig {
            cpus: vec![CpuId(0), CpuId(1)],
            period: Nanos::from_micros(100),
            policy: SchedPolicy::Rr,
            priority: 50,
            nice: None,
            api: TimerApi::PosixTimer,
            phase: Phase::Random,
            threshold: Some(Nanos::from_micros(80)),
            duration: Some(Nanos::from_secs(3)),
            handoff: 0,
            noise_duty: None,
            timer_slack: Default::default(),
        }
    }

    fn cell(probe: ProbeSpec, workload: &str) -> CellSpec {
        CellSpec {
            index: 0,
            of: 1,
            probe,
            workload: workload.into(),
            load_level: "heavy".into(),
            warmup: Nanos::from_secs(2),
            cpus: [CpuId(0), CpuId(1)].into_iter().collect::<CpuSet>(),
            together: Vec::new(),
            instance: 0,
        }
    }

    fn json_of(c: &CellSpec) -> serde_json::Value {
        serde_json::to_value(cell_settings(c, 24)).unwrap_or_default()
    }

    // The expected objects are what the writers before typed settings
    // produced for the same plans (docs/json.md), plus the "probe" tag.

    #[test]
    fn timer_settings_keep_their_keys() {
        let c = cell(ProbeSpec::Timer(timer_config()), "none");
        assert_eq!(
            json_of(&c),
            json!({ "probe": "timer", "timer_api": "posix-timer", "period_ns": 100_000,
                    "policy": "rr", "priority": 50, "phase": "random", "cpus": "0-1",
                    "duration_ns": 3_000_000_000u64, "threshold_ns": 80_000,
                    "clock_read_ns": 24 })
        );
    }

    #[test]
    fn noise_settings_keep_their_keys_and_other_has_priority_0() {
        let n = NoiseConfig {
            cpus: vec![CpuId(1)],
            policy: SchedPolicy::Other,
            priority: 95,
            runtime: Nanos::from_secs(1),
            pause: Nanos(0),
            gap_ratio: 8,
            gap_min: Some(Nanos(500)),
            fp: true,
            threshold: None,
            duration: Some(Nanos::from_secs(10)),
            handoff: 0,
            force_vdso: false,
            duty: None,
        };
        let c = cell(ProbeSpec::Noise(n), "cpu");
        assert_eq!(
            json_of(&c),
            json!({ "probe": "noise", "runtime_ns": 1_000_000_000, "pause_ns": 0,
                    "gap_ratio": 8, "gap_min_ns": 500, "fp": true, "policy": "other",
                    "priority": 0, "cpus": "0-1", "duration_ns": 10_000_000_000u64,
                    "clock_read_ns": 24, "load_level": "heavy",
                    "warmup_ns": 2_000_000_000u64 })
        );
    }

    #[test]
    fn udp_settings_keep_their_keys() {
        let u = UdpConfig {
            sender_cpu: CpuId(1),
            receiver_cpu: CpuId(0),
            path: UdpPath::Veth,
            period: Nanos::from_millis(10),
            payload: 256,
            policy: SchedPolicy::Fifo,
            priority: 95,
            threshold: None,
            duration: Some(Nanos::from_secs(5)),
            handoff: 0,
        };
        let c = cell(ProbeSpec::Udp(u), "none");
        assert_eq!(
            json_of(&c),
            json!({ "probe": "udp", "path": "veth", "period_ns": 10_000_000,
                    "payload_bytes": 256, "sender_cpu": 1, "receiver_cpu": 0,
                    "policy": "fifo", "priority": 95, "cpus": "0-1",
                    "duration_ns": 5_000_000_000u64, "clock_read_ns": 24 })
        );
        assert_eq!(c.probe.cpus(), vec![CpuId(1), CpuId(0)], "sender first");
        assert_eq!(c.probe.name(), "udp");
    }
}
