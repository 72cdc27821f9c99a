//! `latscope import FILE`: another tool's result file (cyclictest, oslat,
//! rtla) read by `latscope_import::import_file` and stored as a run in one
//! transaction. The file is read and checked before the store is opened,
//! so a bad file leaves no trace in it.

use anyhow::anyhow;
use latscope_import::{FileError, FileRequest, ImportOption, OptionNamer, Statement};
use latscope_store::Store;

use crate::args::ImportArgs;
use crate::exit::{self, Exit};

pub fn import(args: &ImportArgs) -> Result<i32, Exit> {
    let mut req = FileRequest::new(&args.file);
    req.period = (args.period.as_deref())
        .map(|t| crate::plan::duration("period", t))
        .transpose()?;
    req.policy = args.policy;
    req.priority = args.priority;
    req.unit = args.unit;
    req.names = NAMES;
    req.workload = args.workload.as_deref();
    req.label = args.label.as_deref();
    req.format = args.format.format();
    req.command_line = crate::args::recorded_command_line();
    req.latscope_version = env!("CARGO_PKG_VERSION");
    let file = latscope_import::import_file(&req).map_err(file_error)?;
    let mut store = Store::open(&args.store.store)?;
    let id = store.insert_run(&file.run)?;
    let path = args.file.display().to_string();
    let text = latscope_report::import_summary(&path, id, &file.run, file.samples);
    crate::output::print(&text);
    Ok(exit::OK)
}

/// The import's options as the notes and errors name them: `--period`.
const NAMES: OptionNamer = OptionNamer(|o: ImportOption| format!("--{}", o.key()));

/// The import's error as one line naming the option at fault.
fn file_error(e: FileError) -> Exit {
    match e {
        FileError::PeriodZero => Exit::usage("--period must be more than 0"),
        FileError::Priority(p) => Exit::usage(format!(
            "--priority {p} is outside 1-99 (0 only with --policy other, batch, idle or deadline)"
        )),
        FileError::NotOneLine { what, text } => {
            let option = match what {
                Statement::Label => "--label",
                Statement::Workload => "--workload",
            };
            Exit::usage(format!("{option} wants one line of text, not {text:?}"))
        }
        FileError::TooLarge { .. } => Exit::usage(e),
        FileError::Import { ref error, .. } if error.is_usage() => Exit::usage(e.line(&NAMES)),
        e @ FileError::Read { .. } => Exit::from(anyhow::Error::from(e)),
        e @ FileError::Import { .. } => Exit::from(anyhow!("{}", e.line(&NAMES))),
    }
}
