//! Prerequisites of each workload, checked before anything starts.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::plan::stressors;
use crate::{WorkloadError, WorkloadSpec};

/// Whether `spec` can run here: the programs it needs are installed (a
/// missing one is named with the package that provides it), stress-ng has
/// the stressors it uses, and it has the privileges it needs (`net` creates
/// network namespaces: root). `idle` and `cpu` need nothing but latscope.
pub fn check(spec: &WorkloadSpec) -> Result<(), WorkloadError> {
    let path = std::env::var_os("PATH");
    let root = latscope_platform::caps::detect().root;
    check_with(spec, path.as_deref(), root)
}

/// [`check`] with an explicit `PATH` and privilege, for tests.
pub(crate) fn check_with(
    spec: &WorkloadSpec,
    path: Option<&OsStr>,
    root: bool,
) -> Result<(), WorkloadError> {
    let name = spec.name();
    let need = |program: &str, package: &str| -> Result<PathBuf, WorkloadError> {
        find_program(program, path).ok_or_else(|| WorkloadError::Missing {
            workload: name.clone(),
            program: program.to_string(),
            package: package.to_string(),
        })
    };
    match spec {
        WorkloadSpec::Idle | WorkloadSpec::Cpu => Ok(()),
        WorkloadSpec::Tty => {
            if Path::new("/dev/ptmx").exists() {
                Ok(())
            } else {
                Err(WorkloadError::Unsupported {
                    workload: name,
                    what: "pseudo-terminals (/dev/ptmx is missing)".into(),
                })
            }
        }
        WorkloadSpec::Memory | WorkloadSpec::Disk | WorkloadSpec::Fork | WorkloadSpec::Timer => {
            let stress_ng = need("stress-ng", "stress-ng")?;
            check_stressors(&name, &stress_ng, stressors(spec))
        }
        WorkloadSpec::Hackbench => {
            need("hackbench", "rt-tests")?;
            Ok(())
        }
        WorkloadSpec::Rt(load) => {
            let caps = latscope_platform::caps::detect();
            if !latscope_platform::caps::can_use_rt(&caps, load.priority) {
                return Err(rt_refused(&name, load.priority));
            }
            match (&load.cpus, latscope_platform::online_cpus()) {
                (Some(pins), Ok(online)) => pins_online(&name, pins, &online),
                _ => Ok(()),
            }
        }
        WorkloadSpec::Compile => {
            need("make", "make")?;
            need("cc", "gcc")?;
            Ok(())
        }
        WorkloadSpec::Net => {
            if !root {
                return Err(WorkloadError::Unsupported {
                    workload: name,
                    what: "root (it creates network namespaces and a veth pair)".into(),
                });
            }
            need("ip", "iproute2")?;
            Ok(())
        }
        WorkloadSpec::Custom { program, .. } => {
            if find_program(program, path).is_some() {
                Ok(())
            } else {
                Err(WorkloadError::Invalid {
                    spec: spec.to_string(),
                    why: format!("program '{program}' not found or not executable"),
                })
            }
        }
    }
}

/// Why an `rt:` load may not run: SCHED_FIFO needs privilege.
fn rt_refused(workload: &str, priority: u32) -> WorkloadError {
    WorkloadError::Unsupported {
        workload: workload.to_string(),
        what: format!(
            "CAP_SYS_NICE (or root, or RLIMIT_RTPRIO >= {priority}) to run SCHED_FIFO threads"
        ),
    }
}

/// Pinned CPUs must be online, or the kernel refuses the affinity.
fn pins_online(
    workload: &str,
    pins: &latscope_model::CpuSet,
    online: &latscope_model::CpuSet,
) -> Result<(), WorkloadError> {
    match pins.iter().find(|c| !online.contains(*c)) {
        None => Ok(()),
        Some(cpu) => Err(WorkloadError::Unsupported {
            workload: workload.to_string(),
            what: format!("CPU {cpu}, which is not online (online: {online})"),
        }),
    }
}

/// Finds `program` the way `execvp` would: as given when it contains a `/`,
/// else in each directory of `path`.
pub(crate) fn find_program(program: &str, path: Option<&OsStr>) -> Option<PathBuf> {
    if program.contains('/') {
        let p = PathBuf::from(program);
        return is_executable(&p).then_some(p);
    }
    std::env::split_paths(path?)
        .map(|dir| dir.join(program))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    p.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// Old stress-ng versions lack some stressors; say which, rather than let
/// stress-ng fail after the warm-up.
fn check_stressors(workload: &str, stress_ng: &Path, wanted: &[&str]) -> Result<(), WorkloadError> {
    let out = Command::new(stress_ng)
        .arg("--stressors")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map_err(|e| WorkloadError::Start {
            workload: workload.to_string(),
            what: format!("cannot run {}: {e}", stress_ng.display()),
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    let have: Vec<&str> = text.split_whitespace().collect();
    let missing: Vec<&str> = wanted
        .iter()
        .copied()
        .filter(|s| !have.contains(s))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(WorkloadError::Unsupported {
            workload: workload.to_string(),
            what: format!(
                "stress-ng stressors {} that this stress-ng lacks (install a newer stress-ng)",
                missing.join(", ")
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_stress_ng_names_the_package() {
        let empty = OsStr::new("/nonexistent-dir");
        for spec in [
            WorkloadSpec::Memory,
            WorkloadSpec::Disk,
            WorkloadSpec::Fork,
            WorkloadSpec::Timer,
        ] {
            let err = check_with(&spec, Some(empty), true)
                .unwrap_err()
                .to_string();
            assert_eq!(
                err,
                format!(
                    "workload {} needs stress-ng, which is not installed (apt-get install stress-ng)",
                    spec.name()
                )
            );
        }
    }

    #[test]
    fn idle_and_cpu_need_nothing() {
        for spec in [WorkloadSpec::Idle, WorkloadSpec::Cpu] {
            check_with(&spec, None, false).unwrap();
            check_with(&spec, Some(OsStr::new("/nonexistent-dir")), false).unwrap();
        }
    }

    #[test]
    fn compile_and_net_name_their_packages() {
        let empty = Some(OsStr::new("/nonexistent-dir"));
        let err = check_with(&WorkloadSpec::Compile, empty, true)
            .unwrap_err()
            .to_string();
        assert!(err.contains("apt-get install make"), "{err}");
        let err = check_with(&WorkloadSpec::Net, empty, true)
            .unwrap_err()
            .to_string();
        assert!(err.contains("apt-get install iproute2"), "{err}");
        let err = check_with(&WorkloadSpec::Net, empty, false)
            .unwrap_err()
            .to_string();
        assert!(err.contains("needs root"), "{err}");
    }

    #[test]
    fn hackbench_and_rt_say_what_they_need() {
        let empty = Some(OsStr::new("/nonexistent-dir"));
        let err = check_with(&WorkloadSpec::Hackbench, empty, true)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "workload hackbench needs hackbench, which is not installed (apt-get install rt-tests)"
        );
        let set = |t: &str| latscope_model::CpuSet::parse(t).unwrap();
        pins_online("rt", &set("0-1"), &set("0-3")).unwrap();
        assert_eq!(
            pins_online("rt:1,1ms/2ms,cpu3-4", &set("3-4"), &set("0-3"))
                .unwrap_err()
                .to_string(),
            "workload rt:1,1ms/2ms,cpu3-4 needs CPU 4, which is not online (online: 0-3)"
        );
        assert_eq!(
            rt_refused("rt:90,1ms/10ms", 90).to_string(),
            "workload rt:90,1ms/10ms needs CAP_SYS_NICE (or root, or RLIMIT_RTPRIO >= 90) to run SCHED_FIFO threads"
        );
    }

    #[test]
    fn custom_program_must_exist() {
        let spec = WorkloadSpec::parse("custom:no-such-program-xyz a b").unwrap();
        let err = check(&spec).unwrap_err().to_string();
        assert!(err.contains("'no-such-program-xyz' not found"), "{err}");
        check(&WorkloadSpec::parse("custom:sleep 1").unwrap()).unwrap();
        check(&WorkloadSpec::parse("custom:/bin/sh -c x").unwrap()).unwrap();
        assert!(check(&WorkloadSpec::parse("custom:/etc/passwd").unwrap()).is_err());
    }

    #[test]
    fn installed_tools_pass() {
        // This machine has them (the CI installs stress-ng); say so if not.
        for spec in [WorkloadSpec::Memory, WorkloadSpec::Compile] {
            match check(&spec) {
                Ok(()) => {}
                Err(e) => eprintln!("skipped: needs {spec} prerequisites: {e}"),
            }
        }
    }
}
