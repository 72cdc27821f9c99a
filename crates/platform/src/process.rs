//! Child processes that cannot outlive latscope: background loads.
//!
//! A workload runs in process groups of its own, so that one signal reaches
//! every process of it and none of latscope's. Each process latscope starts
//! ([`spawn_in_group`]) becomes the leader of a new group (or joins a group
//! started earlier) and asks the kernel for a parent-death signal, so that a
//! `kill -9` of latscope takes the load down with it. Programs that start
//! children of their own (stress-ng, make) run under a guard process that
//! watches for latscope's death and then ends its whole group; the guard's
//! tools are here too ([`set_child_subreaper`], [`reap_any`], [`descendants`]).
//!
//! The parent-death signal belongs to the *thread* that forked the child, not
//! to the process: a child forked by a short-lived thread would be killed
//! when that thread ends. So every spawn happens on one spawner thread that
//! lives as long as the process does.
//!
//! The `/proc` readers ([`proc_stat`], [`proc_io`], [`group_pids`]) serve
//! lifecycle checks ("no process of the group is left") and tests that check
//! a load really ran. [`open_pty`] gives a raw pseudo-terminal pair for the
//! tty load.

use std::collections::HashMap;
use std::ffi::CString;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::mem;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command};
use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use latscope_model::CpuSet;

use crate::error::PlatformError;

/// The signals latscope sends to or asks for on behalf of its children.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    Term,
    Kill,
    Int,
    Hup,
}

impl Signal {
    pub fn raw(self) -> libc::c_int {
        match self {
            Signal::Term => libc::SIGTERM,
            Signal::Kill => libc::SIGKILL,
            Signal::Int => libc::SIGINT,
            Signal::Hup => libc::SIGHUP,
        }
    }
}

/// How [`spawn_in_group`] sets up the child before it runs the program.
#[derive(Clone, Debug)]
pub struct GroupSpawn {
    /// Join this existing group instead of leading a new one.
    pub join: Option<i32>,
    /// Sent to the child when latscope dies. `Kill` for programs without
    /// children; a guard that must clean up its group asks for `Term`.
    pub death_signal: Signal,
    /// Run the child in a new, empty network namespace (needs root). The
    /// namespace lives as long as a process is in it.
    pub new_net_namespace: bool,
    /// Restrict the child (and everything it starts) to these CPUs.
    pub cpus: Option<CpuSet>,
}

impl Default for GroupSpawn {
    fn default() -> GroupSpawn {
        GroupSpawn {
            join: None,
            death_signal: Signal::Kill,
            new_net_namespace: false,
            cpus: None,
        }
    }
}

/// The kernel's timer slack for a normal task (`init_task`'s 50 µs).
const DEFAULT_TIMER_SLACK_NS: libc::c_ulong = 50_000;

/// A command and the answer channel, handed to the spawner thread.
type SpawnJob = (Command, mpsc::Sender<io::Result<Child>>);

/// The spawner thread's queue, started on first use. `Sender` is `Sync`, but
/// a mutex keeps this working on older toolchains too.
static SPAWNER: OnceLock<Mutex<mpsc::Sender<SpawnJob>>> = OnceLock::new();

fn spawner() -> Result<mpsc::Sender<SpawnJob>, PlatformError> {
    if let Some(tx) = SPAWNER.get() {
        return tx
            .lock()
            .map(|tx| tx.clone())
            .map_err(|_| PlatformError::Invalid("spawner thread queue poisoned".into()));
    }
    let (tx, rx) = mpsc::channel::<SpawnJob>();
    thread::Builder::new()
        .name("latscope-spawn".into())
        .spawn(move || {
            // Lives until the process ends: the parent-death signal of every
            // child it forks fires only then. It inherited the scheduling of
            // whichever thread started it; a spawner at real-time priority
            // would make each fork a latency event of its own.
            let _ = crate::set_scheduler(crate::SchedPolicy::Other, 0);
            for (mut cmd, answer) in rx {
                let _ = answer.send(cmd.spawn());
            }
        })
        .map_err(|source| PlatformError::Os {
            what: "cannot start the spawner thread".into(),
            source,
        })?;
    // Another thread may have won the race; its queue is as good as ours,
    // and our thread ends when `tx` is dropped.
    let cell = SPAWNER.get_or_init(|| Mutex::new(tx));
    cell.lock()
        .map(|tx| tx.clone())
        .map_err(|_| PlatformError::Invalid("spawner thread queue poisoned".into()))
}

/// Starts `cmd` as the leader of a new process group (or a member of
/// `opts.join`) that receives `opts.death_signal` when latscope dies.
///
/// If latscope died between the fork and the `prctl` (the parent-death
/// race), the child notices that its parent changed and fails instead of
/// running as an orphan.
pub fn spawn_in_group(mut cmd: Command, opts: &GroupSpawn) -> Result<Child, PlatformError> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    if let Some(pgid) = opts.join {
        check_group_id(pgid)?;
    }
    let join: libc::pid_t = opts.join.unwrap_or(0);
    let death: libc::c_ulong = opts.death_signal.raw() as libc::c_ulong;
    let netns = opts.new_net_namespace;
    // SAFETY: getpid takes no arguments and cannot fail.
    let parent: libc::pid_t = unsafe { libc::getpid() };
    let affinity: Option<libc::cpu_set_t> = match &opts.cpus {
        None => None,
        Some(cpus) => {
            // SAFETY: all-zero is the empty cpu_set_t.
            let mut set: libc::cpu_set_t = unsafe { mem::zeroed() };
            for cpu in cpus.iter() {
                let idx = cpu.0 as usize;
                if idx >= libc::CPU_SETSIZE as usize {
                    return Err(PlatformError::Invalid(format!("CPU {cpu} out of range")));
                }
                // SAFETY: the index is checked against CPU_SETSIZE above.
                unsafe { libc::CPU_SET(idx, &mut set) };
            }
            Some(set)
        }
    };
    let setup = move || -> io::Result<()> {
        // Runs in the forked child before exec: only async-signal-safe
        // system calls, no allocation, errors as raw errno values.
        // SAFETY: setpgid/prctl/getppid/sched_setscheduler/unshare/
        // sched_setaffinity take plain values or pointers to locals of this
        // closure (`normal`, the copied `affinity`) that outlive each call;
        // they change only the calling (child) process.
        unsafe {
            if libc::setpgid(0, join) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::prctl(libc::PR_SET_PDEATHSIG, death, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                // latscope died before the prctl could take effect.
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            // A load runs at normal priority with the default timer slack,
            // whatever the thread that started the spawner had.
            let normal = libc::sched_param { sched_priority: 0 };
            if libc::sched_setscheduler(0, libc::SCHED_OTHER, &normal) != 0 {
                return Err(io::Error::last_os_error());
            }
            // Not 0 ("back to the default"): a forked task's default is its
            // parent's slack at the fork.
            let default_slack: libc::c_ulong = DEFAULT_TIMER_SLACK_NS;
            if libc::prctl(libc::PR_SET_TIMERSLACK, default_slack, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            if netns && libc::unshare(libc::CLONE_NEWNET) != 0 {
                return Err(io::Error::last_os_error());
            }
            if let Some(set) = &affinity {
                if libc::sched_setaffinity(0, mem::size_of::<libc::cpu_set_t>(), set) != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
        }
        Ok(())
    };
    // SAFETY: the closure makes only async-signal-safe system calls and does
    // not allocate, as a pre_exec hook in a forked child must.
    unsafe {
        cmd.pre_exec(setup);
    }
    let (tx, rx) = mpsc::channel();
    spawner()?
        .send((cmd, tx))
        .map_err(|_| PlatformError::Invalid("spawner thread has ended".into()))?;
    let answer = rx
        .recv()
        .map_err(|_| PlatformError::Invalid("spawner thread has ended".into()))?;
    answer.map_err(|source| PlatformError::Os {
        what: format!("cannot start {program}"),
        source,
    })
}

/// Refuses the ids that `kill(2)` would read as "every process" or "my own
/// group", and latscope's own group: a stop must never reach latscope or the
/// shell that started it.
fn check_group_id(pgid: i32) -> Result<(), PlatformError> {
    if pgid <= 1 {
        return Err(PlatformError::Invalid(format!(
            "refusing to signal process group {pgid}"
        )));
    }
    if pgid == own_pgid() {
        return Err(PlatformError::Invalid(format!(
            "refusing to signal latscope's own process group {pgid}"
        )));
    }
    Ok(())
}

/// Sends `sig` to every process of group `pgid`. `Ok(false)` when the group
/// no longer exists.
pub fn signal_group(pgid: i32, sig: Signal) -> Result<bool, PlatformError> {
    check_group_id(pgid)?;
    // SAFETY: kill takes plain values; a negative pid > 1 in magnitude names
    // exactly one process group (checked above).
    let rc = unsafe { libc::kill(-pgid, sig.raw()) };
    signal_result(rc, || format!("cannot signal process group {pgid}"))
}

/// Sends `sig` to one process. `Ok(false)` when it no longer exists.
pub fn signal_process(pid: i32, sig: Signal) -> Result<bool, PlatformError> {
    if pid <= 0 {
        return Err(PlatformError::Invalid(format!(
            "refusing to signal process {pid}"
        )));
    }
    // SAFETY: kill takes plain values; a positive pid names one process.
    let rc = unsafe { libc::kill(pid, sig.raw()) };
    signal_result(rc, || format!("cannot signal process {pid}"))
}

fn signal_result(rc: libc::c_int, what: impl FnOnce() -> String) -> Result<bool, PlatformError> {
    if rc == 0 {
        return Ok(true);
    }
    let err = io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::ESRCH) {
        return Ok(false);
    }
    Err(PlatformError::Os {
        what: what(),
        source: err,
    })
}

/// The process group of the calling process.
pub fn own_pgid() -> i32 {
    // SAFETY: getpgrp takes no arguments and cannot fail.
    unsafe { libc::getpgrp() }
}

/// What [`stop_group`] had to do.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupStop {
    /// SIGTERM was not enough within the grace period: SIGKILL was sent.
    pub forced: bool,
    /// Processes of the group still alive (not zombies) at the end. Empty
    /// unless a process is stuck in the kernel.
    pub survivors: Vec<i32>,
}

/// Ends process group `pgid`: SIGTERM to the whole group, up to `grace` for
/// it to go, then SIGKILL. Reaps `children` (the members latscope started
/// itself) and waits until no live member is left, a little longer after a
/// SIGKILL. Idempotent: a group that is gone already is simply reaped.
pub fn stop_group(pgid: i32, children: &mut [Child], grace: Duration) -> GroupStop {
    let mut result = GroupStop::default();
    if check_group_id(pgid).is_err() {
        return result;
    }
    let _ = signal_group(pgid, Signal::Term);
    let mut deadline = Instant::now() + grace;
    loop {
        let mut all_reaped = true;
        for child in children.iter_mut() {
            if let Ok(None) = child.try_wait() {
                all_reaped = false;
            }
        }
        let live = live_group_pids(pgid);
        if all_reaped && live.is_empty() {
            break;
        }
        if Instant::now() >= deadline {
            if result.forced {
                result.survivors = live;
                break;
            }
            result.forced = true;
            let _ = signal_group(pgid, Signal::Kill);
            deadline = Instant::now() + Duration::from_secs(3);
        }
        thread::sleep(Duration::from_millis(10));
    }
    result
}

/// One line of `/proc/<pid>/stat`, the fields latscope uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcStat {
    pub pid: i32,
    pub comm: String,
    /// `R`, `S`, `D`, `Z`, ...
    pub state: char,
    pub ppid: i32,
    pub pgid: i32,
    /// CPU time in clock ticks ([`clock_ticks_per_sec`]).
    pub utime: u64,
    pub stime: u64,
    /// CPU time of waited-for children, in clock ticks.
    pub cutime: u64,
    pub cstime: u64,
}

impl ProcStat {
    /// Parses the text of `/proc/<pid>/stat`. The command name is in
    /// parentheses and may itself contain spaces and parentheses, so the
    /// fields are counted from the last `)`.
    pub fn parse(text: &str) -> Option<ProcStat> {
        let open = text.find('(')?;
        let close = text.rfind(')')?;
        let pid = text.get(..open)?.trim().parse().ok()?;
        let comm = text.get(open + 1..close)?.to_string();
        let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
        let num = |i: usize| rest.get(i).and_then(|s| s.parse::<u64>().ok());
        let int = |i: usize| rest.get(i).and_then(|s| s.parse::<i32>().ok());
        Some(ProcStat {
            pid,
            comm,
            state: rest.first()?.chars().next()?,
            ppid: int(1)?,
            pgid: int(2)?,
            utime: num(11)?,
            stime: num(12)?,
            cutime: num(13)?,
            cstime: num(14)?,
        })
    }

    /// Own plus waited-for children's CPU time, in clock ticks.
    pub fn total_ticks(&self) -> u64 {
        self.utime + self.stime + self.cutime + self.cstime
    }
}

/// `/proc/<pid>/stat`, or None when the process is gone.
pub fn proc_stat(pid: i32) -> Option<ProcStat> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    ProcStat::parse(&text)
}

/// Every process in `/proc`, as far as it could be read (processes come and
/// go while the directory is listed).
pub fn all_processes() -> Vec<ProcStat> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(proc_stat)
        .collect()
}

/// The pids of group `pgid`, zombies included.
pub fn group_pids(pgid: i32) -> Vec<i32> {
    all_processes()
        .into_iter()
        .filter(|p| p.pgid == pgid)
        .map(|p| p.pid)
        .collect()
}

/// The pids of group `pgid` that are still running (not zombies).
pub fn live_group_pids(pgid: i32) -> Vec<i32> {
    all_processes()
        .into_iter()
        .filter(|p| p.pgid == pgid && p.state != 'Z')
        .map(|p| p.pid)
        .collect()
}

/// Every descendant of `pid` (children, their children, ...), from one
/// snapshot of `/proc`.
pub fn descendants(pid: i32) -> Vec<i32> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for p in all_processes() {
        children.entry(p.ppid).or_default().push(p.pid);
    }
    let mut out = Vec::new();
    let mut todo = vec![pid];
    while let Some(p) = todo.pop() {
        if let Some(kids) = children.get(&p) {
            for &k in kids {
                // A pid cannot be its own ancestor, but a snapshot taken
                // while pids are reused could claim so; never loop.
                if k != pid && !out.contains(&k) {
                    out.push(k);
                    todo.push(k);
                }
            }
        }
    }
    out
}

/// `/proc/<pid>/io`: bytes through read/write-like calls and to storage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcIo {
    /// Bytes passed to read-like calls (files, pipes, ttys, sockets read with read).
    pub rchar: u64,
    /// Bytes passed to write-like calls.
    pub wchar: u64,
    /// Bytes this process caused to be fetched from storage.
    pub read_bytes: u64,
    /// Bytes this process caused to be sent to storage.
    pub write_bytes: u64,
}

impl ProcIo {
    pub fn parse(text: &str) -> ProcIo {
        let mut io = ProcIo::default();
        for line in text.lines() {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let Ok(v) = value.trim().parse::<u64>() else {
                continue;
            };
            match key.trim() {
                "rchar" => io.rchar = v,
                "wchar" => io.wchar = v,
                "read_bytes" => io.read_bytes = v,
                "write_bytes" => io.write_bytes = v,
                _ => {}
            }
        }
        io
    }
}

/// `/proc/<pid>/io`, or None when the process is gone or it is not readable.
pub fn proc_io(pid: i32) -> Option<ProcIo> {
    fs::read_to_string(format!("/proc/{pid}/io"))
        .ok()
        .map(|t| ProcIo::parse(&t))
}

/// Clock ticks per second, the unit of [`ProcStat`] CPU times.
pub fn clock_ticks_per_sec() -> u64 {
    // SAFETY: sysconf takes a plain value and touches no memory.
    let n = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if n > 0 {
        n as u64
    } else {
        100
    }
}

/// Makes the calling process the reaper of its orphaned descendants: when a
/// process below it loses its parent, it is re-parented here instead of to
/// init, so it can be found and ended.
pub fn set_child_subreaper() -> Result<(), PlatformError> {
    let on: libc::c_ulong = 1;
    // SAFETY: PR_SET_CHILD_SUBREAPER takes one integer argument by value.
    let rc = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, on, 0, 0, 0) };
    if rc != 0 {
        return Err(PlatformError::last_os("cannot become a child subreaper"));
    }
    Ok(())
}

/// How a reaped process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitKind {
    Code(i32),
    Signal(i32),
}

/// Reaps one ended child of the calling process without blocking: its pid
/// and how it ended, or None when no child has ended (or there is none).
///
/// It reaps *any* child, so a caller using it must not also wait for a
/// `std::process::Child` of its own (that child would already be gone).
pub fn reap_any() -> Option<(i32, ExitKind)> {
    let mut status: libc::c_int = 0;
    // SAFETY: `status` is a valid, writable int for the duration of the call.
    let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
    if pid <= 0 {
        return None;
    }
    let kind = if libc::WIFEXITED(status) {
        ExitKind::Code(libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        ExitKind::Signal(libc::WTERMSIG(status))
    } else {
        ExitKind::Code(-1)
    };
    Some((pid, kind))
}

/// A flag set by SIGTERM, SIGINT or SIGHUP, which then no longer end the
/// process: for a guard that must clean up before it goes, however many
/// times it is asked to.
pub fn termination_flag() -> Result<Arc<AtomicBool>, PlatformError> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        signal_hook::flag::register(sig, Arc::clone(&flag)).map_err(|source| {
            PlatformError::Os {
                what: "cannot install signal handler".into(),
                source,
            }
        })?;
    }
    Ok(flag)
}

/// A pseudo-terminal pair with the slave in raw mode (no echo, no line
/// editing, no newline translation), so bytes written to one side arrive
/// unchanged on the other.
pub struct PtyPair {
    pub master: File,
    pub slave: File,
    /// `/dev/pts/N`.
    pub slave_path: String,
}

/// Opens a new pseudo-terminal pair (`posix_openpt`, `grantpt`, `unlockpt`,
/// `ptsname_r`), neither side becoming a controlling terminal.
pub fn open_pty() -> Result<PtyPair, PlatformError> {
    // SAFETY: posix_openpt takes flags by value and returns a new fd or -1.
    let raw = unsafe { libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC) };
    if raw < 0 {
        return Err(PlatformError::last_os("cannot open a pseudo-terminal"));
    }
    // SAFETY: `raw` is a freshly opened fd that nothing else owns.
    let master = unsafe { OwnedFd::from_raw_fd(raw) };
    let mut name = [0 as libc::c_char; 128];
    // SAFETY: grantpt/unlockpt take the master fd; ptsname_r writes a
    // NUL-terminated name of at most `name.len()` bytes into `name`.
    let rc = unsafe {
        if libc::grantpt(raw) != 0 || libc::unlockpt(raw) != 0 {
            -1
        } else {
            libc::ptsname_r(raw, name.as_mut_ptr(), name.len())
        }
    };
    if rc != 0 {
        return Err(PlatformError::last_os("cannot unlock the pseudo-terminal"));
    }
    let bytes: Vec<u8> = name
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    let slave_path = String::from_utf8_lossy(&bytes).into_owned();
    let slave = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOCTTY)
        .open(&slave_path)
        .map_err(|source| PlatformError::Os {
            what: format!("cannot open {slave_path}"),
            source,
        })?;
    set_raw(&slave, &slave_path)?;
    Ok(PtyPair {
        master: File::from(master),
        slave,
        slave_path,
    })
}

fn set_raw(tty: &File, path: &str) -> Result<(), PlatformError> {
    use std::os::fd::AsRawFd;
    let fd = tty.as_raw_fd();
    // SAFETY: `t` is a plain struct filled by tcgetattr before cfmakeraw and
    // tcsetattr read it; `fd` is an open terminal owned by `tty`.
    let rc = unsafe {
        let mut t: libc::termios = mem::zeroed();
        if libc::tcgetattr(fd, &mut t) != 0 {
            -1
        } else {
            libc::cfmakeraw(&mut t);
            libc::tcsetattr(fd, libc::TCSANOW, &t)
        }
    };
    if rc != 0 {
        return Err(PlatformError::last_os(format!("cannot set {path} raw")));
    }
    Ok(())
}

/// Bytes available to an unprivileged writer on the file system of `path`.
pub fn fs_free_bytes(path: &Path) -> Result<u64, PlatformError> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| PlatformError::Invalid(format!("bad path {}", path.display())))?;
    // SAFETY: `c` is a NUL-terminated path that outlives the call; `st` is a
    // writable statvfs the call fills in.
    let (rc, st) = unsafe {
        let mut st: libc::statvfs = mem::zeroed();
        let rc = libc::statvfs(c.as_ptr(), &mut st);
        (rc, st)
    };
    if rc != 0 {
        return Err(PlatformError::last_os(format!(
            "cannot read free space of {}",
            path.display()
        )));
    }
    // fsblkcnt_t and c_ulong are 32 bits on some targets.
    #[allow(clippy::unnecessary_cast)]
    let (avail, frsize) = (st.f_bavail as u64, st.f_frsize as u64);
    Ok(avail.saturating_mul(frsize))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn parses_stat_with_odd_command_names() {
        let text = "1234 (a (b) c) S 1 1234 1234 0 -1 4194304 10 0 0 0 7 3 2 1 20 0 1 0 100 0 0";
        let s = ProcStat::parse(text).unwrap();
        assert_eq!(s.pid, 1234);
        assert_eq!(s.comm, "a (b) c");
        assert_eq!(s.state, 'S');
        assert_eq!(s.ppid, 1);
        assert_eq!(s.pgid, 1234);
        assert_eq!((s.utime, s.stime, s.cutime, s.cstime), (7, 3, 2, 1));
        assert_eq!(s.total_ticks(), 13);
        assert!(ProcStat::parse("garbage").is_none());
    }

    #[test]
    fn parses_io() {
        let io = ProcIo::parse(
            "rchar: 10\nwchar: 20\nsyscr: 1\nsyscw: 2\nread_bytes: 30\nwrite_bytes: 40\n",
        );
        assert_eq!(
            io,
            ProcIo {
                rchar: 10,
                wchar: 20,
                read_bytes: 30,
                write_bytes: 40
            }
        );
    }

    #[test]
    fn refuses_dangerous_group_ids() {
        assert!(signal_group(0, Signal::Term).is_err());
        assert!(signal_group(1, Signal::Term).is_err());
        assert!(signal_group(-5, Signal::Term).is_err());
        assert!(signal_group(own_pgid(), Signal::Term).is_err());
        assert!(signal_process(0, Signal::Term).is_err());
    }

    #[test]
    fn spawned_child_leads_its_group_and_stops() {
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let child = spawn_in_group(cmd, &GroupSpawn::default()).unwrap();
        let pid = child.id() as i32;
        let stat = proc_stat(pid).unwrap();
        assert_eq!(stat.pgid, pid);
        // A second member joins the group.
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let opts = GroupSpawn {
            join: Some(pid),
            ..GroupSpawn::default()
        };
        let second = spawn_in_group(cmd, &opts).unwrap();
        assert_eq!(proc_stat(second.id() as i32).unwrap().pgid, pid);
        let mut members = group_pids(pid);
        members.sort_unstable();
        let mut want = vec![pid, second.id() as i32];
        want.sort_unstable();
        assert_eq!(members, want);
        let mut children = vec![child, second];
        let stop = stop_group(pid, &mut children, Duration::from_secs(2));
        assert!(!stop.forced);
        assert!(stop.survivors.is_empty());
        assert!(group_pids(pid).is_empty());
        // Idempotent.
        let again = stop_group(pid, &mut children, Duration::from_millis(10));
        assert_eq!(again, GroupStop::default());
    }

    #[test]
    fn stubborn_group_gets_sigkill() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "trap '' TERM; sleep 30 & wait"]);
        let child = spawn_in_group(cmd, &GroupSpawn::default()).unwrap();
        let pgid = child.id() as i32;
        thread::sleep(Duration::from_millis(200));
        let mut children = vec![child];
        let stop = stop_group(pgid, &mut children, Duration::from_millis(300));
        assert!(stop.forced);
        assert!(stop.survivors.is_empty());
        assert!(live_group_pids(pgid).is_empty());
    }

    #[test]
    fn spawn_from_a_short_lived_thread_survives_the_thread() {
        let child = thread::spawn(|| {
            let mut cmd = Command::new("sleep");
            cmd.arg("30");
            spawn_in_group(cmd, &GroupSpawn::default()).unwrap()
        })
        .join()
        .unwrap();
        thread::sleep(Duration::from_millis(200));
        let pid = child.id() as i32;
        let mut children = vec![child];
        assert!(
            children[0].try_wait().unwrap().is_none(),
            "child died with its thread"
        );
        stop_group(pid, &mut children, Duration::from_secs(1));
    }

    #[test]
    fn affinity_applies_to_the_child() {
        let cpu0: CpuSet = CpuSet::parse("0").unwrap();
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let opts = GroupSpawn {
            cpus: Some(cpu0),
            ..GroupSpawn::default()
        };
        let child = spawn_in_group(cmd, &opts).unwrap();
        let pid = child.id() as i32;
        let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let line = status
            .lines()
            .find(|l| l.starts_with("Cpus_allowed_list:"))
            .unwrap();
        assert_eq!(line.split_whitespace().nth(1), Some("0"));
        stop_group(pid, &mut [child], Duration::from_secs(1));
    }

    #[test]
    fn child_runs_at_normal_priority_with_default_slack() {
        let child = thread::spawn(|| {
            // Best effort: without the privilege the test still checks the
            // reset of the timer slack.
            let _ = crate::set_scheduler(crate::SchedPolicy::Fifo, 10);
            crate::set_timer_slack(1).unwrap();
            let mut cmd = Command::new("sleep");
            cmd.arg("30");
            spawn_in_group(cmd, &GroupSpawn::default()).unwrap()
        })
        .join()
        .unwrap();
        let pid = child.id() as i32;
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        let fields: Vec<&str> = after.split_whitespace().collect();
        // Field 41 of stat is the policy (0: SCHED_OTHER); index 38 here.
        assert_eq!(fields[38], "0", "policy");
        let status = fs::read_to_string(format!("/proc/{pid}/timerslack_ns")).unwrap();
        assert_eq!(status.trim(), "50000");
        stop_group(pid, &mut [child], Duration::from_secs(1));
    }

    #[test]
    fn descendants_of_a_shell() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "sleep 30 & sleep 30 & wait"]);
        let child = spawn_in_group(cmd, &GroupSpawn::default()).unwrap();
        let pid = child.id() as i32;
        let deadline = Instant::now() + Duration::from_secs(2);
        while descendants(pid).len() < 2 && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(descendants(pid).len(), 2);
        stop_group(pid, &mut [child], Duration::from_secs(1));
    }

    #[test]
    fn pty_moves_bytes_unchanged() {
        let mut pty = open_pty().unwrap();
        assert!(pty.slave_path.starts_with("/dev/pts/"));
        let data = b"a\nb\r\x03\x04";
        pty.master.write_all(data).unwrap();
        let mut got = [0u8; 6];
        pty.slave.read_exact(&mut got).unwrap();
        assert_eq!(&got, data);
    }

    #[test]
    fn free_space_of_root() {
        assert!(fs_free_bytes(Path::new("/")).unwrap() > 0);
        assert!(fs_free_bytes(Path::new("/no/such/dir")).is_err());
    }
}
