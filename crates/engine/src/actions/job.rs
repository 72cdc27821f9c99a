//! One episode's work for the actions thread: what `exec:CMD` and
//! `snapshot[:DIR]` act on.

use latscope_model::{Episode, EpisodeWindow, RunId};

pub(super) struct Job {
    pub(super) run: RunId,
    pub(super) episode: Episode,
    pub(super) window: Option<EpisodeWindow>,
}
