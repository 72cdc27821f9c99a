//! Capability detection, done once before a run starts.
//!
//! [`detect`] records what the process may do (root, `CAP_SYS_NICE`,
//! `CAP_IPC_LOCK`, `RLIMIT_RTPRIO`); whether the run then obtained real-time
//! priority, locked memory, `/dev/cpu_dma_latency` and minimal timer slack is
//! filled in by the run itself, because only trying tells.

use std::fs;

use latscope_model::Capabilities;

/// Bit of `CAP_SYS_NICE` in the capability sets (linux/capability.h).
const CAP_SYS_NICE: u32 = 23;
/// Bit of `CAP_IPC_LOCK` in the capability sets.
const CAP_IPC_LOCK: u32 = 14;

/// What this process may do. The "obtained" flags (`rt_priority`, `mlock`,
/// `dma_latency`, `timer_slack_ns`, `missing`) are left unset.
pub fn detect() -> Capabilities {
    // SAFETY: geteuid takes no arguments, touches no memory and cannot fail.
    let euid = unsafe { libc::geteuid() };
    let cap_eff = fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| parse_cap_eff(&status))
        .unwrap_or(0);
    Capabilities {
        root: euid == 0,
        cap_sys_nice: has_cap(cap_eff, CAP_SYS_NICE),
        cap_ipc_lock: has_cap(cap_eff, CAP_IPC_LOCK),
        rlimit_rtprio: rlimit_rtprio(),
        ..Capabilities::default()
    }
}

/// Bits of the capabilities that loading tracing BPF programs needs:
/// `CAP_SYS_ADMIN`, or `CAP_BPF` with `CAP_PERFMON` (Linux 5.8 and later).
const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;
const CAP_BPF: u32 = 39;

/// Whether this process may load and attach tracing BPF programs. Asked
/// before trying, so that a refusal is one clear line instead of the first
/// map the kernel refused to create.
pub fn may_load_bpf() -> bool {
    let cap_eff = fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| parse_cap_eff(&status))
        .unwrap_or(0);
    bpf_allowed(cap_eff)
}

fn bpf_allowed(cap_eff: u64) -> bool {
    has_cap(cap_eff, CAP_SYS_ADMIN) || (has_cap(cap_eff, CAP_BPF) && has_cap(cap_eff, CAP_PERFMON))
}

fn has_cap(set: u64, bit: u32) -> bool {
    set & (1u64 << bit) != 0
}

/// The effective capability set from the text of `/proc/<pid>/status`
/// (`CapEff:\t000001ffffffffff`).
pub fn parse_cap_eff(status: &str) -> Option<u64> {
    status.lines().find_map(|line| {
        let hex = line.strip_prefix("CapEff:")?.trim();
        u64::from_str_radix(hex, 16).ok()
    })
}

/// The soft `RLIMIT_RTPRIO`: the highest real-time priority an unprivileged
/// process may set. `u64::MAX` when unlimited, 0 when it cannot be read.
fn rlimit_rtprio() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid, writable rlimit that outlives the call, which
    // only writes into it.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_RTPRIO, &mut limit) };
    if rc != 0 {
        return 0;
    }
    if limit.rlim_cur == libc::RLIM_INFINITY {
        u64::MAX
    } else {
        limit.rlim_cur
    }
}

/// Whether the process may be expected to get real-time `priority`: as root,
/// with `CAP_SYS_NICE`, or within its `RLIMIT_RTPRIO`. An expectation only —
/// root in a container without `CAP_SYS_NICE`, or a cgroup without real-time
/// runtime, still fails, which the run finds out when it tries.
pub fn can_use_rt(caps: &Capabilities, priority: u32) -> bool {
    caps.root || caps.cap_sys_nice || caps.rlimit_rtprio >= u64::from(priority)
}

/// Whether `mlockall` of the whole process may be expected to succeed: as root
/// or with `CAP_IPC_LOCK`. Without them `RLIMIT_MEMLOCK` (often 8 MiB) still
/// allows small locks, but not a whole process with its future mappings.
pub fn can_lock_memory(caps: &Capabilities) -> bool {
    caps.root || caps.cap_ipc_lock
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cap_eff() {
        let status = "Name:\tlatscope\nUmask:\t0022\nCapInh:\t0000000000000000\n\
                      CapPrm:\t000001ffffffffff\nCapEff:\t000001ffffffffff\n\
                      CapBnd:\t000001ffffffffff\n";
        assert_eq!(parse_cap_eff(status), Some(0x1ff_ffff_ffff));
        assert_eq!(
            parse_cap_eff("CapEff:\t0000000000804000\n"),
            Some((1 << 23) | (1 << 14))
        );
        assert_eq!(parse_cap_eff("CapEff:\t0000000000000000"), Some(0));
        assert_eq!(parse_cap_eff("CapPrm:\t00000000000000ff\n"), None);
        assert_eq!(parse_cap_eff("CapEff:\tnot-hex\n"), None);
        assert_eq!(parse_cap_eff("CapEff:\n"), None);
        assert_eq!(parse_cap_eff(""), None);
        // Longer than 64 bits would overflow: refused, not truncated.
        assert_eq!(parse_cap_eff("CapEff:\t1ffffffffffffffffff\n"), None);
    }

    #[test]
    fn cap_bits() {
        let set = parse_cap_eff("CapEff:\t0000000000800000").unwrap();
        assert!(has_cap(set, CAP_SYS_NICE));
        assert!(!has_cap(set, CAP_IPC_LOCK));
    }

    #[test]
    fn detects_this_machine() {
        let caps = detect();
        // The test machines run everything as root.
        assert!(caps.root);
        assert!(can_use_rt(&caps, 99));
        assert!(can_lock_memory(&caps));
        assert!(!caps.rt_priority && !caps.mlock && !caps.dma_latency);
        assert_eq!(caps.timer_slack_ns, None);
        assert!(caps.missing.is_empty());
    }

    #[test]
    fn expectations() {
        let nobody = Capabilities::default();
        assert!(!can_use_rt(&nobody, 1));
        assert!(!can_lock_memory(&nobody));
        let limited = Capabilities {
            rlimit_rtprio: 50,
            ..Capabilities::default()
        };
        assert!(can_use_rt(&limited, 50));
        assert!(!can_use_rt(&limited, 51));
        let unlimited = Capabilities {
            rlimit_rtprio: u64::MAX,
            ..Capabilities::default()
        };
        assert!(can_use_rt(&unlimited, 99));
        let nice = Capabilities {
            cap_sys_nice: true,
            cap_ipc_lock: true,
            ..Capabilities::default()
        };
        assert!(can_use_rt(&nice, 99));
        assert!(can_lock_memory(&nice));
    }

    #[test]
    fn bpf_needs_sys_admin_or_bpf_with_perfmon() {
        assert!(bpf_allowed(1 << CAP_SYS_ADMIN));
        assert!(bpf_allowed((1 << CAP_BPF) | (1 << CAP_PERFMON)));
        assert!(!bpf_allowed(1 << CAP_BPF));
        assert!(!bpf_allowed(1 << CAP_PERFMON));
        assert!(!bpf_allowed(0));
    }
}
