//! The code that held the CPU from perf call chains: the same answer the
//! BPF backend's kernel records give, under the same thresholds.

use super::*;
use crate::analysis::held::RawHeld;

const BURNER: i32 = 200;

/// Kernel text: address n is the n-th name (1-based), as a tracepoint's
/// chain and a blocked task's chain would hold them.
const TEXT: [&str; 12] = [
    "perf_trace_hrtimer_expire_entry",
    "__hrtimer_run_queues",
    "hrtimer_interrupt",
    "asm_sysvec_apic_timer_interrupt",
    "clear_page_erms",
    "clear_huge_page",
    "perf_trace_sched_switch",
    "__schedule",
    "__cond_resched",
    "truncate_inode_pages_range",
    "do_unlinkat",
    "do_syscall_64",
];

struct Table;
impl Symbolize for Table {
    fn symbol(&self, a: u64) -> Option<(String, Option<String>)> {
        let i = usize::try_from(a).ok()?.checked_sub(1)?;
        TEXT.get(i).map(|n| ((*n).to_string(), None))
    }
}

/// The callback's chain: the interrupt over `clear_page_erms`.
const IRQ_CHAIN: [u64; 6] = [1, 2, 3, 4, 5, 6];
/// The burner's chain at its switch out: it yielded in `__cond_resched`.
const YIELD_CHAIN: [u64; 6] = [7, 8, 9, 10, 11, 12];

/// Our timer's interrupt `late` after the expiry in the burner's context,
/// then the burner `hold` more before it yields to our thread.
fn blocked(late: u64, hold: u64) -> (Script, u64, u64, u64) {
    let mut s = Script::new();
    s.asleep()
        .switch(D - 100 * US, (0, "swapper/1", 120), (BURNER, "burner", 9))
        .timer_irq(D + late, D + late + US, D + late + 3 * US, BURNER)
        .switch(
            D + late + hold,
            (BURNER, "burner", 9),
            (TID, "lat-timer/1", 19),
        );
    (s, D + late + US, D + late + hold, D + late + hold + 2 * US)
}

/// Feeds the script as perf would, each event at a time in `chains`
/// followed by that chain, and returns the one episode.
fn run_perf(s: &Script, threshold: u64, wake: u64, chains: &[(u64, &[u64])]) -> Episode {
    let mut a = analyzer_with(threshold, Box::new(Table));
    a.on_sample(CpuId(1), D, wake, &s.names);
    for e in &s.events {
        a.on_decoded(&Decoded::Event(*e), &s.names);
        for (_, ips) in chains.iter().filter(|(t, _)| *t == e.time) {
            let chain = StackSample {
                time: e.time,
                cpu: e.cpu,
                tid: e.tid,
                ips: ips.to_vec(),
            };
            a.on_decoded(&Decoded::EventChain(chain), &s.names);
        }
    }
    a.finish(&s.names);
    let mut eps = a.take_episodes();
    assert_eq!(eps.len(), 1, "one episode");
    eps.remove(0).0
}

#[test]
fn a_late_interrupt_and_a_late_yield_show_both_stacks() {
    let (s, cb, sw, wake) = blocked(300 * US, 200 * US);
    let chains: [(u64, &[u64]); 2] = [(cb, &IRQ_CHAIN), (sw, &YIELD_CHAIN)];
    let e = run_perf(&s, 100 * US, wake, &chains);
    let h = e.breakdown.held.expect("held");
    let at = h.at_expiry.expect("at expiry");
    assert_eq!((at.pid, at.comm.as_str()), (BURNER, "burner"));
    assert_eq!(at.frames, ["clear_page_erms", "clear_huge_page"]);
    assert!(!at.user_mode && !at.truncated);
    let y = h.yielded.expect("yielded");
    assert_eq!((y.pid, y.comm.as_str()), (BURNER, "burner"));
    assert_eq!(
        y.frames,
        [
            "__cond_resched",
            "truncate_inode_pages_range",
            "do_unlinkat",
            "do_syscall_64"
        ]
    );
    assert_eq!(h.note, None);
}

#[test]
fn an_interrupt_on_time_gives_no_interrupted_stack_but_the_yield() {
    // The callback 20 µs late (under the threshold), the burner holds on.
    let (s, cb, sw, wake) = blocked(20 * US, 400 * US);
    let chains: [(u64, &[u64]); 2] = [(cb, &IRQ_CHAIN), (sw, &YIELD_CHAIN)];
    let h = run_perf(&s, 100 * US, wake, &chains)
        .breakdown
        .held
        .expect("held");
    let at = h.at_expiry.expect("the interrupted task is always named");
    assert_eq!(at.pid, BURNER);
    assert!(at.frames.is_empty());
    assert_eq!(h.yielded.expect("yielded").frames[0], "__cond_resched");
}

#[test]
fn a_missing_chain_is_said() {
    let (s, cb, _, wake) = blocked(300 * US, 200 * US);
    let chains: [(u64, &[u64]); 1] = [(cb, &IRQ_CHAIN)];
    let h = run_perf(&s, 100 * US, wake, &chains)
        .breakdown
        .held
        .expect("held");
    assert!(h.yielded.expect("yielded").frames.is_empty());
    assert!(h.note.expect("note").contains("not recorded"));
}

#[test]
fn without_chains_there_is_nothing_held() {
    let (s, _, _, wake) = blocked(300 * US, 200 * US);
    assert_eq!(run_perf(&s, 100 * US, wake, &[]).breakdown.held, None);
}

#[test]
fn a_switch_in_on_time_takes_no_stacks() {
    // Late only in returning to user code: 2 µs irq, 3 µs sched, then
    // 400 µs before the clock read.
    let (s, cb, sw, _) = blocked(2 * US, 3 * US);
    let chains: [(u64, &[u64]); 2] = [(cb, &IRQ_CHAIN), (sw, &YIELD_CHAIN)];
    let e = run_perf(&s, 100 * US, sw + 400 * US, &chains);
    assert_eq!(e.breakdown.held, None);
}

#[test]
fn chains_of_other_timers_and_switches_are_not_taken_for_ours() {
    // Another hrtimer's callback at the same instant as ours, recorded
    // after it, carries another stack: only ours is kept.
    let (mut s, cb, sw, _) = blocked(300 * US, 200 * US);
    s.at(
        cb,
        BURNER,
        EventKind::HrtimerExpireEntry {
            hrtimer: H + 64,
            now: cb as i64,
            function: 0x2,
        },
    );
    let mut ring = crate::analysis::held_perf::ChainRing::default();
    for e in &s.events {
        ring.note(e, TID);
        let chain: &[u64] = match e.kind {
            EventKind::HrtimerExpireEntry { hrtimer, .. } if hrtimer != H => &[99],
            EventKind::SchedSwitch { .. } => &YIELD_CHAIN,
            _ => &IRQ_CHAIN,
        };
        ring.offer(e, TID, chain);
    }
    // Our callback and our switch-in; not the other timer, not the
    // switches into other tasks.
    assert_eq!(ring.len(), 2);
    let evs: Vec<&TraceEvent> = s.events.iter().collect();
    let w = crate::analysis::held_perf::Wakeup {
        tid: TID,
        expires: D as i64,
        callback_time: cb,
        switch_in: sw,
        threshold: 100 * US,
    };
    let raw = crate::analysis::held_perf::raw_held(&w, &evs, &ring, &threads_of(&s)).expect("raw");
    assert_eq!(raw.irq_ips.as_deref(), Some(&IRQ_CHAIN[..]));
    assert_eq!(raw.yield_ips.as_deref(), Some(&YIELD_CHAIN[..]));
    assert_eq!((raw.irq_pid, raw.prev_pid), (Some(BURNER), BURNER));
}

fn threads_of(s: &Script) -> attribute::ThreadNames {
    let mut t = attribute::ThreadNames::default();
    for e in &s.events {
        t.note(e);
    }
    t
}

/// Both backends give the same answer from the same kernel stacks: the
/// BPF path's kernel record and the perf path's chains.
#[test]
fn perf_chains_and_bpf_records_give_the_same_held_cpu() {
    let (s, cb, sw, wake) = blocked(300 * US, 200 * US);
    let chains: [(u64, &[u64]); 2] = [(cb, &IRQ_CHAIN), (sw, &YIELD_CHAIN)];
    let perf = run_perf(&s, 100 * US, wake, &chains);

    let mut a = analyzer_with(100 * US, Box::new(Table));
    a.set_held(Some(RawHeld {
        irq_pid: Some(BURNER),
        irq_comm: "burner".to_string(),
        irq_ips: Some(IRQ_CHAIN.to_vec()),
        prev_pid: BURNER,
        prev_comm: "burner".to_string(),
        yield_ips: Some(YIELD_CHAIN.to_vec()),
        note: None,
        depth: 48,
    }));
    let k = KernelSample {
        expires: D as i64,
        callback_now: cb,
        callback_time: cb,
        switch_in: sw,
        steal: None,
    };
    let window: Vec<TraceEvent> = s.events.clone();
    a.on_kernel_sample(CpuId(1), D, wake, Some(k), Some((&window, true)), &s.names);
    a.finish(&s.names);
    let bpf = a.take_episodes().remove(0).0;
    assert_eq!(perf.breakdown.held, bpf.breakdown.held);
    assert_eq!(perf.breakdown.causes, bpf.breakdown.causes);
}
