//! Processes and threads: `fork` + `_exit` + `wait`; `fork` + `execve` of a
//! trivial program, statically and dynamically linked (the dynamic one
//! pays for the loader and the C library's relocation); `posix_spawn`
//! (std's `Command`, which uses `posix_spawn` and so `vfork` semantics on
//! Linux) of the same two; and a thread created and joined.
//!
//! The two programs are built by `build.rs` and embedded here; they are
//! written to a private directory when a benchmark is set up.

use std::path::{Path, PathBuf};
use std::process::Command;

use latscope_platform::os_ops::{fork_exec_wait, fork_exit_wait, Program};

use super::benchmark::{Benchmark, Placement};
use super::scratch::Dir;
use crate::bench::{BenchError, Operation};

const TRUE_STATIC: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/true_static"));
const TRUE_DYNAMIC: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/true_dynamic"));

/// An embedded program written out to a private directory, removed on drop.
struct Installed {
    path: PathBuf,
    _dir: Dir,
}

impl Installed {
    fn new(name: &str, bytes: &[u8]) -> Result<Installed, BenchError> {
        if bytes.is_empty() {
            return Err(BenchError::Setup(format!(
                "the {name} program was not built (no C compiler or static C library when latscope was built)"
            )));
        }
        let dir = Dir::new(name)?;
        let path = dir.path().join(name);
        write_executable(&path, bytes).map_err(|e| BenchError::Os {
            what: format!("writing {}", path.display()),
            source: e,
        })?;
        settle(&path)?;
        Ok(Installed { path, _dir: dir })
    }
}

/// Runs the new program once, again while the kernel says it is busy.
///
/// A thread of this process that forks while the file is open for writing
/// gives its child a copy of the descriptor until the child's exec, and
/// exec refuses a file open for writing ("Text file busy"): the unit
/// tests, which fork in parallel threads, hit it once in CI. Once the
/// program has run, no writer is left, and the timed runs cannot meet it.
fn settle(path: &Path) -> Result<(), BenchError> {
    for _ in 0..200 {
        match Command::new(path).env_clear().status() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            status => {
                return exited(
                    status.map(|s| s.code().unwrap_or(128)),
                    "the installed program",
                )
            }
        }
    }
    Err(BenchError::Setup(format!(
        "{} stayed busy (open for writing) for a second",
        path.display()
    )))
}

fn write_executable(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o755)
        .open(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

fn exited(status: std::io::Result<i32>, what: &str) -> Result<(), BenchError> {
    match status {
        Ok(0) => Ok(()),
        Ok(code) => Err(BenchError::Setup(format!("{what} exited with {code}"))),
        Err(e) => Err(BenchError::Os {
            what: what.into(),
            source: e,
        }),
    }
}

struct Fork;
impl Operation for Fork {
    fn run(&mut self, ops: u64) -> Result<(), BenchError> {
        for _ in 0..ops {
            exited(fork_exit_wait(), "the forked child")?;
        }
        Ok(())
    }
}

struct ForkExec {
    program: Program,
    _installed: Installed,
}
impl Operation for ForkExec {
    fn run(&mut self, ops: u64) -> Result<(), BenchError> {
        for _ in 0..ops {
            exited(fork_exec_wait(&self.program), "the exec'd program")?;
        }
        Ok(())
    }
}

struct Spawn {
    installed: Installed,
}
impl Operation for Spawn {
    fn run(&mut self, ops: u64) -> Result<(), BenchError> {
        for _ in 0..ops {
            let status = Command::new(&self.installed.path)
                .env_clear()
                .status()
                .map(|s| s.code().unwrap_or(128));
            exited(status, "the spawned program")?;
        }
        Ok(())
    }
}

struct Thread;
impl Operation for Thread {
    fn run(&mut self, ops: u64) -> Result<(), BenchError> {
        for _ in 0..ops {
            std::thread::Builder::new()
                .spawn(|| std::hint::black_box(0u64))
                .map_err(|e| BenchError::Os {
                    what: "creating a thread".into(),
                    source: e,
                })?
                .join()
                .map_err(|_| BenchError::Setup("the thread panicked".into()))?;
        }
        Ok(())
    }
}

fn fork_exec(name: &'static str, bytes: &'static [u8]) -> Result<Box<dyn Operation>, BenchError> {
    let installed = Installed::new(name, bytes)?;
    let program = Program::new(&installed.path).map_err(|e| BenchError::Os {
        what: "preparing the program".into(),
        source: e,
    })?;
    Ok(Box::new(ForkExec {
        program,
        _installed: installed,
    }))
}

pub(super) fn benchmarks() -> Vec<Benchmark> {
    vec![
        Benchmark::new(
            "process",
            "fork_exit_wait",
            "fork, the child exits at once, the parent waits",
            false,
            |_: Placement| Ok(Box::new(Fork)),
        ),
        Benchmark::new(
            "process",
            "fork_exec_static",
            "fork + execve of a trivial statically linked program + wait",
            false,
            |_: Placement| fork_exec("true_static", TRUE_STATIC),
        ),
        Benchmark::new(
            "process",
            "fork_exec_dynamic",
            "fork + execve of a trivial dynamically linked program + wait",
            false,
            |_: Placement| fork_exec("true_dynamic", TRUE_DYNAMIC),
        ),
        Benchmark::new(
            "process",
            "spawn_static",
            "posix_spawn (vfork) of the static program + wait",
            false,
            |_: Placement| {
                Ok(Box::new(Spawn {
                    installed: Installed::new("true_static", TRUE_STATIC)?,
                }))
            },
        ),
        Benchmark::new(
            "process",
            "spawn_dynamic",
            "posix_spawn (vfork) of the dynamic program + wait",
            false,
            |_: Placement| {
                Ok(Box::new(Spawn {
                    installed: Installed::new("true_dynamic", TRUE_DYNAMIC)?,
                }))
            },
        ),
        Benchmark::new(
            "process",
            "thread_create_join",
            "a thread created, run empty and joined",
            false,
            |_: Placement| Ok(Box::new(Thread)),
        ),
    ]
}
