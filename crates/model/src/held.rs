//! The code that held the CPU during an episode: kernel stacks the BPF
//! backend takes in the kernel for wake-ups later than the threshold
//! (docs/tracing.md, "The code that held the CPU").

use serde::{Deserialize, Serialize};

use crate::Nanos;

/// Where the CPU was at one moment of an episode.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct StackSite {
    /// The task (empty when unknown), and its pid (0: the idle task).
    pub comm: String,
    pub pid: i32,
    /// The task was in user mode: no kernel frames to show.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub user_mode: bool,
    /// Kernel function names, innermost first (offsets dropped; the
    /// tracing and interrupt-entry frames above the site removed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frames: Vec<String>,
    /// The kernel kept only the innermost frames of a deeper stack.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

/// What held the measured CPU during one episode.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldCpu {
    /// What the timer interrupt interrupted at the expiry: the task always
    /// (when the callback was seen), its kernel stack only when the
    /// callback itself came later than the threshold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_expiry: Option<StackSite>,
    /// Where the task our thread replaced gave up the CPU (its stack at
    /// `__schedule`, that call's own frames removed); none when the CPU
    /// was idle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub yielded: Option<StackSite>,
    /// Why stacks are missing, when they are ("stack map full", "needs the
    /// BPF backend", ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Which stack of an episode a folded stack is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HeldWhere {
    AtExpiry,
    Yielded,
}

/// Identical stacks folded over a run's episodes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldStack {
    #[serde(rename = "where")]
    pub site_kind: HeldWhere,
    pub comm: String,
    pub frames: Vec<String>,
    /// Episodes that showed it, and their latencies summed.
    pub episodes: u64,
    pub total_ns: Nanos,
}

impl StackSite {
    /// "rustc [4242] in clear_page_erms ← clear_huge_page ← …(5 frames)…"
    /// with at most `keep` frames named.
    pub fn describe(&self, keep: usize) -> String {
        let who = if self.pid == 0 {
            "idle".to_string()
        } else if self.comm.is_empty() {
            format!("[{}]", self.pid)
        } else {
            format!("{} [{}]", self.comm, self.pid)
        };
        if self.user_mode {
            return format!("{who} in user mode");
        }
        if self.frames.is_empty() {
            return who;
        }
        format!(
            "{who} in {}",
            frames_line(&self.frames, keep, self.truncated)
        )
    }
}

/// `a ← b ← c …(N frames)…`: the innermost `keep` frames, then how many
/// more there are.
pub fn frames_line(frames: &[String], keep: usize, truncated: bool) -> String {
    let keep = keep.max(1);
    let mut s = frames
        .iter()
        .take(keep)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(" ← ");
    let more = frames.len().saturating_sub(keep);
    if more > 0 || truncated {
        let plus = if truncated { "+" } else { "" };
        s.push_str(&format!(" ← …({more}{plus} frames)…"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sites_read_as_the_episode_line_shows_them() {
        let s = StackSite {
            comm: "rustc".into(),
            pid: 4242,
            user_mode: false,
            frames: [
                "clear_page_erms",
                "clear_huge_page",
                "do_huge_pmd_anonymous_page",
            ]
            .map(String::from)
            .to_vec(),
            truncated: false,
        };
        assert_eq!(
            s.describe(2),
            "rustc [4242] in clear_page_erms ← clear_huge_page ← …(1 frames)…"
        );
        assert_eq!(
            s.describe(5),
            "rustc [4242] in clear_page_erms ← clear_huge_page ← do_huge_pmd_anonymous_page"
        );
        let user = StackSite {
            user_mode: true,
            frames: Vec::new(),
            ..s.clone()
        };
        assert_eq!(user.describe(3), "rustc [4242] in user mode");
        let idle = StackSite {
            pid: 0,
            comm: "swapper/0".into(),
            frames: vec!["pv_native_safe_halt".into()],
            ..s
        };
        assert_eq!(idle.describe(3), "idle in pv_native_safe_halt");
    }

    #[test]
    fn old_breakdowns_without_stacks_still_read() {
        let h: HeldCpu = serde_json::from_str("{}").unwrap();
        assert_eq!(h, HeldCpu::default());
        assert_eq!(serde_json::to_string(&h).unwrap(), "{}");
    }
}
