//! Runs every benchmark built so far on one CPU (a second one for the
//! cross-CPU ones) and prints the study-style table: operation, time per
//! operation (median, min, max over iterations), the counters per
//! operation and the interrupts per iteration. A development tool until
//! `latscope micro` exists:
//!
//! ```sh
//! cargo run --release -p latscope-micro --example table -- [CPU [OTHER_CPU [GROUP,...]]]
//! ```

use latscope_micro::bench::{measure, null, Options};
use latscope_micro::counters::Counters;
use latscope_micro::ops::{all, Placement};
use latscope_model::CpuId;
use latscope_stats::micro::levels::{detect_levels, CurvePoint};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cpu: u32 = args.first().and_then(|a| a.parse().ok()).unwrap_or(1);
    let other: u32 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(0);
    let groups: Option<Vec<String>> = args
        .get(2)
        .map(|g| g.split(',').map(str::to_string).collect());
    if let Err(e) = latscope_platform::set_affinity(CpuId(cpu)) {
        eprintln!("cannot pin to CPU {cpu}: {e}");
        std::process::exit(1);
    }
    let counters = Counters::open();
    for a in counters.availability() {
        if let Some(why) = a.unavailable {
            println!("counter {:<17} unavailable: {why}", a.name);
        }
    }
    let z = null(&counters);
    // measure opens its own counters for its counted pass; none may be
    // open while it times.
    drop(counters);
    println!("null frame: {:.1} ns", z.elapsed_ns);
    println!(
        "{:<34} {:>12} {:>12} {:>12} {:>8} {:>10} {:>9} {:>9}",
        "benchmark", "median ns", "min ns", "max ns", "ops/it", "task-clk", "ctxsw", "irq/it"
    );
    let placement = Placement {
        cpu,
        other_cpu: Some(other),
    };
    let mut curve: Vec<(bool, CurvePoint)> = Vec::new();
    for b in all() {
        if groups
            .as_ref()
            .is_some_and(|g| !g.iter().any(|x| x == b.group))
        {
            continue;
        }
        let mut op = match (b.build)(placement) {
            Ok(op) => op,
            Err(e) => {
                println!("{:<34} skipped: {e}", b.id());
                continue;
            }
        };
        match measure(op.as_mut(), &z, &Options::default(), &[cpu]) {
            Ok(m) => {
                let c = |i: usize| {
                    m.counters[i]
                        .per_op
                        .map_or("-".to_string(), |v| format!("{v:.2}"))
                };
                println!(
                    "{:<34} {:>12.2} {:>12.2} {:>12.2} {:>8} {:>10} {:>9} {:>9}",
                    b.id(),
                    m.stats.median_ns,
                    m.stats.min_ns,
                    m.stats.max_ns,
                    m.stats.ops_per_iteration,
                    c(0),
                    c(1),
                    m.interrupts_per_iteration
                        .map_or("-".to_string(), |v| format!("{v:.2}"))
                );
                if b.group == "memory" {
                    let bytes = memory_bytes(&b.name);
                    if let Some(bytes) = bytes {
                        curve.push((
                            b.name.starts_with("random"),
                            CurvePoint {
                                bytes,
                                ns: m.stats.median_ns,
                            },
                        ));
                    }
                }
            }
            Err(e) => println!("{:<34} failed: {e}", b.id()),
        }
    }
    for random in [false, true] {
        let pts: Vec<CurvePoint> = curve
            .iter()
            .filter(|(r, _)| *r == random)
            .map(|(_, p)| *p)
            .collect();
        if pts.is_empty() {
            continue;
        }
        println!(
            "levels ({}): {:?}",
            if random { "random" } else { "stride 128" },
            detect_levels(&pts)
        );
    }
    println!(
        "sysfs caches of CPU 0: {:?}",
        latscope_micro::caches::read_caches(0)
    );
}

/// The working set of a memory benchmark's name (`random_48K`).
fn memory_bytes(name: &str) -> Option<u64> {
    let size = name.rsplit('_').next()?;
    let (num, unit) = size.split_at(size.len().checked_sub(1)?);
    let scale = match unit {
        "B" => 1.0,
        "K" => 1024.0,
        "M" => 1024.0 * 1024.0,
        _ => return None,
    };
    num.parse::<f64>().ok().map(|n| (n * scale) as u64)
}
