//! `latscope report RUN [--html FILE]`: the run as one self-contained HTML
//! page, read and rendered by [`latscope_report::stored::html_page`]; here
//! it is written.

use std::path::PathBuf;

use latscope_store::Store;

use crate::args::ReportArgs;
use crate::exit::{self, Exit};

pub fn report(args: &ReportArgs) -> Result<i32, Exit> {
    let store = Store::open_existing(&args.store.store)?;
    let id = store.resolve(&args.run)?;
    let page = latscope_report::stored::html_page(&store, id).map_err(anyhow::Error::from)?;
    // Where `--html` says (default `latscope-report-<id>.html`; `-`:
    // standard output).
    let path = args
        .html
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("latscope-report-{}.html", id.0)));
    match crate::output::destination(Some(&path)) {
        None => crate::output::print(&page),
        to => {
            crate::output::write(to, page.as_bytes(), crate::output::PUBLIC)?;
            eprintln!("wrote {}", path.display());
        }
    }
    Ok(exit::OK)
}
