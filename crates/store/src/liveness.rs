use latscope_model::{RunMeta, RunStatus};

/// The note added to a run that is stored as running but whose measuring
/// process is gone.
pub const INTERRUPTED_NOTE: &str =
    "the measuring process ended without finishing the run; data up to the last checkpoint is kept";

/// The status a reader should see: a run stored as `running` whose process
/// `is_alive` says is gone was interrupted (killed, crashed, machine
/// rebooted), so it is reported as [`RunStatus::Interrupted`] with
/// [`INTERRUPTED_NOTE`]. The stored row is left as it is: the store may be
/// read by someone who cannot or should not write it.
pub fn effective_status(mut meta: RunMeta, is_alive: impl Fn(&RunMeta) -> bool) -> RunMeta {
    if meta.status == RunStatus::Running && !is_alive(&meta) {
        meta.status = RunStatus::Interrupted;
        meta.notes.push(INTERRUPTED_NOTE.to_string());
    }
    meta
}

/// Whether the process that recorded `meta` may still be measuring: same
/// boot, `/proc/<pid>` exists and its command name starts with `latscope`
/// (a pid reused by another program does not count). When the current boot
/// id cannot be read, only the pid is checked.
pub fn process_is_alive(meta: &RunMeta) -> bool {
    if !meta.boot_id.is_empty() {
        if let Ok(current) = std::fs::read_to_string("/proc/sys/kernel/random/boot_id") {
            if current.trim() != meta.boot_id.trim() {
                return false;
            }
        }
    }
    match std::fs::read_to_string(format!("/proc/{}/comm", meta.pid)) {
        Ok(comm) => meta.pid != 0 && comm.trim_end().starts_with("latscope"),
        Err(_) => false,
    }
}
