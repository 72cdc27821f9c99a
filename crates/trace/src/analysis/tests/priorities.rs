//! Several measuring threads on one CPU (`run --priorities`): two threads,
//! FIFO 90 and FIFO 10, sleep until the same expiry and are woken by the
//! same hrtimer interrupt. Each cell has its own analysis over the same
//! events, following its own thread: each gets the interrupt part, and its
//! own scheduling part, the lower one's holding the time the higher one
//! (and anything between them) ran first.

use super::*;

const HI: i32 = 100;
const LO: i32 = 101;
const H_HI: u64 = 0xffff_0000_2000;
const H_LO: u64 = 0xffff_0000_3000;
const INTERFERER: i32 = 300;

/// The analysis of one priority's thread on CPU 1.
fn follow(tid: i32, threshold: u64) -> Analyzer {
    let mut a = Analyzer::new(
        AnalyzerConfig::new(
            vec![Measured { cpu: CpuId(1), tid }],
            Nanos(threshold),
            D - 1_000_000_000,
        ),
        Box::new(NoEnvironment),
        Box::new(NoSymbols),
    );
    a.keep_decompositions();
    a
}

impl Script {
    fn arm_as(&mut self, time: u64, tid: i32, hrtimer: u64) -> &mut Script {
        self.at(
            time,
            tid,
            EventKind::HrtimerStart {
                hrtimer,
                function: 0x1,
                expires: D as i64,
                softexpires: D as i64,
            },
        )
    }

    fn callback(&mut self, time: u64, now: u64, hrtimer: u64, woken: (i32, &str)) -> &mut Script {
        self.at(
            time,
            0,
            EventKind::HrtimerExpireEntry {
                hrtimer,
                now: now as i64,
                function: 0x1,
            },
        )
        .at(
            time + 100,
            0,
            EventKind::SchedWaking {
                pid: woken.0,
                prio: 9,
                target_cpu: 1,
                comm: Comm::from_bytes(woken.1.as_bytes()),
            },
        )
        .at(time + 200, 0, EventKind::HrtimerExpireExit { hrtimer })
    }

    /// Both threads armed for `D` and asleep, then one timer interrupt
    /// (entry D+3 µs, `now` D+4 µs) runs both callbacks; the higher thread
    /// is switched in at D+8 µs and runs until D+30 µs.
    fn two_priorities(&mut self) -> &mut Script {
        let lt = self.lt;
        self.arm_as(D - 901 * US, HI, H_HI)
            .switch(D - 900 * US, (HI, "lat-t90/1", 9), (LO, "lat-t10/1", 89))
            .arm_as(D - 899 * US, LO, H_LO)
            .switch(D - 898 * US, (LO, "lat-t10/1", 89), (0, "swapper/1", 120))
            .at(
                D + 3 * US,
                0,
                EventKind::VectorEntry {
                    name: lt,
                    vector: 236,
                },
            )
            .callback(D + 4 * US, D + 4 * US, H_HI, (HI, "lat-t90/1"))
            .callback(D + 5 * US, D + 4 * US, H_LO, (LO, "lat-t10/1"))
            .at(
                D + 6 * US,
                0,
                EventKind::VectorExit {
                    name: lt,
                    vector: 236,
                },
            )
            .switch(D + 8 * US, (0, "swapper/1", 120), (HI, "lat-t90/1", 9))
    }

    /// Each analysis over the same events (the perf path).
    fn run_each(&self, threshold: u64, samples: &[(i32, u64, u64)]) -> Vec<Analyzer> {
        [HI, LO]
            .iter()
            .map(|&tid| {
                let mut a = follow(tid, threshold);
                for &(_, d, u) in samples.iter().filter(|s| s.0 == tid) {
                    a.on_sample(CpuId(1), d, u, &self.names);
                }
                for e in &self.events {
                    a.on_decoded(&Decoded::Event(*e), &self.names);
                }
                a.finish(&self.names);
                a
            })
            .collect()
    }
}

fn parts(a: &Analyzer) -> (u64, u64, u64) {
    let d = a.decompositions();
    assert_eq!(d.len(), 1, "{d:?}");
    (d[0].irq, d[0].sched, d[0].ret)
}

#[test]
fn two_threads_woken_by_one_interrupt_each_get_the_irq_part_and_their_own_sched_part() {
    let mut s = Script::new();
    s.two_priorities()
        .switch(D + 30 * US, (HI, "lat-t90/1", 9), (LO, "lat-t10/1", 89));
    let mut an = s.run_each(20 * US, &[(HI, D, D + 10 * US), (LO, D, D + 32 * US)]);
    let (hi, lo) = (parts(&an[0]), parts(&an[1]));
    assert_eq!(hi, (4 * US, 4 * US, 2 * US));
    assert_eq!(lo, (4 * US, 26 * US, 2 * US));
    // The lower thread's scheduling part holds the higher one's run.
    assert_eq!(lo.1 - hi.1, 22 * US);
    // Each analysis stores its own thread's figures.
    for (a, sched) in [(&an[0], 4 * US), (&an[1], 26 * US)] {
        let m = a.metrics(&s.names);
        let got = m
            .iter()
            .find(|x| x.name == "timer.sched" && x.cpu == Some(CpuId(1)))
            .and_then(|x| x.histogram.max());
        assert_eq!(got, Some(Nanos(sched)));
    }
    // Only the lower thread is late enough for an episode, and what ran
    // in its way is the higher measuring thread.
    assert!(an[0].take_episodes().is_empty());
    let eps = an[1].take_episodes();
    assert_eq!(eps.len(), 1);
    let e = &eps[0].0;
    assert_eq!(total(e), 32 * US, "causes partition the latency");
    assert_eq!(e.breakdown.sched_ns, Nanos(26 * US));
    let b = e.breakdown.blocking.as_ref().expect("blocking");
    assert_eq!((b.name.as_str(), b.pid), ("lat-t90/1", Some(HI)));
    assert_eq!(b.duration_ns, Nanos(22 * US));
}

#[test]
fn an_interferer_between_the_priorities_is_in_the_lower_threads_sched_part_only() {
    // FIFO 90 runs first, then a FIFO 50 interferer (kernel prio 49)
    // woken meanwhile runs 100 µs, then FIFO 10.
    let mut s = Script::new();
    s.two_priorities()
        .switch(
            D + 30 * US,
            (HI, "lat-t90/1", 9),
            (INTERFERER, "rt-load", 49),
        )
        .switch(
            D + 130 * US,
            (INTERFERER, "rt-load", 49),
            (LO, "lat-t10/1", 89),
        );
    let samples = [(HI, D, D + 10 * US), (LO, D, D + 132 * US)];
    let mut an = s.run_each(20 * US, &samples);
    assert_eq!(parts(&an[0]), (4 * US, 4 * US, 2 * US));
    assert_eq!(parts(&an[1]), (4 * US, 126 * US, 2 * US));
    let e = an[1].take_episodes().remove(0).0;
    let b = e.breakdown.blocking.as_ref().expect("blocking");
    assert_eq!((b.name.as_str(), b.pid), ("rt-load", Some(INTERFERER)));
    assert_eq!(b.duration_ns, Nanos(100 * US));
    // The higher measuring thread is named too, for its 22 µs.
    assert_eq!(
        cause(&e, CauseKind::Thread, "lat-t90/1").duration_ns,
        Nanos(22 * US)
    );

    // The BPF path: the kernel's pairing per thread (both callbacks see
    // the interrupt's one `now`), the recorder's window for the episode.
    let k = |cb_time: u64, switch_in: u64| KernelSample {
        expires: D as i64,
        callback_now: D + 4 * US,
        callback_time: cb_time,
        switch_in,
        steal: None,
    };
    let kernel = [
        (HI, D + 10 * US, k(D + 4 * US, D + 8 * US)),
        (LO, D + 132 * US, k(D + 5 * US, D + 130 * US)),
    ];
    for (i, (tid, wake, ks)) in kernel.into_iter().enumerate() {
        let mut a = follow(tid, 20 * US);
        let window: Vec<TraceEvent> = s.events.clone();
        let w = a
            .above_threshold(wake - D)
            .then_some((window.as_slice(), true));
        a.on_kernel_sample(CpuId(1), D, wake, Some(ks), w, &s.names);
        a.finish(&s.names);
        assert_eq!(parts(&a), parts(&an[i]), "thread {tid}: both paths agree");
    }
}
