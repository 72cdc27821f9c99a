//! `guard [--repeat] [--remove-dir DIR] -- PROGRAM ARGS`: the leader of a
//! workload's process group for programs that start children of their own.
//!
//! A parent-death signal reaches only the direct child of latscope, never
//! its grandchildren (stress-ng's workers, make's compilers). So latscope
//! starts this guard instead, with SIGTERM as its parent-death signal; the
//! guard runs PROGRAM in its own group and, as a child subreaper, inherits
//! any descendant whose parent dies. It ends everything below it and in its
//! group — SIGTERM, a grace period, SIGKILL — when:
//! - latscope dies (the parent-death SIGTERM, or the parent pid changes),
//! - it is told to stop (SIGTERM, SIGINT, SIGHUP),
//! - PROGRAM ends (with `--repeat`, only when it fails; a success starts it
//!   again).
//!
//! Its exit status mirrors PROGRAM's when PROGRAM ended on its own (128+N
//! for signal N), after one line on stderr saying how it ended; 0 when it
//! was told to stop.

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::process::parent_id;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::thread;
use std::time::{Duration, Instant};

use latscope_platform::process::{
    descendants, live_group_pids, proc_stat, reap_any, set_child_subreaper, signal_process,
    termination_flag, ExitKind, Signal,
};

/// How long the group gets between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(1);
/// How often the guard looks at its child and its parent.
const TICK: Duration = Duration::from_millis(50);

struct Options {
    repeat: bool,
    remove_dir: Option<PathBuf>,
    program: String,
    args: Vec<String>,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut repeat = false;
    let mut remove_dir = None;
    let mut i = 0;
    loop {
        match args.get(i).map(String::as_str) {
            Some("--repeat") => repeat = true,
            Some("--remove-dir") => {
                i += 1;
                let dir = args.get(i).ok_or("--remove-dir needs a directory")?;
                remove_dir = Some(PathBuf::from(dir));
            }
            Some("--") => break,
            Some(other) => return Err(format!("unknown guard option '{other}'")),
            None => return Err("missing -- PROGRAM".into()),
        }
        i += 1;
    }
    let program = args
        .get(i + 1)
        .filter(|p| !p.is_empty())
        .ok_or("missing PROGRAM after --")?
        .clone();
    Ok(Options {
        repeat,
        remove_dir,
        program,
        args: args.get(i + 2..).unwrap_or(&[]).to_vec(),
    })
}

pub(super) fn main(args: &[String]) -> Result<i32, String> {
    let opts = parse(args)?;
    let result = run(&opts);
    if let Some(dir) = &opts.remove_dir {
        let _ = fs::remove_dir_all(dir);
    }
    result
}

fn run(opts: &Options) -> Result<i32, String> {
    let me = std::process::id() as i32;
    let parent = parent_id();
    let term = termination_flag().map_err(|e| e.to_string())?;
    // Orphans below us come to us, so none escapes by losing its parent.
    set_child_subreaper().map_err(|e| e.to_string())?;
    loop {
        let child = Command::new(&opts.program)
            .args(&opts.args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn();
        let pid = match child {
            // The handle is dropped unwaited: reap_any collects the status.
            Ok(c) => c.id() as i32,
            Err(e) => {
                end_all(me);
                return Err(format!("cannot run {}: {e}", opts.program));
            }
        };
        let status = loop {
            let mut status = None;
            while let Some((p, kind)) = reap_any() {
                if p == pid {
                    status = Some(kind);
                }
            }
            if let Some(s) = status {
                break s;
            }
            if term.load(Ordering::Relaxed) || parent_id() != parent {
                end_all(me);
                return Ok(0);
            }
            thread::sleep(TICK);
        };
        if opts.repeat && status == ExitKind::Code(0) && !term.load(Ordering::Relaxed) {
            continue;
        }
        end_all(me);
        if term.load(Ordering::Relaxed) {
            return Ok(0);
        }
        return Ok(match status {
            ExitKind::Code(c) => {
                eprintln!("{} exited with status {c}", opts.program);
                c
            }
            ExitKind::Signal(s) => {
                eprintln!("{} was killed by signal {s}", opts.program);
                128 + s
            }
        });
    }
}

/// Every live process below the guard or in its group, but the guard.
fn others(me: i32) -> BTreeSet<i32> {
    let mut set: BTreeSet<i32> = live_group_pids(me).into_iter().collect();
    for pid in descendants(me) {
        if proc_stat(pid).is_some_and(|s| s.state != 'Z') {
            set.insert(pid);
        }
    }
    set.remove(&me);
    set
}

/// SIGTERM to everything else, up to [`GRACE`] to go (reaping what comes to
/// us), then SIGKILL until nothing is left. Processes that appear meanwhile
/// (a compiler make was just starting) get the same treatment.
fn end_all(me: i32) {
    let deadline = Instant::now() + GRACE;
    let give_up = deadline + Duration::from_secs(3);
    let mut termed = BTreeSet::new();
    loop {
        while reap_any().is_some() {}
        let live = others(me);
        if live.is_empty() {
            break;
        }
        let now = Instant::now();
        for &pid in &live {
            if now >= deadline {
                let _ = signal_process(pid, Signal::Kill);
            } else if termed.insert(pid) {
                let _ = signal_process(pid, Signal::Term);
            }
        }
        if now >= give_up {
            break;
        }
        thread::sleep(Duration::from_millis(10));
    }
    // Zombies of processes whose parents were killed come to us; collect
    // the last ones so the group is gone when we are.
    while reap_any().is_some() {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn options() {
        let o = parse(&argv(&[
            "--repeat",
            "--remove-dir",
            "/d",
            "--",
            "make",
            "-j2",
            "--",
        ]))
        .unwrap();
        assert!(o.repeat);
        assert_eq!(o.remove_dir, Some(PathBuf::from("/d")));
        assert_eq!(o.program, "make");
        assert_eq!(o.args, argv(&["-j2", "--"]));
        let o = parse(&argv(&["--", "x"])).unwrap();
        assert!(!o.repeat && o.remove_dir.is_none() && o.args.is_empty());
        for bad in [
            &["make"][..],
            &["--"],
            &["--", ""],
            &["--remove-dir"],
            &["--bogus", "--", "x"],
        ] {
            assert!(parse(&argv(bad)).is_err(), "{bad:?}");
        }
    }
}
