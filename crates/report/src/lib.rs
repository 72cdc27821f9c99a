//! Renderers: turn stored results into text for people and JSON for
//! programs. Every function takes model and stats types and returns a
//! `String` (or a serializable value), and the exports of a run to other
//! tools' formats share one interface ([`exports::export`], bytes to any
//! `Write`); nothing here prints or touches files, so each output is easy
//! to test.

mod blocks;
pub mod colour;
mod compare;
mod deferred;
mod episodes;
pub mod exports;
mod forecast;
mod granularity;
mod hazards;
mod held;
pub mod html;
mod imported;
mod json;
mod list;
mod matrix;
mod micro;
mod micro_compare;
mod noise;
mod pairing;
pub mod perfetto;
mod progress;
mod recurring;
mod sched;
mod steal;
pub mod stored;
mod table;
mod text;
mod time;
mod together;
mod together_noise;
mod udp;
mod workload;

pub use blocks::observed_blocks_text;
pub use compare::{compare_html, compare_json, compare_text, compare_tripped, COMPARE_JSON_SCHEMA};
pub use deferred::{deferred_work_tables, tracer_line, TOP_SOURCES};
pub use episodes::{cause_totals_table, episode_missing, episode_text, episodes_text};
pub use forecast::{
    estimate_text, forecast_document, forecast_document_text, forecast_json, forecast_text,
    grid_csv, grid_text, horizon_text, model_cuts_text, seconds_text,
};
pub use hazards::{
    check_json, check_text, counts_line, hazards_block, hazards_text, CheckJson, HazardCounts,
};
pub use html::{
    html_report, html_report_full, html_report_observed, html_report_page, micro_html, Timeline,
    INTERVAL_PLOT_POINTS,
};
pub use imported::import_summary;
pub use json::{run_json, RunJson, JSON_SCHEMA};
pub use list::{list_json, list_rows, list_table, list_text, RunListRow};
pub use matrix::{suite_matrix, suite_summary};
pub use micro::{
    micro_compare_text, micro_csv, micro_json, micro_line, micro_text, op_time, MicroJson,
    MICRO_JSON_SCHEMA,
};
pub use micro_compare::{MicroAgainst, MicroComparison};
pub use pairing::{pairing_json, pairing_text};
pub use perfetto::perfetto_trace;
pub use progress::{progress_line, ProgressBar};
pub use sched::{interval_text, sched_json, sched_text};
pub use steal::{quote_run_steal, run_steal_note};
pub use table::Table;
pub use text::{histogram_tables, run_header, run_summary, summary_tables};
pub use time::format_utc;
pub use workload::{workload_sources, workload_table};
