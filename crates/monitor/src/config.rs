//! The monitor's settings: built-in defaults, overridden by a TOML file
//! (`--config`, re-read on SIGHUP), overridden by the command line. A bad
//! file is one line naming the key; on SIGHUP a bad file leaves the
//! running settings as they were.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use latscope_model::{Namer, Nanos, Neutral, NoiseDuty, Setting};
use serde::Deserialize;

use crate::web_config::{WebConfig, WebConfigError};
use latscope_engine::actions::{Action, Limit};
use latscope_engine::request::{TimerOptions, TraceOptions};
use latscope_engine::{RequestError, RunRequest};

/// One layer of settings: every field optional, as a TOML file or the
/// command line gives them. Durations are text (`1ms`, `10s`, `7d`).
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Layer {
    pub cpus: Option<String>,
    pub period: Option<String>,
    pub priority: Option<u32>,
    pub listen: Option<String>,
    /// Binding to an address other than loopback needs this on, or a
    /// web configuration that authenticates clients.
    pub allow_remote: Option<bool>,
    /// The exporters' web configuration (TLS, basic authentication) for
    /// the endpoint: `--web.config.file`.
    pub web_config_file: Option<PathBuf>,
    pub store: Option<PathBuf>,
    pub persist: Option<String>,
    pub trace: Option<bool>,
    /// `auto`, `bpf` or `perf` (docs/tracing.md).
    pub trace_backend: Option<String>,
    /// With `trace`: kernel stacks (cpu-clock samples; with perf also the
    /// call chains episodes take their held stacks from).
    pub stacks: Option<bool>,
    pub threshold: Option<String>,
    /// The noise probe's duty cycle `ON/EVERY` (`1s/60s`); `off` or absent:
    /// none.
    pub noise: Option<String>,
    pub retain_minutes: Option<String>,
    pub retain_hours: Option<String>,
    pub retain_seconds: Option<String>,
    pub episodes_per_day: Option<u32>,
    /// Threshold actions (`exec:CMD`, `snapshot[:DIR]`); need `trace`.
    pub on_threshold: Option<Vec<String>>,
    /// `COUNT/PERIOD`, e.g. `10/h`.
    pub action_limit: Option<String>,
}

impl Layer {
    /// `other`'s values where it has them, else this layer's.
    pub fn under(self, other: &Layer) -> Layer {
        Layer {
            cpus: other.cpus.clone().or(self.cpus),
            period: other.period.clone().or(self.period),
            priority: other.priority.or(self.priority),
            listen: other.listen.clone().or(self.listen),
            allow_remote: other.allow_remote.or(self.allow_remote),
            web_config_file: other.web_config_file.clone().or(self.web_config_file),
            store: other.store.clone().or(self.store),
            persist: other.persist.clone().or(self.persist),
            trace: other.trace.or(self.trace),
            trace_backend: other.trace_backend.clone().or(self.trace_backend),
            stacks: other.stacks.or(self.stacks),
            threshold: other.threshold.clone().or(self.threshold),
            noise: other.noise.clone().or(self.noise),
            retain_minutes: other.retain_minutes.clone().or(self.retain_minutes),
            retain_hours: other.retain_hours.clone().or(self.retain_hours),
            retain_seconds: other.retain_seconds.clone().or(self.retain_seconds),
            episodes_per_day: other.episodes_per_day.or(self.episodes_per_day),
            on_threshold: other.on_threshold.clone().or(self.on_threshold),
            action_limit: other.action_limit.clone().or(self.action_limit),
        }
    }

    /// Reads a TOML file. As root, a file another user owns or can write
    /// is refused: it names commands root would run (`on_threshold`).
    pub fn read(path: &Path) -> Result<Layer, ConfigError> {
        let read_err = |e: std::io::Error| ConfigError::Read {
            path: path.to_path_buf(),
            reason: e.to_string(),
        };
        if latscope_platform::files::effective_uid().map_err(read_err)? == 0 {
            if let Some(why) = latscope_platform::files::foreign_file(path).map_err(read_err)? {
                return Err(ConfigError::Read {
                    path: path.to_path_buf(),
                    reason: format!("refused as root: {why}"),
                });
            }
        }
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Read {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        toml::from_str(&text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            reason: e.message().to_string(),
        })
    }
}

/// A setting that cannot be used, as one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read the configuration {}: {reason}", .path.display())]
    Read { path: PathBuf, reason: String },
    #[error("configuration {}: {reason}", .path.display())]
    Parse { path: PathBuf, reason: String },
    #[error("{key}: {reason}")]
    Value { key: &'static str, reason: String },
    /// A rule between settings, its line naming the keys.
    #[error("{0}")]
    Rule(String),
    #[error(transparent)]
    Web(#[from] WebConfigError),
}

/// The settings the daemon runs with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// CPUs to measure, as given (`None`: every online CPU).
    pub cpus: Option<String>,
    pub period: Nanos,
    pub priority: u32,
    pub listen: SocketAddr,
    /// The endpoint's TLS and authentication (`web_config_file`), its
    /// files as read when the settings were.
    pub web: Option<WebConfig>,
    pub store: PathBuf,
    /// How often what was measured is written to the store: what a crash
    /// or `kill -9` can lose at most.
    pub persist: Nanos,
    pub trace: bool,
    pub trace_backend: latscope_engine::TraceBackend,
    /// With `trace`: `--stacks`, as `run --stacks` with its default period.
    pub stacks: bool,
    /// Samples above it are counted, and with `trace` explained as
    /// episodes.
    pub threshold: Nanos,
    /// The noise probe beside the timer, `on` in every `every` per CPU.
    pub noise: Option<NoiseDuty>,
    pub retain_minutes: Nanos,
    pub retain_hours: Nanos,
    pub retain_seconds: Nanos,
    pub episodes_per_day: u32,
    pub actions: Vec<Action>,
    pub action_limit: Limit,
}

/// The settings named by the monitor's configuration keys (`period`,
/// `on_threshold`); one it has no key for in plain words.
pub struct Keys;

impl Keys {
    fn key(s: Setting) -> Option<&'static str> {
        Some(match s {
            Setting::Cpus => "cpus",
            Setting::Period => "period",
            Setting::Priority => "priority",
            Setting::Threshold => "threshold",
            Setting::Checkpoint => "persist",
            Setting::Trace => "trace",
            Setting::TraceBackend => "trace_backend",
            Setting::Stacks => "stacks",
            Setting::OnThreshold => "on_threshold",
            Setting::ActionLimit => "action_limit",
            _ => return None,
        })
    }
}

impl Namer for Keys {
    fn name(&self, s: Setting) -> String {
        Keys::key(s).unwrap_or(s.name()).to_string()
    }

    fn given(&self, s: Setting, value: &str) -> String {
        match Keys::key(s) {
            Some(key) => format!("{key} {value}"),
            None => Neutral.given(s, value),
        }
    }
}

/// A rule of the epoch's request broken, as one line naming the keys.
pub(crate) fn request_error(e: RequestError) -> ConfigError {
    ConfigError::Rule(e.line(&Keys))
}

/// The defaults (docs/monitor.md says why each).
pub fn defaults() -> Layer {
    Layer {
        cpus: None,
        period: Some("1ms".into()),
        priority: Some(95),
        listen: Some("127.0.0.1:9464".into()),
        allow_remote: Some(false),
        web_config_file: None,
        store: Some(PathBuf::from("latscope.db")),
        persist: Some("10s".into()),
        trace: Some(false),
        trace_backend: Some("auto".into()),
        stacks: Some(false),
        threshold: Some("500us".into()),
        noise: None,
        retain_minutes: Some("7d".into()),
        retain_hours: Some("365d".into()),
        retain_seconds: Some("1d".into()),
        episodes_per_day: Some(1000),
        on_threshold: None,
        action_limit: Some("10/h".into()),
    }
}

/// Reads the web configuration; as root, one another user owns or can
/// write is refused (it says who may read the endpoint).
fn read_web_config(path: &Path) -> Result<WebConfig, ConfigError> {
    let read_err = |reason: String| WebConfigError::Read {
        path: path.to_path_buf(),
        reason,
    };
    let io_err = |e: std::io::Error| read_err(crate::os_reason::os_reason(&e));
    if latscope_platform::files::effective_uid().map_err(io_err)? == 0 {
        if let Some(why) = latscope_platform::files::foreign_file(path).map_err(io_err)? {
            return Err(read_err(format!("refused as root: {why}")).into());
        }
    }
    Ok(WebConfig::load(path)?)
}

fn duration(key: &'static str, text: Option<&String>) -> Result<Nanos, ConfigError> {
    let text = text.ok_or(ConfigError::Value {
        key,
        reason: "missing".into(),
    })?;
    Nanos::parse_duration(text).map_err(|e| ConfigError::Value {
        key,
        reason: e.to_string(),
    })
}

impl Settings {
    /// The defaults under `layer` (the file's and the command line's
    /// values, already merged), checked.
    pub fn resolve(layer: &Layer) -> Result<Settings, ConfigError> {
        let l = defaults().under(layer);
        let value = |key, reason: String| ConfigError::Value { key, reason };
        let listen_text = l.listen.clone().unwrap_or_default();
        let listen: SocketAddr = listen_text.parse().map_err(|_| {
            value(
                "listen",
                format!("'{listen_text}' is not an address:port such as 127.0.0.1:9464"),
            )
        })?;
        let web = l
            .web_config_file
            .as_deref()
            .map(read_web_config)
            .transpose()?;
        let authenticates = web.as_ref().is_some_and(WebConfig::authenticates);
        if !listen.ip().is_loopback() && l.allow_remote != Some(true) && !authenticates {
            return Err(value(
                "listen",
                format!(
                    "{listen} is not a loopback address: the endpoint has no authentication, so binding it to a network needs allow-remote, or a web configuration (web_config_file) with basic_auth_users or RequireAndVerifyClientCert"
                ),
            ));
        }
        let period = duration("period", l.period.as_ref())?;
        let priority = l.priority.unwrap_or(95);
        if !(1..=99).contains(&priority) {
            return Err(value("priority", format!("{priority} is outside 1..99")));
        }
        let persist = duration("persist", l.persist.as_ref())?;
        if persist < Nanos::from_secs(1) || persist > Nanos::from_secs(60) {
            return Err(value("persist", format!("{persist} is outside 1s..60s")));
        }
        let threshold = duration("threshold", l.threshold.as_ref())?;
        if threshold.0 == 0 {
            return Err(value("threshold", "must be greater than 0".into()));
        }
        let noise = match l.noise.as_deref().map(str::trim) {
            None | Some("off") | Some("none") => None,
            Some(text) => Some(NoiseDuty::parse(text).map_err(|e| value("noise", e))?),
        };
        let retain_minutes = duration("retain-minutes", l.retain_minutes.as_ref())?;
        let retain_hours = duration("retain-hours", l.retain_hours.as_ref())?;
        let retain_seconds = duration("retain-seconds", l.retain_seconds.as_ref())?;
        if retain_minutes < Nanos::from_secs(3600) || retain_hours < Nanos::from_secs(86_400) {
            return Err(value(
                "retain-minutes",
                "minutes must be kept at least an hour and hours at least a day".into(),
            ));
        }
        let actions = l
            .on_threshold
            .iter()
            .flatten()
            .map(|a| Action::parse(a))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| ConfigError::Rule(e.line(&Keys)))?;
        let action_limit = Limit::parse(l.action_limit.as_deref().unwrap_or("10/h"))
            .map_err(|e| ConfigError::Rule(e.line(&Keys)))?;
        let trace = l.trace.unwrap_or(false);
        let trace_backend = match l.trace_backend.as_deref().map(str::trim) {
            None | Some("auto") => latscope_engine::TraceBackend::Auto,
            Some("bpf") => latscope_engine::TraceBackend::Bpf,
            Some("perf") => latscope_engine::TraceBackend::Perf,
            Some(other) => {
                return Err(value(
                    "trace-backend",
                    format!("'{other}' is not one of auto, bpf, perf"),
                ))
            }
        };
        let stacks = l.stacks.unwrap_or(false);
        let settings = Settings {
            cpus: l.cpus.clone(),
            period,
            priority,
            listen,
            web,
            store: l
                .store
                .clone()
                .unwrap_or_else(|| PathBuf::from("latscope.db")),
            persist,
            trace,
            trace_backend,
            stacks,
            threshold,
            noise,
            retain_minutes,
            retain_hours,
            retain_seconds,
            episodes_per_day: l.episodes_per_day.unwrap_or(1000),
            actions,
            action_limit,
        };
        // The rules of a run (the period range of a run without end, what
        // needs tracing) are the request's.
        settings.request().check_rules().map_err(request_error)?;
        Ok(settings)
    }

    /// Episodes an epoch keeps in full: the daily budget
    /// (`episodes_per_day`) is the monitor's own limit.
    const EPISODE_CAP: usize = 1_000_000;

    /// What each epoch asks the engine for: the timer probe with no end on
    /// these settings (FIFO, a checkpoint every `persist`).
    pub fn request(&self) -> RunRequest {
        let d = RunRequest::default();
        RunRequest {
            cpus: self.cpus.clone(),
            period: Some(self.period),
            duration: None,
            priority: Some(self.priority),
            threshold: Some(self.threshold),
            timer: TimerOptions {
                noise_duty: self.noise,
                ..d.timer.clone()
            },
            trace: TraceOptions {
                on: self.trace,
                backend: self.trace_backend,
                stacks: self.stacks,
                episode_cap: match self.trace {
                    true => Self::EPISODE_CAP,
                    false => RunRequest::DEFAULT_EPISODE_CAP,
                },
                ..d.trace.clone()
            },
            checkpoint: self.persist,
            actions: self.actions.clone(),
            action_limit: self.action_limit,
            ..d
        }
    }

    /// Whether going from `self` to `new` needs the measurement restarted
    /// (a new epoch): anything the probe or tracer uses.
    pub fn needs_new_epoch(&self, new: &Settings) -> bool {
        self.cpus != new.cpus
            || self.period != new.period
            || self.priority != new.priority
            || self.persist != new.persist
            || self.trace != new.trace
            // With perf, stacks walk on every wake-up: another measurement.
            || self.stacks != new.stacks
            || self.threshold != new.threshold
            || self.noise != new.noise
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_command_line_wins_over_the_file_which_wins_over_the_defaults() {
        let file: Layer =
            toml::from_str("period = \"2ms\"\npriority = 80\ntrace = true\n").unwrap();
        let cli = Layer {
            priority: Some(90),
            ..Layer::default()
        };
        let s = Settings::resolve(&file.under(&cli)).unwrap();
        assert_eq!(s.period, Nanos::from_millis(2));
        assert_eq!(s.priority, 90);
        assert!(s.trace);
        assert!(!s.stacks);
        assert_eq!(s.listen, "127.0.0.1:9464".parse().unwrap());
        assert_eq!(s.persist, Nanos::from_secs(10));
        assert_eq!(s.retain_minutes, Nanos::from_secs(7 * 86_400));
    }

    #[test]
    fn bad_settings_are_one_line_naming_the_key() {
        for (text, key) in [
            ("period = \"fast\"", "period"),
            ("period = \"10us\"", "period"),
            ("priority = 0", "priority"),
            ("listen = \"0.0.0.0:9464\"", "listen"),
            ("listen = \"localhost\"", "listen"),
            ("persist = \"5m\"", "persist"),
            ("threshold = \"0us\"", "threshold"),
            ("on_threshold = [\"exec:true\"]", "on_threshold"),
            ("trace = true\non_threshold = [\"mail\"]", "on_threshold"),
            ("stacks = true", "stacks"),
            ("action_limit = \"lots\"", "action_limit"),
            ("noise = \"1s\"", "noise"),
            ("noise = \"1s/1s\"", "noise"),
            ("noise = \"1ms/60s\"", "noise"),
        ] {
            let layer: Layer = toml::from_str(text).unwrap();
            let e = Settings::resolve(&layer).unwrap_err().to_string();
            assert!(e.starts_with(key), "{text}: {e}");
            assert_eq!(e.lines().count(), 1);
        }
        // An unknown key is refused by the parser, with its name.
        let e = toml::from_str::<Layer>("perod = \"1ms\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("perod"), "{e}");
        // A remote address is accepted when asked for explicitly.
        let layer: Layer =
            toml::from_str("listen = \"0.0.0.0:9464\"\nallow_remote = true").unwrap();
        assert!(Settings::resolve(&layer).is_ok());
    }

    #[test]
    fn the_example_configuration_in_dist_is_valid() {
        let layer: Layer = toml::from_str(include_str!("../../../dist/monitor.toml")).unwrap();
        let s = Settings::resolve(&layer).unwrap();
        assert_eq!(s.noise, None);
        assert_eq!(s.period, Nanos::from_millis(1));
    }

    #[test]
    fn only_measurement_settings_need_a_new_epoch() {
        let a = Settings::resolve(&Layer::default()).unwrap();
        let mut b = a.clone();
        b.retain_minutes = Nanos::from_secs(86_400);
        assert!(!a.needs_new_epoch(&b));
        b.period = Nanos::from_millis(2);
        assert!(a.needs_new_epoch(&b));
        let mut c = a.clone();
        c.noise = Some(NoiseDuty::parse("1s/60s").unwrap());
        assert!(a.needs_new_epoch(&c));
        assert_eq!(c.noise.unwrap().every_ns, Nanos::from_secs(60));
        let mut d = a.clone();
        d.stacks = true;
        assert!(a.needs_new_epoch(&d));
    }

    /// A network address needs --allow-remote, unless the web
    /// configuration authenticates clients; a bad web configuration is
    /// one line naming it.
    #[test]
    fn an_authenticating_web_configuration_may_listen_on_a_network() {
        let dir = tempfile::tempdir().unwrap();
        let web = dir.path().join("web.yml");
        let layer = |text: &str| -> Layer {
            std::fs::write(&web, text).unwrap();
            toml::from_str(&format!(
                "listen = \"0.0.0.0:9464\"\nweb_config_file = \"{}\"",
                web.display()
            ))
            .unwrap()
        };
        let e = Settings::resolve(&layer("")).unwrap_err().to_string();
        assert!(
            e.starts_with("listen") && e.contains("web_config_file"),
            "{e}"
        );
        let hash = bcrypt::hash("pw", 4).unwrap();
        let s = Settings::resolve(&layer(&format!("basic_auth_users:\n  u: '{hash}'\n"))).unwrap();
        assert_eq!(s.web.unwrap().users.len(), 1);
        let e = Settings::resolve(&layer("basic_auth_users:\n  u: x\n"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("web configuration") && e.contains("basic_auth_users: u"),
            "{e}"
        );
        assert!(!e.contains(": x"), "{e}");
    }

    /// An epoch is the engine's request: no end, the monitor's period,
    /// priority, threshold and duty cycle; the rules are the request's.
    #[test]
    fn an_epoch_is_a_request_without_end() {
        let layer: Layer =
            toml::from_str("period = \"2ms\"\npriority = 80\nnoise = \"1s/60s\"\ntrace = true")
                .unwrap();
        let r = Settings::resolve(&layer).unwrap().request();
        assert_eq!(r.duration, None);
        assert_eq!(r.period(), Nanos::from_millis(2));
        assert_eq!(r.priority, Some(80));
        assert_eq!(r.threshold, Some(Nanos::from_micros(500)));
        assert!(r.timer.noise_duty.is_some() && r.trace.on);
        let online: latscope_model::CpuSet = [latscope_model::CpuId(0)].into_iter().collect();
        let plan = r.plan(&online).unwrap();
        assert_eq!(plan.trace.unwrap().threshold, Nanos::from_micros(500));
        assert_eq!(plan.checkpoint, Nanos::from_secs(10));
        // The period range is the request's rule for a run without end.
        let layer: Layer = toml::from_str("period = \"2s\"").unwrap();
        let e = Settings::resolve(&layer).unwrap_err().to_string();
        assert_eq!(e, "period 2.00s is outside 50us..1s");
    }

    #[test]
    fn stacks_come_with_trace() {
        let layer: Layer = toml::from_str("trace = true\nstacks = true").unwrap();
        assert!(Settings::resolve(&layer).unwrap().stacks);
    }

    /// As root, a configuration another user can write (it names commands
    /// root runs) is refused in one line; the same file made private is
    /// read.
    #[test]
    fn as_root_a_configuration_others_can_write_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        if latscope_platform::files::effective_uid().unwrap() != 0 {
            eprintln!("skipped: needs root");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("monitor.toml");
        std::fs::write(&path, "on_threshold = [\"exec:true\"]\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        let e = Layer::read(&path).unwrap_err().to_string();
        assert!(
            e.contains("refused as root") && e.contains("writable by other users"),
            "{e}"
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        Layer::read(&path).unwrap();
        std::os::unix::fs::chown(&path, Some(65_534), None).unwrap();
        let e = Layer::read(&path).unwrap_err().to_string();
        assert!(e.contains("belongs to user 65534"), "{e}");
    }
}
