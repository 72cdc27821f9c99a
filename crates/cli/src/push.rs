//! `latscope push` and `latscope pull`: copy runs between stores, each run
//! in one transaction of the target and recognised there by its uuid, so
//! a copy cut short leaves no partial run and copying again stores each run
//! once. Machines that measure offline push later; a shared store is
//! pulled from.

use latscope_store::{Copied, CopyEvent, Store};

use crate::args::{PullArgs, PushArgs};
use crate::exit::{self, Exit};

pub fn push(args: &PushArgs) -> Result<i32, Exit> {
    let from = Store::open_existing(&args.store.store)?;
    let mut to = Store::open(std::path::Path::new(&args.to))?;
    let target = to.path().display().to_string();
    copy(&from, &mut to, &args.runs, &target)
}

pub fn pull(args: &PullArgs) -> Result<i32, Exit> {
    let from = Store::open_existing(std::path::Path::new(&args.from))?;
    let mut to = Store::open(&args.store.store)?;
    let target = to.path().display().to_string();
    copy(&from, &mut to, &args.runs, &target)
}

/// Copies the runs named (all finished runs when none is), one line each.
fn copy(from: &Store, to: &mut Store, named: &[String], target: &str) -> Result<i32, Exit> {
    let (mut stored, mut present) = (0, 0);
    from.copy_runs(named, to, |event| match event {
        CopyEvent::StillRunning(id) => println!("run {id}: still being measured, not copied"),
        CopyEvent::Copied(id, Copied::Stored(new)) => {
            stored += 1;
            println!("run {id} → {target} run {new}");
        }
        CopyEvent::Copied(id, Copied::Present(there)) => {
            present += 1;
            println!("run {id}: already in {target} as run {there}");
        }
    })?;
    println!("{stored} copied, {present} already there");
    Ok(exit::OK)
}
