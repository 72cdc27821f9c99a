//! perf_event_open on this machine (needs root; otherwise prints
//! `skipped: needs root`): a tracepoint and a redirected second event share
//! one ring whose records carry the ids the kernel reported, with times on
//! CLOCK_MONOTONIC.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use latscope_model::CpuId;
use latscope_platform::perf::{
    poll_readable, PerfError, PerfEvent, PerfEventAttr, PERF_RECORD_SAMPLE,
};
use latscope_platform::{monotonic_ns, set_affinity};

fn tracepoint_id(event: &str) -> Option<u64> {
    for root in ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"] {
        if let Ok(s) = std::fs::read_to_string(format!("{root}/events/{event}/id")) {
            return s.trim().parse().ok();
        }
    }
    None
}

#[test]
fn tracepoints_share_one_ring() {
    let _kernel = crate::kernel();
    if !latscope_platform::caps::detect().root {
        eprintln!("skipped: needs root");
        return;
    }
    let (Some(switch), Some(waking)) = (
        tracepoint_id("sched/sched_switch"),
        tracepoint_id("sched/sched_waking"),
    ) else {
        eprintln!("skipped: needs tracefs");
        return;
    };
    let a = PerfEvent::open_cpu(&PerfEventAttr::tracepoint(switch).wakeup_watermark(1), 0).unwrap();
    let b = PerfEvent::open_cpu(&PerfEventAttr::tracepoint(waking), 0).unwrap();
    let mut ring = a.map_ring(8).unwrap();
    assert_eq!(ring.data_size(), 8 * latscope_platform::perf::page_size());
    b.set_output(&a).unwrap();
    let (ida, idb) = (a.id().unwrap(), b.id().unwrap());
    assert_ne!(ida, idb);

    let before = monotonic_ns();
    a.enable().unwrap();
    b.enable().unwrap();
    // Sleep on CPU 0 a few times: each sleep is a wake-up and two switches.
    std::thread::spawn(|| {
        set_affinity(CpuId(0)).unwrap();
        for _ in 0..20 {
            std::thread::sleep(Duration::from_micros(200));
        }
    })
    .join()
    .unwrap();
    let ready = poll_readable(
        &[std::os::fd::AsFd::as_fd(&a)],
        Some(Duration::from_secs(1)),
    )
    .unwrap();
    a.disable().unwrap();
    b.disable().unwrap();
    let after = monotonic_ns();
    assert_eq!(ready, 1);
    assert!(ring.available() > 0);

    let mut out = vec![0xAA]; // read_into appends
    let n = ring.read_into(&mut out).unwrap();
    assert_eq!(n + 1, out.len());
    assert_eq!(ring.available(), 0);
    let buf = &out[1..];
    let (mut pos, mut seen_a, mut seen_b) = (0, 0, 0);
    while pos + 8 <= buf.len() {
        let kind = u32::from_ne_bytes(buf[pos..pos + 4].try_into().unwrap());
        let size = u16::from_ne_bytes(buf[pos + 6..pos + 8].try_into().unwrap()) as usize;
        assert!(size >= 8 && pos + size <= buf.len());
        if kind == PERF_RECORD_SAMPLE {
            // IDENTIFIER, pid/tid, TIME: id first, time at +16.
            let id = u64::from_ne_bytes(buf[pos + 8..pos + 16].try_into().unwrap());
            let time = u64::from_ne_bytes(buf[pos + 24..pos + 32].try_into().unwrap());
            assert!(
                time >= before && time <= after,
                "{time} not in [{before}, {after}]"
            );
            if id == ida {
                seen_a += 1;
            } else if id == idb {
                seen_b += 1;
            } else {
                panic!("unknown id {id}");
            }
        }
        pos += size;
    }
    assert_eq!(pos, buf.len());
    assert!(seen_a >= 20, "{seen_a} sched_switch");
    assert!(seen_b >= 10, "{seen_b} sched_waking");
}

#[test]
fn bad_tracepoint_is_not_a_permission_error() {
    let _kernel = crate::kernel();
    if !latscope_platform::caps::detect().root {
        eprintln!("skipped: needs root");
        return;
    }
    let e = PerfEvent::open_cpu(&PerfEventAttr::tracepoint(u64::from(u32::MAX)), 0).unwrap_err();
    assert!(!e.is_permission(), "{e}");
    assert!(
        matches!(e, PerfError::Unsupported { .. } | PerfError::Os { .. }),
        "{e}"
    );
    if let Some(id) = tracepoint_id("sched/sched_switch") {
        let ev = PerfEvent::open_cpu(&PerfEventAttr::tracepoint(id), 0).unwrap();
        let e = ev.map_ring(3).unwrap_err();
        assert!(e.to_string().contains("power of two"), "{e}");
    }
}

#[test]
fn tracefs_mount_is_undone_on_drop() {
    let _kernel = crate::kernel();
    if !latscope_platform::caps::detect().root {
        eprintln!("skipped: needs root");
        return;
    }
    let dir = std::env::temp_dir().join(format!("latscope-tracefs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let listed = |p: &std::path::Path| {
        std::fs::read_to_string("/proc/mounts")
            .unwrap()
            .lines()
            .any(|l| l.split_whitespace().nth(1) == p.to_str())
    };
    {
        let guard = latscope_platform::mount_tracefs(&dir).unwrap();
        assert_eq!(guard.target(), dir.as_path());
        assert!(dir.join("events/sched/sched_switch/format").is_file());
        assert!(listed(&dir));
    }
    assert!(!listed(&dir));
    std::fs::remove_dir(&dir).unwrap();
}
