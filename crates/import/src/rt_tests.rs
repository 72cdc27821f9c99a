//! What every rt-tests `--json` file (cyclictest, oslat, ...) begins with,
//! as rt-tests 2.x writes it (`rt_write_json`): `file_version`, the
//! command line, the version, start and end times, the return code and
//! `sysinfo` (uname and whether `/sys/kernel/realtime` says 1). rt-tests
//! 2.4 spells two keys with a colon inside (`"cmdline:"`,
//! `"rt_test_version:"`); both spellings are read.

use latscope_model::{preempt_from_version, Nanos, SystemInfo};
use serde_json::{Map, Value};

use latscope_record::CellResult;

use crate::time::parse_rfc2822;
use crate::{Format, ImportError, Imported};

/// The common part of an rt-tests JSON file.
#[derive(Clone, Debug, Default)]
pub(crate) struct Header {
    pub command_line: Option<String>,
    pub version: Option<String>,
    pub started: Option<Nanos>,
    pub ended: Option<Nanos>,
    pub return_code: Option<i64>,
    pub system: SystemInfo,
    /// `uname -m`, which latscope's system snapshot has no field for.
    pub machine: Option<String>,
}

/// Parses JSON as rt-tests writes it. It prints a thread's average with
/// `%f`, so a thread that never ran writes `nan` or `-nan`, which JSON has
/// no word for: those read as `null`.
pub(crate) fn parse_json(text: &str, format: &'static str) -> Result<Value, ImportError> {
    match serde_json::from_str(text) {
        Ok(v) => Ok(v),
        Err(first) => {
            let fixed = replace_nan(text);
            if fixed != text {
                if let Ok(v) = serde_json::from_str(&fixed) {
                    return Ok(v);
                }
            }
            Err(ImportError::Json {
                format,
                what: first.to_string(),
                truncated: first.is_eof(),
            })
        }
    }
}

/// `: nan`, `: -nan` (any case) as a value → `: null`.
fn replace_nan(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(':') {
        out.push_str(&rest[..=i]);
        rest = &rest[i + 1..];
        let trimmed = rest.trim_start();
        let ws = &rest[..rest.len() - trimmed.len()];
        let word_len = trimmed
            .find(|c: char| !(c.is_ascii_alphabetic() || c == '-'))
            .unwrap_or(trimmed.len());
        let word = &trimmed[..word_len];
        if word.eq_ignore_ascii_case("nan") || word.eq_ignore_ascii_case("-nan") {
            out.push_str(ws);
            out.push_str("null");
            rest = &trimmed[word_len..];
        }
    }
    out.push_str(rest);
    out
}

/// `obj[key]` or `obj[key + ":"]`.
/// One `"histogram"` entry of an rt-tests thread, `"bucket": count`, as
/// numbers; an entry that is not is one line naming `who`.
pub(crate) fn bucket(
    format: &'static str,
    who: &str,
    key: &str,
    count: &Value,
) -> Result<(u64, u64), ImportError> {
    let value: u64 = key.parse().map_err(|_| {
        ImportError::invalid(
            format,
            format!("{who}: histogram bucket \"{key}\" is not a number"),
        )
    })?;
    let n = count.as_u64().ok_or_else(|| {
        ImportError::invalid(
            format,
            format!("{who}: histogram bucket \"{key}\" counts {count}"),
        )
    })?;
    Ok((value, n))
}

pub(crate) fn get<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    obj.get(key).or_else(|| obj.get(&format!("{key}:")))
}

pub(crate) fn header(
    obj: &Map<String, Value>,
    format: &'static str,
) -> Result<Header, ImportError> {
    let text = |key: &str| get(obj, key).and_then(Value::as_str).map(str::to_string);
    let time = |key: &str| -> Result<Option<Nanos>, ImportError> {
        match text(key) {
            None => Ok(None),
            Some(t) => parse_rfc2822(&t).map(Some).ok_or_else(|| {
                ImportError::invalid(format, format!("{key} \"{t}\" is not a date"))
            }),
        }
    };
    let mut h = Header {
        command_line: text("cmdline"),
        version: text("rt_test_version"),
        started: time("start_time")?,
        ended: time("end_time")?,
        return_code: get(obj, "return_code").and_then(Value::as_i64),
        ..Header::default()
    };
    if let Some(Value::Object(sys)) = obj.get("sysinfo") {
        let field = |k: &str| sys.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        h.system.hostname = field("nodename");
        h.system.kernel_release = field("release");
        h.system.kernel_version = field("version");
        h.machine = Some(field("machine")).filter(|m| !m.is_empty());
        if sys.get("realtime").and_then(Value::as_i64) == Some(1) {
            h.system.preemption_model = Some("rt".into());
            h.system.preemption_source = Some("realtime".into());
        } else if let Some(model) = preempt_from_version(&h.system.kernel_version) {
            h.system.preemption_model = Some(model.into());
            h.system.preemption_source = Some("version".into());
        }
    }
    Ok(h)
}

/// The program's name in the command line of a JSON text that may not
/// parse (a file cut short): the first word of the `cmdline` value.
pub(crate) fn command_in(text: &str) -> Option<&str> {
    let at = text.find("\"cmdline")?;
    let rest = &text[at + "\"cmdline".len()..];
    let rest = &rest[rest.find('"')? + 1..];
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    let value = rest.strip_prefix('"')?;
    let word = value
        .split(|c: char| c == '"' || c.is_whitespace())
        .next()?;
    word.rsplit('/').next()
}

/// The command line split into words; rt-tests joins the arguments with
/// single spaces, so quoting is lost and an argument with a space in it
/// reads as two.
pub(crate) fn words(command_line: &str) -> Vec<&str> {
    command_line.split_whitespace().collect()
}

/// Whether the command line ran `tool` (its first word's file name).
pub(crate) fn ran(command_line: &str, tool: &str) -> bool {
    words(command_line)
        .first()
        .and_then(|w| w.rsplit('/').next())
        .is_some_and(|w| w == tool)
}

/// The top object of a parsed rt-tests file.
pub(crate) fn object<'a>(
    doc: &'a Value,
    format: &'static str,
) -> Result<&'a Map<String, Value>, ImportError> {
    doc.as_object()
        .ok_or_else(|| ImportError::invalid(format, "the file is not a JSON object"))
}

/// The numbered thread objects of an rt-tests file, in their order: there
/// are some, and as many as `num_threads` says.
pub(crate) fn threads<'a>(
    obj: &'a Map<String, Value>,
    format: &'static str,
) -> Result<Vec<(u32, &'a Value)>, ImportError> {
    let Some(Value::Object(objects)) = obj.get("thread") else {
        return Err(ImportError::truncated(
            format,
            "there is no \"thread\" object",
        ));
    };
    let mut threads = objects
        .iter()
        .map(|(k, v)| {
            k.parse::<u32>().map(|n| (n, v)).map_err(|_| {
                ImportError::invalid(format, format!("thread \"{k}\" is not numbered"))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    threads.sort_by_key(|t| t.0);
    if let Some(n) = obj.get("num_threads").and_then(Value::as_u64) {
        if n != threads.len() as u64 {
            return Err(ImportError::truncated(
                format,
                format!("num_threads is {n} but {} threads are there", threads.len()),
            ));
        }
    }
    if threads.is_empty() {
        return Err(ImportError::invalid(format, "there are no threads"));
    }
    Ok(threads)
}

/// An rt-tests file read: its cells and notes, and what its header says
/// (the machine as a note, a non-zero return code as the tool's failure).
pub(crate) fn imported(
    format: Format,
    header: Header,
    cells: Vec<CellResult>,
    mut notes: Vec<String>,
) -> Imported {
    if let Some(m) = &header.machine {
        notes.push(format!("measured on a {m} machine (uname -m)"));
    }
    Imported {
        format,
        tool_version: header.version,
        command_line: header.command_line,
        started: header.started,
        ended: header.ended,
        failed: header
            .return_code
            .filter(|&c| c != 0)
            .map(|c| format!("{} exited with return code {c}", format.tool())),
        system: header.system,
        cells,
        notes,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn nan_averages_read_as_null() {
        let v = parse_json("{\"avg\": -nan,\n \"b\": nan, \"c\": \"nan\"}", "x").unwrap();
        assert_eq!(v["avg"], Value::Null);
        assert_eq!(v["b"], Value::Null);
        assert_eq!(v["c"], "nan");
        let e = parse_json("{\"a\": 1,", "cyclictest-json").unwrap_err();
        assert!(e.to_string().contains("cut short"), "{e}");
        assert!(
            e.to_string()
                .starts_with("cyclictest-json: not valid JSON ("),
            "{e}"
        );
    }

    #[test]
    fn reads_both_spellings_and_the_system() {
        let v: Value = serde_json::from_str(
            r##"{"file_version": 1, "cmdline:": "cyclictest -q", "rt_test_version:": "2.40",
                "start_time": "Wed, 25 Nov 2026 21:44:29 +0000",
                "end_time": "Wed, 25 Nov 2026 23:44:31 +0200", "return_code": 0,
                "sysinfo": {"sysname": "Linux", "nodename": "rig", "release": "6.6.0-rt",
                            "version": "#1 SMP PREEMPT_RT", "machine": "aarch64", "realtime": 1}}"##,
        )
        .unwrap();
        let h = header(v.as_object().unwrap(), "cyclictest-json").unwrap();
        assert_eq!(h.command_line.as_deref(), Some("cyclictest -q"));
        assert_eq!(h.version.as_deref(), Some("2.40"));
        assert_eq!(h.ended.unwrap().0 - h.started.unwrap().0, 2_000_000_000);
        assert_eq!(h.system.hostname, "rig");
        assert_eq!(h.system.preemption_model.as_deref(), Some("rt"));
        assert_eq!(h.system.preemption_source.as_deref(), Some("realtime"));
        assert_eq!(h.machine.as_deref(), Some("aarch64"));
        assert!(ran("/usr/bin/cyclictest -q", "cyclictest"));
        assert!(!ran("latscope run", "cyclictest"));
        assert_eq!(
            command_in("{\n  \"cmdline:\": \"/usr/bin/oslat -D 1\", \"rt"),
            Some("oslat")
        );
        assert_eq!(
            command_in("{\"cmdline\" : \"cyclictest\"}"),
            Some("cyclictest")
        );
        assert_eq!(command_in("{\"other\": 1}"), None);
        let bad: Value = serde_json::from_str(r#"{"start_time": "yesterday"}"#).unwrap();
        let e = header(bad.as_object().unwrap(), "oslat-json").unwrap_err();
        assert_eq!(
            e.to_string(),
            "oslat-json: start_time \"yesterday\" is not a date"
        );
    }
}
