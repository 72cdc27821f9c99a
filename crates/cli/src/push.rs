//! `latscope push` and `latscope pull`: copy runs between stores, each run
//! in one transaction of the target and recognised there by its uuid, so
//! a copy cut short leaves no partial run and copying again stores each run
//! once. Machines that measure offline push later; a shared store is
//! pulled from.

use std::path::Path;

use latscope_model::RunStatus;
use latscope_store::{Copied, Store};

use crate::args::{PullArgs, PushArgs};
use crate::exit::{self, Exit};

/// A store named on the command line: a SQLite file. A PostgreSQL URL is
/// refused with one line: this build has no PostgreSQL backend yet.
fn store_path(text: &str) -> Result<&Path, Exit> {
    if text.starts_with("postgres://") || text.starts_with("postgresql://") {
        return Err(Exit::usage(
            "PostgreSQL stores are not in this build yet: push to or pull from a SQLite store file",
        ));
    }
    Ok(Path::new(text))
}

pub fn push(args: &PushArgs) -> Result<i32, Exit> {
    let from = Store::open_existing(&args.store.store)?;
    let mut to = Store::open(store_path(&args.to)?)?;
    copy(&from, &mut to, &args.runs, &args.to)
}

pub fn pull(args: &PullArgs) -> Result<i32, Exit> {
    let from = Store::open_existing(store_path(&args.from)?)?;
    let mut to = Store::open(&args.store.store)?;
    let target = args.store.store.display().to_string();
    copy(&from, &mut to, &args.runs, &target)
}

/// Copies the runs named (all finished runs when none is), one line each.
/// A run still being measured is skipped with a line when it was not named
/// and refused when it was.
fn copy(from: &Store, to: &mut Store, named: &[String], target: &str) -> Result<i32, Exit> {
    let runs = if named.is_empty() {
        let mut ids = Vec::new();
        for r in from.list_runs()? {
            if r.meta.status == RunStatus::Running {
                println!("run {}: still being measured, not copied", r.meta.id);
            } else {
                ids.push(r.meta.id);
            }
        }
        ids
    } else {
        named
            .iter()
            .map(|spec| from.resolve(spec))
            .collect::<Result<Vec<_>, _>>()?
    };
    let (mut stored, mut present) = (0, 0);
    for id in runs {
        match from.copy_run(id, to)? {
            Copied::Stored(new) => {
                stored += 1;
                println!("run {id} → {target} run {new}");
            }
            Copied::Present(there) => {
                present += 1;
                println!("run {id}: already in {target} as run {there}");
            }
        }
    }
    println!("{stored} copied, {present} already there");
    Ok(exit::OK)
}
