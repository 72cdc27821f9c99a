//! The code that held the CPU in the HTML report: the episode row's held
//! text and the cell's table of the most frequent stacks (BPF backend;
//! docs/tracing.md, "The code that held the CPU").

use latscope_model::{frames_line, Episode, HeldWhere, TraceSummary};

use super::page::{para, table_with};

/// Frames named per stack in the table of folded stacks.
const FRAMES_SHOWN: usize = 6;

/// The episode's held line without its `held: ` label (empty when the
/// episode has no stacks).
pub(super) fn held_cell(e: &Episode) -> String {
    crate::held::held_line(e)
        .map(|l| {
            let l = l.trim_end();
            l.strip_prefix("held: ").unwrap_or(l).to_string()
        })
        .unwrap_or_default()
}

/// The folded stacks of the cell's episodes, with the stacks the kernel
/// could not take; nothing when there are neither.
pub(super) fn held_section(t: &TraceSummary) -> String {
    let mut out = String::new();
    if !t.held_top.is_empty() {
        let header = [
            "where",
            "task",
            "episodes",
            "time",
            "stack (innermost first)",
        ];
        let rows: Vec<Vec<String>> = t
            .held_top
            .iter()
            .map(|s| {
                let place = match s.site_kind {
                    HeldWhere::AtExpiry => "when the timer fired",
                    HeldWhere::Yielded => "yielded at",
                };
                vec![
                    place.to_string(),
                    s.comm.clone(),
                    s.episodes.to_string(),
                    s.total_ns.to_string(),
                    frames_line(&s.frames, FRAMES_SHOWN, false),
                ]
            })
            .collect();
        out.push_str("<h4>The code that held the CPU: most frequent stacks</h4>");
        out.push_str(&table_with(&header, &rows, |i| i == 2 || i == 3));
    }
    let lost = t.stacks_map_full + t.stacks_failed;
    if lost > 0 {
        out.push_str(&para(
            &format!(
                "{lost} stack(s) not captured ({} stack map full, {} other errors).",
                t.stacks_map_full, t.stacks_failed
            ),
            Some("note"),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use latscope_model::{HeldCpu, HeldStack, Nanos, StackSite};

    fn frames(f: &[&str]) -> Vec<String> {
        f.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn folded_stacks_get_a_table_and_none_get_nothing() {
        assert_eq!(held_section(&TraceSummary::default()), "");
        let t = TraceSummary {
            held_top: vec![HeldStack {
                site_kind: HeldWhere::Yielded,
                comm: "<cargo>".into(),
                frames: frames(&["__cond_resched", "truncate_inode_pages_range", "evict"]),
                episodes: 12,
                total_ns: Nanos(3_400_000),
            }],
            stacks_map_full: 3,
            ..TraceSummary::default()
        };
        let html = held_section(&t);
        for want in [
            "most frequent stacks",
            "yielded at",
            "&lt;cargo&gt;",
            "<td class=\"num\">12</td>",
            "3.40ms",
            "__cond_resched ← truncate_inode_pages_range ← evict",
            "3 stack(s) not captured (3 stack map full, 0 other errors)",
        ] {
            assert!(html.contains(want), "{want} in {html}");
        }
    }

    #[test]
    fn the_episode_row_names_where_the_blocker_yielded() {
        let mut e = Episode {
            seq: 1,
            cpu: latscope_model::CpuId(0),
            metric: "timer.latency".into(),
            expiry_ns: Nanos(0),
            offset_ns: Nanos(0),
            latency_ns: Nanos(300_000),
            breakdown: latscope_model::Breakdown::default(),
            stacks: Vec::new(),
        };
        assert_eq!(held_cell(&e), "");
        e.breakdown.held = Some(HeldCpu {
            at_expiry: None,
            yielded: Some(StackSite {
                comm: "dd".into(),
                pid: 77,
                frames: frames(&["__cond_resched", "generic_perform_write", "vfs_write"]),
                ..StackSite::default()
            }),
            note: None,
        });
        assert_eq!(
            held_cell(&e),
            "dd [77] yielded at __cond_resched ← generic_perform_write ← vfs_write"
        );
    }
}
