//! The daemon: settings resolved, the store opened, the endpoint started,
//! then one epoch after another until SIGTERM or SIGINT. An epoch is one
//! engine run of the timer probe with no end, into the [`MonitorSink`]
//! (every epoch a cell of the monitor's single run). SIGHUP re-reads the
//! configuration file: settings the measurement uses end the epoch and
//! start the next with them (nothing measured is lost: the ended epoch's
//! last checkpoint is its final one); other changes apply at once; a bad
//! file is reported and changes nothing.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use latscope_engine::probes::{Progress, RealClock};
use latscope_engine::system::{housekeeping_cpus, select_cpus};
use latscope_engine::{CellSpec, Env, Guards, Observer, RunConfig, RunPlan, SinkError, Stop};
use latscope_model::{CpuId, CpuSet, Nanos, RunStatus};
use latscope_store::Store;

use crate::auth::BasicAuth;
use crate::config::{ConfigError, Layer, Settings};
use crate::http::{Access, Limits, Server};
use crate::metrics::Endpoint;
use crate::sink::{lock, MonitorSink, Shared};
use crate::web_config::WebConfig;

/// Why the daemon could not start or had to stop.
#[derive(Debug, thiserror::Error)]
pub enum MonitorError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("{0}")]
    Store(#[from] latscope_store::StoreError),
    /// The CPUs to measure (the CLI names its option).
    #[error("cpus: {0}")]
    Cpus(String),
    #[error("{0}")]
    Http(#[from] crate::http::HttpError),
    #[error("{0}")]
    Engine(#[from] latscope_engine::EngineError),
    #[error("cannot install signal handlers: {0}")]
    Signals(std::io::Error),
    #[error("cannot start a thread: {0}")]
    Thread(std::io::Error),
    #[error("the monitor's store failed: {0}")]
    Sink(SinkError),
}

impl MonitorError {
    /// A mistake in the settings (exit 2) rather than a failure (exit 1).
    pub fn is_usage(&self) -> bool {
        matches!(self, MonitorError::Config(_) | MonitorError::Cpus(_))
    }
}

/// How the daemon was asked to run.
pub struct Start {
    /// The command line's settings (they win over the file's).
    pub cli: Layer,
    /// `--config`: re-read on SIGHUP.
    pub config: Option<PathBuf>,
    pub command_line: Vec<String>,
    /// Where lines for the operator go (stderr in the CLI, the journal
    /// under systemd).
    pub say: Arc<dyn Fn(&str) + Send + Sync>,
}

/// The settings from the file (if any) under the command line's.
fn load(start: &Start) -> Result<Settings, ConfigError> {
    let file = match &start.config {
        Some(p) => Layer::read(p)?,
        None => Layer::default(),
    };
    Settings::resolve(&file.under(&start.cli))
}

/// SIGINT and SIGTERM stop (a second one exits at once with 130, for an
/// operator who really wants out); SIGHUP asks for a reload.
struct Signals {
    term: Arc<AtomicBool>,
    hup: Arc<AtomicBool>,
}

impl Signals {
    fn install() -> Result<Signals, MonitorError> {
        let term = Arc::new(AtomicBool::new(false));
        let hup = Arc::new(AtomicBool::new(false));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            signal_hook::flag::register_conditional_shutdown(sig, 130, Arc::clone(&term))
                .map_err(MonitorError::Signals)?;
            signal_hook::flag::register(sig, Arc::clone(&term)).map_err(MonitorError::Signals)?;
        }
        signal_hook::flag::register(signal_hook::consts::SIGHUP, Arc::clone(&hup))
            .map_err(MonitorError::Signals)?;
        Ok(Signals { term, hup })
    }
}

/// The engine's lines go to the operator; its progress tells the endpoint
/// the measuring threads are alive.
struct DaemonObserver<'a> {
    say: &'a (dyn Fn(&str) + Send + Sync),
    shared: Arc<Mutex<Shared>>,
}

impl Observer for DaemonObserver<'_> {
    fn notice(&mut self, line: &str) {
        (self.say)(line);
    }
    fn progress(&mut self, _cell: &CellSpec, _elapsed: Nanos, p: Progress) {
        let mut s = lock(&self.shared);
        s.samples = p.samples;
        s.progress_at = Some(Nanos(latscope_engine::system::monotonic_ns()));
    }
    fn sink_failed(&mut self, e: &SinkError) {
        (self.say)(&format!(
            "the store failed ({e}); measuring goes on and the endpoint keeps serving; what could not be stored is kept in memory and retried, up to a day of timeline and 1000 episodes (beyond, the oldest is dropped and counted in latscope_store_dropped_seconds_total and latscope_store_dropped_episodes_total)"
        ));
    }
    fn sink_dropped(&mut self, _cell: &CellSpec, seconds: u64, episodes: u64) {
        let mut s = lock(&self.shared);
        s.store_dropped_seconds += seconds;
        s.store_dropped_episodes += episodes;
    }
}

/// The plan of an epoch: the settings' request (the timer probe on the
/// settings' CPUs, no end) checked against the online CPUs.
fn epoch_plan(settings: &Settings, online: &CpuSet) -> Result<RunPlan, MonitorError> {
    settings.request().plan(online).map_err(|e| match e {
        latscope_engine::RequestError::Cpus(c) => MonitorError::Cpus(c.to_string()),
        other => MonitorError::Config(crate::config::request_error(other)),
    })
}

/// The cell of an epoch (every epoch is a cell of the monitor's run; the
/// CPUs recorded are the online ones).
fn cell(plan: &RunPlan, online: &CpuSet, epoch: u32) -> CellSpec {
    CellSpec {
        index: epoch,
        of: 1,
        probe: plan.probe.clone(),
        workload: "none".into(),
        load_level: "normal".into(),
        warmup: Nanos::ZERO,
        cpus: online.clone(),
        together: Vec::new(),
        instance: 0,
    }
}

fn measured_cpus(settings: &Settings, online: &CpuSet) -> Result<CpuSet, MonitorError> {
    match &settings.cpus {
        None => Ok(online.clone()),
        Some(text) => select_cpus(text, online).map_err(|e| MonitorError::Cpus(e.to_string())),
    }
}

/// Starts the endpoint on the CPUs not measured (all when every CPU is),
/// with the TLS and authentication of the web configuration.
fn serve(
    listen: SocketAddr,
    access: Access,
    shared: &Arc<Mutex<Shared>>,
    measured: &CpuSet,
    online: &CpuSet,
) -> Result<Server, MonitorError> {
    let housekeeping = housekeeping_cpus(online, measured);
    let pin: Box<dyn FnOnce() + Send> = Box::new(move || {
        if !housekeeping.is_empty() {
            let _ = latscope_engine::system::set_affinity_set(&housekeeping);
        }
    });
    Ok(Server::start_with(
        listen,
        Arc::new(Endpoint::new(Arc::clone(shared))),
        Limits::default(),
        access,
        pin,
    )?)
}

/// The endpoint's TLS and authentication as the web configuration says.
fn access(web: Option<&WebConfig>) -> Result<Access, MonitorError> {
    Ok(match web {
        None => Access::default(),
        Some(web) => Access {
            tls: web.server_config().map_err(ConfigError::Web)?,
            auth: (!web.users.is_empty()).then(|| Arc::new(BasicAuth::new(web.users.clone()))),
        },
    })
}

/// Where the endpoint is, for the operator: `https://ADDR/metrics (TLS,
/// basic auth)`.
fn endpoint_text(server: &Server, web: Option<&WebConfig>) -> String {
    let tls = web.is_some_and(|w| w.tls.is_some());
    let mut how = Vec::new();
    if tls {
        how.push("TLS");
    }
    if web.is_some_and(|w| {
        w.tls
            .as_ref()
            .is_some_and(|t| t.client_auth != crate::web_config::ClientAuth::None)
    }) {
        how.push("client certificates");
    }
    if web.is_some_and(|w| !w.users.is_empty()) {
        how.push("basic auth");
    }
    let how = if how.is_empty() {
        String::new()
    } else {
        format!(" ({})", how.join(", "))
    };
    let scheme = if tls { "https" } else { "http" };
    format!("{scheme}://{}/metrics{how}", server.local_addr())
}

/// Starts the threshold actions the settings ask for (none: none), on
/// the `cpus` not measured.
fn start_actions(
    sink: &mut MonitorSink,
    settings: &Settings,
    cpus: Vec<CpuId>,
    shared: &Arc<Mutex<Shared>>,
    say: &Arc<dyn Fn(&str) + Send + Sync>,
) -> Result<(), MonitorError> {
    if settings.actions.is_empty() {
        lock(shared).actions = None;
        return Ok(());
    }
    let actions = latscope_engine::actions::Actions::start(
        settings.actions.clone(),
        settings.action_limit,
        cpus,
        Arc::clone(say),
        latscope_report::perfetto_trace,
    )
    .map_err(MonitorError::Thread)?
    .naming(&crate::config::Keys);
    lock(shared).actions = Some(Arc::clone(&actions.stats));
    sink.actions = Some(actions);
    Ok(())
}

/// ", noise 1s/60s per CPU" when the duty cycle runs.
fn noise_text(settings: &Settings) -> String {
    settings
        .noise
        .map(|d| format!(", noise {}/{} per CPU", d.on_ns, d.every_ns))
        .unwrap_or_default()
}

/// Runs the daemon until SIGTERM or SIGINT; returns the run's final status.
pub fn run(start: Start) -> Result<RunStatus, MonitorError> {
    let mut settings = load(&start)?;
    let online =
        latscope_engine::system::online_cpus().map_err(|e| MonitorError::Cpus(e.to_string()))?;
    let mut measured = measured_cpus(&settings, &online)?;
    let store = Store::open(&settings.store)?;
    let signals = Signals::install()?;
    let shared = Arc::new(Mutex::new(Shared::default()));
    {
        let mut s = lock(&shared);
        s.settings = Some(settings.clone());
        s.started = Nanos(latscope_engine::system::monotonic_ns());
        s.measured = Some(measured.iter().map(|c| c.0).collect());
    }
    let mut server = serve(
        settings.listen,
        access(settings.web.as_ref())?,
        &shared,
        &measured,
        &online,
    )?;
    (start.say)(&format!(
        "monitoring CPUs {} every {} at FIFO {}{}; metrics on {}; store {}",
        measured,
        settings.period,
        settings.priority,
        noise_text(&settings),
        endpoint_text(&server, settings.web.as_ref()),
        latscope_store::redact_arg(&settings.store.display().to_string())
    ));
    let mut sink = MonitorSink::new(store, Arc::clone(&shared), &settings);
    let daemon = Daemon {
        start: &start,
        online: &online,
        shared: &shared,
        signals: &signals,
    };
    // The run is closed on every path out of the epochs, an error's
    // included (as failed, with the error in its notes).
    let cpus = housekeeping_cpus(&online, &measured);
    let result = start_actions(&mut sink, &settings, cpus, &shared, &start.say)
        .and_then(|()| daemon.epochs(&mut sink, &mut settings, &mut measured, &mut server));
    server.shutdown();
    // A stop does not wait for queued actions: they are counted, and the
    // count goes into the run's notes.
    let actions = sink
        .actions
        .take()
        .and_then(latscope_engine::actions::Actions::abandon);
    if let Some(line) = &actions {
        (start.say)(line);
    }
    let (status, note) = match &result {
        Ok(RunStatus::Complete) => (
            RunStatus::Complete,
            Some("monitor stopped by SIGTERM or SIGINT".to_string()),
        ),
        Ok(status) => (*status, None),
        Err(e) => (RunStatus::Failed, Some(format!("monitor stopped: {e}"))),
    };
    let notes = actions.into_iter().chain(note).collect();
    sink.close(status, Nanos(latscope_engine::system::realtime_ns()), notes)
        .map_err(MonitorError::Sink)?;
    result
}

/// What the epochs share.
struct Daemon<'a> {
    start: &'a Start,
    online: &'a CpuSet,
    shared: &'a Arc<Mutex<Shared>>,
    signals: &'a Signals,
}

impl Daemon<'_> {
    /// One epoch after another until a stop signal, a failed epoch or an
    /// error; returns the run's status.
    fn epochs(
        &self,
        sink: &mut MonitorSink,
        settings: &mut Settings,
        measured: &mut CpuSet,
        server: &mut Server,
    ) -> Result<RunStatus, MonitorError> {
        let (start, online, shared, signals) = (self.start, self.online, self.shared, self.signals);
        let mut epoch = 0u32;
        loop {
            let plan = epoch_plan(settings, online)?;
            let config = RunConfig {
                checkpoint: plan.checkpoint,
                trace: plan.trace.clone(),
                guards: Guards::ALL,
                command_line: start.command_line.clone(),
                stop_above: None,
                unbounded: true,
            };
            let cells = [cell(&plan, online, epoch)];
            let stop = Stop::new();
            let reload: Arc<Mutex<Option<Settings>>> = Arc::new(Mutex::new(None));
            let watcher = {
                let stop = stop.clone();
                let term = Arc::clone(&signals.term);
                let hup = Arc::clone(&signals.hup);
                let reload = Arc::clone(&reload);
                let current = settings.clone();
                let config = start.config.clone();
                let cli = start.cli.clone();
                let say = Arc::clone(&start.say);
                thread::Builder::new()
                    .name("latscope-signals".into())
                    .spawn(move || {
                        watch(&stop, &term, &hup, &reload, &current, config, &cli, &*say)
                    })
                    .map_err(MonitorError::Thread)?
            };
            let mut observer = DaemonObserver {
                say: start.say.as_ref(),
                shared: Arc::clone(shared),
            };
            let env = Env {
                clock: Arc::new(RealClock),
                stop: stop.clone(),
                observer: &mut observer,
                names: &crate::config::Keys,
                system: None,
                rescue: None,
            };
            let outcome = latscope_engine::run(&config, &cells, online, sink, env);
            // The watcher ends once the epoch has: a stop it did not ask for
            // (a failed cell) ends it too.
            stop.request(0);
            let _ = watcher.join();
            let outcome = outcome?;
            if outcome.status == RunStatus::Failed {
                break Ok(RunStatus::Failed);
            }
            if signals.term.load(Ordering::Acquire) {
                break Ok(RunStatus::Complete);
            }
            let next = reload.lock().unwrap_or_else(|p| p.into_inner()).take();
            match next {
                Some(new) => {
                    if new.store != settings.store {
                        (start.say)(&format!(
                            "SIGHUP: the store cannot change while running; keeping {}",
                            latscope_store::redact_arg(&settings.store.display().to_string())
                        ));
                    }
                    let new = Settings {
                        store: settings.store.clone(),
                        ..new
                    };
                    match self.apply(sink, settings, measured, server, new) {
                        Ok(()) => (start.say)(&format!(
                            "SIGHUP: now monitoring CPUs {} every {} at FIFO {}{} (epoch {})",
                            measured,
                            settings.period,
                            settings.priority,
                            noise_text(settings),
                            epoch + 1
                        )),
                        Err(e) => {
                            lock(shared).reloads_refused += 1;
                            (start.say)(&format!(
                            "SIGHUP: {e}; the new settings are refused and the running ones stay (epoch {})",
                            epoch + 1
                        ));
                        }
                    }
                    epoch += 1;
                }
                // The engine stopped without a reload or a signal: its
                // outcome's notes say why; the daemon ends with it.
                None => break Ok(outcome.status),
            }
        }
    }

    /// Applies reloaded settings as one step: everything that can fail (the
    /// CPUs, the new endpoint, the actions) is prepared first, and only
    /// when all of it succeeded does anything change; otherwise the running
    /// settings stay whole.
    fn apply(
        &self,
        sink: &mut MonitorSink,
        settings: &mut Settings,
        measured: &mut CpuSet,
        server: &mut Server,
        new: Settings,
    ) -> Result<(), MonitorError> {
        let new_measured = measured_cpus(&new, self.online)?;
        // The web configuration's files are read again: a renewed
        // certificate applies even when the file names did not change.
        let new_access = if new.web != settings.web {
            Some(access(new.web.as_ref())?)
        } else {
            None
        };
        let new_server = if new.listen != settings.listen {
            Some(serve(
                new.listen,
                new_access.clone().unwrap_or_else(|| server.access()),
                self.shared,
                &new_measured,
                self.online,
            )?)
        } else {
            None
        };
        if new.actions != settings.actions || new.action_limit != settings.action_limit {
            let old = sink.actions.take();
            let cpus = housekeeping_cpus(self.online, &new_measured);
            if let Err(e) = start_actions(sink, &new, cpus, self.shared, &self.start.say) {
                sink.actions = old;
                if let Some(s) = new_server {
                    s.shutdown();
                }
                return Err(e);
            }
            if let Some(line) = old.and_then(latscope_engine::actions::Actions::abandon) {
                (self.start.say)(&line);
            }
        }
        if let Some(s) = new_server {
            std::mem::replace(server, s).shutdown();
        } else if let Some(a) = new_access {
            server.set_access(a);
        }
        if new.listen != settings.listen || new.web != settings.web {
            (self.start.say)(&format!(
                "SIGHUP: metrics on {}",
                endpoint_text(server, new.web.as_ref())
            ));
        }
        if let Some(a) = &sink.actions {
            a.move_to(housekeeping_cpus(self.online, &new_measured));
        }
        sink.retain(&new);
        *measured = new_measured;
        *settings = new;
        let mut s = lock(self.shared);
        s.settings = Some(settings.clone());
        s.measured = Some(measured.iter().map(|c| c.0).collect());
        Ok(())
    }
}

/// The signal watcher of one epoch: every 100 ms, a stop signal ends the
/// epoch; SIGHUP re-reads the file and ends the epoch when the new
/// settings need a new measurement (they wait in `reload`); otherwise the
/// changes that need no new epoch are applied by the next one.
#[allow(clippy::too_many_arguments)]
fn watch(
    stop: &Stop,
    term: &AtomicBool,
    hup: &AtomicBool,
    reload: &Mutex<Option<Settings>>,
    current: &Settings,
    config: Option<PathBuf>,
    cli: &Layer,
    say: &(dyn Fn(&str) + Send + Sync),
) {
    while !stop.stopped() {
        if term.load(Ordering::Acquire) {
            stop.request(signal_hook::consts::SIGTERM);
            return;
        }
        if hup.swap(false, Ordering::AcqRel) {
            let file = match &config {
                Some(p) => Layer::read(p),
                None => Ok(Layer::default()),
            };
            match file.and_then(|f| Settings::resolve(&f.under(cli))) {
                Ok(new) if new != *current => {
                    *reload.lock().unwrap_or_else(|p| p.into_inner()) = Some(new);
                    stop.request(signal_hook::consts::SIGHUP);
                    return;
                }
                Ok(_) => say("SIGHUP: the settings did not change"),
                Err(e) => say(&format!("SIGHUP: {e}; the running settings stay")),
            }
        }
        thread::sleep(Duration::from_millis(100));
    }
}
