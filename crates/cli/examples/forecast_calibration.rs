//! Forecast calibration of a stored recording (`bench/forecast-calibration.sh`
//! calls it; docs/forecast-method.md, "Calibration").
//!
//! ```text
//! cargo run --release --example forecast_calibration -- --store PATH \
//!     [--run ID] [--metric timer.latency] [--plan 120:600:120 ...] [--json]
//! ```
//!
//! The training parts are a monitor's minute windows (exact histograms of
//! whole wall-clock minutes) or, for a `run` store, the differences of the
//! cell's cumulative checkpoint histograms; the test parts are read from
//! the cell's per-second timeline. Every plan is calibrated twice: under
//! the rules before the calibration ([`Rules::NONE`]) and under the rules
//! every forecast now follows ([`Rules::STANDARD`]).

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Parser;
use latscope_model::{metric, Nanos, RunId};
use latscope_stats::forecast::calibration::{calibrate, Block, Calibration, Coverage, Plan};
use latscope_stats::forecast::limits::Rules;
use latscope_stats::forecast::TailOptions;
use latscope_store::{Span, Store};

#[derive(Parser)]
#[command(about = "Calibrate latscope's forecasts on a stored recording")]
struct Args {
    /// The store holding the recording (a copy: it is only read).
    #[arg(long)]
    store: PathBuf,
    /// The run (default: the longest in the store).
    #[arg(long)]
    run: Option<i64>,
    /// The metric forecast.
    #[arg(long, default_value = metric::TIMER_LATENCY)]
    metric: String,
    /// TRAIN:TEST:STEP in seconds; may be repeated.
    #[arg(long = "plan", default_values = ["120:600:120", "120:600:60", "300:600:60", "600:600:60", "600:1800:300", "600:3600:600"])]
    plans: Vec<String>,
    /// One JSON document (every cut) instead of the table.
    #[arg(long)]
    json: bool,
    /// Also write that JSON document to this file.
    #[arg(long)]
    json_out: Option<PathBuf>,
    /// Also judge candidate rule sets, one rule changed at a time from
    /// the rules before calibration (to choose the standard ones).
    #[arg(long)]
    candidates: bool,
}

/// The rule sets judged: before and after calibration, and with
/// `candidates` each rule alone and some combinations.
fn rule_sets(candidates: bool) -> Vec<(String, Rules)> {
    let mut sets = vec![
        ("before".to_string(), Rules::NONE),
        ("after".to_string(), Rules::STANDARD),
    ];
    if !candidates {
        return sets;
    }
    let none = Rules::NONE;
    for c in [10.0, 30.0, 100.0, 300.0] {
        sets.push((
            format!("clusters>={c}"),
            Rules {
                min_clusters: c,
                ..none
            },
        ));
    }
    sets.push((
        "dispersion".into(),
        Rules {
            rate_dispersion: true,
            ..none
        },
    ));
    sets.push((
        "two-regimes".into(),
        Rules {
            refuse_mixture: true,
            ..none
        },
    ));
    sets.push((
        "disp+self+c30".into(),
        Rules {
            rate_dispersion: true,
            self_check: true,
            min_clusters: 30.0,
            ..none
        },
    ));
    sets.push((
        "disp+self+c100".into(),
        Rules {
            rate_dispersion: true,
            self_check: true,
            min_clusters: 100.0,
            ..none
        },
    ));
    sets.push((
        "self-check".into(),
        Rules {
            self_check: true,
            ..none
        },
    ));
    sets.push((
        "shape>=0".into(),
        Rules {
            shape_floor: Some(0.0),
            ..none
        },
    ));
    for r in [5.0, 2.0, 1.0] {
        sets.push((
            format!("reach{r}"),
            Rules {
                prediction_reach: r,
                ..none
            },
        ));
        sets.push((
            format!("reach{r}+shape>=0"),
            Rules {
                prediction_reach: r,
                shape_floor: Some(0.0),
                ..none
            },
        ));
    }
    sets
}

fn parse_plan(s: &str) -> Result<Plan> {
    let parts: Vec<u64> = s
        .split(':')
        .map(|p| p.parse::<u64>())
        .collect::<Result<_, _>>()
        .with_context(|| format!("--plan {s}: expected TRAIN:TEST:STEP in seconds"))?;
    match parts[..] {
        [train_s, test_s, step_s] => Ok(Plan {
            train_s,
            test_s,
            step_s,
        }),
        _ => bail!("--plan {s}: expected TRAIN:TEST:STEP in seconds"),
    }
}

/// The recording as blocks and a timeline, and where the blocks came from.
struct Recording {
    blocks: Vec<Block>,
    seconds: Vec<latscope_stats::SecondStats>,
    source: &'static str,
    cpu: Option<u32>,
}

fn load(store: &Store, run: Option<i64>, name: &str) -> Result<(RunId, Recording)> {
    let runs = store.list_runs()?;
    let listing = match run {
        Some(id) => runs
            .iter()
            .find(|r| r.meta.id.0 == id)
            .with_context(|| format!("no run {id} in the store"))?,
        None => runs
            .iter()
            .max_by_key(|r| r.cells.iter().map(|c| c.duration_ns.0).sum::<u64>())
            .context("the store holds no run")?,
    };
    let id = listing.meta.id;
    let result = store.load_run(id)?;
    let cell_ids = store.cell_ids(id)?;
    let (Some(cell), Some(&cell_id)) = (result.cells.first(), cell_ids.first()) else {
        bail!("run {} has no cell", id.0);
    };
    let Some(m) = cell.metrics.iter().find(|m| m.name == name) else {
        bail!("run {} has no metric {name}", id.0);
    };
    let cpu = m.cpu;
    let seconds = store.load_timeline(cell_id, name, cpu)?;
    let start_unix = listing.meta.started_unix_ns.0;
    let minutes: Vec<Block> = store
        .windows(id, Span::Minute, Nanos(0))?
        .into_iter()
        .filter(|w| w.metric == name && w.cpu == cpu && w.start_unix.0 >= start_unix)
        .map(|w| {
            let start_s = ((w.start_unix.0 - start_unix) as f64 / 1e9).round() as u64;
            Block {
                start_s,
                end_s: start_s + 60,
                histogram: w.histogram,
            }
        })
        // The last minute may still be open.
        .filter(|b| (b.end_s as usize) < seconds.len())
        .collect();
    if !minutes.is_empty() {
        return Ok((
            id,
            Recording {
                blocks: minutes,
                seconds,
                source: "monitor minute windows",
                cpu: cpu.map(|c| c.0),
            },
        ));
    }
    // A run: the differences of its cumulative checkpoint histograms.
    let mut blocks = Vec::new();
    let mut prev: Option<(u64, latscope_stats::Histogram)> = None;
    for s in store.load_snapshots_of(cell_id, &[name])? {
        let Some(h) = s.metrics.into_iter().find(|x| x.cpu == cpu) else {
            continue;
        };
        let at_s = (s.at.0 as f64 / 1e9).round() as u64;
        let (from, diff) = match &prev {
            Some((p, ph)) => (*p, h.histogram.since(ph)),
            None => (0, Some(h.histogram.clone())),
        };
        if let Some(d) = diff.filter(|_| at_s > from) {
            blocks.push(Block {
                start_s: from,
                end_s: at_s,
                histogram: d,
            });
        }
        prev = Some((at_s, h.histogram));
    }
    Ok((
        id,
        Recording {
            blocks,
            seconds,
            source: "run checkpoints",
            cpu: cpu.map(|c| c.0),
        },
    ))
}

fn pct(x: Option<f64>) -> String {
    x.map_or("-".to_string(), |v| format!("{:.0}%", v * 100.0))
}

fn cov(c: &Coverage) -> String {
    format!(
        "{:>4} {:>3}/{:<3} (over {:>2}, under {:>2}) width {:>5}",
        pct(c.share()),
        c.held,
        c.forecasts,
        c.below,
        c.above,
        c.median_width
            .map_or("-".to_string(), |w| format!("{w:.2}")),
    )
}

fn main() -> Result<()> {
    let args = Args::parse();
    let plans: Vec<Plan> = args
        .plans
        .iter()
        .map(|p| parse_plan(p))
        .collect::<Result<_>>()?;
    let store = Store::open_existing(&args.store)
        .with_context(|| format!("cannot open {}", args.store.display()))?;
    let (id, rec) = load(&store, args.run, &args.metric)?;
    let tail = TailOptions::default();
    let mut results: Vec<(String, Calibration)> = Vec::new();
    for plan in &plans {
        for (name, rules) in rule_sets(args.candidates) {
            let c = calibrate(&rec.blocks, &rec.seconds, plan, &tail, &rules)?;
            results.push((name, c));
        }
    }
    let doc = serde_json::json!({
        "store": args.store.display().to_string(),
        "run": id.0,
        "metric": args.metric,
        "cpu": rec.cpu,
        "source": rec.source,
        "seconds": rec.seconds.len(),
        "blocks": rec.blocks.len(),
        // Every cut for the rules before and after; the candidates'
        // summaries only.
        "calibrations": results.iter().map(|(name, c)| serde_json::json!({
            "rules_set": name,
            "calibration": if name == "before" || name == "after" {
                serde_json::to_value(c)
            } else {
                serde_json::to_value(Calibration { cases: Vec::new(), ..c.clone() })
            }.unwrap_or_default(),
            "refused_share": c.refused_share(),
            "return_level_share": c.return_level.share(),
            "prediction_share": c.prediction.share(),
        })).collect::<Vec<_>>(),
    });
    let text = serde_json::to_string_pretty(&doc)?;
    if let Some(path) = &args.json_out {
        std::fs::write(path, &text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    if args.json {
        println!("{text}");
        return Ok(());
    }
    println!(
        "run {} metric {} cpu {:?}: {} s of timeline, {} blocks ({})",
        id.0,
        args.metric,
        rec.cpu,
        rec.seconds.len(),
        rec.blocks.len(),
        rec.source
    );
    println!("plan (train→test, step)  rules             cuts refused | return-level CI held | prediction interval held");
    for (name, c) in &results {
        println!(
            "{:>5}s→{:>5}s every {:>4}s {:<17} {:>4} {:>4} {:>4} | {} | {}",
            c.plan.train_s,
            c.plan.test_s,
            c.plan.step_s,
            name,
            c.cases.len(),
            c.refused,
            pct(c.refused_share()),
            cov(&c.return_level),
            cov(&c.prediction),
        );
    }
    Ok(())
}
