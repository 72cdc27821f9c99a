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

use std::collections::{BTreeMap, VecDeque};
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use latscope_engine::{CellKey, Sink, SinkError};
use latscope_model::{
    Capabilities, CellMeta, Episode, EpisodeWindow, Nanos, RunId, RunMeta, RunStatus, SystemInfo,
};
use latscope_store::Checkpoint;

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

/// A bad `--on-threshold` or `--action-limit`, as one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ActionError {
    #[error("--on-threshold '{0}': give exec:COMMAND, snapshot or snapshot:DIR")]
    Action(String),
    #[error("--action-limit '{0}': give COUNT/PERIOD, e.g. 10/h, 1/m, 100/d")]
    Limit(String),
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
}

struct Job {
    run: RunId,
    episode: Episode,
    window: Option<EpisodeWindow>,
}

/// The actions of a run or a monitor, with their thread.
pub struct Actions {
    tx: Option<SyncSender<Job>>,
    thread: Option<JoinHandle<()>>,
    limit: Limit,
    /// When the last `limit.count` actions fired (Instant: monotonic).
    fired: Mutex<VecDeque<Instant>>,
    /// Per cell, the highest episode number already acted on: a checkpoint
    /// the store refused comes again with the same episodes.
    seen: Mutex<BTreeMap<CellKey, u32>>,
    pub stats: Arc<ActionStats>,
}

impl Actions {
    /// Starts the action thread. `say` reports failures (one line each).
    pub fn start(
        actions: Vec<Action>,
        limit: Limit,
        say: Arc<dyn Fn(&str) + Send + Sync>,
    ) -> std::io::Result<Actions> {
        let (tx, rx) = sync_channel::<Job>(QUEUE);
        let stats = Arc::new(ActionStats::default());
        let thread_stats = Arc::clone(&stats);
        let thread = std::thread::Builder::new()
            .name("latscope-actions".into())
            .spawn(move || {
                for job in rx {
                    for a in &actions {
                        let r = match a {
                            Action::Exec(cmd) => exec(cmd, &job),
                            Action::Snapshot(dir) => snapshot(dir, &job),
                        };
                        match r {
                            Ok(()) => thread_stats.ok.fetch_add(1, Ordering::Relaxed),
                            Err(e) => {
                                say(&format!("--on-threshold: episode {}: {e}", job.episode.seq));
                                thread_stats.failed.fetch_add(1, Ordering::Relaxed)
                            }
                        };
                    }
                }
            })?;
        Ok(Actions {
            tx: Some(tx),
            thread: Some(thread),
            limit,
            fired: Mutex::new(VecDeque::new()),
            seen: Mutex::new(BTreeMap::new()),
            stats,
        })
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

    /// Waits for the queued actions (each at most [`COMMAND_TIMEOUT`]);
    /// then [`Actions::summary`].
    pub fn finish(mut self) -> Option<String> {
        drop(self.tx.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.summary()
    }

    /// One line for the run's notes, when anything happened.
    pub fn summary(&self) -> Option<String> {
        let s = &self.stats;
        let (ok, failed, suppressed, dropped) = (
            s.ok.load(Ordering::Relaxed),
            s.failed.load(Ordering::Relaxed),
            s.suppressed.load(Ordering::Relaxed),
            s.dropped.load(Ordering::Relaxed),
        );
        (ok + failed + suppressed + dropped > 0).then(|| {
            format!(
                "threshold actions: {ok} ran, {failed} failed, {suppressed} over --action-limit, {dropped} dropped (queue full)"
            )
        })
    }
}

/// The environment a command inherits, by name: nothing else (no store
/// URL, no `PGPASSWORD`, no credentials of any other kind) reaches it.
pub const ACTION_ENV: [&str; 8] = [
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ",
];

fn exec(cmd: &str, job: &Job) -> Result<(), String> {
    exec_within(cmd, job, COMMAND_TIMEOUT)
}

/// Runs `cmd` with the episode on its standard input; the whole action
/// (the write and the wait) ends by `timeout`, its process group killed
/// when it would not.
fn exec_within(cmd: &str, job: &Job, timeout: Duration) -> Result<(), String> {
    let json = serde_json::to_vec(&serde_json::json!({
        "run_id": job.run.0,
        "episode": job.episode,
    }))
    .map_err(|e| e.to_string())?;
    let mut command = Command::new("sh");
    command
        .args(["-c", cmd])
        .env_clear()
        .envs(
            ACTION_ENV
                .iter()
                .filter_map(|k| Some((k, std::env::var_os(k)?))),
        )
        .env("LATSCOPE_RUN", job.run.0.to_string())
        .env("LATSCOPE_EPISODE", job.episode.seq.to_string())
        .env("LATSCOPE_CPU", job.episode.cpu.0.to_string())
        .env("LATSCOPE_LATENCY_NS", job.episode.latency_ns.0.to_string())
        // A group of its own: at the deadline the command and everything
        // it started are killed together.
        .process_group(0)
        .stdin(Stdio::piped())
        .stdout(Stdio::null());
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot run '{cmd}': {e}"))?;
    let pgid = i32::try_from(child.id()).unwrap_or(0);
    // The episode is written from a thread of its own: a command that
    // reads nothing fills the pipe, and the deadline below covers the
    // write too (the writer ends when the group is killed and the pipe
    // closes).
    let (done_tx, done) = std::sync::mpsc::channel::<()>();
    let writer = child.stdin.take().map(|mut stdin| {
        std::thread::spawn(move || {
            // A command that does not read its input is not an error.
            let _ = stdin.write_all(&json);
            let _ = done_tx.send(());
        })
    });
    let kill_group = || {
        let _ = latscope_platform::process::signal_group(
            pgid,
            latscope_platform::process::Signal::Kill,
        );
    };
    let t0 = Instant::now();
    let result = loop {
        match child.try_wait().map_err(|e| e.to_string())? {
            Some(s) if s.success() => break Ok(()),
            Some(s) => break Err(format!("'{cmd}' exited with {s}")),
            None if t0.elapsed() > timeout => {
                kill_group();
                let _ = child.kill();
                let _ = child.wait();
                break Err(format!(
                    "'{cmd}' ran longer than {timeout:?} and was killed with its process group"
                ));
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    // The shell has ended; something it left behind may still hold the
    // pipe without reading it. The writer gets what is left of the
    // deadline, then the group is killed, which closes the pipe.
    if let Some(w) = writer {
        let left = timeout.saturating_sub(t0.elapsed());
        if done.recv_timeout(left).is_err() {
            kill_group();
        }
        let _ = w.join();
    }
    result
}

fn snapshot(dir: &std::path::Path, job: &Job) -> Result<(), String> {
    let window = job
        .window
        .as_ref()
        .ok_or_else(|| "no trace window was kept for it".to_string())?;
    // Created 0700 where missing; refused when another user owns it or can
    // write to it (they could swap files under a root process).
    latscope_platform::files::private_dir(dir)
        .map_err(|e| format!("snapshot directory refused: {e}"))?;
    let doc = latscope_report::perfetto_trace(job.run, &job.episode, window);
    let path = dir.join(format!("run{}-episode{}.json", job.run.0, job.episode.seq));
    let text = serde_json::to_vec(&doc).map_err(|e| e.to_string())?;
    latscope_platform::files::write_atomically(&path, &text, 0o600)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// A sink that hands every checkpoint's episodes to the actions after
/// passing the checkpoint on (for `run` and `suite`; the monitor's sink
/// calls [`Actions::episodes`] itself).
pub struct ActionSink<'a> {
    pub inner: &'a mut dyn Sink,
    pub actions: &'a Actions,
}

impl Sink for ActionSink<'_> {
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
        self.actions.episodes(run, cell, &cp.episodes, &cp.windows);
        r
    }
    fn finish_run(
        &mut self,
        run: RunId,
        status: RunStatus,
        ended_unix: Nanos,
        notes: &[String],
    ) -> Result<(), SinkError> {
        self.inner.finish_run(run, status, ended_unix, notes)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use latscope_model::CpuId;

    fn episode(seq: u32) -> Episode {
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
            Arc::new(|_: &str| {}),
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
            .contains("3 ran, 0 failed, 2 over --action-limit"));
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
            Arc::new(move |l: &str| s2.lock().unwrap().push(l.to_string())),
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
        let e = snapshot(&open, &job).unwrap_err();
        assert!(e.contains("writable by other users"), "{e}");
        assert_eq!(std::fs::read_dir(&open).unwrap().count(), 0);
        let new = dir.path().join("new");
        snapshot(&new, &job).unwrap();
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&new), 0o700);
        assert_eq!(mode(&new.join("run2-episode5.json")), 0o600);
    }

    fn job_of(episode: Episode) -> Job {
        Job {
            run: RunId(1),
            episode,
            window: None,
        }
    }

    /// Whether any process of group `pgid` is still alive.
    fn group_alive(pgid: i32) -> bool {
        std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            std::fs::read_to_string(e.path().join("stat"))
                .ok()
                .and_then(|t| latscope_platform::process::ProcStat::parse(&t))
                .is_some_and(|st| st.pgid == pgid && st.state != 'Z')
        })
    }

    /// A command that reads nothing, sent an episode larger than the pipe
    /// holds, and one that leaves a child behind: the action ends at its
    /// deadline, with everything it started killed (the write used to
    /// block before the deadline began, hanging the actions thread).
    #[test]
    fn one_deadline_covers_the_write_and_kills_the_whole_group() {
        let mut big = episode(1);
        big.metric = "x".repeat(1 << 20);
        let t0 = Instant::now();
        let e = exec_within(
            "echo $$ > /dev/null; sleep 100 & sleep 100",
            &job_of(big),
            Duration::from_secs(1),
        )
        .unwrap_err();
        assert!(e.contains("killed with its process group"), "{e}");
        assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
        // A quick command that leaves a reader-less child holding the pipe
        // still ends by the deadline.
        let mut big = episode(2);
        big.metric = "x".repeat(1 << 20);
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pgid");
        // (Through fd 3: a background job of a script reads /dev/null.)
        let cmd = format!(
            "ps -o pgid= $$ > {}; exec 3<&0; sleep 100 <&3 & exit 0",
            pidfile.display()
        );
        let t0 = Instant::now();
        exec_within(&cmd, &job_of(big), Duration::from_secs(1)).unwrap();
        assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
        let pgid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        std::thread::sleep(Duration::from_millis(200));
        assert!(!group_alive(pgid), "group {pgid} outlived its action");
    }

    /// The command sees only the allowed environment and the episode's
    /// variables: not this process's (a store URL or `PGPASSWORD` would be
    /// among them in a real run; cargo's variables stand for them here).
    #[test]
    fn a_command_gets_only_the_allowed_environment() {
        assert!(std::env::vars().any(|(k, _)| k.starts_with("CARGO")));
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("env");
        exec_within(
            &format!("env > {}", out.display()),
            &job_of(episode(3)),
            Duration::from_secs(10),
        )
        .unwrap();
        let text = std::fs::read_to_string(&out).unwrap();
        // What `sh` itself sets.
        let shell = ["PWD", "SHLVL", "_", "OLDPWD"];
        for line in text.lines() {
            let key = line.split('=').next().unwrap();
            assert!(
                ACTION_ENV.contains(&key) || key.starts_with("LATSCOPE_") || shell.contains(&key),
                "{key} reached the command"
            );
        }
        assert!(text.contains("LATSCOPE_EPISODE=3"), "{text}");
    }
}
