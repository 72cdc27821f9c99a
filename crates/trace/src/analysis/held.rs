//! The code that held the CPU during an episode (BPF backend): the
//! kernel's stacks symbolized into [`HeldCpu`] sites, and identical stacks
//! folded over the run (docs/tracing.md, "The code that held the CPU").

use std::collections::HashMap;

use latscope_model::{HeldCpu, HeldStack, HeldWhere, Nanos, StackSite};

use super::Symbolize;

/// Folded stacks kept per run; later distinct ones are not folded (their
/// episodes still carry them).
const FOLD_CAP: usize = 4096;
/// Folded stacks a summary lists.
pub const HELD_TOP: usize = 20;

/// What the kernel recorded for one late wake-up, before symbolization.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RawHeld {
    /// The interrupted task at the expiry (0: idle; `None`: not seen).
    pub irq_pid: Option<i32>,
    pub irq_comm: String,
    /// Its stack (innermost first) when the callback came late; `None`
    /// when none was taken.
    pub irq_ips: Option<Vec<u64>>,
    pub prev_pid: i32,
    pub prev_comm: String,
    /// prev's stack at `__schedule`; `None` when none was taken.
    pub yield_ips: Option<Vec<u64>>,
    /// Why a stack the kernel should have taken is missing.
    pub note: Option<String>,
    /// Frames the kernel keeps at most (a stack this deep may be cut).
    pub depth: usize,
}

fn name_of(symbols: &dyn Symbolize, ip: u64) -> String {
    symbols
        .symbol(ip)
        .map(|(f, _)| f)
        .unwrap_or_else(|| format!("{ip:#x}"))
}

/// The tracing machinery's own frames at the top of a tracepoint's stack.
fn is_tracing_frame(f: &str) -> bool {
    f.starts_with("bpf_")
        || f.starts_with("__bpf_")
        || f.starts_with("__traceiter_")
        || f.starts_with("perf_trace_")
        || f.starts_with("perf_tp_")
}

/// An interrupt's entry: what lies below it is the interrupted context.
fn is_irq_entry(f: &str) -> bool {
    f.starts_with("asm_sysvec_")
        || f.starts_with("asm_common_interrupt")
        || f.starts_with("asm_exc_")
}

/// The interrupted context of a stack taken in our hrtimer's callback:
/// the frames below the interrupt's entry (none: user mode).
pub fn interrupted(frames: Vec<String>) -> (Vec<String>, bool) {
    match frames.iter().rposition(|f| is_irq_entry(f)) {
        Some(i) => {
            let rest: Vec<String> = frames[i + 1..].to_vec();
            let user = rest.is_empty();
            (rest, user)
        }
        None => (
            frames
                .into_iter()
                .skip_while(|f| is_tracing_frame(f))
                .collect(),
            false,
        ),
    }
}

/// Where a task yielded: its stack at `__schedule` without that call.
pub fn yielded(frames: Vec<String>) -> Vec<String> {
    match frames.iter().position(|f| f == "__schedule") {
        Some(i) => frames[i + 1..].to_vec(),
        None => frames
            .into_iter()
            .skip_while(|f| is_tracing_frame(f))
            .collect(),
    }
}

fn names(ips: &[u64], symbols: &dyn Symbolize) -> Vec<String> {
    ips.iter().map(|&ip| name_of(symbols, ip)).collect()
}

/// Symbolizes what the kernel recorded.
pub fn symbolize(raw: &RawHeld, symbols: &dyn Symbolize) -> HeldCpu {
    let cut = |ips: &[u64]| raw.depth > 0 && ips.len() >= raw.depth;
    let comm_at = |pid: i32| {
        if !raw.irq_comm.is_empty() {
            raw.irq_comm.clone()
        } else if pid == raw.prev_pid {
            raw.prev_comm.clone()
        } else {
            String::new()
        }
    };
    let at_expiry = raw.irq_pid.map(|pid| {
        let mut s = StackSite {
            comm: comm_at(pid),
            pid,
            ..StackSite::default()
        };
        if let Some(ips) = &raw.irq_ips {
            let (frames, user) = interrupted(names(ips, symbols));
            s.frames = frames;
            s.user_mode = user && pid != 0;
            s.truncated = cut(ips);
        }
        s
    });
    let yielded = (raw.prev_pid != 0).then(|| StackSite {
        comm: raw.prev_comm.clone(),
        pid: raw.prev_pid,
        user_mode: false,
        frames: raw
            .yield_ips
            .as_deref()
            .map(|ips| yielded(names(ips, symbols)))
            .unwrap_or_default(),
        truncated: raw.yield_ips.as_deref().is_some_and(cut),
    });
    HeldCpu {
        at_expiry,
        yielded,
        note: raw.note.clone(),
    }
}

/// Identical stacks over a run's episodes.
#[derive(Debug, Default)]
pub struct HeldFold {
    folded: HashMap<(HeldWhere, String, Vec<String>), (u64, u64)>,
}

impl HeldFold {
    /// Counts `held`'s stacks for an episode of `latency` ns.
    pub fn add(&mut self, held: &HeldCpu, latency: u64) {
        let sites = [
            (HeldWhere::AtExpiry, &held.at_expiry),
            (HeldWhere::Yielded, &held.yielded),
        ];
        for (kind, site) in sites {
            let Some(s) = site else { continue };
            if s.frames.is_empty() {
                continue;
            }
            let key = (kind, s.comm.clone(), s.frames.clone());
            if self.folded.len() >= FOLD_CAP && !self.folded.contains_key(&key) {
                continue;
            }
            let e = self.folded.entry(key).or_default();
            e.0 += 1;
            e.1 = e.1.saturating_add(latency);
        }
    }

    /// The `n` stacks with the most episode time.
    pub fn top(&self, n: usize) -> Vec<HeldStack> {
        let mut v: Vec<HeldStack> = self
            .folded
            .iter()
            .map(|((kind, comm, frames), &(episodes, total))| HeldStack {
                site_kind: *kind,
                comm: comm.clone(),
                frames: frames.clone(),
                episodes,
                total_ns: Nanos(total),
            })
            .collect();
        v.sort_by(|a, b| {
            b.total_ns
                .cmp(&a.total_ns)
                .then(b.episodes.cmp(&a.episodes))
                .then(a.site_kind.cmp(&b.site_kind))
                .then(a.frames.cmp(&b.frames))
        });
        v.truncate(n);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Address n is function `f{n}`, except the names below.
    struct Table;
    impl Symbolize for Table {
        fn symbol(&self, a: u64) -> Option<(String, Option<String>)> {
            let n = match a {
                1 => "bpf_prog_abc_on_hrtimer_expire_entry",
                2 => "__hrtimer_run_queues",
                3 => "asm_sysvec_apic_timer_interrupt",
                4 => "clear_page_erms",
                5 => "clear_huge_page",
                6 => "__schedule",
                7 => "__cond_resched",
                8 => "bpf_trace_run4",
                _ => return None,
            };
            Some((n.to_string(), None))
        }
    }

    fn raw() -> RawHeld {
        RawHeld {
            irq_pid: Some(42),
            irq_comm: String::new(),
            irq_ips: Some(vec![1, 2, 3, 4, 5]),
            prev_pid: 42,
            prev_comm: "rustc".into(),
            yield_ips: Some(vec![8, 6, 7, 5]),
            note: None,
            depth: 48,
        }
    }

    #[test]
    fn stacks_are_cut_at_the_interrupt_entry_and_at_schedule() {
        let h = symbolize(&raw(), &Table);
        let at = h.at_expiry.unwrap();
        assert_eq!(at.frames, ["clear_page_erms", "clear_huge_page"]);
        assert_eq!(at.comm, "rustc", "the comm of the task that then yielded");
        assert!(!at.user_mode);
        let y = h.yielded.unwrap();
        assert_eq!(y.frames, ["__cond_resched", "clear_huge_page"]);
        // Nothing below the entry: the interrupt came from user mode.
        let mut r = raw();
        r.irq_ips = Some(vec![1, 2, 3]);
        assert!(symbolize(&r, &Table).at_expiry.unwrap().user_mode);
        // Unknown addresses stay as hex; a full-depth stack is marked cut.
        r.yield_ips = Some(vec![6, 0x99]);
        r.depth = 2;
        let y = symbolize(&r, &Table).yielded.unwrap();
        assert_eq!(y.frames, ["0x99"]);
        assert!(y.truncated);
        // The idle task yields nowhere.
        r.prev_pid = 0;
        assert!(symbolize(&r, &Table).yielded.is_none());
    }

    #[test]
    fn identical_stacks_fold_and_the_longest_time_comes_first() {
        let mut f = HeldFold::default();
        let a = symbolize(&raw(), &Table);
        let mut other = raw();
        other.yield_ips = Some(vec![6, 5]);
        let b = symbolize(&other, &Table);
        f.add(&a, 1_000);
        f.add(&a, 2_000);
        f.add(&b, 500);
        let top = f.top(HELD_TOP);
        // At the expiry a and b share one interrupted stack: 3 episodes.
        assert_eq!(top[0].site_kind, HeldWhere::AtExpiry);
        assert_eq!((top[0].episodes, top[0].total_ns), (3, Nanos(3_500)));
        assert_eq!(top[1].site_kind, HeldWhere::Yielded);
        assert_eq!((top[1].episodes, top[1].total_ns), (2, Nanos(3_000)));
        assert_eq!((top[2].episodes, top[2].total_ns), (1, Nanos(500)));
        assert_eq!(f.top(1).len(), 1);
    }
}
