//! A cell's settings, typed: one variant per probe, each with the settings
//! every probe shares ([`CommonSettings`]) flattened into it.
//!
//! The JSON form is the one `latscope show --json` documents (docs/json.md)
//! and the store keeps in `cells.settings`: a flat object with the probe's
//! name under `"probe"` and every other key as older builds wrote it
//! (`period_ns`, `policy`, `priority`, ...). Stores written before the tag
//! existed (schema 5 and older) hold the same object without `"probe"`;
//! [`CellSettings::from_json`] takes the probe from the cell instead, and
//! every key a reader may miss has a documented default, so old and
//! hand-written data still load.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::{CommonSettings, MicroSettings, Nanos, Policy, TimerSlack, UdpPath};

/// The kernel service a timer probe waits with; the strings are those of
/// `--timer-api`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub enum TimerApiName {
    #[default]
    #[serde(rename = "clock_nanosleep")]
    ClockNanosleep,
    #[serde(rename = "nanosleep")]
    Nanosleep,
    #[serde(rename = "timerfd")]
    Timerfd,
    #[serde(rename = "posix-timer")]
    PosixTimer,
    #[serde(rename = "epoll")]
    Epoll,
}

impl TimerApiName {
    pub fn as_str(self) -> &'static str {
        match self {
            TimerApiName::ClockNanosleep => "clock_nanosleep",
            TimerApiName::Nanosleep => "nanosleep",
            TimerApiName::Timerfd => "timerfd",
            TimerApiName::PosixTimer => "posix-timer",
            TimerApiName::Epoll => "epoll",
        }
    }
}

impl fmt::Display for TimerApiName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// Where in its period each wake-up is placed (`--phase`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum PhaseName {
    #[default]
    Fixed,
    Random,
}

impl PhaseName {
    pub fn as_str(self) -> &'static str {
        match self {
            PhaseName::Fixed => "fixed",
            PhaseName::Random => "random",
        }
    }
}

/// The CLI's default period of the timer (and simulated) probe, what a
/// record without `period_ns` reads as.
pub const DEFAULT_PERIOD: Nanos = Nanos::from_millis(1);
/// The CLI's default period of the udp probe.
pub const DEFAULT_UDP_PERIOD: Nanos = Nanos::from_millis(10);

fn default_period() -> Nanos {
    DEFAULT_PERIOD
}
fn default_udp_period() -> Nanos {
    DEFAULT_UDP_PERIOD
}
fn default_noise_span() -> Nanos {
    Nanos::from_millis(33)
}
fn default_gap_ratio() -> u32 {
    4
}
fn default_payload() -> u32 {
    64
}

/// The timer probe (cyclictest's measurement).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TimerSettings {
    #[serde(default)]
    pub timer_api: TimerApiName,
    #[serde(default = "default_period")]
    pub period_ns: Nanos,
    #[serde(default)]
    pub phase: PhaseName,
    /// The monitor's noise duty cycle (`--noise 1s/60s`), when one ran
    /// beside the timer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_duty: Option<NoiseDuty>,
    /// The timer slack the measuring threads asked for (`--timer-slack`):
    /// absent for the minimum, `null` for the kernel's default.
    #[serde(
        rename = "timer_slack_ns",
        default,
        skip_serializing_if = "TimerSlack::is_minimum"
    )]
    pub timer_slack: TimerSlack,
    #[serde(flatten)]
    pub common: CommonSettings,
}

/// A noise-probe duty cycle beside the timer probe: `on` of spinning in
/// every `every`, per CPU, the CPUs staggered over the cycle; while a CPU
/// spins its timer thread sleeps (the two would otherwise measure each
/// other).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct NoiseDuty {
    pub on_ns: Nanos,
    pub every_ns: Nanos,
}

impl NoiseDuty {
    /// Reads `ON/EVERY` (`1s/60s`), each a duration with its unit.
    pub fn parse(text: &str) -> Result<NoiseDuty, String> {
        let (on, every) = text.trim().split_once('/').ok_or_else(|| {
            format!(
                "'{text}' is not ON/EVERY (for instance 1s/60s: one second of spinning a minute)"
            )
        })?;
        let on = Nanos::parse_duration(on.trim()).map_err(|e| e.to_string())?;
        let every = Nanos::parse_duration(every.trim()).map_err(|e| e.to_string())?;
        let duty = NoiseDuty {
            on_ns: on,
            every_ns: every,
        };
        duty.validate()?;
        Ok(duty)
    }

    /// On between 10 ms and 10 s, and at most half of the cycle (the timer
    /// must measure most of the time), the cycle at most an hour.
    pub fn validate(&self) -> Result<(), String> {
        if self.on_ns < Nanos::from_millis(10) || self.on_ns > Nanos::from_secs(10) {
            return Err(format!(
                "the noise duty's spinning time {} is outside 10ms-10s",
                self.on_ns
            ));
        }
        if self.every_ns.0 < self.on_ns.0.saturating_mul(2) {
            return Err(format!(
                "the noise duty's cycle {} must be at least twice its spinning time {}",
                self.every_ns, self.on_ns
            ));
        }
        if self.every_ns > Nanos::from_secs(3600) {
            return Err(format!(
                "the noise duty's cycle {} is over an hour",
                self.every_ns
            ));
        }
        Ok(())
    }
}

impl std::fmt::Display for NoiseDuty {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.on_ns, self.every_ns)
    }
}

/// What a record with none of the keys reads as (the CLI's defaults).
impl Default for TimerSettings {
    fn default() -> TimerSettings {
        TimerSettings {
            timer_api: TimerApiName::ClockNanosleep,
            period_ns: DEFAULT_PERIOD,
            phase: PhaseName::Fixed,
            noise_duty: None,
            timer_slack: TimerSlack::MINIMUM,
            common: CommonSettings::default(),
        }
    }
}

/// The noise probe (osnoise's measurement).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct NoiseSettings {
    #[serde(default = "default_noise_span")]
    pub runtime_ns: Nanos,
    /// 0: the loop spins without pausing.
    #[serde(default = "default_noise_span")]
    pub pause_ns: Nanos,
    #[serde(default = "default_gap_ratio")]
    pub gap_ratio: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gap_min_ns: Option<Nanos>,
    #[serde(default)]
    pub fp: bool,
    #[serde(flatten)]
    pub common: CommonSettings,
}

impl Default for NoiseSettings {
    fn default() -> NoiseSettings {
        NoiseSettings {
            runtime_ns: default_noise_span(),
            pause_ns: default_noise_span(),
            gap_ratio: default_gap_ratio(),
            gap_min_ns: None,
            fp: false,
            common: CommonSettings::default(),
        }
    }
}

/// The UDP probe (a ping through the network stack).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct UdpSettings {
    #[serde(default)]
    pub path: UdpPath,
    #[serde(default = "default_udp_period")]
    pub period_ns: Nanos,
    #[serde(default = "default_payload")]
    pub payload_bytes: u32,
    #[serde(default)]
    pub sender_cpu: u32,
    #[serde(default)]
    pub receiver_cpu: u32,
    #[serde(flatten)]
    pub common: CommonSettings,
}

impl Default for UdpSettings {
    fn default() -> UdpSettings {
        UdpSettings {
            path: UdpPath::Loopback,
            period_ns: DEFAULT_UDP_PERIOD,
            payload_bytes: default_payload(),
            sender_cpu: 0,
            receiver_cpu: 0,
            common: CommonSettings::default(),
        }
    }
}

/// The application probe: a producer filling `buffers` buffers of
/// `period_ns` for a device clock, `compute_ns` of work per buffer.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct AppSettings {
    #[serde(default = "default_period")]
    pub period_ns: Nanos,
    #[serde(default = "default_app_buffers")]
    pub buffers: u32,
    /// The work per buffer asked for.
    #[serde(default)]
    pub compute_ns: Nanos,
    /// Turns of the busy loop that make `compute_ns`, as calibrated on
    /// the producer's CPU before the run.
    #[serde(default)]
    pub compute_loops: u64,
    /// The application preset whose scheme this is (`--app`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app: Option<String>,
    #[serde(flatten)]
    pub common: CommonSettings,
}

fn default_app_buffers() -> u32 {
    2
}

impl Default for AppSettings {
    fn default() -> AppSettings {
        AppSettings {
            period_ns: DEFAULT_PERIOD,
            buffers: default_app_buffers(),
            compute_ns: Nanos(0),
            compute_loops: 0,
            app: None,
            common: CommonSettings::default(),
        }
    }
}

/// The simulated probe the lifecycle tests drive; never a user's option.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SimSettings {
    #[serde(default = "default_period")]
    pub period_ns: Nanos,
    #[serde(flatten)]
    pub common: CommonSettings,
}

impl Default for SimSettings {
    fn default() -> SimSettings {
        SimSettings {
            period_ns: DEFAULT_PERIOD,
            common: CommonSettings::default(),
        }
    }
}

/// A cell's settings as they were applied, one variant per probe.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "probe", rename_all = "snake_case")]
pub enum CellSettings {
    Timer(TimerSettings),
    Noise(NoiseSettings),
    Udp(UdpSettings),
    /// The application probe (`--probe app`).
    App(AppSettings),
    /// One microbenchmark (`latscope micro`).
    Micro(MicroSettings),
    Sim(SimSettings),
}

/// Why stored settings could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    #[error("settings are not a JSON object")]
    NotAnObject,
    #[error("settings name probe '{tagged}' but the cell is a '{cell}' cell")]
    ProbeMismatch { tagged: String, cell: String },
    #[error("{0}")]
    Invalid(String),
}

impl CellSettings {
    /// Reads settings as stored, tolerating the untagged form of schema 5
    /// and older: without a `"probe"` key, `probe` (the cell's probe)
    /// names the variant. A tag that contradicts the cell is an error, as is
    /// a key of the wrong type; a missing key takes its default.
    pub fn from_json(probe: &str, value: serde_json::Value) -> Result<CellSettings, SettingsError> {
        let serde_json::Value::Object(mut map) = value else {
            return Err(SettingsError::NotAnObject);
        };
        match map.get("probe") {
            None => {
                map.insert("probe".into(), serde_json::Value::String(probe.into()));
            }
            Some(serde_json::Value::String(tagged)) if tagged == probe => {}
            Some(other) => {
                return Err(SettingsError::ProbeMismatch {
                    tagged: other
                        .as_str()
                        .map_or_else(|| other.to_string(), str::to_string),
                    cell: probe.into(),
                })
            }
        }
        serde_json::from_value(serde_json::Value::Object(map))
            .map_err(|e| SettingsError::Invalid(e.to_string()))
    }

    /// Default settings of a probe by name; `None` for an unknown name.
    pub fn default_for(probe: &str) -> Option<CellSettings> {
        Some(match probe {
            "timer" => CellSettings::Timer(TimerSettings::default()),
            "noise" => CellSettings::Noise(NoiseSettings::default()),
            "udp" => CellSettings::Udp(UdpSettings::default()),
            "app" => CellSettings::App(AppSettings::default()),
            "micro" => CellSettings::Micro(MicroSettings::default()),
            "sim" => CellSettings::Sim(SimSettings::default()),
            _ => return None,
        })
    }

    /// The probe's name, as in `CellMeta::probe` and the `"probe"` tag.
    pub fn probe_name(&self) -> &'static str {
        match self {
            CellSettings::Timer(_) => "timer",
            CellSettings::Noise(_) => "noise",
            CellSettings::Udp(_) => "udp",
            CellSettings::App(_) => "app",
            CellSettings::Micro(_) => "micro",
            CellSettings::Sim(_) => "sim",
        }
    }

    pub fn common(&self) -> &CommonSettings {
        match self {
            CellSettings::Timer(s) => &s.common,
            CellSettings::Noise(s) => &s.common,
            CellSettings::Udp(s) => &s.common,
            CellSettings::App(s) => &s.common,
            CellSettings::Micro(s) => &s.common,
            CellSettings::Sim(s) => &s.common,
        }
    }

    pub fn common_mut(&mut self) -> &mut CommonSettings {
        match self {
            CellSettings::Timer(s) => &mut s.common,
            CellSettings::Noise(s) => &mut s.common,
            CellSettings::Udp(s) => &mut s.common,
            CellSettings::App(s) => &mut s.common,
            CellSettings::Micro(s) => &mut s.common,
            CellSettings::Sim(s) => &mut s.common,
        }
    }

    /// The period of a periodic probe; `None` for the noise probe, which
    /// has active spans instead.
    pub fn period(&self) -> Option<Nanos> {
        match self {
            CellSettings::Timer(s) => Some(s.period_ns),
            CellSettings::Udp(s) => Some(s.period_ns),
            CellSettings::App(s) => Some(s.period_ns),
            CellSettings::Sim(s) => Some(s.period_ns),
            CellSettings::Noise(_) | CellSettings::Micro(_) => None,
        }
    }

    pub fn policy(&self) -> Policy {
        self.common().policy
    }

    /// The priority applied: 0 under `other`, even if a record says more.
    pub fn priority(&self) -> u32 {
        let c = self.common();
        if c.policy.has_priority() {
            c.priority
        } else {
            0
        }
    }

    /// "fifo 95", "other", "other nice 5", "idle" or "deadline
    /// 100us/1.00ms" (runtime/period): the scheduling part, for matrix rows.
    pub fn sched_label(&self) -> String {
        let c = self.common();
        match (self.policy(), c.nice, c.deadline) {
            (p, _, _) if p.has_priority() => match c.instance {
                Some(n) => format!("{p} {} #{n}", self.priority()),
                None => format!("{p} {}", self.priority()),
            },
            (Policy::Deadline, _, Some(d)) => {
                format!("deadline {}/{}", d.runtime_ns, d.period_ns)
            }
            (p, Some(n), _) if n != 0 => format!("{p} nice {n}"),
            (p, _, _) => p.to_string(),
        }
    }

    /// A short description for tables: "1.00ms, fifo 95"; "33.0ms/33.0ms, other"
    /// (noise runtime/pause); "veth 10.0ms, fifo 95".
    pub fn label(&self) -> String {
        let what = match self {
            CellSettings::Timer(s) => s.period_ns.to_string(),
            CellSettings::Sim(s) => s.period_ns.to_string(),
            CellSettings::Noise(s) => format!("{}/{}", s.runtime_ns, s.pause_ns),
            CellSettings::Udp(s) => format!("{} {}", s.path, s.period_ns),
            CellSettings::App(s) => format!(
                "{} x {} buffers, {} compute",
                s.period_ns, s.buffers, s.compute_ns
            ),
            CellSettings::Micro(s) => format!("{} on CPU {}", s.bench, s.cpu),
        };
        format!("{what}, {}", self.sched_label())
    }

    /// These settings without what belongs to one run rather than to the
    /// cell's configuration (the measured clock-read cost and the planned
    /// duration): the part two runs must share to be the same cell.
    pub fn cell_identity(&self) -> CellSettings {
        let mut s = self.clone();
        let c = s.common_mut();
        c.clock_read_ns = 0;
        c.duration_ns = None;
        c.rr_interval_ns = None;
        // Measured together with others is part of the cell; which cells
        // of its run they were is not.
        if let Some(t) = c.together.as_mut() {
            t.clear();
        }
        s
    }

    /// Whether `other` configures the same cell: every setting equal but
    /// the run-specific ones (clock-read cost, duration).
    pub fn same_cell_as(&self, other: &CellSettings) -> bool {
        self.cell_identity() == other.cell_identity()
    }

    /// The settings as a flat key → value map without the `"probe"` tag,
    /// for renderers that list them all.
    pub fn to_map(&self) -> serde_json::Map<String, serde_json::Value> {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::Object(mut m)) => {
                m.remove("probe");
                m
            }
            // A struct of plain fields always serializes to an object.
            _ => serde_json::Map::new(),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::DEFAULT_PRIORITY;
    use serde_json::json;

    fn timer() -> CellSettings {
        CellSettings::Timer(TimerSettings {
            timer_api: TimerApiName::ClockNanosleep,
            period_ns: Nanos::from_millis(1),
            phase: PhaseName::Fixed,
            noise_duty: None,
            timer_slack: TimerSlack::MINIMUM,
            common: CommonSettings {
                policy: Policy::Fifo,
                priority: 95,
                nice: None,
                rr_interval_ns: None,
                together: None,
                instance: None,
                deadline: None,
                cpus: "0".into(),
                duration_ns: Some(Nanos::from_secs(3)),
                threshold_ns: None,
                clock_read_ns: 24,
                load_level: None,
                warmup_ns: None,
            },
        })
    }

    #[test]
    fn timer_json_keeps_the_documented_keys() {
        // The example of docs/json.md, plus the tag.
        let v = serde_json::to_value(timer()).unwrap();
        assert_eq!(
            v,
            json!({ "probe": "timer", "timer_api": "clock_nanosleep", "period_ns": 1000000,
                    "policy": "fifo", "priority": 95, "phase": "fixed", "cpus": "0",
                    "duration_ns": 3000000000u64, "clock_read_ns": 24 })
        );
        let back: CellSettings = serde_json::from_value(v).unwrap();
        assert_eq!(back, timer());
    }

    #[test]
    fn timer_slack_round_trips_and_defaults_to_the_minimum() {
        for slack in [TimerSlack::KernelDefault, TimerSlack::Set(Nanos(50_000))] {
            let mut s = timer();
            if let CellSettings::Timer(t) = &mut s {
                t.timer_slack = slack;
            }
            let v = serde_json::to_value(&s).unwrap();
            let want = Option::<Nanos>::from(slack).map(|n| n.0);
            assert_eq!(v["timer_slack_ns"], json!(want));
            let back: CellSettings = serde_json::from_value(v).unwrap();
            assert_eq!(back, s);
        }
    }

    #[test]
    fn noise_and_udp_json_keep_their_keys() {
        let noise = CellSettings::Noise(NoiseSettings {
            runtime_ns: Nanos::from_secs(1),
            pause_ns: Nanos(0),
            gap_ratio: 4,
            gap_min_ns: Some(Nanos(500)),
            fp: true,
            common: CommonSettings {
                policy: Policy::Other,
                priority: 0,
                nice: None,
                rr_interval_ns: None,
                together: None,
                instance: None,
                deadline: None,
                cpus: "0-1".into(),
                duration_ns: None,
                threshold_ns: Some(Nanos(10_000)),
                clock_read_ns: 20,
                load_level: Some("medium".into()),
                warmup_ns: Some(Nanos::from_secs(2)),
            },
        });
        assert_eq!(
            serde_json::to_value(&noise).unwrap(),
            json!({ "probe": "noise", "runtime_ns": 1000000000, "pause_ns": 0, "gap_ratio": 4,
                    "gap_min_ns": 500, "fp": true, "policy": "other", "priority": 0,
                    "cpus": "0-1", "threshold_ns": 10000, "clock_read_ns": 20,
                    "load_level": "medium", "warmup_ns": 2000000000u64 })
        );
        let udp = CellSettings::Udp(UdpSettings {
            path: UdpPath::Veth,
            sender_cpu: 1,
            ..UdpSettings::default()
        });
        let v = serde_json::to_value(&udp).unwrap();
        assert_eq!(v["probe"], "udp");
        assert_eq!(v["path"], "veth");
        assert_eq!(v["payload_bytes"], 64);
        assert_eq!(v["sender_cpu"], 1);
        assert_eq!(serde_json::from_value::<CellSettings>(v).unwrap(), udp);
        let api = serde_json::to_value(TimerApiName::PosixTimer).unwrap();
        assert_eq!(api, "posix-timer");
    }

    #[test]
    fn untagged_settings_take_the_cells_probe_and_defaults() {
        let old = json!({ "period_ns": 100000, "policy": "rr", "priority": 50, "extra": 1 });
        let s = CellSettings::from_json("timer", old).unwrap();
        let CellSettings::Timer(t) = &s else {
            panic!("not a timer: {s:?}")
        };
        assert_eq!(t.period_ns, Nanos::from_micros(100));
        assert_eq!(t.timer_api, TimerApiName::ClockNanosleep);
        assert_eq!(t.phase, PhaseName::Fixed);
        assert_eq!(s.policy(), Policy::Rr);
        assert_eq!(s.priority(), 50);
        assert_eq!(s.common().clock_read_ns, 0);

        let s = CellSettings::from_json("noise", json!({})).unwrap();
        assert_eq!(s, CellSettings::Noise(NoiseSettings::default()));
        assert_eq!(s.policy(), Policy::Fifo);
        assert_eq!(s.priority(), DEFAULT_PRIORITY);
        assert_eq!(s.period(), None);
        let s = CellSettings::from_json("udp", json!({ "path": "veth" })).unwrap();
        assert_eq!(s.period(), Some(DEFAULT_UDP_PERIOD));
    }

    #[test]
    fn defaults_are_what_an_empty_record_reads_as() {
        for probe in ["timer", "noise", "udp", "sim"] {
            let empty = CellSettings::from_json(probe, json!({})).unwrap();
            assert_eq!(Some(empty), CellSettings::default_for(probe), "{probe}");
        }
        assert_eq!(CellSettings::default_for("warp"), None);
    }

    #[test]
    fn bad_settings_are_errors_naming_the_problem() {
        let e = CellSettings::from_json("timer", json!({ "period_ns": "fast" })).unwrap_err();
        assert!(matches!(e, SettingsError::Invalid(_)), "{e}");
        assert!(e.to_string().contains("invalid type"), "{e}");
        let e = CellSettings::from_json("timer", json!([1, 2])).unwrap_err();
        assert_eq!(e, SettingsError::NotAnObject);
        let e = CellSettings::from_json("timer", json!({ "probe": "udp" })).unwrap_err();
        assert!(matches!(e, SettingsError::ProbeMismatch { .. }), "{e}");
        let e = CellSettings::from_json("warp", json!({})).unwrap_err();
        assert!(e.to_string().contains("warp"), "{e}");
        let e = CellSettings::from_json("timer", json!({ "policy": "sporadic" })).unwrap_err();
        assert!(e.to_string().contains("sporadic"), "{e}");
    }

    #[test]
    fn a_cell_is_its_settings_but_not_its_run() {
        let a = timer();
        let mut b = timer();
        b.common_mut().clock_read_ns = 31;
        b.common_mut().duration_ns = Some(Nanos::from_secs(60));
        assert!(a.same_cell_as(&b));
        let CellSettings::Timer(mut c) = timer() else {
            panic!()
        };
        c.period_ns = Nanos::from_micros(100);
        assert!(!a.same_cell_as(&CellSettings::Timer(c)));
        let mut d = timer();
        d.common_mut().priority = 50;
        assert!(!a.same_cell_as(&d));
        let mut e = timer();
        e.common_mut().load_level = Some("heavy".into());
        assert!(!a.same_cell_as(&e));
        let sim = CellSettings::Sim(SimSettings::default());
        assert!(!sim.same_cell_as(&CellSettings::Timer(TimerSettings::default())));
    }

    #[test]
    fn labels_and_priority() {
        assert_eq!(timer().label(), "1.00ms, fifo 95");
        assert_eq!(timer().probe_name(), "timer");
        let mut o = timer();
        o.common_mut().policy = Policy::Other;
        o.common_mut().priority = 95;
        assert_eq!(o.priority(), 0);
        assert_eq!(o.sched_label(), "other");
        let n = CellSettings::Noise(NoiseSettings {
            pause_ns: Nanos(0),
            ..NoiseSettings::default()
        });
        assert_eq!(
            n.label(),
            format!("{}/{}, fifo 95", Nanos::from_millis(33), Nanos(0))
        );
        assert!(!timer().to_map().contains_key("probe"));
        assert_eq!(timer().to_map()["period_ns"], 1_000_000);
    }
}
