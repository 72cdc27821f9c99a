//! Chen et al.: the primitives latscope micro measures (the paper's
//! Figures 1-3 are bar charts whose values the text copy does not give),
//! and the tables: nonclock interrupts per file during the small-file and
//! metadata tests (Tables IV and V); the rest have no counterpart.

use latscope_model::MicroResult;
use latscope_studies::Study;

use crate::design::MicroDesign;
use crate::figures::RunFigures;
use crate::paired::{in_unit, Measured, PairedRow, PairedTable, MISSING};

/// The paper's primitives and the benchmarks that measure them.
const PRIMITIVES: [(&str, &str); 6] = [
    ("Null benchmark (Figure 1)", "null.perf_read"),
    ("Syscall benchmark, dup() (Figure 2)", "syscall.dup_close"),
    (
        "Exec benchmark, static child (Figure 3)",
        "process.fork_exec_static",
    ),
    (
        "Exec benchmark, dynamic child (Figure 3)",
        "process.fork_exec_dynamic",
    ),
    ("Bitblt test, 1-bit image", "blit.put_image_1bit"),
    (
        "small-file disk test, per 8 KB file",
        "fs.read_8K_files_cold",
    ),
];

pub(crate) fn pair(study: &Study, design: &MicroDesign, f: &RunFigures) -> Vec<PairedTable> {
    let mut out = vec![primitives(design, f)];
    for table in &study.tables {
        let why = match table.number.as_str() {
            "III" => "latscope's Exec children are its own trivial programs; their size is not recorded",
            "VI" | "VIII" => "the Pentium's write-stall and segment-load counters have no counterpart in the kernel's generic perf counters",
            "VII" => "the application workloads (Wish, Ghostscript, a web server) are not run by latscope",
            _ => "latscope runs no web server (a workload's interrupts are in its characterization: latscope show)",
        };
        let mut t = PairedTable::from_published(table, "—", why);
        let bench = match table.number.as_str() {
            "IV" => Some(("fs.read_8K_files_cold", 8192)),
            "V" => Some(("fs.create_fsync_delete", 128)),
            _ => None,
        };
        if let Some((bench, _)) = bench.filter(|(b, _)| !design.benches.contains(b)) {
            let why = format!("not in the quick design: {bench} drops the page cache first, which can take tens of seconds (the full design runs it)");
            for i in 0..t.rows.len() {
                t.set(i, bench, Measured::NoCounterpart(why.clone()));
            }
        } else if let Some((bench, files)) = bench {
            t.measured_unit =
                "interrupts per file, and for the paper's number of files".to_string();
            t.measured_columns = vec![
                "Linux: per file".to_string(),
                format!("Linux: x {files} files"),
            ];
            let cells = match f.micro(bench).and_then(non_clock_per_op) {
                Some(per) => vec![format!("{per:.2}"), format!("{:.0}", per * files as f64)],
                None => vec![MISSING.to_string(), MISSING.to_string()],
            };
            t.set(
                0,
                &format!("{bench}: non-clock interrupts"),
                Measured::Figures(cells),
            );
            t.notes.push(format!("This machine: the interrupts other than the local timer on the benchmark's CPU per operation of {bench} (one file), and that rate times the paper's {files} files."));
        }
        out.push(t);
    }
    out
}

/// Non-timer interrupts per operation of a benchmark that ran.
fn non_clock_per_op(r: &MicroResult) -> Option<f64> {
    if r.skipped.is_some() || r.ops_per_iteration == 0 {
        return None;
    }
    Some(r.non_timer_interrupts_per_iteration? / r.ops_per_iteration as f64)
}

fn primitives(design: &MicroDesign, f: &RunFigures) -> PairedTable {
    let rows = PRIMITIVES
        .iter()
        .map(|(label, bench)| {
            let measured = match f.micro(bench) {
                None if !design.benches.contains(bench) => Measured::NoCounterpart(
                    "not in the quick design (the full design runs it)".to_string(),
                ),
                Some(r) => match &r.skipped {
                    Some(why) => Measured::NoCounterpart(format!("skipped here: {why}")),
                    None => Measured::Figures(vec![in_unit(r.median_ns.round() as u64, "µs")]),
                },
                None => Measured::Figures(vec![MISSING.to_string()]),
            };
            PairedRow {
                label: label.to_string(),
                latscope: bench.to_string(),
                published: vec!["bar chart only".to_string()],
                measured,
            }
        })
        .collect();
    PairedTable {
        number: "Figures 1-3".to_string(),
        caption: "The primitives' costs (Null, Syscall, Exec), and the Bitblt and small-file tests".to_string(),
        source: "sections 4.1-4.6; bar charts, their values are not in the text copy".to_string(),
        published_unit: "cycles and instructions per operation (NetBSD, Windows NT, Windows)".to_string(),
        measured_unit: "µs per operation (median)".to_string(),
        published_columns: vec!["paper".to_string()],
        measured_columns: vec!["Linux: time/op".to_string()],
        rows,
        notes: vec!["The paper gives these as bar charts; the text copy has no figures to print beside this machine's.".to_string()],
    }
}
