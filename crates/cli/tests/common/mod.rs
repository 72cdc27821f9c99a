//! Helpers for end-to-end tests of the real `latscope` binary.
#![allow(dead_code)]
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};

use serde_json::Value;

/// Measurements on a 2-CPU machine disturb each other: tests that measure
/// take this lock so they run one at a time.
static MEASURING: Mutex<()> = Mutex::new(());

pub fn serial() -> MutexGuard<'static, ()> {
    MEASURING.lock().unwrap_or_else(|e| e.into_inner())
}

pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_latscope"))
}

pub fn latscope(args: &[&str]) -> Output {
    bin().args(args).output().expect("run latscope")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn store_in(dir: &Path) -> PathBuf {
    dir.join("latscope.db")
}

pub fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("read json");
    serde_json::from_str(&text).expect("parse json")
}

/// The metric objects of cell 0 with the given name, one per CPU.
pub fn metrics<'a>(doc: &'a Value, name: &str) -> Vec<&'a Value> {
    doc["cells"][0]["metrics"]
        .as_array()
        .expect("metrics array")
        .iter()
        .filter(|m| m["name"] == name)
        .collect()
}

pub fn is_root() -> bool {
    latscope_platform::caps::detect().root
}

/// The online CPUs, ascending.
pub fn online() -> Vec<u32> {
    latscope_platform::online_cpus()
        .expect("online cpus")
        .iter()
        .map(|c| c.0)
        .collect()
}

/// Asserts a failed command printed exactly one line and no panic.
pub fn assert_one_line_error(o: &Output, code: i32) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(code), "exit code; stderr: {err}");
    assert!(!err.contains("panicked"), "panic: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(lines.len() == 1, "expected one clear line, got: {err}");
}
