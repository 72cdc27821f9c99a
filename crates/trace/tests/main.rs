//! latscope-trace's integration tests, as one test binary: built once
//! (this crate is optimised in every build, so each test binary of its own
//! cost seconds of optimising the same code again), run with the tests of
//! every file side by side. Those that attach to the live kernel take
//! [`kernel`] so that they run one at a time (in binaries of their own,
//! the files never overlapped); the others (decoders, fixtures, replays) run beside them.
#![allow(clippy::unwrap_used)]

use std::sync::{Mutex, MutexGuard};

mod common;

mod bpf_deferred;
mod bpf_equal;
mod bpf_recorder;
mod bpf_steal;
mod bpf_timer;
mod decode;
mod format;
mod live;
mod recording;
mod replay;
mod ring;
mod robust;

static KERNEL: Mutex<()> = Mutex::new(());

/// Held by every test that traces or measures the live kernel.
pub fn kernel() -> MutexGuard<'static, ()> {
    KERNEL.lock().unwrap_or_else(|e| e.into_inner())
}
