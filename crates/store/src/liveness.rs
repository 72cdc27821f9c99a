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

/// How long a run of another machine may go without a checkpoint before a
/// reader takes it for interrupted. Its process cannot be looked up from
/// here; a monitor checkpoints every few seconds (`--persist`, at most a
/// few minutes in practice).
pub const REMOTE_SILENCE_NS: u64 = 15 * 60 * 1_000_000_000;

/// Whether the process that recorded `meta` may still be measuring: same
/// boot, `/proc/<pid>` exists and its command name starts with `latscope`
/// (a pid reused by another program does not count). When the current boot
/// id cannot be read, only the pid is checked. A run recorded by another
/// machine (another boot and another host name: a shared PostgreSQL store)
/// is taken as alive while its last checkpoint is less than
/// [`REMOTE_SILENCE_NS`] old.
pub fn process_is_alive(meta: &RunMeta) -> bool {
    if !meta.boot_id.is_empty() {
        if let Ok(current) = std::fs::read_to_string("/proc/sys/kernel/random/boot_id") {
            if current.trim() != meta.boot_id.trim() {
                let here = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
                return here.trim() != meta.hostname && recently_heard(meta, now_unix_ns());
            }
        }
    }
    match std::fs::read_to_string(format!("/proc/{}/comm", meta.pid)) {
        Ok(comm) => meta.pid != 0 && comm.trim_end().starts_with("latscope"),
        Err(_) => false,
    }
}

fn now_unix_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Whether the run's last sign of life (its last checkpoint, else its
/// start) is less than [`REMOTE_SILENCE_NS`] before `now`.
fn recently_heard(meta: &RunMeta, now: u64) -> bool {
    let last = meta.checkpoint_unix_ns.unwrap_or(meta.started_unix_ns).0;
    now.saturating_sub(last) < REMOTE_SILENCE_NS
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::{Nanos, RunId};

    fn remote(checkpoint_s: Option<u64>) -> RunMeta {
        RunMeta {
            checkpoint_unix_ns: checkpoint_s.map(|s| Nanos(s * 1_000_000_000)),
            pid: 1,
            boot_id: "another-boot".into(),
            hostname: "no-such-host-here".into(),
            ..RunMeta::new(RunId(1), Nanos(1_000 * 1_000_000_000))
        }
    }

    #[test]
    fn another_machines_run_lives_while_it_checkpoints() {
        let s = 1_000_000_000;
        assert!(recently_heard(&remote(Some(2_000)), 2_010 * s));
        assert!(!recently_heard(
            &remote(Some(2_000)),
            2_000 * s + REMOTE_SILENCE_NS
        ));
        assert!(recently_heard(&remote(None), 1_100 * s));
        // A run of this host's previous boot is dead whatever its age.
        let mut mine = remote(Some(u64::MAX / 2_000_000_000));
        mine.hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .unwrap_or_default()
            .trim()
            .to_string();
        assert!(!process_is_alive(&mine));
        // Another host's run that checkpointed a second ago is alive.
        let mut theirs = remote(None);
        theirs.checkpoint_unix_ns = Some(Nanos(now_unix_ns() - s));
        assert!(process_is_alive(&theirs));
    }
}
