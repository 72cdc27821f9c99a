//! Renderers: turn stored results into text for people and JSON for
//! programs. Every function takes model and stats types and returns a
//! `String` (or a serializable value); nothing here prints or touches files,
//! so each output is easy to test.

mod json;
mod table;
mod text;
mod time;

pub use json::{run_json, RunJson, JSON_SCHEMA};
pub use table::Table;
pub use text::{histogram_tables, list_table, run_header, summary_tables, RunListRow};
pub use time::format_utc;
