//! Copying whole runs from one store to another (`latscope push`, `latscope
//! pull`): every row of the run in every table, in one transaction of the
//! target, so that a copy cut short (a lost connection, `kill -9`) leaves
//! no partial run. A run is recognised in the target by its uuid (schema
//! 12), so copying it again finds it instead of storing it twice.
//!
//! The copy is driven by the schema rather than by the model: every table
//! with a `run_id` or `cell_id` column belongs to a run, its own
//! `INTEGER PRIMARY KEY id` (if any) is left to the target, and `run_id` and
//! `cell_id` are renumbered. Tables are copied in the order they were
//! created, which is the order their foreign keys need. A table added by a
//! later migration is copied without a change here.

use crate::db::{Db, DbResult, Dialect, OptionalExt, Value};

use latscope_model::{RunId, RunStatus};

use crate::{Result, Store, StoreError};

/// What copying one run did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Copied {
    /// Stored in the target as this run.
    Stored(RunId),
    /// The target had it already (same uuid), as this run.
    Present(RunId),
}

/// What became of one run of [`Store::copy_runs`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyEvent {
    /// Still being measured, not named: left.
    StillRunning(RunId),
    Copied(RunId, Copied),
}

/// A table of a run's rows and how it hangs off the run.
struct Table {
    name: String,
    columns: Vec<String>,
    /// Its rows belong to a run (`run_id`) or to a cell (`cell_id`).
    key: &'static str,
}

impl Store {
    /// A run's metadata with its effective status.
    pub fn load_meta(&self, id: RunId) -> Result<latscope_model::RunMeta> {
        let raw = self
            .db
            .query_row(
                &format!("SELECT {} FROM runs r WHERE r.id = ?1", crate::RUN_COLUMNS),
                [id.0],
                crate::raw_run,
            )
            .optional()
            .map_err(|e| self.sql("reading the run", e))?
            .ok_or(StoreError::NotFound(id))?;
        Ok(crate::effective_status(self.run_meta(raw)?, &self.is_alive))
    }

    /// The run's globally unique id.
    pub fn run_uuid(&self, id: RunId) -> Result<String> {
        self.db
            .query_row("SELECT uuid FROM runs WHERE id = ?1", [id.0], |r| {
                r.get::<Option<String>>(0)
            })
            .optional()
            .map_err(|e| self.sql("reading the run's uuid", e))?
            .ok_or(StoreError::NotFound(id))?
            .ok_or_else(|| self.corrupt(format!("run {id} has no uuid")))
    }

    /// The run with this uuid, if the store has it.
    pub fn find_uuid(&self, uuid: &str) -> Result<Option<RunId>> {
        self.db
            .query_row("SELECT id FROM runs WHERE uuid = ?1", [uuid], |r| r.get(0))
            .optional()
            .map(|id| id.map(RunId))
            .map_err(|e| self.sql("finding a run by uuid", e))
    }

    /// The tables holding a run's rows, in creation order (`runs` and
    /// `cells` apart), with their columns.
    fn run_tables(&self) -> Result<Vec<Table>> {
        let list = match self.db.dialect() {
            Dialect::Sqlite => {
                "SELECT name FROM sqlite_schema WHERE type = 'table' \
                 AND name NOT LIKE 'sqlite_%' AND name NOT IN ('runs', 'cells') ORDER BY rowid"
            }
            // A table's oid grows with its creation, as SQLite's rowid in
            // its schema table does.
            Dialect::Postgres => {
                "SELECT c.relname::text FROM pg_class c \
                 JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE n.nspname = current_schema() AND c.relkind = 'r' \
                 AND c.relname NOT IN ('runs', 'cells') ORDER BY c.oid"
            }
        };
        let names: Vec<String> = self
            .collect(list, [], |r| r.get(0))
            .map_err(|e| self.sql("reading the schema", e))?;
        let mut out = Vec::new();
        // Only latscope's own tables: a name from another store's catalog
        // never reaches the SQL unchecked.
        let own = crate::schema::own_tables();
        for name in names.into_iter().filter(|n| own.contains_key(n)) {
            let columns = self.columns(&name)?;
            let key = if columns.iter().any(|c| c == "cell_id") {
                "cell_id"
            } else if columns.iter().any(|c| c == "run_id") {
                "run_id"
            } else {
                continue;
            };
            out.push(Table { name, columns, key });
        }
        Ok(out)
    }

    /// The columns of `table` to copy, in their order: all but an `id`
    /// primary key, which the target numbers itself.
    fn columns(&self, table: &str) -> Result<Vec<String>> {
        let rows: Vec<(String, bool)> = match self.db.dialect() {
            Dialect::Sqlite => {
                self.collect("SELECT name, pk FROM pragma_table_info(?1)", [table], |r| {
                    Ok((r.get(0)?, r.get::<i64>(1)? == 1))
                })
            }
            Dialect::Postgres => self.collect(
                "SELECT column_name::text, is_identity::text FROM information_schema.columns \
                 WHERE table_schema = current_schema() AND table_name = ?1 \
                 ORDER BY ordinal_position",
                [table],
                |r| Ok((r.get(0)?, r.get::<String>(1)? == "YES")),
            ),
        }
        .map_err(|e| self.sql("reading the schema", e))?;
        // Only the columns latscope's schema gives the table.
        let own = crate::schema::own_tables().get(table);
        Ok(rows
            .into_iter()
            .filter(|(name, key)| !(name == "id" && *key))
            .filter(|(name, _)| own.is_some_and(|cols| cols.contains(name)))
            .map(|(name, _)| name)
            .collect())
    }

    fn rows(&self, table: &str, columns: &[String], key: &str, id: i64) -> Result<Vec<Vec<Value>>> {
        let list = quoted(columns);
        let n = columns.len();
        self.collect(
            &format!("SELECT {list} FROM \"{table}\" WHERE {key} = ?1"),
            [id],
            |r| (0..n).map(|i| r.get::<Value>(i)).collect(),
        )
        .map_err(|e| self.sql("reading a run to copy", e))
    }

    /// Copies the runs `named` (ids, `latest`, `HOST:latest`; every
    /// finished run when none is) into `target`, each in its own
    /// transaction, telling `each` what became of it. A run still being
    /// measured is left when it was not named and refused when it was.
    pub fn copy_runs(
        &self,
        named: &[String],
        target: &mut Store,
        mut each: impl FnMut(CopyEvent),
    ) -> Result<()> {
        let runs = if named.is_empty() {
            let mut ids = Vec::new();
            for r in self.list_runs()? {
                match r.meta.status {
                    RunStatus::Running => each(CopyEvent::StillRunning(r.meta.id)),
                    _ => ids.push(r.meta.id),
                }
            }
            ids
        } else {
            named
                .iter()
                .map(|spec| self.resolve(spec))
                .collect::<Result<Vec<_>>>()?
        };
        for id in runs {
            each(CopyEvent::Copied(id, self.copy_run(id, target)?));
        }
        Ok(())
    }

    /// Copies run `id` of this store into `target` (both at this build's
    /// schema), in one transaction of the target. A run still being
    /// measured is refused: its copy would be cut at its last checkpoint
    /// and, having the same uuid, never completed.
    pub fn copy_run(&self, id: RunId, target: &mut Store) -> Result<Copied> {
        let meta = self.load_meta(id)?;
        if meta.status == RunStatus::Running {
            return Err(StoreError::StillRunning(id));
        }
        let uuid = self.run_uuid(id)?;
        if let Some(there) = target.find_uuid(&uuid)? {
            return Ok(Copied::Present(there));
        }
        let tables = self.run_tables()?;
        let run_columns = self.columns("runs")?;
        let cell_columns = self.columns("cells")?;
        let run_row = self
            .rows("runs", &run_columns, "id", id.0)?
            .pop()
            .ok_or(StoreError::NotFound(id))?;
        let cells: Vec<(i64, Vec<Value>)> = self
            .collect(
                &format!(
                    "SELECT id, {} FROM cells WHERE run_id = ?1 ORDER BY idx",
                    quoted(&cell_columns)
                ),
                [id.0],
                |r| {
                    let values = (0..cell_columns.len())
                        .map(|i| r.get::<Value>(i + 1))
                        .collect::<DbResult<Vec<_>>>()?;
                    Ok((r.get(0)?, values))
                },
            )
            .map_err(|e| self.sql("reading a run to copy", e))?;

        let path = target.path.clone();
        let fail = |action: &'static str| {
            let path = path.clone();
            move |e| crate::error::classify(&path, action, e)
        };
        let tx = target.db.begin().map_err(fail("starting a transaction"))?;
        let new_run =
            insert_id(&tx, "runs", &run_columns, &run_row).map_err(fail("copying the run"))?;
        let mut cell_map = Vec::with_capacity(cells.len());
        for (old, mut values) in cells {
            set(&cell_columns, &mut values, "run_id", new_run);
            let new =
                insert_id(&tx, "cells", &cell_columns, &values).map_err(fail("copying a cell"))?;
            cell_map.push((old, new));
        }
        for t in &tables {
            let owners: Vec<(i64, i64)> = if t.key == "run_id" {
                vec![(id.0, new_run)]
            } else {
                cell_map.clone()
            };
            for (old, new) in owners {
                for mut values in self.rows(&t.name, &t.columns, t.key, old)? {
                    set(&t.columns, &mut values, t.key, new);
                    // A table keyed by cell may also name the run.
                    set(&t.columns, &mut values, "run_id", new_run);
                    insert(&tx, &t.name, &t.columns, &values)
                        .map_err(fail("copying the run's rows"))?;
                }
            }
        }
        tx.commit().map_err(fail("committing the copied run"))?;
        Ok(Copied::Stored(RunId(new_run)))
    }
}

fn quoted(columns: &[String]) -> String {
    columns
        .iter()
        .map(|c| format!("\"{c}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

fn set(columns: &[String], values: &mut [Value], column: &str, to: i64) {
    if let Some(i) = columns.iter().position(|c| c == column) {
        values[i] = Value::Int(to);
    }
}

fn insert_sql(table: &str, columns: &[String]) -> String {
    let marks = (1..=columns.len())
        .map(|i| format!("?{i}"))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "INSERT INTO \"{table}\" ({}) VALUES ({marks})",
        quoted(columns)
    )
}

fn insert(tx: &Db, table: &str, columns: &[String], values: &[Value]) -> DbResult<usize> {
    tx.execute(&insert_sql(table, columns), values)
}

/// Inserts a row of `runs` or `cells` and returns the id the target gave it.
fn insert_id(tx: &Db, table: &str, columns: &[String], values: &[Value]) -> DbResult<i64> {
    tx.insert_id(&insert_sql(table, columns), values)
}
