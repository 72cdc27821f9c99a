//! Threshold actions, as rtla's `--on-threshold`: for every episode (a
//! traced sample above the threshold), run a command with the episode as
//! JSON on its standard input (`exec:CMD`), or write the episode's trace
//! window as a Perfetto / Trace Event Format file (`snapshot[:DIR]`).
//!
//! They never hold up measuring: episodes reach the actions at the
//! checkpoint that stores them (on the housekeeping thread, never a
//! measuring one), the rate limit is checked there, and the work goes
//! through a bounded queue to one thread of its own. When the queue is
//! full the episode's action is dropped and counted; a command that runs
//! longer than [`COMMAND_TIMEOUT`] is killed. `--action-limit N/PERIOD`
//! (default 10/h) caps how many episodes get actions in any window of that
//! length; the others are counted as suppressed.
//!
//! The thread and the commands it starts run on the housekeeping CPUs (the
//! online ones not measured), never on a measured one; when every CPU is
//! measured they share them, at normal priority, below the measuring
//! threads' SCHED_FIFO. At a stop ([`Actions::abandon`]) a running command
//! gets [`exec::SHUTDOWN_GRACE`], and the episodes still queued are
//! abandoned and counted, not run: a stop must not wait 30 s per queued
//! command. At the normal end of a run ([`Actions::finish`]) the queue is
//! run.

mod exec;
mod job;

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::{CellKey, Checkpoint, Sink, SinkError};
use latscope_model::{
    Capabilities, CellMeta, CpuId, Episode, EpisodeWindow, MicroContext, MicroResult, Namer, Nanos,
    Neutral, RunId, RunMeta, RunStatus, Setting, SystemInfo,
};

pub use exec::{ACTION_ENV, SHUTDOWN_GRACE};
use job::Job;

/// How long a command may run before it is killed.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// Episodes waiting for the action thread at most.
const QUEUE: usize = 256;

/// One action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// `exec:CMD`: `sh -c CMD`, the episode as JSON on stdin.
    Exec(String),
    /// `snapshot[:DIR]`: the episode's trace window, one file per episode.
    Snapshot(PathBuf),
}

/// How many episodes may get actions per period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    pub count: u32,
    pub per: Nanos,
}

impl Default for Limit {
    fn default() -> Limit {
        Limit {
            count: 10,
            per: Nanos::from_secs(3600),
        }
    }
}

/// A threshold action or an action limit that does not parse, as one line
/// ([`ActionError::line`], naming the setting as the caller does).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ActionError {
    Action(String),
    Limit(String),
}

impl ActionError {
    /// The line, the setting named by `n`.
    pub fn line(&self, n: &dyn Namer) -> String {
        match self {
            ActionError::Action(a) => format!(
                "{} '{a}': give exec:COMMAND, snapshot or snapshot:DIR",
                n.name(Setting::OnThreshold)
            ),
            ActionError::Limit(l) => format!(
                "{} '{l}': give COUNT/PERIOD, e.g. 10/h, 1/m, 100/d",
                n.name(Setting::ActionLimit)
            ),
        }
    }
}

impl std::fmt::Display for ActionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.line(&Neutral))
    }
}

impl Action {
    pub fn parse(text: &str) -> Result<Action, ActionError> {
        if let Some(cmd) = text.strip_prefix("exec:") {
            if cmd.trim().is_empty() {
                return Err(ActionError::Action(text.into()));
            }
            return Ok(Action::Exec(cmd.to_string()));
        }
        if text == "snapshot" {
            return Ok(Action::Snapshot(PathBuf::from("latscope-snapshots")));
        }
        match text.strip_prefix("snapshot:") {
            Some(dir) if !dir.is_empty() => Ok(Action::Snapshot(PathBuf::from(dir))),
            _ => Err(ActionError::Action(text.into())),
        }
    }
}

impl Limit {
    pub fn parse(text: &str) -> Result<Limit, ActionError> {
        let bad = || ActionError::Limit(text.into());
        let (n, per) = text.split_once('/').ok_or_else(bad)?;
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        let per = match per.trim() {
            "s" => Nanos::from_secs(1),
            "m" | "min" => Nanos::from_secs(60),
            "h" => Nanos::from_secs(3600),
            "d" => Nanos::from_secs(86_400),
            other => Nanos::parse_duration(other).map_err(|_| bad())?,
        };
        if count == 0 || per.0 == 0 {
            return Err(bad());
        }
        Ok(Limit { count, per })
    }
}

/// What the actions did, for `/metrics` and the run's notes.
#[derive(Debug, Default)]
pub struct ActionStats {
    /// Actions that ran and succeeded.
    pub ok: AtomicU64,
    /// Actions that failed (the command exited non-zero, timed out or could
    /// not start; the file could not be written).
    pub failed: AtomicU64,
    /// Episodes over the rate limit.
    pub suppressed: AtomicU64,
    /// Episodes dropped because the queue was full.
    pub dropped: AtomicU64,
    /// Episodes still queued at shutdown, whose actions never ran.
    pub abandoned: AtomicU64,
}

/// Renders an episode's trace window as the snapshot document (the CLI
/// and the monitor pass the report's Perfetto renderer; the engine does
/// not depend on the renderers).
pub type SnapshotDoc = fn(RunId, &Episode, &EpisodeWindow) -> serde_json::Value;

/// The actions of a run or a monitor, with their thread.
pub struct Actions {
    tx: Option<SyncSender<Job>>,
    thread: Option<JoinHandle<()>>,
    /// Set at shutdown: the queue is abandoned, a running command cut short.
    closing: Arc<AtomicBool>,
    /// The CPUs the thread and its commands run on (empty: any).
    cpus: Arc<Mutex<Vec<CpuId>>>,
    limit: Limit,
    /// When the last `limit.count` actions fired (Instant: monotonic).
    fired: Mutex<VecDeque<Instant>>,
    /// Per cell, the highest episode number already acted on: a checkpoint
    /// the store refused comes again with the same episodes.
    seen: Mutex<BTreeMap<CellKey, u32>>,
    pub stats: Arc<ActionStats>,
    /// Where failures and the closing summary are said.
    say: Arc<dyn Fn(&str) + Send + Sync>,
    /// The action limit as the summary names it ([`Actions::naming`]).
    limit_name: String,
}

impl Actions {
    /// Starts the action thread on `cpus` (the housekeeping CPUs; empty:
    /// wherever the scheduler puts it). `say` reports failures (one line
    /// each).
    pub fn start(
        actions: Vec<Action>,
        limit: Limit,
        cpus: Vec<CpuId>,
        say: Arc<dyn Fn(&str) + Send + Sync>,
        doc: SnapshotDoc,
    ) -> std::io::Result<Actions> {
        let (tx, rx) = sync_channel::<Job>(QUEUE);
        let stats = Arc::new(ActionStats::default());
        let closing = Arc::new(AtomicBool::new(false));
        let cpus = Arc::new(Mutex::new(cpus));
        let worker = Worker {
            actions,
            stats: Arc::clone(&stats),
            closing: Arc::clone(&closing),
            cpus: Arc::clone(&cpus),
            say: Arc::clone(&say),
            doc,
        };
        let thread = std::thread::Builder::new()
            .name("latscope-actions".into())
            .spawn(move || worker.serve(rx))?;
        Ok(Actions {
            tx: Some(tx),
            thread: Some(thread),
            closing,
            cpus,
            limit,
            fired: Mutex::new(VecDeque::new()),
            seen: Mutex::new(BTreeMap::new()),
            stats,
            say,
            limit_name: Neutral.name(Setting::ActionLimit),
        })
    }

    /// The summary names the action limit by `names` (the command line's
    /// `--action-limit`, the monitor's `action_limit`; by default in plain
    /// words).
    pub fn naming(mut self, names: &dyn Namer) -> Actions {
        self.limit_name = names.name(Setting::ActionLimit);
        self
    }

    /// The housekeeping CPUs changed (a reload moved the measured ones):
    /// the next action runs on `cpus`.
    pub fn move_to(&self, cpus: Vec<CpuId>) {
        *self.cpus.lock().unwrap_or_else(|p| p.into_inner()) = cpus;
    }

    /// The episodes of a checkpoint of `cell`: each new one gets its
    /// actions if the rate limit lets it; never blocks.
    pub fn episodes(
        &self,
        run: RunId,
        cell: CellKey,
        episodes: &[Episode],
        windows: &[EpisodeWindow],
    ) {
        let Some(tx) = &self.tx else { return };
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        let last = seen.entry(cell).or_insert(0);
        let before = *last;
        for e in episodes.iter().filter(|e| e.seq > before) {
            *last = (*last).max(e.seq);
            if !self.admit(Instant::now()) {
                self.stats.suppressed.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            let job = Job {
                run,
                episode: e.clone(),
                window: windows.iter().find(|w| w.seq == e.seq).cloned(),
            };
            if let Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) = tx.try_send(job) {
                self.stats.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// The sliding-window rate limit: at most `count` admissions in any
    /// `per`.
    fn admit(&self, now: Instant) -> bool {
        let mut fired = self.fired.lock().unwrap_or_else(|p| p.into_inner());
        let per = Duration::from_nanos(self.limit.per.0);
        while fired.front().is_some_and(|t| now.duration_since(*t) >= per) {
            fired.pop_front();
        }
        if fired.len() >= self.limit.count as usize {
            return false;
        }
        fired.push_back(now);
        true
    }

    /// At the normal end of a run: runs what is queued (each command
    /// within its own [`COMMAND_TIMEOUT`]); then [`Actions::summary`].
    pub fn finish(self) -> Option<String> {
        self.close(false)
    }

    /// At a stop (a signal, a failure, new actions on reload): a running
    /// command gets [`SHUTDOWN_GRACE`], the queued episodes are abandoned
    /// and counted; then [`Actions::summary`].
    pub fn abandon(self) -> Option<String> {
        self.close(true)
    }

    fn close(mut self, abandon: bool) -> Option<String> {
        self.closing.store(abandon, Ordering::Relaxed);
        drop(self.tx.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.summary()
    }

    /// One line for the run's notes, when anything happened.
    pub fn summary(&self) -> Option<String> {
        let s = &self.stats;
        let (ok, failed, suppressed, dropped, abandoned) = (
            s.ok.load(Ordering::Relaxed),
            s.failed.load(Ordering::Relaxed),
            s.suppressed.load(Ordering::Relaxed),
            s.dropped.load(Ordering::Relaxed),
            s.abandoned.load(Ordering::Relaxed),
        );
        (ok + failed + suppressed + dropped + abandoned > 0).then(|| {
            format!(
                "threshold actions: {ok} ran, {failed} failed, {suppressed} over {}, {dropped} dropped (queue full), {abandoned} abandoned at shutdown",
                self.limit_name
            )
        })
    }
}

/// The action thread's side.
struct Worker {
    actions: Vec<Action>,
    stats: Arc<ActionStats>,
    closing: Arc<AtomicBool>,
    cpus: Arc<Mutex<Vec<CpuId>>>,
    say: Arc<dyn Fn(&str) + Send + Sync>,
    doc: SnapshotDoc,
}

impl Worker {
    fn serve(self, rx: std::sync::mpsc::Receiver<Job>) {
        let mut pinned: Vec<CpuId> = Vec::new();
        for job in rx {
            if self.closing.load(Ordering::Relaxed) {
                self.stats.abandoned.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            self.pin(&mut pinned);
            for a in &self.actions {
                let r = match a {
                    Action::Exec(cmd) => exec::exec_within(
                        cmd,
                        &job,
                        exec::Deadline::new(COMMAND_TIMEOUT, &self.closing),
                    ),
                    Action::Snapshot(dir) => snapshot(dir, &job, self.doc),
                };
                let counter = match r {
                    Ok(()) => &self.stats.ok,
                    Err(e) => {
                        (self.say)(&format!(
                            "threshold action, episode {}: {e}",
                            job.episode.seq
                        ));
                        &self.stats.failed
                    }
                };
                counter.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Moves this thread (and so the commands it starts) to the
    /// housekeeping CPUs when they changed.
    fn pin(&self, pinned: &mut Vec<CpuId>) {
        let cpus = self.cpus.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if cpus.is_empty() || cpus == *pinned {
            return;
        }
        match latscope_platform::set_affinity_set(&cpus) {
            Ok(()) => *pinned = cpus,
            Err(e) => {
                (self.say)(&format!(
                    "cannot keep the threshold actions off the measured CPUs ({e})"
                ));
                *pinned = cpus;
            }
        }
    }
}

fn snapshot(dir: &std::path::Path, job: &Job, doc: SnapshotDoc) -> Result<(), String> {
    let window = job
        .window
        .as_ref()
        .ok_or_else(|| "no trace window was kept for it".to_string())?;
    // Created 0700 where missing; refused when another user owns it or can
    // write to it (they could swap files under a root process).
    latscope_platform::files::private_dir(dir)
        .map_err(|e| format!("snapshot directory refused: {e}"))?;
    let doc = doc(job.run, &job.episode, window);
    let path = dir.join(format!("run{}-episode{}.json", job.run.0, job.episode.seq));
    let text = serde_json::to_vec(&doc).map_err(|e| e.to_string())?;
    latscope_platform::files::write_atomically(&path, &text, 0o600)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// A decorator that hands every checkpoint's episodes to the actions after
/// passing the checkpoint on to the inner sink (for `run` and `suite`; the
/// monitor's sink calls [`Actions::episodes`] itself, as its actions change
/// on reload). It owns the actions: when the run finishes, a complete run
/// runs the actions still queued, a stopped or failed one does not wait for
/// them (they are counted as abandoned), and the summary line is said.
pub struct ActionSink<S> {
    pub inner: S,
    actions: Option<Actions>,
}

impl<S: Sink> ActionSink<S> {
    pub fn new(inner: S, actions: Actions) -> ActionSink<S> {
        ActionSink {
            inner,
            actions: Some(actions),
        }
    }
}

impl<S: Sink> Sink for ActionSink<S> {
    fn create_run(
        &mut self,
        meta: &RunMeta,
        system: &SystemInfo,
        caps: &Capabilities,
    ) -> Result<RunId, SinkError> {
        self.inner.create_run(meta, system, caps)
    }
    fn update_capabilities(&mut self, run: RunId, caps: &Capabilities) -> Result<(), SinkError> {
        self.inner.update_capabilities(run, caps)
    }
    fn add_cell(&mut self, run: RunId, meta: &CellMeta) -> Result<CellKey, SinkError> {
        self.inner.add_cell(run, meta)
    }
    fn checkpoint(&mut self, run: RunId, cell: CellKey, cp: &Checkpoint) -> Result<(), SinkError> {
        let r = self.inner.checkpoint(run, cell, cp);
        if let Some(a) = &self.actions {
            a.episodes(run, cell, &cp.episodes, &cp.windows);
        }
        r
    }
    fn finish_run(
        &mut self,
        run: RunId,
        status: RunStatus,
        ended_unix: Nanos,
        notes: &[String],
    ) -> Result<(), SinkError> {
        let r = self.inner.finish_run(run, status, ended_unix, notes);
        if let Some(a) = self.actions.take() {
            let say = Arc::clone(&a.say);
            let line = if status == RunStatus::Complete {
                a.finish()
            } else {
                a.abandon()
            };
            if let Some(line) = line {
                say(&line);
            }
        }
        r
    }
    fn set_micro_context(&mut self, run: RunId, context: &MicroContext) -> Result<(), SinkError> {
        self.inner.set_micro_context(run, context)
    }
    fn add_micro_cell(
        &mut self,
        run: RunId,
        meta: &CellMeta,
        result: &MicroResult,
    ) -> Result<CellKey, SinkError> {
        self.inner.add_micro_cell(run, meta, result)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// The snapshot document of the tests: the run and the episode's
    /// number (the real one is the report's Perfetto trace).
    pub fn test_doc(run: RunId, e: &Episode, w: &EpisodeWindow) -> serde_json::Value {
        serde_json::json!({"run": run.0, "episode": e.seq, "events": w.events.len()})
    }

    pub fn episode(seq: u32) -> Episode {
        Episode {
            seq,
            cpu: CpuId(1),
            metric: "timer.latency".into(),
            expiry_ns: Nanos(1_000_000 * u64::from(seq)),
            offset_ns: Nanos(1_000),
            latency_ns: Nanos(700_000),
            breakdown: Default::default(),
            stacks: Vec::new(),
        }
    }

    #[test]
    fn actions_and_limits_parse_or_say_what_to_give() {
        assert_eq!(
            Action::parse("exec:logger hi").unwrap(),
            Action::Exec("logger hi".into())
        );
        assert_eq!(
            Action::parse("snapshot").unwrap(),
            Action::Snapshot("latscope-snapshots".into())
        );
        assert_eq!(
            Action::parse("snapshot:/tmp/s").unwrap(),
            Action::Snapshot("/tmp/s".into())
        );
        for bad in ["exec:", "exec:  ", "mail", "snapshot:"] {
            assert!(
                Action::parse(bad)
                    .unwrap_err()
                    .to_string()
                    .contains("exec:COMMAND"),
                "{bad}"
            );
        }
        assert_eq!(
            Limit::parse("10/h").unwrap(),
            Limit {
                count: 10,
                per: Nanos::from_secs(3600)
            }
        );
        assert_eq!(Limit::parse("3/10s").unwrap().per, Nanos::from_secs(10));
        for bad in ["10", "0/h", "x/h", "5/fortnight", "5/0s"] {
            assert!(Limit::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn each_episode_acts_once_within_the_limit_and_the_rest_are_counted() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let cmd = format!("cat >> {}; echo >> {}", out.display(), out.display());
        let a = Actions::start(
            vec![Action::Exec(cmd)],
            Limit {
                count: 3,
                per: Nanos::from_secs(3600),
            },
            Vec::new(),
            Arc::new(|_: &str| {}),
            test_doc,
        )
        .unwrap();
        let cell = CellKey(7);
        a.episodes(RunId(4), cell, &[episode(1), episode(2)], &[]);
        // The same checkpoint again (the store refused it): nothing new.
        a.episodes(RunId(4), cell, &[episode(1), episode(2)], &[]);
        a.episodes(
            RunId(4),
            cell,
            &[episode(2), episode(3), episode(4), episode(5)],
            &[],
        );
        let stats = Arc::clone(&a.stats);
        let summary = a.finish();
        let text = std::fs::read_to_string(&out).unwrap();
        let docs: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let seqs: Vec<u64> = docs
            .iter()
            .map(|d| d["episode"]["seq"].as_u64().unwrap())
            .collect();
        assert_eq!(seqs, [1, 2, 3], "three within the limit, each once");
        assert_eq!(docs[0]["run_id"], 4);
        assert_eq!(docs[0]["episode"]["latency_ns"], 700_000);
        assert_eq!(stats.ok.load(Ordering::Relaxed), 3);
        assert_eq!(stats.suppressed.load(Ordering::Relaxed), 2);
        assert!(summary
            .unwrap()
            .contains("3 ran, 0 failed, 2 over action limit"));
    }

    #[test]
    fn a_failing_command_is_counted_and_said() {
        let said = Arc::new(Mutex::new(Vec::<String>::new()));
        let s2 = Arc::clone(&said);
        let a = Actions::start(
            vec![
                Action::Exec("exit 3".into()),
                Action::Snapshot("/nonexistent-dir/x".into()),
            ],
            Limit::default(),
            Vec::new(),
            Arc::new(move |l: &str| s2.lock().unwrap().push(l.to_string())),
            test_doc,
        )
        .unwrap();
        a.episodes(RunId(1), CellKey(1), &[episode(1)], &[]);
        let stats = Arc::clone(&a.stats);
        a.finish();
        assert_eq!(stats.failed.load(Ordering::Relaxed), 2);
        let said = said.lock().unwrap();
        assert!(said.iter().any(|l| l.contains("exited with")), "{said:?}");
        assert!(
            said.iter().any(|l| l.contains("no trace window")),
            "{said:?}"
        );
    }

    /// A snapshot goes only into a directory no other user controls: one
    /// that others can write to is refused; a missing one is created 0700
    /// and the file written 0600.
    #[test]
    fn snapshots_go_only_into_a_private_directory() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let job = Job {
            run: RunId(2),
            episode: episode(5),
            window: Some(EpisodeWindow {
                seq: 5,
                cpu: latscope_model::CpuId(0),
                events: Vec::new(),
                truncated: 0,
            }),
        };
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = snapshot(&open, &job, test_doc).unwrap_err();
        assert!(e.contains("writable by other users"), "{e}");
        assert_eq!(std::fs::read_dir(&open).unwrap().count(), 0);
        let new = dir.path().join("new");
        snapshot(&new, &job, test_doc).unwrap();
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&new), 0o700);
        assert_eq!(mode(&new.join("run2-episode5.json")), 0o600);
    }

    /// Waits up to 10 s for `path` to exist.
    fn appears(path: &std::path::Path) -> bool {
        let t0 = Instant::now();
        while !path.exists() {
            if t0.elapsed() > Duration::from_secs(10) {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        true
    }

    /// At shutdown the running command gets its grace, not its 30 s, and
    /// the queued episodes are counted as abandoned, not run one after the
    /// other (which held a stop for 30 s per queued command).
    #[test]
    fn at_shutdown_the_running_command_is_cut_short_and_the_queue_abandoned() {
        let dir = tempfile::tempdir().unwrap();
        let started = dir.path().join("started");
        let cmd = format!("touch {}; sleep 20", started.display());
        let a = Actions::start(
            vec![Action::Exec(cmd)],
            Limit::default(),
            Vec::new(),
            Arc::new(|_: &str| {}),
            test_doc,
        )
        .unwrap();
        a.episodes(
            RunId(1),
            CellKey(1),
            &[episode(1), episode(2), episode(3)],
            &[],
        );
        assert!(appears(&started), "the first command did not start");
        let stats = Arc::clone(&a.stats);
        let t0 = Instant::now();
        let summary = a.abandon().unwrap();
        let took = t0.elapsed();
        assert!(took < SHUTDOWN_GRACE + Duration::from_secs(5), "{took:?}");
        assert_eq!(stats.failed.load(Ordering::Relaxed), 1);
        assert_eq!(stats.abandoned.load(Ordering::Relaxed), 2);
        assert!(summary.contains("2 abandoned at shutdown"), "{summary}");
    }

    /// The commands run on the CPUs the actions were given (the
    /// housekeeping ones), not wherever the process may run.
    #[test]
    fn commands_run_on_the_housekeeping_cpus() {
        let online: Vec<CpuId> = latscope_platform::online_cpus().unwrap().iter().collect();
        let Some(&last) = online.last().filter(|_| online.len() >= 2) else {
            eprintln!("skipped: needs two online CPUs");
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("cpus");
        let cmd = format!(
            "grep Cpus_allowed_list /proc/self/status > {}",
            out.display()
        );
        let a = Actions::start(
            vec![Action::Exec(cmd)],
            Limit::default(),
            vec![last],
            Arc::new(|_: &str| {}),
            test_doc,
        )
        .unwrap();
        a.episodes(RunId(1), CellKey(1), &[episode(1)], &[]);
        assert!(appears(&out));
        let ok = Arc::clone(&a.stats);
        a.finish();
        assert_eq!(ok.ok.load(Ordering::Relaxed), 1);
        let text = std::fs::read_to_string(&out).unwrap();
        let allowed = text.split(':').nth(1).unwrap().trim();
        assert_eq!(allowed, last.0.to_string(), "{text}");
    }

    /// An `ActionSink` over a mirror, with one `exec` action that appends
    /// the episode's number to `out`; what it said.
    fn action_sink(
        out: &std::path::Path,
    ) -> (ActionSink<crate::MemorySink>, Arc<Mutex<Vec<String>>>) {
        let said = Arc::new(Mutex::new(Vec::<String>::new()));
        let s2 = Arc::clone(&said);
        let a = Actions::start(
            vec![Action::Exec(format!("sleep 0.2; cat >> {}", out.display()))],
            Limit::default(),
            Vec::new(),
            Arc::new(move |l: &str| s2.lock().unwrap().push(l.to_string())),
            test_doc,
        )
        .unwrap();
        (ActionSink::new(crate::MemorySink::new(), a), said)
    }

    fn run_with_episode(sink: &mut ActionSink<crate::MemorySink>, status: RunStatus) {
        let meta = crate::running_meta(Nanos(1), Vec::new(), &SystemInfo::default());
        let run = sink
            .create_run(&meta, &SystemInfo::default(), &Capabilities::default())
            .unwrap();
        let meta = CellMeta::new(
            0,
            "none",
            latscope_model::CellSettings::Timer(Default::default()),
            Nanos::ZERO,
        );
        let cell = sink.add_cell(run, &meta).unwrap();
        let cp = Checkpoint {
            episodes: vec![episode(1)],
            ..Checkpoint::default()
        };
        sink.checkpoint(run, cell, &cp).unwrap();
        sink.finish_run(run, status, Nanos(2), &[]).unwrap();
    }

    #[test]
    fn the_action_sink_passes_calls_on_and_closes_the_actions_with_the_run() {
        // A complete run waits for the queued action and says so.
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("complete");
        let (mut sink, said) = action_sink(&out);
        run_with_episode(&mut sink, RunStatus::Complete);
        let run = sink.inner.run().unwrap();
        assert_eq!(run.meta.status, RunStatus::Complete, "passed on");
        assert_eq!(run.cells.len(), 1);
        assert!(out.exists(), "the queued action ran before the run ended");
        let said = said.lock().unwrap().clone();
        assert!(
            said.iter()
                .any(|l| l.starts_with("threshold actions: 1 ran")),
            "{said:?}"
        );
        // A stopped one closes them too (abandoning what is still queued)
        // and says its summary.
        let out = dir.path().join("interrupted");
        let (mut sink, said) = action_sink(&out);
        run_with_episode(&mut sink, RunStatus::Interrupted);
        assert_eq!(
            sink.inner.run().unwrap().meta.status,
            RunStatus::Interrupted
        );
        let said = said.lock().unwrap().clone();
        assert!(
            said.len() == 1 && said[0].starts_with("threshold actions: "),
            "{said:?}"
        );
    }
}
