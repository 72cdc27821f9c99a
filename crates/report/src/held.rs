//! The code that held the CPU, as text: one line per episode and a table
//! of the run's most frequent stacks (docs/tracing.md, "The code that
//! held the CPU").

use latscope_model::{frames_line, Episode, HeldWhere, TraceSummary};

use crate::table::Table;

/// Frames named per site in an episode's line.
const FRAMES_SHOWN: usize = 4;

/// "when the timer fired: rustc [4242] in clear_page_erms ← …; yielded at
/// __cond_resched ← …", or nothing when the episode has no stacks.
pub fn held_line(e: &Episode) -> Option<String> {
    let h = e.breakdown.held.as_ref()?;
    let mut parts = Vec::new();
    if let Some(s) = &h.at_expiry {
        parts.push(format!(
            "when the timer fired: {}",
            s.describe(FRAMES_SHOWN)
        ));
    }
    if let Some(s) = &h.yielded {
        if s.frames.is_empty() {
            parts.push(format!("{} [{}] yielded (no stack)", s.comm, s.pid));
        } else {
            parts.push(format!(
                "{} [{}] yielded at {}",
                s.comm,
                s.pid,
                frames_line(&s.frames, FRAMES_SHOWN, s.truncated)
            ));
        }
    }
    if let Some(n) = &h.note {
        parts.push(n.clone());
    }
    (!parts.is_empty()).then(|| format!("held: {}\n", parts.join("; ")))
}

/// The run's most frequent stacks (and the stacks the kernel could not
/// take), or nothing.
pub fn held_table(t: &TraceSummary) -> Option<String> {
    if t.held_top.is_empty() && t.stacks_map_full == 0 && t.stacks_failed == 0 {
        return None;
    }
    let mut out = String::new();
    if !t.held_top.is_empty() {
        let mut tab = Table::new(["where", "task", "episodes", "time", "stack"]).left_aligned(2);
        for s in &t.held_top {
            let place = match s.site_kind {
                HeldWhere::AtExpiry => "at expiry",
                HeldWhere::Yielded => "yielded",
            };
            tab.row([
                place.to_string(),
                s.comm.clone(),
                s.episodes.to_string(),
                s.total_ns.to_string(),
                frames_line(&s.frames, 6, false),
            ]);
        }
        out.push_str(&tab.render());
    }
    if t.stacks_map_full > 0 {
        out.push_str(&format!(
            "{} stacks not captured: stack map full\n",
            t.stacks_map_full
        ));
    }
    if t.stacks_failed > 0 {
        out.push_str(&format!(
            "{} stacks not captured: other errors\n",
            t.stacks_failed
        ));
    }
    Some(out)
}

/// The held stacks as args of an episode's slice in the Perfetto export:
/// `held_at_expiry` and `yielded`, each `{task, pid, frames, ...}` (frames
/// innermost first), and `held_note`; absent keys for what is missing.
pub fn held_args(e: &Episode, args: &mut serde_json::Value) {
    let (Some(h), Some(map)) = (e.breakdown.held.as_ref(), args.as_object_mut()) else {
        return;
    };
    let site = |s: &latscope_model::StackSite| {
        serde_json::json!({
            "task": s.comm,
            "pid": s.pid,
            "user_mode": s.user_mode,
            "frames": s.frames,
            "truncated": s.truncated,
        })
    };
    if let Some(s) = &h.at_expiry {
        map.insert("held_at_expiry".into(), site(s));
    }
    if let Some(s) = &h.yielded {
        map.insert("yielded".into(), site(s));
    }
    if let Some(n) = &h.note {
        map.insert("held_note".into(), n.clone().into());
    }
}
