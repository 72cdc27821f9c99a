//! A task set as written in a TOML file, and miss rates as written on the
//! command line: the inputs of `latscope sched`, parsed here so that every
//! front end (the CLI, the monitor) reads them alike.
//!
//! ```toml
//! [[task]]
//! name = "control"
//! period = "1ms"
//! wcet = "200us"
//! deadline = "1ms"   # optional, the period when absent
//! priority = 90      # optional, higher number, higher priority
//! ```

use std::path::Path;

use latscope_model::Nanos;
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

use super::{SchedError, Task, TaskSet};

/// Why a task file is not a task set.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct TaskFileError {
    /// The line the problem is on, when the parser knows it.
    pub line: Option<usize>,
    pub message: String,
}

/// Why a task file gives no task set: `FILE line N: ...` for its content.
#[derive(Debug, thiserror::Error)]
pub enum ReadTasksError {
    /// The file cannot be read (an error, not the user's input).
    #[error("cannot read the task file {file}")]
    Read {
        file: String,
        #[source]
        source: std::io::Error,
    },
    /// The content is not a task file.
    #[error("{file}{}: {}", at_line(error.line), error.message)]
    Parse { file: String, error: TaskFileError },
    /// The tasks are not a valid task set ([`TaskSet::new`]).
    #[error("{file}: {error}")]
    Invalid { file: String, error: SchedError },
}

fn at_line(line: Option<usize>) -> String {
    line.map(|l| format!(" line {l}")).unwrap_or_default()
}

/// A cell index as written (`2`) was not one; it holds the text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid cell '{0}': expected a cell index")]
pub struct CellIndexError(pub String);

/// The cell a task set is checked against, as written (` 2 ` is 2).
pub fn parse_cell(text: &str) -> Result<u32, CellIndexError> {
    text.trim()
        .parse()
        .map_err(|_| CellIndexError(text.to_string()))
}

/// Reads the task file at `path` ([`parse_tasks`]) and checks its tasks as
/// a set, so that a front end refuses a bad one before it loads a run.
pub fn read_tasks(path: &Path) -> Result<Vec<Task>, ReadTasksError> {
    let file = path.display().to_string();
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(source) => return Err(ReadTasksError::Read { file, source }),
    };
    let tasks = match parse_tasks(&text) {
        Ok(tasks) => tasks,
        Err(error) => return Err(ReadTasksError::Parse { file, error }),
    };
    match TaskSet::new(tasks.clone()) {
        Ok(_) => Ok(tasks),
        Err(error) => Err(ReadTasksError::Invalid { file, error }),
    }
}

/// A miss rate as written (`0/hour`) was not one; it holds the text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.line("miss rate"))]
pub struct MissRateError(pub String);

impl MissRateError {
    /// The line, with the option named as the front end names it
    /// (`miss rate`, what `Display` shows).
    pub fn line(&self, name: &str) -> String {
        format!(
            "invalid {name} '{}': write it as N/PERIOD with N > 0, \
             e.g. 1/hour, 1/10min, 1/day",
            self.0
        )
    }
}

/// `N/PERIOD` → the interval between permitted misses: `1/hour` is one
/// hour, `2/hour` half an hour, `1/10min` ten minutes. PERIOD is a word
/// (`second`, `minute`, `hour`, `day`, `week`, or `s`, `min`, `h`, `d`, `w`)
/// or a duration (`10min`, `30s`, `2h`).
pub fn parse_miss_rate(text: &str) -> Result<Nanos, MissRateError> {
    let bad = || MissRateError(text.to_string());
    let (count, period) = text.trim().split_once('/').ok_or_else(bad)?;
    let count: u64 = count.trim().parse().map_err(|_| bad())?;
    if count == 0 {
        return Err(bad());
    }
    let period = period.trim();
    let unit = match period {
        "second" | "sec" | "s" => Some(Nanos::from_secs(1)),
        "minute" | "min" | "m" => Some(Nanos::from_secs(60)),
        "hour" | "h" => Some(Nanos::from_secs(3_600)),
        "day" | "d" => Some(Nanos::from_secs(86_400)),
        "week" | "w" => Some(Nanos::from_secs(7 * 86_400)),
        _ => None,
    };
    let period = match unit {
        Some(u) => u,
        None => Nanos::parse_duration(period).map_err(|_| bad())?,
    };
    let interval = Nanos(period.0 / count);
    if interval == Nanos::ZERO {
        return Err(bad());
    }
    Ok(interval)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskFile {
    #[serde(default)]
    task: Vec<TaskEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskEntry {
    name: String,
    #[serde(deserialize_with = "duration")]
    period: Nanos,
    #[serde(deserialize_with = "duration")]
    wcet: Nanos,
    #[serde(default, deserialize_with = "optional_duration")]
    deadline: Option<Nanos>,
    #[serde(default, deserialize_with = "priority")]
    priority: Option<u32>,
}

struct PriorityVisitor;

impl Visitor<'_> for PriorityVisitor {
    type Value = u32;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a priority: a whole number, higher for higher priority")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u32, E> {
        u32::try_from(v).map_err(|_| {
            E::custom(format!(
                "priority {v} is out of range: use 0 or more (higher number, higher priority, \
                 as with SCHED_FIFO 1-99)"
            ))
        })
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u32, E> {
        self.visit_i64(i64::try_from(v).unwrap_or(i64::MAX))
    }
}

fn priority<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    d.deserialize_any(PriorityVisitor).map(Some)
}

struct DurationVisitor;

impl Visitor<'_> for DurationVisitor {
    type Value = Nanos;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a duration with a unit, e.g. \"1ms\"")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Nanos, E> {
        Nanos::parse_duration(v).map_err(E::custom)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Nanos, E> {
        Err(E::custom(format!(
            "a bare number ({v}) is not a duration: write it as a string with a unit, \
             e.g. \"{v}us\""
        )))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Nanos, E> {
        self.visit_i64(i64::try_from(v).unwrap_or(i64::MAX))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Nanos, E> {
        Err(E::custom(format!(
            "a bare number ({v}) is not a duration: write it as a string with a unit, \
             e.g. \"{v}ms\""
        )))
    }
}

fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Nanos, D::Error> {
    d.deserialize_any(DurationVisitor)
}

fn optional_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Nanos>, D::Error> {
    d.deserialize_any(DurationVisitor).map(Some)
}

/// Parses a task file's text: every `[[task]]` with its name, period and
/// WCET (durations with units), and optional deadline and priority.
pub fn parse_tasks(text: &str) -> Result<Vec<Task>, TaskFileError> {
    let parsed: TaskFile = toml::from_str(text).map_err(|e| TaskFileError {
        line: e.span().map(|s| line_of(text, s.start)),
        message: one_line(e.message()),
    })?;
    if parsed.task.is_empty() {
        return Err(TaskFileError {
            line: None,
            message: "no tasks: describe each as a [[task]] table with name, period and wcet"
                .to_string(),
        });
    }
    Ok(parsed
        .task
        .into_iter()
        .map(|t| Task {
            name: t.name,
            period: t.period,
            wcet: t.wcet,
            deadline: t.deadline.unwrap_or(t.period),
            priority: t.priority,
            jitter: Nanos::ZERO,
            blocking: Nanos::ZERO,
        })
        .collect())
}

fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    1 + text
        .as_bytes()
        .iter()
        .take(end)
        .filter(|&&b| b == b'\n')
        .count()
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_file_reads_with_defaults_and_errors_name_their_line() {
        let tasks = parse_tasks(
            "[[task]]\nname = \"a\"\nperiod = \"1ms\"\nwcet = \"200us\"\npriority = 90\n",
        )
        .unwrap();
        assert_eq!(tasks.len(), 1);
        assert_eq!(
            tasks[0].deadline,
            Nanos::from_millis(1),
            "deadline = period"
        );
        assert_eq!(tasks[0].priority, Some(90));
        let e = parse_tasks("[[task]]\nname = \"a\"\nperiod = 5\nwcet = \"1ms\"\n").unwrap_err();
        assert_eq!(e.line, Some(3));
        assert!(e.message.contains("not a duration"), "{e}");
        let e = parse_tasks("").unwrap_err();
        assert_eq!(e.line, None);
        assert!(e.message.starts_with("no tasks"));
    }

    /// The file's errors name it, with the line where the parser knows it.
    #[test]
    fn a_task_file_is_read_and_checked_as_a_set() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let read = |name: &str, text: &str| {
            let path = dir.join(name);
            std::fs::write(&path, text).unwrap();
            read_tasks(&path).map_err(|e| e.to_string().replace(&*dir.to_string_lossy(), "D"))
        };
        let task = "[[task]]\nname = \"a\"\nperiod = \"1ms\"\nwcet = \"200us\"\n";
        assert_eq!(read("ok.toml", task).unwrap().len(), 1);
        let e = read(
            "bad.toml",
            "[[task]]\nname = \"a\"\nperiod = 5\nwcet = \"1ms\"\n",
        );
        assert!(e.unwrap_err().starts_with("D/bad.toml line 3: "));
        assert!(read("empty.toml", "")
            .unwrap_err()
            .starts_with("D/empty.toml: no tasks"));
        let twice = read("twice.toml", &format!("{task}{task}")).unwrap_err();
        assert_eq!(twice, "D/twice.toml: two tasks are named 'a'");
        let missing = read_tasks(&dir.join("missing.toml")).unwrap_err();
        assert!(matches!(missing, ReadTasksError::Read { .. }), "{missing}");
    }

    #[test]
    fn cell_indices() {
        assert_eq!(parse_cell(" 2 "), Ok(2));
        let e = parse_cell("x").unwrap_err();
        assert_eq!(e, CellIndexError("x".into()));
        assert_eq!(e.to_string(), "invalid cell 'x': expected a cell index");
    }

    #[test]
    fn miss_rates() {
        assert_eq!(parse_miss_rate("1/hour"), Ok(Nanos::from_secs(3_600)));
        assert_eq!(parse_miss_rate("2/hour"), Ok(Nanos::from_secs(1_800)));
        assert_eq!(parse_miss_rate("1/10min"), Ok(Nanos::from_secs(600)));
        assert_eq!(parse_miss_rate(" 1 / day "), Ok(Nanos::from_secs(86_400)));
        assert_eq!(parse_miss_rate("1/w"), Ok(Nanos::from_secs(604_800)));
        assert_eq!(parse_miss_rate("1/30s"), Ok(Nanos::from_secs(30)));
        for bad in [
            "",
            "hour",
            "0/hour",
            "-1/hour",
            "1/",
            "1/fortnight",
            "1/0s",
            "x/h",
        ] {
            assert!(parse_miss_rate(bad).is_err(), "{bad}");
        }
        let e = parse_miss_rate("0/hour").unwrap_err();
        assert_eq!(e, MissRateError("0/hour".into()));
        assert!(e
            .to_string()
            .starts_with("invalid miss rate '0/hour': write"));
    }
}
