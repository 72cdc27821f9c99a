//! Priority inversion, the scenario Bernadat warns of (NT had neither
//! inheritance nor ceiling), on one CPU under `SCHED_FIFO`:
//!
//! * L (priority 10) takes a mutex and needs [`HOLD_NS`] of CPU time before
//!   it lets go;
//! * H (30, the measuring thread) then asks for the mutex and blocks;
//! * M (20) becomes runnable at that moment and spins until H has the
//!   mutex, or for [`SPIN_NS`] at most.
//!
//! With a plain mutex, M outranks L: L cannot run, so H waits for all of
//! M's spin and then L's hold — about `SPIN_NS + HOLD_NS`. With
//! `PTHREAD_PRIO_INHERIT` the kernel lends L H's priority while H waits: L
//! runs before M, H has the mutex after about `HOLD_NS`, and M stops at
//! once. One operation is one such episode, from L taking the mutex to H
//! having had it and M having stopped: what priority inheritance buys on
//! this kernel is the difference of the two figures.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

use latscope_model::CpuId;
use latscope_platform::pthread_mutex::PthreadMutex;
use latscope_platform::wake::EventFd;
use latscope_platform::{monotonic_ns, set_affinity, set_scheduler, thread_cpu_ns, SchedPolicy};

use super::benchmark::{Benchmark, Placement};
use crate::bench::{BenchError, Operation};

/// CPU time L needs while holding the mutex.
pub const HOLD_NS: u64 = 100_000;
/// How long M spins at most.
pub const SPIN_NS: u64 = 1_000_000;
const PRIO_L: u32 = 10;
const PRIO_M: u32 = 20;
const PRIO_H: u32 = 30;

struct Shared {
    mutex: PthreadMutex,
    l_go: EventFd,
    l_locked: EventFd,
    m_go: EventFd,
    m_done: EventFd,
    got: AtomicBool,
    stop: AtomicBool,
}

fn os(what: &'static str) -> impl Fn(std::io::Error) -> BenchError {
    move |e| BenchError::Os {
        what: what.into(),
        source: e,
    }
}

struct Inversion {
    shared: Arc<Shared>,
    helpers: Vec<JoinHandle<()>>,
}

/// Starts a helper pinned to `cpu` at FIFO `prio`; it reports whether it
/// got there before running `body`.
fn helper(
    name: &str,
    cpu: u32,
    prio: u32,
    shared: Arc<Shared>,
    body: fn(&Shared),
) -> Result<JoinHandle<()>, BenchError> {
    let (tx, rx) = mpsc::channel();
    let h = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let ready = set_affinity(CpuId(cpu))
                .and_then(|()| set_scheduler(SchedPolicy::Fifo, prio))
                .map_err(|e| e.to_string());
            let ok = ready.is_ok();
            let _ = tx.send(ready);
            if ok {
                body(&shared);
            }
        })
        .map_err(os("starting a helper thread"))?;
    match rx.recv() {
        Ok(Ok(())) => Ok(h),
        Ok(Err(why)) => {
            let _ = h.join();
            Err(BenchError::Setup(format!(
                "needs SCHED_FIFO (root or CAP_SYS_NICE): {why}"
            )))
        }
        Err(_) => Err(BenchError::Setup("a helper thread ended".into())),
    }
}

fn low(s: &Shared) {
    while s.l_go.wait().is_ok() && !s.stop.load(Ordering::Acquire) {
        if s.mutex.lock().is_err() {
            return;
        }
        let _ = s.l_locked.signal();
        let start = thread_cpu_ns();
        while thread_cpu_ns().saturating_sub(start) < HOLD_NS {
            std::hint::spin_loop();
        }
        let _ = s.mutex.unlock();
    }
}

fn medium(s: &Shared) {
    while s.m_go.wait().is_ok() && !s.stop.load(Ordering::Acquire) {
        let start = monotonic_ns();
        while !s.got.load(Ordering::Acquire) && monotonic_ns().saturating_sub(start) < SPIN_NS {
            std::hint::spin_loop();
        }
        let _ = s.m_done.signal();
    }
}

impl Inversion {
    fn new(cpu: u32, inherit: bool) -> Result<Inversion, BenchError> {
        let shared = Arc::new(Shared {
            mutex: PthreadMutex::new(inherit).map_err(os("creating the mutex"))?,
            l_go: EventFd::new().map_err(os("eventfd"))?,
            l_locked: EventFd::new().map_err(os("eventfd"))?,
            m_go: EventFd::new().map_err(os("eventfd"))?,
            m_done: EventFd::new().map_err(os("eventfd"))?,
            got: AtomicBool::new(false),
            stop: AtomicBool::new(false),
        });
        // The measuring thread is H for as long as the benchmark lives.
        set_scheduler(SchedPolicy::Fifo, PRIO_H).map_err(|e| {
            BenchError::Setup(format!("needs SCHED_FIFO (root or CAP_SYS_NICE): {e}"))
        })?;
        let mut inv = Inversion {
            shared: Arc::clone(&shared),
            helpers: Vec::new(),
        };
        inv.helpers
            .push(helper("micro-low", cpu, PRIO_L, Arc::clone(&shared), low)?);
        inv.helpers
            .push(helper("micro-medium", cpu, PRIO_M, shared, medium)?);
        Ok(inv)
    }
}

impl Operation for Inversion {
    fn run(&mut self, ops: u64) -> Result<(), BenchError> {
        let s = &self.shared;
        for _ in 0..ops {
            s.got.store(false, Ordering::Release);
            s.l_go.signal().map_err(os("waking L"))?;
            s.l_locked
                .wait()
                .map_err(os("waiting for L to hold the mutex"))?;
            s.m_go.signal().map_err(os("waking M"))?;
            s.mutex.lock().map_err(os("locking the mutex"))?;
            s.got.store(true, Ordering::Release);
            s.mutex.unlock().map_err(os("unlocking the mutex"))?;
            s.m_done.wait().map_err(os("waiting for M to stop"))?;
        }
        Ok(())
    }
}

impl Drop for Inversion {
    fn drop(&mut self) {
        let s = &self.shared;
        s.stop.store(true, Ordering::Release);
        let _ = s.l_go.signal();
        let _ = s.m_go.signal();
        for h in self.helpers.drain(..) {
            let _ = h.join();
        }
        let _ = set_scheduler(SchedPolicy::Other, 0);
    }
}

pub(super) fn benchmarks() -> Vec<Benchmark> {
    vec![
        Benchmark::new(
            "sync",
            "priority_inversion_plain",
            "L holds a plain mutex, M spins, H waits (one CPU, SCHED_FIFO 10/20/30)",
            false,
            |p: Placement| Ok(Box::new(Inversion::new(p.cpu, false)?)),
        ),
        Benchmark::new(
            "sync",
            "priority_inversion_inherit",
            "the same with a PTHREAD_PRIO_INHERIT mutex",
            false,
            |p: Placement| Ok(Box::new(Inversion::new(p.cpu, true)?)),
        ),
    ]
}
