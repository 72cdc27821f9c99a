//! `latscope import FILE`: another tool's result file (cyclictest, oslat,
//! rtla) read by `latscope_import` and stored as a run in one
//! transaction. The file is read and checked before the store is opened,
//! so a bad file leaves no trace in it.

use std::time::SystemTime;

use anyhow::{anyhow, Context};
use latscope_import::{Format, Options, Origin, Unit};
use latscope_model::{Nanos, Policy};
use latscope_store::Store;

use crate::args::{ImportArgs, ImportFormatArg, PolicyArg, UnitArg};
use crate::exit::{self, Exit};

fn unix_ns(t: SystemTime) -> Option<Nanos> {
    let d = t.duration_since(SystemTime::UNIX_EPOCH).ok()?;
    u64::try_from(d.as_nanos()).ok().map(Nanos)
}

/// A one-line text without control characters.
fn plain(text: &str, option: &str) -> Result<String, Exit> {
    let t = text.trim();
    if t.is_empty() || t.chars().any(char::is_control) {
        return Err(Exit::usage(format!(
            "{option} wants one line of text, not {text:?}"
        )));
    }
    Ok(t.to_string())
}

fn options(args: &ImportArgs) -> Result<Options, Exit> {
    let period = args
        .period
        .as_deref()
        .map(|p| {
            Nanos::parse_duration(p)
                .map_err(|e| Exit::usage(format!("--period: {e}")))
                .and_then(|n| match n {
                    Nanos::ZERO => Err(Exit::usage("--period must be more than 0")),
                    n => Ok(n),
                })
        })
        .transpose()?;
    let policy = args.policy.map(|p| match p {
        PolicyArg::Fifo => Policy::Fifo,
        PolicyArg::Rr => Policy::Rr,
        PolicyArg::Other => Policy::Other,
        PolicyArg::Batch => Policy::Batch,
        PolicyArg::Idle => Policy::Idle,
        PolicyArg::Deadline => Policy::Deadline,
    });
    let priority = match args.priority {
        None => None,
        Some(p @ 1..=99) => u32::try_from(p).ok(),
        Some(0) if policy.is_some_and(|p| !p.has_priority()) => Some(0),
        Some(p) => {
            let zero = "0 only with --policy other, batch, idle or deadline";
            return Err(Exit::usage(format!(
                "--priority {p} is outside 1-99 ({zero})"
            )));
        }
    };
    Ok(Options {
        period,
        policy,
        priority,
        unit: args.unit.map(|u| match u {
            UnitArg::Us => Unit::Micros,
            UnitArg::Ns => Unit::Nanos,
        }),
        workload: args
            .workload
            .as_deref()
            .map(|w| plain(w, "--workload"))
            .transpose()?,
    })
}

/// The largest file `import` reads: the tools' result files are kilobytes
/// to megabytes (the largest fixture here, cyclictest's JSON with its
/// histogram of two threads, is 37 KB).
const MAX_IMPORT_BYTES: u64 = 256 << 20;

/// `path`'s bytes, refused in one line past [`MAX_IMPORT_BYTES`] (read
/// through a limit, so a FIFO or a device that never ends is refused too).
fn read_capped(path: &std::path::Path) -> Result<Vec<u8>, Exit> {
    use std::io::Read;
    let file =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(MAX_IMPORT_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {}", path.display()))?;
    if bytes.len() as u64 > MAX_IMPORT_BYTES {
        return Err(Exit::usage(format!(
            "cannot import {}: larger than {} MiB, which no result file of cyclictest, oslat or rtla is",
            path.display(),
            MAX_IMPORT_BYTES >> 20
        )));
    }
    Ok(bytes)
}

pub fn import(args: &ImportArgs) -> Result<i32, Exit> {
    let options = options(args)?;
    let label = args
        .label
        .as_deref()
        .map(|l| plain(l, "--label"))
        .transpose()?;
    let format = match args.format {
        ImportFormatArg::Auto => None,
        ImportFormatArg::CyclictestJson => Some(Format::CyclictestJson),
        ImportFormatArg::CyclictestHist => Some(Format::CyclictestHist),
        ImportFormatArg::OslatJson => Some(Format::OslatJson),
        ImportFormatArg::RtlaHist => Some(Format::RtlaHist),
    };
    let path = &args.file;
    let bytes = read_capped(path)?;
    let imported = latscope_import::import(&bytes, format, &options).map_err(|e| {
        let msg = format!("cannot import {}: {e}", path.display());
        if e.is_usage() {
            Exit::usage(msg)
        } else {
            Exit::from(anyhow!(msg))
        }
    })?;
    let file_time = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(unix_ns);
    let now = unix_ns(SystemTime::now()).unwrap_or(Nanos::ZERO);
    let samples = imported.samples();
    let origin = Origin {
        file: path.display().to_string(),
        label,
        imported: now,
        file_time,
        command_line: crate::args::recorded_command_line(),
        latscope_version: env!("CARGO_PKG_VERSION").to_string(),
    };
    let run = imported.into_run(origin);
    let mut store = Store::open(&args.store.store)?;
    let id = store.insert_run(&run)?;

    let text = latscope_report::import_summary(&path.display().to_string(), id, &run, samples);
    crate::output::print(&text);
    Ok(exit::OK)
}
