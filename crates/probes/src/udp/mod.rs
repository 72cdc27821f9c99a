//! The UDP probe: how long does the network stack take to send a datagram
//! and to deliver one? Bernadat's UDP/IP send and receive latency test, with
//! the kernel's own software time stamps in place of his pseudo NIC driver.
//!
//! A sender and a receiver, each a pinned thread at the chosen policy,
//! exchange one datagram every period over loopback or a private veth pair
//! ([`path`]). Per datagram:
//! - `udp.send` / `udp.send.sched`: the sender's clock just before `send` →
//!   the kernel's `TX_SOFTWARE` (driver) / `TX_SCHED` (before the qdisc)
//!   stamp, read from the socket's error queue;
//! - `udp.recv`: the kernel's `RX_SOFTWARE` stamp → the receiver has it;
//! - `udp.path`: the sender's clock before `send` → the receiver has it.
//!
//! The kernel stamps in CLOCK_REALTIME, so the two stamp-based metrics are
//! taken against CLOCK_REALTIME reads made next to the CLOCK_MONOTONIC ones;
//! both clocks run at the same rate, and a step of the real-time clock
//! shows up as a datagram whose path is shorter than its send
//! ([`UdpStats::inconsistent`]). Sequence numbers give loss, reordering and
//! duplicates; datagrams without a stamp are counted.

mod pair;
mod path;
mod seq;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use latscope_model::{metric, CpuId, Nanos, UdpPath, UdpStats};
use latscope_platform::net::{Stamps, TsSocket, TxStage};
use latscope_platform::timers::{self, Errno};
use latscope_platform::{monotonic_ns, realtime_ns, SchedPolicy};
use latscope_record::TimelineChunk;

use crate::threads::{self, bump, PinnedThreads};
use crate::timer::Schedule;
use crate::{
    Handoff, MetricRecorder, Probe, ProbeError, ProbeFinal, ProbeSnapshot, ProbeStats, Progress,
    RunningProbe, SampleRing, SettingError, ThreadSetup,
};
use pair::PairCheck;
use seq::{Arrival, SeqTracker};

/// The smallest payload: a sequence number and the send time.
pub const MIN_PAYLOAD: usize = 16;
/// The largest UDP payload over IPv4 (65,535 − 20 − 8).
pub const MAX_PAYLOAD: usize = 65_507;
/// The shortest period: below it the sender's own stamp reading would take
/// a noticeable share of each period.
pub const MIN_PERIOD: Nanos = Nanos::from_micros(100);
/// How long the receiver waits for datagrams still in flight once the
/// sender has stopped; what has not come by then is lost.
const GRACE_NS: u64 = 200_000_000;
/// How often a waiting receiver looks at whether the sender has stopped.
const RECEIVE_TIMEOUT_NS: u64 = 20_000_000;
/// Send times kept for matching transmit stamps to their sends.
const SEND_RING: usize = 256;
/// Sequence number of the warm-up datagrams, which are not measured.
const WARM_UP: u64 = u64::MAX;

/// Settings of one UDP-probe cell.
#[derive(Clone, Debug)]
pub struct UdpConfig {
    pub sender_cpu: CpuId,
    pub receiver_cpu: CpuId,
    pub path: UdpPath,
    pub period: Nanos,
    /// UDP payload bytes.
    pub payload: usize,
    pub policy: SchedPolicy,
    pub priority: u32,
    pub threshold: Option<Nanos>,
    pub duration: Option<Nanos>,
    /// Hand every received datagram's (receive stamp, user) to a reader
    /// (the trace analysis) through a ring of this many entries; 0: off.
    pub handoff: usize,
}

impl UdpConfig {
    pub fn validate(&self) -> Result<(), SettingError> {
        if self.period < MIN_PERIOD || self.period > Nanos::from_secs(10) {
            return Err(SettingError::UdpPeriod {
                period: self.period,
                min: MIN_PERIOD,
            });
        }
        if !(MIN_PAYLOAD..=MAX_PAYLOAD).contains(&self.payload) {
            return Err(SettingError::Payload {
                payload: self.payload,
                min: MIN_PAYLOAD,
                max: MAX_PAYLOAD,
            });
        }
        if self.policy.has_priority() && !(1..=99).contains(&self.priority) {
            return Err(SettingError::Priority(self.priority));
        }
        if let Some(d) = self.duration {
            if d < self.period {
                return Err(SettingError::DurationUnderPeriod {
                    duration: d,
                    period: self.period,
                });
            }
        }
        Ok(())
    }
}

/// Counters and recorders; each field has one writer (sender or receiver)
/// except the pair check, which is lock-free.
pub struct UdpState {
    send: MetricRecorder,
    send_sched: MetricRecorder,
    recv: MetricRecorder,
    path: MetricRecorder,
    // Sender's.
    sent: AtomicU64,
    send_errors: AtomicU64,
    overruns: AtomicU64,
    skipped: AtomicU64,
    tx_sched: AtomicU64,
    tx_software: AtomicU64,
    sender_done: AtomicBool,
    // Receiver's.
    receiver_done: AtomicBool,
    received: AtomicU64,
    reordered: AtomicU64,
    duplicates: AtomicU64,
    missing_rx: AtomicU64,
    /// One past the highest sequence number received.
    highest: AtomicU64,
    max_path: AtomicU64,
    pair: PairCheck,
    handoff: Option<Arc<SampleRing>>,
}

impl UdpState {
    fn new(cfg: &UdpConfig) -> UdpState {
        let (s, r) = (Some(cfg.sender_cpu), Some(cfg.receiver_cpu));
        UdpState {
            send: MetricRecorder::new(metric::UDP_SEND, s, cfg.threshold),
            send_sched: MetricRecorder::new(metric::UDP_SEND_SCHED, s, cfg.threshold),
            recv: MetricRecorder::new(metric::UDP_RECV, r, cfg.threshold),
            path: MetricRecorder::new(metric::UDP_PATH, r, cfg.threshold),
            sent: AtomicU64::new(0),
            send_errors: AtomicU64::new(0),
            overruns: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            tx_sched: AtomicU64::new(0),
            tx_software: AtomicU64::new(0),
            sender_done: AtomicBool::new(false),
            receiver_done: AtomicBool::new(false),
            received: AtomicU64::new(0),
            reordered: AtomicU64::new(0),
            duplicates: AtomicU64::new(0),
            missing_rx: AtomicU64::new(0),
            highest: AtomicU64::new(0),
            max_path: AtomicU64::new(0),
            pair: PairCheck::default(),
            handoff: (cfg.handoff > 0).then(|| Arc::new(SampleRing::new(cfg.handoff))),
        }
    }

    fn stats(&self, cfg: &UdpConfig) -> UdpStats {
        let sent = self.sent.load(Ordering::Relaxed);
        let received = self.received.load(Ordering::Relaxed);
        let (checked, inconsistent) = self.pair.counts();
        UdpStats {
            path: cfg.path,
            sender_cpu: cfg.sender_cpu,
            receiver_cpu: cfg.receiver_cpu,
            payload_bytes: u32::try_from(cfg.payload).unwrap_or(u32::MAX),
            period_ns: cfg.period,
            sent,
            send_errors: self.send_errors.load(Ordering::Relaxed),
            received,
            // While the run goes on, only gaps below the highest number
            // received (a datagram in flight is not lost); once the
            // receiver has ended, everything sent and not received.
            lost: if self.receiver_done.load(Ordering::Acquire) {
                sent.saturating_sub(received)
            } else {
                self.highest
                    .load(Ordering::Relaxed)
                    .saturating_sub(received)
            },
            reordered: self.reordered.load(Ordering::Relaxed),
            duplicates: self.duplicates.load(Ordering::Relaxed),
            overruns: self.overruns.load(Ordering::Relaxed),
            skipped_sends: self.skipped.load(Ordering::Relaxed),
            missing_tx_sched: sent.saturating_sub(self.tx_sched.load(Ordering::Relaxed)),
            missing_tx_software: sent.saturating_sub(self.tx_software.load(Ordering::Relaxed)),
            missing_rx_software: self.missing_rx.load(Ordering::Relaxed),
            checked,
            inconsistent,
        }
    }

    fn recorders(&self) -> [&MetricRecorder; 4] {
        [&self.send, &self.send_sched, &self.recv, &self.path]
    }
}

/// A configured UDP probe, its recorders allocated.
pub struct UdpProbe {
    config: UdpConfig,
    state: Arc<UdpState>,
}

enum Role {
    Sender,
    Receiver,
}

impl UdpProbe {
    pub fn new(config: UdpConfig) -> Result<UdpProbe, ProbeError> {
        config.validate().map_err(ProbeError::Config)?;
        let state = Arc::new(UdpState::new(&config));
        Ok(UdpProbe { config, state })
    }

    /// Opens the way between the sockets, warms it up, starts both threads
    /// and returns once they are set up and measuring.
    pub fn start(self, stop: Arc<AtomicBool>) -> Result<RunningUdpProbe, ProbeError> {
        let cfg = self.config;
        let ends = path::open(cfg.path)?;
        let (mut tx, mut rx) = (ends.tx, ends.rx);
        warm_up(&mut tx, &mut rx, cfg.payload).map_err(ProbeError::Network)?;
        // Receiver first, then sender: the order of `setups` and of
        // `handoffs` (the trace analysis takes the receiver's first).
        let specs = [
            (Role::Receiver, rx, cfg.receiver_cpu),
            (Role::Sender, tx, cfg.sender_cpu),
        ]
        .into_iter()
        .map(|(role, sock, cpu)| {
            let state = Arc::clone(&self.state);
            let c = cfg.clone();
            let stop = Arc::clone(&stop);
            let name = match role {
                Role::Sender => format!("lat-udp-tx/{cpu}"),
                Role::Receiver => format!("lat-udp-rx/{cpu}"),
            };
            threads::Spec {
                name,
                cpu,
                body: move |start: u64| match role {
                    Role::Sender => send_loop(sock, &state, &c, &stop, start),
                    Role::Receiver => receive_loop(sock, &state, &c, start),
                },
            }
        })
        .collect();
        let sched = threads::Sched {
            policy: cfg.policy,
            priority: cfg.priority,
            nice: None,
            slack: latscope_model::TimerSlack::MINIMUM,
        };
        let threads = threads::start(specs, sched)?;
        Ok(RunningUdpProbe {
            config: cfg,
            state: self.state,
            threads,
            namespaces: ends.namespaces,
        })
    }
}

impl Probe for UdpProbe {
    fn name(&self) -> &'static str {
        "udp"
    }

    fn validate(&self) -> Result<(), ProbeError> {
        self.config.validate().map_err(ProbeError::Config)
    }

    fn start(self: Box<Self>, stop: Arc<AtomicBool>) -> Result<Box<dyn RunningProbe>, ProbeError> {
        Ok(Box::new(UdpProbe::start(*self, stop)?))
    }
}

/// Waits of 100 ms for a warm-up datagram before the probe gives up.
const WARM_UP_TIMEOUTS: u32 = 20;

/// Sends datagrams until one arrives with a receive stamp (the kernel turns
/// receive stamping on through a deferred work item when the first socket
/// asks) and the route is warm, then turns transmit stamps on, so that send
/// numbers start at 0 with the first measured datagram.
fn warm_up(tx: &mut TsSocket, rx: &mut TsSocket, payload: usize) -> Result<(), String> {
    let err = |e: std::io::Error| format!("cannot set up the probe's sockets: {e}");
    rx.enable_stamps(Stamps::Receive).map_err(err)?;
    rx.set_receive_timeout(100_000_000).map_err(err)?;
    rx.set_receive_buffer(4 << 20).map_err(err)?;
    let mut buf = vec![0u8; payload];
    buf[..8].copy_from_slice(&WARM_UP.to_le_bytes());
    let mut stamped = 0;
    let mut timeouts = 0;
    for _ in 0..200 {
        tx.send(&buf)
            .map_err(|e| format!("cannot send on the probe's socket: {}", e.to_io()))?;
        match rx.recv(&mut buf) {
            Ok(r) if r.stamp_realtime_ns.is_some() => {
                stamped += 1;
                if stamped >= 3 {
                    break;
                }
            }
            Ok(_) => std::thread::sleep(std::time::Duration::from_millis(1)),
            // A fresh path can take longer than one wait (address
            // resolution on a new veth pair, a busy host): send again,
            // for up to WARM_UP_TIMEOUTS waits in all.
            Err(e) if e.to_io().kind() == std::io::ErrorKind::WouldBlock => {
                timeouts += 1;
                if timeouts >= WARM_UP_TIMEOUTS {
                    return Err(format!(
                        "the probe's warm-up datagram did not arrive in {timeouts} tries of 100 ms: {}",
                        e.to_io()
                    ));
                }
            }
            Err(e) => {
                return Err(format!(
                    "the probe's warm-up datagram did not arrive: {}",
                    e.to_io()
                ))
            }
        }
        buf[..8].copy_from_slice(&WARM_UP.to_le_bytes());
    }
    tx.enable_stamps(Stamps::Transmit).map_err(err)?;
    rx.set_receive_timeout(RECEIVE_TIMEOUT_NS).map_err(err)?;
    Ok(())
}

/// The sender's loop: a datagram on every grid point, then its stamps.
fn send_loop(
    mut sock: TsSocket,
    st: &UdpState,
    cfg: &UdpConfig,
    stop: &AtomicBool,
    start: u64,
) -> Result<(), Errno> {
    let period = cfg.period.0;
    let end = cfg.duration.map_or(u64::MAX, |d| start.saturating_add(d.0));
    let mut schedule = Schedule::new(start + period, period);
    let mut buf = vec![0u8; cfg.payload];
    let mut sent_at = [0u64; SEND_RING];
    // Sends the kernel numbered (`OPT_ID`), which is every send that got
    // as far as building a packet.
    let mut numbered = 0u64;
    let mut second = 0u64;
    let mut next_second = start + 1_000_000_000;
    let result = loop {
        if schedule.next_deadline() > end || stop.load(Ordering::Relaxed) {
            break Ok(());
        }
        if let Err(e) = timers::sleep_until(schedule.next_deadline()) {
            break Err(e);
        }
        let now = monotonic_ns();
        let wake = schedule.woke(now);
        if wake.skipped > 0 {
            bump(&st.overruns, 1);
            bump(&st.skipped, wake.skipped);
        }
        if now >= next_second {
            second = now.saturating_sub(start) / 1_000_000_000;
            next_second = start + (second + 1) * 1_000_000_000;
        }
        let seq = numbered;
        let t0_real = realtime_ns();
        let t0 = monotonic_ns();
        buf[..8].copy_from_slice(&seq.to_le_bytes());
        buf[8..16].copy_from_slice(&t0.to_le_bytes());
        sent_at[(seq % SEND_RING as u64) as usize] = t0_real;
        match sock.send(&buf) {
            Ok(()) => {
                bump(&st.sent, 1);
                numbered += 1;
            }
            Err(e) => {
                bump(&st.send_errors, 1);
                // ENOBUFS comes from below the socket, after the packet
                // (and its number) was made; other errors come before.
                if e.is_no_buffers() {
                    numbered += 1;
                }
            }
        }
        if let Err(e) = take_stamps(&mut sock, st, &sent_at, numbered, second) {
            break Err(e);
        }
    };
    // Stamps of the last sends, if any are still on their way.
    let until = monotonic_ns() + 5_000_000;
    while monotonic_ns() < until
        && (st.tx_sched.load(Ordering::Relaxed) < st.sent.load(Ordering::Relaxed)
            || st.tx_software.load(Ordering::Relaxed) < st.sent.load(Ordering::Relaxed))
    {
        let _ = take_stamps(&mut sock, st, &sent_at, numbered, second);
        let _ = timers::sleep_for(100_000);
    }
    st.sender_done.store(true, Ordering::Release);
    result
}

/// Takes every transmit stamp waiting on the error queue.
#[inline]
fn take_stamps(
    sock: &mut TsSocket,
    st: &UdpState,
    sent_at: &[u64; SEND_RING],
    numbered: u64,
    second: u64,
) -> Result<(), Errno> {
    while let Some(stamp) = sock.next_tx_stamp()? {
        if numbered == 0 {
            continue;
        }
        // The kernel's number is 32 bits: the latest send with those low
        // bits.
        let last = numbered - 1;
        let back = u64::from((last as u32).wrapping_sub(stamp.id));
        if back >= SEND_RING as u64 || back > last {
            continue;
        }
        let seq = last - back;
        let t0 = sent_at[(seq % SEND_RING as u64) as usize];
        let ns = stamp.realtime_ns.saturating_sub(t0);
        match stamp.stage {
            TxStage::Sched => {
                st.send_sched.record(second, ns);
                bump(&st.tx_sched, 1);
            }
            TxStage::Software => {
                st.send.record(second, ns);
                bump(&st.tx_software, 1);
                st.pair.sent(seq, ns);
            }
        }
    }
    Ok(())
}

/// The receiver's loop: until the sender is done and every datagram sent
/// has come, or the grace period after the sender's end has passed.
fn receive_loop(
    mut sock: TsSocket,
    st: &UdpState,
    cfg: &UdpConfig,
    start: u64,
) -> Result<(), Errno> {
    let mut buf = vec![0u8; cfg.payload.max(MIN_PAYLOAD)];
    let mut seqs = SeqTracker::default();
    let mut done_at: Option<u64> = None;
    let mut second = 0u64;
    let mut next_second = start + 1_000_000_000;
    loop {
        match sock.recv(&mut buf) {
            Ok(r) => {
                let real = realtime_ns();
                let now = monotonic_ns();
                if r.len < MIN_PAYLOAD {
                    continue;
                }
                let seq = u64::from_le_bytes(word(&buf, 0));
                if seq == WARM_UP {
                    continue;
                }
                let t0 = u64::from_le_bytes(word(&buf, 8));
                if now >= next_second {
                    second = now.saturating_sub(start) / 1_000_000_000;
                    next_second = start + (second + 1) * 1_000_000_000;
                }
                let arrival = seqs.arrive(seq);
                st.received.store(seqs.received, Ordering::Relaxed);
                st.reordered.store(seqs.reordered, Ordering::Relaxed);
                st.duplicates.store(seqs.duplicates, Ordering::Relaxed);
                st.highest.store(seqs.next(), Ordering::Relaxed);
                if arrival == Arrival::Duplicate {
                    continue;
                }
                let path = now.saturating_sub(t0);
                st.path.record(second, path);
                if path > st.max_path.load(Ordering::Relaxed) {
                    st.max_path.store(path, Ordering::Relaxed);
                }
                st.pair.received(seq, path);
                match r.stamp_realtime_ns {
                    Some(stamp) => {
                        st.recv.record(second, real.saturating_sub(stamp));
                        if let Some(ring) = &st.handoff {
                            // The stamp on CLOCK_MONOTONIC, through the
                            // offset between the two reads just made.
                            let offset = real.saturating_sub(now);
                            ring.push(stamp.saturating_sub(offset), now);
                        }
                    }
                    None => bump(&st.missing_rx, 1),
                }
            }
            Err(e) if e.is_again() => {}
            Err(e) => {
                st.receiver_done.store(true, Ordering::Release);
                return Err(e);
            }
        }
        if st.sender_done.load(Ordering::Acquire) {
            let sent = st.sent.load(Ordering::Relaxed);
            let now = monotonic_ns();
            let since = *done_at.get_or_insert(now);
            if seqs.received >= sent || now.saturating_sub(since) >= GRACE_NS {
                st.receiver_done.store(true, Ordering::Release);
                return Ok(());
            }
        }
    }
}

fn word(buf: &[u8], at: usize) -> [u8; 8] {
    let mut w = [0u8; 8];
    w.copy_from_slice(&buf[at..at + 8]);
    w
}

/// The probe while its threads run.
pub struct RunningUdpProbe {
    config: UdpConfig,
    state: Arc<UdpState>,
    /// Receiver, then sender.
    threads: PinnedThreads<Result<(), Errno>>,
    namespaces: Vec<latscope_platform::net::NetNs>,
}

impl RunningUdpProbe {
    pub fn config(&self) -> &UdpConfig {
        &self.config
    }
}

impl RunningProbe for RunningUdpProbe {
    fn setups(&self) -> &[ThreadSetup] {
        &self.threads.setups
    }

    fn start_ns(&self) -> u64 {
        self.threads.start_ns
    }

    fn finished(&self) -> bool {
        self.threads.finished()
    }

    /// Datagrams received, the longest path, sender overruns.
    fn progress(&self) -> Progress {
        Progress {
            samples: self.state.received.load(Ordering::Relaxed),
            max_latency: Nanos(self.state.max_path.load(Ordering::Relaxed)),
            overruns: self.state.overruns.load(Ordering::Relaxed),
        }
    }

    /// While the run goes on, datagrams in flight are not lost yet (see
    /// [`UdpState::stats`]).
    fn snapshot(&self) -> ProbeSnapshot {
        ProbeSnapshot {
            metrics: self.state.recorders().iter().map(|r| r.result()).collect(),
            stats: ProbeStats {
                udp: Some(self.state.stats(&self.config)),
                ..ProbeStats::default()
            },
        }
    }

    fn drain_timeline(&self) -> Vec<TimelineChunk> {
        self.state
            .recorders()
            .iter()
            .filter_map(|r| r.drain_timeline(false))
            .collect()
    }

    /// The receiver's CPU, thread and ring (the trace analysis's samples),
    /// then the sender's CPU and thread with an empty ring when it is on
    /// another CPU (the analysis follows its events too).
    fn handoffs(&self) -> Vec<Handoff> {
        let Some(ring) = &self.state.handoff else {
            return Vec::new();
        };
        let mut out = Vec::new();
        if let Some(rx) = self.threads.setups.first() {
            out.push(Handoff {
                cpu: self.config.receiver_cpu,
                tid: rx.tid,
                ring: Arc::clone(ring),
            });
        }
        if self.config.sender_cpu != self.config.receiver_cpu {
            if let Some(tx) = self.threads.setups.get(1) {
                out.push(Handoff {
                    cpu: self.config.sender_cpu,
                    tid: tx.tid,
                    ring: Arc::new(SampleRing::new(2)),
                });
            }
        }
        out
    }

    /// The final counts: what was not received by now is lost.
    fn finish(self: Box<Self>) -> ProbeFinal {
        let this = *self;
        let error = this.threads.join(|cpu, r| {
            r.err()
                .map(|e| ProbeError::Network(format!("udp probe on CPU {cpu}: {}", e.to_io())))
        });
        // The namespaces (and the veth pair) go once no thread uses them.
        drop(this.namespaces);
        let recorders = this.state.recorders();
        let timeline = recorders
            .iter()
            .filter_map(|r| r.drain_timeline(true))
            .collect();
        let lost_timeline_seconds = recorders.iter().map(|r| r.lost_seconds()).sum();
        ProbeFinal {
            snapshot: ProbeSnapshot {
                metrics: recorders.iter().map(|r| r.result()).collect(),
                stats: ProbeStats {
                    udp: Some(this.state.stats(&this.config)),
                    ..ProbeStats::default()
                },
            },
            timeline,
            lost_timeline_seconds,
            error,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> UdpConfig {
        UdpConfig {
            sender_cpu: CpuId(0),
            receiver_cpu: CpuId(0),
            path: UdpPath::Loopback,
            period: Nanos::from_millis(2),
            payload: 64,
            policy: SchedPolicy::Other,
            priority: 0,
            threshold: None,
            duration: Some(Nanos::from_millis(300)),
            handoff: 0,
        }
    }

    #[test]
    fn settings_are_checked() {
        assert!(config().validate().is_ok());
        let mut c = config();
        c.payload = 8;
        assert!(matches!(c.validate(), Err(SettingError::Payload { .. })));
        c.payload = MAX_PAYLOAD + 1;
        assert!(c.validate().is_err());
        let mut c = config();
        c.period = Nanos::from_micros(10);
        assert!(matches!(c.validate(), Err(SettingError::UdpPeriod { .. })));
    }

    #[test]
    fn a_loopback_run_counts_every_datagram() {
        let running: Box<dyn RunningProbe> = Box::new(
            UdpProbe::new(config())
                .unwrap()
                .start(Arc::new(AtomicBool::new(false)))
                .unwrap(),
        );
        assert_eq!(running.setups().len(), 2, "receiver and sender");
        while !running.finished() {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let done = running.finish();
        assert!(done.error.is_none(), "{:?}", done.error);
        let s = done.snapshot.stats.udp.clone().unwrap();
        // 300 ms at 2 ms: 150 sends, fewer if the thread was late.
        assert!(s.sent >= 100 && s.sent + s.skipped_sends <= 150, "{s:?}");
        assert_eq!(s.received, s.sent, "{s:?}");
        assert_eq!(s.lost + s.reordered + s.duplicates, 0, "{s:?}");
        assert_eq!(s.missing_rx_software + s.missing_tx_software, 0, "{s:?}");
        assert_eq!(s.inconsistent, 0, "{s:?}");
        assert!(s.checked > 0, "{s:?}");
        let results = &done.snapshot.metrics;
        let count = |name: &str| {
            results
                .iter()
                .find(|m| m.name == name)
                .map_or(0, |m| m.histogram.count())
        };
        assert_eq!(count(metric::UDP_PATH), s.received);
        assert_eq!(count(metric::UDP_RECV), s.received);
        assert_eq!(count(metric::UDP_SEND), s.sent);
        assert_eq!(count(metric::UDP_SEND_SCHED), s.sent);
    }
}
