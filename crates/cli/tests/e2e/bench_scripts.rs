//! The benchmark scripts' own logic, which needs no measuring: runs
//! `bench/test_trace_overhead.py` (the interval for the median ratio, the
//! PASS / FAIL / UNRESOLVED verdict, the tool subsets and their orders) so
//! that `cargo test` covers it.

use std::path::Path;
use std::process::Command;

#[test]
fn trace_overhead_logic_passes_its_unit_tests() {
    let _g = crate::common::serial();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/test_trace_overhead.py");
    let out = match Command::new("python3").arg(&script).output() {
        Ok(o) => o,
        Err(e) => {
            println!("skipped: needs python3 ({e})");
            return;
        }
    };
    assert!(
        out.status.success(),
        "{} failed:\n{}{}",
        script.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
