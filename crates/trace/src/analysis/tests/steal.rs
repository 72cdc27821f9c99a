//! The hypervisor's share (BPF backend): steal read by the kernel per
//! wake-up, taken from the irq phase's unexplained and late-out-of-idle
//! shares, never more than they hold.

use latscope_model::StealSource;
use proptest::prelude::*;

use super::*;
use crate::analysis::{KernelSteal, HYPERVISOR};

/// Our timer's interrupt comes `late` after the expiry while `burner`
/// runs, then the burner runs 50 µs more before our switch-in.
fn late_while_burner(late: u64) -> (Script, u64) {
    let mut s = Script::new();
    s.asleep()
        .switch(D - 100 * US, (0, "swapper/1", 120), (200, "burner", 9))
        .timer_irq(D + late, D + late + US, D + late + 3 * US, 200)
        .switch(
            D + late + 50 * US,
            (200, "burner", 9),
            (TID, "lat-timer/1", 19),
        );
    (s, D + late + 52 * US)
}

/// Our timer's interrupt comes `late` out of idle.
fn late_out_of_idle(late: u64) -> (Script, u64) {
    let mut s = Script::new();
    s.asleep()
        .timer_irq(D + late, D + late + US, D + late + 3 * US, 0)
        .switch(
            D + late + 5 * US,
            (0, "swapper/1", 120),
            (TID, "lat-timer/1", 19),
        );
    (s, D + late + 7 * US)
}

fn sample(cb: u64, switch_in: u64, steal: Option<(u64, u64)>) -> KernelSample {
    KernelSample {
        expires: D as i64,
        callback_now: cb,
        callback_time: cb,
        switch_in,
        steal: steal.map(|(irq_ns, sched_ns)| KernelSteal {
            source: StealSource::StealClock,
            irq_ns,
            sched_ns,
        }),
    }
}

fn burner_episode(late: u64, steal: Option<(u64, u64)>) -> Episode {
    let (s, wake) = late_while_burner(late);
    let k = sample(D + late + US, D + late + 50 * US, steal);
    let mut a = s.run_kernel(20 * US, &[(D, wake, Some(k))]);
    let e = a.take_episodes().remove(0).0;
    assert_eq!(
        total(&e),
        e.latency_ns.0,
        "the causes partition the latency"
    );
    e
}

fn find(e: &Episode, kind: CauseKind) -> Option<&latscope_model::Cause> {
    e.breakdown.causes.iter().find(|c| c.kind == kind)
}

#[test]
fn steal_inside_an_unexplained_share_becomes_the_hypervisors() {
    let e = burner_episode(200 * US, Some((150 * US, 7 * US)));
    assert_eq!(
        cause(&e, CauseKind::Hypervisor, HYPERVISOR).duration_ns.0,
        150 * US
    );
    let rest = cause(
        &e,
        CauseKind::Unexplained,
        "interrupts off or unobservable while burner ran",
    );
    assert_eq!(rest.duration_ns.0, 50 * US);
    assert_eq!(e.breakdown.unexplained_ns.0, 50 * US);
    assert_eq!(e.breakdown.steal_source, Some(StealSource::StealClock));
    assert_eq!(e.breakdown.steal_irq_ns, Some(Nanos(150 * US)));
    assert_eq!(e.breakdown.steal_sched_ns, Some(Nanos(7 * US)));
    assert_eq!(e.breakdown.steal_ns, Some(Nanos(157 * US)));
}

#[test]
fn steal_larger_than_the_share_takes_no_more_than_it_holds() {
    let e = burner_episode(200 * US, Some((5_000 * US, 0)));
    assert_eq!(
        cause(&e, CauseKind::Hypervisor, HYPERVISOR).duration_ns.0,
        200 * US
    );
    assert!(
        find(&e, CauseKind::Unexplained).is_none(),
        "{:#?}",
        e.breakdown
    );
    assert_eq!(e.breakdown.unexplained_ns.0, 0);
    // The other shares keep what they had: the burner still blocked us.
    let without = burner_episode(200 * US, None);
    let burner = |e: &Episode| {
        e.breakdown
            .causes
            .iter()
            .filter(|c| c.kind == CauseKind::Thread)
            .map(|c| c.duration_ns.0)
            .sum::<u64>()
    };
    assert_eq!(burner(&e), burner(&without));
    assert_eq!(e.breakdown.blocking, without.breakdown.blocking);
}

#[test]
fn steal_in_the_sched_phase_is_reported_not_subtracted() {
    let e = burner_episode(200 * US, Some((0, 40 * US)));
    let without = burner_episode(200 * US, None);
    assert!(find(&e, CauseKind::Hypervisor).is_none());
    assert_eq!(e.breakdown.blocking, without.breakdown.blocking);
    assert_eq!(e.breakdown.steal_sched_ns, Some(Nanos(40 * US)));
}

#[test]
fn steal_during_a_late_interrupt_out_of_idle_is_taken_from_idle() {
    let (s, wake) = late_out_of_idle(300 * US);
    let k = sample(D + 301 * US, D + 305 * US, Some((100 * US, 0)));
    let mut a = s.run_kernel(20 * US, &[(D, wake, Some(k))]);
    let e = a.take_episodes().remove(0).0;
    assert_eq!(total(&e), e.latency_ns.0);
    assert_eq!(
        cause(&e, CauseKind::Hypervisor, HYPERVISOR).duration_ns.0,
        100 * US
    );
    assert_eq!(
        cause(&e, CauseKind::Idle, "CPU idle, timer interrupt late")
            .duration_ns
            .0,
        200 * US
    );
    assert_eq!(a.summary().hypervisor_ns, Nanos(100 * US));
}

#[test]
fn no_steal_leaves_the_shares_and_names_what_is_left() {
    let e = burner_episode(200 * US, Some((0, 0)));
    assert!(find(&e, CauseKind::Hypervisor).is_none());
    assert_eq!(
        cause(
            &e,
            CauseKind::Unexplained,
            "interrupts off or unobservable while burner ran"
        )
        .duration_ns
        .0,
        200 * US
    );
    assert_eq!(e.breakdown.steal_ns, Some(Nanos(0)));
}

#[test]
fn without_a_steal_counter_the_names_stay_and_nothing_is_split() {
    let e = burner_episode(200 * US, None);
    assert!(find(&e, CauseKind::Hypervisor).is_none());
    cause(
        &e,
        CauseKind::Unexplained,
        "timer interrupt late while burner ran",
    );
    assert_eq!(e.breakdown.steal_source, None);
    assert_eq!(e.breakdown.steal_irq_ns, None);
    // And the perf path gives the same breakdown.
    let (s, wake) = late_while_burner(200 * US);
    let mut perf = s.run(20 * US, &[(D, wake)]);
    assert_eq!(perf.take_episodes().remove(0).0.breakdown, e.breakdown);
    assert_eq!(perf.summary().hypervisor_ns, Nanos(0));
}

#[test]
fn proc_stat_steal_does_not_replace_the_kernels() {
    let (s, wake) = late_while_burner(200 * US);
    let k = sample(D + 201 * US, D + 250 * US, Some((30 * US, 0)));
    let mut a = analyzer(20 * US);
    a.on_steal(CpuId(1), D - 1_000 * US, 0);
    let from = D.saturating_sub(Analyzer::replay_ns());
    let w: Vec<TraceEvent> = s
        .events
        .iter()
        .filter(|e| e.time >= from)
        .copied()
        .collect();
    a.on_kernel_sample(CpuId(1), D, wake, Some(k), Some((&w, true)), &s.names);
    a.on_steal(CpuId(1), wake + 1_000 * US, 4_000_000);
    a.finish(&s.names);
    let e = a.take_episodes().remove(0).0;
    assert_eq!(e.breakdown.steal_ns, Some(Nanos(30 * US)));
    assert_eq!(e.breakdown.steal_source, Some(StealSource::StealClock));
    // Without the kernel's figure the episode gets /proc/stat's.
    let mut b = analyzer(20 * US);
    b.on_steal(CpuId(1), D - 1_000 * US, 0);
    b.on_kernel_sample(
        CpuId(1),
        D,
        wake,
        Some(sample(D + 201 * US, D + 250 * US, None)),
        Some((&w, true)),
        &s.names,
    );
    b.on_steal(CpuId(1), wake + 1_000 * US, 4_000_000);
    b.finish(&s.names);
    let e = b.take_episodes().remove(0).0;
    assert_eq!(e.breakdown.steal_ns, Some(Nanos(4_000_000)));
    assert_eq!(e.breakdown.steal_source, Some(StealSource::ProcStat));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn the_causes_still_partition_the_latency(
        late in 30u64..2_000,
        steal_irq in 0u64..3_000,
        steal_sched in 0u64..100,
        idle in any::<bool>(),
    ) {
        let (late, steal_irq) = (late * US, steal_irq * US);
        let (s, wake, k) = if idle {
            let (s, w) = late_out_of_idle(late);
            (s, w, sample(D + late + US, D + late + 5 * US, Some((steal_irq, steal_sched))))
        } else {
            let (s, w) = late_while_burner(late);
            (s, w, sample(D + late + US, D + late + 50 * US, Some((steal_irq, steal_sched))))
        };
        let mut a = s.run_kernel(20 * US, &[(D, wake, Some(k))]);
        let e = a.take_episodes().remove(0).0;
        prop_assert_eq!(total(&e), e.latency_ns.0);
        let hv = find(&e, CauseKind::Hypervisor).map_or(0, |c| c.duration_ns.0);
        prop_assert!(hv <= steal_irq && hv <= late);
        prop_assert!(e.breakdown.causes.iter().all(|c| c.duration_ns.0 > 0));
    }
}
