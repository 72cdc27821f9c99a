//! What runs for each workload at each level: the stress-ng command lines
//! and latscope's own helper processes. Pure, so the mapping documented in
//! `docs/workloads.md` is tested as it is.

use std::fs;
use std::path::{Path, PathBuf};

use latscope_model::CpuSet;

use crate::helper::HELPER_ARG;
use crate::{LoadLevel, RtLoad, WorkloadSpec};

const MIB: u64 = 1 << 20;

/// The cache size stress-ng's stream stressor sizes its arrays by (four
/// times this, each). Left to itself it takes the L3 size from sysfs, which
/// in a VM can be the host's whole cache (260 MiB here): arrays of 1 GiB,
/// passes of seconds, and a stressor that takes over a second to notice
/// SIGTERM. 32 MiB gives 128 MiB arrays — beyond the caches of real CPUs —
/// and passes of about 0.1 s.
const STREAM_L3: &str = "32M";

/// One process latscope starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Launch {
    /// latscope itself in a helper mode: `latscope __workload ARGS`.
    Helper {
        args: Vec<String>,
        /// The CPUs it may run on.
        cpus: CpuSet,
        /// In a network namespace of its own.
        netns: bool,
    },
    /// An external program under a guard (`latscope __workload guard`),
    /// run in the workload's directory when it has one.
    Guarded {
        program: String,
        args: Vec<String>,
        /// Run it again each time it ends with status 0 (the compile loop).
        repeat: bool,
        /// The CPUs it and its children may run on.
        cpus: CpuSet,
    },
}

/// One process group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct GroupPlan {
    pub label: String,
    pub members: Vec<Launch>,
}

/// Everything a workload starts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Plan {
    pub groups: Vec<GroupPlan>,
    /// Needs a directory of its own (stress-ng's temporary files, the
    /// generated source tree), removed at the end.
    pub work_dir: bool,
    /// Generated C sources (files, make jobs) for `compile`.
    pub compile_tree: Option<(usize, usize)>,
    /// Connect the two namespaced members of the group with a veth pair.
    pub veth: bool,
}

/// Facts about the machine the sizes depend on.
#[derive(Clone, Debug)]
pub(crate) struct PlanEnv {
    /// The work directory (stress-ng's `--temp-path`).
    pub work_dir: PathBuf,
    /// `MemAvailable` in bytes.
    pub mem_available: u64,
    /// Free bytes on the file system of the work directory.
    pub disk_free: u64,
}

/// The veth pair of the `net` workload: one end in each private namespace.
pub(crate) const VETH_SOURCE: &str = "lsveth0";
pub(crate) const VETH_SINK: &str = "lsveth1";
pub(crate) const VETH_SOURCE_CIDR: &str = "10.199.0.1/30";
pub(crate) const VETH_SINK_CIDR: &str = "10.199.0.2/30";
pub(crate) const VETH_SINK_ADDR: &str = "10.199.0.2";

/// The stress-ng stressors a workload uses at any level.
pub(crate) fn stressors(spec: &WorkloadSpec) -> &'static [&'static str] {
    match spec {
        WorkloadSpec::Memory => &["vm", "stream", "cache"],
        WorkloadSpec::Disk => &["hdd", "iomix", "copy-file"],
        WorkloadSpec::Fork => &["fork", "vfork"],
        WorkloadSpec::Timer => &["timer", "clock", "signal", "sigq"],
        _ => &[],
    }
}

fn s(x: impl ToString) -> String {
    x.to_string()
}

fn mib(bytes: u64) -> String {
    format!("{}M", (bytes / MIB).max(1))
}

fn stress_ng(env: &PlanEnv, cpus: &CpuSet, stressor_args: Vec<String>) -> GroupPlan {
    let mut args = vec![
        s("--timeout"),
        s("0"),
        s("--temp-path"),
        env.work_dir.display().to_string(),
    ];
    args.extend(stressor_args);
    GroupPlan {
        label: s("stress-ng"),
        members: vec![Launch::Guarded {
            program: s("stress-ng"),
            args,
            repeat: false,
            cpus: cpus.clone(),
        }],
    }
}

fn helper(args: &[&str], cpus: &CpuSet) -> Launch {
    Launch::Helper {
        args: args.iter().map(s).collect(),
        cpus: cpus.clone(),
        netns: false,
    }
}

/// What every workload's plan depends on: the level, the CPUs (and their
/// number, as text for stress-ng's worker counts) and the machine.
struct Ctx<'a> {
    level: LoadLevel,
    cpus: &'a CpuSet,
    env: &'a PlanEnv,
    n: u64,
    ns: String,
    lv: &'static str,
}

/// What `spec` at `level` runs on `cpus`.
pub(crate) fn plan(spec: &WorkloadSpec, level: LoadLevel, cpus: &CpuSet, env: &PlanEnv) -> Plan {
    let n = cpus.len().max(1) as u64;
    let c = Ctx {
        level,
        cpus,
        env,
        n,
        ns: n.to_string(),
        lv: level.as_str(),
    };
    let mut plan = Plan::default();
    match spec {
        WorkloadSpec::Idle => {}
        WorkloadSpec::Cpu => cpu_plan(&c, &mut plan),
        WorkloadSpec::Memory => memory_plan(&c, &mut plan),
        WorkloadSpec::Compile => compile_plan(&c, &mut plan),
        WorkloadSpec::Disk => disk_plan(&c, &mut plan),
        WorkloadSpec::Net => net_plan(&c, &mut plan),
        WorkloadSpec::Tty => tty_plan(&c, &mut plan),
        WorkloadSpec::Fork => fork_plan(&c, &mut plan),
        WorkloadSpec::Timer => timer_plan(&c, &mut plan),
        WorkloadSpec::Hackbench => hackbench_plan(&c, &mut plan),
        WorkloadSpec::Rt(load) => rt_plan(&c, load, &mut plan),
        WorkloadSpec::Custom { program, args } => {
            plan.groups.push(GroupPlan {
                label: spec.name(),
                members: vec![Launch::Guarded {
                    program: program.clone(),
                    args: args.clone(),
                    repeat: false,
                    cpus: cpus.clone(),
                }],
            });
        }
    }
    plan
}

/// `cpu`: spinners pinned to every CPU.
fn cpu_plan(c: &Ctx, plan: &mut Plan) {
    let level = c.level;
    let cpus = c.cpus;
    // One spinner pinned to each CPU, so every CPU is busy even if
    // the scheduler would rather pack them; heavy adds a second one
    // per CPU, so they also compete for it.
    let (per_cpu, duty) = match level {
        LoadLevel::Light => (1, "50"),
        LoadLevel::Normal => (1, "100"),
        LoadLevel::Heavy => (2, "100"),
    };
    let mut members = Vec::new();
    for cpu in cpus.iter() {
        let one: CpuSet = std::iter::once(cpu).collect();
        for _ in 0..per_cpu {
            members.push(helper(&["cpu-spin", duty], &one));
        }
    }
    plan.groups.push(GroupPlan {
        label: s("cpu-spin"),
        members,
    });
}

/// `memory`: stress-ng's vm, stream and cache stressors, sized by the available memory.
fn memory_plan(c: &Ctx, plan: &mut Plan) {
    let level = c.level;
    let cpus = c.cpus;
    let env = c.env;
    let n = c.n;
    let ns = &c.ns;
    plan.work_dir = true;
    let vm_workers = match level {
        LoadLevel::Light => 1,
        _ => n,
    };
    let cap = if level == LoadLevel::Heavy {
        512 * MIB
    } else {
        256 * MIB
    };
    // An eighth of the available memory in all, so the load never
    // pushes the machine into reclaim or the OOM killer.
    let vm_bytes = (env.mem_available / 8 / vm_workers).clamp(16 * MIB, cap);
    let args = match level {
        LoadLevel::Light => vec![
            s("--vm"),
            s(1),
            s("--vm-bytes"),
            mib(vm_bytes),
            s("--vm-keep"),
        ],
        LoadLevel::Normal => vec![
            s("--vm"),
            ns.clone(),
            s("--vm-bytes"),
            mib(vm_bytes),
            s("--vm-keep"),
            s("--stream"),
            ns.clone(),
            s("--stream-l3-size"),
            s(STREAM_L3),
        ],
        LoadLevel::Heavy => vec![
            s("--vm"),
            ns.clone(),
            s("--vm-bytes"),
            mib(vm_bytes),
            s("--stream"),
            ns.clone(),
            s("--stream-l3-size"),
            s(STREAM_L3),
            s("--cache"),
            ns.clone(),
        ],
    };
    plan.groups.push(stress_ng(env, cpus, args));
}

/// `compile`: make over a generated C tree, again and again.
fn compile_plan(c: &Ctx, plan: &mut Plan) {
    let level = c.level;
    let cpus = c.cpus;
    let n = c.n;
    plan.work_dir = true;
    let (files, jobs) = match level {
        LoadLevel::Light => (24, 1),
        LoadLevel::Normal => (48, n as usize),
        LoadLevel::Heavy => (96, 2 * n as usize),
    };
    plan.compile_tree = Some((files, jobs));
    plan.groups.push(GroupPlan {
        label: s("make"),
        members: vec![Launch::Guarded {
            program: s("make"),
            args: vec![s("-s"), s("-B"), format!("-j{jobs}"), s("CC=cc")],
            repeat: true,
            cpus: cpus.clone(),
        }],
    });
}

/// `disk`: stress-ng's hdd, iomix and copy-file stressors, sized by the free space.
fn disk_plan(c: &Ctx, plan: &mut Plan) {
    let level = c.level;
    let cpus = c.cpus;
    let env = c.env;
    let n = c.n;
    plan.work_dir = true;
    let (hdd_workers, hdd, mix_workers, mix, copy_workers, copy) = match level {
        LoadLevel::Light => (1, 256 * MIB, 0, 0, 0, 0),
        LoadLevel::Normal => (1, 1024 * MIB, 1, 512 * MIB, 1, 512 * MIB),
        LoadLevel::Heavy => (n, 1024 * MIB, n, 1024 * MIB, n, 512 * MIB),
    };
    // Never more than a quarter of the free space (copies count
    // twice: source and destination).
    let total = hdd_workers * hdd + mix_workers * mix + 2 * copy_workers * copy;
    let budget = env.disk_free / 4;
    let scale = |b: u64| -> u64 {
        if total == 0 || total <= budget {
            b
        } else {
            ((b as u128 * budget as u128 / total as u128) as u64).max(16 * MIB)
        }
    };
    let mut args = vec![
        s("--hdd"),
        hdd_workers.to_string(),
        s("--hdd-bytes"),
        mib(scale(hdd)),
    ];
    match level {
        LoadLevel::Light => args.extend([
            s("--hdd-write-size"),
            s("64K"),
            s("--hdd-opts"),
            s("wr-seq,fsync"),
        ]),
        LoadLevel::Normal => args.extend([s("--hdd-opts"), s("wr-seq,fsync")]),
        LoadLevel::Heavy => args.extend([s("--hdd-opts"), s("wr-rnd,direct,fsync")]),
    }
    if mix_workers > 0 {
        args.extend([
            s("--iomix"),
            mix_workers.to_string(),
            s("--iomix-bytes"),
            mib(scale(mix)),
        ]);
    }
    if copy_workers > 0 {
        args.extend([
            s("--copy-file"),
            copy_workers.to_string(),
            s("--copy-file-bytes"),
            mib(scale(copy)),
        ]);
    }
    plan.groups.push(stress_ng(env, cpus, args));
}

/// `net`: traffic over loopback and a veth pair between two namespaces.
fn net_plan(c: &Ctx, plan: &mut Plan) {
    let cpus = c.cpus;
    let lv = c.lv;
    plan.veth = true;
    let mut sink = helper(&["net-sink", VETH_SINK, VETH_SINK_CIDR], cpus);
    let mut source = helper(
        &[
            "net-source",
            VETH_SOURCE,
            VETH_SOURCE_CIDR,
            VETH_SINK_ADDR,
            lv,
        ],
        cpus,
    );
    for l in [&mut sink, &mut source] {
        if let Launch::Helper { netns, .. } = l {
            *netns = true;
        }
    }
    plan.groups.push(GroupPlan {
        label: s("net"),
        members: vec![helper(&["net-loop", lv], cpus), sink, source],
    });
}

/// `tty`: pseudo-terminal pumps.
fn tty_plan(c: &Ctx, plan: &mut Plan) {
    let level = c.level;
    let cpus = c.cpus;
    let n = c.n;
    let (pairs, rate, chunk) = match level {
        LoadLevel::Light => (1, 1024 * 1024, 1024),
        LoadLevel::Normal => (1, 0, 4096),
        LoadLevel::Heavy => (n.max(2), 0, 4096),
    };
    let (p, r, c) = (pairs.to_string(), rate.to_string(), chunk.to_string());
    plan.groups.push(GroupPlan {
        label: s("tty-pump"),
        members: vec![helper(&["tty-pump", &p, &r, &c], cpus)],
    });
}

/// `fork`: stress-ng's fork and vfork, and latscope's exec storm.
fn fork_plan(c: &Ctx, plan: &mut Plan) {
    let level = c.level;
    let cpus = c.cpus;
    let env = c.env;
    let n = c.n;
    let ns = &c.ns;
    plan.work_dir = true;
    let args = match level {
        LoadLevel::Light => vec![s("--fork"), s(1)],
        LoadLevel::Normal => vec![s("--fork"), ns.clone(), s("--vfork"), ns.clone()],
        LoadLevel::Heavy => vec![
            s("--fork"),
            ns.clone(),
            s("--fork-max"),
            s(16),
            s("--vfork"),
            ns.clone(),
            s("--vfork-max"),
            s(16),
        ],
    };
    plan.groups.push(stress_ng(env, cpus, args));
    // stress-ng's exec stressor refuses to run as root, so the exec
    // half of the storm is latscope's own: spawn-and-wait of a
    // trivial program, as fast as it goes (light: 500 a second).
    let (storms, rate) = match level {
        LoadLevel::Light => (1, "500"),
        LoadLevel::Normal => (1, "0"),
        LoadLevel::Heavy => (n, "0"),
    };
    plan.groups.push(GroupPlan {
        label: s("exec-storm"),
        members: (0..storms)
            .map(|_| helper(&["exec-storm", rate], cpus))
            .collect(),
    });
}

/// `timer`: stress-ng's timer, clock, signal and sigq stressors.
fn timer_plan(c: &Ctx, plan: &mut Plan) {
    let level = c.level;
    let cpus = c.cpus;
    let env = c.env;
    let ns = &c.ns;
    plan.work_dir = true;
    let args = match level {
        LoadLevel::Light => vec![s("--timer"), s(1), s("--timer-freq"), s(10_000)],
        LoadLevel::Normal => vec![
            s("--timer"),
            ns.clone(),
            s("--timer-freq"),
            s(100_000),
            s("--clock"),
            s(1),
            s("--signal"),
            s(1),
        ],
        LoadLevel::Heavy => vec![
            s("--timer"),
            ns.clone(),
            s("--timer-freq"),
            s(1_000_000),
            s("--clock"),
            ns.clone(),
            s("--signal"),
            ns.clone(),
            s("--sigq"),
            ns.clone(),
        ],
    };
    plan.groups.push(stress_ng(env, cpus, args));
}

/// rteval's hackbench arguments: messages per sender and message size.
const HACKBENCH_LOOPS: u32 = 1000;
const HACKBENCH_DATASIZE: u32 = 1000;

/// `hackbench`: rt-tests' hackbench with processes (`-P`), as rteval runs
/// it (`-g` three groups per CPU at normal, `-l 1000 -s 1000`), run again
/// each time it finishes.
fn hackbench_plan(c: &Ctx, plan: &mut Plan) {
    let groups = match c.level {
        LoadLevel::Light => c.n,
        LoadLevel::Normal => 3 * c.n,
        LoadLevel::Heavy => 6 * c.n,
    };
    plan.groups.push(GroupPlan {
        label: s("hackbench"),
        members: vec![Launch::Guarded {
            program: s("hackbench"),
            args: vec![
                s("-P"),
                s("-g"),
                s(groups),
                s("-l"),
                s(HACKBENCH_LOOPS),
                s("-s"),
                s(HACKBENCH_DATASIZE),
            ],
            repeat: true,
            cpus: c.cpus.clone(),
        }],
    });
}

/// `rt:`: one `rt-load` helper per thread, in one group; pinned ones go to
/// the listed CPUs in turn (as cyclictest's `-a` with `-t`), the others
/// may run on any CPU of the workload. The level does not change it.
fn rt_plan(c: &Ctx, load: &RtLoad, plan: &mut Plan) {
    let pins: Vec<CpuSet> = match &load.cpus {
        Some(set) => set
            .iter()
            .map(|cpu| std::iter::once(cpu).collect())
            .collect(),
        None => vec![c.cpus.clone()],
    };
    let (prio, busy, period) = (
        load.priority.to_string(),
        load.busy_ns.to_string(),
        load.period_ns.to_string(),
    );
    let members = (0..load.threads as usize)
        .map(|i| helper(&["rt-load", &prio, &busy, &period], &pins[i % pins.len()]))
        .collect();
    plan.groups.push(GroupPlan {
        label: s("rt-load"),
        members,
    });
}

/// `MemAvailable` from `/proc/meminfo`, in bytes (1 GiB if unreadable).
pub(crate) fn mem_available() -> u64 {
    fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("MemAvailable:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        })
        .map(|kib| kib * 1024)
        .unwrap_or(1024 * MIB)
}

/// The directory work directories go into: `$TMPDIR` (or `/tmp`), unless
/// it is a RAM file system, where "disk" writes would never reach a disk;
/// then `/var/tmp`.
pub(crate) fn work_base() -> PathBuf {
    let tmp = std::env::temp_dir();
    if is_ram_fs(&tmp) && Path::new("/var/tmp").is_dir() {
        PathBuf::from("/var/tmp")
    } else {
        tmp
    }
}

/// Whether `path` is on tmpfs or ramfs.
fn is_ram_fs(path: &Path) -> bool {
    let Ok(mounts) = fs::read_to_string("/proc/self/mounts") else {
        return false;
    };
    let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    is_ram_fs_in(&mounts, &path)
}

/// Whether the longest mount point in `mounts` (the text of
/// `/proc/self/mounts`) that contains `path` is a RAM file system.
fn is_ram_fs_in(mounts: &str, path: &Path) -> bool {
    let mut best: Option<(usize, bool)> = None;
    for line in mounts.lines() {
        let mut f = line.split_whitespace();
        let (Some(_dev), Some(mnt), Some(fstype)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let longer = match best {
            None => true,
            Some((len, _)) => mnt.len() >= len,
        };
        if path.starts_with(mnt) && longer {
            best = Some((mnt.len(), matches!(fstype, "tmpfs" | "ramfs")));
        }
    }
    matches!(best, Some((_, true)))
}

/// The command lines `spec` at `level` would run on `cpus`, one per
/// process latscope starts, as a user would type them (helpers as
/// `latscope __workload ...`). For `--dry-run` style listings and the docs.
pub fn commands(spec: &WorkloadSpec, level: LoadLevel, cpus: &CpuSet) -> Vec<String> {
    let base = work_base();
    let env = PlanEnv {
        work_dir: base.join("latscope-<workload>-<pid>"),
        mem_available: mem_available(),
        disk_free: latscope_platform::process::fs_free_bytes(&base).unwrap_or(u64::MAX),
    };
    let p = plan(spec, level, cpus, &env);
    let mut out = Vec::new();
    if let Some((files, jobs)) = p.compile_tree {
        out.push(format!(
            "(generate {files} C files and a Makefile; make -j{jobs} rebuilds them in a loop)"
        ));
    }
    for g in &p.groups {
        for m in &g.members {
            out.push(render(m));
        }
    }
    if p.veth {
        out.push(format!(
            "ip link add {VETH_SOURCE} netns <net-source pid> type veth peer name {VETH_SINK} netns <net-sink pid>"
        ));
    }
    out
}

fn render(launch: &Launch) -> String {
    match launch {
        Launch::Helper { args, cpus, netns } => {
            let mut line = format!("latscope {HELPER_ARG} {}  # CPUs {cpus}", args.join(" "));
            if *netns {
                line.push_str(", own network namespace");
            }
            line
        }
        Launch::Guarded {
            program,
            args,
            repeat,
            cpus,
        } => {
            let mut line = format!("{program} {}", args.join(" "));
            line = line.trim_end().to_string();
            line.push_str(&format!("  # CPUs {cpus}"));
            if *repeat {
                line.push_str(", repeated");
            }
            line
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> PlanEnv {
        PlanEnv {
            work_dir: PathBuf::from("/w"),
            mem_available: 16 * 1024 * MIB,
            disk_free: 100 * 1024 * MIB,
        }
    }

    fn guarded_line(spec: &WorkloadSpec, level: LoadLevel, ncpu: u32) -> String {
        let cpus: CpuSet = (0..ncpu).map(latscope_model::CpuId).collect();
        let p = plan(spec, level, &cpus, &env());
        p.groups
            .iter()
            .flat_map(|g| &g.members)
            .find_map(|m| match m {
                Launch::Guarded { .. } => Some(render(m)),
                _ => None,
            })
            .unwrap()
    }

    #[test]
    fn stress_ng_command_lines() {
        use LoadLevel::*;
        use WorkloadSpec::*;
        let p = "stress-ng --timeout 0 --temp-path /w";
        let cases: &[(WorkloadSpec, LoadLevel, &str)] = &[
            (Memory, Light, "--vm 1 --vm-bytes 256M --vm-keep"),
            (
                Memory,
                Normal,
                "--vm 2 --vm-bytes 256M --vm-keep --stream 2 --stream-l3-size 32M",
            ),
            (
                Memory,
                Heavy,
                "--vm 2 --vm-bytes 512M --stream 2 --stream-l3-size 32M --cache 2",
            ),
            (Disk, Light, "--hdd 1 --hdd-bytes 256M --hdd-write-size 64K --hdd-opts wr-seq,fsync"),
            (
                Disk,
                Normal,
                "--hdd 1 --hdd-bytes 1024M --hdd-opts wr-seq,fsync --iomix 1 --iomix-bytes 512M --copy-file 1 --copy-file-bytes 512M",
            ),
            (
                Disk,
                Heavy,
                "--hdd 2 --hdd-bytes 1024M --hdd-opts wr-rnd,direct,fsync --iomix 2 --iomix-bytes 1024M --copy-file 2 --copy-file-bytes 512M",
            ),
            (Fork, Light, "--fork 1"),
            (Fork, Normal, "--fork 2 --vfork 2"),
            (Fork, Heavy, "--fork 2 --fork-max 16 --vfork 2 --vfork-max 16"),
            (Timer, Light, "--timer 1 --timer-freq 10000"),
            (Timer, Normal, "--timer 2 --timer-freq 100000 --clock 1 --signal 1"),
            (
                Timer,
                Heavy,
                "--timer 2 --timer-freq 1000000 --clock 2 --signal 2 --sigq 2",
            ),
        ];
        for (spec, level, want) in cases {
            assert_eq!(
                guarded_line(spec, *level, 2),
                format!("{p} {want}  # CPUs 0-1"),
                "{spec} {level}"
            );
        }
    }

    #[test]
    fn sizes_follow_the_machine() {
        let cpus: CpuSet = (0..2).map(latscope_model::CpuId).collect();
        let small = PlanEnv {
            work_dir: PathBuf::from("/w"),
            mem_available: 512 * MIB,
            disk_free: 1024 * MIB,
        };
        let p = plan(&WorkloadSpec::Memory, LoadLevel::Normal, &cpus, &small);
        let line = render(&p.groups[0].members[0]);
        assert!(line.contains("--vm-bytes 32M"), "{line}");
        let p = plan(&WorkloadSpec::Disk, LoadLevel::Normal, &cpus, &small);
        let line = render(&p.groups[0].members[0]);
        // 2.5 GiB wanted, 256 MiB allowed: everything scaled by 1/10.
        assert!(line.contains("--hdd-bytes 102M"), "{line}");
        assert!(line.contains("--iomix-bytes 51M"), "{line}");
    }

    #[test]
    fn helpers_per_level() {
        let cpus: CpuSet = (0..2).map(latscope_model::CpuId).collect();
        let e = env();
        let cpu = |level| {
            plan(&WorkloadSpec::Cpu, level, &cpus, &e).groups[0]
                .members
                .clone()
        };
        assert_eq!(cpu(LoadLevel::Light).len(), 2);
        assert_eq!(cpu(LoadLevel::Heavy).len(), 4);
        match &cpu(LoadLevel::Normal)[1] {
            Launch::Helper { args, cpus, netns } => {
                assert_eq!(args, &["cpu-spin", "100"]);
                assert_eq!(cpus.to_string(), "1");
                assert!(!netns);
            }
            other => panic!("{other:?}"),
        }
        let net = plan(&WorkloadSpec::Net, LoadLevel::Light, &cpus, &e);
        assert!(net.veth);
        let netns: Vec<bool> = net.groups[0]
            .members
            .iter()
            .map(|m| matches!(m, Launch::Helper { netns: true, .. }))
            .collect();
        assert_eq!(netns, vec![false, true, true]);
        let compile = plan(&WorkloadSpec::Compile, LoadLevel::Heavy, &cpus, &e);
        assert_eq!(compile.compile_tree, Some((96, 4)));
        assert!(plan(&WorkloadSpec::Idle, LoadLevel::Heavy, &cpus, &e)
            .groups
            .is_empty());
        let fork = plan(&WorkloadSpec::Fork, LoadLevel::Heavy, &cpus, &e);
        assert_eq!(fork.groups[1].members.len(), 2);
    }

    #[test]
    fn custom_runs_as_given() {
        let cpus: CpuSet = (0..1).map(latscope_model::CpuId).collect();
        let spec = WorkloadSpec::parse("custom:printf %s|%s a;b $HOME").unwrap();
        let p = plan(&spec, LoadLevel::Heavy, &cpus, &env());
        assert_eq!(
            p.groups[0].members,
            vec![Launch::Guarded {
                program: "printf".into(),
                args: vec!["%s|%s".into(), "a;b".into(), "$HOME".into()],
                repeat: false,
                cpus: cpus.clone(),
            }]
        );
        assert!(!p.work_dir);
    }

    #[test]
    fn commands_list_everything() {
        let cpus: CpuSet = (0..2).map(latscope_model::CpuId).collect();
        let lines = commands(&WorkloadSpec::Net, LoadLevel::Normal, &cpus);
        assert_eq!(lines.len(), 4, "{lines:?}");
        assert!(lines[0].starts_with("latscope __workload net-loop normal"));
        assert!(lines[3].starts_with("ip link add lsveth0"));
        let lines = commands(&WorkloadSpec::Compile, LoadLevel::Light, &cpus);
        assert_eq!(lines[1], "make -s -B -j1 CC=cc  # CPUs 0-1, repeated");
    }

    #[test]
    fn every_workload_has_commands_at_every_level() {
        let cpus: CpuSet = (0..2).map(latscope_model::CpuId).collect();
        for spec in WorkloadSpec::BUILTIN {
            for level in LoadLevel::ALL {
                let lines = commands(&spec, level, &cpus);
                assert_eq!(
                    lines.is_empty(),
                    spec == WorkloadSpec::Idle,
                    "{spec} {level}"
                );
            }
        }
    }

    #[test]
    fn hackbench_as_rteval_runs_it() {
        use LoadLevel::*;
        for (level, groups) in [(Light, 2), (Normal, 6), (Heavy, 12)] {
            assert_eq!(
                guarded_line(&WorkloadSpec::Hackbench, level, 2),
                format!("hackbench -P -g {groups} -l 1000 -s 1000  # CPUs 0-1, repeated")
            );
        }
    }

    #[test]
    fn rt_threads_and_pins() {
        let cpus: CpuSet = (0..2).map(latscope_model::CpuId).collect();
        let members = |text: &str| {
            let spec = WorkloadSpec::parse(text).unwrap();
            let p = plan(&spec, LoadLevel::Heavy, &cpus, &env());
            assert_eq!(p.groups.len(), 1);
            p.groups[0]
                .members
                .iter()
                .map(render)
                .collect::<Vec<String>>()
        };
        assert_eq!(
            members("rt:90,500us/10ms"),
            vec!["latscope __workload rt-load 90 500000 10000000  # CPUs 0-1"]
        );
        assert_eq!(
            members("rt:5,1ms/4ms,x3,cpu0-1"),
            vec![
                "latscope __workload rt-load 5 1000000 4000000  # CPUs 0",
                "latscope __workload rt-load 5 1000000 4000000  # CPUs 1",
                "latscope __workload rt-load 5 1000000 4000000  # CPUs 0",
            ]
        );
        assert_eq!(members("rt:5,1ms/4ms,x2").len(), 2);
    }

    #[test]
    fn ram_fs_detection() {
        let mounts =
            "/dev/vda / ext4 rw 0 0\ntmpfs /tmp tmpfs rw 0 0\n/dev/vdb /tmp/disk ext4 rw 0 0\n";
        assert!(!is_ram_fs_in(mounts, Path::new("/var/tmp")));
        assert!(is_ram_fs_in(mounts, Path::new("/tmp")));
        assert!(is_ram_fs_in(mounts, Path::new("/tmp/x")));
        assert!(!is_ram_fs_in(mounts, Path::new("/tmp/disk/x")));
        assert!(!is_ram_fs_in("", Path::new("/tmp")));
        assert!(work_base().is_dir());
    }
}
