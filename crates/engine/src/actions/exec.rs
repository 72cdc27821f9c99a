//! `exec:CMD`: one command per episode, the episode as JSON on its
//! standard input, within one deadline for the write and the wait, with a
//! cleared environment, in a process group of its own that is killed at
//! the deadline or, once the actions are closing, after a short grace.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::job::Job;

/// The environment a command inherits, by name: nothing else (no store
/// URL, no `PGPASSWORD`, no credentials of any other kind) reaches it.
pub const ACTION_ENV: [&str; 8] = [
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ",
];

/// How long a running command may go on once the actions are closing
/// (SIGTERM, the end of a run, new actions on SIGHUP): the process must
/// exit within systemd's stop timeout, and a command that needs longer
/// than its own deadline allows would hold the shutdown for 30 s.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// When an action must end: `timeout` after it began, or
/// [`SHUTDOWN_GRACE`] after `closing` was first seen set.
pub struct Deadline<'a> {
    pub timeout: Duration,
    pub closing: &'a AtomicBool,
    began: Instant,
    closing_seen: Option<Instant>,
}

impl<'a> Deadline<'a> {
    pub fn new(timeout: Duration, closing: &'a AtomicBool) -> Deadline<'a> {
        Deadline {
            timeout,
            closing,
            began: Instant::now(),
            closing_seen: None,
        }
    }

    /// What is left of the time, and why it ends.
    fn left(&mut self) -> (Duration, &'static str) {
        let now = Instant::now();
        let own = self.timeout.saturating_sub(now.duration_since(self.began));
        if self.closing.load(Ordering::Relaxed) {
            let seen = *self.closing_seen.get_or_insert(now);
            let grace = SHUTDOWN_GRACE.saturating_sub(now.duration_since(seen));
            if grace < own {
                return (grace, "was still running at shutdown");
            }
        }
        (own, "ran longer than its deadline")
    }
}

/// Runs `cmd` with the episode on its standard input; the whole action
/// (the write and the wait) ends by the deadline, its process group killed
/// when it would not.
pub fn exec_within(cmd: &str, job: &Job, mut deadline: Deadline) -> Result<(), String> {
    let json = serde_json::to_vec(&serde_json::json!({
        "run_id": job.run.0,
        "episode": job.episode,
    }))
    .map_err(|e| e.to_string())?;
    let mut child = command(cmd, job)
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
    let result = wait(&mut child, pgid, cmd, &mut deadline);
    // The shell has ended; something it left behind may still hold the
    // pipe without reading it. The writer gets what is left of the
    // deadline, then the group is killed, which closes the pipe.
    if let Some(w) = writer {
        if done.recv_timeout(deadline.left().0).is_err() {
            kill_group(pgid);
        }
        let _ = w.join();
    }
    result
}

/// `sh -c cmd` with only [`ACTION_ENV`] and the episode's variables, in a
/// process group of its own, the episode to come on its standard input.
fn command(cmd: &str, job: &Job) -> Command {
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
    command
}

/// Waits for the shell until the deadline; then kills its group.
fn wait(child: &mut Child, pgid: i32, cmd: &str, deadline: &mut Deadline) -> Result<(), String> {
    loop {
        match child.try_wait().map_err(|e| e.to_string())? {
            Some(s) if s.success() => return Ok(()),
            Some(s) => return Err(format!("'{cmd}' exited with {s}")),
            None => {
                let (left, why) = deadline.left();
                if left.is_zero() {
                    kill_group(pgid);
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!(
                        "'{cmd}' {why} and was killed with its process group"
                    ));
                }
                std::thread::sleep(left.min(Duration::from_millis(20)));
            }
        }
    }
}

fn kill_group(pgid: i32) {
    let _ =
        latscope_platform::process::signal_group(pgid, latscope_platform::process::Signal::Kill);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::actions::tests::episode;
    use latscope_model::{Episode, RunId};

    fn within(timeout: Duration) -> Deadline<'static> {
        static OPEN: AtomicBool = AtomicBool::new(false);
        Deadline::new(timeout, &OPEN)
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
            within(Duration::from_secs(1)),
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
        exec_within(&cmd, &job_of(big), within(Duration::from_secs(1))).unwrap();
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
            within(Duration::from_secs(10)),
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
