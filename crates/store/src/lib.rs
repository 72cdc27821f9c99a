//! latscope's SQLite store: where runs are checkpointed while they go on and
//! read back later by `list`, `show` and the reports.
//!
//! One file holds any number of runs. A run has a system snapshot, the
//! capabilities it obtained, and cells (probe × workload × settings); each
//! cell has one histogram row per metric and CPU (plus a coordinated-omission
//! corrected one where it applies) and per-second timeline chunks. A traced
//! cell (`run --trace`) also has the tracer's summary, its episodes (samples
//! above the threshold, each with a cause breakdown) and, for the first few,
//! the kernel events around them (compressed), for export to a trace viewer.
//! A noise cell (`run --probe noise`) also has, per CPU, the noise probe's
//! figures beside its `noise.gap` histogram (active time, iterations, base
//! iteration, noise per cause class, steal time, findings); a timer cell,
//! per CPU, its early wake-ups (count and largest earliness). A UDP cell
//! (`run --probe udp`) also has the probe's counts beside its `udp.*`
//! histograms (datagrams sent, received, lost, reordered, duplicated, and
//! those without a kernel time stamp). A cell run under a background
//! workload also has that workload's characterization:
//! a summary and one row per one-second sample (CPU shares, interrupts,
//! context switches, system calls, softirqs, disk and network traffic, page
//! faults, runnable tasks).
//!
//! Design points:
//!
//! - **Recognisable.** `PRAGMA application_id` is [`APPLICATION_ID`]
//!   ("LATS"); a file that is not SQLite, or is another program's database,
//!   is refused before anything is written to it.
//! - **Versioned.** The schema lives in `migrations/NNNN_name.sql`, embedded
//!   in the binary and applied in order, each in its own transaction;
//!   `PRAGMA user_version` is the version. A store newer than this build is
//!   refused, never "repaired".
//! - **Crash-safe.** WAL journal, `synchronous=NORMAL`: every
//!   [`Store::checkpoint`] is one transaction, so a measuring process killed
//!   at any moment leaves a readable store with everything up to its last
//!   checkpoint. Readers see such a run as interrupted (see
//!   [`effective_status`]) without the stored row being rewritten.
//! - **Concurrent.** A reader (`list`, `show`) can open the store while a
//!   run is writing to it; WAL lets both proceed, and a busy timeout of 5 s
//!   covers the short write transactions.

mod checkpoint;
mod codec;
mod copy;
mod db;
mod db_error;
mod error;
mod filter;
mod ids;
mod insert;
mod intervals;
mod liveness;
mod micro;
mod monitor;
mod noise;
mod pg_client;
mod plot;
mod postgres;
mod reserve;
mod schema;
mod schema_pg;
mod sink;
mod snapshots;
mod snapshots_load;
mod timer;
mod trace;
mod udp;
mod workload;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::db::{params, Db, DbResult, OptionalExt, Row, Value};
use latscope_model::{Capabilities, CellMeta, CpuId, Nanos, RunId, RunMeta, RunStatus, SystemInfo};
use latscope_record::{CellResult, Histogram, MetricResult, RunResult, SecondStats, TimelineChunk};

pub use checkpoint::Checkpoint;
pub use copy::{Copied, CopyEvent};
pub use db::DbError;
pub use db::Dialect;
pub use error::StoreError;
pub use filter::{kernel_matches, RunFilter};
pub use ids::CellId;
pub use intervals::keeps_intervals;
pub use latscope_record::{CellKey, Sink, SinkError};
pub use liveness::{effective_status, process_is_alive, INTERRUPTED_NOTE};
pub use micro::MicroRun;
pub use monitor::{Span, Window};
pub use postgres::{is_postgres_url, redact, redact_arg, redact_args};
pub use schema::{APPLICATION_ID, SCHEMA_VERSION};
pub use snapshots::{Snapshot, MAX_SNAPSHOTS};

use codec::{cpu_from_sql, cpu_to_sql, decode_timeline, encode_timeline};
use error::classify;
use reserve::Reserve;

use error::{to_sql, Result};

/// The metric whose worst case [`RunListing::max_timer_latency`] reports.
const TIMER_LATENCY: &str = latscope_model::metric::TIMER_LATENCY;

/// One line of `latscope list`: a run without its measurements.
#[derive(Clone, Debug, PartialEq)]
pub struct RunListing {
    /// With the effective status (see [`effective_status`]).
    pub meta: RunMeta,
    /// Ordered by index.
    pub cells: Vec<CellMeta>,
    /// `uname -r` of the measured machine; empty if the snapshot is missing.
    pub system_kernel: String,
    /// The largest raw `timer.latency` sample over all cells and CPUs; `None`
    /// when the run has none.
    pub max_timer_latency: Option<Nanos>,
}

/// Decides whether a run stored as running still has a live process.
type LivenessProbe = Box<dyn Fn(&RunMeta) -> bool + Send>;

/// An open store: one connection to a SQLite file or a PostgreSQL database.
pub struct Store {
    db: Db,
    /// The file, or for PostgreSQL the URL without its password: how
    /// messages name the store.
    path: PathBuf,
    is_alive: LivenessProbe,
    /// Held from [`Store::create_run`] to [`Store::finish_run`], which
    /// gives it up to fit the run's final status on a full disk.
    reserve: Option<Reserve>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// A `runs` row as SQLite returns it, before range checks.
struct RawRun {
    id: i64,
    started: i64,
    ended: Option<i64>,
    checkpoint: Option<i64>,
    status: String,
    command_line: String,
    pid: i64,
    boot_id: String,
    hostname: String,
    tool_version: String,
    notes: String,
    source: Option<String>,
}

const RUN_COLUMNS: &str = "r.id, r.started_unix_ns, r.ended_unix_ns, r.checkpoint_unix_ns, \
     r.status, r.command_line, r.pid, r.boot_id, r.hostname, r.tool_version, r.notes, r.source";

fn raw_run(row: &Row) -> DbResult<RawRun> {
    Ok(RawRun {
        id: row.get(0)?,
        started: row.get(1)?,
        ended: row.get(2)?,
        checkpoint: row.get(3)?,
        status: row.get(4)?,
        command_line: row.get(5)?,
        pid: row.get(6)?,
        boot_id: row.get(7)?,
        hostname: row.get(8)?,
        tool_version: row.get(9)?,
        notes: row.get(10)?,
        source: row.get(11)?,
    })
}

/// A `cells` row as SQLite returns it.
struct RawCell {
    id: i64,
    idx: i64,
    probe: String,
    workload: String,
    settings: String,
    duration: i64,
    monotonic_start: i64,
}

const CELL_COLUMNS: &str = "c.id, c.idx, c.probe, c.workload, c.settings, c.duration_ns, \
     c.monotonic_start_ns";

fn raw_cell(row: &Row) -> DbResult<RawCell> {
    Ok(RawCell {
        id: row.get(0)?,
        idx: row.get(1)?,
        probe: row.get(2)?,
        workload: row.get(3)?,
        settings: row.get(4)?,
        duration: row.get(5)?,
        monotonic_start: row.get(6)?,
    })
}

/// A `metrics` row as SQLite returns it.
struct RawMetric {
    name: String,
    cpu: i64,
    kind: String,
    histogram: Vec<u8>,
    overruns: i64,
    missed: i64,
    threshold: Option<i64>,
    above: Option<i64>,
}

impl Store {
    /// Opens the store at `path` for writing, creating the file (but not its
    /// directory) if needed and bringing its schema up to date.
    ///
    /// Refuses, leaving the file untouched: a directory, a file that is not
    /// SQLite, another program's SQLite database, and a store whose schema is
    /// newer than this build's.
    ///
    /// A path that is a PostgreSQL URL (`postgres://…`, see
    /// [`is_postgres_url`]) opens that database instead, with the same
    /// checks: another application's database and a newer schema are
    /// refused before anything is written.
    pub fn open(path: &Path) -> Result<Store> {
        Store::open_mode(path, schema::Mode::Write)
    }

    /// Opens an existing store for reading (`list`, `show`). The file must
    /// exist and pass the same checks as [`Store::open`]. A store with an
    /// older schema is migrated (each step in a transaction) when the file is
    /// writable, and refused with a clear message when it is not; nothing
    /// else is ever written.
    pub fn open_existing(path: &Path) -> Result<Store> {
        Store::open_mode(path, schema::Mode::ReadExisting)
    }

    fn open_mode(path: &Path, mode: schema::Mode) -> Result<Store> {
        if let Some(url) = path.to_str().filter(|p| is_postgres_url(p)) {
            let target = postgres::PgTarget::parse(url).map_err(|reason| StoreError::Open {
                path: PathBuf::from(redact_arg(url)),
                reason,
            })?;
            let db = schema_pg::open(&target, mode)?;
            return Ok(Store::from_db(db, target.display_path()));
        }
        let conn = schema::open(path, mode)?;
        Ok(Store::from_db(Db::sqlite(conn), path.to_path_buf()))
    }

    fn from_db(db: Db, path: PathBuf) -> Store {
        Store {
            db,
            path,
            is_alive: Box::new(process_is_alive),
            reserve: None,
        }
    }

    /// Replaces the check of whether a run stored as running still has a live
    /// process (default: [`process_is_alive`]). For tests and for tools that
    /// read stores from other machines.
    pub fn set_liveness_probe(&mut self, probe: impl Fn(&RunMeta) -> bool + Send + 'static) {
        self.is_alive = Box::new(probe);
    }

    /// The path the store was opened with; for PostgreSQL, its URL without
    /// the password.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Which engine holds the store.
    pub fn dialect(&self) -> Dialect {
        self.db.dialect()
    }

    /// How many times the connection to a PostgreSQL server was opened
    /// again after the server closed it (always 0 for SQLite).
    pub fn reconnects(&self) -> u64 {
        self.db.reconnects()
    }

    /// The schema version of the store (SQLite's `PRAGMA user_version`).
    pub fn schema_version(&self) -> Result<u32> {
        match self.db.sqlite_conn() {
            Some(conn) => schema::user_version(conn).map_err(DbError::from),
            None => schema_pg::version(&self.db),
        }
        .map_err(|e| self.sql("reading the schema version", e))
    }

    /// Records a new run with its system snapshot and capabilities, in one
    /// transaction. `meta.id` is ignored: the store numbers runs.
    pub fn create_run(
        &mut self,
        meta: &RunMeta,
        system: &SystemInfo,
        caps: &Capabilities,
    ) -> Result<RunId> {
        let path = self.path.as_path();
        let err = |action| move |e| classify(path, action, e);
        let tx = self.db.begin().map_err(err("starting a transaction"))?;
        let id = insert_run_rows(&tx, path, meta, system, caps)?;
        tx.commit().map_err(err("committing the new run"))?;
        if self.reserve.is_none() && self.db.dialect() == Dialect::Sqlite {
            self.reserve = Reserve::take(&self.path);
        }
        Ok(id)
    }

    /// Replaces the run's recorded capabilities (they can change once the
    /// probes have started, e.g. when RT priority is refused).
    pub fn update_capabilities(&mut self, run: RunId, caps: &Capabilities) -> Result<()> {
        let caps_json = self.json(caps, "the capabilities")?;
        let n = self
            .db
            .execute(
                "UPDATE capabilities SET caps = ?2 WHERE run_id = ?1",
                params![run.0, caps_json],
            )
            .map_err(|e| self.sql("updating the capabilities", e))?;
        if n == 0 {
            return Err(StoreError::NotFound(run));
        }
        Ok(())
    }

    /// Adds a cell to a run. Its `duration_ns` is updated by each
    /// [`Store::checkpoint`].
    pub fn add_cell(&mut self, run: RunId, meta: &CellMeta) -> Result<CellId> {
        insert_cell(&self.db, &self.path, run, meta)
    }

    /// Saves a cell's progress in one transaction: its metric rows are
    /// replaced by `metrics` (a raw row each, plus a corrected row where
    /// [`MetricResult::corrected`] is set), the `timeline` chunks are
    /// appended, the cell's duration becomes `duration` and the run's
    /// checkpoint time `now_unix`.
    pub fn checkpoint(
        &mut self,
        run: RunId,
        cell: CellId,
        duration: Nanos,
        metrics: &[MetricResult],
        timeline: &[TimelineChunk],
        now_unix: Nanos,
    ) -> Result<()> {
        let path = self.path.as_path();
        let err = |action| move |e| classify(path, action, e);
        let tx = self.db.begin().map_err(err("starting a checkpoint"))?;
        write_progress(&tx, path, run, cell, duration, metrics, timeline, now_unix)?;
        tx.commit().map_err(err("committing the checkpoint"))
    }

    /// Ends a run: sets its status and end time and appends `notes` to its
    /// notes.
    ///
    /// When the disk is full, the space held back since
    /// [`Store::create_run`] is given up and the update tried once more, so
    /// a run that filled the disk still ends `failed` with its cause rather
    /// than reading as interrupted.
    pub fn finish_run(
        &mut self,
        run: RunId,
        status: RunStatus,
        ended_unix: Nanos,
        notes: &[String],
    ) -> Result<()> {
        let reserve = self.reserve.take();
        let mut result = self.finish_run_once(run, status, ended_unix, notes);
        if matches!(result, Err(StoreError::Full { .. })) && reserve.is_some() {
            drop(reserve); // gives its space back
            result = self.finish_run_once(run, status, ended_unix, notes);
        }
        result
    }

    fn finish_run_once(
        &mut self,
        run: RunId,
        status: RunStatus,
        ended_unix: Nanos,
        notes: &[String],
    ) -> Result<()> {
        let ended = to_sql(ended_unix.0, "the run's end time")?;
        let path = self.path.as_path();
        let err = |action| move |e| classify(path, action, e);
        let tx = self.db.begin().map_err(err("starting a transaction"))?;
        let stored: Option<String> = tx
            .query_row("SELECT notes FROM runs WHERE id = ?1", [run.0], |r| {
                r.get(0)
            })
            .optional()
            .map_err(err("reading the run's notes"))?;
        let Some(stored) = stored else {
            return Err(StoreError::NotFound(run));
        };
        let mut all: Vec<String> =
            serde_json::from_str(&stored).map_err(|e| StoreError::Corrupt {
                path: self.path.clone(),
                what: format!("run {run} has unreadable notes ({e})"),
            })?;
        all.extend(notes.iter().cloned());
        let all = serde_json::to_string(&all).map_err(|e| StoreError::Corrupt {
            path: self.path.clone(),
            what: format!("cannot encode the notes of run {run} ({e})"),
        })?;
        tx.execute(
            "UPDATE runs SET status = ?2, ended_unix_ns = ?3, notes = ?4 WHERE id = ?1",
            params![run.0, status.as_str(), ended, all],
        )
        .map_err(err("finishing the run"))?;
        tx.commit().map_err(err("committing the end of the run"))
    }

    /// Every run, by ascending id, with its cells and headline figures.
    pub fn list_runs(&self) -> Result<Vec<RunListing>> {
        let raw: Vec<(RawRun, Option<String>)> = self
            .collect(
                &format!(
                    "SELECT {RUN_COLUMNS}, s.kernel_release FROM runs r \
                     LEFT JOIN systems s ON s.run_id = r.id ORDER BY r.id"
                ),
                [],
                |row| Ok((raw_run(row)?, row.get(12)?)),
            )
            .map_err(|e| self.sql("listing the runs", e))?;

        let mut cells: BTreeMap<i64, Vec<CellMeta>> = BTreeMap::new();
        let raw_cells: Vec<(i64, RawCell)> = self
            .collect(
                &format!("SELECT c.run_id, {CELL_COLUMNS} FROM cells c ORDER BY c.run_id, c.idx"),
                [],
                |row| {
                    Ok((
                        row.get(0)?,
                        RawCell {
                            id: row.get(1)?,
                            idx: row.get(2)?,
                            probe: row.get(3)?,
                            workload: row.get(4)?,
                            settings: row.get(5)?,
                            duration: row.get(6)?,
                            monotonic_start: row.get(7)?,
                        },
                    ))
                },
            )
            .map_err(|e| self.sql("listing the cells", e))?;
        for (run, cell) in raw_cells {
            cells.entry(run).or_default().push(self.cell_meta(cell)?);
        }

        let maxima: BTreeMap<i64, i64> = self
            .collect(
                "SELECT c.run_id, MAX(m.max_ns) FROM metrics m JOIN cells c ON c.id = m.cell_id \
                 WHERE m.name = ?1 AND m.kind = 'raw' AND m.max_ns IS NOT NULL \
                 GROUP BY c.run_id",
                [TIMER_LATENCY],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .map_err(|e| self.sql("summarizing the runs", e))?
            .into_iter()
            .collect();

        raw.into_iter()
            .map(|(run, kernel)| {
                let id = run.id;
                let max = maxima
                    .get(&id)
                    .map(|&m| self.nanos(m, "a maximum latency"))
                    .transpose()?;
                Ok(RunListing {
                    meta: effective_status(self.run_meta(run)?, &self.is_alive),
                    cells: cells.remove(&id).unwrap_or_default(),
                    system_kernel: kernel.unwrap_or_default(),
                    max_timer_latency: max,
                })
            })
            .collect()
    }

    /// The run with the highest id, if any.
    pub fn latest_run(&self) -> Result<Option<RunId>> {
        self.db
            .query_row("SELECT MAX(id) FROM runs", [], |r| r.get::<Option<i64>>(0))
            .map(|id| id.map(RunId))
            .map_err(|e| self.sql("finding the latest run", e))
    }

    /// The newest run measured on `host` (its hostname), if any.
    pub fn latest_run_of(&self, host: &str) -> Result<Option<RunId>> {
        self.db
            .query_row(
                "SELECT MAX(id) FROM runs WHERE hostname = ?1",
                [host],
                |r| r.get::<Option<i64>>(0),
            )
            .map(|id| id.map(RunId))
            .map_err(|e| self.sql("finding the host's latest run", e))
    }

    /// The hostnames of the store's runs, sorted.
    pub fn hosts(&self) -> Result<Vec<String>> {
        self.collect(
            "SELECT DISTINCT hostname FROM runs ORDER BY hostname",
            [],
            |r| r.get(0),
        )
        .map_err(|e| self.sql("listing the hosts", e))
    }

    /// Turns what a user typed into a run id that exists in this store:
    /// `latest`, a run number, `HOST:latest` (the newest run of that
    /// host) or `HOST:N` (run N, which must be that host's).
    pub fn resolve(&self, spec: &str) -> Result<RunId> {
        let text = spec.trim();
        if let Some((host, which)) = text.rsplit_once(':') {
            return self.resolve_on_host(spec, host.trim(), which.trim());
        }
        if text.eq_ignore_ascii_case("latest") {
            return self.latest_run()?.ok_or(StoreError::NoRuns);
        }
        let id = match text.parse::<i64>() {
            Ok(id) if id > 0 => RunId(id),
            _ => return Err(StoreError::BadRunId(spec.to_string())),
        };
        self.require_run(id)?;
        Ok(id)
    }

    fn resolve_on_host(&self, spec: &str, host: &str, which: &str) -> Result<RunId> {
        let unknown = || -> Result<StoreError> {
            Ok(StoreError::UnknownHost {
                host: host.to_string(),
                known: self.hosts()?.join(", "),
            })
        };
        if host.is_empty() {
            return Err(StoreError::BadRunId(spec.to_string()));
        }
        if which.eq_ignore_ascii_case("latest") {
            return match self.latest_run_of(host)? {
                Some(id) => Ok(id),
                None => Err(unknown()?),
            };
        }
        let id = match which.parse::<i64>() {
            Ok(id) if id > 0 => RunId(id),
            _ => return Err(StoreError::BadRunId(spec.to_string())),
        };
        self.require_run(id)?;
        if self.latest_run_of(host)?.is_none() {
            return Err(unknown()?);
        }
        let of: String = self
            .db
            .query_row("SELECT hostname FROM runs WHERE id = ?1", [id.0], |r| {
                r.get(0)
            })
            .map_err(|e| self.sql("reading the run's host", e))?;
        if of != host {
            return Err(StoreError::WrongHost {
                id,
                host: host.to_string(),
                of,
            });
        }
        Ok(id)
    }

    /// A whole run: cells by index, metrics by name then CPU (system-wide
    /// first), each cell's trace summary, episodes (by seq), noise figures
    /// (by CPU), UDP counts and workload characterization, with the
    /// effective status.
    pub fn load_run(&self, id: RunId) -> Result<RunResult> {
        let raw = self
            .db
            .query_row(
                &format!("SELECT {RUN_COLUMNS} FROM runs r WHERE r.id = ?1"),
                [id.0],
                raw_run,
            )
            .optional()
            .map_err(|e| self.sql("reading the run", e))?
            .ok_or(StoreError::NotFound(id))?;
        let meta = effective_status(self.run_meta(raw)?, &self.is_alive);

        let info: Option<String> = self
            .db
            .query_row("SELECT info FROM systems WHERE run_id = ?1", [id.0], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| self.sql("reading the system snapshot", e))?;
        let info = info.ok_or_else(|| self.corrupt(format!("run {id} has no system snapshot")))?;
        let system: SystemInfo = self.parse_json(&info, "system snapshot", id)?;

        let caps: Option<String> = self
            .db
            .query_row(
                "SELECT caps FROM capabilities WHERE run_id = ?1",
                [id.0],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.sql("reading the capabilities", e))?;
        let caps = caps.ok_or_else(|| self.corrupt(format!("run {id} has no capabilities")))?;
        let capabilities: Capabilities = self.parse_json(&caps, "capabilities", id)?;

        let raw_cells = self
            .collect(
                &format!("SELECT {CELL_COLUMNS} FROM cells c WHERE c.run_id = ?1 ORDER BY c.idx"),
                [id.0],
                raw_cell,
            )
            .map_err(|e| self.sql("reading the cells", e))?;
        let mut cells = Vec::with_capacity(raw_cells.len());
        for raw in raw_cells {
            let cell_id = raw.id;
            let meta = self.cell_meta(raw)?;
            let metrics = self.load_metrics(cell_id)?;
            let trace = self.load_trace_summary(cell_id, id)?;
            let episodes = self.load_episodes(cell_id, id)?;
            let noise = self.load_noise_stats(cell_id, id)?;
            let timer = self.load_timer_stats(cell_id)?;
            let udp = self.load_udp_stats(cell_id, id)?;
            let workload_stats = self.load_workload_stats(cell_id, id)?;
            cells.push(CellResult {
                meta,
                metrics,
                trace,
                episodes,
                noise,
                timer,
                udp,
                workload_stats,
            });
        }

        Ok(RunResult {
            meta,
            system,
            capabilities,
            cells,
        })
    }

    /// A metric's per-second timeline in one cell, from second 0 to the last
    /// second stored; seconds no chunk covers are empty. Where chunks
    /// overlap, the one stored last wins.
    pub fn load_timeline(
        &self,
        cell: CellId,
        metric: &str,
        cpu: Option<CpuId>,
    ) -> Result<Vec<SecondStats>> {
        self.load_timeline_from(cell, metric, cpu, 0)
    }

    /// [`Store::load_timeline`] from second `from` of the cell on (element
    /// 0 is second `from`): a monitor that ran for a month keeps only its
    /// last day of seconds (`retain_seconds`), and reading from there
    /// leaves the deleted ones out of memory. Empty when nothing is stored
    /// from `from` on.
    pub fn load_timeline_from(
        &self,
        cell: CellId,
        metric: &str,
        cpu: Option<CpuId>,
        from: u64,
    ) -> Result<Vec<SecondStats>> {
        self.require_cell(cell)?;
        let from_sql = to_sql(from, "a timeline second")?;
        let chunks: Vec<(i64, Vec<u8>)> = self
            .collect(
                "SELECT first_second, data FROM timeline_chunks \
                 WHERE cell_id = ?1 AND metric = ?2 AND cpu = ?3 AND first_second + seconds > ?4 \
                 ORDER BY id",
                params![cell.0, metric, cpu_to_sql(cpu), from_sql],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(|e| self.sql("reading the timeline", e))?;
        let from = usize::try_from(from).unwrap_or(usize::MAX);
        let mut decoded = Vec::with_capacity(chunks.len());
        let mut len = 0usize;
        for (first, data) in chunks {
            let first = usize::try_from(first)
                .ok()
                .filter(|&f| f <= codec::MAX_TIMELINE_SECONDS)
                .ok_or_else(|| {
                    self.corrupt(format!(
                        "timeline of cell {} starts at second {first}",
                        cell.0
                    ))
                })?;
            let seconds = decode_timeline(&data).ok_or_else(|| {
                self.corrupt(format!(
                    "timeline chunk of cell {} has {} bytes, not a multiple of 24",
                    cell.0,
                    data.len()
                ))
            })?;
            len = len.max(first.saturating_add(seconds.len()));
            decoded.push((first, seconds));
        }
        if len > codec::MAX_TIMELINE_SECONDS {
            return Err(self.corrupt(format!("timeline of cell {} is {len} s long", cell.0)));
        }
        let mut out = vec![SecondStats::default(); len.saturating_sub(from)];
        for (first, seconds) in decoded {
            // The part of the chunk at or after `from`, placed from there.
            let skip = from.saturating_sub(first).min(seconds.len());
            let at = first.saturating_add(skip).saturating_sub(from);
            if let Some(dst) = out.get_mut(at..at + seconds.len() - skip) {
                dst.copy_from_slice(&seconds[skip..]);
            }
        }
        Ok(out)
    }

    /// The first second of `cell` whose timeline is still stored (any
    /// metric), or `None` when none is: 0 for a run, later for a monitor
    /// whose retention deleted its oldest seconds.
    pub fn timeline_start(&self, cell: CellId) -> Result<Option<u64>> {
        self.require_cell(cell)?;
        let first: Option<i64> = self
            .db
            .query_row(
                "SELECT MIN(first_second) FROM timeline_chunks WHERE cell_id = ?1",
                [cell.0],
                |r| r.get(0),
            )
            .map_err(|e| self.sql("reading the timeline", e))?;
        Ok(first.map(|f| u64::try_from(f).unwrap_or(0)))
    }

    /// The run's cells by index.
    pub fn cell_ids(&self, run: RunId) -> Result<Vec<CellId>> {
        self.require_run(run)?;
        self.collect(
            "SELECT id FROM cells WHERE run_id = ?1 ORDER BY idx",
            [run.0],
            |r| r.get(0).map(CellId),
        )
        .map_err(|e| self.sql("listing the cells", e))
    }

    fn load_metrics(&self, cell: i64) -> Result<Vec<MetricResult>> {
        let rows = self
            .collect(
                "SELECT name, cpu, kind, histogram, overruns, missed_deadlines, threshold_ns, \
                 above_threshold FROM metrics WHERE cell_id = ?1 ORDER BY name, cpu, kind DESC",
                [cell],
                |r| {
                    Ok(RawMetric {
                        name: r.get(0)?,
                        cpu: r.get(1)?,
                        kind: r.get(2)?,
                        histogram: r.get(3)?,
                        overruns: r.get(4)?,
                        missed: r.get(5)?,
                        threshold: r.get(6)?,
                        above: r.get(7)?,
                    })
                },
            )
            .map_err(|e| self.sql("reading the metrics", e))?;
        // 'raw' sorts after 'corrected', so DESC puts each raw row first and
        // its corrected row (if any) right after it.
        let mut out: Vec<MetricResult> = Vec::new();
        for row in rows {
            let cpu = cpu_from_sql(row.cpu)
                .ok_or_else(|| self.corrupt(format!("metric {} has CPU {}", row.name, row.cpu)))?;
            let histogram = crate::codec::decode_histogram(&row.histogram).map_err(|e| {
                self.corrupt(format!("histogram of {} in cell {cell}: {e}", row.name))
            })?;
            match row.kind.as_str() {
                "raw" => out.push(MetricResult {
                    name: row.name,
                    cpu,
                    histogram,
                    corrected: None,
                    overruns: self.count(row.overruns, "an overrun count")?,
                    missed_deadlines: self.count(row.missed, "a missed-deadline count")?,
                    threshold: row
                        .threshold
                        .map(|t| self.nanos(t, "a threshold"))
                        .transpose()?,
                    above_threshold: row
                        .above
                        .map(|a| self.count(a, "an above-threshold count"))
                        .transpose()?,
                }),
                "corrected" => match out.last_mut() {
                    Some(raw) if raw.name == row.name && raw.cpu == cpu => {
                        raw.corrected = Some(histogram)
                    }
                    _ => {
                        return Err(self.corrupt(format!(
                            "metric {} in cell {cell} has a corrected histogram but no raw one",
                            row.name
                        )))
                    }
                },
                other => return Err(self.corrupt(format!("metric row of unknown kind '{other}'"))),
            }
        }
        Ok(out)
    }

    fn require_run(&self, run: RunId) -> Result<()> {
        let found = self
            .db
            .query_row("SELECT 1 FROM runs WHERE id = ?1", [run.0], |_| Ok(()))
            .optional()
            .map_err(|e| self.sql("looking up the run", e))?;
        found.ok_or(StoreError::NotFound(run))
    }

    fn require_cell(&self, cell: CellId) -> Result<()> {
        let found = self
            .db
            .query_row("SELECT 1 FROM cells WHERE id = ?1", [cell.0], |_| Ok(()))
            .optional()
            .map_err(|e| self.sql("looking up the cell", e))?;
        found.ok_or(StoreError::NoSuchCell(cell))
    }

    fn collect<T, P: db::Params>(
        &self,
        sql: &str,
        params: P,
        f: impl FnMut(&Row) -> DbResult<T>,
    ) -> DbResult<Vec<T>> {
        self.db.query_map(sql, params, f)
    }

    fn run_meta(&self, raw: RawRun) -> Result<RunMeta> {
        let id = RunId(raw.id);
        let status = raw
            .status
            .parse::<RunStatus>()
            .map_err(|e| self.corrupt(format!("run {id}: {e}")))?;
        Ok(RunMeta {
            id,
            started_unix_ns: self.nanos(raw.started, "a start time")?,
            ended_unix_ns: raw
                .ended
                .map(|n| self.nanos(n, "an end time"))
                .transpose()?,
            checkpoint_unix_ns: raw
                .checkpoint
                .map(|n| self.nanos(n, "a checkpoint time"))
                .transpose()?,
            status,
            command_line: self.parse_json(&raw.command_line, "command line", id)?,
            pid: u32::try_from(raw.pid)
                .map_err(|_| self.corrupt(format!("run {id} has pid {}", raw.pid)))?,
            boot_id: raw.boot_id,
            hostname: raw.hostname,
            tool_version: raw.tool_version,
            notes: self.parse_json(&raw.notes, "notes", id)?,
            source: raw
                .source
                .map(|text| self.parse_json(&text, "source", id))
                .transpose()?,
        })
    }

    fn cell_meta(&self, raw: RawCell) -> Result<CellMeta> {
        let settings = codec::decode_settings(&raw.probe, &raw.settings)
            .map_err(|e| self.corrupt(format!("cell {} has unreadable settings ({e})", raw.id)))?;
        Ok(CellMeta {
            index: u32::try_from(raw.idx)
                .map_err(|_| self.corrupt(format!("cell {} has index {}", raw.id, raw.idx)))?,
            probe: raw.probe,
            workload: raw.workload,
            settings,
            duration_ns: self.nanos(raw.duration, "a duration")?,
            monotonic_start_ns: self.nanos(raw.monotonic_start, "a start time")?,
        })
    }

    fn json<T: serde::Serialize + ?Sized>(&self, value: &T, what: &str) -> Result<String> {
        encode_json(&self.path, value, what)
    }

    fn parse_json<T: serde::de::DeserializeOwned>(
        &self,
        text: &str,
        what: &str,
        run: RunId,
    ) -> Result<T> {
        serde_json::from_str(text)
            .map_err(|e| self.corrupt(format!("run {run} has an unreadable {what} ({e})")))
    }

    fn nanos(&self, v: i64, what: &str) -> Result<Nanos> {
        self.count(v, what).map(Nanos)
    }

    fn count(&self, v: i64, what: &str) -> Result<u64> {
        u64::try_from(v).map_err(|_| self.corrupt(format!("{what} is negative ({v})")))
    }

    fn corrupt(&self, what: String) -> StoreError {
        StoreError::Corrupt {
            path: self.path.clone(),
            what,
        }
    }

    fn sql(&self, action: &'static str, e: DbError) -> StoreError {
        classify(&self.path, action, e)
    }
}

/// The run's row, its system snapshot and its capabilities, inside the
/// caller's transaction; the store numbers the run (`meta.id` is ignored).
pub(crate) fn insert_run_rows(
    tx: &Db,
    path: &Path,
    meta: &RunMeta,
    system: &SystemInfo,
    caps: &Capabilities,
) -> Result<RunId> {
    let started = to_sql(meta.started_unix_ns.0, "the run's start time")?;
    let ended = meta
        .ended_unix_ns
        .map(|n| to_sql(n.0, "the run's end time"))
        .transpose()?;
    let checkpoint = meta
        .checkpoint_unix_ns
        .map(|n| to_sql(n.0, "the run's checkpoint time"))
        .transpose()?;
    let command_line = encode_json(path, &meta.command_line, "the command line")?;
    let notes = encode_json(path, &meta.notes, "the run's notes")?;
    let source = meta
        .source
        .as_ref()
        .map(|s| encode_json(path, s, "the run's source"))
        .transpose()?;
    let info = encode_json(path, system, "the system snapshot")?;
    let caps_json = encode_json(path, caps, "the capabilities")?;
    let err = |action| move |e| classify(path, action, e);
    let id = tx
        .insert_id(
            "INSERT INTO runs (started_unix_ns, ended_unix_ns, checkpoint_unix_ns, status, \
         command_line, pid, boot_id, hostname, tool_version, notes, source, uuid) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            params![
                started,
                ended,
                checkpoint,
                meta.status.as_str(),
                command_line,
                i64::from(meta.pid),
                meta.boot_id,
                meta.hostname,
                meta.tool_version,
                notes,
                source,
                uuid::Uuid::new_v4().to_string(),
            ],
        )
        .map_err(err("recording the run"))?;
    tx.execute(
        "INSERT INTO systems (run_id, hostname, kernel_release, preemption_model, hz, \
         clocksource, cpu_count, hypervisor, info) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![
            id,
            system.hostname,
            system.kernel_release,
            system.preemption_model,
            system.hz,
            system.clocksource,
            system.cpu_count,
            system.hypervisor,
            info,
        ],
    )
    .map_err(err("recording the system snapshot"))?;
    tx.execute(
        "INSERT INTO capabilities (run_id, caps) VALUES (?1, ?2)",
        params![id, caps_json],
    )
    .map_err(err("recording the capabilities"))?;
    Ok(RunId(id))
}

/// Adds a cell to a run, on `conn` or inside the caller's transaction.
pub(crate) fn insert_cell(conn: &Db, path: &Path, run: RunId, meta: &CellMeta) -> Result<CellId> {
    // The decoder refuses settings whose tag contradicts the cell's
    // probe, so such a cell must never be written.
    if meta.settings.probe_name() != meta.probe {
        return Err(StoreError::MismatchedSettings {
            probe: meta.probe.clone(),
            settings: meta.settings.probe_name(),
        });
    }
    let settings = encode_json(path, &meta.settings, "the cell's settings")?;
    let duration = to_sql(meta.duration_ns.0, "the cell's duration")?;
    let start = to_sql(meta.monotonic_start_ns.0, "the cell's start time")?;
    let exists = conn
        .query_row("SELECT 1 FROM runs WHERE id = ?1", [run.0], |_| Ok(()))
        .optional()
        .map_err(|e| classify(path, "looking up the run", e))?;
    exists.ok_or(StoreError::NotFound(run))?;
    // Checked first: on PostgreSQL a failed INSERT spoils the caller's
    // transaction, so the constraint is only the backstop for a race.
    let duplicate = conn
        .query_row(
            "SELECT 1 FROM cells WHERE run_id = ?1 AND idx = ?2",
            params![run.0, meta.index],
            |_| Ok(()),
        )
        .optional()
        .map_err(|e| classify(path, "looking up the cell", e))?;
    if duplicate.is_some() {
        return Err(StoreError::DuplicateCell {
            run,
            index: meta.index,
        });
    }
    let inserted = conn.insert_id(
        "INSERT INTO cells (run_id, idx, probe, workload, settings, duration_ns, \
         monotonic_start_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            run.0,
            meta.index,
            meta.probe,
            meta.workload,
            settings,
            duration,
            start
        ],
    );
    match inserted {
        Ok(id) => Ok(CellId(id)),
        Err(e) if e.is_unique_violation() => Err(StoreError::DuplicateCell {
            run,
            index: meta.index,
        }),
        Err(e) => Err(classify(path, "adding a cell", e)),
    }
}

/// Columns of a `metrics` row as [`write_progress`] writes it.
const METRIC_COLUMNS: usize = 11;

/// The metric rows, timeline chunks, the cell's duration and the run's
/// checkpoint time, inside the caller's transaction.
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_progress(
    tx: &Db,
    path: &Path,
    run: RunId,
    cell: CellId,
    duration: Nanos,
    metrics: &[MetricResult],
    timeline: &[TimelineChunk],
    now_unix: Nanos,
) -> Result<()> {
    let cell_time = duration;
    let duration = to_sql(duration.0, "the cell's duration")?;
    let now = to_sql(now_unix.0, "the checkpoint time")?;
    let err = |action| move |e| classify(path, action, e);
    let owner: Option<i64> = tx
        .query_row("SELECT run_id FROM cells WHERE id = ?1", [cell.0], |r| {
            r.get(0)
        })
        .optional()
        .map_err(err("looking up the cell"))?;
    match owner {
        None => return Err(StoreError::NoSuchCell(cell)),
        Some(r) if r != run.0 => return Err(StoreError::CellNotInRun { cell, run }),
        Some(_) => {}
    }
    tx.execute("DELETE FROM metrics WHERE cell_id = ?1", [cell.0])
        .map_err(err("replacing the metrics"))?;
    // Every metric row in one statement, and every timeline chunk in
    // another: a checkpoint is a few round trips to a PostgreSQL server,
    // not one per row.
    let mut rows: Vec<Value> = Vec::with_capacity(metrics.len() * 2 * METRIC_COLUMNS);
    for m in metrics {
        let cpu = Value::Int(cpu_to_sql(m.cpu));
        let overruns = to_sql(m.overruns, "an overrun count")?;
        let missed = to_sql(m.missed_deadlines, "a missed-deadline count")?;
        let threshold = m
            .threshold
            .map(|t| to_sql(t.0, "a threshold"))
            .transpose()?;
        let above = m
            .above_threshold
            .map(|a| to_sql(a, "an above-threshold count"))
            .transpose()?;
        let (samples, max) = histogram_columns(&m.histogram)?;
        rows.extend([
            Value::Int(cell.0),
            Value::Text(m.name.clone()),
            cpu.clone(),
            Value::Text("raw".into()),
            Value::Blob(crate::codec::encode_histogram(&m.histogram)),
            Value::Int(samples),
            max.map_or(Value::Null, Value::Int),
            Value::Int(overruns),
            Value::Int(missed),
            threshold.map_or(Value::Null, Value::Int),
            above.map_or(Value::Null, Value::Int),
        ]);
        if let Some(corrected) = &m.corrected {
            let (samples, max) = histogram_columns(corrected)?;
            rows.extend([
                Value::Int(cell.0),
                Value::Text(m.name.clone()),
                cpu,
                Value::Text("corrected".into()),
                Value::Blob(crate::codec::encode_histogram(corrected)),
                Value::Int(samples),
                max.map_or(Value::Null, Value::Int),
                Value::Int(0),
                Value::Int(0),
                Value::Null,
                Value::Null,
            ]);
        }
    }
    tx.insert_rows(
        "INSERT INTO metrics (cell_id, name, cpu, kind, histogram, samples, max_ns, \
         overruns, missed_deadlines, threshold_ns, above_threshold)",
        "",
        METRIC_COLUMNS,
        &rows,
    )
    .map_err(err("saving the metrics"))?;
    snapshots::write_snapshot(tx, path, cell, cell_time, metrics)?;
    let mut chunks: Vec<Value> = Vec::with_capacity(timeline.len() * 6);
    for chunk in timeline.iter().filter(|c| !c.seconds.is_empty()) {
        chunks.extend([
            Value::Int(cell.0),
            Value::Text(chunk.metric.clone()),
            Value::Int(cpu_to_sql(chunk.cpu)),
            Value::Int(to_sql(chunk.first_second, "a timeline second")?),
            Value::Int(to_sql(chunk.seconds.len() as u64, "a timeline length")?),
            Value::Blob(encode_timeline(&chunk.seconds)),
        ]);
    }
    tx.insert_rows(
        "INSERT INTO timeline_chunks (cell_id, metric, cpu, first_second, seconds, data)",
        "",
        6,
        &chunks,
    )
    .map_err(err("saving the timeline"))?;
    tx.execute(
        "UPDATE cells SET duration_ns = ?2 WHERE id = ?1",
        params![cell.0, duration],
    )
    .map_err(err("updating the cell's duration"))?;
    tx.execute(
        "UPDATE runs SET checkpoint_unix_ns = ?2 WHERE id = ?1",
        params![run.0, now],
    )
    .map_err(err("updating the checkpoint time"))?;
    Ok(())
}

/// `value` as JSON text for a column.
pub(crate) fn encode_json<T: serde::Serialize + ?Sized>(
    path: &Path,
    value: &T,
    what: &str,
) -> Result<String> {
    serde_json::to_string(value).map_err(|e| StoreError::Corrupt {
        path: path.to_path_buf(),
        what: format!("cannot encode {what} ({e})"),
    })
}

/// Fails with [`StoreError::NoSuchCell`] unless the cell exists.
pub(crate) fn require_cell_in(tx: &Db, path: &Path, cell: CellId) -> Result<()> {
    let exists = tx
        .query_row("SELECT 1 FROM cells WHERE id = ?1", [cell.0], |_| Ok(()))
        .optional()
        .map_err(|e| classify(path, "looking up the cell", e))?;
    exists.ok_or(StoreError::NoSuchCell(cell))
}

/// The `samples` and `max_ns` columns of a histogram row. A maximum beyond
/// i64 (a clock gone wrong: 292 years) is stored clamped; the blob keeps it
/// exactly.
fn histogram_columns(h: &Histogram) -> Result<(i64, Option<i64>)> {
    let samples = to_sql(h.count(), "a sample count")?;
    let max = h.max().map(|m| i64::try_from(m.0).unwrap_or(i64::MAX));
    Ok((samples, max))
}

#[cfg(test)]
mod tests;
