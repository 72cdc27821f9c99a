//! The pinned measuring threads every probe starts the same way: spawn one
//! named thread per role, let each set itself up (pinned, signals blocked,
//! least timer slack, policy, stack prefaulted) and report how that went,
//! then hold all of them behind one shared barrier that releases them
//! together with a common time zero. If any thread cannot be spawned or set
//! up, the others are told to exit before measuring and are joined, so a
//! failed start leaves no thread behind.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use latscope_model::CpuId;

pub(crate) use crate::setup::Sched;
use crate::{Handoff, ProbeError, SampleRing, ThreadSetup};

/// Stack of a measuring thread: the loops need little, and the prefaulted
/// part (see [`crate::setup::prefault_stack`]) must fit well inside it.
const STACK_SIZE: usize = 512 * 1024;

/// Time zero lies this far after the last thread reported ready, so that
/// every thread has left the barrier and armed its first wait before it.
const LEAD_NS: u64 = 1_000_000;

/// Adds to a counter that only one measuring thread writes: a plain load
/// and store, cheaper than an atomic read-modify-write on the hot path;
/// readers on other threads see a recent value.
#[inline]
pub(crate) fn bump(a: &AtomicU64, n: u64) {
    a.store(a.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

/// One measuring thread to start: its name (what `ps` and the tests see),
/// its CPU, and what it runs once released, given time zero.
pub(crate) struct Spec<F> {
    pub name: String,
    pub cpu: CpuId,
    pub body: F,
}

enum Go {
    Wait,
    Start(u64),
    Abort,
}

/// The one go signal all threads of a probe wait on. Waiting happens before
/// the measuring loop, where a lock costs nothing that is measured.
struct GoBarrier {
    state: Mutex<Go>,
    released: Condvar,
}

impl GoBarrier {
    fn new() -> GoBarrier {
        GoBarrier {
            state: Mutex::new(Go::Wait),
            released: Condvar::new(),
        }
    }

    fn release(&self, go: Go) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        *state = go;
        self.released.notify_all();
    }

    /// Time zero, or `None` when the start was abandoned.
    fn wait(&self) -> Option<u64> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            match *state {
                Go::Wait => {
                    state = self.released.wait(state).unwrap_or_else(|e| e.into_inner());
                }
                Go::Start(t) => return Some(t),
                Go::Abort => return None,
            }
        }
    }
}

/// Threads released together; each ends with its body's result, or `None`
/// if it never measured (its set-up failed or the start was abandoned).
pub(crate) struct PinnedThreads<T> {
    handles: Vec<(CpuId, JoinHandle<Option<T>>)>,
    /// How each thread's set-up went, in the order the threads were given.
    pub setups: Vec<ThreadSetup>,
    /// CLOCK_MONOTONIC of time zero, the same for every thread.
    pub start_ns: u64,
}

/// Starts one thread per spec and returns once every one is set up and
/// released, or the first error after all of them have been joined.
pub(crate) fn start<T, F>(specs: Vec<Spec<F>>, sched: Sched) -> Result<PinnedThreads<T>, ProbeError>
where
    T: Send + 'static,
    F: FnOnce(u64) -> T + Send + 'static,
{
    start_each(specs.into_iter().map(|s| (s, sched)).collect())
}

/// Starts several probes' threads as one group (one barrier, one time
/// zero): `specs_of` gives each probe's threads and their scheduling; the
/// threads come back split per probe, in the probes' order.
pub(crate) fn start_group<P, T, F>(
    probes: &[P],
    specs_of: impl Fn(&P) -> (Vec<Spec<F>>, Sched),
) -> Result<Vec<PinnedThreads<T>>, ProbeError>
where
    T: Send + 'static,
    F: FnOnce(u64) -> T + Send + 'static,
{
    let mut specs = Vec::new();
    let mut sizes = Vec::with_capacity(probes.len());
    for p in probes {
        let (own, sched) = specs_of(p);
        sizes.push(own.len());
        specs.extend(own.into_iter().map(|s| (s, sched)));
    }
    Ok(start_each(specs)?.split(&sizes))
}

/// [`start`] with a policy per thread: threads at several priorities on
/// one CPU, released by the one barrier with the one time zero.
pub(crate) fn start_each<T, F>(specs: Vec<(Spec<F>, Sched)>) -> Result<PinnedThreads<T>, ProbeError>
where
    T: Send + 'static,
    F: FnOnce(u64) -> T + Send + 'static,
{
    let n = specs.len();
    let go = Arc::new(GoBarrier::new());
    let (setup_tx, setup_rx) = mpsc::channel::<(usize, Result<ThreadSetup, ProbeError>)>();
    let mut handles = Vec::with_capacity(n);
    let abandon = |handles: Vec<(CpuId, JoinHandle<Option<T>>)>| {
        go.release(Go::Abort);
        for (_, h) in handles {
            let _ = h.join();
        }
    };
    for (index, (spec, sched)) in specs.into_iter().enumerate() {
        let cpu = spec.cpu;
        let body = spec.body;
        let tx = setup_tx.clone();
        let go = Arc::clone(&go);
        let spawned = std::thread::Builder::new()
            .name(spec.name)
            .stack_size(STACK_SIZE)
            .spawn(move || {
                let setup = crate::setup::set_up_thread(cpu, sched);
                let ok = setup.is_ok();
                if ok {
                    crate::setup::prefault_stack();
                }
                let _ = tx.send((index, setup));
                drop(tx);
                if !ok {
                    return None;
                }
                let start = go.wait()?;
                Some(body(start))
            });
        match spawned {
            Ok(h) => handles.push((cpu, h)),
            Err(e) => {
                abandon(handles);
                return Err(ProbeError::Spawn(e.to_string()));
            }
        }
    }
    drop(setup_tx);
    let mut setups: Vec<Option<ThreadSetup>> = (0..n).map(|_| None).collect();
    let mut failure = None;
    for _ in 0..n {
        match setup_rx.recv() {
            Ok((i, Ok(s))) => setups[i] = Some(s),
            Ok((_, Err(e))) => {
                failure.get_or_insert(e);
            }
            Err(_) => {
                failure.get_or_insert(ProbeError::Spawn("measuring thread exited".into()));
                break;
            }
        }
    }
    let setups: Option<Vec<ThreadSetup>> = setups.into_iter().collect();
    match (failure, setups) {
        (None, Some(setups)) => {
            let start_ns = latscope_platform::monotonic_ns() + LEAD_NS;
            go.release(Go::Start(start_ns));
            Ok(PinnedThreads {
                handles,
                setups,
                start_ns,
            })
        }
        (failure, _) => {
            abandon(handles);
            Err(failure.unwrap_or_else(|| ProbeError::Spawn("measuring thread exited".into())))
        }
    }
}

impl<T> PinnedThreads<T> {
    /// Splits the threads, in the order given, into groups of `sizes`
    /// threads (which sum to their number), each with the common time zero.
    pub fn split(self, sizes: &[usize]) -> Vec<PinnedThreads<T>> {
        let mut handles = self.handles.into_iter();
        let mut setups = self.setups.into_iter();
        sizes
            .iter()
            .map(|&n| PinnedThreads {
                handles: handles.by_ref().take(n).collect(),
                setups: setups.by_ref().take(n).collect(),
                start_ns: self.start_ns,
            })
            .collect()
    }

    /// The hand-over of the thread measuring `cpu`: its tid and `ring`,
    /// when the probe keeps one for the trace analysis.
    pub fn handoff(&self, cpu: CpuId, ring: Option<&Arc<SampleRing>>) -> Option<Handoff> {
        let tid = self.setups.iter().find(|s| s.cpu == cpu)?.tid;
        Some(Handoff {
            cpu,
            tid,
            ring: Arc::clone(ring?),
        })
    }

    /// Whether every thread has ended.
    pub fn finished(&self) -> bool {
        self.handles.iter().all(|(_, h)| h.is_finished())
    }

    /// Waits for every thread; the first error in thread order, where
    /// `error` says which bodies' results are errors and a panic is one.
    pub fn join(self, mut error: impl FnMut(CpuId, T) -> Option<ProbeError>) -> Option<ProbeError> {
        let mut first = None;
        for (cpu, h) in self.handles {
            let e = match h.join() {
                Ok(Some(result)) => error(cpu, result),
                Ok(None) => None,
                Err(_) => Some(ProbeError::Panicked(cpu)),
            };
            if let Some(e) = e {
                first.get_or_insert(e);
            }
        }
        first
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::TimerSlack;
    use latscope_platform::SchedPolicy;
    use std::sync::atomic::AtomicBool;

    fn other() -> Sched {
        Sched {
            policy: SchedPolicy::Other,
            priority: 0,
            nice: None,
            slack: TimerSlack::MINIMUM,
        }
    }

    #[test]
    fn threads_start_together_pinned_and_report_their_setup() {
        let specs = (0..3)
            .map(|i| Spec {
                name: format!("lat-test/{i}"),
                cpu: CpuId(0),
                body: move |start: u64| {
                    let now = latscope_platform::monotonic_ns();
                    let name = std::thread::current().name().map(str::to_string);
                    (i, start, now, name, latscope_platform::current_tid())
                },
            })
            .collect();
        let threads = start(specs, other()).unwrap();
        let start_ns = threads.start_ns;
        let setups = threads.setups.clone();
        assert_eq!(setups.len(), 3);
        assert!(setups
            .iter()
            .all(|s| s.cpu == CpuId(0) && s.scheduler.is_ok()));
        let mut seen = Vec::new();
        let err = threads.join(|_, r| {
            seen.push(r);
            None
        });
        assert!(err.is_none());
        for (k, (i, start, now, name, tid)) in seen.into_iter().enumerate() {
            assert_eq!(i, k, "joined in the order given");
            assert_eq!(start, start_ns, "one time zero for all");
            assert!(
                now + LEAD_NS >= start_ns,
                "released only after all were ready"
            );
            assert_eq!(name.as_deref(), Some(format!("lat-test/{i}").as_str()));
            assert_eq!(tid, setups[k].tid, "the set-up names the measuring thread");
        }
    }

    #[test]
    fn one_failed_setup_stops_every_thread_before_it_measures() {
        let measured = Arc::new(AtomicBool::new(false));
        let specs = [CpuId(0), CpuId(4095), CpuId(0)]
            .into_iter()
            .map(|cpu| {
                let measured = Arc::clone(&measured);
                Spec {
                    name: format!("lat-test/{cpu}"),
                    cpu,
                    body: move |_start: u64| measured.store(true, Ordering::SeqCst),
                }
            })
            .collect();
        let Err(e) = start(specs, other()) else {
            panic!("a thread pinned to CPU 4095 must fail");
        };
        assert!(
            matches!(
                e,
                ProbeError::Affinity {
                    cpu: CpuId(4095),
                    ..
                }
            ),
            "{e}"
        );
        // `start` joined every thread before returning: none ran its body.
        assert!(!measured.load(Ordering::SeqCst));
    }

    #[test]
    fn a_panicking_body_is_reported_by_cpu() {
        let specs = vec![Spec {
            name: "lat-test/p".into(),
            cpu: CpuId(0),
            body: |_start: u64| -> u32 { panic!("scripted") },
        }];
        let threads = start(specs, other()).unwrap();
        let e = threads.join(|_, _| None);
        assert!(matches!(e, Some(ProbeError::Panicked(CpuId(0)))), "{e:?}");
    }

    #[test]
    fn bump_adds() {
        let a = AtomicU64::new(5);
        bump(&a, 3);
        assert_eq!(a.load(Ordering::Relaxed), 8);
    }
}
