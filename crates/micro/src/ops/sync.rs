//! Thread wake-ups through each synchronization primitive: the measuring
//! thread wakes a partner, which wakes it back — one round trip, two
//! wake-ups, per operation — on one CPU and across two. The primitives:
//! a bare futex word, an `eventfd`, a pipe (in `ctxswitch`) and a POSIX
//! condition variable (std's `Condvar`, a futex underneath plus its mutex).

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use latscope_model::CpuId;
use latscope_platform::set_affinity;
use latscope_platform::wake::{EventFd, Futex};

use super::benchmark::{Benchmark, Placement};
use crate::bench::{BenchError, Operation};

/// The two directions of a round trip over one primitive.
trait Channel: Send + Sync + 'static {
    /// Wakes the other side (direction `to`: 0 toward the partner, 1 back).
    fn signal(&self, to: usize) -> Result<(), BenchError>;
    /// Waits for a wake in direction `to`; `false` when told to stop.
    fn wait(&self, to: usize) -> Result<bool, BenchError>;
    /// Tells the side waiting in direction `to` to stop.
    fn stop(&self, to: usize);
}

/// Futex words: 0 idle, 1 signalled, 2 stop.
struct Futexes([Futex; 2]);

impl Channel for Futexes {
    fn signal(&self, to: usize) -> Result<(), BenchError> {
        self.0[to].store(1);
        self.0[to].wake(1);
        Ok(())
    }
    fn wait(&self, to: usize) -> Result<bool, BenchError> {
        loop {
            match self.0[to].load() {
                0 => self.0[to].wait(0),
                2 => return Ok(false),
                _ => {
                    self.0[to].store(0);
                    return Ok(true);
                }
            }
        }
    }
    fn stop(&self, to: usize) {
        self.0[to].store(2);
        self.0[to].wake(1);
    }
}

/// Two eventfds; a count of 2 or more (written at once) is the stop
/// request.
struct EventFds([EventFd; 2]);

impl Channel for EventFds {
    fn signal(&self, to: usize) -> Result<(), BenchError> {
        self.0[to].signal().map_err(|e| BenchError::Os {
            what: "signalling an eventfd".into(),
            source: e,
        })
    }
    fn wait(&self, to: usize) -> Result<bool, BenchError> {
        let n = self.0[to].wait().map_err(|e| BenchError::Os {
            what: "waiting on an eventfd".into(),
            source: e,
        })?;
        Ok(n == 1)
    }
    fn stop(&self, to: usize) {
        // One write of 2: two writes of 1 could be read one at a time.
        let _ = self.0[to].add(2);
    }
}

/// A flag per direction under one mutex, with a condition variable each.
struct CondVars {
    state: Mutex<[u8; 2]>,
    cv: [Condvar; 2],
}

impl Channel for CondVars {
    fn signal(&self, to: usize) -> Result<(), BenchError> {
        let mut s = self
            .state
            .lock()
            .map_err(|_| BenchError::Setup("a poisoned mutex".into()))?;
        s[to] = 1;
        self.cv[to].notify_one();
        Ok(())
    }
    fn wait(&self, to: usize) -> Result<bool, BenchError> {
        let mut s = self
            .state
            .lock()
            .map_err(|_| BenchError::Setup("a poisoned mutex".into()))?;
        while s[to] == 0 {
            s = self.cv[to]
                .wait(s)
                .map_err(|_| BenchError::Setup("a poisoned mutex".into()))?;
        }
        let go = s[to] == 1;
        s[to] = 0;
        Ok(go)
    }
    fn stop(&self, to: usize) {
        if let Ok(mut s) = self.state.lock() {
            s[to] = 2;
            self.cv[to].notify_one();
        }
    }
}

/// The measuring side: signals direction 0, waits on direction 1.
struct RoundTrip {
    channel: Arc<dyn Channel>,
    partner: Option<JoinHandle<()>>,
}

impl RoundTrip {
    fn new(channel: Arc<dyn Channel>, partner_cpu: u32) -> Result<RoundTrip, BenchError> {
        let theirs = Arc::clone(&channel);
        let partner = std::thread::Builder::new()
            .name("micro-partner".to_string())
            .spawn(move || {
                // Whatever ends the partner tells the measuring side, so
                // that it never waits for a partner that is gone.
                if set_affinity(CpuId(partner_cpu)).is_ok() {
                    while let Ok(true) = theirs.wait(0) {
                        if theirs.signal(1).is_err() {
                            break;
                        }
                    }
                }
                theirs.stop(1);
            })
            .map_err(|e| BenchError::Os {
                what: "starting the partner thread".into(),
                source: e,
            })?;
        let mut r = RoundTrip {
            channel,
            partner: Some(partner),
        };
        r.run(1).map_err(|_| {
            BenchError::Setup(format!(
                "the partner thread could not be pinned to CPU {partner_cpu}"
            ))
        })?;
        Ok(r)
    }
}

impl Operation for RoundTrip {
    fn run(&mut self, ops: u64) -> Result<(), BenchError> {
        for _ in 0..ops {
            self.channel.signal(0)?;
            if !self.channel.wait(1)? {
                return Err(BenchError::Setup("the partner stopped".into()));
            }
        }
        Ok(())
    }
}

impl Drop for RoundTrip {
    fn drop(&mut self) {
        self.channel.stop(0);
        if let Some(p) = self.partner.take() {
            let _ = p.join();
        }
    }
}

fn channel(kind: &str) -> Result<Arc<dyn Channel>, BenchError> {
    Ok(match kind {
        "futex" => Arc::new(Futexes([Futex::new(0), Futex::new(0)])),
        "eventfd" => {
            let e = || {
                EventFd::new().map_err(|e| BenchError::Os {
                    what: "creating an eventfd".into(),
                    source: e,
                })
            };
            Arc::new(EventFds([e()?, e()?]))
        }
        _ => Arc::new(CondVars {
            state: Mutex::new([0, 0]),
            cv: [Condvar::new(), Condvar::new()],
        }),
    })
}

pub(super) fn benchmarks() -> Vec<Benchmark> {
    let mut v = Vec::new();
    for kind in ["futex", "eventfd", "condvar"] {
        for two in [false, true] {
            v.push(Benchmark::new(
                "sync",
                format!("{kind}_{}", if two { "two_cpus" } else { "same_cpu" }),
                format!(
                    "one round trip of {kind} wake-ups, two threads on {}",
                    if two { "two CPUs" } else { "one CPU" }
                ),
                two,
                move |p: Placement| {
                    let cpu = if two {
                        p.other_cpu.ok_or_else(|| {
                            BenchError::Setup("needs a second CPU (give --cpus with two)".into())
                        })?
                    } else {
                        p.cpu
                    };
                    Ok(Box::new(RoundTrip::new(channel(kind)?, cpu)?))
                },
            ));
        }
    }
    v
}
