//! `show RUN --episodes`: each long latency the tracer kept, with where its
//! time went (the "latency cause" listing of Cota-Robles & Held), then the
//! totals over every episode of the run, including those past the cap.

use latscope_model::{metric, Cause, CauseTotal, Episode, Nanos};
use latscope_stats::{CellResult, RunResult};

use crate::table::Table;

/// `part` as a percentage of `whole`, one decimal ("-" for an empty whole).
fn percent(part: Nanos, whole: Nanos) -> String {
    if whole.0 == 0 {
        return "-".to_string();
    }
    format!("{:.1}%", part.0 as f64 * 100.0 / whole.0 as f64)
}

/// "fifo 90", "other 0", "prio 90" or "".
fn policy_prio(c: &Cause) -> String {
    match (&c.policy, c.priority) {
        (Some(p), Some(prio)) => format!("{p} {prio}"),
        (Some(p), None) => p.clone(),
        (None, Some(prio)) => format!("prio {prio}"),
        (None, None) => String::new(),
    }
}

/// "burner (pid 4242, fifo 90)".
fn thread_label(c: &Cause) -> String {
    let mut inner = Vec::new();
    if let Some(pid) = c.pid {
        inner.push(format!("pid {pid}"));
    }
    let pp = policy_prio(c);
    if !pp.is_empty() {
        inner.push(pp);
    }
    if inner.is_empty() {
        c.name.clone()
    } else {
        format!("{} ({})", c.name, inner.join(", "))
    }
}

/// Parts shown under a cause; the rest are in the JSON.
const MAX_PARTS: usize = 4;

/// "  timer:delayed_work_timer_fn", with "×N" for several runs.
fn part_label(p: &latscope_model::CausePart) -> String {
    if p.count > 1 {
        format!("  {} ×{}", p.name, p.count)
    } else {
        format!("  {}", p.name)
    }
}

/// One episode: a header line, its causes, and what else is known.
/// `run_offset` is where the episode's cell started, relative to the run.
pub fn episode_text(e: &Episode, run_offset: Nanos) -> String {
    let b = &e.breakdown;
    let at = Nanos(run_offset.0.saturating_add(e.offset_ns.0));
    // An interruption of the noise probe's loop has no expiry and no
    // irq / sched / return phases: only what ran instead of the loop.
    let gap = e.metric == metric::NOISE_GAP;
    let mut out = if gap {
        format!(
            "episode {} · CPU {} · {at} into the run · {} {}: the loop did not run for that long\n",
            e.seq, e.cpu, e.metric, e.latency_ns,
        )
    } else if e.metric == metric::UDP_RECV {
        // A datagram: the three parts are deliver (receive stamp → our
        // receiver woken), sched and return (docs/tracing.md).
        format!(
            "episode {} · CPU {} · {at} into the run · {} {} = deliver {} + sched {} + return {} · receiver's CPU {} at the receive stamp\n",
            e.seq,
            e.cpu,
            e.metric,
            e.latency_ns,
            b.irq_ns,
            b.sched_ns,
            b.return_ns,
            if b.idle_at_expiry { "idle" } else { "busy" },
        )
    } else {
        format!(
            "episode {} · CPU {} · {at} into the run · {} {} = irq {} + sched {} + return {} · CPU {} at expiry\n",
            e.seq,
            e.cpu,
            e.metric,
            e.latency_ns,
            b.irq_ns,
            b.sched_ns,
            b.return_ns,
            if b.idle_at_expiry { "idle" } else { "busy" },
        )
    };
    if !b.causes.is_empty() {
        let mut t = Table::new([
            "kind",
            "name",
            "pid",
            "policy/prio",
            "duration",
            if gap { "% of gap" } else { "% of latency" },
        ])
        .left_aligned(2);
        for c in &b.causes {
            t.row([
                c.kind.to_string(),
                c.name.clone(),
                c.pid.map_or_else(String::new, |p| p.to_string()),
                policy_prio(c),
                c.duration_ns.to_string(),
                percent(c.duration_ns, e.latency_ns),
            ]);
            // What ran inside a softirq or interrupt share, indented
            // under it: "  napi:eth0 ×2".
            for p in c.parts.iter().take(MAX_PARTS) {
                t.row([
                    String::new(),
                    part_label(p),
                    String::new(),
                    String::new(),
                    p.duration_ns.to_string(),
                    percent(p.duration_ns, e.latency_ns),
                ]);
            }
        }
        out.push_str(&t.render());
    }
    match (&b.blocking, gap) {
        (Some(c), false) => out.push_str(&format!(
            "blocking thread: {} ran {} while ours was runnable\n",
            thread_label(c),
            c.duration_ns
        )),
        (None, false) => {
            out.push_str("blocking thread: none (no other thread ran while ours was runnable)\n")
        }
        (Some(c), true) => out.push_str(&format!(
            "thread that ran instead: {} for {}\n",
            thread_label(c),
            c.duration_ns
        )),
        (None, true) => out.push_str("thread that ran instead: none\n"),
    }
    let steal = crate::steal::episode_steal(b);
    out.push_str(&format!("unexplained {} · {steal}\n", b.unexplained_ns));
    if !b.complete {
        out.push_str(if gap {
            "INCOMPLETE: the event window did not reach back to the start of the gap or the kernel lost records around it; the shares are a lower bound\n"
        } else {
            "INCOMPLETE: the event window did not reach back to the expiry or the kernel lost records around it; the shares are a lower bound\n"
        });
    }
    if let Some(line) = crate::held::held_line(e) {
        out.push_str(&line);
    }
    if !e.stacks.is_empty() {
        let items: Vec<String> = e
            .stacks
            .iter()
            .take(5)
            .map(|s| {
                let module = s
                    .module
                    .as_deref()
                    .map_or_else(String::new, |m| format!("{m} "));
                format!("{} samples in {module}{}", s.samples, s.function)
            })
            .collect();
        let more = e.stacks.len().saturating_sub(items.len());
        out.push_str(&format!("stacks: {}", items.join(", ")));
        if more > 0 {
            out.push_str(&format!(" (+{more} more functions)"));
        }
        out.push('\n');
    }
    out
}

/// Every cause over all of a cell's episodes, kept or not.
pub fn cause_totals_table(totals: &[CauseTotal]) -> String {
    let sum = Nanos(
        totals
            .iter()
            .fold(0u64, |acc, t| acc.saturating_add(t.total_ns.0)),
    );
    let mut t = Table::new(["kind", "name", "episodes", "total", "max", "share"]).left_aligned(2);
    for c in totals {
        t.row([
            c.kind.to_string(),
            c.name.clone(),
            c.episodes.to_string(),
            c.total_ns.to_string(),
            c.max_ns.to_string(),
            percent(c.total_ns, sum),
        ]);
    }
    t.render()
}

fn cell_episodes(cell: &CellResult, run_offset: Nanos) -> String {
    let mut out = String::new();
    let idx = cell.meta.index;
    let kept = cell.episodes.len() as u64;
    match &cell.trace {
        Some(t) => {
            let past = t.episodes_total.saturating_sub(t.episodes_kept);
            out.push_str(&format!(
                "\ncell {idx}: {} episodes above {}; {} kept in full (cap {})",
                t.episodes_total, t.threshold_ns, t.episodes_kept, t.episode_cap
            ));
            if past > 0 {
                out.push_str(&format!(", {past} past the cap counted in the totals only"));
            }
            out.push('\n');
        }
        None => out.push_str(&format!("\ncell {idx}: {kept} episodes\n")),
    }
    for e in &cell.episodes {
        out.push('\n');
        out.push_str(&episode_text(e, run_offset));
    }
    if let Some(t) = &cell.trace {
        if !t.cause_totals.is_empty() {
            out.push_str(&format!(
                "\ncell {idx}: where the time went over all {} episodes\n",
                t.episodes_total
            ));
            out.push_str(&cause_totals_table(&t.cause_totals));
            if let Some(line) = crate::steal::hypervisor_line(t) {
                out.push_str(&format!("{line}\n"));
            }
        }
        if let Some(table) = crate::held::held_table(t) {
            out.push_str(&format!(
                "\ncell {idx}: the code that held the CPU, most episode time first\n"
            ));
            out.push_str(&table);
        }
        if !t.recurring.is_empty() {
            out.push_str(&format!(
                "\ncell {idx}: causes that recurred with a period\n"
            ));
            out.push_str(&crate::recurring::recurring_text(t));
        }
    }
    out
}

/// The episodes of a run, cell by cell; says so when the run was not
/// traced.
pub fn episodes_text(run: &RunResult) -> String {
    let traced: Vec<&CellResult> = run
        .cells
        .iter()
        .filter(|c| c.trace.is_some() || !c.episodes.is_empty())
        .collect();
    if traced.is_empty() {
        return format!(
            "\nrun {} was not traced, so it has no episodes; record one with `latscope run --trace --threshold D`\n",
            run.meta.id
        );
    }
    // Episode times are given from the start of the first cell.
    let origin = run
        .cells
        .iter()
        .map(|c| c.meta.monotonic_start_ns)
        .min()
        .unwrap_or_default();
    let mut out = String::new();
    for cell in traced {
        out.push_str(&cell_episodes(
            cell,
            cell.meta.monotonic_start_ns.saturating_sub(origin),
        ));
    }
    out
}

fn episodes(n: u64) -> String {
    if n == 1 {
        "1 episode".to_string()
    } else {
        format!("{n} episodes")
    }
}

/// Episodes the run saw: the tracer's count where there is one (it
/// includes those past the cap), the stored ones otherwise.
fn episodes_seen(run: &RunResult) -> u64 {
    run.cells
        .iter()
        .map(|c| {
            let kept = c.episodes.len() as u64;
            c.trace
                .as_ref()
                .map_or(kept, |t| t.episodes_total.max(kept))
        })
        .sum()
}

/// Episodes kept in full (the cap, as far as the run says).
fn episodes_kept(run: &RunResult) -> u64 {
    run.cells.iter().map(|c| c.episodes.len() as u64).sum()
}

/// Why `run` has no episode `k` to export: it was not traced, there is no
/// such episode, or the episode is past the cap (only counted).
pub fn episode_missing(run: &RunResult, k: u32) -> String {
    let id = run.meta.id;
    let traced = run
        .cells
        .iter()
        .any(|c| c.trace.is_some() || !c.episodes.is_empty());
    if !traced {
        return format!(
            "run {id} was not traced, so it has no episodes to export; record one with `latscope run --trace`"
        );
    }
    let seen = episodes_seen(run);
    if k == 0 || u64::from(k) > seen {
        return format!(
            "run {id} has {}; --episode {k} does not exist",
            episodes(seen)
        );
    }
    format!(
        "episode {k} of run {id} is past the cap ({} kept in full): only its share of the cause totals was kept; see `latscope show {id} --episodes`",
        episodes(episodes_kept(run))
    )
}
