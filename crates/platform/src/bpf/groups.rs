//! Which programs are attached to which tracepoints, in groups attached
//! together or not at all: the timer decomposition's (required) and the
//! recorder's and histograms' (optional: a kernel without one loses only
//! what it feeds), and what the `LATSCOPE_BPF_DIAG` diagnostics leave out.

use super::VECTOR_NAMES;

/// Tracepoint groups: attached together or not at all (an entry without
/// its exit would only mislead the analysis).
pub(super) type Group = Vec<(String, String)>;

fn group(pairs: &[(&str, &str)]) -> Group {
    pairs
        .iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect()
}

/// The timer decomposition's tracepoints: required.
fn required_groups() -> Vec<Group> {
    vec![
        group(&[("on_sched_switch", "sched_switch")]),
        group(&[("on_hrtimer_start", "hrtimer_start")]),
        group(&[("on_hrtimer_expire_entry", "hrtimer_expire_entry")]),
    ]
}

/// The recorder's and histograms' other tracepoints: optional.
fn optional_groups() -> Vec<Group> {
    let mut g = vec![
        group(&[("on_sched_waking", "sched_waking")]),
        group(&[("on_hrtimer_expire_exit", "hrtimer_expire_exit")]),
        group(&[
            ("on_irq_handler_entry", "irq_handler_entry"),
            ("on_irq_handler_exit", "irq_handler_exit"),
        ]),
        group(&[("on_softirq_raise", "softirq_raise")]),
        group(&[
            ("on_softirq_entry", "softirq_entry"),
            ("on_softirq_exit", "softirq_exit"),
        ]),
        group(&[("on_nmi_handler", "nmi_handler")]),
        group(&[
            ("on_workqueue_execute_start", "workqueue_execute_start"),
            ("on_workqueue_execute_end", "workqueue_execute_end"),
        ]),
        // Deferred work by function and device (timer.bpf.c, deferred_add):
        // a kernel without one of these loses only that split.
        group(&[
            ("on_timer_expire_entry", "timer_expire_entry"),
            ("on_timer_expire_exit", "timer_expire_exit"),
        ]),
        group(&[
            ("on_tasklet_entry", "tasklet_entry"),
            ("on_tasklet_exit", "tasklet_exit"),
        ]),
        group(&[("on_napi_poll", "napi_poll")]),
    ];
    for name in VECTOR_NAMES {
        g.push(vec![
            (format!("on_{name}_entry"), format!("{name}_entry")),
            (format!("on_{name}_exit"), format!("{name}_exit")),
        ]);
    }
    g
}

/// The optional groups to attach under `LATSCOPE_BPF_DIAG=diag`: all of
/// them, except under `no-waking-exit`, which leaves out `sched_waking` and
/// `hrtimer_expire_exit`: two of the six programs between our timer's
/// expiry and our thread, which in the kernel only feed the recorder, so
/// that a run weighs what attached programs on that path cost
/// (bench/README.md).
pub(super) fn attached_optional_groups(diag: &str) -> Vec<Group> {
    const NOT_ATTACHED: [&str; 2] = ["sched_waking", "hrtimer_expire_exit"];
    if diag == "detached" {
        return Vec::new();
    }
    let left_out: &[&str] = match diag {
        "no-waking-exit" => &NOT_ATTACHED,
        "deferred-off" | "new-off" => &DEFERRED,
        _ => &[],
    };
    optional_groups()
        .into_iter()
        .filter(|g| !g.iter().any(|(_, t)| left_out.contains(&t.as_str())))
        .collect()
}

/// The tracepoints only the split of deferred work by function and device
/// uses, left unattached under `LATSCOPE_BPF_DIAG=deferred-off` (which also
/// stops the hrtimer programs timing callbacks, timer.bpf.c's
/// `deferred_off`), so that a run weighs what the split costs.
const DEFERRED: [&str; 5] = [
    "timer_expire_entry",
    "timer_expire_exit",
    "tasklet_entry",
    "tasklet_exit",
    "napi_poll",
];

/// The required groups to attach under `LATSCOPE_BPF_DIAG=diag`: all of
/// them, except under `detached`, which loads every program and attaches
/// none, so that a run weighs the rest of the BPF backend (its maps, its
/// reader thread) without a program on any path (bench/README.md).
pub(super) fn attached_required_groups(diag: &str) -> Vec<Group> {
    if diag == "detached" {
        return Vec::new();
    }
    required_groups()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tracepoints(groups: &[Group]) -> Vec<String> {
        groups.iter().flatten().map(|(_, t)| t.clone()).collect()
    }

    #[test]
    fn no_waking_exit_leaves_out_exactly_its_two_tracepoints() {
        let all = tracepoints(&attached_optional_groups(""));
        assert_eq!(all, tracepoints(&optional_groups()));
        let fewer = tracepoints(&attached_optional_groups("no-waking-exit"));
        let left_out: Vec<&String> = all.iter().filter(|t| !fewer.contains(t)).collect();
        // The names must be the groups' own: a misspelt one would leave
        // every program attached and the diagnostic weighing nothing.
        assert_eq!(left_out, ["sched_waking", "hrtimer_expire_exit"]);
        assert_eq!(fewer.len() + 2, all.len());
        // Other diagnostics attach everything.
        assert_eq!(tracepoints(&attached_optional_groups("elide-own")), all);
        assert_eq!(
            tracepoints(&attached_required_groups("elide-own")),
            tracepoints(&required_groups())
        );
    }

    #[test]
    fn detached_attaches_nothing_and_only_under_its_name() {
        assert!(attached_required_groups("detached").is_empty());
        assert!(attached_optional_groups("detached").is_empty());
        assert!(!attached_required_groups("").is_empty());
        assert!(!attached_optional_groups("empty").is_empty());
    }

    #[test]
    fn the_deferred_work_tracepoints_are_optional_and_pair_entries_with_exits() {
        let optional = tracepoints(&optional_groups());
        for t in [
            "timer_expire_entry",
            "timer_expire_exit",
            "tasklet_entry",
            "tasklet_exit",
            "napi_poll",
        ] {
            assert!(optional.iter().any(|o| o == t), "{t}");
        }
        let groups = optional_groups();
        let with = |t: &str| {
            groups
                .iter()
                .find(|g| g.iter().any(|(_, n)| n == t))
                .unwrap()
        };
        assert_eq!(with("timer_expire_entry").len(), 2);
        assert_eq!(with("tasklet_exit").len(), 2);
        assert!(!tracepoints(&required_groups()).contains(&"napi_poll".to_string()));
    }

    #[test]
    fn deferred_off_leaves_out_exactly_the_deferred_work_tracepoints() {
        let all = tracepoints(&attached_optional_groups(""));
        let fewer = tracepoints(&attached_optional_groups("deferred-off"));
        let left_out: Vec<&String> = all.iter().filter(|t| !fewer.contains(t)).collect();
        assert_eq!(left_out, DEFERRED);
        assert_eq!(
            tracepoints(&attached_required_groups("deferred-off")),
            tracepoints(&required_groups())
        );
        // `new-off` leaves out the same programs (and reads no steal and
        // takes no stacks, which loaded.rs decides).
        assert_eq!(tracepoints(&attached_optional_groups("new-off")), fewer);
    }
}
