//! The hypervisor's share of an episode.
//!
//! The BPF backend reads the CPU's steal counter (KVM's paravirtual steal
//! clock, or the kernel's per-CPU steal accounting) when our thread arms
//! its timer, in its callback and at its switch-in ([`KernelSteal`]). Steal
//! from arming to the callback is an upper bound of the time the host kept
//! the vCPU from running before our interrupt was handled: it also covers
//! the sleep before the expiry, when the vCPU is normally halted and
//! accrues none. The attribution has two shares of the irq phase that no
//! OS event explains: "timer interrupt late while X ran" (unexplained) and
//! "CPU idle, timer interrupt late". The hypervisor share takes up to the
//! steal from them, never more than they hold, so the shares still add up
//! to the latency; what remains unexplained is then "interrupts off or
//! unobservable".
//!
//! Steal in the sched phase (callback to switch-in) stays inside the
//! shares of that phase, the blocking thread's included: no event says
//! which of them the host interrupted. It is reported beside them
//! (`steal_sched_ns`), never subtracted.
//!
//! The perf backend has no per-wake-up steal: its episodes keep /proc/stat
//! steal over the housekeeping interval ([`proc_stat`]) and no split.

use latscope_model::{Breakdown, Cause, CauseKind, Nanos, StealSource};

use super::attribute::sort_causes;

/// Steal the kernel read around one wake-up, ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelSteal {
    pub source: StealSource,
    /// From arming to the callback.
    pub irq_ns: u64,
    /// From the callback to the switch-in.
    pub sched_ns: u64,
}

/// The name of the hypervisor's share.
pub const HYPERVISOR: &str = "hypervisor: the vCPU was not running (steal)";
const LATE_WHILE: &str = "timer interrupt late while ";
const IDLE_LATE: &str = "CPU idle, timer interrupt late";

/// Records the steal in `b` and moves up to `steal.irq_ns` from the irq
/// phase's unexplained and late-out-of-idle shares into a hypervisor share.
pub(crate) fn split(b: &mut Breakdown, steal: KernelSteal) {
    b.steal_source = Some(steal.source);
    b.steal_irq_ns = Some(Nanos(steal.irq_ns));
    b.steal_sched_ns = Some(Nanos(steal.sched_ns));
    b.steal_ns = Some(Nanos(steal.irq_ns.saturating_add(steal.sched_ns)));
    if !steal.source.per_wakeup() {
        return;
    }
    let mut left = steal.irq_ns;
    let mut taken = 0u64;
    // Unexplained first: a vCPU kept from running while a thread ran shows
    // as exactly that; a halted one accrues steal only once it is runnable.
    for late_idle in [false, true] {
        for c in b
            .causes
            .iter_mut()
            .filter(|c| eligible(c) == Some(late_idle))
        {
            let take = left.min(c.duration_ns.0);
            c.duration_ns = Nanos(c.duration_ns.0 - take);
            left -= take;
            taken += take;
        }
    }
    b.causes
        .retain(|c| eligible(c).is_none() || c.duration_ns.0 > 0);
    for c in b.causes.iter_mut() {
        rename_unobservable(c);
    }
    if taken > 0 {
        b.causes.push(Cause {
            kind: CauseKind::Hypervisor,
            name: HYPERVISOR.to_string(),
            pid: None,
            policy: None,
            priority: None,
            duration_ns: Nanos(taken),
            parts: Vec::new(),
        });
    }
    sort_causes(&mut b.causes);
    b.unexplained_ns = Nanos(
        b.causes
            .iter()
            .filter(|c| c.kind == CauseKind::Unexplained)
            .map(|c| c.duration_ns.0)
            .sum(),
    );
}

/// `Some(false)` for an unexplained share of the irq phase, `Some(true)`
/// for the CPU idle while our interrupt was late, `None` otherwise.
fn eligible(c: &Cause) -> Option<bool> {
    match c.kind {
        CauseKind::Unexplained if c.name.starts_with(LATE_WHILE) => Some(false),
        CauseKind::Idle if c.name == IDLE_LATE => Some(true),
        _ => None,
    }
}

/// "timer interrupt late while X ran" once the steal clock has spoken:
/// what is left is interrupts off, or something no event shows.
fn rename_unobservable(c: &mut Cause) {
    if c.kind != CauseKind::Unexplained {
        return;
    }
    if let Some(rest) = c.name.strip_prefix(LATE_WHILE) {
        c.name = format!("interrupts off or unobservable while {rest}");
    }
}

/// The perf backend's steal (and the BPF backend's when the kernel has no
/// steal counter): /proc/stat over the housekeeping interval around the
/// episode, unless the kernel's per-wake-up figure is already there.
pub(crate) fn proc_stat(b: &mut Breakdown, steal: Option<Nanos>) {
    if b.steal_source.is_some_and(StealSource::per_wakeup) {
        return;
    }
    b.steal_ns = steal;
    b.steal_source = steal.map(|_| StealSource::ProcStat);
}

/// The hypervisor shares of every episode (the cause totals' row).
pub(crate) fn hypervisor_total(totals: &[latscope_model::CauseTotal]) -> Nanos {
    Nanos(
        totals
            .iter()
            .filter(|t| t.kind == CauseKind::Hypervisor)
            .map(|t| t.total_ns.0)
            .sum(),
    )
}
