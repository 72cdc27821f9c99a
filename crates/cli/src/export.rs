//! `latscope export RUN --episode K --format perfetto`: one episode of a
//! traced run, with the kernel events around it, as a file a trace viewer
//! opens. Reads the store, never writes it.

use std::fs;
use std::io::Write;
use std::path::Path;

use anyhow::{anyhow, Context};
use latscope_model::RunId;
use latscope_stats::RunResult;
use latscope_store::Store;

use crate::args::{ExportArgs, ExportFormat};
use crate::exit::{self, Exit};

fn episodes(n: u64) -> String {
    if n == 1 {
        "1 episode".to_string()
    } else {
        format!("{n} episodes")
    }
}

/// Episodes the run saw: the tracer's count where there is one (it
/// includes those past the cap), the stored ones otherwise.
fn episodes_seen(run: &RunResult) -> u64 {
    run.cells
        .iter()
        .map(|c| {
            let kept = c.episodes.len() as u64;
            c.trace
                .as_ref()
                .map_or(kept, |t| t.episodes_total.max(kept))
        })
        .sum()
}

/// Episodes kept in full (the cap, as far as the run says).
fn episodes_kept(run: &RunResult) -> u64 {
    run.cells.iter().map(|c| c.episodes.len() as u64).sum()
}

fn not_found(id: RunId, run: &RunResult, k: u32) -> anyhow::Error {
    let traced = run
        .cells
        .iter()
        .any(|c| c.trace.is_some() || !c.episodes.is_empty());
    if !traced {
        return anyhow!(
            "run {id} was not traced, so it has no episodes to export; record one with `latscope run --trace`"
        );
    }
    let seen = episodes_seen(run);
    if k == 0 || u64::from(k) > seen {
        return anyhow!(
            "run {id} has {}; --episode {k} does not exist",
            episodes(seen)
        );
    }
    anyhow!(
        "episode {k} of run {id} is past the cap ({} kept in full): only its share of the cause totals was kept; see `latscope show {id} --episodes`",
        episodes(episodes_kept(run))
    )
}

/// Writes `text` to `path` (through a temporary name, so a reader never
/// sees half a file), or to standard output.
fn write(text: &str, path: Option<&Path>) -> anyhow::Result<()> {
    match path {
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())
                .and_then(|()| out.flush())
                .context("cannot write to standard output")
        }
        Some(path) => {
            let mut tmp = path.as_os_str().to_owned();
            tmp.push(".tmp");
            let tmp = std::path::PathBuf::from(tmp);
            fs::write(&tmp, text).with_context(|| format!("cannot write {}", path.display()))?;
            fs::rename(&tmp, path).map_err(|e| {
                let _ = fs::remove_file(&tmp);
                anyhow!("cannot write {}: {e}", path.display())
            })
        }
    }
}

pub fn export(args: &ExportArgs) -> Result<i32, Exit> {
    let store = Store::open_existing(&args.store.store)?;
    let id = store.resolve(&args.run)?;
    let run = store.load_run(id)?;
    let k = args.episode;
    let Some(episode) = run
        .cells
        .iter()
        .flat_map(|c| c.episodes.iter())
        .find(|e| e.seq == k)
    else {
        return Err(not_found(id, &run, k).into());
    };
    let Some(window) = store.load_episode_window(id, k)? else {
        return Err(anyhow!(
            "the kernel events of episode {k} of run {id} were not kept (the event-window cap was reached), so there is nothing to export; `latscope show {id} --episodes` has its breakdown"
        )
        .into());
    };
    let text = match args.format {
        ExportFormat::Perfetto => {
            let doc = latscope_report::perfetto_trace(id, episode, &window);
            serde_json::to_string(&doc).context("cannot encode the trace as JSON")? + "\n"
        }
    };
    write(&text, args.output.as_deref())?;
    Ok(exit::OK)
}
