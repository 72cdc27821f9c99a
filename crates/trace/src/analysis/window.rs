//! One kernel event as an episode's exported window shows it (the
//! Perfetto export and `--json` read these).

use latscope_model::WindowEvent;

use super::Symbolize;
use crate::event::{softirq_name, EventKind, Names, TraceEvent};

pub(super) fn window_event(e: &TraceEvent, names: &Names, symbols: &dyn Symbolize) -> WindowEvent {
    let sym = |a: u64| {
        symbols
            .symbol(a)
            .map_or_else(|| format!("{a:#x}"), |(f, _)| f)
    };
    let mut w = WindowEvent {
        time_ns: e.time,
        cpu: e.cpu,
        tid: e.tid,
        event: String::new(),
        name: String::new(),
        pid: 0,
        prio: 0,
        value: 0,
        object: 0,
    };
    match e.kind {
        EventKind::HrtimerStart {
            hrtimer,
            function,
            expires,
            ..
        } => {
            w.event = "hrtimer_start".into();
            w.name = sym(function);
            w.value = expires;
            w.object = hrtimer;
        }
        EventKind::HrtimerExpireEntry {
            hrtimer,
            now,
            function,
        } => {
            w.event = "hrtimer_expire_entry".into();
            w.name = sym(function);
            w.value = now;
            w.object = hrtimer;
        }
        EventKind::HrtimerExpireExit { hrtimer } => {
            w.event = "hrtimer_expire_exit".into();
            w.object = hrtimer;
        }
        EventKind::SchedWaking {
            pid, prio, comm, ..
        } => {
            w.event = "sched_waking".into();
            w.name = comm.to_string();
            w.pid = pid;
            w.prio = prio;
        }
        EventKind::SchedSwitch {
            prev_pid,
            next_pid,
            next_prio,
            next_comm,
            ..
        } => {
            w.event = "sched_switch".into();
            w.name = next_comm.to_string();
            w.pid = next_pid;
            w.prio = next_prio;
            w.value = i64::from(prev_pid);
        }
        EventKind::IrqEntry { irq, name } => {
            w.event = "irq_handler_entry".into();
            w.name = names.get(name).to_string();
            w.pid = irq;
        }
        EventKind::IrqExit { irq, .. } => {
            w.event = "irq_handler_exit".into();
            w.pid = irq;
        }
        EventKind::SoftirqRaise { vec } => {
            w.event = "softirq_raise".into();
            w.name = softirq_name(vec);
            w.pid = vec as i32;
        }
        EventKind::SoftirqEntry { vec } => {
            w.event = "softirq_entry".into();
            w.name = softirq_name(vec);
            w.pid = vec as i32;
        }
        EventKind::SoftirqExit { vec } => {
            w.event = "softirq_exit".into();
            w.name = softirq_name(vec);
            w.pid = vec as i32;
        }
        EventKind::VectorEntry { name, vector } => {
            w.event = "vector_entry".into();
            w.name = names.get(name).to_string();
            w.pid = vector;
        }
        EventKind::VectorExit { name, vector } => {
            w.event = "vector_exit".into();
            w.name = names.get(name).to_string();
            w.pid = vector;
        }
        EventKind::Nmi {
            handler, delta_ns, ..
        } => {
            w.event = "nmi_handler".into();
            w.name = sym(handler);
            w.value = delta_ns;
        }
        EventKind::WorkStart { work, function } => {
            w.event = "workqueue_execute_start".into();
            w.name = sym(function);
            w.object = work;
        }
        EventKind::WorkEnd { work, function } => {
            w.event = "workqueue_execute_end".into();
            w.name = sym(function);
            w.object = work;
        }
        EventKind::TimerExpireEntry { timer, function } => {
            w.event = "timer_expire_entry".into();
            w.name = sym(function);
            w.object = timer;
        }
        EventKind::TimerExpireExit { timer } => {
            w.event = "timer_expire_exit".into();
            w.object = timer;
        }
        EventKind::TaskletEntry { tasklet, function } => {
            w.event = "tasklet_entry".into();
            w.name = sym(function);
            w.object = tasklet;
        }
        EventKind::TaskletExit { tasklet, function } => {
            w.event = "tasklet_exit".into();
            w.name = sym(function);
            w.object = tasklet;
        }
        EventKind::NapiPoll {
            napi,
            dev,
            work,
            budget,
        } => {
            w.event = "napi_poll".into();
            w.name = names.get(dev).to_string();
            w.pid = work;
            w.prio = budget;
            w.object = napi;
        }
    }
    w
}
