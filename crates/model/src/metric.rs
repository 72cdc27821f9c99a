//! Metric names. They are stable API: JSON, the store and exports use them
//! verbatim, so they are constants here and nowhere else.

/// Intended expiry → our user code runs (what cyclictest reports).
pub const TIMER_LATENCY: &str = "timer.latency";
/// Spacing between consecutive wake-ups (Jones & Regehr's callback spacing).
pub const TIMER_INTERVAL: &str = "timer.interval";
/// Intended expiry → our hrtimer's callback runs (`hrtimer_expire_entry.now`).
pub const TIMER_IRQ: &str = "timer.irq";
/// Our hrtimer's callback → our thread switched in (`sched_switch`).
pub const TIMER_SCHED: &str = "timer.sched";
/// Our thread switched in → user code runs.
pub const TIMER_RETURN: &str = "timer.return";
/// Prefix of `softirq.delay.<VEC>`: raise → entry of a softirq vector.
pub const SOFTIRQ_DELAY_PREFIX: &str = "softirq.delay.";
/// Prefix of `softirq.exec.<VEC>`: run time of a softirq vector.
pub const SOFTIRQ_EXEC_PREFIX: &str = "softirq.exec.";
/// Prefix of `irq.exec.<N>:<name>` (hard IRQ handlers) and
/// `irq.exec.vector:<name>` (x86 interrupt vectors such as local_timer).
pub const IRQ_EXEC_PREFIX: &str = "irq.exec.";
/// NMI handler run time.
pub const NMI_EXEC: &str = "nmi.exec";
/// Prefix of `workqueue.exec.<function>`: work item run time by function.
pub const WORKQUEUE_EXEC_PREFIX: &str = "workqueue.exec.";
/// Prefix of `deferred.exec.<CONTEXT>.<kind>:<name>`: deferred work by what
/// ran inside a softirq (CONTEXT = its vector, e.g. `TIMER`, `NET_RX`) or a
/// hard interrupt (`hardirq`): `timer:<function>` (timer-wheel callbacks),
/// `hrtimer:<function>`, `tasklet:<function>`, `napi:<device>`; `(other)`
/// for sources past the bound.
pub const DEFERRED_EXEC_PREFIX: &str = "deferred.exec.";

/// One `deferred.exec.` metric's parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeferredName<'a> {
    /// The softirq vector's name, or `hardirq`.
    pub context: &'a str,
    /// `timer`, `hrtimer`, `tasklet` or `napi`.
    pub kind: &'a str,
    /// The function or device.
    pub what: &'a str,
}

/// Splits `deferred.exec.NET_RX.napi:eth0` into its parts; `None` for any
/// other metric.
pub fn deferred_name(metric: &str) -> Option<DeferredName<'_>> {
    let rest = metric.strip_prefix(DEFERRED_EXEC_PREFIX)?;
    let (context, rest) = rest.split_once('.')?;
    let (kind, what) = rest.split_once(':')?;
    Some(DeferredName {
        context,
        kind,
        what,
    })
}

/// Length of each interruption of the noise probe's CPU-bound loop.
pub const NOISE_GAP: &str = "noise.gap";
/// The sender's clock just before `sendto` → the kernel's `TX_SOFTWARE`
/// time stamp (the driver's transmit routine: Bernadat's pseudo NIC).
pub const UDP_SEND: &str = "udp.send";
/// The sender's clock just before `sendto` → the kernel's `TX_SCHED` time
/// stamp (before the packet scheduler): the first stage of `udp.send`.
pub const UDP_SEND_SCHED: &str = "udp.send.sched";
/// The kernel's `RX_SOFTWARE` time stamp → the receiver's user code has
/// the datagram.
pub const UDP_RECV: &str = "udp.recv";
/// The sender's clock before `sendto` → the receiver's user code: the whole
/// one-way path on one machine.
pub const UDP_PATH: &str = "udp.path";
/// With `--trace`, `udp.recv` in three parts: receive time stamp → our
/// receiver woken (`sched_waking`, the protocol work in `NET_RX`) ...
pub const UDP_RECV_DELIVER: &str = "udp.recv.deliver";
/// ... woken → switched in ...
pub const UDP_RECV_SCHED: &str = "udp.recv.sched";
/// ... switched in → user code has the datagram.
pub const UDP_RECV_RETURN: &str = "udp.recv.return";
/// The application probe: one sample per underrun (the device found no
/// buffer at a period boundary), its length: the buffer's deadline → the
/// buffer was ready. The per-second timeline counts underruns per second.
pub const APP_UNDERRUN: &str = "app.underrun";
/// The application probe: a freed buffer slot (the device's period tick)
/// → the producer runs, for every buffer it slept for (the timer probe's
/// `timer.latency` of the producer's wake-up).
pub const APP_WAKEUP: &str = "app.wakeup";
/// The application probe: a freed buffer slot → the buffer is filled
/// (wake-up, compute and every interruption of either); a buffer underruns
/// when this exceeds its buffered time `(n − 1)·t`.
pub const APP_RESPONSE: &str = "app.response";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deferred_names_split_into_context_kind_and_source() {
        let n = deferred_name("deferred.exec.NET_RX.napi:(no_device)").unwrap();
        assert_eq!(
            (n.context, n.kind, n.what),
            ("NET_RX", "napi", "(no_device)")
        );
        // A function name may hold dots (a .cold part), the first dot ends
        // the context.
        let n = deferred_name("deferred.exec.hardirq.hrtimer:f.cold").unwrap();
        assert_eq!(
            (n.context, n.kind, n.what),
            ("hardirq", "hrtimer", "f.cold")
        );
        assert_eq!(deferred_name("softirq.exec.TIMER"), None);
        assert_eq!(deferred_name("deferred.exec.TIMER"), None);
    }
}
