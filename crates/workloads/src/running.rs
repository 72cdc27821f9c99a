//! Starting, watching and stopping a workload's process groups.

use std::collections::VecDeque;
use std::fs;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use latscope_model::CpuSet;
use latscope_platform::process::{
    fs_free_bytes, live_group_pids, proc_io, spawn_in_group, stop_group, GroupSpawn, Signal,
};

use crate::check::check;
use crate::compile::write_tree;
use crate::helper::{helper_exe, HELPER_ARG};
use crate::plan::{
    mem_available, plan, work_base, GroupPlan, Launch, PlanEnv, VETH_SINK, VETH_SOURCE,
};
use crate::{LoadLevel, RtCounters, WorkloadError, WorkloadSpec};

/// How long a group gets between SIGTERM and SIGKILL when latscope stops it.
/// Longer than the guard's own grace, so a guard can finish its clean-up.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// Lines of a process's stderr kept to explain its death.
const TAIL_LINES: usize = 4;

/// A workload whose processes are running. Stop it with [`stop`]; dropping
/// it stops it too.
///
/// [`stop`]: RunningWorkload::stop
pub struct RunningWorkload {
    spec: WorkloadSpec,
    level: LoadLevel,
    groups: Vec<Group>,
    dirs: Vec<PathBuf>,
    died: Option<String>,
    started: Instant,
    outcome: Option<WorkloadOutcome>,
}

struct Group {
    pgid: i32,
    /// Parallel to `members`.
    children: Vec<Child>,
    members: Vec<Member>,
}

struct Member {
    label: String,
    pid: i32,
    netns: bool,
    tail: Arc<Mutex<VecDeque<String>>>,
}

/// How a workload ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadOutcome {
    /// The workload's short name ([`WorkloadSpec::name`]).
    pub workload: String,
    pub level: LoadLevel,
    /// From start (warm-up included) to stop.
    pub ran_for: Duration,
    /// Set when a process of the load died before the stop: the cell
    /// measured a partly unloaded machine. Same text [`RunningWorkload::poll`]
    /// gave.
    pub died: Option<String>,
    /// Some process ignored SIGTERM for the grace period and was killed.
    pub forced_kill: bool,
    /// Processes that could not be ended (stuck in the kernel). Normally empty.
    pub survivors: Vec<i32>,
    /// Temporary directories that could not be removed, and why.
    pub cleanup_errors: Vec<String>,
}

impl WorkloadOutcome {
    /// Ran to the end and left nothing behind.
    pub fn clean(&self) -> bool {
        self.died.is_none() && self.survivors.is_empty() && self.cleanup_errors.is_empty()
    }
}

/// Starts `spec` at `level` on `cpus` (every online CPU when empty), then
/// waits `warmup`, watching it: a load that dies during the warm-up is an
/// error, and everything started is stopped again.
///
/// Call [`check`] first for a clear message about missing programs (this
/// calls it too). The processes are children of a spawner thread that lives
/// as long as the process, so any thread may call this.
pub fn start(
    spec: &WorkloadSpec,
    level: LoadLevel,
    cpus: &CpuSet,
    warmup: Duration,
) -> Result<RunningWorkload, WorkloadError> {
    check(spec)?;
    let name = spec.name();
    let start_err = |what: String| WorkloadError::Start {
        workload: name.clone(),
        what,
    };
    let cpus = if cpus.is_empty() {
        latscope_platform::online_cpus().map_err(|e| start_err(e.to_string()))?
    } else {
        cpus.clone()
    };
    let base = work_base();
    let env = PlanEnv {
        work_dir: base.join(unique_dir_name(&name)),
        mem_available: mem_available(),
        disk_free: fs_free_bytes(&base).unwrap_or(u64::MAX),
    };
    let plan = plan(spec, level, &cpus, &env);
    let mut running = RunningWorkload {
        spec: spec.clone(),
        level,
        groups: Vec::new(),
        dirs: Vec::new(),
        died: None,
        started: Instant::now(),
        outcome: None,
    };
    // From here on an early return drops `running`, which stops whatever
    // was started and removes the directory.
    let work_dir = plan.work_dir.then(|| env.work_dir.clone());
    if let Some(dir) = &work_dir {
        fs::DirBuilder::new()
            .mode(0o700)
            .create(dir)
            .map_err(|e| start_err(format!("cannot create {}: {e}", dir.display())))?;
        running.dirs.push(dir.clone());
        if let Some((files, _)) = plan.compile_tree {
            write_tree(dir, files).map_err(|e| {
                start_err(format!("cannot write sources in {}: {e}", dir.display()))
            })?;
        }
    }
    for group in &plan.groups {
        running
            .spawn_group(group, work_dir.as_ref())
            .map_err(&start_err)?;
    }
    if plan.veth {
        running.link_veth().map_err(&start_err)?;
    }
    let deadline = Instant::now() + warmup;
    loop {
        if running.poll().is_some() {
            let detail = running.death_detail().unwrap_or_default();
            return Err(WorkloadError::DiedDuringWarmup {
                workload: name,
                detail,
            });
        }
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        thread::sleep((deadline - now).min(Duration::from_millis(50)));
    }
    Ok(running)
}

static DIR_SEQ: AtomicU32 = AtomicU32::new(0);

fn unique_dir_name(name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let seq = DIR_SEQ.fetch_add(1, Ordering::Relaxed);
    format!("latscope-{clean}-{}-{seq}", std::process::id())
}

impl RunningWorkload {
    fn spawn_group(&mut self, plan: &GroupPlan, work_dir: Option<&PathBuf>) -> Result<(), String> {
        self.groups.push(Group {
            pgid: 0,
            children: Vec::new(),
            members: Vec::new(),
        });
        let exe = helper_exe();
        for launch in &plan.members {
            let Some(group) = self.groups.last_mut() else {
                return Err("internal: no group".into());
            };
            let join = (group.pgid > 0).then_some(group.pgid);
            let mut cmd = Command::new(&exe);
            cmd.arg(HELPER_ARG);
            let (label, opts, netns) = match launch {
                Launch::Helper { args, cpus, netns } => {
                    cmd.args(args);
                    let mut label = args.first().cloned().unwrap_or_default();
                    if label == "cpu-spin" {
                        label = format!("cpu-spin on CPU {cpus}");
                    }
                    let opts = GroupSpawn {
                        join,
                        death_signal: Signal::Kill,
                        new_net_namespace: *netns,
                        cpus: Some(cpus.clone()),
                    };
                    (label, opts, *netns)
                }
                Launch::Guarded {
                    program,
                    args,
                    repeat,
                    cpus,
                } => {
                    cmd.arg("guard");
                    if *repeat {
                        cmd.arg("--repeat");
                    }
                    if let Some(dir) = work_dir {
                        cmd.arg("--remove-dir").arg(dir).current_dir(dir);
                    }
                    cmd.arg("--").arg(program).args(args);
                    // A make started from a make would find a jobserver
                    // that is not there for it.
                    for var in ["MAKEFLAGS", "MFLAGS", "MAKELEVEL"] {
                        cmd.env_remove(var);
                    }
                    let opts = GroupSpawn {
                        join,
                        // The guard cleans up its group on SIGTERM; SIGKILL
                        // would leave its children running.
                        death_signal: Signal::Term,
                        new_net_namespace: false,
                        cpus: Some(cpus.clone()),
                    };
                    let base = program.rsplit('/').next().unwrap_or(program).to_string();
                    (base, opts, false)
                }
            };
            cmd.stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            let mut child = spawn_in_group(cmd, &opts).map_err(|e| e.to_string())?;
            let pid = child.id() as i32;
            let tail = Arc::new(Mutex::new(VecDeque::new()));
            if let Some(stderr) = child.stderr.take() {
                let tail = Arc::clone(&tail);
                // Drains the pipe so a chatty program never blocks on it,
                // keeping the last lines to explain a death.
                let _ = thread::Builder::new()
                    .name("workload-stderr".into())
                    .spawn(move || {
                        for line in BufReader::new(stderr).lines() {
                            let Ok(line) = line else { break };
                            if line.trim().is_empty() {
                                continue;
                            }
                            if let Ok(mut t) = tail.lock() {
                                if t.len() == TAIL_LINES {
                                    t.pop_front();
                                }
                                t.push_back(line);
                            }
                        }
                    });
            }
            if group.pgid == 0 {
                group.pgid = pid;
            }
            group.children.push(child);
            group.members.push(Member {
                label,
                pid,
                netns,
                tail,
            });
        }
        Ok(())
    }

    /// Creates the veth pair with one end in each private namespace of the
    /// `net` group; the ends configure themselves once it appears.
    fn link_veth(&mut self) -> Result<(), String> {
        let find = |label: &str| {
            self.groups
                .iter()
                .flat_map(|g| &g.members)
                .find(|m| m.label == label)
                .map(|m| m.pid.to_string())
        };
        let (Some(source), Some(sink)) = (find("net-source"), find("net-sink")) else {
            return Err("internal: net group without its two ends".into());
        };
        let out = Command::new("ip")
            .args(["link", "add", VETH_SOURCE, "netns", &source, "type", "veth"])
            .args(["peer", "name", VETH_SINK, "netns", &sink])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run ip: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "cannot create the veth pair: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    }

    /// None while every process latscope started runs; once one has ended,
    /// a one-line description ("workload disk: stress-ng (pid 123) exited
    /// with status 1: ...last lines of its stderr"), and the same text on
    /// every later call. Cheap: one `waitpid` per process.
    pub fn poll(&mut self) -> Option<String> {
        if self.outcome.is_some() {
            return self.died.clone();
        }
        if self.died.is_none() {
            if let Some(detail) = self.death_detail() {
                self.died = Some(format!("workload {}: {detail}", self.spec.name()));
            }
        }
        self.died.clone()
    }

    /// The first member found dead, described without the workload name.
    fn death_detail(&mut self) -> Option<String> {
        for group in &mut self.groups {
            for (child, member) in group.children.iter_mut().zip(&group.members) {
                let status = match child.try_wait() {
                    Ok(Some(status)) => status,
                    Ok(None) => continue,
                    Err(e) => {
                        return Some(format!(
                            "{} (pid {}) cannot be watched: {e}",
                            member.label, member.pid
                        ))
                    }
                };
                // Give the stderr reader a moment to catch the last words.
                thread::sleep(Duration::from_millis(50));
                let tail: Vec<String> = member
                    .tail
                    .lock()
                    .map(|t| t.iter().cloned().collect())
                    .unwrap_or_default();
                let mut text = format!("{} (pid {}) {}", member.label, member.pid, how(status));
                if !tail.is_empty() {
                    let mut last = tail.join(" | ");
                    if last.len() > 400 {
                        let mut cut = 400;
                        while !last.is_char_boundary(cut) {
                            cut -= 1;
                        }
                        last.truncate(cut);
                        last.push_str("...");
                    }
                    text.push_str(": ");
                    text.push_str(&last);
                }
                return Some(text);
            }
        }
        None
    }

    /// The live processes of the workload: every member of its process
    /// groups, children of the programs latscope started included.
    pub fn pids(&self) -> Vec<i32> {
        self.pgids().into_iter().flat_map(live_group_pids).collect()
    }

    /// The workload's process groups.
    pub fn pgids(&self) -> Vec<i32> {
        if self.outcome.is_some() {
            return Vec::new();
        }
        self.groups
            .iter()
            .map(|g| g.pgid)
            .filter(|&p| p > 0)
            .collect()
    }

    /// Pids of processes that run in private network namespaces (the two
    /// ends of `net`'s veth pair): `/proc/<pid>/net/dev` shows the traffic
    /// there, which the machine's own `/proc/net/dev` does not.
    pub fn netns_pids(&self) -> Vec<i32> {
        self.groups
            .iter()
            .flat_map(|g| &g.members)
            .filter(|m| m.netns)
            .map(|m| m.pid)
            .collect()
    }

    /// Bytes pushed through pseudo-terminals so far by the `tty` workload
    /// (read from the slaves: the pump's `rchar` in `/proc/<pid>/io`); None
    /// for other workloads. The kernel keeps no system-wide pty counter, so
    /// characterization takes the tty traffic from here.
    pub fn pty_bytes(&self) -> Option<u64> {
        if self.spec != WorkloadSpec::Tty {
            return None;
        }
        Some(
            self.groups
                .iter()
                .flat_map(|g| &g.members)
                .filter(|m| m.label == "tty-pump")
                .filter_map(|m| proc_io(m.pid))
                .map(|io| io.rchar)
                .sum(),
        )
    }

    /// The run time and sleeps of an `rt:` workload's threads so far; None
    /// for other workloads.
    pub fn rt_counters(&self) -> Option<RtCounters> {
        if !matches!(self.spec, WorkloadSpec::Rt(_)) {
            return None;
        }
        let mut counters = RtCounters::default();
        self.groups
            .iter()
            .flat_map(|g| &g.members)
            .filter(|m| m.label == "rt-load")
            .for_each(|m| counters.add_pid(m.pid));
        Some(counters)
    }

    /// Temporary directories the workload works in (removed at the stop).
    pub fn work_dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    pub fn spec(&self) -> &WorkloadSpec {
        &self.spec
    }

    pub fn level(&self) -> LoadLevel {
        self.level
    }

    /// Stops every process group (SIGTERM, SIGKILL after a grace period),
    /// reaps, and removes the temporary directories; network namespaces go
    /// with their last process. Safe to call on a load that died.
    pub fn stop(mut self) -> WorkloadOutcome {
        self.shutdown()
    }

    fn shutdown(&mut self) -> WorkloadOutcome {
        if let Some(outcome) = &self.outcome {
            return outcome.clone();
        }
        // A death just before the stop still counts.
        let _ = self.poll();
        let mut forced = false;
        let mut survivors = Vec::new();
        for group in &mut self.groups {
            if group.pgid > 0 {
                let r = stop_group(group.pgid, &mut group.children, STOP_GRACE);
                forced |= r.forced;
                survivors.extend(r.survivors);
            }
        }
        let mut cleanup_errors = Vec::new();
        for dir in &self.dirs {
            match fs::remove_dir_all(dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => cleanup_errors.push(format!("cannot remove {}: {e}", dir.display())),
            }
        }
        let outcome = WorkloadOutcome {
            workload: self.spec.name(),
            level: self.level,
            ran_for: self.started.elapsed(),
            died: self.died.clone(),
            forced_kill: forced,
            survivors,
            cleanup_errors,
        };
        self.outcome = Some(outcome.clone());
        outcome
    }
}

impl Drop for RunningWorkload {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn how(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(s)) => format!("was killed by signal {s}{}", signal_name(s)),
        _ => "ended".into(),
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        1 => " (SIGHUP)",
        2 => " (SIGINT)",
        6 => " (SIGABRT)",
        9 => " (SIGKILL)",
        11 => " (SIGSEGV)",
        15 => " (SIGTERM)",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_descriptions() {
        assert_eq!(how(ExitStatus::from_raw(1 << 8)), "exited with status 1");
        assert_eq!(
            how(ExitStatus::from_raw(9)),
            "was killed by signal 9 (SIGKILL)"
        );
    }

    #[test]
    fn idle_starts_and_stops_at_once() {
        let w = start(
            &WorkloadSpec::Idle,
            LoadLevel::Heavy,
            &CpuSet::new(),
            Duration::ZERO,
        )
        .unwrap();
        assert!(w.pids().is_empty());
        let o = w.stop();
        assert!(o.clean());
        assert_eq!(o.workload, "idle");
    }

    #[test]
    fn a_running_workload_can_move_between_threads() {
        fn assert_send<T: Send>() {}
        assert_send::<RunningWorkload>();
        assert_send::<WorkloadOutcome>();
    }

    #[test]
    fn dir_names_are_unique_and_plain() {
        let a = unique_dir_name("custom:a b");
        let b = unique_dir_name("custom:a b");
        assert_ne!(a, b);
        assert!(a.starts_with("latscope-custom-a-b-"));
    }
}
