//! The scheduling rules: which policy takes a priority, a nice value or a
//! DEADLINE reservation, the reservation's defaults and its order, and
//! which policies need the timer probe. What the kernel would refuse is
//! refused here first, one line naming the reason; what only the kernel
//! can judge (DEADLINE admission) is refused by the probe when it starts.

use latscope_model::{CpuSet, Nanos, Policy};
use latscope_platform::{DeadlineParams, SchedPolicy};

use super::{ProbeKind, RequestError, RunRequest};

/// The least DEADLINE runtime the kernel accepts (its `DL_SCALE`).
pub const MIN_DEADLINE_RUNTIME: Nanos = Nanos(1024);

impl RunRequest {
    /// The priority applied: the one given (or the default) under FIFO and
    /// RR, 0 under the policies without one.
    pub fn priority(&self) -> u32 {
        match self.policy.has_priority() {
            true => self.priority.unwrap_or(Self::DEFAULT_PRIORITY),
            false => 0,
        }
    }

    /// The policy with its parameters; a DEADLINE period is the probe's.
    pub fn sched_policy(&self, period: Nanos) -> SchedPolicy {
        match self.policy {
            Policy::Fifo => SchedPolicy::Fifo,
            Policy::Rr => SchedPolicy::Rr,
            Policy::Other => SchedPolicy::Other,
            Policy::Batch => SchedPolicy::Batch,
            Policy::Idle => SchedPolicy::Idle,
            Policy::Deadline => SchedPolicy::Deadline(self.deadline_params(period)),
        }
    }

    /// The DEADLINE reservation asked for, with its defaults: a tenth of
    /// the period as runtime, the period as deadline.
    pub fn deadline_params(&self, period: Nanos) -> DeadlineParams {
        DeadlineParams {
            runtime: self
                .sched
                .runtime
                .unwrap_or(Nanos(period.0 / Self::DEFAULT_RUNTIME_SHARE)),
            deadline: self.sched.deadline.unwrap_or(period),
            period,
        }
    }

    /// Priority, nice and reservation only with the policies that take
    /// them; the policies beyond FIFO, RR and OTHER (and nice) only with
    /// the timer probe.
    pub(super) fn check_sched(&self) -> Result<(), RequestError> {
        let policy = self.policy;
        if self.priority.is_some() && !policy.has_priority() {
            return Err(RequestError::PriorityWithoutRealTime(policy));
        }
        let s = &self.sched;
        if s.nice.is_some() && !matches!(policy, Policy::Other | Policy::Batch) {
            return Err(RequestError::NiceWithPolicy(policy));
        }
        if let Some(n) = s.nice {
            if !(-20..=19).contains(&n) {
                return Err(RequestError::NiceOutOfRange(n));
            }
        }
        if (s.runtime.is_some() || s.deadline.is_some()) && policy != Policy::Deadline {
            return Err(RequestError::DeadlineOptionsWithoutDeadline);
        }
        let beyond = matches!(policy, Policy::Batch | Policy::Idle | Policy::Deadline);
        if (beyond || s.nice.is_some()) && self.probe != ProbeKind::Timer {
            return Err(RequestError::PolicyNeedsTimer(policy));
        }
        if policy == Policy::Deadline {
            if self.trace.on {
                return Err(RequestError::DeadlineWithTrace);
            }
            check_order(self.deadline_params(self.period()))?;
        }
        Ok(())
    }

    /// A DEADLINE thread cannot be pinned: the kernel admits it only when
    /// it may run on every CPU of its root domain, here every online CPU.
    pub(super) fn check_deadline_cpus(
        &self,
        cpus: &CpuSet,
        online: &CpuSet,
    ) -> Result<(), RequestError> {
        if self.policy == Policy::Deadline && cpus != online {
            return Err(RequestError::DeadlineCpus {
                cpus: cpus.to_string(),
                online: online.to_string(),
            });
        }
        Ok(())
    }
}

/// The kernel's rule for a reservation: 1024 ns <= runtime <= deadline <=
/// period.
fn check_order(p: DeadlineParams) -> Result<(), RequestError> {
    if p.runtime < MIN_DEADLINE_RUNTIME {
        return Err(RequestError::DeadlineRuntimeTooShort(p.runtime));
    }
    if p.runtime > p.deadline || p.deadline > p.period {
        return Err(RequestError::DeadlineOrder {
            runtime: p.runtime,
            deadline: p.deadline,
            period: p.period,
        });
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use latscope_model::CpuId;

    use super::*;
    use crate::config::ProbeSpec;

    fn online() -> CpuSet {
        (0..2).map(CpuId).collect()
    }

    fn with(policy: Policy, f: impl FnOnce(&mut RunRequest)) -> RunRequest {
        let mut r = RunRequest {
            policy,
            ..RunRequest::default()
        };
        f(&mut r);
        r
    }

    fn timer_policy(r: &RunRequest) -> (SchedPolicy, u32, Option<i32>) {
        match r.plan(&online()).unwrap().probe {
            ProbeSpec::Timer(t) => (t.policy, t.priority, t.nice),
            other => panic!("not a timer: {other:?}"),
        }
    }

    #[test]
    fn each_policy_reaches_the_timer_probe() {
        let fifo = with(Policy::Fifo, |_| {});
        assert_eq!(timer_policy(&fifo), (SchedPolicy::Fifo, 95, None));
        let rr = with(Policy::Rr, |r| r.priority = Some(10));
        assert_eq!(timer_policy(&rr), (SchedPolicy::Rr, 10, None));
        let other = with(Policy::Other, |r| r.sched.nice = Some(5));
        assert_eq!(timer_policy(&other), (SchedPolicy::Other, 0, Some(5)));
        let batch = with(Policy::Batch, |r| r.sched.nice = Some(-3));
        assert_eq!(timer_policy(&batch), (SchedPolicy::Batch, 0, Some(-3)));
        let idle = with(Policy::Idle, |_| {});
        assert_eq!(timer_policy(&idle), (SchedPolicy::Idle, 0, None));
    }

    #[test]
    fn deadline_defaults_to_a_tenth_of_the_period_due_at_its_end() {
        let r = with(Policy::Deadline, |r| r.period = Some(Nanos::from_millis(2)));
        let want = DeadlineParams {
            runtime: Nanos::from_micros(200),
            deadline: Nanos::from_millis(2),
            period: Nanos::from_millis(2),
        };
        assert_eq!(timer_policy(&r), (SchedPolicy::Deadline(want), 0, None));
        let given = with(Policy::Deadline, |r| {
            r.sched.runtime = Some(Nanos::from_micros(50));
            r.sched.deadline = Some(Nanos::from_micros(500));
        });
        let SchedPolicy::Deadline(p) = timer_policy(&given).0 else {
            panic!("not deadline");
        };
        assert_eq!(
            (p.runtime, p.deadline, p.period),
            (
                Nanos::from_micros(50),
                Nanos::from_micros(500),
                Nanos::from_millis(1)
            )
        );
    }

    #[test]
    fn what_the_kernel_refuses_is_refused_with_its_reason() {
        let err = |r: RunRequest| r.plan(&online()).unwrap_err();
        for p in [Policy::Other, Policy::Batch, Policy::Idle, Policy::Deadline] {
            let e = err(with(p, |r| r.priority = Some(50)));
            assert!(matches!(e, RequestError::PriorityWithoutRealTime(q) if q == p));
            assert!(e.to_string().contains("needs the fifo or rr policy"), "{e}");
        }
        for p in [Policy::Fifo, Policy::Rr, Policy::Idle, Policy::Deadline] {
            let e = err(with(p, |r| r.sched.nice = Some(1)));
            assert!(
                matches!(e, RequestError::NiceWithPolicy(q) if q == p),
                "{e}"
            );
        }
        let e = err(with(Policy::Other, |r| r.sched.nice = Some(20)));
        assert!(matches!(e, RequestError::NiceOutOfRange(20)));
        for p in [Policy::Fifo, Policy::Other] {
            let e = err(with(p, |r| r.sched.runtime = Some(Nanos::from_micros(10))));
            assert!(matches!(e, RequestError::DeadlineOptionsWithoutDeadline));
            let e = err(with(p, |r| r.sched.deadline = Some(Nanos::from_micros(10))));
            assert!(matches!(e, RequestError::DeadlineOptionsWithoutDeadline));
        }
        let e = err(with(Policy::Batch, |r| r.probe = ProbeKind::Noise));
        assert!(matches!(e, RequestError::PolicyNeedsTimer(Policy::Batch)));
        let e = err(with(Policy::Other, |r| {
            r.probe = ProbeKind::Udp;
            r.sched.nice = Some(3);
        }));
        assert!(matches!(e, RequestError::PolicyNeedsTimer(Policy::Other)));
    }

    #[test]
    fn a_reservation_out_of_order_or_pinned_is_refused() {
        let err = |f: fn(&mut RunRequest)| with(Policy::Deadline, f).plan(&online()).unwrap_err();
        // runtime > deadline
        let e = err(|r| {
            r.sched.runtime = Some(Nanos::from_micros(600));
            r.sched.deadline = Some(Nanos::from_micros(500));
        });
        assert!(matches!(e, RequestError::DeadlineOrder { .. }), "{e}");
        assert!(e.to_string().contains("runtime <= deadline <= period"));
        // deadline > period (1 ms)
        let e = err(|r| r.sched.deadline = Some(Nanos::from_millis(2)));
        assert!(matches!(e, RequestError::DeadlineOrder { .. }), "{e}");
        // runtime > period
        let e = err(|r| r.sched.runtime = Some(Nanos::from_millis(2)));
        assert!(matches!(e, RequestError::DeadlineOrder { .. }), "{e}");
        let e = err(|r| r.sched.runtime = Some(Nanos(1000)));
        assert!(matches!(e, RequestError::DeadlineRuntimeTooShort(_)), "{e}");
        let e = err(|r| r.trace.on = true);
        assert!(matches!(e, RequestError::DeadlineWithTrace), "{e}");
        // runtime = deadline = period is in order (admission may refuse it).
        let full = with(Policy::Deadline, |r| {
            r.sched.runtime = Some(Nanos::from_millis(1));
        });
        assert!(full.plan(&online()).is_ok());
        // Pinned to one CPU of two: the kernel would say EPERM.
        let e = err(|r| r.cpus = Some("0".into()));
        assert!(matches!(e, RequestError::DeadlineCpus { .. }), "{e}");
        assert!(e.to_string().contains("cannot be pinned"), "{e}");
    }
}
