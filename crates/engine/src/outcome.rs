//! What a run gives back, and the machine-facing pieces its caller
//! supplies (clock, stop, observer, system snapshot, rescue writer).

use std::path::PathBuf;
use std::sync::Arc;

use latscope_model::{MicroContext, MicroResult, Namer, Nanos, RunId, RunStatus, SystemInfo};
use latscope_probes::Clock;
use latscope_record::RunResult;

use crate::observer::Observer;
use crate::sink::SinkError;
use crate::stop::Stop;

/// What a run gives back.
#[derive(Debug)]
pub struct RunOutcome {
    /// The run's id in the sink (when the sink could create it).
    pub run_id: RunId,
    /// How the measurement ended: complete, interrupted, or failed.
    pub status: RunStatus,
    /// Everything measured, as kept in memory beside the sink: complete
    /// even when the sink failed. Its id is the run's in the sink.
    pub result: RunResult,
    /// A microbenchmark run's context and results, as kept in memory.
    pub micro_context: Option<MicroContext>,
    pub micro: Vec<MicroResult>,
    /// The sink's first failure, when part of the run could not be stored
    /// (the rest is in `result`).
    pub sink_error: Option<SinkError>,
    /// When the sink failed and the caller gave a [`Rescue`]: where the
    /// whole run was written, or why it could not be.
    pub rescued: Option<Result<PathBuf, String>>,
    /// The largest value of the probes' main figure over every cell
    /// (timer latency, noise gap, UDP path): what `--fail-above` tests.
    pub max_latency: Nanos,
    /// When `--stop-above` ended the run: the value that exceeded it.
    pub stopped_above: Option<Nanos>,
}

/// A limit a run exceeded (`--stop-above`, `--fail-above`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitExceeded {
    /// The stop limit ended the run at `value`.
    Stopped { value: Nanos, limit: Nanos },
    /// The largest value, `max`, is above the fail limit.
    Failed { max: Nanos, limit: Nanos },
}

impl RunOutcome {
    /// The limit this run exceeded, if any, for a run that measured to its
    /// end or was ended by its stop limit (a failed or otherwise
    /// interrupted run exceeded none: its status says what happened).
    pub fn limit_exceeded(
        &self,
        stop_above: Option<Nanos>,
        fail_above: Option<Nanos>,
    ) -> Option<LimitExceeded> {
        if self.status == RunStatus::Failed
            || (self.stopped_above.is_none() && self.status == RunStatus::Interrupted)
        {
            return None;
        }
        if let (Some(value), Some(limit)) = (self.stopped_above, stop_above) {
            return Some(LimitExceeded::Stopped { value, limit });
        }
        let max = self.max_latency;
        fail_above
            .filter(|limit| max > *limit)
            .map(|limit| LimitExceeded::Failed { max, limit })
    }
}

/// A run whose sink failed, as the one line a user reads: the sink's
/// error, and where the whole run went.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SinkFailure {
    /// In the rescue file at `path`.
    #[error("{error}; the store keeps the run up to its last good checkpoint, and the whole run is in {}", path.display())]
    Rescued { error: SinkError, path: PathBuf },
    /// Nowhere else: the rescue could not be written (`why`), or none was
    /// asked for.
    #[error("{error}; the run could not be written anywhere else either{}", why.as_ref().map(|w| format!(": {w}")).unwrap_or_default())]
    NotRescued {
        error: SinkError,
        why: Option<String>,
    },
}

impl RunOutcome {
    /// When the sink failed: what of the run it lost, and where it is.
    pub fn sink_failure(&self) -> Option<SinkFailure> {
        let error = self.sink_error.clone()?;
        Some(match &self.rescued {
            Some(Ok(path)) => SinkFailure::Rescued {
                error,
                path: path.clone(),
            },
            Some(Err(why)) => SinkFailure::NotRescued {
                error,
                why: Some(why.clone()),
            },
            None => SinkFailure::NotRescued { error, why: None },
        })
    }
}

/// Writes the whole run somewhere else when the sink failed (the CLI: a
/// rescue file of the run's JSON beside the store); returns where.
pub type Rescue<'a> = &'a dyn Fn(&RunOutcome) -> Result<PathBuf, String>;

/// The machine-facing pieces of a run that tests replace.
pub struct Env<'a> {
    pub clock: Arc<dyn Clock>,
    pub stop: Stop,
    pub observer: &'a mut dyn Observer,
    /// How the notices name the run's settings (the command line's
    /// `--trace`, the monitor's `trace`).
    pub names: &'a dyn Namer,
    /// The system snapshot to record (taken from the machine when `None`).
    pub system: Option<SystemInfo>,
    /// Where the whole run goes when the sink fails (`None`: only into the
    /// outcome).
    pub rescue: Option<Rescue<'a>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(status: RunStatus, stopped_above: Option<Nanos>, max: u64) -> RunOutcome {
        RunOutcome {
            run_id: RunId(1),
            status,
            result: RunResult {
                meta: latscope_model::RunMeta::new(RunId(1), Nanos(0)),
                system: SystemInfo::default(),
                capabilities: Default::default(),
                cells: Vec::new(),
            },
            micro_context: None,
            micro: Vec::new(),
            sink_error: None,
            rescued: None,
            max_latency: Nanos(max),
            stopped_above,
        }
    }

    #[test]
    fn the_limit_exceeded_is_the_stop_then_the_fail_limit() {
        let (stop, fail) = (Some(Nanos(500)), Some(Nanos(100)));
        let stopped = outcome(RunStatus::Interrupted, Some(Nanos(600)), 600);
        assert_eq!(
            stopped.limit_exceeded(stop, fail),
            Some(LimitExceeded::Stopped {
                value: Nanos(600),
                limit: Nanos(500)
            })
        );
        let over = outcome(RunStatus::Complete, None, 150);
        assert_eq!(
            over.limit_exceeded(None, fail),
            Some(LimitExceeded::Failed {
                max: Nanos(150),
                limit: Nanos(100)
            })
        );
        assert_eq!(
            outcome(RunStatus::Complete, None, 100).limit_exceeded(None, fail),
            None
        );
        // A signal or a failure is the status's to tell, whatever was measured.
        assert_eq!(
            outcome(RunStatus::Interrupted, None, 900).limit_exceeded(stop, fail),
            None
        );
        assert_eq!(
            outcome(RunStatus::Failed, Some(Nanos(600)), 900).limit_exceeded(stop, fail),
            None
        );
    }
}
