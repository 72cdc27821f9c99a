//! Live tracing on this machine (needs root; otherwise prints
//! `skipped: needs root`): a thread sleeps with absolute clock_nanosleep
//! deadlines and the tracer must see its timer being armed with exactly
//! those deadlines, firing, and the thread being switched in, with time
//! stamps on CLOCK_MONOTONIC; a recording of the same run decodes to the
//! same events.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use latscope_model::{CpuId, Nanos};
use latscope_platform::{
    current_tid, monotonic_ns, online_cpus, set_affinity, set_scheduler, set_timer_slack, timers,
    SchedPolicy,
};
use latscope_trace::{Decoded, EventKind, Kallsyms, Recording, TraceEvent, Tracer, TracerConfig};

fn root() -> bool {
    latscope_platform::caps::detect().root
}

struct Sleeper {
    tid: i32,
    fifo: bool,
    deadlines: Vec<u64>,
}

fn sleep_loop(cpu: CpuId) -> Sleeper {
    set_affinity(cpu).unwrap();
    // SCHED_FIFO gets no timer slack, so `expires` is the deadline itself;
    // fall back to SCHED_OTHER with 1 ns slack.
    let fifo = set_scheduler(SchedPolicy::Fifo, 10).is_ok();
    set_timer_slack(1).unwrap();
    let tid = current_tid();
    let start = monotonic_ns();
    let mut deadlines = Vec::new();
    let mut next = start + 1_000_000;
    while next < start + 50_000_000 {
        // A deadline already (nearly) past when the call is made may
        // return without arming a timer on a loaded machine; only the
        // others are checked.
        let armed = monotonic_ns() + 20_000 < next;
        timers::sleep_until(next).unwrap();
        if armed {
            deadlines.push(next);
        }
        next += 1_000_000;
    }
    Sleeper {
        tid,
        fifo,
        deadlines,
    }
}

/// Wake-ups of one traced loop whose records the kernel may withhold on a
/// CPU that otherwise shows the whole wake-up path.
const MAY_MISS: usize = 3;

/// What one traced sleep loop on `cpu` showed beyond the checks that must
/// hold everywhere.
struct Seen {
    /// Every armed deadline has a hrtimer_expire_entry and the thread was
    /// switched in after every sleep.
    wake_path_complete: bool,
    /// cpu-clock stack samples on any CPU, and those whose first address
    /// kallsyms resolves (kernel code): a 50 ms loop that mostly sleeps
    /// may fall between the 1 ms samples of busy time, which CI saw once.
    stacks: usize,
    resolved: usize,
}

/// Traces a thread sleeping on `cpu`. Asserts what must hold on any CPU:
/// times on CLOCK_MONOTONIC, every deadline armed by the thread with
/// `softexpires` equal to it, the thread switched out at each sleep, no
/// malformed records, and the recording decoding to the same events.
fn trace_sleeper_on(cpu: CpuId, cpus: &[CpuId]) -> Seen {
    let mut cfg = TracerConfig::new(cpus.to_vec());
    cfg.stack_cpus = cpus.to_vec();
    cfg.stack_period = Nanos::from_millis(1);
    cfg.event_chains = true;
    let mut tracer = Tracer::open(&cfg).unwrap();
    eprintln!("opened: {:?}", tracer.opened_events());
    eprintln!("missing: {:?}", tracer.missing_events());
    assert_eq!(tracer.cpus(), cpus);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.lstrace");
    tracer.record_to(&path).unwrap();

    let before = monotonic_ns();
    tracer.enable().unwrap();
    let worker = std::thread::spawn(move || sleep_loop(cpu));
    let mut live = Vec::new();
    while !worker.is_finished() {
        tracer.wait(Duration::from_millis(10)).unwrap();
        tracer.read(&mut |d| live.push(d)).unwrap();
    }
    let sleeper = worker.join().unwrap();
    tracer.disable().unwrap();
    tracer.read(&mut |d| live.push(d)).unwrap();
    let after = monotonic_ns();
    tracer.finish_recording().unwrap();
    let stats = tracer.stats().clone();
    eprintln!("CPU {cpu}: stats {stats:?}");
    eprintln!(
        "CPU {cpu}: fifo {}, {} deadlines",
        sleeper.fifo,
        sleeper.deadlines.len()
    );

    assert!(stats.total.events > 0);
    assert_eq!(stats.total.malformed, 0);
    assert_eq!(stats.total.unknown_id, 0);
    assert_eq!(stats.per_cpu.len(), cpus.len());
    assert!(
        sleeper.deadlines.len() >= 25,
        "{} sleeps",
        sleeper.deadlines.len()
    );

    // Every event stamped within [before, after] on CLOCK_MONOTONIC.
    let mut events: Vec<TraceEvent> = Vec::new();
    let mut stacks = 0;
    // (event, its chain) for the two chained tracepoints.
    let mut chains: Vec<(TraceEvent, Vec<u64>)> = Vec::new();
    for d in &live {
        match d {
            Decoded::EventChain(c) => {
                let e = *events.last().expect("a chain follows its event");
                assert_eq!((c.time, c.cpu, c.tid), (e.time, e.cpu, e.tid));
                chains.push((e, c.ips.clone()));
            }
            Decoded::Event(e) => {
                assert!(
                    e.time >= before && e.time <= after,
                    "event at {} outside [{before}, {after}]: {e:?}",
                    e.time
                );
                events.push(*e);
            }
            Decoded::Stack(s) => {
                assert!(s.time >= before && s.time <= after);
                assert!(!s.ips.is_empty());
                stacks += 1;
            }
            Decoded::Lost { .. } => {}
        }
    }
    // Exactly the two chained tracepoints carry a chain, every time.
    let chained = |e: &TraceEvent| {
        matches!(
            e.kind,
            EventKind::SchedSwitch { .. } | EventKind::HrtimerExpireEntry { .. }
        )
    };
    assert_eq!(chains.len(), events.iter().filter(|e| chained(e)).count());
    assert!(chains.iter().all(|(e, _)| chained(e)));
    if let Ok(k) = Kallsyms::load() {
        check_chains(&k, &chains);
    }

    let tid = sleeper.tid;
    let n = sleeper.deadlines.len();
    let switched_in = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::SchedSwitch { next_pid, .. } if next_pid == tid))
        .count();
    let switched_out = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::SchedSwitch { prev_pid, .. } if prev_pid == tid))
        .count();
    assert!(switched_out >= n, "switched out {switched_out} times");

    // Each deadline was armed by the thread itself, on its hrtimer.
    let starts: Vec<_> = events
        .iter()
        .filter(|e| e.tid == tid)
        .filter_map(|e| match e.kind {
            EventKind::HrtimerStart {
                hrtimer,
                function,
                expires,
                softexpires,
            } => Some((hrtimer, function, expires, softexpires)),
            _ => None,
        })
        .collect();
    let mut timer_fns = Vec::new();
    let mut fired = 0;
    for &d in &sleeper.deadlines {
        let &(hrtimer, function, expires, soft) = starts
            .iter()
            .find(|s| s.3 == d as i64)
            .unwrap_or_else(|| panic!("no hrtimer_start with softexpires {d}"));
        timer_fns.push(function);
        if sleeper.fifo {
            assert_eq!(expires, d as i64, "FIFO sleeps get no slack");
        } else {
            assert!(expires >= soft && expires - soft <= 1);
        }
        // It fired: an expire_entry for that hrtimer at or after the
        // deadline (`now` is the base's CLOCK_MONOTONIC time).
        if events.iter().any(|e| {
            matches!(e.kind, EventKind::HrtimerExpireEntry { hrtimer: h, now, .. }
                if h == hrtimer && now >= d as i64)
        }) {
            fired += 1;
        }
    }

    // The sleep's timer callback resolves to hrtimer_wakeup.
    let mut resolved = 0;
    match Kallsyms::load() {
        Ok(k) => {
            let sym = k.resolve(timer_fns[0]).unwrap();
            assert_eq!((sym.name, sym.offset), ("hrtimer_wakeup", 0));
            resolved = live
                .iter()
                .filter_map(|d| match d {
                    Decoded::Stack(s) => Some(s),
                    _ => None,
                })
                .filter(|s| k.resolve(s.ips[0]).is_some())
                .count();
        }
        Err(e) => eprintln!("kallsyms unavailable: {e}"),
    }

    // The recording decodes to exactly what was seen live.
    let rec = Recording::read(&path).unwrap();
    assert!(!rec.truncated);
    let mut replayed = Vec::new();
    let d = rec.decode(&mut |x| replayed.push(x)).unwrap();
    assert_eq!(replayed.len(), live.len());
    assert!(replayed == live, "recording decodes differently");
    assert_eq!(d.names().len(), tracer.names().len());
    eprintln!(
        "CPU {cpu}: recording {} bytes, {} chunks",
        std::fs::metadata(&path).unwrap().len(),
        rec.chunks.len()
    );

    // A few of the ~49 wake-ups may miss their events even on a good CPU:
    // on this VM 99.8-100 % of CPU 0's samples decompose, not always all,
    // and the kernel writes no record for two or three wake-ups in a row
    // while the VM's agent runs (docs/tracing.md, "What the development VM
    // taught us"; this test failed for that with one allowed), while CPU 1
    // loses nearly all. A tracer that drops or misdecodes events loses
    // far more than three.
    let complete = fired + MAY_MISS >= n && switched_in + MAY_MISS >= n;
    if !complete {
        eprintln!(
            "NOTICE: on CPU {cpu} the kernel delivered {fired}/{n} hrtimer_expire_entry and \
             {switched_in}/{n} sched_switch into the thread: events from that CPU's idle task \
             are missing (on this VM ftrace misses the switch from idle on CPU 1 too)"
        );
    }
    Seen {
        wake_path_complete: complete,
        stacks,
        resolved,
    }
}

/// The kernel walked the stacks: a switch's chain passes through
/// `__schedule`, an hrtimer callback's through the hrtimer interrupt.
fn check_chains(k: &Kallsyms, chains: &[(TraceEvent, Vec<u64>)]) {
    let through = |ips: &[u64], f: &str| {
        ips.iter()
            .any(|&ip| k.resolve(ip).is_some_and(|s| s.name == f))
    };
    let (mut switches, mut through_schedule) = (0, 0);
    let (mut callbacks, mut through_irq) = (0, 0);
    for (e, ips) in chains {
        match e.kind {
            EventKind::SchedSwitch { .. } => {
                switches += 1;
                through_schedule += usize::from(through(ips, "__schedule"));
            }
            _ => {
                callbacks += 1;
                through_irq += usize::from(through(ips, "__hrtimer_run_queues"));
            }
        }
    }
    eprintln!(
        "chains: {through_schedule}/{switches} switches through __schedule, \
         {through_irq}/{callbacks} callbacks through __hrtimer_run_queues"
    );
    assert!(switches > 0 && through_schedule == switches);
    assert!(callbacks > 0 && through_irq == callbacks);
}

/// The sleep loop is traced on every CPU in turn. The wake-up path (timer
/// interrupt, switch into the thread) must be complete, but for at most one
/// wake-up, on at least one:
/// this VM's kernel emits no tracepoints from the idle task of CPU 1
/// (confirmed with ftrace), which the notice names.
///
/// The host can withhold a burst of records on any CPU (see `MAY_MISS`), so
/// the round over the CPUs is tried up to three times (50 ms each); every
/// round still asserts what must hold everywhere.
#[test]
fn live_trace_of_a_sleeping_thread() {
    let _kernel = crate::kernel();
    if !root() {
        eprintln!("skipped: needs root");
        return;
    }
    let cpus: Vec<CpuId> = online_cpus().unwrap().iter().collect();
    let mut complete: Vec<CpuId> = Vec::new();
    let (mut stacks, mut resolved) = (0, 0);
    for round in 1..=3 {
        complete.clear();
        for &cpu in &cpus {
            let seen = trace_sleeper_on(cpu, &cpus);
            if seen.wake_path_complete {
                complete.push(cpu);
            }
            stacks += seen.stacks;
            resolved += seen.resolved;
        }
        eprintln!(
            "round {round}: wake-up path complete on CPUs {complete:?}; \
             {stacks} stack samples so far, {resolved} in kernel code"
        );
        if !complete.is_empty() && resolved > 0 {
            break;
        }
    }
    assert!(
        !complete.is_empty(),
        "no CPU showed the complete wake-up path in three rounds"
    );
    // The loop thread and the reader keep some CPU busy.
    assert!(stacks > 0, "no cpu-clock stack samples in three rounds");
    if Kallsyms::load().is_ok() {
        assert!(resolved > 0, "no stack sample resolved in three rounds");
    }
}

/// Not a benchmark (no assertion on speed): prints the decode cost per
/// record over a live recording. Run with
/// `cargo test --release -p latscope-trace --test live -- --ignored --nocapture`.
#[test]
#[ignore]
fn decode_cost_per_record() {
    let _kernel = crate::kernel();
    if !root() {
        eprintln!("skipped: needs root");
        return;
    }
    let cpus: Vec<CpuId> = online_cpus().unwrap().iter().collect();
    let mut tracer = Tracer::open(&TracerConfig::new(cpus)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cost.lstrace");
    tracer.record_to(&path).unwrap();
    tracer.enable().unwrap();
    let worker = std::thread::spawn(|| {
        for _ in 0..2000 {
            timers::sleep_for(50_000).unwrap();
        }
    });
    while !worker.is_finished() {
        tracer.wait(Duration::from_millis(10)).unwrap();
        tracer.read(&mut |_| {}).unwrap();
    }
    worker.join().unwrap();
    tracer.disable().unwrap();
    tracer.read(&mut |_| {}).unwrap();
    tracer.finish_recording().unwrap();

    let rec = Recording::read(&path).unwrap();
    let mut d = rec.decoder().unwrap();
    let rounds = 50;
    let mut n = 0u64;
    let t0 = std::time::Instant::now();
    for _ in 0..rounds {
        let st = rec.decode_with(&mut d, &mut |x| {
            std::hint::black_box(&x);
        });
        n += st.records;
    }
    let ns = t0.elapsed().as_nanos() as f64 / n as f64;
    eprintln!("{n} records decoded, {ns:.1} ns/record");
}
