//! What `latscope import` says of the run it stored.

use latscope_model::RunId;
use latscope_stats::RunResult;

/// One line naming the file, the run it became, the tool and format, the
/// cells and the samples; then the importer's notes, one a line.
pub fn import_summary(file: &str, id: RunId, run: &RunResult, samples: u64) -> String {
    let source = run
        .meta
        .source
        .as_ref()
        .map(|s| format!("{} ({})", s.tool_and_version(), s.format))
        .unwrap_or_default();
    let cells: Vec<String> = run
        .cells
        .iter()
        .map(|c| {
            format!(
                "{} probe on CPUs {}",
                c.meta.probe,
                c.meta.settings.common().cpus
            )
        })
        .collect();
    let mut text = format!(
        "imported {file} as run {id}: {source}, {}, {samples} samples\n",
        cells.join("; ")
    );
    for note in &run.meta.notes {
        text.push_str(&format!("note: {note}\n"));
    }
    text
}
